"""Segments that ignore sentence boundaries (thesis 3.3.2 and 3.3.3).

From a recording's recognised words (with times) and its official words (with labels):

1. ``align_recording``: Needleman-Wunsch alignment (``punct.align.nw``) of the
   recognised words with the normalised official words; one ``AlignedWord`` row per pair,
   in order (the thesis' table: word_idx, sentence_idx, rec_word, gold_word, speaker,
   start, end, punc, upper).  Rows whose recognised word has no official counterpart carry
   ``word_idx = -1``.
2. ``zero_distance_runs``: maximal runs of consecutive rows that are exact matches (edit
   distance 0 after normalisation).  Any other row (a substitution, a spoken word missing
   from the record, an official word not heard) ends a run, so every word of a run is
   recognised and timestamped, and the run's audio holds no unlisted speech (3.3.2).
3. ``build_segments`` applies the filters of 3.3.3, in the thesis' order:
   a. character duration: a word whose duration / number of characters is outside
      [0.015, 0.25] s has a wrong timestamp; it is removed and the run is cut there.  (The
      thesis speaks of words and notes that its figure's segment-level measure "includes
      gaps between words" while the filter's does not, so we apply it per word.)
   b. speakers: a run whose speakers are all test (dev) speakers goes to test (dev); runs
      with several speakers are excluded from dev and test; runs mixing held-out and
      training speakers are dropped; the rest is train (multi-speaker runs allowed).
   c. long runs (over 15 s) are split: sample a length L ~ Binomial(n=9, p=0.6) and cut
      the prefix of words ending within L seconds of the start (at least one word),
      repeatedly, until the rest is at most 15 s.  L is in seconds: the thesis' segments
      average 5.6 s (1711 h / 1.1 M segments, Table 3.4) against a binomial mean of 5.4.
   d. segments without any punctuation mark and without a capital letter after their
      first word are dropped (a capital on the first word does not count).
   e. segments with fewer than 5 words or shorter than 1.5 s are dropped.
   The random splitting uses a generator seeded by (seed, recording id), so the result does
   not depend on the order or the job in which recordings are processed.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from punct.align.nw import AlignConfig, align_words
from punct.labels import CAP, CASE, PUNCT9, TimedWord
from punct.text.token_labels import normalise_word

SPLITS = ("train", "dev", "test")


class OfficialWord(NamedTuple):
    """One word of an official transcript with its labels (punctuation marks folded in)."""

    word: str
    punct: str
    case: str
    word_id: str
    speaker: str
    sentence_idx: int  # 0-based index of the sentence within the file
    word_idx: int  # 0-based index of the word within the file


class AlignedWord(NamedTuple):
    word_idx: int  # index among the official words; -1 for a recognised word without one
    sentence_idx: int
    rec_word: str | None
    word: str | None  # official (gold) word as written; None for a recognised-only row
    speaker: str | None
    start: float | None
    end: float | None
    punct: str
    case: str
    distance: int


def align_recording(
    rec_words: Sequence[TimedWord], off_words: Sequence[OfficialWord], config: AlignConfig = AlignConfig()
) -> list[AlignedWord]:
    """Aligns a recording's recognised and official words; one row per alignment pair."""
    pairs, _ = align_words([w.word.lower() for w in rec_words], [normalise_word(w.word) for w in off_words], config)
    rows = []
    last_sentence = 0
    for p in pairs:
        r = rec_words[p.rec] if p.rec is not None else None
        if p.off is None:
            rows.append(
                AlignedWord(-1, last_sentence, r.word, None, None, r.start, r.end, PUNCT9.none, CASE.none, p.distance)
            )
            continue
        o = off_words[p.off]
        last_sentence = o.sentence_idx
        rows.append(
            AlignedWord(
                o.word_idx,
                o.sentence_idx,
                r.word if r else None,
                o.word,
                o.speaker,
                r.start if r else None,
                r.end if r else None,
                o.punct,
                o.case,
                p.distance,
            )
        )
    return rows


def is_exact(row: AlignedWord) -> bool:
    return row.word is not None and row.rec_word is not None and row.distance == 0


def zero_distance_runs(rows: Sequence[AlignedWord]) -> list[list[AlignedWord]]:
    runs: list[list[AlignedWord]] = []
    cur: list[AlignedWord] = []
    for row in rows:
        if is_exact(row):
            cur.append(row)
        elif cur:
            runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    return runs


