"""Greedy CTC decoding and word error rate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


def greedy_ids(logits: torch.Tensor, length: int) -> list[int]:
    """(T, V) logits of one utterance -> token ids: best path, repeats merged, blanks removed."""
    best = logits[:length].argmax(dim=-1).tolist()
    out, prev = [], -1
    for i in best:
        if i != prev and i != 0:
            out.append(i)
        prev = i
    return out


def edit_ops(ref: Sequence[str], hyp: Sequence[str]) -> tuple[int, int, int]:
    """(substitutions, deletions, insertions) of the minimum edit between word lists."""
    n, m = len(ref), len(hyp)
    # cost, sub, del, ins per cell, by rows
    prev = [(j, 0, 0, j) for j in range(m + 1)]
    for i in range(1, n + 1):
        cur = [(i, 0, i, 0)]
        for j in range(1, m + 1):
            s = prev[j - 1]
            d = prev[j]
            a = cur[j - 1]
            if ref[i - 1] == hyp[j - 1]:
                best = s
            else:
                best = min(
                    (s[0] + 1, s[1] + 1, s[2], s[3]), (d[0] + 1, d[1], d[2] + 1, d[3]), (a[0] + 1, a[1], a[2], a[3] + 1)
                )
            if ref[i - 1] == hyp[j - 1]:
                best = min(best, (d[0] + 1, d[1], d[2] + 1, d[3]), (a[0] + 1, a[1], a[2], a[3] + 1))
            cur.append(best)
        prev = cur
    _, sub, dele, ins = prev[m]
    return sub, dele, ins


@dataclass
class WerStats:
    words: int = 0
    sub: int = 0
    dele: int = 0
    ins: int = 0
    sentences: int = 0
    sentence_errors: int = 0

    def add(self, ref: Sequence[str], hyp: Sequence[str]) -> None:
        s, d, i = edit_ops(ref, hyp)
        self.words += len(ref)
        self.sub += s
        self.dele += d
        self.ins += i
        self.sentences += 1
        self.sentence_errors += int(s + d + i > 0)

    @property
    def errors(self) -> int:
        return self.sub + self.dele + self.ins

    @property
    def wer(self) -> float:
        return 100.0 * self.errors / max(1, self.words)

    def summary(self) -> str:
        return (
            f"%WER {self.wer:.2f} [ {self.errors} / {self.words}, {self.ins} ins, {self.dele} del, {self.sub} sub ]"
            f" %SER {100.0 * self.sentence_errors / max(1, self.sentences):.2f}"
            f" [ {self.sentence_errors} / {self.sentences} ]"
        )
