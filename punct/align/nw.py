"""Needleman-Wunsch alignment of recognised and official words with affine gap costs.

Thesis 3.2.1 / 3.3.1: words are the atomic units; a character edit distance between the
two words is a soft match score (identical words cost nothing, similar words little), and
affine gap penalties (Gotoh 1982: a gap of k words costs ``open + (k - 1) * extend``)
favour long contiguous runs of aligned words over many small gaps.

We minimise a cost:
* pair (rec_i, off_j): ``sub_weight * d(rec_i, off_j) / max(len(rec_i), len(off_j))``
  (normalised Levenshtein distance, 0 for identical words, at most ``sub_weight``);
* a run of k words aligned to blanks on one side: ``gap_open + (k - 1) * gap_extend``;
  a run of blanks on the other side right after it is a new gap (its own ``gap_open``).

Size: the thesis aligns each recording's transcript as a whole (13 min on average, about
2,000 words), and so do we; there is no banding.  Memory is one byte of back-pointers per
cell (n * m bytes: 2,000 x 2,000 words -> 4 MB, 10,000 x 10,000 -> 100 MB) plus O(m)
float rows; ``max_cells`` refuses larger problems with a clear error (split the
transcript, e.g. at long pauses, first).  The recursion runs row by row in numpy: the
horizontal gap state is a running minimum (``np.minimum.accumulate``), so a row costs a
handful of vector operations.  Edit distances are computed once per distinct word pair,
vectorised over pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

# Back-pointer codes: which state the best path came from.
_M, _X, _Y = 0, 1, 2


@dataclass(frozen=True)
class AlignConfig:
    gap_open: float = 1.0  # cost of starting a run of words aligned to blanks
    gap_extend: float = 0.3  # cost of each further word of the run
    sub_weight: float = 1.0  # cost of aligning two completely different words
    max_cells: int = 400_000_000  # refuse n * m above this (back-pointer bytes)


class AlignedPair(NamedTuple):
    rec: int | None  # index into the recognised words, None = blank
    off: int | None  # index into the official words, None = blank
    distance: int  # character edit distance (length of the word when aligned to a blank)


def levenshtein(a: str, b: str) -> int:
    """Plain character edit distance (reference implementation, used for single pairs)."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def _encode(words: Sequence[str], codes: dict[str, int], pad: int) -> tuple[np.ndarray, np.ndarray]:
    length = np.array([len(w) for w in words], dtype=np.int64)
    width = max(1, int(length.max()) if len(words) else 1)
    arr = np.full((len(words), width), pad, dtype=np.int32)
    for k, w in enumerate(words):
        arr[k, : len(w)] = [codes.setdefault(c, len(codes)) for c in w]
    return arr, length


