"""The punctuation TDNN's checkpoints: ``exp/tdnn/epoch-N.pt`` and ``best-valid-f1.pt`` as stage 7 saves them and
decoding, the ensemble and ``punctuate`` load them.

Each holds the shared format of :mod:`punct.training.checkpoint` (model, optimizer, state, the
:class:`punct.models.punct_tdnn.config.TrainTdnnConfig`) plus the network's resolved ``model_config`` (input
width included) and ``inputs``, what the fused matrices were made from (:mod:`punct.io.sources`).  Older
checkpoints load too: ``train_config`` instead of ``config``, and no ``window_centre`` (:data:`LEGACY_WINDOW_CENTRE`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch
from lhotse.utils import Pathlike

from punct.models.punct_tdnn.config import TrainTdnnConfig
from punct.models.punct_tdnn.tdnn import PunctTdnn, TdnnConfig
from punct.training import checkpoint as shared
from punct.training.checkpoint import load_checkpoint
from punct.training.loop import TrainState, unwrap
from punct.utils.config import config_from_dict

# Checkpoints written before ``TdnnConfig.window_centre`` existed were trained on windows centred on
# the word's last frame.
LEGACY_WINDOW_CENTRE = "word_end"


def checkpoint_train_config(path: Pathlike) -> TrainTdnnConfig:
    """The training config stored in a TDNN checkpoint (older checkpoints: defaults for new fields)."""
    ckpt = load_checkpoint(path)
    train_config = dict(
        ckpt["config"] if "config" in ckpt else ckpt["train_config"]
    )  # train_config: before the shared format
    train_config["model"] = {"window_centre": LEGACY_WINDOW_CENTRE, **train_config.get("model", {})}
    return config_from_dict(TrainTdnnConfig, train_config, str(path))


def save_checkpoint(
    path: Path,
    model: PunctTdnn,
    optimizer,
    state: TrainState,
    cfg: TrainTdnnConfig,
    inputs: dict | None = None,
    **extra,
) -> None:
    """``epoch-N.pt`` or ``epoch-E-batch-B.pt``: the shared checkpoint format plus the model's resolved
    ``model_config`` and ``inputs``, what its training inputs were made from (``punct.io.sources.split_sources``;
    None: not known), and ``extra`` (what a resume restores besides: ``punct.training.resume.resume_extra``)."""
    shared.save_checkpoint(
        path,
        model=model,
        optimizer=optimizer,
        state=state,
        config=cfg,
        model_config=dataclasses.asdict(unwrap(model).config),
        inputs=inputs,
        **extra,
    )


def checkpoint_inputs(path: Pathlike) -> dict | None:
    """What the TDNN's training inputs were made from (``{"acoustic": ..., "word_vectors": ...}``, each a
    ``punct.io.sources`` record as a dict or None), or None for checkpoints saved before it was recorded."""
    return load_checkpoint(path).get("inputs")


def load_model(path: Pathlike, device: torch.device = torch.device("cpu")) -> PunctTdnn:
    """A trained TDNN from a checkpoint, in eval mode."""
    ckpt = load_checkpoint(path, device)
    model_cfg = {"window_centre": LEGACY_WINDOW_CENTRE, **ckpt["model_config"]}
    for key in ("channels", "kernels", "dilations"):
        model_cfg[key] = tuple(model_cfg[key])
    model = PunctTdnn(TdnnConfig(**model_cfg))
    model.load_state_dict(ckpt["model"])
    return model.to(device).eval()
