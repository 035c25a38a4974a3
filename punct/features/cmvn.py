"""Per-speaker cepstral mean (and optionally variance) normalisation.

Stage 1 accumulates, per split, the count, sum and sum of squares of every speaker's
feature frames (``speaker`` = the supervision's speaker, e.g. the talk) into
``data/fbank/cmvn_<split>.json``.  Every consumer (AM training, decoding, alignment, the
embedding dump) applies the same stats through :func:`apply_cmvn`, so training and inference
see identical inputs.  As in Kaldi's default (``apply-cmvn --norm-vars=false``) only the mean
is removed unless ``norm_vars`` is set.  A cut whose speaker has no stats is an error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from lhotse.utils import Pathlike

from punct.utils.atomic import atomic_write_text


@dataclass
class CmvnStats:
    """Sufficient statistics of one speaker: frame count, per-dimension sum and sum of squares."""

    count: int = 0
    sum: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    sumsq: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))

    def accumulate(self, feats: np.ndarray) -> None:
        feats = np.asarray(feats, dtype=np.float64)
        if self.count == 0 and self.sum.size == 0:
            self.sum = np.zeros(feats.shape[1])
            self.sumsq = np.zeros(feats.shape[1])
        self.count += feats.shape[0]
        self.sum += feats.sum(axis=0)
        self.sumsq += (feats**2).sum(axis=0)

    def merge(self, other: CmvnStats) -> None:
        if other.count == 0:
            return
        if self.sum.size == 0:
            self.sum = np.zeros_like(other.sum)
            self.sumsq = np.zeros_like(other.sumsq)
        self.count += other.count
        self.sum += other.sum
        self.sumsq += other.sumsq

    def mean_std(self, floor: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
        if self.count == 0:
            raise ValueError("CMVN stats with no frames")
        mean = self.sum / self.count
        var = np.maximum(self.sumsq / self.count - mean**2, floor)
        return mean, np.sqrt(var)

    def to_dict(self) -> dict:
        return {"count": int(self.count), "sum": self.sum.tolist(), "sumsq": self.sumsq.tolist()}

    @staticmethod
    def from_dict(data: dict) -> CmvnStats:
        return CmvnStats(
            int(data["count"]), np.asarray(data["sum"], dtype=np.float64), np.asarray(data["sumsq"], dtype=np.float64)
        )


class SpeakerCmvn:
    """Per-speaker CMVN stats and their application."""

    def __init__(self, stats: dict[str, CmvnStats], norm_vars: bool = False) -> None:
        self.stats = stats
        self.norm_vars = norm_vars
        self._cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    @staticmethod
    def accumulate(pairs: Iterable[tuple[str, np.ndarray]], norm_vars: bool = False) -> SpeakerCmvn:
        """From (speaker, feature matrix) pairs."""
        stats: dict[str, CmvnStats] = {}
        for speaker, feats in pairs:
            stats.setdefault(speaker, CmvnStats()).accumulate(feats)
        return SpeakerCmvn(stats, norm_vars)

    def apply(self, speaker: str, feats: np.ndarray) -> np.ndarray:
        if speaker not in self._cache:
            if speaker not in self.stats:
                raise KeyError(f"no CMVN stats for speaker {speaker!r} (have {len(self.stats)} speakers)")
            mean, std = self.stats[speaker].mean_std()
            self._cache[speaker] = (mean.astype(np.float32), std.astype(np.float32))
        mean, std = self._cache[speaker]
        out = np.asarray(feats, dtype=np.float32) - mean
        if self.norm_vars:
            out = out / std
        return out

    def save(self, path: Pathlike) -> None:
        data = {"norm_vars": self.norm_vars, "speakers": {k: v.to_dict() for k, v in sorted(self.stats.items())}}
        atomic_write_text(path, json.dumps(data))

    @staticmethod
    def load(path: Pathlike) -> SpeakerCmvn:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            stats = {k: CmvnStats.from_dict(v) for k, v in data["speakers"].items()}
        except (OSError, ValueError, KeyError) as e:
            raise ValueError(f"{path}: not a CMVN stats file ({e})") from e
        return SpeakerCmvn(stats, bool(data.get("norm_vars", False)))
