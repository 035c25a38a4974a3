"""Greedy CTC decoding and WER counting (punct.am.decode)."""

import random

import pytest
import torch

from punct.am.decode import WerStats, edit_ops, greedy_ids


def _levenshtein(ref: list[str], hyp: list[str]) -> int:
    """The textbook word edit distance, the reference that edit_ops' totals must equal."""
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        diag, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            diag, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diag + (r != h))
    return row[-1]


def _random_pairs(n: int, seed: int = 60) -> list[tuple[list[str], list[str]]]:
    """Seeded word-list pairs over a 5-word vocabulary (many equal-cost alignments), empty ones included."""
    rng = random.Random(seed)
    vocab = ["a", "b", "c", "d", "e"]
    pairs = [([], []), (["a"], []), ([], ["a", "b"])]
    while len(pairs) < n:
        pairs.append(
            (
                [rng.choice(vocab) for _ in range(rng.randint(0, 12))],
                [rng.choice(vocab) for _ in range(rng.randint(0, 12))],
            )
        )
    return pairs


def test_reference_levenshtein():
    assert _levenshtein([], []) == 0 and _levenshtein([], list("ab")) == 2 and _levenshtein(list("ab"), []) == 2
    assert _levenshtein(list("kitten"), list("sitting")) == 3


def test_edit_ops_totals_are_the_levenshtein_distance():
    """5,000 seeded pairs: the total is minimal, and the split is an alignment's (del - ins = |ref| - |hyp|)."""
    words = errors = 0
    for ref, hyp in _random_pairs(5000):
        sub, dele, ins = edit_ops(ref, hyp)
        assert sub + dele + ins == _levenshtein(ref, hyp), (ref, hyp)
        assert min(sub, dele, ins) >= 0 and dele - ins == len(ref) - len(hyp), (ref, hyp)
        assert sub + dele <= len(ref) and sub + ins <= len(hyp), (ref, hyp)
        words += len(ref)
        errors += sub + dele + ins
    assert words > 0 and errors > 0


def test_greedy_merges_repeats_and_drops_blanks():
    path = [0, 3, 3, 0, 3, 1, 1, 2, 0, 0]
    logits = torch.full((12, 4), -5.0)
    logits[torch.arange(10), torch.tensor(path)] = 5.0
    assert greedy_ids(logits, 10) == [3, 3, 1, 2]
    assert greedy_ids(logits, 3) == [3]


@pytest.mark.parametrize(
    "ref,hyp,ops",
    [
        ("a b c d", "a x c d e", (1, 0, 1)),
        ("a b", "", (0, 2, 0)),
        ("", "a", (0, 0, 1)),
        ("a b c", "b c", (0, 1, 0)),
        ("the cat sat", "the cat sat", (0, 0, 0)),
        ("", "", (0, 0, 0)),
        # equal-cost alignments: kaldialign's split (2 sub + 1 ins), not 1 del + 2 ins
        ("a b", "c c a", (2, 0, 1)),
    ],
)
def test_edit_operations(ref, hyp, ops):
    assert edit_ops(ref.split(), hyp.split()) == ops


def test_wer_summary():
    stats = WerStats()
    stats.add(["a", "b", "c", "d"], ["a", "x", "c", "d", "e"])
    stats.add(["e", "f"], ["e", "f"])
    assert stats.words == 6 and stats.errors == 2
    assert stats.wer == pytest.approx(100 * 2 / 6)
    assert stats.summary().startswith("%WER 33.33 [ 2 / 6, 1 ins, 0 del, 1 sub ]")
