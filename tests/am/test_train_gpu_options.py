"""AM training's GPU options on the CPU: --amp bf16 (fp16 refused), --num-workers (SpecAugment's masks the same
with any number of workers)."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
import yaml

from punct.am import train as am_train
from punct.am.config import AmConfig
from punct.am.dataset import CtcDataset
from punct.am.model import AmModelConfig, TdnnAcousticModel
from punct.am.train import compute_loss, run_training
from punct.bin import train_am
from punct.training.loop import Amp
from tests.helpers.espeak_corpus import cached_corpus, espeak_available
from tests.helpers.precision import force_fastest_verdict

SMALL = AmModelConfig(dim=24, bottleneck_dim=8, prefinal_small_dim=16, prefinal_big_dim=24)


def output_dtypes(model: torch.nn.Module, seen: list) -> torch.nn.Module:
    """Records (training?, output dtype) of every forward pass of ``model``."""
    model.register_forward_hook(lambda module, inputs, out: seen.append((module.training, out.dtype)))
    return model


def test_bf16_step_runs_the_network_in_bf16_and_ctc_in_float32():
    torch.manual_seed(0)
    seen: list = []
    model = output_dtypes(TdnnAcousticModel(AmModelConfig(**{**SMALL.__dict__, "num_tokens": 6})), seen)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    batch = {
        "feats": torch.randn(2, 40, 40),
        "feat_lens": torch.tensor([40, 33]),
        "targets": torch.tensor([1, 2, 3, 4, 5]),
        "target_lens": torch.tensor([3, 2]),
    }
    ctc = torch.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    amp = Amp("bf16", "cpu")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    loss, frames = compute_loss(model, batch, torch.device("cpu"), ctc, subsample=3, amp=amp)
    assert seen == [(True, torch.bfloat16)] and loss.dtype == torch.float32 and math.isfinite(loss.item())
    amp.step(loss / frames, optimizer, model.parameters(), grad_clip=5.0)
    after = model.state_dict()
    assert all(v.dtype == before[k].dtype for k, v in after.items())  # float32 weights, int64 BatchNorm counters
    assert not torch.equal(before["output.weight"], after["output.weight"])


def test_fp16_on_cpu_is_refused_before_reading_data(tmp_path):
    with pytest.raises(ValueError, match="fp16 needs a CUDA device"):
        run_training(
            prefix="mustc",
            config=AmConfig(),
            fbank_dir=tmp_path / "missing",
            exp_dir=tmp_path / "exp",
            device_name="cpu",
            amp="fp16",
        )


@pytest.mark.skipif(not espeak_available(), reason="espeak-ng/sox not installed")
def test_spec_augment_masks_do_not_depend_on_the_loader_workers(tmp_path):
    """The masks of a batch are drawn from (seed, epoch, batch position): two loader workers train the same model
    as none (and a resume that skipped batches draws the masks of the ones it trains)."""
    torch.set_num_threads(1)
    config = AmConfig(model=SMALL, num_epochs=1, max_duration=8.0, num_buckets=2, spec_augment=True, log_interval=100)
    models = [
        run_training(
            prefix="mustc",
            config=dataclasses.replace(config, num_workers=workers),
            fbank_dir=cached_corpus() / "fbank",
            exp_dir=tmp_path / str(workers),
            device_name="cpu",
            seed=1,
        )[1]
        for workers in (0, 2)
    ]
    for (name, a), b in zip(models[0].state_dict().items(), models[1].state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    dataset = CtcDataset(None, None, spec_augment={}, seed=1)
    first = dataset.masks_rng(1, 0).random()
    assert first == dataset.masks_rng(1, 0).random()
    assert first != dataset.masks_rng(1, 1).random() and first != dataset.masks_rng(2, 0).random()


@pytest.mark.skipif(not espeak_available(), reason="espeak-ng/sox not installed")
@pytest.mark.parametrize("amp", ["bf16", "fastest"])
def test_cli_bf16_with_loader_workers(tmp_path, monkeypatch, amp):
    """bf16 asked for, or chosen by ``fastest``'s probe (on the first training cuts, its verdict forced)."""
    force_fastest_verdict(monkeypatch, bf16_faster=True)
    seen, initial = [], {}
    build = am_train.build_model

    def recorded_build(config, num_tokens):
        model = output_dtypes(build(config, num_tokens), seen)
        initial.update({k: v.clone() for k, v in model.state_dict().items()})
        return model

    monkeypatch.setattr(am_train, "build_model", recorded_build)
    config = tmp_path / "am.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "model": {k: v for k, v in SMALL.__dict__.items() if k != "num_tokens"},
                "num_epochs": 1,
                "lr": 2e-3,
                "warmup_steps": 1,
                "max_duration": 8.0,
                "num_buckets": 2,
                "spec_augment": True,
                "log_interval": 1,
            }
        )
    )
    exp = tmp_path / "exp"
    assert (
        train_am.main(
            [
                "--config",
                str(config),
                "--fbank-dir",
                str(cached_corpus() / "fbank"),
                "--exp-dir",
                str(exp),
                "--prefix",
                "mustc",
                "--device",
                "cpu",
                "--num-threads",
                "1",
                "--amp",
                amp,
                "--num-workers",
                "1",
            ]
        )
        == 0
    )
    assert (True, torch.bfloat16) in seen and (False, torch.float32) in seen  # trained in bf16, validated in float32
    saved = torch.load(exp / "epoch-1.pt", weights_only=True)
    assert saved["state"]["step"] > 0 and math.isfinite(saved["state"]["best_valid_loss"])
    assert saved["config"]["num_workers"] == 1
    assert all(v.dtype == torch.float32 for v in saved["model"].values() if v.is_floating_point())
    assert not torch.equal(saved["model"]["output.weight"], initial["output.weight"])
