"""Recognised words + official transcripts -> segment dataset (stage 3 of the speech-informed ITN recipe).

Per recording (``process_recording``): align the recognised words with the official words
(``punct.align.segments.align_recording``), keep exactly matching words, build segments
(``build_segments``).  Around it: the per-word alignment table the thesis publishes, and segments as lhotse
supervisions; the jobs and the merge of the whole dataset: ``punct.align.build``.

Recognised words (``<dir>/<recording id>.words.tsv``): one word per line, ``word<TAB>start<TAB>end``
in seconds from the start of the recording (stage 2 writes them; a synthesized corpus
writes the synthesizer's own transcript in the same format under ``synth/``); read and written by
``punct.labels.read_recognised_words`` and ``write_recognised_words``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from lhotse import SupervisionSegment
from lhotse.supervision import AlignmentItem
from lhotse.utils import Pathlike

from punct.align.nw import AlignConfig
from punct.align.segments import (
    AlignedWord,
    OfficialWord,
    Segment,
    SegmentConfig,
    SegmentCounts,
    align_recording,
    build_segments,
)
from punct.labels import CASE, PUNCT9, TimedWord, WordLabels
from punct.text.token_labels import normalise_word


@dataclass(frozen=True)
class ItnDatasetConfig:
    """Every value of stage 3 (conf/segments.yaml); defaults are the thesis' where it gives them."""

    gap_open: float = 1.0  # alignment: cost of opening a run of words aligned to blanks
    gap_extend: float = 0.3  # alignment: cost of each further word of the run
    sub_weight: float = 1.0  # alignment: cost of two completely different words
    min_char_duration: float = 0.015  # s per character (thesis 3.3.3)
    max_char_duration: float = 0.25  # s per character (thesis 3.3.3)
    max_duration: float = 15.0  # split longer segments (thesis)
    split_n: int = 9  # Binomial(n, p) seconds (thesis)
    split_p: float = 0.6
    min_words: int = 5  # (thesis)
    min_duration: float = 1.5  # seconds (thesis)
    num_dev_speakers: int = 30  # held-out speakers drawn when no lists are given (thesis: 30/30)
    num_test_speakers: int = 30
    seed: int = 42
    # Held out by a share of the hours instead (a corpus with a few dominant speakers: a count of speakers can put
    # most of it in dev or test): whole units (split_by) drawn with the seed until dev and test hold about these
    # shares, none that would take a part above max_heldout_share (punct.training.heldout.draw_by_share).  A speaker's
    # hours are estimated from the official words (each recording's duration shared by its speakers' word counts).
    split_by: Literal["speaker", "recording"] = "speaker"  # recording: every segment of a recording in one split
    dev_share: float | None = None  # None: num_dev_speakers (a count; split_by speaker only)
    test_share: float | None = None  # None: num_test_speakers
    max_heldout_share: float = 1 / 3
    # stage 3 stops (after writing stats.md) when a split has fewer segments: nothing to train on or to score
    min_train_segments: int = 10
    min_dev_segments: int = 1
    min_test_segments: int = 1

    def __post_init__(self) -> None:
        if (self.dev_share is None) != (self.test_share is None):
            raise ValueError(
                f"give both dev_share and test_share, or neither (got {self.dev_share}, {self.test_share})"
            )
        if self.split_by == "recording" and self.dev_share is None:
            raise ValueError(
                "split_by: recording draws recordings by a share of the hours: give dev_share and test_share"
            )

    @property
    def by_share(self) -> bool:
        return self.dev_share is not None

    def align_config(self) -> AlignConfig:
        return AlignConfig(gap_open=self.gap_open, gap_extend=self.gap_extend, sub_weight=self.sub_weight)

    def segment_config(self) -> SegmentConfig:
        names = {f.name for f in dataclasses.fields(SegmentConfig)}
        return SegmentConfig(**{k: v for k, v in dataclasses.asdict(self).items() if k in names})


