"""The pause-only model's outputs, in the formats the recipes score.

* egs/mustc (stage 8): per-utterance posteriors (W x classes, the label set's order) in one kaldiio shard,
  ``<dir>/<split>/post.{ark,scp}`` (:mod:`punct.io.shards`), keyed by cut id, as the TDNN's and BERT's;
* egs/parczech (stage 6): ``<dir>/decode/<split>.jsonl``, one line per segment in the format of
  :mod:`punct.scoring.itn` (``punct_ref``/``punct_hyp``/``case_ref``/``case_hyp``/``first_word``).  Word times
  carry nothing about capitals: every case prediction is ``blank`` (the case head's row says so: [cap] F1 0).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from punct.io.shards import write_shard
from punct.labels import CASE, PUNCT9, copy_first_word
from punct.models.pause.features import WordPauses
from punct.models.pause.model import PauseClassifier
from punct.utils.atomic import atomic_write_text


def write_posteriors(model: PauseClassifier, pauses: WordPauses, prefix: Path) -> int:
    """Writes each utterance's posteriors to the shard ``prefix`` (``.ark``, ``.scp``, ``.scp.done``); returns
    the number of utterances."""
    matrices = pauses.split(model.posteriors(pauses.features))
    count = write_shard(prefix, ((u.id, m) for u, m in zip(pauses.utterances, matrices)))
    logging.info("wrote %s.scp: %d utterances", prefix, count)
    return count


def itn_predictions(model: PauseClassifier, pauses: WordPauses, first_word: str) -> list[dict]:
    """One decode record per segment (:mod:`punct.scoring.itn`): punctuation predicted from the pauses, case
    ``blank`` everywhere; under ``first_word`` exclude the first word's labels are copied from the reference, as
    every model of the recipe writes them."""
    if tuple(model.classes) != PUNCT9.classes:
        raise ValueError(f"ITN decodes need a model of {PUNCT9.name} classes, got {list(model.classes)}")
    records = []
    for utterance, hyp in zip(pauses.utterances, pauses.split(model.predict(pauses.features))):
        if utterance.case is None:
            raise ValueError(f"segment {utterance.id}: no case labels (read the segments with the case label set)")
        blank = [CASE.classes[0]] * len(utterance)
        records.append(
            {
                "id": utterance.id,
                "words": list(utterance.words),
                "punct_ref": list(utterance.punct),
                "punct_hyp": copy_first_word([PUNCT9.classes[i] for i in hyp], utterance.punct, first_word),
                "case_ref": list(utterance.case),
                "case_hyp": copy_first_word(blank, utterance.case, first_word),
                "first_word": first_word,
            }
        )
    return records


def write_itn_decode(model: PauseClassifier, pauses: WordPauses, first_word: str, path: Path) -> None:
    """Writes :func:`itn_predictions` as JSON lines to ``path`` (atomically)."""
    records = itn_predictions(model, pauses, first_word)
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    logging.info("wrote %s: %d segments", path, len(records))
