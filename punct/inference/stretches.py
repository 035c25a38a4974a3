"""How a whole recording is punctuated: :class:`LongFormConfig` (when an utterance is one, how it is aligned in
chunks and cut into stretches between pauses) and :func:`pause_segments` (the cut), shared by offline long-form
``punctuate`` (``punct.inference.long_form``) and the live stream (``punct.inference.streaming``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from punct.recognition.chunks import ChunkConfig

LONG_FORM = ("auto", "always", "never")


@dataclass(frozen=True)
class LongFormConfig:
    """How whole recordings are punctuated (``punct.inference.long_form``).

    Args:
      long_form: ``auto``: an utterance longer than ``long_form_above`` seconds is punctuated as one whole
        recording (aligned in ``chunk_config`` chunks with CTC segmentation; then one stretch between pauses of
        ``pause_split`` seconds or more, at most ``max_stretch`` seconds, at a time); ``always``: every
        utterance; ``never``: none (one Viterbi over the whole utterance, as stage 3 aligns a segment).
        Utterances with word times given (a CTM) always are.
      long_text: ``stretch``: BERT reads a whole recording one stretch at a time, as it read the recipe's
        segments; ``whole``: the whole transcript in overlapping chunks (on the mini recipe's dev talks, one
        seed: +1.4 points, paired interval -0.4 to +3.4, so not chosen).  ``pause_split`` 1.0 s: chosen on the
        mini recipe's 8 dev talks over 3 seeds, +2.6 points of ensemble F1 over 0.4 s
        (benchmarks/longform/README.md).
      tdnn_block_frames: the TDNN over an utterance longer than this in blocks (``word_posteriors``).
    """

    long_form: str = "auto"
    long_form_above: float = 120.0
    chunk_config: ChunkConfig = ChunkConfig()
    pause_split: float = 1.0
    max_stretch: float = 30.0
    long_text: str = "stretch"
    tdnn_block_frames: int = 6000

    def __post_init__(self) -> None:
        if self.long_form not in LONG_FORM:
            raise ValueError(f"long_form must be one of {LONG_FORM}, got {self.long_form!r}")

    def is_long(self, duration: float) -> bool:
        """Whether an utterance of ``duration`` seconds is punctuated as a whole recording."""
        return self.long_form == "always" or (self.long_form == "auto" and duration > self.long_form_above)


def pause_segments(
    starts: np.ndarray, ends: np.ndarray, num_frames: int, pause: int, max_frames: int = 0
) -> list[tuple[int, int, int, int]]:
    """A whole recording's words cut at pauses of at least ``pause`` frames into stretches
    ``(first frame, end frame, first word, end word)``; each cut is at the middle of its pause, the first
    stretch starts at frame 0 and the last ends with the recording.  A stretch longer than ``max_frames``
    (> 0) is cut again at its longest pause until none is (or it is one word)."""
    num_words = len(starts)
    gaps = np.asarray(starts[1:], dtype=np.int64) - np.asarray(ends[:-1], dtype=np.int64)  # gaps[i]: after word i
    cuts = {int(i) + 1 for i in np.nonzero(gaps >= pause)[0]}

    def frame(w: int) -> int:  # the frame where a stretch starting with word w starts
        return 0 if w == 0 else (int(ends[w - 1]) + int(starts[w])) // 2

    def end_frame(w1: int) -> int:
        return num_frames if w1 == num_words else frame(w1)

    todo = sorted(cuts | {0, num_words})
    bounds = [0]
    for w0, w1 in zip(todo, todo[1:]):
        stack = [(w0, w1)]
        while stack:
            a, b = stack.pop()
            if max_frames > 0 and b - a > 1 and end_frame(b) - frame(a) > max_frames:
                k = a + 1 + int(np.argmax(gaps[a : b - 1]))
                stack += [(k, b), (a, k)]
            else:
                bounds.append(b)
    return [(frame(w0), end_frame(w1), w0, w1) for w0, w1 in zip(bounds, bounds[1:])]
