"""Stage 3's merge exits 1, with the reason logged, on a segment dataset too small to mean anything
(min_*_segments; the held-out parts and the merge itself: tests/align/test_build_split.py)."""

from __future__ import annotations

import json

from lhotse import Recording, RecordingSet, SupervisionSegment, SupervisionSet
from lhotse.audio import AudioSource

from punct.bin import build_itn_segments
from punct.utils.atomic import done_marker, mark_done


def test_merge_stops_without_the_done_marker(tmp_path, capfd):
    """A merge of parts without a test segment writes stats.md, logs why and exits 1; the folder is not done."""
    man, out = tmp_path / "manifests", tmp_path / "segments"
    (out / "parts").mkdir(parents=True)
    man.mkdir()
    rec = Recording("rec1", [AudioSource("file", [0], "x.wav")], 16000, 16000, 1.0)
    RecordingSet.from_recordings([rec]).to_file(man / "p_recordings_all.jsonl.gz")
    SupervisionSet.from_segments([SupervisionSegment("rec1", "rec1", 0.0, 1.0, language="cs")]).to_file(
        man / "p_supervisions_all.jsonl.gz"
    )
    part = out / "parts" / "segments.1.jsonl"
    part.write_text("")
    part.with_suffix(".counts.json").write_text(
        json.dumps({"totals": {"official_words": 40, "exact_words": 2}, "filters": {}})
    )
    mark_done(part)
    argv = ["--prefix", "p", "--manifest-dir", str(man), "--out-dir", str(out), "--nj", "1", "--merge"]
    assert build_itn_segments.main(argv) == 1
    assert "ERROR" in (err := capfd.readouterr().err)  # setup_logging: stderr
    assert "too few segments to train or score a model: 0 train (min_train_segments 10)" in err
    assert (out / "stats.md").is_file() and not done_marker(out).exists()
    assert (
        build_itn_segments.main(
            argv + ["--min-train-segments", "0", "--min-dev-segments", "0", "--min-test-segments", "0"]
        )
        == 0
    )
    assert done_marker(out).exists()
