"""Greedy CTC decoding and WER counting (punct.am.decode)."""

import pytest
import torch

from punct.am.decode import WerStats, edit_ops, greedy_ids


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
