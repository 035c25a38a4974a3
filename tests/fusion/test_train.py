"""Training loop: both example units, checkpoints, best-by-dev, --resume, class weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from punct.models.punct_tdnn.train import TrainTdnnConfig, class_weights, load_model, train_tdnn
from punct.training.batch_norm import restart_epoch_averages
from punct.training.loop import latest_checkpoint
from tests.fusion.synthetic import SMALL_TDNN, train_dev_splits

SMALL = SMALL_TDNN


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    return train_dev_splits(tmp_path_factory.mktemp("train"), seed=30)


@pytest.mark.parametrize("unit", ["window", "utterance"])
def test_train_checkpoints_and_resume(corpora, tmp_path, unit):
    cfg = TrainTdnnConfig(model=SMALL, example_unit=unit, optimizer="adam", lr=0.01, batch_size=16,
                          utterances_per_batch=3, epochs=2, epoch_limit=48, loss_reduction="mean", num_workers=0, log_interval=0)
    train_tdnn(cfg, corpora["train"], corpora["dev"], tmp_path, torch.device("cpu"), seed=1, progress=False)
    assert latest_checkpoint(tmp_path).name == "epoch-2.pt"
    ckpt = torch.load(tmp_path / "epoch-2.pt", weights_only=True)
    history = ckpt["state"]["history"]
    assert [h["epoch"] for h in history] == [1, 2] and all("overall_f1" in h for h in history)
    best = max(history, key=lambda h: h["overall_f1"])
    assert ckpt["state"]["best_epoch"] == best["epoch"]
    best_model = load_model(tmp_path / "best-valid-f1.pt")
    assert not best_model.training and best_model.config.input_dim == 5
    # resume: one more epoch continues the step count and the history
    steps = ckpt["state"]["step"]
    cfg3 = TrainTdnnConfig(**{**cfg.__dict__, "epochs": 3})
    train_tdnn(cfg3, corpora["train"], corpora["dev"], tmp_path, torch.device("cpu"), seed=1,
               resume=tmp_path / "epoch-2.pt", progress=False)
    ckpt3 = torch.load(tmp_path / "epoch-3.pt", weights_only=True)
    assert ckpt3["state"]["step"] == steps + steps // 2 and steps > 0
    assert [h["epoch"] for h in ckpt3["state"]["history"]] == [1, 2, 3]


def test_class_weights_match_oversampling(corpora):
    counts = corpora["train"].class_counts()
    w = class_weights(TrainTdnnConfig(balance="oversample"), corpora["train"]).numpy()
    present = counts > 0
    assert np.allclose((w * counts)[present], counts.max())  # every class weighs as much as the majority
    assert np.all(w[~present] == 0)
    assert np.all(class_weights(TrainTdnnConfig(balance="none"), corpora["train"]).numpy() == 1)


def test_softer_class_weights():
    counts = np.array([1000, 100, 40, 0])
    sqrt = class_weights(TrainTdnnConfig(balance="oversample", class_weight_power=0.5), counts).numpy()
    assert np.allclose(sqrt, [1.0, 10 ** 0.5, 25 ** 0.5, 0.0])
    capped = class_weights(TrainTdnnConfig(balance="oversample", max_class_weight=4.0), counts).numpy()
    assert np.allclose(capped, [1.0, 4.0, 4.0, 0.0])
    with pytest.raises(ValueError, match="class_weight_power"):
        TrainTdnnConfig(class_weight_power=-1.0)


def test_epoch_averaged_batch_norm_statistics():
    """After the restart, the running statistics are the plain mean of the batches' statistics."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv1d(2, 3, 1), torch.nn.BatchNorm1d(3))
    model.train()
    for _ in range(3):  # history that the restart must forget
        model(torch.randn(4, 2, 10) * 5 + 3)
    assert restart_epoch_averages(model) == 1
    batches = [torch.randn(n, 2, 7) * (i + 1) for i, n in enumerate((2, 5, 3, 4))]
    outputs = []
    with torch.no_grad():
        for x in batches:
            outputs.append(model[0](x).numpy())
            model(x)
    norm = model[1]
    channels = [o.transpose(1, 0, 2).reshape(3, -1) for o in outputs]  # (C, N*T) per batch
    assert np.allclose(norm.running_mean.numpy(), np.mean([c.mean(axis=1) for c in channels], axis=0), atol=1e-5)
    assert np.allclose(norm.running_var.numpy(), np.mean([c.var(axis=1, ddof=1) for c in channels], axis=0), rtol=1e-4)
    assert int(norm.num_batches_tracked) == len(batches)


def test_batch_norm_statistics_of_each_epoch(corpora, tmp_path):
    """ema: the running statistics have seen every batch since the start; epoch: only the last epoch's."""
    tracked, steps = {}, {}
    for stats in ("ema", "epoch"):
        cfg = TrainTdnnConfig(model=SMALL, example_unit="utterance", optimizer="adam", lr=0.01, utterances_per_batch=3,
                              epochs=2, epoch_limit=48, loss_reduction="mean", num_workers=0, log_interval=0,
                              batch_norm_stats=stats)
        model = train_tdnn(cfg, corpora["train"], None, tmp_path / stats, torch.device("cpu"), seed=1, progress=False)
        steps[stats] = torch.load(tmp_path / stats / "epoch-2.pt", weights_only=True)["state"]["step"]
        tracked[stats] = {name: int(m.num_batches_tracked) for name, m in model.named_modules()
                          if isinstance(m, torch.nn.BatchNorm1d)}
        saved = load_model(tmp_path / stats / "epoch-2.pt")
        for name, value in model.state_dict().items():
            assert torch.equal(value, saved.state_dict()[name]), name
    assert steps["ema"] == steps["epoch"] > 2 and len(tracked["ema"]) > 1
    assert tracked["ema"]["norms.0"] == steps["ema"]  # one call per batch
    assert tracked["epoch"] == {name: count // 2 for name, count in tracked["ema"].items()}


def test_bad_config_values():
    with pytest.raises(ValueError, match="batch_norm_stats"):
        TrainTdnnConfig(batch_norm_stats="precise")
    with pytest.raises(ValueError, match="example_unit"):
        TrainTdnnConfig(example_unit="frame")
    with pytest.raises(ValueError, match="balance"):
        TrainTdnnConfig(balance="smote")


@pytest.mark.parametrize("unit", ["window", "utterance"])
def test_same_seed_same_model(corpora, tmp_path, unit):
    """Same seed, same machine: the same weights, also with a data-loader worker process."""
    cfg = TrainTdnnConfig(model=SMALL, example_unit=unit, optimizer="adam", lr=0.01, batch_size=16,
                          utterances_per_batch=3, epochs=2, epoch_limit=48, loss_reduction="mean", num_workers=1,
                          log_interval=0)
    models = [train_tdnn(cfg, corpora["train"], None, tmp_path / str(run), torch.device("cpu"), seed=4, progress=False)
              for run in range(2)]
    other = train_tdnn(cfg, corpora["train"], None, tmp_path / "other", torch.device("cpu"), seed=5, progress=False)
    for name, value in models[0].state_dict().items():
        assert torch.equal(value, models[1].state_dict()[name]), name
    assert not all(torch.equal(v, other.state_dict()[k]) for k, v in models[0].state_dict().items())
