"""Fused 301-frame windows cut at load time from per-utterance matrices.

Inputs of one split (stages 3, 4 and 6 of the EfficientPunct recipe):
  * aligned cuts ``data/fbank/<prefix>_cuts_<split>_ali.jsonl.gz``: each cut's (first) supervision holds
    ``custom["words"]``, ``custom["punct"]`` and ``alignment["word"]`` (one item per word, times in
    seconds on the recording's axis, so the cut start is subtracted);
  * layer-12 acoustic matrices (T x Da) by cut id: ``exp/emb_am/<split>/emb.scp``;
  * per-word BERT vectors (W x Dt) by cut id: ``exp/emb_bert/<split>/vec.scp``.

Every word is one example: the window of ``2*context + 1`` frames centred on the transition to the next
word (or on the word's last frame: ``window_centre``, see ``punct.models.punct_tdnn.frames.window_centres``),
each frame ``[BERT vector of the frame's word ; acoustic vector]`` (see ``punct.models.punct_tdnn.frames`` for
frames before the first word and between words), labelled with the punctuation after the word.
Nothing is stored per window; an LRU cache keeps recently used utterances in memory.  Training examples may be
cut short on the right, as live captions show words (``right_truncation``, :mod:`punct.models.punct_tdnn.truncation`).

With ``case_classes`` (the ``itn`` scheme: :data:`punct.labels.CASE`), the case label of every word is read
from ``custom["case"]`` too, and each example's label is the pair (punctuation, case).

``first_word`` (:mod:`punct.labels`): with ``exclude`` (ParCzech segments, as the thesis) the first word of
every cut is indexed (its posteriors are still computed) but not trained on or scored: ``scored`` marks the
other words, the window mode samples only them, the utterance mode's labels of the first word are
:data:`punct.labels.IGNORE_INDEX`, and the class counts leave it out.  ``include`` (the default, MuST-C):
every word.

A cut is skipped (counted, logged with the reason) when a matrix is missing, when the number of
BERT vectors or alignment items differs from the number of words, or when it has no words.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from lhotse.utils import Pathlike
from torch.utils.data import Dataset

from punct.io.shards import MatrixReader
from punct.labels import (
    PUNCT4,
    TimedWord,
    WordLabels,
    aligned_words,
    check_first_word,
    encode_labels,
    mask_first_word,
    scored_mask,
)
from punct.models.punct_tdnn.frames import (
    FRAME_RATE,
    WINDOW_CENTRES,
    cut_window,
    frame_word_index,
    text_table,
    window_centres,
    word_frame_spans,
)
from punct.models.punct_tdnn.truncation import cut_after
from punct.training.truncation import RightTruncation


@dataclass(frozen=True)
class UtteranceIndex:
    """What a split needs to know about one cut without loading its matrices."""

    key: str
    word_starts: np.ndarray  # (W,) first frame of each word, relative to the cut start
    word_ends: np.ndarray  # (W,) exclusive end frame
    labels: np.ndarray  # (W,) class indices
    case_labels: np.ndarray | None = None  # (W,) case class indices, with a case head


def _cut_words(cut, source: str, classes, case_classes) -> tuple[WordLabels, list[TimedWord]]:
    """The cut's words and labels (validated) and its aligned words (times relative to the recording)."""
    if not cut.supervisions:
        raise ValueError(f"{source}: cut {cut.id} has no supervision")
    sup = cut.supervisions[0]
    labelled = WordLabels.from_supervision(sup, classes, case_classes, where=f"{source}: cut {cut.id}")
    timed = aligned_words(sup)
    if timed is None:
        raise ValueError(f"{source}: cut {cut.id}: supervision has no alignment['word'] (run stage 3)")
    return labelled, timed


