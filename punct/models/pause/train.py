"""Fit the pause-only grid on train, choose on dev, and keep what was chosen and why.

``<exp-dir>/model.pkl`` (:meth:`punct.models.pause.model.PauseClassifier.save`) and ``<exp-dir>/choice.json``: the
features, the request (inputs, seed, config, first-word rule, dev metric), the words of train and dev, every
candidate's dev scores and the chosen one.  With first-word rule ``exclude`` (egs/parczech, as its models) each
segment's first word is neither fit on nor counted in the dev choice.
``<exp-dir>/.done`` is written by the caller once its outputs are complete (:func:`is_trained`).
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from punct.labels import scored_mask
from punct.models.pause.features import FEATURE_NAMES, WordPauses
from punct.models.pause.model import PauseClassifier, PauseConfig, choose_on_dev
from punct.utils.atomic import atomic_write_text, is_done
from punct.utils.config import add_config_arguments

MODEL_FILE = "model.pkl"
CHOICE_FILE = "choice.json"


@dataclass(frozen=True)
class PauseRequest:
    """What decides the outputs of a fit (recorded in ``choice.json``; :func:`is_trained` compares it)."""

    inputs: dict[str, Path]  # split -> its manifest
    seed: int
    config: PauseConfig
    first_word: str = "include"  # exclude: each utterance's first word is neither fit on nor chosen on
    metric: str = "overall"  # the dev F1 the candidates are compared on (punct.models.pause.model.METRICS)

    def to_dict(self) -> dict:
        """JSON types (paths as strings, tuples as lists)."""
        return json.loads(json.dumps(asdict(self), default=str))


def train_pause(
    train: WordPauses, dev: WordPauses, classes: Sequence[str], request: PauseRequest, exp_dir: Path
) -> PauseClassifier:
    """The candidate of ``request.config`` with the highest dev F1, fit on ``train``; writes ``model.pkl`` and
    ``choice.json`` into ``exp_dir``."""
    fit_on, chosen_on = (scored_mask(split.lengths, request.first_word) for split in (train, dev))
    logging.info("fitting on %d train words, choosing on %d dev words", fit_on.sum(), chosen_on.sum())
    model, choice = choose_on_dev(
        (train.features[fit_on], train.labels[fit_on]),
        (dev.features[chosen_on], dev.labels[chosen_on]),
        classes,
        request.config,
        request.seed,
        request.metric,
    )
    model.save(exp_dir / MODEL_FILE)
    record = {
        "features": list(FEATURE_NAMES),
        "classes": list(classes),
        **request.to_dict(),
        "train": {"utterances": len(train.utterances), "words": int(fit_on.sum()), "skipped": train.skipped},
        "dev": {"utterances": len(dev.utterances), "words": int(chosen_on.sum()), "skipped": dev.skipped},
        **choice.to_dict(),
    }
    atomic_write_text(exp_dir / CHOICE_FILE, json.dumps(record, indent=2) + "\n")
    logging.info(
        "chosen on dev: %s (dev %s F1 %.4f); wrote %s",
        model.candidate.describe(),
        request.metric,
        choice.best.f1(request.metric),
        exp_dir / CHOICE_FILE,
    )
    return model


def is_trained(exp_dir: Path, request: PauseRequest) -> bool:
    """Whether ``exp_dir`` was finished (its ``.done``) after every input last changed, for the same request."""
    choice = exp_dir / CHOICE_FILE
    if not choice.is_file() or not all(is_done(exp_dir, newer_than=path) for path in request.inputs.values()):
        return False
    record = json.loads(choice.read_text(encoding="utf-8"))
    return all(record.get(key) == value for key, value in request.to_dict().items())


def add_pause_arguments(parser: argparse.ArgumentParser) -> None:
    """The options both entry points of the baseline share: the splits fit and chosen on, the output folder, the
    seed, re-runs, threads, and the candidates (``--config`` and one flag per :class:`PauseConfig` field)."""
    parser.add_argument("--config", type=Path, default=None, help="YAML of the candidates (PauseConfig)")
    parser.add_argument("--train-split", default="train", help="split the candidates are fit on")
    parser.add_argument("--dev-split", default="dev", help="split the candidate is chosen on")
    parser.add_argument("--exp-dir", type=Path, default=Path("exp/pause"), help="output folder")
    parser.add_argument("--seed", type=int, default=42, help="seed of the classifiers")
    parser.add_argument("--overwrite", action="store_true", help="train again even if --exp-dir is done")
    parser.add_argument(
        "--num-threads", type=int, default=1, help="threads of the classifiers (OpenMP, BLAS); 0: their default"
    )
    add_config_arguments(parser, PauseConfig)
