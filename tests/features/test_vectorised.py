"""The vectorised NumPy features against kaldi-native-fbank, frame by frame."""

import numpy as np
import pytest

from punct.features import FeatureConfig
from punct.features.extractor import KnfFbank, KnfFbankConfig, KnfMfcc, KnfMfccConfig
from punct.features.vectorised import VectorisedExtractor, supports


def _audio(seconds: float, seed: int = 0) -> np.ndarray:
    """Harmonics with a moving pitch, noise and a DC offset, in [-1, 1]."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(16000 * seconds)) / 16000
    phase = 2 * np.pi * np.cumsum(110 + 40 * np.sin(2 * np.pi * t)) / 16000
    x = sum(np.sin(k * phase) / k for k in range(1, 12)) * 0.1 + 0.02 * rng.standard_normal(t.size) + 0.01
    return x.astype(np.float32)


def _relative_error(ours: np.ndarray, reference: np.ndarray) -> float:
    if reference.size == 0:
        return 0.0
    return float((np.abs(ours - reference).max(axis=0) / np.abs(reference).max(axis=0)).max())


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"window_type": "hamming", "num_ceps": 13, "num_mel_bins": 23},
        {
            "window_type": "hanning",
            "preemph_coeff": 0.0,
            "remove_dc_offset": False,
            "frame_length_ms": 32.0,
            "cepstral_lifter": 0.0,
        },
    ],
)
def test_mfcc_equals_kaldi_native_fbank(options):
    config = KnfMfccConfig(**options)
    for seconds in (0.025, 0.0351, 3.7):
        x = _audio(seconds)
        reference = KnfMfcc(config).extract(x, 16000)
        ours = VectorisedExtractor(config).extract(x, 16000)
        assert ours.dtype == np.float32 and ours.shape == reference.shape
        assert _relative_error(ours, reference) < 1e-3


def test_fbank_equals_kaldi_native_fbank_and_short_audio_gives_no_frames():
    config = KnfFbankConfig(high_freq=-400.0)
    x = _audio(2.0, seed=1)
    reference = KnfFbank(config).extract(x, 16000)
    ours = VectorisedExtractor(config).extract(x, 16000)
    assert _relative_error(ours, reference) < 1e-3
    # the comparison has teeth: another mel range is far off
    other = VectorisedExtractor(KnfFbankConfig()).extract(x, 16000)
    assert _relative_error(other, reference) > 100 * _relative_error(ours, reference)
    assert VectorisedExtractor(config).extract(x[:399], 16000).shape == (0, 80)


def test_unsupported_options_fall_back_to_kaldi_native_fbank():
    assert not supports(KnfMfccConfig(dither=1.0)) and not supports(KnfMfccConfig(snip_edges=False))
    with pytest.raises(ValueError, match="vectorised"):
        VectorisedExtractor(KnfMfccConfig(window_type="blackman"))
    assert isinstance(FeatureConfig(options={"dither": 1.0}).extractor(vectorised=True), KnfMfcc)
    assert isinstance(FeatureConfig().extractor(vectorised=True), VectorisedExtractor)
    assert isinstance(FeatureConfig().extractor(), KnfMfcc)
    with pytest.raises(ValueError, match="8000 Hz"):
        FeatureConfig().extractor(vectorised=True).extract(_audio(1.0), 8000)