@dataclass(frozen=True)
class SegmentConfig:
    min_char_duration: float = 0.015  # seconds per character, below: wrong timestamp
    max_char_duration: float = 0.25  # seconds per character, above: wrong timestamp
    max_duration: float = 15.0  # longer runs are split
    split_n: int = 9  # Binomial(n, p) segment length in seconds
    split_p: float = 0.6
    min_words: int = 5
    min_duration: float = 1.5
    seed: int = 42


@dataclass
class Segment:
    recording_id: str
    index: int
    split: str
    words: list[AlignedWord]

    @property
    def id(self) -> str:
        return f"{self.recording_id}_{self.index}"

    @property
    def start(self) -> float:
        return float(self.words[0].start)

    @property
    def end(self) -> float:
        return float(self.words[-1].end)

    @property
    def duration(self) -> float:
        return self.end - self.start

    @property
    def speakers(self) -> list[str]:
        return sorted({w.speaker for w in self.words})

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "recording_id": self.recording_id,
            "split": self.split,
            "start": round(self.start, 4),
            "duration": round(self.duration, 4),
            "speakers": self.speakers,
            "word_speakers": [w.speaker for w in self.words],
            "words": [w.word for w in self.words],
            "punct": [w.punct for w in self.words],
            "case": [w.case for w in self.words],
            "starts": [round(w.start - self.start, 4) for w in self.words],
            "ends": [round(w.end - self.start, 4) for w in self.words],
            "word_idx": [w.word_idx for w in self.words],
            "sentence_idx": [w.sentence_idx for w in self.words],
        }


