"""Per-speaker CMVN (punct.features.cmvn)."""

import numpy as np
import pytest

from punct.features.cmvn import SpeakerCmvn


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
