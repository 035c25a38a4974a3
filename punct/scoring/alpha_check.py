"""Checks an ensemble-weight rule on dev alone: leave one talk out.

Stage 8 chooses alpha on dev by a rule (``punct.scoring.ensemble.ALPHA_RULES``).  Whether a rule picks well can be
asked of dev without looking at test: for each dev talk, choose alpha by the rule on the other talks and predict
that talk's words with it; the held-out predictions of all talks, pooled, give the rule's F1.  Fixed weights (BERT
alone, the TDNN alone, the paper's 0.4) are scored on the same words for comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from punct.scoring.confusion import micro_f1
from punct.scoring.ensemble import choose_alpha_by_rule, ensemble
from punct.scoring.punct_scores import score


@dataclass
class RuleCheck:
    """Held-out overall F1 of each rule and fixed weight, and the alphas each rule chose per held-out talk."""

    f1: dict[str, float]  # "rule paired-se" | "alpha 0.4" ... -> pooled held-out overall F1
    chosen: dict[str, list[float]]  # rule -> alpha chosen without each talk, in talk order
    talks: list[str]


def talk_of(utterance_id: str) -> str:
    """The talk of a MuST-C-style utterance id ``<talk>_<index>`` (the whole id when it has no index)."""
    head, _, tail = utterance_id.rpartition("_")
    return head if head and tail.isdigit() else utterance_id


def leave_one_talk_out(
    ref: np.ndarray,
    p_tdnn: np.ndarray,
    p_bert: np.ndarray,
    utterance_ids: Sequence[str],
    lengths: Sequence[int],
    classes: Sequence[str],
    rules: Sequence[str],
    alphas: Sequence[float],
    fixed: Sequence[float] = (0.0, 0.4, 1.0),
    num_resamples: int = 1000,
    seed: int = 42,
) -> RuleCheck:
    """:class:`RuleCheck` of ``rules`` on the words of ``ref`` (utterances in order, ``lengths`` words each)."""
    if len(utterance_ids) != len(lengths) or sum(lengths) != len(ref):
        raise ValueError(f"{len(utterance_ids)} ids and {len(lengths)} lengths for {len(ref)} words")
    word_talk = np.repeat([talk_of(u) for u in utterance_ids], lengths)
    utterance_talk = np.array([talk_of(u) for u in utterance_ids])
    talks = list(dict.fromkeys(utterance_talk))
    if len(talks) < 2:
        raise ValueError("leave one talk out needs two talks or more")
    lengths = np.asarray(lengths)
    predicted = {rule: np.zeros(len(ref), dtype=np.int64) for rule in rules}
    chosen: dict[str, list[float]] = {rule: [] for rule in rules}
    for talk in talks:
        kept, held = word_talk != talk, word_talk == talk
        for rule in rules:
            choice = choose_alpha_by_rule(
                rule,
                ref[kept],
                p_tdnn[kept],
                p_bert[kept],
                lengths[utterance_talk != talk],
                alphas,
                num_resamples,
                seed,
                micro_f1,
            )
            chosen[rule].append(choice.alpha)
            predicted[rule][held] = ensemble(p_tdnn[held], p_bert[held], choice.alpha).argmax(1)
    f1 = {f"rule {rule}": score(ref, predicted[rule], classes).overall["f1"] for rule in rules}
    for alpha in fixed:
        f1[f"alpha {alpha:.1f}"] = score(ref, ensemble(p_tdnn, p_bert, alpha).argmax(1), classes).overall["f1"]
    return RuleCheck(f1, chosen, talks)
