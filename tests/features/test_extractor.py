"""The kaldi-native-fbank extractors against lhotse's own Kaldi-compatible MFCC, frame counts, registry."""

import warnings

import numpy as np
import pytest
from lhotse.features.base import FeatureExtractor, create_default_feature_extractor

from punct.features.extractor import KnfFbank, KnfMfcc, KnfMfccConfig, expected_num_frames


def _speechlike(seconds: float = 1.3, seed: int = 0) -> np.ndarray:
    """Harmonics with a moving pitch plus noise, in [-1, 1]."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(16000 * seconds)) / 16000
    f0 = 120 + 30 * np.sin(2 * np.pi * 1.5 * t)
    phase = 2 * np.pi * np.cumsum(f0) / 16000
    x = sum(np.sin(k * phase) / k for k in range(1, 15)) * 0.1 + 0.01 * rng.standard_normal(t.size)
    return x.astype(np.float32)


def test_mfcc_matches_lhotse_kaldi_mfcc():
    from lhotse.features.kaldi.extractors import Mfcc, MfccConfig

    x = _speechlike()
    ours = KnfMfcc().extract(x, 16000)
    # lhotse's defaults differ from Kaldi's hires setup (high_freq=-400, 23 filters, 13 ceps,
    # snip_edges=False) and it works on the raw [-1, 1] samples: match every option explicitly.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = Mfcc(
            MfccConfig(snip_edges=True, num_ceps=40, num_filters=40, low_freq=40.0, high_freq=-200.0, dither=0.0)
        ).extract(x * 32768.0, 16000)
    assert ours.shape == theirs.shape == (expected_num_frames(x.size), 40)
    scale = np.abs(theirs).max(axis=0)
    rel = np.abs(ours - theirs).max(axis=0) / scale
    assert rel.max() < 1e-3, rel
    # and the two disagree once lhotse keeps its own high_freq default: the comparison has teeth
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other = Mfcc(MfccConfig(snip_edges=True, num_ceps=40, num_filters=40, low_freq=40.0, dither=0.0)).extract(
            x * 32768.0, 16000
        )
    assert np.abs(ours - other).max() > 100 * np.abs(ours - theirs).max()


@pytest.mark.parametrize("num_samples", [399, 400, 559, 560, 16000, 16123])
def test_frame_count_follows_the_snip_edges_convention(num_samples):
    x = _speechlike(num_samples / 16000 + 0.01)[:num_samples]
    feats = KnfMfcc().extract(x, 16000)
    want = 0 if num_samples < 400 else 1 + (num_samples - 400) // 160
    assert feats.shape == (want, 40)
    assert expected_num_frames(num_samples) == want


def test_fbank_shape_and_wrong_rate_is_an_error():
    x = _speechlike()
    assert KnfFbank().extract(x, 16000).shape == (expected_num_frames(x.size), 80)
    with pytest.raises(ValueError, match="8000 Hz"):
        KnfMfcc().extract(x, 8000)


def test_registered_and_round_trips_through_lhotse_dict():
    extractor = KnfMfcc(KnfMfccConfig(num_ceps=30, num_mel_bins=30))
    rebuilt = FeatureExtractor.from_dict(extractor.to_dict())
    assert isinstance(rebuilt, KnfMfcc) and rebuilt.config == extractor.config
    assert isinstance(create_default_feature_extractor("kaldi-native-fbank"), KnfFbank)
    x = _speechlike()
    assert np.array_equal(rebuilt.extract(x, 16000), extractor.extract(x, 16000))
    assert rebuilt.extract(x, 16000).shape[1] == 30
