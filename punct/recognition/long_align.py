"""Alignment of a long recording with its known transcript, chunk by chunk (``punctuate`` on whole recordings).

A CTC Viterbi over all the frames and all the token states of an hour (360,000 frames x ~100,000 states of
backpointers) does not fit in memory.  So the recording is cut into the chunks of long-recording recognition
(``punct.recognition.chunks.plan_chunks``: ~30 s with 5 s overlap), each chunk is aligned with its slice of
the transcript by CTC segmentation (``ctc_word_times``), and the chunks' words are merged at the overlap
midpoints (``merge_chunk_words``): the three steps of egs/parczech stage 2, through the same
``chunked_words``, with the chunk's slice of the transcript in place of its greedy transcript.

The slice of each chunk is found in order:

* it starts at the first word of the previous chunk's alignment that starts inside this chunk (or, when no
  word of the previous chunk does, at the first word not placed yet); the first chunk starts at word 0;
* it ends before the word being spoken when the chunk's audio stops: a CTC Viterbi with an open end
  (``punct.am.viterbi.ctc_forced_align(open_end=True)``) aligns the chunk with a prefix of the words that
  follow, and a word it has not finished (its last character not followed by a blank at the chunk's end)
  is left to the next chunk.  The text window it is given (``chars_per_second`` times the chunk's length)
  is doubled while the path reaches its end.  The last chunk takes every remaining word.
* a slice never leaves more text than the rest of the recording can hold at two frames per character and
  separator (a weak acoustic model that falls behind would otherwise pile the text onto the last chunk); a
  slice extended by that rule is counted in ``counts["extended"]``.

The words of an overlap are then in both chunks with their positions in the transcript, and the merge
matches them by position (the same word of the transcript, centres within ``ChunkConfig.tolerance``).
After the merge every word of the transcript is there once, in order: a word that the merge dropped
(chunks that disagree on its time by more than the tolerance) is aligned again by CTC segmentation
between its placed neighbours (``counts["realigned"]``).

Memory: one chunk's log-posteriors and its Viterbi (~3,000 frames x ~1,500 states) at a time, plus the
(T, V) log-posteriors kept for that realignment (V = the AM's ~30 symbols: 40 MB per hour).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from punct.am.viterbi import ctc_forced_align, encode_for_alignment
from punct.labels import TimedWord
from punct.recognition.chunks import AudioChunk, ChunkConfig, chunked_words, ctc_word_times, plan_chunks


class TranscriptWord(NamedTuple):
    """A word of the transcript (``index``: its position) with times in seconds from the recording start."""

    index: int
    word: str
    start: float
    end: float
    score: float = 0.0

    @property
    def centre(self) -> float:
        return 0.5 * (self.start + self.end)


def same_position(a: TranscriptWord, b: TranscriptWord) -> bool:
    return a.index == b.index


def own_frames(chunks: Sequence[AudioChunk], k: int, num_frames: int, hop: float) -> tuple[int, int]:
    """Frames ``[lo, hi)`` of the recording that chunk ``k`` owns: from the middle of its overlap with the
    previous chunk to the middle of its overlap with the next (where the merge joins them)."""
    lo = 0 if k == 0 else int(round(0.5 * (chunks[k].start + chunks[k - 1].end) / hop))
    hi = num_frames if k + 1 == len(chunks) else int(round(0.5 * (chunks[k + 1].start + chunks[k].end) / hop))
    return min(lo, num_frames), min(hi, num_frames)


class _Slices:
    """``words_of_chunk`` for ``chunked_words``: each chunk's slice of the transcript, aligned (module docstring)."""

    def __init__(
        self,
        words: Sequence[str],
        chunks: Sequence[AudioChunk],
        log_probs_of: Callable[[AudioChunk], np.ndarray],
        symbols: Sequence[str],
        space: str,
        frame_shift: float,
        sample_rate: int,
        chars_per_second: float,
    ) -> None:
        self.words = list(words)
        self.chunks = chunks
        self.log_probs_of = log_probs_of
        self.symbols = list(symbols)
        self.space = space
        self.space_id = self.symbols.index(space)
        self.char_ids = {s: i for i, s in enumerate(self.symbols) if i != 0 and s != space}
        self.frame_shift = frame_shift
        self.sample_rate = sample_rate
        self.chars_per_second = chars_per_second
        self.next_start = 0  # first word of the next chunk's slice
        self.k = 0  # the chunk being aligned
        self.log_probs: list[tuple[int, np.ndarray]] = []  # (first frame, log-posteriors) of each chunk's own frames
        # tokens_after[i]: characters and separators of words i.. (each word and the separator after it)
        self.tokens_after = np.append(np.cumsum([len(w) + 1 for w in self.words][::-1])[::-1], 0)
        self.extended = 0

    def slice_end(self, lp: np.ndarray, start: int) -> int:
        """One past the last word of ``words[start:]`` that the chunk's audio finishes."""
        num_words, num_frames = len(self.words), lp.shape[0]
        if start >= num_words or num_frames == 0:
            return start
        limit = max(2, int(self.chars_per_second * num_frames * self.frame_shift))
        while True:
            end, chars = start, 0
            while end < num_words and chars + len(self.words[end]) + 1 <= limit:
                chars += len(self.words[end]) + 1
                end += 1
            end = max(end, start + 1)
            tokens, word_of_token = encode_for_alignment(self.words[start:end], self.char_ids, self.space_id)
            token_index, _ = ctc_forced_align(lp, tokens, open_end=True)
            reached = int(token_index.max())
            if reached == len(tokens) - 1 and end < num_words and limit < 2 * num_frames:
                limit *= 2  # the path used the whole window: more of the text may be in the chunk
                continue
            break
        if reached < 0:
            return start
        word = word_of_token[reached]
        if word < 0:  # a separator: the word before it is finished
            return start + word_of_token[reached - 1] + 1
        last_of_word = reached + 1 == len(tokens) or word_of_token[reached + 1] != word
        finished = last_of_word and token_index[-1] < 0
        return start + word + int(finished)

    def extend(self, start: int, end: int, chunk_frames: int, rest_frames: float) -> int:
        """``end`` moved on until the words after it fit in ``rest_frames`` at two frames per token, as far
        as the chunk's own ``chunk_frames`` hold the slice (one frame per token and separator)."""
        moved = end
        while (
            moved < len(self.words)
            and 2 * self.tokens_after[moved] > rest_frames
            and self.tokens_after[start] - self.tokens_after[moved + 1] + 1 <= chunk_frames
        ):
            moved += 1
        if moved > end:
            self.extended += 1
        return moved

    def __call__(self, chunk: AudioChunk) -> list[TranscriptWord]:
        k, self.k = self.k, self.k + 1
        lp = np.asarray(self.log_probs_of(chunk), dtype=np.float32)
        hop = self.sample_rate * self.frame_shift
        first = int(round(chunk.start / hop))
        lo, hi = own_frames(self.chunks, k, first + lp.shape[0], hop)
        self.log_probs.append((lo, lp[max(lo - first, 0) : max(hi - first, 0)]))
        start = self.next_start
        last = k + 1 == len(self.chunks)
        end = len(self.words) if last else self.slice_end(lp, start)
        if not last:
            end = self.extend(start, end, lp.shape[0], (self.chunks[-1].end - self.chunks[k + 1].start) / hop)
        offset = chunk.start / self.sample_rate
        timed = (
            ctc_word_times(lp, self.symbols, self.words[start:end], self.frame_shift, offset, self.space)
            if end > start
            else []
        )
        out = [TranscriptWord(start + i, w.word, w.start, w.end, w.score) for i, w in enumerate(timed)]
        if not last:
            next_start = self.chunks[k + 1].start / self.sample_rate
            inside = [w.index for w in out if w.start >= next_start]
            self.next_start = inside[0] if inside else end
        return out

    def recording_log_probs(self) -> np.ndarray:
        """The (T, V) log-posteriors of the whole recording, each frame from the chunk that owns it."""
        return np.concatenate([lp for _, lp in self.log_probs], axis=0)


