"""Alignment error against reference word times (punct.am.align_quality)."""

import json

import numpy as np
import pytest

from punct.am.align_quality import format_summary, read_word_times, start_errors, summarise


def test_start_errors_and_summary(tmp_path):
    ref = tmp_path / "dev.word_times.jsonl"
    ref.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"id": "u1", "words": ["a", "b", "c"], "starts": [0.0, 0.5, 1.0]},
                {"id": "u2", "words": ["d"], "starts": [None]},
                {"id": "u3", "words": ["x", "y"], "starts": [0.0, 0.3]},
            ]
        )
        + "\n"
    )
    reference = read_word_times(ref)
    hyp = {
        "u1": (["a", "b", "c"], [0.02, 0.45, 1.2]),
        "u2": (["d"], [0.1]),
        "u3": (["x", "z"], [0.0, 0.3]),
        "u4": (["q"], [0.0]),
    }
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
