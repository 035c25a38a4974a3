"""The stop after AM training: an acoustic model whose greedy dev WER is above ``max_dev_wer`` learned (almost)
nothing, and the stages after it would spend their time on nothing.

Issue 38: trained from scratch on 0.8 h of real speech, the AM reached dev WER 101.5 % (it never left the CTC blank
plateau); stage 2 then beam-searched 2 hours into 364 words, stage 3 wrote empty segment manifests and only stage 4
failed.  :func:`check_dev_wer` stops at the AM instead, with the options that help.  Before that, a config may
let stage 2 train on (:func:`epochs_to_train_on`): on a 2-core AMD EPYC without AVX-512 one default egs/mustc seed
of four left the plateau about two epochs later than the others and read 101 % after its 6 epochs.
"""

from __future__ import annotations

import re
from pathlib import Path

WER_LINE = re.compile(r"^%WER\s+(?P<wer>[0-9]+(?:\.[0-9]+)?)(?:\s|$)")

WHAT_HELPS = (
    "What helps: more training speech; starting from a trained AM; a trained recogniser instead; "
    "more epochs (num_epochs in {config})."
)
"""The remedies every corpus has; a recipe names its own options for them with ``hint`` (steps/train_am.sh --hint)."""


class AmLearnedNothing(RuntimeError):
    """The AM's dev WER is above the configured maximum."""


def read_wer(path: str | Path) -> float:
    """The WER (%) of a Kaldi-style ``%WER 12.34 [ ... ]`` file (``punct.bin.decode_am``); ValueError naming the file
    and line otherwise."""
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    for line in lines:
        match = WER_LINE.match(line)
        if match:
            return float(match["wer"])
    raise ValueError(f"{path}:{len(lines) or 1}: no '%WER <number> [...]' line")


def check_dev_wer(
    wer_path: str | Path, max_dev_wer: float | None, config: str = "the AM config", hint: str = ""
) -> float:
    """The dev WER of ``wer_path``; AmLearnedNothing when it is above ``max_dev_wer`` (None: no check).  ``hint``:
    the recipe's options for the remedies of :data:`WHAT_HELPS`, added to the message."""
    wer = read_wer(wer_path)
    if max_dev_wer is not None and wer > max_dev_wer:
        raise AmLearnedNothing(
            f"{wer_path}: the acoustic model's dev WER is {wer:.2f} %, above max_dev_wer {max_dev_wer:g} % "
            f"({config}): it learned (almost) nothing, and the stages after it would recognise, align and train on "
            f"(almost) no words, so the recipe stops here. "
            + WHAT_HELPS.format(config=config)
            + (f" In this recipe: {hint}." if hint else "")
            + f" To go on anyway: --max-dev-wer <percent> (or max_dev_wer: null in {config})."
        )
    return wer


def epochs_to_train_on(
    wer: float, max_dev_wer: float | None, epochs_trained: int, extra_epochs: int, max_epochs: int
) -> int:
    """How many epochs in all stage 2 trains to when the dev WER of an AM trained ``epochs_trained`` epochs is above
    ``max_dev_wer``: ``extra_epochs`` more, at most ``max_epochs``; 0 when the WER is not above it or no epoch is
    left (then :func:`check_dev_wer` decides)."""
    if max_dev_wer is None or wer <= max_dev_wer or extra_epochs <= 0:
        return 0
    epochs = min(epochs_trained + extra_epochs, max_epochs)
    return epochs if epochs > epochs_trained else 0