def align_transcript(
    words: Sequence[str],
    num_samples: int,
    sample_rate: int,
    log_probs_of: Callable[[AudioChunk], np.ndarray],
    symbols: Sequence[str],
    space: str,
    frame_shift: float = 0.01,
    config: ChunkConfig = ChunkConfig(),
    counts: dict | None = None,
    chars_per_second: float = 25.0,
) -> list[TimedWord]:
    """Times (seconds from the recording start) of every word of a long recording's transcript, in order.

    Args:
      words: the transcript's words, each made of ``symbols`` other than the blank and ``space``.
      num_samples, sample_rate: the recording's length.
      log_probs_of: a chunk -> its (T, V) CTC log-posteriors, frame t at ``chunk.start / sample_rate +
        t * frame_shift`` seconds; called once per chunk, in order.
      symbols: the V symbols, index 0 the CTC blank; ``space`` the word separator.
      counts: updated with the merge cases and ``realigned`` (words aligned again after the merge).
      chars_per_second: the first text window of a chunk's open-end Viterbi (doubled while too short).
    Raises:
      ValueError: a word with symbols outside ``symbols``, or a chunk whose words need more frames than it has.
    """
    chunks = plan_chunks(num_samples, sample_rate, config)
    slices = _Slices(words, chunks, log_probs_of, symbols, space, frame_shift, sample_rate, chars_per_second)
    merged = chunked_words(num_samples, sample_rate, slices, config, counts, same_position)
    placed: list[TranscriptWord | None] = [None] * len(words)
    last = -1
    for w in merged:
        if w.index > last:
            placed[w.index] = w
            last = w.index
    missing = [i for i, w in enumerate(placed) if w is None]
    if counts is not None:
        counts["realigned"] = counts.get("realigned", 0) + len(missing)
        counts["extended"] = counts.get("extended", 0) + slices.extended
    if missing:
        _realign(placed, words, slices.recording_log_probs(), symbols, space, frame_shift, num_samples / sample_rate)
    return [TimedWord(w.word, w.start, w.end, w.score) for w in placed]


def _realign(
    placed: list[TranscriptWord | None],
    words: Sequence[str],
    lp: np.ndarray,
    symbols: Sequence[str],
    space: str,
    frame_shift: float,
    duration: float,
) -> None:
    """Fills each run of unplaced words by CTC segmentation between the placed words around it."""
    i = 0
    while i < len(placed):
        if placed[i] is not None:
            i += 1
            continue
        j = i
        while j < len(placed) and placed[j] is None:
            j += 1
        t0 = placed[i - 1].end if i > 0 else 0.0
        t1 = placed[j].start if j < len(placed) else duration
        f0, f1 = int(round(t0 / frame_shift)), int(round(t1 / frame_shift))
        try:
            timed = ctc_word_times(lp[f0:f1], symbols, words[i:j], frame_shift, f0 * frame_shift, space)
        except ValueError:  # too few frames between the neighbours: share them out by length
            sizes = np.cumsum([0] + [len(w) for w in words[i:j]]) / sum(len(w) for w in words[i:j])
            edges = t0 + sizes * max(t1 - t0, 0.0)
            timed = [TimedWord(w, float(a), float(b)) for w, a, b in zip(words[i:j], edges[:-1], edges[1:])]
        for n, w in enumerate(timed):
            placed[i + n] = TranscriptWord(i + n, w.word, w.start, w.end, w.score)
        i = j
