"""The acoustic model's checkpoints: what stage 2 saves and every later stage loads.

An AM folder (``exp/am`` of ``steps/train_am.sh``, or a pre-trained one in the same format) holds
``epoch-N.pt`` and :data:`BEST_CHECKPOINT`, each the shared format of :mod:`punct.training.checkpoint`
(model, optimizer, :class:`AmTrainState`, :class:`punct.am.config.AmConfig`) plus the token table, and
:data:`FEATURE_CONFIG_NAME`, the feature config it was trained with.  Loading needs neither the training
loop nor its data: decoding, alignment, dumps and ``punctuate`` import this module, not :mod:`punct.am.train`.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from pathlib import Path

import torch
from lhotse.utils import Pathlike

from punct.am.config import AmConfig
from punct.am.model import TdnnAcousticModel, build_model
from punct.am.tokens import SPACE, TokenTable
from punct.features import FeatureConfig
from punct.training import checkpoint as shared
from punct.training.checkpoint import load_checkpoint
from punct.utils.config import config_from_dict, load_config

FEATURE_CONFIG_NAME = "mfcc.yaml"  # the feature config an AM folder holds beside its checkpoints
BEST_CHECKPOINT = "best-valid-loss.pt"  # the selected model, read by every later stage: the epoch with the lowest
# dev loss, or with average_epochs > 1 the average of the last epochs (the name is kept for existing AM folders)


@dataclass
class AmTrainState:
    """What changes while the AM trains (saved in every checkpoint): selection by dev loss and epoch averaging, where
    the other loops' :class:`punct.training.loop.TrainState` selects by a dev F1."""

    epoch: int = 0  # last finished epoch
    step: int = 0
    best_valid_loss: float = math.inf
    best_epoch: int = 0
    best_averaged: int = 1  # the selected model averages epochs best_epoch - best_averaged + 1 .. best_epoch
    amp: str = ""  # the precision --amp fastest chose (none or bf16), kept for a resume; empty: not chosen by it
    history: list[dict] = field(default_factory=list)  # per epoch: epoch, step, train_loss, dev_loss (where scored)
    # the epoch in progress (epoch + 1) at a mid-epoch checkpoint (punct.training.resume): its batches trained so far
    # and its running loss and frame sums; 0 and empty at an epoch's end
    batches_done: int = 0
    epoch_sums: dict[str, float] = field(default_factory=dict)


def save_checkpoint(
    path: Path, *, model, optimizer, state: AmTrainState, config: AmConfig, tokens: TokenTable, **extra
) -> None:
    """``epoch-N.pt`` / ``epoch-E-batch-B.pt`` / ``best-valid-loss.pt``: the shared checkpoint format plus the token
    table (and ``extra``: what a resume restores besides, punct.training.resume)."""
    shared.save_checkpoint(
        path, model=model, optimizer=optimizer, state=state, config=config, tokens=tokens.symbols, **extra
    )


def training_config(checkpoint: Path) -> AmConfig:
    """The AmConfig a checkpoint was trained with (defaults for fields added since)."""
    data = load_checkpoint(checkpoint)
    return config_from_dict(AmConfig, data["config"], str(checkpoint))


def trained_epochs(checkpoint: Path) -> int:
    """The epochs the model of a checkpoint was trained (its state's last finished epoch)."""
    return int(load_checkpoint(checkpoint)["state"]["epoch"])


def load_model(checkpoint: Path, device: torch.device = torch.device("cpu")) -> tuple[TdnnAcousticModel, TokenTable]:
    """A trained model (eval mode) and its token table from ``epoch-N.pt``/``best-valid-loss.pt``."""
    data = load_checkpoint(checkpoint, device)
    config = config_from_dict(AmConfig, data["config"], str(checkpoint))
    tokens = TokenTable(data["tokens"])
    model = build_model(config, len(tokens))
    model.load_state_dict(data["model"])
    return model.to(device).eval(), tokens


def load_am(
    am_dir: Pathlike, checkpoint: str = BEST_CHECKPOINT, device: torch.device = torch.device("cpu")
) -> tuple[TdnnAcousticModel, TokenTable, FeatureConfig]:
    """The model, its token table and its feature config from an AM folder (``exp/am`` of ``steps/train_am.sh``, or a
    pre-trained one in the same format: ``checkpoint`` and ``mfcc.yaml``, the feature config it was trained with)."""
    am_dir = Path(am_dir)
    for path in (am_dir / checkpoint, am_dir / FEATURE_CONFIG_NAME):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file; an AM folder needs {checkpoint} and {FEATURE_CONFIG_NAME}")
    model, tokens = load_model(am_dir / checkpoint, device)
    if tokens.symbols[1] != SPACE:
        raise ValueError(f"{am_dir / checkpoint}: token 1 is {tokens.symbols[1]!r}, expected the separator {SPACE!r}")
    return model, tokens, load_config(FeatureConfig, am_dir / FEATURE_CONFIG_NAME)


def add_am_input_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """The stage-1 features, the trained AM and the splits of an entry point that runs the AM over cuts."""
    parser.add_argument("--fbank-dir", type=Path, required=True, help="stage-1 output (cuts, features, CMVN)")
    parser.add_argument("--am-dir", type=Path, required=True, help="trained AM folder")
    parser.add_argument("--checkpoint", default=BEST_CHECKPOINT, help="checkpoint name inside --am-dir")
    parser.add_argument("--splits", nargs="+", required=True, help=f"splits to {what}")
    parser.add_argument("--prefix", required=True, help="cut manifest name prefix: <prefix>_cuts_<split>.jsonl.gz")