def too_few_segments(
    out_dir: Pathlike, segments: dict[str, int], config: ItnDatasetConfig, official_words: int, exact_words: int
) -> str | None:
    """Why the segment dataset is too small to train or score a model (a split under its ``min_<split>_segments``),
    with what helps; None when it is not."""
    minimum = {"train": config.min_train_segments, "dev": config.min_dev_segments, "test": config.min_test_segments}
    short = [
        f"{segments.get(split, 0)} {split} (min_{split}_segments {least})"
        for split, least in minimum.items()
        if segments.get(split, 0) < least
    ]
    if not short:
        return None
    return (
        f"{out_dir}: too few segments to train or score a model: " + ", ".join(short) + f"; {exact_words} of "
        f"{official_words} official words were recognised exactly (stats.md: the alignment, the filters, the "
        "splits).  What helps: better recognised words (stage 1/2: an AM with a lower dev WER: more AM data, "
        "--am-init <trained AM>, --asr-model <transformers CTC folder>, more epochs), more recordings, or "
        "held-out parts with more speech (dev_share/test_share of the hours, split_by: recording); the minimums "
        "are config values (min_train_segments, min_dev_segments, min_test_segments)."
    )


def official_words(sup: SupervisionSegment) -> list[OfficialWord]:
    """The official words stored by data preparation (``punct.corpora``) in a supervision's custom."""
    labelled = WordLabels.from_supervision(sup, PUNCT9, CASE)
    c = WordLabels.word_fields(sup, ("word_ids", "speakers", "sentence_idx"), len(labelled))
    n = len(labelled)
    return [
        OfficialWord(
            labelled.words[i],
            labelled.punct[i],
            labelled.case[i],
            c["word_ids"][i],
            c["speakers"][i],
            c["sentence_idx"][i],
            i,
        )
        for i in range(n)
    ]


def process_recording(
    recording_id: str,
    rec_words: Sequence[TimedWord],
    off_words: Sequence[OfficialWord],
    dev_speakers: set[str],
    test_speakers: set[str],
    config: ItnDatasetConfig,
    counts: SegmentCounts,
) -> tuple[list[AlignedWord], list[Segment]]:
    rows = align_recording(rec_words, off_words, config.align_config())
    segments = build_segments(recording_id, rows, dev_speakers, test_speakers, config.segment_config(), counts)
    return rows, segments


ALIGNMENT_COLUMNS = (
    "word_idx",
    "sentence_idx",
    "rec_word",
    "gold_word",
    "speaker",
    "start",
    "end",
    "punc",
    "upper",
    "distance",
    "segment_idx",
)


def alignment_table(rows: Sequence[AlignedWord], segments: Sequence[Segment]) -> str:
    """The thesis' per-word table (TSV with a header); segment_idx -1 for words in no segment."""
    seg_of = {}
    for s in segments:
        for w in s.words:
            seg_of[w.word_idx] = s.index
    lines = ["\t".join(ALIGNMENT_COLUMNS)]
    for r in rows:
        lines.append(
            "\t".join(
                [
                    str(r.word_idx),
                    str(r.sentence_idx),
                    r.rec_word or "",
                    r.word or "",
                    r.speaker or "",
                    "" if r.start is None else f"{r.start:.3f}",
                    "" if r.end is None else f"{r.end:.3f}",
                    r.punct,
                    r.case,
                    str(r.distance),
                    str(seg_of.get(r.word_idx, -1) if r.word is not None else -1),
                ]
            )
        )
    return "\n".join(lines) + "\n"


def segment_text(words: Sequence[str], punct: Sequence[str]) -> str:
    """Cased words with their marks (a quote class is written as a closing quote)."""
    return " ".join(w + ("" if p == PUNCT9.none else p) for w, p in zip(words, punct))


def segment_to_supervision(seg: Segment, language: str | None = None) -> SupervisionSegment:
    """A segment as a lhotse supervision; custom words follow the data contract (:class:`punct.labels.WordLabels`)
    (lower-case words, one label per word) plus the case labels and the cased words."""
    words = [w.word for w in seg.words]
    punct = [w.punct for w in seg.words]
    labelled = WordLabels(
        seg.id, tuple(normalise_word(w) or w.lower() for w in words), tuple(punct), tuple(w.case for w in seg.words)
    )
    return SupervisionSegment(
        id=seg.id,
        recording_id=seg.recording_id,
        start=round(seg.start, 4),
        duration=round(seg.duration, 4),
        channel=0,
        text=segment_text(words, punct),
        language=language,
        speaker="+".join(seg.speakers),
        custom={**labelled.to_custom(), "cased_words": words, "word_idx": [w.word_idx for w in seg.words]},
        alignment={
            "word": [
                AlignmentItem(
                    symbol=normalise_word(w.word) or w.word.lower(),
                    start=round(w.start, 4),
                    duration=round(w.end - w.start, 4),
                )
                for w in seg.words
            ]
        },
    )