@dataclass
class SegmentCounts:
    """Words/segments removed by each filter (for the log and the statistics)."""

    runs: int = 0
    words_in_runs: int = 0
    bad_char_duration_words: int = 0
    mixed_speaker_runs: int = 0
    split_runs: int = 0
    no_punct_or_cap: int = 0
    too_short: int = 0
    kept: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    def add(self, other: SegmentCounts) -> None:
        for name in (
            "runs",
            "words_in_runs",
            "bad_char_duration_words",
            "mixed_speaker_runs",
            "split_runs",
            "no_punct_or_cap",
            "too_short",
            "kept",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def assign_split(speakers: set[str], dev: set[str], test: set[str]) -> str | None:
    """train/dev/test for a run's speakers; None when it must be dropped."""
    held = speakers & (dev | test)
    if not held:
        return "train"
    if len(speakers) > 1:
        return None  # several speakers: excluded from dev/test, and must not leak into train
    return "test" if held & test else "dev"


def choose_heldout_speakers(
    speakers: Iterable[str], num_dev: int, num_test: int, seed: int
) -> tuple[list[str], list[str]]:
    """A seeded random choice of disjoint dev and test speaker lists (thesis: 30 and 30)."""
    pool = sorted(set(speakers))
    if num_dev + num_test > len(pool):
        raise ValueError(f"{num_dev} dev + {num_test} test speakers requested, only {len(pool)} speakers")
    order = np.random.default_rng(seed).permutation(len(pool))
    test = sorted(pool[k] for k in order[:num_test])
    dev = sorted(pool[k] for k in order[num_test : num_test + num_dev])
    return dev, test


def _char_duration_ok(w: AlignedWord, config: SegmentConfig) -> bool:
    chars = len(w.word)
    d = (w.end - w.start) / max(chars, 1)
    return config.min_char_duration <= d <= config.max_char_duration


def split_long(words: list[AlignedWord], config: SegmentConfig, rng: np.random.Generator) -> list[list[AlignedWord]]:
    """Cuts Binomial(n, p)-second prefixes off a run until the rest is at most max_duration."""
    pieces = []
    rest = list(words)
    while rest and rest[-1].end - rest[0].start > config.max_duration:
        length = rng.binomial(config.split_n, config.split_p)
        limit = rest[0].start + length
        k = 1
        while k < len(rest) and rest[k].end <= limit:
            k += 1
        pieces.append(rest[:k])
        rest = rest[k:]
    if rest:
        pieces.append(rest)
    return pieces


def has_punct_or_cap(words: Sequence[AlignedWord]) -> bool:
    return any(w.punct != PUNCT9.none for w in words) or any(w.case == CAP for w in words[1:])


def build_segments(
    recording_id: str,
    rows: Sequence[AlignedWord],
    dev_speakers: set[str],
    test_speakers: set[str],
    config: SegmentConfig = SegmentConfig(),
    counts: SegmentCounts | None = None,
) -> list[Segment]:
    """Runs of exactly aligned words -> filtered, split, labelled segments (module docstring)."""
    counts = counts if counts is not None else SegmentCounts()
    rng = np.random.default_rng([config.seed, zlib.crc32(recording_id.encode("utf-8"))])
    runs = []
    for run in zero_distance_runs(rows):
        counts.runs += 1
        counts.words_in_runs += len(run)
        cur: list[AlignedWord] = []
        for w in run:  # (a) character duration, per word; a bad word cuts the run
            if _char_duration_ok(w, config):
                cur.append(w)
            else:
                counts.bad_char_duration_words += 1
                if cur:
                    runs.append(cur)
                cur = []
        if cur:
            runs.append(cur)
    segments: list[Segment] = []
    for run in runs:
        split = assign_split({w.speaker for w in run}, dev_speakers, test_speakers)  # (b)
        if split is None:
            counts.mixed_speaker_runs += 1
            continue
        pieces = split_long(run, config, rng)  # (c)
        counts.split_runs += len(pieces) > 1
        for piece in pieces:
            if not has_punct_or_cap(piece):  # (d)
                counts.no_punct_or_cap += 1
                continue
            if len(piece) < config.min_words or piece[-1].end - piece[0].start < config.min_duration:  # (e)
                counts.too_short += 1
                continue
            segments.append(Segment(recording_id, len(segments), split, piece))
    counts.kept += len(segments)
    return segments


def dataset_statistics(segments: Iterable[Segment]) -> dict[str, dict]:
    """Per split (and "total"): segments, words, hours, speakers, label counts, and in ``segments_with``
    the number of segments holding each label at least once (a rare mark's test count)."""
    stats: dict[str, dict] = {}
    for seg in segments:
        for key in (seg.split, "total"):
            s = stats.setdefault(
                key,
                {
                    "segments": 0,
                    "words": 0,
                    "seconds": 0.0,
                    "speakers": set(),
                    "punct": Counter(),
                    "case": Counter(),
                    "segments_with": Counter(),
                },
            )
            s["segments"] += 1
            s["words"] += len(seg.words)
            s["seconds"] += seg.duration
            s["speakers"].update(seg.speakers)
            s["punct"].update(w.punct for w in seg.words)
            s["case"].update(w.case for w in seg.words)
            s["segments_with"].update({w.punct for w in seg.words} | {w.case for w in seg.words})
    return stats


def format_statistics(stats: dict[str, dict]) -> str:
    """Tables shaped like the thesis' Table 3.4 (sizes) and Table 3.5 (label percentages)."""
    keys = [k for k in (*SPLITS, "total") if k in stats]
    out = ["| Set | Segments | Words | Duration (hours) | Speakers |", "|---|---:|---:|---:|---:|"]
    for k in keys:
        s = stats[k]
        out.append(f"| {k} | {s['segments']} | {s['words']} | {s['seconds'] / 3600:.3f} | {len(s['speakers'])} |")
    out.append("")
    head = [f"[{c}]" for c in PUNCT9.classes] + [f"[{c}]" for c in CASE.classes]
    out.append("| Set | " + " | ".join(head) + " |")
    out.append("|---|" + "---:|" * len(head))
    for k in keys:
        s = stats[k]
        n = max(s["words"], 1)
        cells = [f"{100 * s['punct'][c] / n:.2f}" for c in PUNCT9.classes] + [
            f"{100 * s['case'][c] / n:.2f}" for c in CASE.classes
        ]
        out.append(f"| {k} | " + " | ".join(cells) + " |")
    out.append("")
    out += _segments_with_table(stats, keys)
    return "\n".join(out) + "\n"


def _segments_with_table(stats: dict[str, dict], keys: Sequence[str]) -> list[str]:
    """Segments holding each mark (and a capital) at least once, per split: can a rare mark be learned and scored?"""
    labels = [c for c in PUNCT9.classes if c != PUNCT9.none] + [CAP]
    out = [
        "Segments containing each label at least once:",
        "",
        "| Set | Segments | " + " | ".join(f"[{c}]" for c in labels) + " |",
        "|---|---:|" + "---:|" * len(labels),
    ]
    for k in keys:
        with_label = stats[k].get("segments_with", Counter())
        out.append(f"| {k} | {stats[k]['segments']} | " + " | ".join(str(with_label[c]) for c in labels) + " |")
    return out
