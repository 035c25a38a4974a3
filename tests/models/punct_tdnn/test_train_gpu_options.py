"""TDNN training's --amp on the CPU: bf16 training passes (float32 dev scoring and checkpoints); fp16 refused."""

from __future__ import annotations

import math

import pytest
import torch

from punct.models.punct_tdnn import train as fusion_train
from punct.models.punct_tdnn.config import TrainTdnnConfig
from punct.models.punct_tdnn.train import train_tdnn
from tests.helpers.synthetic_splits import SMALL_TDNN, small_training, train_dev_splits

SMALL = SMALL_TDNN


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    return train_dev_splits(tmp_path_factory.mktemp("gpu_options"), seed=50)


@pytest.mark.parametrize("unit", ["window", "utterance"])
def test_bf16_training_step(corpora, tmp_path, monkeypatch, unit):
    seen, initial = [], {}
    build = fusion_train.build_model

    def recorded_build(cfg, input_dim):
        model = build(cfg, input_dim)
        initial.update({k: v.clone() for k, v in model.state_dict().items()})
        model.register_forward_hook(lambda module, inputs, out: seen.append((module.training, out.dtype)))
        return model

    monkeypatch.setattr(fusion_train, "build_model", recorded_build)
    cfg = small_training(unit, epochs=1, epoch_limit=32)
    train_tdnn(cfg, corpora["train"], corpora["dev"], tmp_path, torch.device("cpu"), seed=2, progress=False, amp="bf16")
    assert seen and all(dtype == torch.bfloat16 for training, dtype in seen if training)
    saved = torch.load(tmp_path / "epoch-1.pt", weights_only=True)
    record = saved["state"]["history"][0]
    assert math.isfinite(record["train_loss"]) and saved["state"]["step"] > 0 and "overall_f1" in record
    assert all(v.dtype == torch.float32 for v in saved["model"].values() if v.is_floating_point())
    changed = [k for k, v in saved["model"].items() if v.is_floating_point() and not torch.equal(v, initial[k])]
    assert changed


def test_fp16_on_cpu_is_refused(corpora, tmp_path):
    cfg = TrainTdnnConfig(model=SMALL, epochs=1, num_workers=0)
    with pytest.raises(ValueError, match="fp16 needs a CUDA device"):
        train_tdnn(cfg, corpora["train"], None, tmp_path, torch.device("cpu"), progress=False, amp="fp16")
