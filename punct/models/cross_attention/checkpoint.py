"""The punctuation + case models' files: ``exp/<model>/best-valid-f1.pt`` (and the ``epoch-N.pt`` of training) in
the shared format of :mod:`punct.training.checkpoint`, with the model's ``kind`` (text or mm), its
:class:`punct.models.cross_attention.config.MmConfig` and its ``text_encoder`` spec, so that decoding,
dumps and ``punctuate_itn`` rebuild the model without the training code or the encoder's folder.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch
from lhotse.utils import Pathlike

from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.model import build_model, head_specs
from punct.models.text.model import PunctBert, encoder_spec
from punct.training import checkpoint as shared
from punct.training.checkpoint import load_checkpoint


def save_model(path: Path, model: torch.nn.Module, kind: str, cfg: MmConfig, **extra) -> None:
    """A model-only file in the shared checkpoint format (no optimizer, no state) with its ``kind`` and
    ``text_encoder`` (:func:`punct.models.text.model.encoder_spec`: the text encoder's config and tokenizer
    files, so that a decoder rebuilds the model without the encoder folder and with the training tokenizer)."""
    module = model.module if hasattr(model, "module") else model
    shared.save_checkpoint(path, model=model, config=cfg, kind=kind, text_encoder=encoder_spec(module.text), **extra)


def _config_from_dict(values: dict) -> MmConfig:
    """The :class:`MmConfig` of a checkpoint's ``config`` (lists back to tuples); ValueError on keys it lacks."""
    known = {f.name for f in dataclasses.fields(MmConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"checkpoint config has keys MmConfig does not know: {unknown}")
    return MmConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


def model_config(path: Pathlike) -> MmConfig:
    """The :class:`MmConfig` a model file of :func:`save_model` was trained with, without building the model."""
    return _config_from_dict(load_checkpoint(path, "cpu", legacy_numpy_rng=True)["config"])


def load_model(
    path: Pathlike,
    device: torch.device = torch.device("cpu"),
    kind: str | None = None,
    needed_by: str = "",
    am_dir: Pathlike | None = None,
) -> tuple[torch.nn.Module, MmConfig, str]:
    """A model file of :func:`save_model` (``exp/<model>/best-valid-f1.pt``, or an epoch-N.pt) in eval mode, its
    config and its kind (text or mm); ValueError if ``kind`` is given and the file holds another.  ``am_dir``: where
    the AM of a ``sound_encoder: am`` model is now (an exported folder's copy), instead of the path training stored."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such checkpoint")
    saved = load_checkpoint(path, "cpu", legacy_numpy_rng=True)  # an epoch-N.pt of an older train_mm too
    if kind is not None and saved.get("kind") != kind:
        raise ValueError(f"{path}: a {saved.get('kind')!r} model; {needed_by or 'this'} needs a {kind!r} model")
    cfg = _config_from_dict(saved["config"])
    if am_dir is not None:
        cfg = dataclasses.replace(cfg, am_dir=str(Path(am_dir).resolve()))
    # the encoder and tokenizer of training, from the checkpoint; older checkpoints: from cfg.bert_model again
    text = PunctBert.from_spec(saved["text_encoder"], head_specs(cfg)) if saved.get("text_encoder") else None
    model = build_model(saved.get("kind"), cfg, text)
    model.load_state_dict(saved["model"])
    return model.to(device).eval(), cfg, saved["kind"]
