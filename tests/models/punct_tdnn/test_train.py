"""Training loop: both example units, checkpoints, best-by-dev, --resume, class weights."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from punct.models.punct_tdnn.checkpoint import load_model
from punct.models.punct_tdnn.config import TrainTdnnConfig
from punct.models.punct_tdnn.train import class_weights, forward_batch, make_loader, train_tdnn
from punct.training.batch_norm import recompute_batch_norm_stats
from punct.training.loop import DistInfo, latest_checkpoint
from tests.helpers.synthetic_splits import SMALL_TDNN, small_training, train_dev_splits

SMALL = SMALL_TDNN


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    return train_dev_splits(tmp_path_factory.mktemp("train"), seed=30)


@pytest.mark.parametrize("unit", ["window", "utterance"])
def test_train_checkpoints_and_resume(corpora, tmp_path, unit):
    cfg = small_training(unit)
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
    train_tdnn(
        cfg3,
        corpora["train"],
        corpora["dev"],
        tmp_path,
        torch.device("cpu"),
        seed=1,
        resume=tmp_path / "epoch-2.pt",
        progress=False,
    )
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
    assert np.allclose(sqrt, [1.0, 10**0.5, 25**0.5, 0.0])
    capped = class_weights(TrainTdnnConfig(balance="oversample", max_class_weight=4.0), counts).numpy()
    assert np.allclose(capped, [1.0, 4.0, 4.0, 0.0])
    with pytest.raises(ValueError, match="class_weight_power"):
        TrainTdnnConfig(class_weight_power=-1.0)


def test_recomputed_batch_norm_statistics():
    """The running statistics become the plain mean of the given batches' statistics; mode and momentum stay."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv1d(2, 3, 1), torch.nn.BatchNorm1d(3))
    model.train()
    for _ in range(3):  # history that the recomputation must forget
        model(torch.randn(4, 2, 10) * 5 + 3)
    model.eval()
    batches = [torch.randn(n, 2, 7) * (i + 1) for i, n in enumerate((2, 5, 3, 4))]
    used = recompute_batch_norm_stats(model, iter(batches), lambda m, x: m(x), max_batches=3)
    assert used == 3 and not model.training and model[1].momentum == 0.1
    with torch.no_grad():
        channels = [model[0](x).numpy().transpose(1, 0, 2).reshape(3, -1) for x in batches[:3]]  # (C, N*T) per batch
    norm = model[1]
    assert np.allclose(norm.running_mean.numpy(), np.mean([c.mean(axis=1) for c in channels], axis=0), atol=1e-5)
    assert np.allclose(norm.running_var.numpy(), np.mean([c.var(axis=1, ddof=1) for c in channels], axis=0), rtol=1e-4)
    assert int(norm.num_batches_tracked) == 3
    with pytest.raises(ValueError, match="no batches"):
        recompute_batch_norm_stats(model, iter([]), lambda m, x: m(x))


def test_batch_norm_statistics_recomputed_after_each_epoch(corpora, tmp_path):
    """recompute: every epoch's checkpoint holds statistics of its last batch_norm_batches batches through its
    final weights (recomputing them from the saved weights gives the same); ema: of every batch since the start."""
    ema_cfg = small_training("utterance", batch_size=TrainTdnnConfig.batch_size)
    ema = train_tdnn(ema_cfg, corpora["train"], None, tmp_path / "ema", torch.device("cpu"), seed=1, progress=False)
    steps = torch.load(tmp_path / "ema" / "epoch-2.pt", weights_only=True)["state"]["step"]
    assert int(ema.norms[0].num_batches_tracked) == steps > 4
    cfg = dataclasses.replace(ema_cfg, batch_norm_stats="recompute", batch_norm_batches=2)
    model = train_tdnn(cfg, corpora["train"], None, tmp_path / "rc", torch.device("cpu"), seed=1, progress=False)
    assert int(model.norms[0].num_batches_tracked) == 2  # of the steps // 2 > 2 batches of an epoch
    for name, value in ema.named_parameters():  # the training itself is unchanged
        assert torch.equal(value, dict(model.named_parameters())[name]), name
    assert not torch.allclose(ema.norms[0].running_mean, model.norms[0].running_mean)
    saved = load_model(tmp_path / "rc" / "epoch-2.pt")
    loader, sampler = make_loader(cfg, corpora["train"], torch.device("cpu"), 1, DistInfo())
    sampler.set_epoch(2)
    recompute_batch_norm_stats(saved, list(loader)[-2:], lambda m, batch: forward_batch(m, batch, cfg))
    for name, value in saved.state_dict().items():
        assert torch.allclose(value.float(), model.state_dict()[name].float(), atol=1e-6), name
    history = torch.load(tmp_path / "rc" / "epoch-2.pt", weights_only=True)["state"]["history"]
    assert all(h["batch_norm_seconds"] >= 0 for h in history)


def test_bad_config_values():
    with pytest.raises(ValueError, match="batch_norm_stats"):
        TrainTdnnConfig(batch_norm_stats="epoch")
    with pytest.raises(ValueError, match="batch_norm_batches"):
        TrainTdnnConfig(batch_norm_batches=-1)
    with pytest.raises(ValueError, match="example_unit"):
        TrainTdnnConfig(example_unit="frame")
    with pytest.raises(ValueError, match="balance"):
        TrainTdnnConfig(balance="smote")


@pytest.mark.parametrize("unit", ["window", "utterance"])
def test_same_seed_same_model(corpora, tmp_path, unit):
    """Same seed, same machine: the same weights, also with a data-loader worker process."""
    cfg = small_training(unit, num_workers=1)
    models = [
        train_tdnn(cfg, corpora["train"], None, tmp_path / str(run), torch.device("cpu"), seed=4, progress=False)
        for run in range(2)
    ]
    other = train_tdnn(cfg, corpora["train"], None, tmp_path / "other", torch.device("cpu"), seed=5, progress=False)
    for name, value in models[0].state_dict().items():
        assert torch.equal(value, models[1].state_dict()[name]), name
    assert not all(torch.equal(v, other.state_dict()[k]) for k, v in models[0].state_dict().items())
