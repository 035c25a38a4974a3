"""Stage 3 of egs/mustc stops when (almost) nothing aligned (punct.bin.align --max-fail, --min-aligned)."""

from __future__ import annotations

from punct.bin.align import alignment_problem, get_parser


def test_the_tiny_corpus_passes():
    # the baseline tiny run: test 7 of 11 aligned (4 unknown characters) under the tiny recipe's --max-fail 0.5
    assert alignment_problem("test", 7, 11, {"unknown character": 4}, 0.5, 1) is None
    assert alignment_problem("train", 29, 29, {}, 0.05, 1) is None


def test_almost_nothing_aligned_stops_with_what_helps():
    message = alignment_problem("dev", 1, 174, {"no path": 170, "unknown character": 3}, 0.05, 1)
    assert message.startswith(
        "dev: 1 of 174 cuts aligned, 173 (99.4%) failed (by reason: {'no path': 170, "
        "'unknown character': 3}): more than --max-fail 5.0% or fewer than --min-aligned 1"
    )
    assert "tokens.txt" in message and "wer_dev.txt" in message and "more epochs" in message
    # nothing aligned at all (a large --max-fail does not let it pass), and a split without cuts
    assert alignment_problem("dev", 0, 2, {"no path": 2}, 1.0, 1) is not None
    assert "no cuts" in alignment_problem("dev", 0, 0, {}, 0.05, 1)
    assert alignment_problem("dev", 0, 2, {"no path": 2}, 1.0, 0) is None  # the minimum is an option


def test_options():
    args = get_parser().parse_args(["--fbank-dir", "f", "--am-dir", "a", "--splits", "dev", "--prefix", "p"])
    assert (args.max_fail, args.min_aligned) == (0.05, 1)
