"""CTC prefix beam search with a word n-gram language model (thesis 3.3.1 and 4.2.2: beam search
with a KenLM, there through pyctcdecode, here written for this project).

A hypothesis is a text (characters and single spaces) with two CTC scores: ending in a blank and
ending in its last character.  Each frame extends every hypothesis by the tokens within
``token_prune`` of the frame's best; a repeated character extends only after a blank.  When a word
ends (a space after it, or the end of the chunk) its LM score is added:
``lm_weight * ln p(word | previous words) + word_bonus``.  A partial word that starts no word of the
LM's vocabulary costs ``oov_penalty`` for each character from there on (once per word would let one
long made-up word stand for a run of words and skip their LM costs), and a word that stops short of a
vocabulary word costs it once.  The ``beam`` best hypotheses (CTC + LM score) survive each
frame.  Frames where only the blank is within ``token_prune`` are folded into the blank scores
without expanding anything.  A chunk starts without context (it may start inside a sentence).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from punct.recognition.word_lm import WordNgramLm

NEG_INF = float("-inf")


@dataclass(frozen=True)
class BeamSearchConfig:
    beam: int = 16  # hypotheses kept after each frame
    lm_weight: float = 0.5  # times the LM's natural-log word probability
    word_bonus: float = 1.0  # added per word (the LM alone prefers fewer, longer words)
    oov_penalty: float = -10.0  # per character of a word outside the LM's vocabulary
    token_prune: float = 8.0  # tokens more than this below the frame's best (natural log) are not tried


def _logadd(a: float, b: float) -> float:
    if a == NEG_INF:
        return b
    if b == NEG_INF:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


class _Hyp:
    """One text: CTC log-scores (ending in blank / in its last character) and the LM state."""

    __slots__ = ("text", "blank", "nonblank", "lm", "history", "partial", "oov", "last")

    def __init__(self, text: str, lm: float, history: tuple, partial: str, oov: bool, last: int) -> None:
        self.text = text
        self.blank = NEG_INF
        self.nonblank = NEG_INF
        self.lm = lm  # LM score of the finished words (+ word bonuses, OOV penalties)
        self.history = history  # the last order-1 finished words
        self.partial = partial  # the word being spelled
        self.oov = oov  # the partial word already left the vocabulary
        self.last = last  # token index of the last character (-1: none, or a space)

    @property
    def ctc(self) -> float:
        return _logadd(self.blank, self.nonblank)


class CtcBeamSearch:
    """``decode(log_probs)``: the words of a chunk's (T, V) CTC log-posteriors."""

    def __init__(
        self,
        vocab: Sequence[str],
        lm: WordNgramLm | None,
        config: BeamSearchConfig = BeamSearchConfig(),
        space: str = "|",
        blank: int = 0,
    ) -> None:
        if space not in vocab:
            raise ValueError(f"the word separator {space!r} is not among the {len(vocab)} symbols")
        self.vocab = list(vocab)
        self.lm = lm
        self.config = config
        self.space_id = self.vocab.index(space)
        self.blank_id = blank
        self._word_scores: dict[tuple, float] = {}

    @staticmethod
    def describe_config(c: BeamSearchConfig) -> str:
        return (
            f"beam search (beam {c.beam}, lm_weight {c.lm_weight}, word_bonus {c.word_bonus}, "
            f"oov_penalty {c.oov_penalty}, token_prune {c.token_prune})"
        )

    def _word_score(self, history: tuple, word: str) -> float:
        key = history + (word,)
        score = self._word_scores.get(key)
        if score is None:
            lp = self.lm.log_prob(history, word) if self.lm is not None else 0.0
            score = self.config.lm_weight * lp + self.config.word_bonus
            self._word_scores[key] = score
        return score

    def _finish_word(self, hyp: _Hyp) -> tuple:
        """(LM score, history) after the partial word of ``hyp`` ends."""
        lm = hyp.lm + self._word_score(hyp.history, hyp.partial)
        if self.lm is not None and not hyp.oov and hyp.partial not in self.lm.vocab:
            lm += self.config.oov_penalty  # it began a word of the vocabulary but stopped short of one
        order = self.lm.order if self.lm is not None else 1
        history = (hyp.history + (hyp.partial,))[max(0, len(hyp.history) + 2 - order) :] if order > 1 else ()
        return lm, history

    @staticmethod
    def _same_text(hyps: dict[str, _Hyp], hyp: _Hyp) -> _Hyp:
        """The next frame's hypothesis of ``hyp``'s text (a blank or a collapsed repeat adds nothing to it)."""
        same = hyps.get(hyp.text)
        if same is None:
            same = hyps[hyp.text] = _Hyp(hyp.text, hyp.lm, hyp.history, hyp.partial, hyp.oov, hyp.last)
        return same

    def _extend(self, hyps: dict[str, _Hyp], parent: _Hyp, token: int, score: float) -> None:
        """Adds ``score`` (parent's CTC score + the token) to the child text of ``parent`` + ``token``."""
        if token == self.space_id:
            if not parent.partial:  # a space with no word before it changes nothing: it counts as a blank
                same = self._same_text(hyps, parent)
                same.blank = _logadd(same.blank, score)
                return
            text = parent.text + " "
            child = hyps.get(text)
            if child is None:
                lm, history = self._finish_word(parent)
                child = hyps[text] = _Hyp(text, lm, history, "", False, -1)
        else:
            text = parent.text + self.vocab[token]
            child = hyps.get(text)
            if child is None:
                partial = parent.partial + self.vocab[token]
                lm, oov = parent.lm, parent.oov
                if not oov and self.lm is not None and not self.lm.is_prefix(partial):
                    oov = True
                if oov:
                    lm += self.config.oov_penalty
                child = hyps[text] = _Hyp(text, lm, parent.history, partial, oov, token)
        child.nonblank = _logadd(child.nonblank, score)

    def decode(self, log_probs: np.ndarray) -> list[str]:
        log_probs = np.asarray(log_probs, dtype=np.float64)
        if log_probs.ndim != 2 or log_probs.shape[1] != len(self.vocab):
            raise ValueError(f"log-posteriors of shape {log_probs.shape}, expected (T, {len(self.vocab)})")
        start = _Hyp("", 0.0, (), "", False, -1)
        start.blank = 0.0
        beams: list[_Hyp] = [start]
        keep = log_probs >= log_probs.max(axis=1, keepdims=True) - self.config.token_prune
        blank_only = keep.sum(axis=1) == 1
        blank_only &= keep[:, self.blank_id]
        pending, pending_frames = 0.0, 0  # blank-only frames not yet applied, and their summed blank log-probs
        for t in range(len(log_probs)):
            if blank_only[t]:
                pending += log_probs[t, self.blank_id]
                pending_frames += 1
                continue
            if pending_frames:
                for h in beams:
                    h.blank, h.nonblank = h.ctc + pending, NEG_INF
                pending, pending_frames = 0.0, 0
            frame = log_probs[t]
            tokens = np.flatnonzero(keep[t]).tolist()
            hyps: dict[str, _Hyp] = {}
            for h in beams:
                total = h.ctc
                for k in tokens:
                    lp = frame[k]
                    if k == self.blank_id:
                        same = self._same_text(hyps, h)
                        same.blank = _logadd(same.blank, total + lp)
                    elif k == h.last:  # repeat: collapses unless a blank came between
                        same = self._same_text(hyps, h)
                        same.nonblank = _logadd(same.nonblank, h.nonblank + lp)
                        if h.blank != NEG_INF:
                            self._extend(hyps, h, k, h.blank + lp)
                    else:
                        self._extend(hyps, h, k, total + lp)
            beams = sorted(hyps.values(), key=lambda x: x.ctc + x.lm, reverse=True)[: self.config.beam]
        if pending_frames:
            for h in beams:
                h.blank, h.nonblank = h.ctc + pending, NEG_INF
        best = max(beams, key=lambda h: h.ctc + (self._finish_word(h)[0] if h.partial else h.lm))
        return best.text.split()