class FusionCorpus:
    """Index of the words of one split; reads matrices on demand.

    Args:
      cuts: path of the aligned cuts (jsonl.gz), or a CutSet / list of cuts.
      acoustic_scp: scp of the layer-12 matrices.
      text_scp: scp of the per-word BERT vectors.
      classes: label names in index order.
      case_classes: case label names in index order (reads ``custom["case"]``), or None: no case labels.
      cache_utterances: how many utterances' matrices to keep (LRU); 0 disables the cache.
      window_centre: where each word's window is centred: ``transition`` or ``word_end``.
      first_word: ``include`` (train and score every word) or ``exclude`` (not each cut's first word).
    """

    def __init__(
        self,
        cuts,
        acoustic_scp: Pathlike,
        text_scp: Pathlike,
        classes: Sequence[str] = PUNCT4.classes,
        cache_utterances: int = 256,
        frame_rate: int = FRAME_RATE,
        case_classes: Sequence[str] | None = None,
        window_centre: str = "transition",
        first_word: str = "include",
    ) -> None:
        from lhotse import load_manifest_lazy

        self.first_word = check_first_word(first_word)
        if window_centre not in WINDOW_CENTRES:
            raise ValueError(f"unknown window centre rule {window_centre!r}; choose one of {WINDOW_CENTRES}")
        self.window_centre = window_centre
        source = str(cuts) if isinstance(cuts, (str, Path)) else "cuts"
        if isinstance(cuts, (str, Path)):
            cuts = load_manifest_lazy(cuts)  # streamed: only the word frames and labels are kept
        self.classes = tuple(classes)
        self.case_classes = tuple(case_classes) if case_classes is not None else None
        self.acoustic = MatrixReader(acoustic_scp)
        self.text = MatrixReader(text_scp)
        self.cache_utterances = cache_utterances
        self._cache: collections.OrderedDict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = collections.OrderedDict()
        self.held: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # utterances held open, outside the LRU
        self.utterances: list[UtteranceIndex] = []
        self.skipped: dict[str, int] = collections.Counter()
        for cut in cuts:
            utterance = self._index_cut(cut, source, frame_rate)
            if utterance is not None:
                self.utterances.append(utterance)
        for reason, count in sorted(self.skipped.items()):
            logging.warning("%s: skipped %d cut(s): %s", source, count, reason)
        if not self.utterances:
            raise ValueError(f"{source}: no usable cut (skipped: {dict(self.skipped)})")
        lengths = np.array([len(u.labels) for u in self.utterances])
        self.example_utt = np.repeat(np.arange(len(self.utterances)), lengths)
        self.example_word = np.concatenate([np.arange(n) for n in lengths])
        self.labels = np.concatenate([u.labels for u in self.utterances])
        self.case_labels = (
            np.concatenate([u.case_labels for u in self.utterances]) if self.case_classes is not None else None
        )
        self.scored = scored_mask(lengths, self.first_word)  # (N,) the examples trained on and scored
        first = self.utterances[0].key
        self.text_dim = int(self.text[first].shape[1])
        self.acoustic_dim = int(self.acoustic[first].shape[1])

    def _index_cut(self, cut, source: str, frame_rate: float) -> UtteranceIndex | None:
        """The cut's word frame spans and label ids, or None (counted in ``skipped``) when it cannot be used."""
        labelled, items = _cut_words(cut, source, self.classes, self.case_classes)
        words = labelled.words
        for reason, missing in (
            ("no acoustic matrix", cut.id not in self.acoustic),
            ("no BERT vectors", cut.id not in self.text),
            ("no words", not words),
            ("words/alignment lengths differ", len(items) != len(words)),
        ):
            if missing:
                self._skip(reason, cut.id)
                return None
        starts, ends = word_frame_spans(
            [w.start for w in items], [w.end for w in items], offset=cut.start, frame_rate=frame_rate
        )
        if np.any(np.diff(starts) < 0):
            self._skip("alignment not in word order", cut.id)
            return None
        labels = np.asarray(encode_labels(labelled.punct, self.classes), dtype=np.int64)
        case_labels = (
            np.asarray(encode_labels(labelled.case, self.case_classes), dtype=np.int64)
            if self.case_classes is not None
            else None
        )
        return UtteranceIndex(cut.id, starts, ends, labels, case_labels)

    def _skip(self, reason: str, key: str) -> None:
        if self.skipped[reason] == 0:
            logging.warning("skipping cut %s: %s (further cuts with this reason are only counted)", key, reason)
        self.skipped[reason] += 1

    @property
    def input_dim(self) -> int:
        return self.text_dim + self.acoustic_dim

    def __len__(self) -> int:
        return len(self.labels)

    def class_counts(self) -> np.ndarray:
        """Punctuation class counts of the trained words."""
        return np.bincount(self.labels[self.scored], minlength=len(self.classes))

    def case_counts(self) -> np.ndarray:
        """Case class counts of the trained words."""
        if self.case_classes is None:
            raise ValueError("FusionCorpus has no case labels (case_classes=None)")
        return np.bincount(self.case_labels[self.scored], minlength=len(self.case_classes))

    def trained_examples(self) -> np.ndarray:
        """Indices of the examples (words) trained on: all, or all but each cut's first word."""
        return np.flatnonzero(self.scored)

    def example_labels(self, example: int):
        """The punctuation label, or with case labels the (2,) [punctuation, case] pair."""
        if self.case_classes is None:
            return int(self.labels[example])
        return torch.tensor([self.labels[example], self.case_labels[example]], dtype=torch.long)

    def utterance_labels(self, utt: int) -> np.ndarray:
        """(W,) punctuation labels, or with case labels (W, 2) [punctuation, case] pairs: the training targets
        (the first word's are IGNORE_INDEX under ``first_word: exclude``)."""
        info = self.utterances[utt]
        labels = info.labels if self.case_classes is None else np.stack([info.labels, info.case_labels], axis=1)
        return mask_first_word(labels, self.first_word)

    def matrices(self, utt: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(acoustic (T, Da), text table (W+1, Dt), frame->word index (T,)) of utterance ``utt``: held, cached
        (LRU), or read."""
        if utt in self.held:
            return self.held[utt]
        if utt in self._cache:
            self._cache.move_to_end(utt)
            return self._cache[utt]
        entry = self._read(utt)
        if self.cache_utterances > 0:
            self._cache[utt] = entry
            if len(self._cache) > self.cache_utterances:
                self._cache.popitem(last=False)
        return entry

    def hold(self, utt: int) -> None:
        """Keeps utterance ``utt``'s matrices (read now unless cached) until :meth:`release`, whatever the LRU
        cache does (:mod:`punct.models.punct_tdnn.reader` holds the utterances of its shuffle buffer)."""
        self.held[utt] = self._cache[utt] if utt in self._cache else self._read(utt)

    def release(self, utt: int) -> None:
        self.held.pop(utt, None)

    def _read(self, utt: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        info = self.utterances[utt]
        acoustic = np.asarray(self.acoustic[info.key], dtype=np.float32)
        vectors = np.asarray(self.text[info.key], dtype=np.float32)
        if vectors.shape[0] != len(info.labels):
            raise ValueError(
                f"{info.key}: {vectors.shape[0]} BERT vectors for {len(info.labels)} words (exp/emb_bert out of date?)"
            )
        if acoustic.shape[1] != self.acoustic_dim or vectors.shape[1] != self.text_dim:
            raise ValueError(
                f"{info.key}: matrix widths {acoustic.shape[1]}/{vectors.shape[1]} differ from the split's "
                f"{self.acoustic_dim}/{self.text_dim}"
            )
        return acoustic, text_table(vectors), frame_word_index(info.word_starts, acoustic.shape[0])

    def utterance_frames(self, utt: int) -> tuple[np.ndarray, np.ndarray]:
        """Fused frames (T, Dt + Da) of a whole utterance and its words' centre frames (W,)."""
        acoustic, table, word_index = self.matrices(utt)
        fused = np.concatenate([table[word_index], acoustic], axis=1)
        return fused, self.centres(utt, acoustic.shape[0])

    def known_prefix(self, utt: int, word: int, latency: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Utterance ``utt`` as a stream shows it ``latency`` frames after word ``word`` ended
        (:mod:`punct.models.punct_tdnn.truncation`): (acoustic (cut, Da), text table, frame->word index (cut,),
        centre frames of the known words (known,))."""
        acoustic, table, _ = self.matrices(utt)
        info = self.utterances[utt]
        cut, known = cut_after(info.word_ends, acoustic.shape[0], word, latency)
        starts, ends = info.word_starts[:known], info.word_ends[:known]
        centres = window_centres(starts, ends, cut, self.window_centre)
        return acoustic[:cut], table, frame_word_index(starts, cut), centres

    def truncated_utterance(self, utt: int, word: int, latency: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`utterance_frames` and :meth:`utterance_labels` of the utterance's :meth:`known_prefix`."""
        acoustic, table, word_index, centres = self.known_prefix(utt, word, latency)
        fused = np.concatenate([table[word_index], acoustic], axis=1)
        return fused, centres, self.utterance_labels(utt)[: len(centres)]

    def centres(self, utt: int, num_frames: int) -> np.ndarray:
        """(W,) centre frame of each word's window in utterance ``utt`` of ``num_frames`` frames."""
        info = self.utterances[utt]
        return window_centres(info.word_starts, info.word_ends, num_frames, self.window_centre)

    def window(self, example: int, context: int, latency: int | None = None) -> np.ndarray:
        """The example's (2*context + 1, D) window; with ``latency``, of the utterance's :meth:`known_prefix`
        ``latency`` frames after the example's word ended."""
        utt, word = int(self.example_utt[example]), int(self.example_word[example])
        if latency is not None:
            acoustic, table, word_index, centres = self.known_prefix(utt, word, latency)
            return cut_window(acoustic, table, word_index, int(centres[word]), context)
        acoustic, table, word_index = self.matrices(utt)
        centre = int(self.centres(utt, acoustic.shape[0])[word])
        return cut_window(acoustic, table, word_index, centre, context)


def _epoch_key(key: int | tuple[int, int]) -> tuple[int, int | None]:
    """A sampler's index, or its (index, epoch) pair (:class:`punct.models.punct_tdnn.sampling.WithEpoch`)."""
    return (int(key[0]), int(key[1])) if isinstance(key, tuple) else (int(key), None)


class FusedWindowDataset(Dataset):
    """torch Dataset of (window (2*context+1, D) float32, label) over a FusionCorpus's words (item i is the
    corpus example ``examples[i]``; default: every word).

    With ``truncation`` and items asked for as (i, epoch) pairs, the seeded share of the windows is cut after
    its word's end (:mod:`punct.models.punct_tdnn.truncation`); a plain index is never cut."""

    def __init__(
        self,
        corpus: FusionCorpus,
        context: int = 150,
        examples: np.ndarray | None = None,
        truncation: RightTruncation | None = None,
        seed: int = 0,
    ) -> None:
        self.corpus = corpus
        self.context = context
        self.examples = np.arange(len(corpus)) if examples is None else np.asarray(examples)
        self.truncation, self.seed = truncation, seed

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, key: int | tuple[int, int]):
        item, epoch = _epoch_key(key)
        example = int(self.examples[item])
        latency = None
        if self.truncation is not None and epoch is not None:
            latency = self.truncation.draw(self.seed, epoch, example)
        window = self.corpus.window(example, self.context, latency)
        return torch.from_numpy(window), self.corpus.example_labels(example)


def split_paths(
    cuts_dir: Pathlike, am_dir: Pathlike, bert_dir: Pathlike, split: str, cuts_pattern: str
) -> dict[str, Path]:
    """The contract's file names of one split (e.g. data/fbank, exp/emb_am, exp/emb_bert, "dev");
    ``cuts_pattern`` names the cuts (e.g. "<prefix>_cuts_{split}.jsonl.gz" for segments)."""
    return {
        "cuts": Path(cuts_dir) / cuts_pattern.format(split=split),
        "acoustic_scp": Path(am_dir) / split / "emb.scp",
        "text_scp": Path(bert_dir) / split / "vec.scp",
        "bert_post_scp": Path(bert_dir) / split / "post.scp",
    }


def open_split(
    cuts: Pathlike,
    acoustic_scp: Pathlike,
    text_scp: Pathlike,
    cache_utterances: int = 256,
    classes: Sequence[str] = PUNCT4.classes,
    case_classes: Sequence[str] | None = None,
    window_centre: str = "transition",
    first_word: str = "include",
) -> FusionCorpus:
    """Checks the three inputs exist (naming the missing one) and indexes the split."""
    for path in (cuts, acoustic_scp, text_scp):
        if not Path(path).exists():
            raise FileNotFoundError(f"no such file: {path}")
    return FusionCorpus(
        cuts,
        acoustic_scp,
        text_scp,
        classes=classes,
        cache_utterances=cache_utterances,
        case_classes=case_classes,
        window_centre=window_centre,
        first_word=first_word,
    )


class UtteranceDataset(Dataset):
    """torch Dataset of whole utterances: (fused frames (T, D), centres (W,), labels (W,) or (W, 2) with case).

    For the fully convolutional training mode (``example_unit: utterance``): the conv stack runs once
    per utterance and every word reads its 243-frame slice, instead of one 301-frame window per word.
    """

    def __init__(self, corpus: FusionCorpus, truncation: RightTruncation | None = None, seed: int = 0) -> None:
        self.corpus = corpus
        self.truncation, self.seed = truncation, seed

    def __len__(self) -> int:
        return len(self.corpus.utterances)

    def __getitem__(self, key: int | tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        utt, epoch = _epoch_key(key)
        cut = None
        if self.truncation is not None and epoch is not None:
            num_words = len(self.corpus.utterances[utt].labels)
            cut = self.truncation.draw_word(self.seed, epoch, utt, num_words)
        if cut is None:
            frames, centres = self.corpus.utterance_frames(utt)
            labels = self.corpus.utterance_labels(utt)
        else:
            frames, centres, labels = self.corpus.truncated_utterance(utt, *cut)
        return torch.from_numpy(frames), torch.from_numpy(centres.astype(np.int64)), torch.from_numpy(labels)


def collate_utterances(
    items: Sequence[tuple[torch.Tensor, torch.Tensor, torch.Tensor]], context: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pads utterances to (B, context + max T + context, D) with zeros; returns
    (padded frames, batch row of each word, centre of each word, label of each word)."""
    longest = max(frames.shape[0] for frames, _, _ in items)
    dim = items[0][0].shape[1]
    padded = torch.zeros((len(items), longest + 2 * context, dim), dtype=torch.float32)
    rows, centres, labels = [], [], []
    for b, (frames, word_centres, word_labels) in enumerate(items):
        padded[b, context : context + frames.shape[0]] = frames
        rows.append(torch.full((len(word_centres),), b, dtype=torch.long))
        centres.append(word_centres)
        labels.append(word_labels)
    return padded, torch.cat(rows), torch.cat(centres), torch.cat(labels)