def pairwise_edit_distance(a_words: Sequence[str], b_words: Sequence[str], block_pairs: int = 250_000) -> np.ndarray:
    """Levenshtein distance of every pair, shape (len(a), len(b)), vectorised over pairs."""
    out = np.zeros((len(a_words), len(b_words)), dtype=np.int32)
    if not len(a_words) or not len(b_words):
        return out
    codes: dict[str, int] = {}
    b_arr, b_len = _encode(b_words, codes, pad=-2)
    order = np.argsort([len(w) for w in a_words], kind="stable")  # blocks of similar length
    rows = max(1, block_pairs // len(b_words))
    for s in range(0, len(order), rows):
        idx = order[s : s + rows]
        a_arr, a_len = _encode([a_words[k] for k in idx], codes, pad=-1)
        na, nb = len(idx), len(b_words)
        lb = b_arr.shape[1]
        # prev[j] = distance between a[:i] and b[:j] for every pair; shape (lb + 1, na, nb)
        prev = np.broadcast_to(np.arange(lb + 1, dtype=np.int32)[:, None, None], (lb + 1, na, nb)).copy()
        res = np.zeros((na, nb), dtype=np.int32)
        res[a_len == 0] = b_len[None, :].repeat((a_len == 0).sum(), 0)
        for i in range(1, a_arr.shape[1] + 1):
            cur = np.empty_like(prev)
            cur[0] = i
            ne = a_arr[:, i - 1][:, None] != b_arr[None, :, :].transpose(2, 0, 1)  # (lb, na, nb)
            for j in range(1, lb + 1):
                np.minimum(prev[j] + 1, cur[j - 1] + 1, out=cur[j])
                np.minimum(cur[j], prev[j - 1] + ne[j - 1], out=cur[j])
            done = a_len == i
            if done.any():
                res[done] = np.take_along_axis(cur[:, done, :], b_len[None, None, :].repeat(done.sum(), 1), 0)[0]
            prev = cur
        out[idx] = res
    return out


def align_words(
    rec: Sequence[str], off: Sequence[str], config: AlignConfig = AlignConfig()
) -> tuple[list[AlignedPair], float]:
    """Optimal affine-gap alignment of two word sequences.

    Args:
      rec: recognised words (normalised: lower case, no punctuation).
      off: official words, normalised the same way (``punct.text.token_labels.normalise_word``).
      config: costs.
    Returns:
      (pairs in order, total cost).  Every index of ``rec`` and of ``off`` occurs exactly once.
    """
    n, m = len(rec), len(off)
    if n * m > config.max_cells:
        raise ValueError(
            f"alignment of {n} x {m} words exceeds max_cells={config.max_cells}; split the transcript first"
        )
    if n == 0 or m == 0:
        pairs = [AlignedPair(i, None, len(rec[i])) for i in range(n)] + [
            AlignedPair(None, j, len(off[j])) for j in range(m)
        ]
        k = max(n, m)
        return pairs, (config.gap_open + (k - 1) * config.gap_extend) if k else 0.0
    urec, rec_idx = np.unique(np.array(rec, dtype=object), return_inverse=True)
    uoff, off_idx = np.unique(np.array(off, dtype=object), return_inverse=True)
    dist = pairwise_edit_distance(list(urec), list(uoff))
    ulen_r = np.array([len(w) for w in urec])
    ulen_o = np.array([len(w) for w in uoff])
    norm = np.maximum(np.maximum(ulen_r[:, None], ulen_o[None, :]), 1)
    sub_u = config.sub_weight * dist / norm
    ptr, final = _fill(sub_u, rec_idx, off_idx, config.gap_open, config.gap_extend)
    state = int(np.argmin(final))
    return _traceback(ptr, state, dist, rec_idx, off_idx, rec, off), float(final[state])


def _fill(
    sub_u: np.ndarray, rec_idx: np.ndarray, off_idx: np.ndarray, o: float, e: float
) -> tuple[np.ndarray, np.ndarray]:
    """Gotoh's three matrices (M: pair, X: gap in ``off``, Y: gap in ``rec``) row by row, vectorised
    over columns.  Returns the back pointers ``(n + 1, m + 1)`` (M | X << 2 | Y << 4) and the final
    ``[M, X, Y]`` costs."""
    n, m = len(rec_idx), len(off_idx)
    inf = np.inf
    jj = np.arange(m + 1, dtype=np.float64)
    ptr = np.zeros((n + 1, m + 1), dtype=np.uint8)  # M | X << 2 | Y << 4
    # row 0
    M = np.full(m + 1, inf)
    X = np.full(m + 1, inf)
    Y = np.full(m + 1, inf)
    M[0] = 0.0
    Y[1:] = o + (jj[1:] - 1) * e
    ptr[0, 2:] |= np.uint8(_Y << 4)
    for i in range(1, n + 1):
        best_prev = np.minimum(np.minimum(M, X), Y)
        arg_prev = np.where(np.minimum(X, Y) >= M, _M, np.where(X <= Y, _X, _Y)).astype(np.uint8)
        nM = np.full(m + 1, inf)
        nM[1:] = best_prev[:-1] + sub_u[rec_idx[i - 1]][off_idx]
        open_x = np.minimum(M, Y) + o
        ext_x = X + e
        nX = np.minimum(open_x, ext_x)
        x_from = np.where(ext_x < open_x, _X, np.where(M <= Y, _M, _Y)).astype(np.uint8)
        # horizontal gaps: Y[j] = min_k<j (A[k] + o + (j - 1 - k) e), A = min(M, X) of this row
        A = np.minimum(nM, nX)
        run = np.minimum.accumulate(A - jj * e)
        nY = np.full(m + 1, inf)
        nY[1:] = run[:-1] + o + (jj[1:] - 1) * e
        open_y = A[:-1] + o
        ext_y = nY[:-1] + e
        y_from = np.zeros(m + 1, dtype=np.uint8)
        y_from[1:] = np.where(ext_y < open_y, _Y, np.where(nM[:-1] <= nX[:-1], _M, _X))
        m_from = np.zeros(m + 1, dtype=np.uint8)
        m_from[1:] = arg_prev[:-1]
        ptr[i] = m_from | (x_from << 2) | (y_from << 4)
        M, X, Y = nM, nX, nY
    return ptr, np.array([M[m], X[m], Y[m]])


def _traceback(
    ptr: np.ndarray,
    state: int,
    dist: np.ndarray,
    rec_idx: np.ndarray,
    off_idx: np.ndarray,
    rec: Sequence[str],
    off: Sequence[str],
) -> list[AlignedPair]:
    """The pairs of the best path, from the end cell in ``state`` back to the start, in order."""
    pairs: list[AlignedPair] = []
    i, j = len(rec), len(off)
    while i > 0 or j > 0:
        p = ptr[i, j]
        if state == _M:
            pairs.append(AlignedPair(i - 1, j - 1, int(dist[rec_idx[i - 1], off_idx[j - 1]])))
            state = p & 3
            i, j = i - 1, j - 1
        elif state == _X:
            pairs.append(AlignedPair(i - 1, None, len(rec[i - 1])))
            state = (p >> 2) & 3
            i -= 1
        else:
            pairs.append(AlignedPair(None, j - 1, len(off[j - 1])))
            state = (p >> 4) & 3
            j -= 1
    pairs.reverse()
    return pairs


def alignment_cost(pairs: Sequence[AlignedPair], rec: Sequence[str], off: Sequence[str], config: AlignConfig) -> float:
    """The cost of a given alignment under ``config`` (to check optimality in tests)."""
    cost = 0.0
    prev = None  # "M", "X" or "Y"
    for p in pairs:
        if p.rec is not None and p.off is not None:
            a, b = rec[p.rec], off[p.off]
            cost += config.sub_weight * levenshtein(a, b) / max(len(a), len(b), 1)
            prev = "M"
        else:
            kind = "X" if p.off is None else "Y"
            cost += config.gap_extend if prev == kind else config.gap_open
            prev = kind
    return cost


def exact_pairs(pairs: Sequence[AlignedPair]) -> list[AlignedPair]:
    """The aligned pairs with zero edit distance (the words the dataset keeps)."""
    return [p for p in pairs if p.rec is not None and p.off is not None and p.distance == 0]
