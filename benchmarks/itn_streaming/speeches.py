"""Live captions of egs/parczech measured on whole speeches: what ``punctuate_itn`` labels when a speaker's whole
turn is streamed through it with the recogniser's words, scored against the official transcript
(``benchmarks/bench_itn_live.py`` measures; ``benchmarks.itn_streaming.live_table`` makes the README tables).

A split holds speakers, not recordings (a sitting has many speakers), so the unit streamed is a **speech**: a run of
one held-out speaker's words in a recording's alignment table (stage 3's ``data/segments/align/<recording>.tsv``),
with the recogniser's words inside it.  Its audio runs from ``margin`` seconds before its first recognised word to
``margin`` after its last, but never past the middle of the gap to another speaker's words.  Unlike stage 3's
segments, nothing is filtered: every recognised word is streamed, misrecognised ones too, through the live tool
itself (:class:`punct.inference.itn_stream.ItnStreamer` driven by :func:`punct.inference.streaming.run_stream`,
as ``punctuate_itn`` drives it), and its own segment rule cuts the speech.

Scoring: each recognised word aligned to an official word is scored against that word's mark and case (a
substitution too: the mark after a misheard word is still there to predict).  A recognised word with no official
word (an insertion) has no reference and is counted, not scored; an official word the recogniser missed (a
deletion) is never streamed and is counted with its mark.  Every word is scored, a segment's first one too: it is
what the tool prints.
"""

from __future__ import annotations

import csv
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from punct.align.dataset import ALIGNMENT_COLUMNS
from punct.inference.itn_stream import ItnStreamer, ItnWord, SegmentRule
from punct.inference.streaming import StreamStats, run_stream
from punct.labels import CASE, PUNCT9, TimedWord
from punct.models.cross_attention.config import MmConfig
from punct.scoring.punct_scores import score

CHUNK_SECONDS = 0.1  # audio read at a time, as punctuate_itn's --chunk default


@dataclass(frozen=True)
class Speech:
    """One held-out speaker's turn in a recording: the audio to stream and the recogniser's words in it."""

    recording_id: str
    speaker: str
    start: float  # seconds in the recording
    end: float
    tokens: tuple[TimedWord, ...]  # the recogniser's words, seconds from ``start``
    punct: tuple[str | None, ...]  # per token: the official word's mark (PUNCT9 class); None: an insertion
    case: tuple[str | None, ...]
    deleted: int  # official words the recogniser missed (never streamed)
    deleted_marks: int  # of them, those followed by a mark

    @property
    def id(self) -> str:
        return f"{self.recording_id}_{self.speaker}_{self.start:.2f}"


@dataclass(frozen=True)
class _Row:
    speaker: str  # empty for an insertion
    rec_word: str
    gold_word: str
    start: float | None
    end: float | None
    punct: str
    case: str


def _read_alignment(path: Path) -> list[_Row]:
    """Rows of stage 3's alignment table (``punct.align.dataset.alignment_table``); a wrong header or field is an
    error naming the file and line."""
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if tuple(header or ()) != ALIGNMENT_COLUMNS:
            raise ValueError(f"{path}:1: not an alignment table (header {header})")
        rows = []
        for line, fields in enumerate(reader, start=2):
            if len(fields) != len(ALIGNMENT_COLUMNS):
                raise ValueError(f"{path}:{line}: {len(fields)} fields, expected {len(ALIGNMENT_COLUMNS)}")
            d = dict(zip(ALIGNMENT_COLUMNS, fields))
            if d["punc"] not in PUNCT9.classes or d["upper"] not in CASE.classes:
                raise ValueError(f"{path}:{line}: unknown mark {d['punc']!r} or case {d['upper']!r}")
            try:
                start, end = (float(d[k]) if d[k] else None for k in ("start", "end"))
            except ValueError:
                raise ValueError(f"{path}:{line}: times {d['start']!r}, {d['end']!r} are not numbers") from None
            if d["rec_word"] and (start is None or end is None or end < start):
                raise ValueError(f"{path}:{line}: recognised word {d['rec_word']!r} without valid times")
            rows.append(_Row(d["speaker"], d["rec_word"], d["gold_word"], start, end, d["punc"], d["upper"]))
    return rows


def _turns(rows: Sequence[_Row]) -> list[list[_Row]]:
    """Runs of one speaker's rows; an insertion (no speaker) belongs to the run it falls in."""
    turns: list[list[_Row]] = []
    speaker = None
    for row in rows:
        if row.speaker and row.speaker != speaker:
            turns.append([])
            speaker = row.speaker
        if not turns:  # insertions before the first official word
            turns.append([])
        turns[-1].append(row)
    return turns


def _speaker(turn: Sequence[_Row]) -> str:
    return next((r.speaker for r in turn if r.speaker), "")


def _timed(turn: Sequence[_Row]) -> list[_Row]:
    return [r for r in turn if r.rec_word]


