"""CTC Viterbi forced alignment in numpy (k2 and torchaudio are not usable here).

The reference token sequence ``y_1..y_L`` is extended with blanks to ``b y_1 b y_2 ... y_L b``
(``S = 2L + 1`` states).  A path may stay in a state, advance by one, or skip a blank between two
different tokens.  The best path is found by dynamic programming over frames, vectorised over
states; the backtrace recomputes each frame's choice from the kept scores.  ~0.5 ms per second of
speech at 100 frames/s and 150 characters per 7 s (benchmarks/README.md, bench_inference.py's align column).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

NEG_INF = -np.inf


class AlignmentError(ValueError):
    """An utterance that cannot be aligned; ``reason`` is a short category for the failure counts."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def min_frames(tokens: Sequence[int]) -> int:
    """Frames a CTC path needs: one per token plus one blank between equal neighbours."""
    return len(tokens) + sum(1 for a, b in zip(tokens, tokens[1:]) if a == b)


def ctc_forced_align(
    log_probs: np.ndarray, tokens: Sequence[int], blank: int = 0, open_end: bool = False
) -> tuple[np.ndarray, float]:
    """Best CTC path of ``tokens`` through ``log_probs`` (T, V).

    Returns ``(token_index, score)``: for each frame, the index (0..L-1) of the reference token it
    emits, or -1 for a blank frame; and the path's log-probability.  With ``open_end`` the path may end
    in any state: the best alignment of the frames with a *prefix* of ``tokens`` (audio that stops
    inside a longer text, as a chunk of a long recording does; ``punct.recognition.long_align``).
    """
    log_probs = np.asarray(log_probs, dtype=np.float64)
    T = log_probs.shape[0]
    L = len(tokens)
    if L == 0:
        raise AlignmentError("empty transcript", "no tokens to align")
    need = 1 if open_end else min_frames(tokens)
    if need > T:
        raise AlignmentError("too few frames", f"{T} frames < {need} needed for {L} tokens")
    ext = np.full(2 * L + 1, blank, dtype=np.int64)
    ext[1::2] = tokens
    S = ext.size
    # a skip into state s (s - 2 -> s) is allowed for token states whose token differs from two states back
    can_skip = np.zeros(S, dtype=bool)
    can_skip[3::2] = ext[3::2] != ext[1:-2:2]
    score = _forward_scores(log_probs[:, ext], can_skip)
    alpha = score[T - 1, 2:]
    # the path ends in the last token or the final blank (open end: in the best state)
    end = int(alpha.argmax()) if open_end else S - 1 if alpha[S - 1] >= alpha[S - 2] else S - 2
    path_score = float(alpha[end])
    if not np.isfinite(path_score):
        raise AlignmentError("no path", "every path has zero probability")
    states = _backtrace(score, can_skip, end)
    if states[0] > 1:
        raise AlignmentError("no path", "backtrace did not reach the first state")
    token_index = np.where(states % 2 == 1, (states - 1) // 2, -1)
    return token_index, path_score


def _forward_scores(emissions: np.ndarray, can_skip: np.ndarray) -> np.ndarray:
    """(T, S + 2): ``[t, 2 + s]`` the best path's log-probability in state s at frame t, emissions included; the
    two -inf columns in front are the missing predecessors of states 0 and 1.

    Keeping every frame's scores (as many float64 as the emissions take) lets :func:`_backtrace` recompute each
    choice instead of storing it, so a frame costs four array operations: the loop costs per operation, not
    per state."""
    T, S = emissions.shape
    skip_penalty = np.where(can_skip, 0.0, NEG_INF)
    score = np.full((T, S + 2), NEG_INF)
    score[:, 2:] = emissions
    score[0, 4:] = NEG_INF  # a path starts in the first blank or the first token
    best = np.empty(S)
    skip = np.empty(S)
    for t in range(1, T):
        prev = score[t - 1]
        np.maximum(prev[2:], prev[1:-1], out=best)  # stay, step (s - 1)
        np.add(prev[:-2], skip_penalty, out=skip)  # skip (s - 2)
        np.maximum(best, skip, out=best)
        np.add(score[t, 2:], best, out=score[t, 2:])
    return score


def _backtrace(score: np.ndarray, can_skip: np.ndarray, end: int) -> np.ndarray:
    """The state of every frame on the best path ending in state ``end``: at each frame the predecessor the forward
    pass took, preferring on ties stay, then step, then skip (the first of equal maxima)."""
    may_skip = can_skip.tolist()
    states = np.empty(score.shape[0], dtype=np.int64)
    s = end
    for t in range(score.shape[0] - 1, 0, -1):
        states[t] = s
        prev = score[t - 1]
        stay, step = prev[s + 2], prev[s + 1]
        if may_skip[s] and prev[s] > max(stay, step):
            s -= 2
        elif step > stay:
            s -= 1
    states[0] = s
    return states


@dataclass(frozen=True)
class WordSpan:
    """A word's frames ``[start, end)``: from its first token's first frame to its last token's last frame + 1."""

    word: str
    start: int
    end: int


def word_spans(token_index: np.ndarray, words: Sequence[str], word_of_token: Sequence[int]) -> list[WordSpan]:
    """Frame spans of ``words`` from a forced alignment.

    ``word_of_token[j]`` is the word number of reference token j, or -1 for a separator token.
    """
    first = np.full(len(words), -1, dtype=np.int64)
    last = np.full(len(words), -1, dtype=np.int64)
    frames = np.nonzero(token_index >= 0)[0]
    for t in frames:
        w = word_of_token[token_index[t]]
        if w < 0:
            continue
        if first[w] < 0:
            first[w] = t
        last[w] = t
    if (first < 0).any():
        missing = [words[i] for i in np.nonzero(first < 0)[0]]
        raise AlignmentError("word without frames", f"{missing}")
    return [WordSpan(word, int(s), int(e) + 1) for word, s, e in zip(words, first, last)]


def encode_for_alignment(words: Sequence[str], token_ids, space_id: int) -> tuple[list[int], list[int]]:
    """Token ids of ``words`` joined by the separator and each token's word number (-1 for separators).

    ``token_ids`` maps a character to its id (a dict or TokenTable.ids); an unknown character
    raises AlignmentError("unknown character").
    """
    tokens: list[int] = []
    word_of_token: list[int] = []
    for i, word in enumerate(words):
        if i:
            tokens.append(space_id)
            word_of_token.append(-1)
        if not word:
            raise AlignmentError("empty word", f"word {i} is empty")
        for ch in word:
            if ch not in token_ids:
                raise AlignmentError("unknown character", f"{ch!r} in {word!r}")
            tokens.append(token_ids[ch])
            word_of_token.append(i)
    return tokens, word_of_token
