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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter

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
    """One text: CTC log-scores (ending in blank / in its last character) and the LM state.

    ``ctc`` (both CTC scores log-added) and ``score`` (``ctc`` + ``lm``) are set once a frame's scores are
    final, so that ranking the hypotheses and extending them in the next frame compute them only once."""

    __slots__ = ("text", "blank", "nonblank", "ctc", "score", "lm", "history", "partial", "oov", "last")

    def __init__(
        self, text: str, lm: float, history: tuple, partial: str, oov: bool, last: int, blank: float, nonblank: float
    ) -> None:
        self.text = text
        self.blank = blank
        self.nonblank = nonblank
        self.ctc = NEG_INF
        self.score = NEG_INF
        self.lm = lm  # LM score of the finished words (+ word bonuses, OOV penalties)
        self.history = history  # the last order-1 finished words
        self.partial = partial  # the word being spelled
        self.oov = oov  # the partial word already left the vocabulary
        self.last = last  # token index of the last character (-1: none, or a space)


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
        # (history, word) -> (word score, whether the word is outside the LM's vocabulary, the next history)
        self._finished: dict[tuple[tuple, str], tuple[float, bool, tuple]] = {}

    @staticmethod
    def describe_config(c: BeamSearchConfig) -> str:
        return (
            f"beam search (beam {c.beam}, lm_weight {c.lm_weight}, word_bonus {c.word_bonus}, "
            f"oov_penalty {c.oov_penalty}, token_prune {c.token_prune})"
        )

    def _finish(self, history: tuple, word: str) -> tuple[float, bool, tuple]:
        """(``lm_weight * ln p(word | history) + word_bonus``, word not in the LM's vocabulary, next history)."""
        key = (history, word)
        finished = self._finished.get(key)
        if finished is None:
            lp = self.lm.log_prob(history, word) if self.lm is not None else 0.0
            score = self.config.lm_weight * lp + self.config.word_bonus
            outside = self.lm is not None and word not in self.lm.vocab
            order = self.lm.order if self.lm is not None else 1
            after = (history + (word,))[max(0, len(history) + 2 - order) :] if order > 1 else ()
            finished = self._finished[key] = (score, outside, after)
        return finished

    def _finish_word(self, hyp: _Hyp) -> tuple[float, tuple]:
        """(LM score, history) after the partial word of ``hyp`` ends."""
        score, outside, history = self._finish(hyp.history, hyp.partial)
        lm = hyp.lm + score
        if outside and not hyp.oov:
            lm += self.config.oov_penalty  # it began a word of the vocabulary but stopped short of one
        return lm, history

    def decode(self, log_probs: np.ndarray) -> list[str]:
        log_probs = np.asarray(log_probs, dtype=np.float64)
        if log_probs.ndim != 2 or log_probs.shape[1] != len(self.vocab):
            raise ValueError(f"log-posteriors of shape {log_probs.shape}, expected (T, {len(self.vocab)})")
        start = _Hyp("", 0.0, (), "", False, -1, 0.0, NEG_INF)
        start.ctc = 0.0
        beams: list[_Hyp] = [start]
        keep = log_probs >= log_probs.max(axis=1, keepdims=True) - self.config.token_prune
        blank_only = keep.sum(axis=1) == 1
        blank_only &= keep[:, self.blank_id]
        # each frame's (token, log-prob) pairs within token_prune, as Python ints and floats (faster than numpy
        # scalars here, and the same values): pairs[ends[t - 1] : ends[t]] for frame t
        frames, tokens = np.nonzero(keep)
        pairs = list(zip(tokens.tolist(), log_probs[frames, tokens].tolist()))
        ends = np.cumsum(keep.sum(axis=1)).tolist()
        blank_lps = log_probs[:, self.blank_id].tolist()
        pending, pending_frames = 0.0, 0  # blank-only frames not yet applied, and their summed blank log-probs
        for t, only_blank in enumerate(blank_only.tolist()):
            if only_blank:
                pending += blank_lps[t]
                pending_frames += 1
                continue
            if pending_frames:
                _add_blanks(beams, pending)
                pending, pending_frames = 0.0, 0
            beams = self._next_beams(beams, pairs[ends[t - 1] if t else 0 : ends[t]])
        if pending_frames:
            _add_blanks(beams, pending)
        best = max(beams, key=lambda h: h.ctc + (self._finish_word(h)[0] if h.partial else h.lm))
        return best.text.split()

    # _next_beams is the hot path (millions of steps per recording): attributes are bound to locals, log-add is
    # written out, and a text's hypothesis is created with its first score (log-adding to -inf would give that
    # score).  Scores are added in the same order as a plain implementation would, so that ties, and therefore the
    # words, do not depend on these shortcuts.  A beam's hypothesis is reused for its text in the frame (when no
    # other beam's extension reached that text first), so its scores of the last frame are read first.  x: the
    # log-score a step adds.
    def _next_beams(self, beams: list[_Hyp], token_lps: list[tuple[int, float]]) -> list[_Hyp]:
        """The ``beam`` best hypotheses after a frame whose tokens within ``token_prune`` are ``token_lps``."""
        blank_id, space_id, vocab = self.blank_id, self.space_id, self.vocab
        prefixes = self.lm.prefixes if self.lm is not None else None
        oov_penalty, finished_words, finish = self.config.oov_penalty, self._finished, self._finish
        log1p, exp = math.log1p, math.exp
        previous = [(h, h.ctc, h.blank, h.nonblank) for h in beams]
        hyps: dict[str, _Hyp] = {}  # text -> its hypothesis in this frame, in the order they are reached
        for h, total, h_blank, h_nonblank in previous:
            text, partial, last = h.text, h.partial, h.last
            for k, lp in token_lps:
                if k == blank_id or (k == space_id and not partial):
                    # a blank, or a space with no word before it (it changes nothing): the same text
                    x = total + lp
                    same = hyps.get(text)
                    if same is None:
                        h.blank, h.nonblank = x, NEG_INF
                        hyps[text] = h
                        continue
                    a = same.blank  # same.blank = _logadd(a, x), written out
                    same.blank = x if a == NEG_INF else (a + log1p(exp(x - a)) if a > x else x + log1p(exp(a - x)))
                    continue
                if k == last:  # repeat: collapses unless a blank came between
                    x = h_nonblank + lp
                    same = hyps.get(text)
                    if same is None:
                        h.blank, h.nonblank = NEG_INF, x
                        hyps[text] = h
                    else:
                        same.nonblank = _logadd(same.nonblank, x)
                    if h_blank == NEG_INF:
                        continue
                    x = h_blank + lp
                else:
                    x = total + lp
                # the child text: text + the token's character (a space ends the partial word)
                child_text = text + (" " if k == space_id else vocab[k])
                child = hyps.get(child_text)
                if child is None:
                    if k == space_id:  # ended: (word score, outside the vocabulary, next history)
                        ended = finished_words.get((h.history, partial)) or finish(h.history, partial)
                        # a word that began one of the vocabulary but stopped short of it costs oov_penalty
                        lm = h.lm + ended[0] + (oov_penalty if ended[1] and not h.oov else 0.0)
                        hyps[child_text] = _Hyp(child_text, lm, ended[2], "", False, -1, NEG_INF, x)
                        continue
                    spelled = partial + vocab[k]
                    oov = h.oov or (prefixes is not None and spelled not in prefixes)
                    lm = h.lm + oov_penalty if oov else h.lm
                    hyps[child_text] = _Hyp(child_text, lm, h.history, spelled, oov, k, NEG_INF, x)
                    continue
                a = child.nonblank  # child.nonblank = _logadd(a, x), written out
                child.nonblank = x if a == NEG_INF else (a + log1p(exp(x - a)) if a > x else x + log1p(exp(a - x)))
        _settle(hyps.values())
        return sorted(hyps.values(), key=_BY_SCORE, reverse=True)[: self.config.beam]  # stable: ties keep their order


_BY_SCORE = attrgetter("score")


def _add_blanks(beams: Sequence[_Hyp], blank_log_prob: float) -> None:
    """Blank-only frames (their summed blank log-probabilities) applied to every beam: each ends in a blank."""
    for h in beams:
        h.blank, h.nonblank = h.ctc + blank_log_prob, NEG_INF
        h.ctc = h.blank


def _settle(hyps: Iterable[_Hyp]) -> None:
    """A frame's scores are final: ``ctc`` = ``_logadd(blank, nonblank)`` (written out) and ``score`` = ctc + lm."""
    log1p, exp = math.log1p, math.exp
    for h in hyps:
        a, b = h.blank, h.nonblank
        if a == NEG_INF:
            ctc = b
        elif b == NEG_INF:
            ctc = a
        elif a > b:
            ctc = a + log1p(exp(b - a))
        else:
            ctc = b + log1p(exp(a - b))
        h.ctc = ctc
        h.score = ctc + h.lm
