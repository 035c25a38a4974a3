"""Word alignments -> frames, and the fused [BERT ; acoustic] frames of an utterance.

Frame convention (COMMON data contract): 100 frames/s; a word spanning [s, e) seconds relative to
the cut start covers frames round(s*100) .. round(e*100) - 1.  A word that rounds to no frame at
all is given one frame (its start frame), so that every word has a last frame to centre on.

Text part of each frame (EfficientPunct): the BERT vector of the word being spoken; frames
between two words (silence) carry the previous word's vector; frames before the first word
carry zeros.  Equivalently, frame t takes the vector of the last word that started at or
before t, and zeros when no word has started yet.  Overlapping spans (rounding) resolve to the
later word.  Each word's window is centred by ``window_centres`` (see there for the two rules).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

FRAME_RATE = 100  # frames per second (10 ms shift)


def word_frame_spans(
    starts_sec: Sequence[float], ends_sec: Sequence[float], offset: float = 0.0, frame_rate: int = FRAME_RATE
) -> tuple[np.ndarray, np.ndarray]:
    """Word times (seconds, on the recording's axis) -> start frames and exclusive end frames relative to
    ``offset`` (the cut start).  Every word covers at least one frame."""
    starts = np.rint((np.asarray(starts_sec, dtype=np.float64) - offset) * frame_rate).astype(np.int64)
    ends = np.rint((np.asarray(ends_sec, dtype=np.float64) - offset) * frame_rate).astype(np.int64)
    return starts, np.maximum(ends, starts + 1)


def frame_word_index(word_starts: np.ndarray, num_frames: int) -> np.ndarray:
    """For each frame, the index of the last word that started at or before it; -1 before the first word.

    ``word_starts`` must be non-decreasing (words in spoken order).
    """
    word_starts = np.asarray(word_starts)
    if word_starts.size > 1 and np.any(np.diff(word_starts) < 0):
        raise ValueError(f"word start frames must be non-decreasing, got {word_starts.tolist()}")
    return np.searchsorted(word_starts, np.arange(num_frames), side="right").astype(np.int64) - 1


WINDOW_CENTRES = ("transition", "word_end")


def window_centres(
    word_starts: np.ndarray, word_ends: np.ndarray, num_frames: int, rule: str = "transition"
) -> np.ndarray:
    """Centre frame of each word's window, clipped into the utterance.

    * ``transition`` (EfficientPunct, section 3.2): the point of transition to the next token, with the
      silence after a word attached to it: the frame before the next word starts, and the utterance's
      last frame for the last word.  The pause after a word is then before the centre, where a mark is.
    * ``word_end``: the word's own last frame (the last one its alignment covers), before any pause.
    """
    if rule not in WINDOW_CENTRES:
        raise ValueError(f"unknown window centre rule {rule!r}; choose one of {WINDOW_CENTRES}")
    ends = np.asarray(word_ends, dtype=np.int64)
    if rule == "transition":
        starts = np.asarray(word_starts, dtype=np.int64)
        ends = np.append(starts[1:], num_frames) if len(starts) else ends
        ends = np.maximum(ends, np.asarray(word_ends, dtype=np.int64))  # a next word that starts early (overlap)
    return np.clip(ends - 1, 0, max(num_frames - 1, 0))


def text_table(word_vectors: np.ndarray) -> np.ndarray:
    """Word vectors (W, Dt) with a zero row appended, so that word index -1 selects zeros."""
    word_vectors = np.asarray(word_vectors, dtype=np.float32)
    return np.concatenate([word_vectors, np.zeros((1, word_vectors.shape[1]), dtype=np.float32)], axis=0)


def fuse_frames(word_vectors: np.ndarray, acoustic: np.ndarray, word_index: np.ndarray) -> np.ndarray:
    """(T, Dt + Da) frames [text vector of the frame's word ; acoustic vector]."""
    table = text_table(word_vectors)
    return np.concatenate([table[word_index], np.asarray(acoustic, dtype=np.float32)], axis=1)


def cut_window(
    acoustic: np.ndarray, table: np.ndarray, word_index: np.ndarray, centre: int, context: int
) -> np.ndarray:
    """The (2*context + 1, Dt + Da) fused window centred on ``centre``, zero-padded outside the utterance.

    ``table`` is ``text_table(word_vectors)``; padding frames are zero in both parts (as in the authors'
    code, which pads the fused matrix with zeros).
    """
    num_frames, acoustic_dim = acoustic.shape
    text_dim = table.shape[1]
    window = np.zeros((2 * context + 1, text_dim + acoustic_dim), dtype=np.float32)
    lo, hi = centre - context, centre + context + 1
    src_lo, src_hi = max(lo, 0), min(hi, num_frames)
    if src_hi > src_lo:
        dst = slice(src_lo - lo, src_hi - lo)
        window[dst, :text_dim] = table[word_index[src_lo:src_hi]]
        window[dst, text_dim:] = acoustic[src_lo:src_hi]
    return window
