import random
import time

import pytest

from punct.align.nw import (
    AlignConfig,
    AlignedPair,
    align_words,
    alignment_cost,
    exact_pairs,
    levenshtein,
    pairwise_edit_distance,
)


def all_alignments(n, m, i=0, j=0):
    if i == n and j == m:
        yield []
        return
    if i < n and j < m:
        for rest in all_alignments(n, m, i + 1, j + 1):
            yield [AlignedPair(i, j, 0)] + rest
    if i < n:
        for rest in all_alignments(n, m, i + 1, j):
            yield [AlignedPair(i, None, 0)] + rest
    if j < m:
        for rest in all_alignments(n, m, i, j + 1):
            yield [AlignedPair(None, j, 0)] + rest


def gap_runs(pairs):
    runs, prev = 0, None
    for p in pairs:
        kind = "M" if p.rec is not None and p.off is not None else ("X" if p.off is None else "Y")
        runs += kind != "M" and kind != prev
        prev = kind
    return runs


def test_levenshtein_and_pairwise():
    a = ["tis", "", "kitten", "důchodu", "šestého"]
    b = ["tisk", "sitting", "", "důchodů", "6"]
    d = pairwise_edit_distance(a, b)
    assert d.shape == (5, 5)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            assert d[i, j] == levenshtein(x, y), (x, y)
    assert levenshtein("kitten", "sitting") == 3 and d[0, 0] == 1 and d[3, 3] == 1


@pytest.mark.parametrize(
    "config", [AlignConfig(), AlignConfig(gap_open=0.7, gap_extend=0.7), AlignConfig(2.0, 0.1, 1.5)]
)
def test_optimal_against_brute_force(config):
    rng = random.Random(7)
    vocab = ["dom", "domy", "les", "lesy", "pes", "x", "a"]
    for _ in range(150):
        rec = [rng.choice(vocab) for _ in range(rng.randint(0, 5))]
        off = [rng.choice(vocab) for _ in range(rng.randint(0, 5))]
        pairs, cost = align_words(rec, off, config)
        assert [p.rec for p in pairs if p.rec is not None] == list(range(len(rec)))
        assert [p.off for p in pairs if p.off is not None] == list(range(len(off)))
        assert alignment_cost(pairs, rec, off, config) == pytest.approx(cost)
        best = min(alignment_cost(a, rec, off, config) for a in all_alignments(len(rec), len(off)))
        assert cost == pytest.approx(best)


def test_affine_prefers_one_long_gap():
    # rec: a X1 vozy X2 c ; off: a voda c.  d(vozy, voda) = 2/4 -> 0.5, X1/X2 unrelated to voda (1.0).
    rec = ["a", "qqqq", "vozy", "wwww", "c"]
    off = ["a", "voda", "c"]
    # affine (open 1, extend 0.3): voda~X + one run of two blanks = 1 + 1.3 = 2.3 beats
    # vozy~voda + two separate one-word gaps = 0.5 + 2 = 2.5
    pairs, cost = align_words(rec, off, AlignConfig(gap_open=1.0, gap_extend=0.3))
    assert cost == pytest.approx(2.3)
    assert gap_runs(pairs) == 1
    # the same gap count with linear costs (open == extend) keeps the similar pair, two gaps
    pairs, cost = align_words(rec, off, AlignConfig(gap_open=1.0, gap_extend=1.0))
    assert cost == pytest.approx(2.5)
    assert gap_runs(pairs) == 2 and AlignedPair(2, 1, 2) in pairs


def test_thesis_figure_3_1_example_and_exact_pairs():
    rec = ["který", "vám", "byl", "doručen", "šestého", "března", "tohoto", "roku", "usnesení"]
    off = ["který", "vám", "byl", "doručen", "6", "března", "tohoto", "roku", "usnesení"]
    pairs, _ = align_words(rec, off)
    kept = exact_pairs(pairs)
    assert [(p.rec, p.off) for p in kept] == [(i, i) for i in range(9) if i != 4]
    assert all(p.distance == 0 for p in kept)
    # an inserted spoken word (missing from the record) becomes a rec-only pair
    pairs, _ = align_words(["a", "b", "ehm", "c"], ["a", "b", "c"])
    assert AlignedPair(2, None, 3) in pairs and len(exact_pairs(pairs)) == 3


def test_empty_and_size_guard():
    pairs, cost = align_words([], ["a", "bb"])
    assert pairs == [AlignedPair(None, 0, 1), AlignedPair(None, 1, 2)] and cost == pytest.approx(1.3)
    with pytest.raises(ValueError, match="max_cells"):
        align_words(["a"] * 10, ["a"] * 10, AlignConfig(max_cells=50))


def test_speed_thousand_words():
    rng = random.Random(1)
    letters = "abcdeěščřžýáíéklmnoprstuv"
    vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(1, 10))) for _ in range(500)]
    off = [rng.choice(vocab) for _ in range(1000)]
    rec = list(off)
    for _ in range(30):
        rec[rng.randrange(len(rec))] = rng.choice(vocab)
    del rec[100:110]
    t = time.time()
    pairs, _ = align_words(rec, off)
    assert time.time() - t < 5.0
    assert len(exact_pairs(pairs)) >= 950
