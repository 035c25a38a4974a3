"""What a punctuation + case model predicts for a split: per-segment argmax classes of both heads beside the
references, and each segment's loss, written as the decode jsonl that :mod:`punct.scoring.itn` reads.

Dev selection in training, the decoding of stage 4, the two-head ensemble and the ITN latency and streaming
measurements all predict through :func:`predict`, so that they score the same words under the same
first-word rule (``first_word: exclude``: the first word's predictions are copies of its references).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from punct.labels import CASE, IGNORE_INDEX, PUNCT9, copy_first_word, scored_mask
from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.data import ItnDataset, ItnSegment, loader, to_device
from punct.models.cross_attention.model import CASE_HEAD, PUNCT_HEAD
from punct.scoring.punct_scores import score
from punct.utils.atomic import atomic_path


@dataclass
class Predictions:
    """Per-segment references and predictions (class names) of one split, written under the rule
    ``first_word`` (exclude: the first word's predictions are copies of its references, not scored)."""

    ids: list[str] = field(default_factory=list)
    words: list[list[str]] = field(default_factory=list)
    punct_ref: list[list[str]] = field(default_factory=list)
    punct_hyp: list[list[str]] = field(default_factory=list)
    case_ref: list[list[str]] = field(default_factory=list)
    case_hyp: list[list[str]] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    first_word: str = "include"

    def add(self, segment: ItnSegment, punct_hyp: list[str], case_hyp: list[str], loss: float) -> None:
        """One segment's predicted class names (under the ``first_word`` rule) and loss, beside its references."""
        self.ids.append(segment.id)
        self.words.append(list(segment.words))
        self.punct_ref.append([PUNCT9.classes[x] for x in segment.punct])
        self.punct_hyp.append(punct_hyp)
        self.case_ref.append([CASE.classes[x] for x in segment.case])
        self.case_hyp.append(case_hyp)
        self.losses.append(loss)

    def flat_ids(self, which: str) -> np.ndarray:
        """Class ids of the scored words of every segment (all words, or all but each first)."""
        classes = PUNCT9.classes if which.startswith("punct") else CASE.classes
        index = {c: i for i, c in enumerate(classes)}
        ids = np.array([index[x] for seg in getattr(self, which) for x in seg], dtype=np.int64)
        return ids[scored_mask([len(w) for w in self.words], self.first_word)]

    def scores(self):
        """(punctuation scores, case scores) of :func:`punct.scoring.punct_scores.score`."""
        return (
            score(self.flat_ids("punct_ref"), self.flat_ids("punct_hyp"), PUNCT9.classes),
            score(self.flat_ids("case_ref"), self.flat_ids("case_hyp"), CASE.classes),
        )

    def write(self, path: Path) -> None:
        """One JSON line per segment (the format :mod:`punct.scoring.itn` reads, with the first-word rule)."""
        lines = [
            json.dumps(
                {
                    "id": i,
                    "words": w,
                    "punct_ref": pr,
                    "punct_hyp": ph,
                    "case_ref": cr,
                    "case_hyp": ch,
                    "loss": round(loss, 5),
                    "first_word": self.first_word,
                },
                ensure_ascii=False,
            )
            for i, w, pr, ph, cr, ch, loss in zip(
                self.ids, self.words, self.punct_ref, self.punct_hyp, self.case_ref, self.case_hyp, self.losses
            )
        ]
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            tmp.write_text("".join(x + "\n" for x in lines), encoding="utf-8")


@torch.no_grad()
def predict(
    model: torch.nn.Module, dataset: ItnDataset, cfg: MmConfig, device: torch.device, pad_id: int
) -> Predictions:
    """Argmax predictions and the per-segment loss (over the trained words) of every segment, in dataset
    order; under ``cfg.first_word`` exclude the first word's predictions are its reference labels."""
    model.eval()
    out = Predictions(first_word=cfg.first_word)
    rows: dict[int, tuple] = {}
    # in order of length (the rows are keyed by index): less padding, the same predictions up to float rounding
    for batch in loader(dataset, cfg.eval_batch_size, False, 0, pad_id, cfg.num_workers, by_length=True):
        batch = to_device(batch, device)
        logits = model(batch)
        for r, i in enumerate(batch["index"].tolist()):
            n = len(dataset.segments[i].words)
            lp, lc = (
                _segment_loss(logits[head][r, :n], batch[f"labels_{head}"][r, :n]) for head in (PUNCT_HEAD, CASE_HEAD)
            )
            rows[i] = (
                logits[PUNCT_HEAD][r, :n].argmax(-1).tolist(),
                logits[CASE_HEAD][r, :n].argmax(-1).tolist(),
                float(cfg.punct_weight * lp + cfg.case_weight * lc),
            )
    for i, seg in enumerate(dataset.segments):
        hp, hc, loss = rows[i]
        out.add(
            seg,
            [PUNCT9.classes[x] for x in copy_first_word(hp, seg.punct, cfg.first_word)],
            [CASE.classes[x] for x in copy_first_word(hc, seg.case, cfg.first_word)],
            loss,
        )
    return out


def _segment_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over a segment's trained words (0 when none is: a one-word segment under exclude)."""
    if not bool((labels != IGNORE_INDEX).any()):
        return logits.new_zeros(())
    return F.cross_entropy(logits, labels, ignore_index=IGNORE_INDEX)
