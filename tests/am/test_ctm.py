"""Word spans -> AlignmentItems/CTM and back (punct.am.ctm)."""

import pytest

from punct.am.ctm import ctm_lines, items_to_frames, read_ctm, spans_to_items
from punct.am.viterbi import WordSpan


def test_items_are_recording_relative_and_invert_to_frames(tmp_path):
    spans = [WordSpan("a", 3, 17), WordSpan("cat", 20, 41)]
    items = spans_to_items(spans, cut_start=12.34)
    assert (
        items[0].symbol == "a" and items[0].start == pytest.approx(12.37) and items[0].duration == pytest.approx(0.14)
    )
    assert items_to_frames(items, 12.34) == [(3, 17), (20, 41)]
    (tmp_path / "x.ctm").write_text("".join(ctm_lines("utt1", spans)))
    assert (tmp_path / "x.ctm").read_text().splitlines()[0] == "utt1 1 0.03 0.14 a"
    assert read_ctm(tmp_path / "x.ctm") == {"utt1": [("a", 0.03, 0.14), ("cat", 0.2, 0.21)]}
    (tmp_path / "bad.ctm").write_text("utt1 1 0.03\n")
    with pytest.raises(ValueError, match="bad.ctm:1"):
        read_ctm(tmp_path / "bad.ctm")
