"""Punctuation (9 marks) and case of the speech-informed ITN models (egs/parczech stage 4) against latency: each
segment of a split streamed as live captions would see it (``benchmarks/bench_itn_streaming.py`` measures;
``benchmarks.itn_streaming.latency_table`` makes the README table).

A segment's audio arrives :data:`CHUNK_SECONDS` at a time, as in :mod:`benchmarks.streaming.measure`, and a word is
known once the audio has reached its end (a recogniser reports a word after hearing it), at the time the
segment's alignment gives it.  Word ``i`` is punctuated and cased at the first chunk boundary at or after its end
plus ``latency`` seconds, from what has arrived by then: the words known and the audio up to that boundary.  That
input is the segment cut at the boundary, i.e. a shorter segment of the same recording, so it goes through the
code that training and stage 4's decoding use (:class:`punct.models.cross_attention.data.ItnDataset` and
:func:`punct.models.cross_attention.predictions.predict`).  The missing right context is absent, as at a segment's end.
A word whose boundary is at or after the segment's end is punctuated from the whole segment (**final**).  With
``latency=math.inf`` every word is final, and the predictions equal stage 4's decode word for word.

The compute of a stream is one model pass per boundary at which words are due.  Its real-time factor is the time
of those passes over the seconds of audio streamed (:func:`latency_row`; the bench runs on one thread).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.data import ItnDataset, ItnSegment
from punct.models.cross_attention.predictions import Predictions, predict

CHUNK_SECONDS = 0.1
_EPS = 1e-6  # seconds: word ends and boundaries are sums of floats


@dataclass(frozen=True)
class Cut:
    """One model input of a streamed segment: the segment as it had arrived at ``segment.duration`` seconds, and
    the words punctuated from it."""

    segment: ItnSegment
    emit: tuple[int, ...]  # word indices into the (whole) segment
    final: bool  # the whole segment: as offline


def due_seconds(word_end: float, latency: float, duration: float, chunk: float = CHUNK_SECONDS) -> float:
    """Seconds from the segment start at which a word ending at ``word_end`` is punctuated: the first chunk
    boundary at or after ``word_end + latency``, or the segment's end if that comes first."""
    due = word_end + latency
    if due >= duration - _EPS:
        return duration
    boundary = math.ceil(round(due / chunk, 6)) * chunk
    return min(boundary, duration)


def known_words(word_ends: Sequence[float], seconds: float) -> int:
    """How many of a segment's first words had ended by ``seconds``."""
    n = 0
    while n < len(word_ends) and word_ends[n] <= seconds + _EPS:
        n += 1
    return n


def cut_segment(segment: ItnSegment, seconds: float) -> ItnSegment:
    """``segment`` as it had arrived at ``seconds`` from its start: its words ended by then, its audio up to then."""
    n = known_words(segment.word_ends, seconds)
    return segment._replace(
        id=f"{segment.id}@{seconds:.2f}",
        duration=seconds,
        words=segment.words[:n],
        punct=segment.punct[:n],
        case=segment.case[:n],
        word_starts=segment.word_starts[:n],
        word_ends=segment.word_ends[:n],
    )


def stream_cuts(segment: ItnSegment, latency: float, chunk: float = CHUNK_SECONDS) -> list[Cut]:
    """The model inputs of one segment streamed at ``latency``, in time order, each with the words due then."""
    due: dict[float, list[int]] = {}
    for i, end in enumerate(segment.word_ends):
        due.setdefault(due_seconds(end, latency, segment.duration, chunk), []).append(i)
    cuts = []
    for seconds, words in sorted(due.items()):
        if seconds >= segment.duration:
            cuts.append(Cut(segment, tuple(words), True))
            continue
        cut = cut_segment(segment, seconds)
        if words[-1] >= len(cut.words):
            raise ValueError(
                f"{segment.id}: word {words[-1]} ({segment.words[words[-1]]!r}) is due at {seconds:.2f} s but has "
                "not ended by then (word times out of order?)"
            )
        cuts.append(Cut(cut, tuple(words), False))
    return cuts


@dataclass
class StreamedSplit:
    """A split streamed at one latency: the predictions put together per segment, and what the stream cost."""

    predictions: Predictions
    words: int
    final_words: int
    waits: np.ndarray  # seconds from each word's end to the boundary it was punctuated at
    model_inputs: int
    audio_seconds: float
    compute_seconds: float


def stream_split(
    model: torch.nn.Module,
    data: ItnDataset,
    cfg: MmConfig,
    latency: float,
    device: torch.device,
    pad_id: int,
    chunk: float = CHUNK_SECONDS,
) -> StreamedSplit:
    """Every segment of ``data`` streamed at ``latency``; ``predictions`` hold each word's labels from its cut."""
    pieces = [(s, cut) for s, segment in enumerate(data.segments) for cut in stream_cuts(segment, latency, chunk)]
    cuts = ItnDataset(
        [cut.segment for _, cut in pieces], data.recordings, model.text.tokenizer, cfg, data.with_audio, "stream"
    )
    if len(cuts) != len(pieces):
        raise RuntimeError(f"{len(pieces) - len(cuts)} streamed cut(s) were skipped by the dataset")
    start = time.perf_counter()
    cut_predictions = predict(model, cuts, cfg, device, pad_id)
    compute = time.perf_counter() - start

    punct = [[""] * len(seg.words) for seg in data.segments]
    case = [[""] * len(seg.words) for seg in data.segments]
    waits, final = [], 0
    for k, (s, cut) in enumerate(pieces):
        for i in cut.emit:
            punct[s][i] = cut_predictions.punct_hyp[k][i]
            case[s][i] = cut_predictions.case_hyp[k][i]
            waits.append(cut.segment.duration - data.segments[s].word_ends[i])
            final += cut.final
    out = Predictions(first_word=cfg.first_word)
    for s, segment in enumerate(data.segments):
        out.add(segment, punct[s], case[s], float("nan"))  # its words come from several inputs: no one loss
    return StreamedSplit(
        out,
        sum(len(seg.words) for seg in data.segments),
        final,
        np.array(waits),
        len(pieces),
        sum(seg.duration for seg in data.segments),
        compute,
    )


def latency_row(streamed: StreamedSplit, latency: float) -> dict:
    """What the README table and the JSON keep of one latency: F1 in %, the share of final words, the waits,
    model inputs per word and the real-time factor of the model passes."""
    punct_scores, case_scores = streamed.predictions.scores()
    return {
        "latency": "inf" if math.isinf(latency) else latency,
        "segments": len(streamed.predictions.ids),
        "words": streamed.words,
        "punct_macro_f1": 100 * punct_scores.macro_f1,
        "punct_overall_f1": 100 * punct_scores.overall["f1"],
        "cap_f1": 100 * case_scores.per_class["cap"]["f1"],
        "final_share": streamed.final_words / max(1, streamed.words),
        "wait_median": float(np.median(streamed.waits)),
        "wait_max": float(streamed.waits.max()),
        "inputs_per_word": streamed.model_inputs / max(1, streamed.words),
        "rtf": streamed.compute_seconds / max(streamed.audio_seconds, 1e-9),
    }
