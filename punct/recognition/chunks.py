"""Recognition of long recordings in overlapping chunks (thesis 3.3.1).

* ``plan_chunks``: ~30 s chunks with a 5 s overlap (stride 25 s); the last chunk ends at
  the end of the recording, and no chunk starts inside the previous chunk's overlap only.
* ``ctc_word_times``: word timestamps of a chunk's greedy transcript from its frame-level
  CTC log-posteriors with the CTC-segmentation algorithm (Kürzinger et al. 2020; PyPI
  ``ctc-segmentation``, the implementation the thesis cites).  A word's start is the time
  of its first character, its end the end of its last character (the thesis: "the
  timestamps of the first and last graphemes of the word").  The word separator of the
  acoustic model (a space character) is folded into the blank before segmentation, so that
  each word is one "utterance" of the package and words are separated by blanks.
* ``merge_chunk_words``: joins consecutive chunk transcripts at the middle of their overlap.
  The words both chunks recognised in the overlap are matched (same word, centres within
  ``tolerance`` seconds, in order: a longest common subsequence); the join is the matched
  pair closest to the overlap midpoint, so words near either chunk edge, which were heard
  with little context and may be cut, come from the other chunk.  Cases of the thesis:
  - matches exist: r_i up to the join word, then r_{i+1} after its copy of that word;
  - no match and both chunks have words in the overlap (split inside words, recognition
    disagrees): the overlap words of both are discarded ("in the worst case we retain the
    last word of r_i before the overlap and the first word of r_{i+1} after the overlap");
  - at most one chunk has words in the overlap (a long silence): plain concatenation, each
    chunk contributing the words on its side of the midpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol, TypeVar

import numpy as np

from punct.labels import TimedWord


class Timed(Protocol):
    """What the merge needs of a word: its spelling and times (``TimedWord`` or a word with more fields)."""

    word: str
    start: float
    end: float

    @property
    def centre(self) -> float: ...


W = TypeVar("W", bound=Timed)


def same_spelling(a: Timed, b: Timed) -> bool:
    return a.word == b.word


class AudioChunk(NamedTuple):
    start: int  # first sample
    end: int  # one past the last sample


@dataclass(frozen=True)
class ChunkConfig:
    chunk_seconds: float = 30.0
    overlap_seconds: float = 5.0
    tolerance: float = 0.5  # max distance of the centres of the same word seen by two chunks


def plan_chunks(num_samples: int, sample_rate: int, config: ChunkConfig = ChunkConfig()) -> list[AudioChunk]:
    """Start/end samples of the chunks covering a recording."""
    if config.overlap_seconds >= config.chunk_seconds:
        raise ValueError(f"overlap {config.overlap_seconds} s must be shorter than the chunk {config.chunk_seconds} s")
    size = int(round(config.chunk_seconds * sample_rate))
    overlap = int(round(config.overlap_seconds * sample_rate))
    stride = size - overlap
    chunks = [AudioChunk(0, min(size, num_samples))]
    while chunks[-1].end < num_samples:
        start = chunks[-1].start + stride
        chunks.append(AudioChunk(start, min(start + size, num_samples)))
    return chunks


def _match_overlap(
    a: Sequence[W], b: Sequence[W], tolerance: float, same: Callable[[W, W], bool] = same_spelling
) -> list[tuple[int, int]]:
    """Longest common subsequence of two word lists (``same`` word, centres within tolerance)."""
    n, m = len(a), len(b)
    L = np.zeros((n + 1, m + 1), dtype=np.int32)
    equal = np.array([[same(x, y) and abs(x.centre - y.centre) <= tolerance for y in b] for x in a], dtype=bool)
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            if equal[i, j]:
                L[i, j] = L[i + 1, j + 1] + 1
            else:
                L[i, j] = max(L[i + 1, j], L[i, j + 1])
    out, i, j = [], 0, 0
    while i < n and j < m:
        if equal[i, j] and L[i, j] == L[i + 1, j + 1] + 1:
            out.append((i, j))
            i, j = i + 1, j + 1
        elif L[i + 1, j] >= L[i, j + 1]:
            i += 1
        else:
            j += 1
    return out


def merge_two(
    left: Sequence[W],
    right: Sequence[W],
    overlap_start: float,
    overlap_end: float,
    tolerance: float = 0.5,
    same: Callable[[W, W], bool] = same_spelling,
) -> tuple[list[W], str]:
    """Joins two consecutive chunk transcripts (absolute times); returns (words, case name)."""
    mid = 0.5 * (overlap_start + overlap_end)
    a_idx = [i for i, w in enumerate(left) if w.end > overlap_start]
    b_idx = [j for j, w in enumerate(right) if w.start < overlap_end]
    a = [left[i] for i in a_idx]
    b = [right[j] for j in b_idx]
    matches = _match_overlap(a, b, tolerance, same)
    if matches:
        ia, jb = min(matches, key=lambda p: abs(0.5 * (a[p[0]].centre + b[p[1]].centre) - mid))
        return list(left[: a_idx[ia] + 1]) + list(right[b_idx[jb] + 1 :]), "matched"
    if a and b:
        head = [w for w in left if w.end <= overlap_start]
        tail = [w for w in right if w.start >= overlap_end]
        return head + tail, "discarded"
    head = [w for w in left if w.centre < mid]
    tail = [w for w in right if w.centre >= mid]
    return head + tail, "concatenated"


def merge_chunk_words(
    chunk_words: Sequence[Sequence[W]],
    chunks: Sequence[AudioChunk],
    sample_rate: int,
    tolerance: float = 0.5,
    counts: dict | None = None,
    same: Callable[[W, W], bool] = same_spelling,
) -> list[W]:
    """Merges per-chunk transcripts (times already relative to the recording) in order."""
    if len(chunk_words) != len(chunks):
        raise ValueError(f"{len(chunk_words)} transcripts for {len(chunks)} chunks")
    if not chunks:
        return []
    merged = list(chunk_words[0])
    for k in range(1, len(chunks)):
        overlap_start = chunks[k].start / sample_rate
        overlap_end = chunks[k - 1].end / sample_rate
        merged, case = merge_two(merged, chunk_words[k], overlap_start, overlap_end, tolerance, same)
        if counts is not None:
            counts[case] = counts.get(case, 0) + 1
    return merged


def chunked_words(
    num_samples: int,
    sample_rate: int,
    words_of_chunk: Callable[[AudioChunk], Sequence[W]],
    config: ChunkConfig = ChunkConfig(),
    counts: dict | None = None,
    same: Callable[[W, W], bool] = same_spelling,
) -> list[W]:
    """Timed words of a long recording: ``plan_chunks``, then ``words_of_chunk`` on each chunk in order (its
    words with times from the recording start), then ``merge_chunk_words``.  Only one chunk's audio and
    posteriors need to be held at a time (``words_of_chunk`` may keep state from one chunk to the next)."""
    chunks = plan_chunks(num_samples, sample_rate, config)
    per_chunk = [list(words_of_chunk(c)) for c in chunks]
    return merge_chunk_words(per_chunk, chunks, sample_rate, config.tolerance, counts, same)


def ctc_word_times(
    log_probs: np.ndarray,
    vocab: Sequence[str],
    words: Sequence[str],
    frame_shift: float = 0.01,
    offset: float = 0.0,
    space: str | None = " ",
) -> list[TimedWord]:
    """Word timestamps by CTC segmentation.

    Args:
      log_probs: (T, V) log-posteriors of one chunk (log-softmax outputs).
      vocab: the V symbols; index 0 is the CTC blank.
      words: the transcript words (e.g. the greedy decoding), each made of vocab symbols.
      frame_shift: seconds per output frame (0.01 for our 100 frames/s acoustic model).
      offset: seconds added to every time (the chunk start within the recording).
      space: the word-separator symbol of ``vocab`` (folded into blank); None if absent.
    Returns:
      one TimedWord per input word, in order.
    """
    import ctc_segmentation as cs

    if not words:
        return []
    lp = np.asarray(log_probs, dtype=np.float64)
    if lp.ndim != 2 or lp.shape[1] != len(vocab):
        raise ValueError(f"log_probs shape {lp.shape} does not match a vocabulary of {len(vocab)}")
    index = {s: i for i, s in enumerate(vocab)}
    if space is not None and space in index:
        s = index[space]
        lp = lp.copy()
        lp[:, 0] = np.logaddexp(lp[:, 0], lp[:, s])
    token_lists = []
    for w in words:
        missing = [c for c in w if c not in index or index[c] == 0]
        if missing or not w:
            raise ValueError(f"word {w!r} has symbols outside the vocabulary: {missing}")
        token_lists.append(np.array([index[c] for c in w], dtype=np.int64))
    if sum(len(t) + 1 for t in token_lists) + 1 > lp.shape[0]:
        raise ValueError(f"{len(words)} words need more frames than the {lp.shape[0]} given")
    config = cs.CtcSegmentationParameters()
    config.char_list = list(vocab)
    config.blank = 0
    config.index_duration = frame_shift
    config.min_window_size = max(config.min_window_size, lp.shape[0])
    ground_truth, utt_begin = cs.prepare_token_list(config, token_lists)
    timings, char_probs, _ = cs.ctc_segmentation(config, lp.astype(np.float32), ground_truth)
    segments = cs.determine_utterance_segments(config, utt_begin, char_probs, timings, list(words))
    out = []
    for k, w in enumerate(words):
        first = utt_begin[k] + 1  # ground-truth position of the word's first character
        last = first + len(token_lists[k]) - 1
        start = float(timings[first])
        end = float(timings[last]) + frame_shift
        out.append(TimedWord(w, start + offset, end + offset, float(segments[k][2])))
    return out
