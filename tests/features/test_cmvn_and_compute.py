"""Per-speaker CMVN, and stage 1 on a tiny espeak corpus: cut ids, frame counts, stored features."""

import numpy as np
import pytest
from lhotse import load_manifest

from punct.features.cmvn import SpeakerCmvn
from punct.features.compute import cuts_path, load_cut_features
from punct.features.extractor import KnfMfcc, expected_num_frames

from am.espeak_corpus import cached_corpus, espeak_available  # tests/ is on sys.path (conftest)


def test_cmvn_removes_each_speakers_mean_and_round_trips(tmp_path):
    rng = np.random.default_rng(0)
    a = [rng.normal(3.0, 2.0, (50, 4)), rng.normal(3.0, 2.0, (70, 4))]
    b = [rng.normal(-1.0, 0.5, (40, 4))]
    cmvn = SpeakerCmvn.accumulate([("a", a[0]), ("a", a[1]), ("b", b[0])])
    normed = np.concatenate([cmvn.apply("a", m) for m in a])
    assert np.allclose(normed.mean(axis=0), 0, atol=1e-5)
    assert np.allclose(cmvn.apply("b", b[0]).mean(axis=0), 0, atol=1e-5)
    # mean only by default: the spread is kept
    assert np.allclose(normed.std(axis=0), np.concatenate(a).std(axis=0), rtol=1e-4)
    cmvn.save(tmp_path / "cmvn.json")
    loaded = SpeakerCmvn.load(tmp_path / "cmvn.json")
    assert np.allclose(loaded.apply("b", b[0]), cmvn.apply("b", b[0]))
    with pytest.raises(KeyError, match="'c'"):
        loaded.apply("c", b[0])


def test_cmvn_with_variance_normalisation():
    rng = np.random.default_rng(1)
    x = rng.normal(5.0, 3.0, (500, 3))
    cmvn = SpeakerCmvn.accumulate([("s", x)], norm_vars=True)
    y = cmvn.apply("s", x)
    assert np.allclose(y.mean(axis=0), 0, atol=1e-5) and np.allclose(y.std(axis=0), 1, atol=1e-4)


@pytest.mark.skipif(not espeak_available(), reason="espeak-ng/sox not installed")
def test_stage1_cuts_match_supervisions_and_frame_convention():
    root = cached_corpus()
    for split in ("train", "dev", "test"):
        sups = load_manifest(root / "manifests" / f"mustc_supervisions_{split}.jsonl.gz")
        cuts = load_manifest(cuts_path(root / "fbank", split))
        assert [c.id for c in cuts] == [s.id for s in sups]
        cmvn = SpeakerCmvn.load(root / "fbank" / f"cmvn_{split}.json")
        for cut, sup in zip(cuts, sups):
            assert cut.start == pytest.approx(sup.start) and cut.duration == pytest.approx(sup.duration)
            assert cut.supervisions[0].custom["words"] == sup.custom["words"]
            feats = load_cut_features(cut)
            audio = cut.load_audio()
            assert feats.shape == (expected_num_frames(audio.shape[1]), 40)
            # lilcom storage is lossy but close to a fresh extraction of the same samples
            fresh = KnfMfcc().extract(audio, 16000)
            assert np.abs(feats - fresh).max() < 0.05 * np.abs(fresh).max()
            assert np.allclose(load_cut_features(cut, cmvn), cmvn.apply(sup.speaker, feats))