def read_speeches(path: Path, speakers: set[str], margin: float = 0.5) -> list[Speech]:
    """The speeches of ``speakers`` in one recording's alignment table (see the module docstring); a turn whose
    words the recogniser missed entirely has nothing to stream and is left out (its words count in no score)."""
    recording_id = path.name.removesuffix(".tsv")
    turns = _turns(_read_alignment(path))
    speeches, unheard = [], 0
    for k, turn in enumerate(turns):
        timed = _timed(turn)
        unheard += _speaker(turn) in speakers and not timed
        if _speaker(turn) not in speakers or not timed:
            continue
        before = next((_timed(t)[-1].end for t in reversed(turns[:k]) if _timed(t)), 0.0)
        after = next((_timed(t)[0].start for t in turns[k + 1 :] if _timed(t)), math.inf)
        start = max(timed[0].start - margin, (before + timed[0].start) / 2, 0.0)
        end = min(timed[-1].end + margin, (timed[-1].end + after) / 2)
        missed = [r for r in turn if r.gold_word and not r.rec_word]
        speeches.append(
            Speech(
                recording_id,
                _speaker(turn),
                round(start, 3),
                round(end, 3),
                tuple(TimedWord(r.rec_word, r.start - round(start, 3), r.end - round(start, 3)) for r in timed),
                tuple(r.punct if r.gold_word else None for r in timed),
                tuple(r.case if r.gold_word else None for r in timed),
                len(missed),
                sum(r.punct != PUNCT9.none for r in missed),
            )
        )
    if unheard:
        logging.warning("%s: %d turn(s) of held-out speakers with no recognised word left out", path, unheard)
    return speeches


def stream_speech(
    model: torch.nn.Module,
    cfg: MmConfig,
    speech: Speech,
    audio: np.ndarray,
    latency: float,
    rule: SegmentRule,
    chunk_seconds: float = CHUNK_SECONDS,
) -> tuple[list[ItnWord], StreamStats, int]:
    """``punctuate_itn``'s stream of one speech (``audio``: its samples at the model's rate): the labelled words,
    one per token, the compute per chunk and the number of segments the rule cut."""
    streamer = ItnStreamer(model, cfg, latency, rule, speech.id)
    chunk = max(1, int(round(chunk_seconds * streamer.rate)))
    chunks = (audio[i : i + chunk] for i in range(0, len(audio), chunk))
    words, stats = run_stream(streamer, chunks, speech.tokens)
    if len(words) != len(speech.tokens):
        raise ValueError(
            f"{speech.id}: {len(speech.tokens)} recognised words streamed but {len(words)} labelled "
            f"({streamer.dropped_tokens} said as no word)"
        )
    return words, stats, streamer.segments


@dataclass
class LiveScore:
    """What the streams of a split's speeches at one latency and segment rule gave."""

    punct_ref: list[str] = field(default_factory=list)
    punct_hyp: list[str] = field(default_factory=list)
    case_ref: list[str] = field(default_factory=list)
    case_hyp: list[str] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)  # seconds from each word's end to its labelling
    speeches: int = 0
    streamed_words: int = 0
    inserted: int = 0
    deleted: int = 0
    deleted_marks: int = 0
    final_words: int = 0
    segments: int = 0
    audio_seconds: float = 0.0
    compute_seconds: float = 0.0  # wall
    cpu_seconds: float = 0.0  # of this process: its compute even when other jobs share the machine

    def add(self, speech: Speech, words: Sequence[ItnWord], stats: StreamStats, segments: int) -> None:
        self.speeches += 1
        self.streamed_words += len(words)
        self.deleted += speech.deleted
        self.deleted_marks += speech.deleted_marks
        self.segments += segments
        for word, punct, case in zip(words, speech.punct, speech.case):
            self.final_words += word.final
            self.waits.append(word.emitted_at - word.end)
            if punct is None:
                self.inserted += 1
                continue
            self.punct_ref.append(punct)
            self.punct_hyp.append(word.label)
            self.case_ref.append(case)
            self.case_hyp.append(word.case)
        self.audio_seconds += sum(stats.chunk_seconds)
        self.compute_seconds += sum(stats.compute_seconds)
        self.cpu_seconds += sum(stats.cpu_seconds)

    def row(self, latency: float, rule: SegmentRule) -> dict:
        """The JSON row: F1 in %, the word counts, the share of final words, the waits and the real-time factors
        (wall and CPU time of the stream over its seconds of audio)."""
        punct_scores = score(*_ids(self.punct_ref, self.punct_hyp, PUNCT9.classes), PUNCT9.classes)
        case_scores = score(*_ids(self.case_ref, self.case_hyp, CASE.classes), CASE.classes)
        waits = np.asarray(self.waits)
        return {
            "latency": "inf" if math.isinf(latency) else latency,
            "pause_split": rule.pause_split,
            "max_segment": rule.max_segment,
            "speeches": self.speeches,
            "segments": self.segments,
            "words": len(self.punct_ref),
            "streamed_words": self.streamed_words,
            "inserted_words": self.inserted,
            "deleted_words": self.deleted,
            "deleted_marks": self.deleted_marks,
            "punct_macro_f1": 100 * punct_scores.macro_f1,
            "punct_overall_f1": 100 * punct_scores.overall["f1"],
            "cap_f1": 100 * case_scores.per_class["cap"]["f1"],
            "final_share": self.final_words / max(1, self.streamed_words),
            "wait_median": float(np.median(waits)) if waits.size else 0.0,
            "wait_max": float(waits.max()) if waits.size else 0.0,
            "rtf": self.compute_seconds / max(self.audio_seconds, 1e-9),
            "rtf_cpu": self.cpu_seconds / max(self.audio_seconds, 1e-9),
        }


def _ids(ref: Sequence[str], hyp: Sequence[str], classes: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    index = {c: i for i, c in enumerate(classes)}
    return np.array([index[x] for x in ref], dtype=np.int64), np.array([index[x] for x in hyp], dtype=np.int64)
