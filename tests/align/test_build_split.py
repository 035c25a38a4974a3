"""Stage 3's held-out parts by a share of the hours or by recording (split_by, dev_share, test_share), the default
count of speakers unchanged, and the stop on a segment dataset too small to mean anything (min_*_segments):
punct.align.build (the entry point's exit code: tests/bin/test_build_itn_segments_split.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from lhotse import Recording, RecordingSet, SupervisionSegment, SupervisionSet
from lhotse.audio import AudioSource

from punct.align.build import SegmentBuild, TooFewSegments, heldout_units, merge_jobs, recording_heldout, speaker_hours
from punct.align.dataset import ItnDatasetConfig, too_few_segments
from punct.align.segments import choose_heldout_speakers
from punct.utils.atomic import done_marker, mark_done


def sup(recording_id: str, seconds: float, speakers: list[str]) -> SimpleNamespace:
    return SimpleNamespace(recording_id=recording_id, duration=seconds, custom={"speakers": speakers})


def two_main_speakers() -> list[SimpleNamespace]:
    """Two speakers say most of every sitting; 20 others say a few words each."""
    out = []
    for r in range(10):
        minors = [f"minor{(2 * r + k) % 20:02d}" for k in range(2)]
        out.append(sup(f"rec{r}", 3600.0, ["main1"] * 450 + ["main2"] * 450 + minors[:1] * 50 + minors[1:] * 50))
    return out


def args_for(tmp_path) -> SimpleNamespace:
    return SimpleNamespace(dev_speakers=None, test_speakers=None, out_dir=tmp_path)


def test_speaker_hours_share_each_recording_by_words():
    hours = speaker_hours([sup("a", 3600.0, ["x", "x", "x", "y"]), sup("b", 1800.0, ["y"])])
    assert hours == pytest.approx({"x": 0.75, "y": 0.75})


def test_default_is_the_count_of_speakers(tmp_path):
    sups = two_main_speakers()
    dev, test = heldout_units(args_for(tmp_path), ItnDatasetConfig(num_dev_speakers=2, num_test_speakers=2), sups)
    speakers = sorted({s for x in sups for s in x.custom["speakers"]})
    assert (sorted(dev), sorted(test)) == choose_heldout_speakers(speakers, 2, 2, 42)
    assert (tmp_path / "dev_speakers.txt").read_text().split() == sorted(dev)


@pytest.mark.parametrize("seed", range(5))
def test_share_of_the_hours_keeps_the_main_speakers_in_training(tmp_path, seed):
    sups = two_main_speakers()
    config = ItnDatasetConfig(dev_share=0.05, test_share=0.05, seed=seed)
    dev, test = heldout_units(args_for(tmp_path), config, sups)
    hours = speaker_hours(sups)
    assert not dev & test and {"main1", "main2"}.isdisjoint(dev | test)
    for part in (dev, test):
        assert 0.03 <= sum(hours[s] for s in part) / sum(hours.values()) <= 0.07
    # a share above max_heldout_share (a third) is an error, not half the corpus held out
    with pytest.raises(ValueError, match="held-out share must be in"):
        heldout_units(args_for(tmp_path), ItnDatasetConfig(dev_share=0.5, test_share=0.1), sups)


def test_split_by_recording(tmp_path):
    sups = two_main_speakers()
    config = ItnDatasetConfig(split_by="recording", dev_share=0.1, test_share=0.2)
    dev, test = heldout_units(args_for(tmp_path), config, sups)
    assert len(dev) == 1 and len(test) == 2 and not dev & test
    assert (tmp_path / "test_recordings.txt").read_text().split() == sorted(test)
    rec = next(s for s in sups if s.recording_id in dev)
    assert recording_heldout(config, rec, dev, test) == (set(rec.custom["speakers"]), set())
    train_rec = next(s for s in sups if s.recording_id not in dev | test)
    assert recording_heldout(config, train_rec, dev, test) == (set(), set())
    with pytest.raises(ValueError, match="give dev_share and test_share"):
        ItnDatasetConfig(split_by="recording")
    with pytest.raises(ValueError, match="both dev_share and test_share"):
        ItnDatasetConfig(dev_share=0.1)
    with pytest.raises(ValueError, match="need split_by: speaker"):
        heldout_units(SimpleNamespace(dev_speakers=tmp_path / "x", test_speakers=None, out_dir=tmp_path), config, sups)


def test_too_few_segments_message():
    config = ItnDatasetConfig()
    assert too_few_segments("data/segments", {"train": 16, "dev": 9, "test": 3}, config, 611, 589) is None  # tiny
    message = too_few_segments("data/segments", {"train": 2, "dev": 1}, config, 15000, 529)
    assert message.startswith(
        "data/segments: too few segments to train or score a model: 2 train "
        "(min_train_segments 10), 0 test (min_test_segments 1); 529 of 15000 official words"
    )
    for hint in ("--am-init", "--asr-model", "more recordings", "dev_share/test_share", "split_by: recording"):
        assert hint in message, hint
    assert (
        too_few_segments("d", {"train": 2, "dev": 1}, ItnDatasetConfig(min_train_segments=2, min_test_segments=0), 1, 1)
        is None
    )


def test_merge_raises_too_few_segments_after_the_stats(tmp_path):
    """merge_jobs of parts without a segment writes stats.md and stats.json, then raises; the folder is not done."""
    build = SegmentBuild(manifest_dir=tmp_path / "manifests", prefix="p", out_dir=tmp_path / "segments")
    (build.out_dir / "parts").mkdir(parents=True)
    build.manifest_dir.mkdir()
    rec = Recording("rec1", [AudioSource("file", [0], "x.wav")], 16000, 16000, 1.0)
    RecordingSet.from_recordings([rec]).to_file(build.manifest_dir / "p_recordings_all.jsonl.gz")
    SupervisionSet.from_segments([SupervisionSegment("rec1", "rec1", 0.0, 1.0)]).to_file(
        build.manifest_dir / "p_supervisions_all.jsonl.gz"
    )
    part = build.out_dir / "parts" / "segments.1.jsonl"
    part.write_text("")
    part.with_suffix(".counts.json").write_text(json.dumps({"totals": {"official_words": 40}, "filters": {}}))
    with pytest.raises(FileNotFoundError, match="unfinished job parts"):
        merge_jobs(build, ItnDatasetConfig())
    mark_done(part)
    with pytest.raises(TooFewSegments, match="0 train"):
        merge_jobs(build, ItnDatasetConfig())
    stats = json.loads((build.out_dir / "stats.json").read_text())
    assert stats["totals"] == {"official_words": 40} and not done_marker(build.out_dir).exists()
    merge_jobs(build, ItnDatasetConfig(min_train_segments=0, min_dev_segments=0, min_test_segments=0))
    assert done_marker(build.out_dir).exists()
    assert (build.out_dir / "p_supervisions_train.jsonl.gz").is_file()
