"""Training and inference helpers of the ParCzech models (used by ``punct/bin/train_mm.py``).

* loss: ``punct_weight * Lp + case_weight * Lc`` (thesis: 0.5 / 0.5), each a cross-entropy
  averaged over the labelled words of the batch;
* learning rate: linear warm-up over the first ``warmup_fraction`` of the updates to the peak,
  then linear decay to zero (thesis 5.1);
* :func:`predict`: per-segment predictions and losses of a split, and the cross-attention of
  the highest-loss segment of each length quartile (thesis 5.5.3) for the plots;
* :func:`loader`: shuffled batches are this rank's share under torchrun (:class:`RankBatchSampler`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import torch
import torch.nn.functional as F

from punct.labels import CASE, PUNCT9
from punct.metrics import score
from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.data import ItnDataset, collate
from punct.models.cross_attention.model import CASE_HEAD, PUNCT_HEAD, new_parameters
from punct.models.text.chunking import IGNORE_INDEX
from punct.utils.atomic import atomic_path
from punct.training.loop import DistInfo, RankBatchSampler


def two_head_loss(logits: Dict[str, torch.Tensor], batch: Dict[str, torch.Tensor], punct_weight: float = 0.5,
                  case_weight: float = 0.5) -> Tuple[torch.Tensor, Dict[str, float]]:
    """``punct_weight * CE_punct + case_weight * CE_case`` over the labelled words; returns the
    loss and its parts as floats."""
    parts = {}
    for head in (PUNCT_HEAD, CASE_HEAD):
        labels = batch[f"labels_{head}"]
        mask = labels != IGNORE_INDEX
        parts[head] = F.cross_entropy(logits[head][mask], labels[mask])
    loss = punct_weight * parts[PUNCT_HEAD] + case_weight * parts[CASE_HEAD]
    return loss, {k: float(v.detach()) for k, v in parts.items()}


def lr_factor(step: int, total_steps: int, warmup_fraction: float) -> float:
    """Linear warm-up to 1 over ``warmup_fraction * total_steps`` updates, then linear decay to 0."""
    warmup = max(1, int(round(warmup_fraction * total_steps)))
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total_steps - step) / max(1, total_steps - warmup))


def build_optimizer(model: torch.nn.Module, cfg: MmConfig) -> torch.optim.Optimizer:
    """AdamW with groups (pretrained/new x decay/no decay); each group's ``peak_lr`` is kept for the schedule."""
    new_ids = {id(p) for p in new_parameters(model)}
    groups: Dict[Tuple[bool, bool], List] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        no_decay = p.ndim < 2 or "norm" in name.lower()
        groups.setdefault((id(p) in new_ids, no_decay), []).append(p)
    param_groups = []
    for (is_new, no_decay), params in groups.items():
        peak = cfg.lr_new if (is_new and cfg.lr_new > 0) else cfg.lr
        param_groups.append({"params": params, "weight_decay": 0.0 if no_decay else cfg.weight_decay, "lr": peak, "peak_lr": peak})
    return torch.optim.AdamW(param_groups)


def to_device(batch: Dict[str, torch.Tensor], device: torch.device) -> Dict[str, torch.Tensor]:
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def loader(dataset: ItnDataset, batch_size: int, shuffle: bool, seed: int, pad_id: int, num_workers: int = 0, *,
           dist: DistInfo = DistInfo(), pin_memory: bool = False) -> torch.utils.data.DataLoader:
    """Batches of ``dataset``.  Shuffled: this rank's share of a seeded order (``batch_size`` per rank; one
    process gets the batches of ``DataLoader(shuffle=True)`` with the same seed); otherwise in order."""
    generator = torch.Generator().manual_seed(seed)
    common = dict(num_workers=num_workers, pin_memory=pin_memory, generator=generator,
                  collate_fn=functools.partial(collate, pad_id=pad_id))
    if not shuffle:
        return torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False, **common)
    sampler = RankBatchSampler(len(dataset), batch_size, dist, generator)
    return torch.utils.data.DataLoader(dataset, batch_sampler=sampler, **common)


