"""Pause features from word times: exact values on hand-made cuts and supervisions, and what is left out."""

from __future__ import annotations

import numpy as np
import pytest
from lhotse import CutSet, MonoCut, Recording, SupervisionSegment, SupervisionSet
from lhotse.audio import AudioSource
from lhotse.supervision import AlignmentItem

from punct.labels import PUNCT4
from punct.models.pause.features import FEATURE_NAMES, pause_features, read_word_pauses, word_pauses

# three words of a segment that starts 2.0 s and ends 5.0 s into its recording
TIMES = [("so", 2.5, 0.4), ("it", 3.0, 0.4), ("went", 4.0, 0.6)]
# pause after, pause before, duration, is last
EXPECTED = [[0.1, 0.5, 0.4, 0.0], [0.6, 0.1, 0.4, 0.0], [0.4, 0.6, 0.6, 1.0]]


def supervision(sid, start, duration, times=TIMES, punct=("NP", ",", "."), alignment=True):
    return SupervisionSegment(
        id=sid,
        recording_id="rec",
        start=start,
        duration=duration,
        custom={"words": [w for w, _, _ in times], "punct": list(punct)},
        alignment={"word": [AlignmentItem(w, s, d) for w, s, d in times]} if alignment else None,
    )


def cut(cid, sup, start=2.0, duration=3.0):
    rec = Recording(
        id="rec",
        sources=[AudioSource(type="file", channels=[0], source="/dev/null")],
        sampling_rate=16000,
        num_samples=16000 * 10,
        duration=10.0,
    )
    return MonoCut(id=cid, start=start, duration=duration, channel=0, recording=rec, supervisions=[sup])


def test_features_of_known_times():
    got = pause_features([2.5, 3.0, 4.0], [2.9, 3.4, 4.6], 2.0, 5.0)
    assert FEATURE_NAMES == ("pause_after", "pause_before", "duration", "is_last")
    np.testing.assert_allclose(got, EXPECTED, rtol=0, atol=1e-12)


def test_one_word_is_first_and_last():
    np.testing.assert_allclose(pause_features([1.25], [1.5], 1.0, 2.0), [[0.5, 0.25, 0.25, 1.0]], atol=1e-12)


def test_overlapping_words_give_a_negative_pause():
    got = pause_features([0.0, 0.45], [0.5, 0.9], 0.0, 1.0)
    assert got[0, 0] == pytest.approx(-0.05) and got[1, 1] == pytest.approx(-0.05)


def test_a_cut_shifts_its_supervision_to_the_recording_axis():
    """The cut's supervision starts at 0 relative to the cut (2.0 s into the recording); the word times are on the
    recording's axis, as stage 3 writes them."""
    pauses = word_pauses([cut("c1", supervision("c1", 0.0, 3.0))], PUNCT4)
    np.testing.assert_allclose(pauses.features, EXPECTED, atol=1e-12)
    assert pauses.labels.tolist() == [0, 1, 2] and pauses.lengths == [3]
    # a supervision 0.5 s into a cut that starts 1.5 s into the recording: the same segment
    shifted = word_pauses([cut("c2", supervision("c2", 0.5, 3.0), start=1.5, duration=4.0)], PUNCT4)
    np.testing.assert_allclose(shifted.features, EXPECTED, atol=1e-12)


def test_supervisions_are_read_on_their_own_axis(tmp_path):
    path = tmp_path / "sups.jsonl.gz"
    SupervisionSet.from_segments([supervision("s1", 2.0, 3.0)]).to_file(path)
    pauses = read_word_pauses(path, PUNCT4)
    np.testing.assert_allclose(pauses.features, EXPECTED, atol=1e-12)
    assert [u.id for u in pauses.utterances] == ["s1"]


def test_unusable_cuts_are_left_out_and_counted(tmp_path):
    cuts = [
        cut("ok", supervision("ok", 0.0, 3.0)),
        cut("noali", supervision("noali", 0.0, 3.0, alignment=False)),
        cut("short", supervision("short", 0.0, 3.0, times=TIMES[:2], punct=("NP", ","))),
        cut("empty", supervision("empty", 0.0, 3.0, times=[], punct=())),
    ]
    bad = cuts[2].supervisions[0]
    bad.custom["words"].append("extra")  # three words, two aligned
    bad.custom["punct"].append(".")
    path = tmp_path / "cuts.jsonl.gz"
    CutSet.from_cuts(cuts).to_file(path)
    pauses = read_word_pauses(path, PUNCT4)
    assert [u.id for u in pauses.utterances] == ["ok"]
    assert pauses.skipped == {"no word alignment": 1, "words/alignment lengths differ": 1, "no words": 1}
    assert [m.shape for m in pauses.split(np.zeros((3, 4)))] == [(3, 4)]


def test_a_missing_manifest_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.jsonl.gz"):
        read_word_pauses(tmp_path / "nope.jsonl.gz", PUNCT4)
