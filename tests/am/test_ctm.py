"""Word spans -> AlignmentItems/CTM and back; alignment error against reference word times."""

import json

import numpy as np
import pytest

from punct.am.ctm import ctm_lines, items_to_frames, read_ctm, spans_to_items
from punct.am.align_quality import format_summary, read_word_times, start_errors, summarise
from punct.am.viterbi import WordSpan


def test_items_are_recording_relative_and_invert_to_frames(tmp_path):
    spans = [WordSpan("a", 3, 17), WordSpan("cat", 20, 41)]
    items = spans_to_items(spans, cut_start=12.34)
    assert items[0].symbol == "a" and items[0].start == pytest.approx(12.37) and items[0].duration == pytest.approx(0.14)
    assert items_to_frames(items, 12.34) == [(3, 17), (20, 41)]
    (tmp_path / "x.ctm").write_text("".join(ctm_lines("utt1", spans)))
    assert (tmp_path / "x.ctm").read_text().splitlines()[0] == "utt1 1 0.03 0.14 a"
    assert read_ctm(tmp_path / "x.ctm") == {"utt1": [("a", 0.03, 0.14), ("cat", 0.2, 0.21)]}
    (tmp_path / "bad.ctm").write_text("utt1 1 0.03\n")
    with pytest.raises(ValueError, match="bad.ctm:1"):
        read_ctm(tmp_path / "bad.ctm")


def test_start_errors_and_summary(tmp_path):
    ref = tmp_path / "dev.word_times.jsonl"
    ref.write_text("\n".join(json.dumps(r) for r in [
        {"id": "u1", "words": ["a", "b", "c"], "starts": [0.0, 0.5, 1.0]},
        {"id": "u2", "words": ["d"], "starts": [None]},
        {"id": "u3", "words": ["x", "y"], "starts": [0.0, 0.3]},
    ]) + "\n")
    reference = read_word_times(ref)
    hyp = {"u1": (["a", "b", "c"], [0.02, 0.45, 1.2]), "u2": (["d"], [0.1]), "u3": (["x", "z"], [0.0, 0.3]),
           "u4": (["q"], [0.0])}
    errors, counts = start_errors(reference, hyp)
    assert np.allclose(sorted(errors), [-0.05, 0.02, 0.2])
    assert counts == {"segments": 2, "words": 3, "word_mismatch": 1, "no_reference": 1}
    summary = summarise(errors, counts)
    assert summary["median_abs_ms"] == pytest.approx(50.0)
    assert summary["p90_abs_ms"] == pytest.approx(170.0)
    assert summary["within_50ms"] == pytest.approx(2 / 3)
    assert "median 50.0 ms" in format_summary("dev", summary)
    ref.write_text('{"id": "u1", "words": ["a"], "starts": []}\n')
    with pytest.raises(ValueError, match="jsonl:1"):
        read_word_times(ref)
