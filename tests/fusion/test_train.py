"""Training loop: both example units, checkpoints, best-by-dev, --resume, class weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from punct.models.punct_tdnn.train import TrainTdnnConfig, class_weights, load_model, train_tdnn
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


def test_bad_config_values():
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
