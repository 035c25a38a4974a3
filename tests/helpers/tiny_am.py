"""A tiny random TDNN acoustic model saved as an AM folder (exp/am format), for ``sound_encoder: am`` tests."""

from __future__ import annotations

from pathlib import Path

import torch
import yaml

from benchmarks.random_models import MFCC_YAML, token_table
from punct.am.checkpoint import AmTrainState, save_checkpoint
from punct.am.config import AmConfig
from punct.am.model import AmModelConfig, TdnnAcousticModel

TINY_AM = AmModelConfig(feat_dim=40, dim=32, bottleneck_dim=16, prefinal_small_dim=16, prefinal_big_dim=32)


def write_am_dir(folder: Path, seed: int = 0, config: AmModelConfig = TINY_AM) -> TdnnAcousticModel:
    """``folder``/best-valid-loss.pt (a random AM whose BatchNorm statistics are calibrated) and
    ``folder``/mfcc.yaml; returns the model (eval mode)."""
    torch.manual_seed(seed)
    tokens = token_table()
    model = TdnnAcousticModel(AmModelConfig(**{**config.__dict__, "num_tokens": len(tokens)}))
    calibrate_batchnorm(model)
    folder.mkdir(parents=True, exist_ok=True)
    save_checkpoint(
        folder / "best-valid-loss.pt",
        model=model,
        optimizer=None,
        state=AmTrainState(),
        config=AmConfig(model=model.config),
        tokens=tokens,
    )
    (folder / "mfcc.yaml").write_text(yaml.safe_dump(MFCC_YAML), encoding="utf-8")
    return model.eval()


@torch.no_grad()
def calibrate_batchnorm(model: TdnnAcousticModel, frames: int = 400) -> None:
    """BatchNorm running statistics from unit-normal features (what CMVN-normalised MFCC look like), as training
    would leave them: default-initialised layers shrink the signal, so with default statistics (mean 0, var 1) a
    random AM's layer-12 output hardly depends on its input; calibrated, every layer passes on unit-scale frames."""
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm1d):
            module.reset_running_stats()
            module.momentum = None  # cumulative average over the calibration batches
    model.train()
    for _ in range(4):
        model(torch.randn(4, frames, model.config.feat_dim))
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm1d):
            module.momentum = 0.1
    model.eval()