@dataclass
class Predictions:
    """Per-segment references and predictions (class names) of one split."""

    ids: List[str] = field(default_factory=list)
    words: List[List[str]] = field(default_factory=list)
    punct_ref: List[List[str]] = field(default_factory=list)
    punct_hyp: List[List[str]] = field(default_factory=list)
    case_ref: List[List[str]] = field(default_factory=list)
    case_hyp: List[List[str]] = field(default_factory=list)
    losses: List[float] = field(default_factory=list)

    def flat_ids(self, which: str) -> np.ndarray:
        classes = PUNCT9.classes if which.startswith("punct") else CASE.classes
        index = {c: i for i, c in enumerate(classes)}
        return np.array([index[x] for seg in getattr(self, which) for x in seg], dtype=np.int64)

    def scores(self):
        """(punctuation scores, case scores) of :func:`punct.metrics.score`."""
        return (score(self.flat_ids("punct_ref"), self.flat_ids("punct_hyp"), PUNCT9.classes),
                score(self.flat_ids("case_ref"), self.flat_ids("case_hyp"), CASE.classes))

    def write(self, path: Path) -> None:
        """One JSON line per segment (the format :mod:`punct.scoring` reads)."""
        lines = [json.dumps({"id": i, "words": w, "punct_ref": pr, "punct_hyp": ph, "case_ref": cr, "case_hyp": ch,
                             "loss": round(l, 5)}, ensure_ascii=False)
                 for i, w, pr, ph, cr, ch, l in zip(self.ids, self.words, self.punct_ref, self.punct_hyp,
                                                    self.case_ref, self.case_hyp, self.losses)]
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            tmp.write_text("".join(x + "\n" for x in lines), encoding="utf-8")


@torch.no_grad()
def predict(model: torch.nn.Module, dataset: ItnDataset, cfg: MmConfig, device: torch.device, pad_id: int) -> Predictions:
    """Argmax predictions and the per-segment loss of every segment, in dataset order."""
    model.eval()
    out = Predictions()
    rows: Dict[int, tuple] = {}
    for batch in loader(dataset, cfg.eval_batch_size, False, 0, pad_id, cfg.num_workers):
        batch = to_device(batch, device)
        logits = model(batch)
        for r, i in enumerate(batch["index"].tolist()):
            n = len(dataset.segments[i].words)
            lp = F.cross_entropy(logits[PUNCT_HEAD][r, :n], batch[f"labels_{PUNCT_HEAD}"][r, :n])
            lc = F.cross_entropy(logits[CASE_HEAD][r, :n], batch[f"labels_{CASE_HEAD}"][r, :n])
            rows[i] = (logits[PUNCT_HEAD][r, :n].argmax(-1).tolist(), logits[CASE_HEAD][r, :n].argmax(-1).tolist(),
                       float(cfg.punct_weight * lp + cfg.case_weight * lc))
    for i, seg in enumerate(dataset.segments):
        hp, hc, loss = rows[i]
        out.ids.append(seg.id)
        out.words.append(list(seg.words))
        out.punct_ref.append([PUNCT9.classes[x] for x in seg.punct])
        out.punct_hyp.append([PUNCT9.classes[x] for x in hp])
        out.case_ref.append([CASE.classes[x] for x in seg.case])
        out.case_hyp.append([CASE.classes[x] for x in hc])
        out.losses.append(loss)
    return out


def quartile_worst(dataset: ItnDataset, losses: List[float]) -> List[int]:
    """Index of the highest-loss segment in each quartile of word counts (thesis 5.5.3)."""
    order = sorted(range(len(dataset)), key=lambda i: (len(dataset.segments[i].words), dataset.segments[i].id))
    chosen = []
    for q in range(4):
        part = order[q * len(order) // 4 : (q + 1) * len(order) // 4]
        if part:
            chosen.append(max(part, key=lambda i: losses[i]))
    return chosen


@torch.no_grad()
def attention_examples(model: torch.nn.Module, dataset: ItnDataset, indices: List[int], device: torch.device, pad_id: int,
                       tokenizer) -> List[Dict]:
    """The last block's cross-attention (text tokens x audio frames) of some segments, for plots."""
    if not getattr(model, "uses_audio", False):
        return []
    model.eval()
    out = []
    for i in indices:
        example = dataset[i]
        batch = to_device(collate([example], pad_id), device)
        attn = model(batch, need_attention=True)["attention"][0]  # (T, F)
        seg = dataset.segments[i]
        ids, _, token_words = dataset.text[i]
        num_frames = len(example["frame_words"])
        starts, _ = dataset.geometry.frame_windows(num_frames)
        out.append({
            "id": seg.id, "tokens": tokenizer.convert_ids_to_tokens(ids), "token_words": token_words,
            "words": seg.words, "punct": [PUNCT9.classes[x] for x in seg.punct], "case": [CASE.classes[x] for x in seg.case],
            "word_starts": seg.word_starts, "frame_starts": starts.tolist(),
            "frame_words": example["frame_words"].tolist(), "attention": attn[:, :num_frames].cpu().numpy().tolist(),
        })
    return out

