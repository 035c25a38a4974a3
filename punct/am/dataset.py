"""Batches of (features, tokens) for CTC training, from cuts with stage-1 features.

The sampler (lhotse's ``DynamicBucketingSampler``) yields CutSets; :class:`CtcDataset`
turns one into padded tensors.  Features get the split's per-speaker CMVN (the same function
every other stage uses), optionally SpecAugment-style masks in training.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from lhotse import CutSet, load_manifest, load_manifest_lazy
from lhotse.utils import Pathlike

from punct.am.tokens import TokenTable, UnknownCharacterError
from punct.features.cmvn import SpeakerCmvn
from punct.features.compute import cuts_path, feature_frames, load_cut_features
from punct.labels import WordLabels


def cut_words(cut) -> list[str]:
    """The supervision's ``custom["words"]`` (data contract)."""
    return WordLabels.words_of(cut.supervisions[0])


def load_split(
    fbank_dir: Pathlike, split: str, prefix: str, suffix: str = "", lazy: bool = False
) -> tuple[CutSet, SpeakerCmvn]:
    """A split's cuts (with features) and its CMVN stats; ``lazy``: the cuts are read from the file as they are
    iterated (lhotse's ``load_manifest_lazy``), none held."""
    path = cuts_path(fbank_dir, split, prefix, suffix)
    cmvn_path = Path(fbank_dir) / f"cmvn_{split}.json"
    for p in (path, cmvn_path):
        if not p.is_file():
            raise FileNotFoundError(f"{p}: no such file (run stage 1)")
    return (load_manifest_lazy(path) if lazy else load_manifest(path)), SpeakerCmvn.load(cmvn_path)


def ctc_frames_needed(ids: list[int]) -> int:
    """Fewest output frames a CTC path over ``ids`` needs: one per token, plus a blank between repeats."""
    return len(ids) + sum(1 for a, b in zip(ids, ids[1:]) if a == b)


def load_train_splits(fbank_dirs: Sequence[Pathlike], split: str, prefix: str) -> tuple[CutSet, SpeakerCmvn]:
    """One split from several stage-1 folders (a corpus and its AM-only extra talks), as one CutSet with
    one CMVN table.  A speaker (or cut id) in two folders is an error: its statistics would be ambiguous."""
    cut_sets, cmvns = zip(*(load_split(d, split, prefix) for d in fbank_dirs))
    stats: dict = {}
    for fbank_dir, cmvn in zip(fbank_dirs, cmvns):
        shared = set(stats) & set(cmvn.stats)
        if shared:
            raise ValueError(f"{fbank_dir}: speakers {sorted(shared)[:3]} also in another training folder")
        stats.update(cmvn.stats)
    if len({c.norm_vars for c in cmvns}) > 1:
        raise ValueError(f"{list(map(str, fbank_dirs))}: CMVN stats differ in norm_vars")
    ids = [cut.id for cuts in cut_sets for cut in cuts]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{list(map(str, fbank_dirs))}: a cut id occurs in two training folders")
    cuts = CutSet.from_cuts(cut for cuts in cut_sets for cut in cuts)
    return cuts, SpeakerCmvn(stats, cmvns[0].norm_vars)


def usable_cuts(cuts: CutSet, tokens: TokenTable, subsample: int = 1) -> CutSet:
    """Cuts CTC can train on: known characters, and at least as many loss frames as tokens+repeats.

    With ``subsample`` k the loss reads every k-th output frame, ceil(T / k) of them: a cut with
    fewer would get an infinite loss, which ``zero_infinity`` turns silently into zero.
    """
    if subsample < 1:
        raise ValueError(f"subsample must be >= 1, got {subsample}")
    kept, skipped = [], {}
    for cut in cuts:
        try:
            ids = tokens.encode_words(cut_words(cut))
        except UnknownCharacterError:
            skipped["unknown character"] = skipped.get("unknown character", 0) + 1
            continue
        loss_frames = -(-feature_frames(cut) // subsample)
        if not ids or loss_frames < ctc_frames_needed(ids):
            skipped["too short"] = skipped.get("too short", 0) + 1
            continue
        kept.append(cut)
    if skipped:
        logging.warning("skipped cuts for CTC: %s (kept %d)", skipped, len(kept))
    return CutSet.from_cuts(kept)


def spec_augment(
    feats: torch.Tensor,
    rng: np.random.Generator,
    num_time_masks: int,
    max_time: int,
    num_freq_masks: int,
    max_freq: int,
) -> torch.Tensor:
    """Zeroes random time and frequency stripes of a (T, F) matrix (features are mean-normalised)."""
    feats = feats.clone()
    t, f = feats.shape
    for _ in range(num_freq_masks):
        width = int(rng.integers(0, max_freq + 1))
        start = int(rng.integers(0, max(1, f - width)))
        feats[:, start : start + width] = 0
    for _ in range(num_time_masks):
        width = int(rng.integers(0, min(max_time, max(1, t // 5)) + 1))
        start = int(rng.integers(0, max(1, t - width)))
        feats[start : start + width] = 0
    return feats


class CtcDataset(torch.utils.data.Dataset):
    """``dataset[cuts]`` -> dict(feats (N, T, F), feat_lens (N,), targets (sum L,), target_lens (N,), ids).

    In training the items are ``(cuts, epoch, position)`` (:class:`punct.training.resume.SkipBatches`): the
    SpecAugment masks of a batch are then drawn from a generator of (seed, epoch, position), so that they are
    the same in whichever DataLoader worker reads the batch, with any number of workers, and after a resume
    that skipped the batches before it; they still differ between batches and epochs."""

    def __init__(self, cmvn: SpeakerCmvn, tokens: TokenTable, spec_augment: dict | None = None, seed: int = 0) -> None:
        self.cmvn = cmvn
        self.tokens = tokens
        self.spec_augment = spec_augment
        self.seed = seed

    def masks_rng(self, epoch: int = 0, position: int = 0) -> np.random.Generator:
        """The generator of the SpecAugment masks of batch ``position`` of epoch ``epoch``."""
        return np.random.default_rng([self.seed, epoch, position])

    def __getitem__(self, item: CutSet | tuple[CutSet, int, int]) -> dict:
        cuts, epoch, position = item if isinstance(item, tuple) else (item, 0, 0)
        cuts = cuts.sort_by_duration(ascending=False)
        rng = self.masks_rng(epoch, position) if self.spec_augment else None
        feats, targets = [], []
        for cut in cuts:
            x = torch.from_numpy(load_cut_features(cut, self.cmvn))
            if rng is not None:
                x = spec_augment(x, rng, **self.spec_augment)
            feats.append(x)
            targets.append(torch.tensor(self.tokens.encode_words(cut_words(cut)), dtype=torch.long))
        feat_lens = torch.tensor([x.shape[0] for x in feats], dtype=torch.long)
        padded = torch.nn.utils.rnn.pad_sequence(feats, batch_first=True)
        return {
            "feats": padded,
            "feat_lens": feat_lens,
            "targets": torch.cat(targets),
            "target_lens": torch.tensor([len(t) for t in targets], dtype=torch.long),
            "ids": [c.id for c in cuts],
        }
