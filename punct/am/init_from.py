"""Initialising an acoustic model from another trained AM (e.g. one trained on another language's espeak-ng speech).

Trained from scratch, the small CTC TDNN spends ~18 epochs on the blank plateau (English mini corpus),
more CPU time than a mini recipe can afford.  Starting from a model trained on other
espeak-ng speech skips it: every parameter whose name and shape match is copied, and the output
rows of the characters both token tables share (a-z, the separator, the blank) are copied too; the
remaining output rows (e.g. letters with diacritics) keep their random initialisation.

The result is written as ``<exp-dir>/epoch-0.pt`` in the checkpoint format of ``punct.am.checkpoint``
with a fresh optimizer and training state, so that ``steps/train_am.sh --resume true`` starts
epoch 1 from it.  The target token table is the one ``punct.am.train.run_training`` builds from
the training cuts (same function), so the resume check on the token table passes.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from lhotse.utils import Pathlike

from punct.am.checkpoint import AmTrainState, load_model, save_checkpoint
from punct.am.config import AmConfig
from punct.am.dataset import cut_words, load_split
from punct.am.model import build_model
from punct.am.tokens import TokenTable
from punct.am.train import build_optimizer
from punct.training.loop import seed_everything

logger = logging.getLogger(__name__)
OUTPUT_LAYER = "output"


def transfer_weights(
    source: torch.nn.Module, source_tokens: TokenTable, target: torch.nn.Module, target_tokens: TokenTable
) -> dict[str, int]:
    """Copies matching tensors of ``source`` into ``target`` in place; counts of copied/kept tensors."""
    src = source.state_dict()
    dst = target.state_dict()
    counts = {"copied": 0, "kept": 0, "output_rows": 0}
    for name, value in dst.items():
        if name.startswith(OUTPUT_LAYER + "."):
            continue
        if name in src and src[name].shape == value.shape:
            dst[name] = src[name].clone()
            counts["copied"] += 1
        else:
            counts["kept"] += 1
    shared = [(source_tokens.ids[s], i) for i, s in enumerate(target_tokens.symbols) if s in source_tokens.ids]
    for suffix in ("weight", "bias"):
        name = f"{OUTPUT_LAYER}.{suffix}"
        if name in src and name in dst and src[name].shape[1:] == dst[name].shape[1:]:
            for s, t in shared:
                dst[name][t] = src[name][s]
    counts["output_rows"] = len(shared)
    target.load_state_dict(dst)
    return counts


def training_tokens(fbank_dir: Pathlike, prefix: str, split: str = "train") -> TokenTable:
    """The token table ``run_training`` will build from the split's cuts."""
    cuts, _ = load_split(fbank_dir, split, prefix)
    return TokenTable.from_words(cut_words(c) for c in cuts)


def write_init_checkpoint(
    source_checkpoint: Pathlike, config: AmConfig, fbank_dir: Pathlike, prefix: str, exp_dir: Pathlike, seed: int = 42
) -> tuple[Path, dict[str, int]]:
    """``<exp_dir>/epoch-0.pt``: a ``config`` model initialised from ``source_checkpoint``."""
    seed_everything(seed)
    source, source_tokens = load_model(Path(source_checkpoint))
    tokens = training_tokens(fbank_dir, prefix)
    model = build_model(config, len(tokens))
    counts = transfer_weights(source, source_tokens, model, tokens)
    if counts["copied"] == 0:
        raise ValueError(f"{source_checkpoint}: no parameter matches the model of the config (different dims?)")
    exp_dir = Path(exp_dir)
    exp_dir.mkdir(parents=True, exist_ok=True)
    out = exp_dir / "epoch-0.pt"
    optimizer = build_optimizer(model, config)
    save_checkpoint(out, model=model, optimizer=optimizer, state=AmTrainState(), config=config, tokens=tokens)
    logger.info("%s: from %s: %s", out, source_checkpoint, counts)
    return out, counts
