"""Kaldi-compatible MFCC / fbank through kaldi-native-fbank, as lhotse feature extractors.

lhotse ships no kaldi-native-fbank extractor; these two register themselves under the
names ``kaldi-native-mfcc`` and ``kaldi-native-fbank``, so a features manifest written with
them rebuilds the extractor with ``FeatureExtractor.from_dict``.

Defaults are Kaldi's TED-LIUM 3 high-resolution MFCC (conf/mfcc_hires.conf): 40 cepstra
from 40 mel bins between 40 Hz and Nyquist-200 Hz, 25 ms windows every 10 ms, no dither,
``snip_edges=True``, so ``num_frames = 1 + (num_samples - 400) // 160`` at 16 kHz (the
project's frame convention).  Samples in [-1, 1] are scaled to the 16-bit range first,
as Kaldi reads them (this shifts c0 only).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import kaldi_native_fbank as knf
import numpy as np
from lhotse.features.base import FeatureExtractor, register_extractor

INT16_SCALE = 32768.0


class _DictConfig:
    """The ``to_dict``/``from_dict`` pair lhotse calls on an extractor's config to store and rebuild it."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        return cls(**data)


@dataclass(frozen=True)
class KnfMfccConfig(_DictConfig):
    """MFCC options (Kaldi ``compute-mfcc-feats`` names in snake case)."""

    sampling_rate: int = 16000
    frame_length_ms: float = 25.0
    frame_shift_ms: float = 10.0
    num_ceps: int = 40
    num_mel_bins: int = 40
    low_freq: float = 40.0
    high_freq: float = -200.0  # <= 0: offset from Nyquist (Kaldi convention)
    dither: float = 0.0
    preemph_coeff: float = 0.97
    remove_dc_offset: bool = True
    window_type: str = "povey"
    snip_edges: bool = True
    use_energy: bool = False
    cepstral_lifter: float = 22.0
    scale_to_int16: bool = True


@dataclass(frozen=True)
class KnfFbankConfig(_DictConfig):
    """Log mel filterbank options (Kaldi ``compute-fbank-feats``)."""

    sampling_rate: int = 16000
    frame_length_ms: float = 25.0
    frame_shift_ms: float = 10.0
    num_mel_bins: int = 80
    low_freq: float = 20.0
    high_freq: float = 0.0
    dither: float = 0.0
    preemph_coeff: float = 0.97
    remove_dc_offset: bool = True
    window_type: str = "povey"
    snip_edges: bool = True
    use_energy: bool = False
    scale_to_int16: bool = True


def _frame_options(config, opts) -> None:
    frame = opts.frame_opts
    frame.samp_freq = float(config.sampling_rate)
    frame.frame_length_ms = config.frame_length_ms
    frame.frame_shift_ms = config.frame_shift_ms
    frame.dither = config.dither
    frame.preemph_coeff = config.preemph_coeff
    frame.remove_dc_offset = config.remove_dc_offset
    frame.window_type = config.window_type
    frame.snip_edges = config.snip_edges
    mel = opts.mel_opts
    mel.num_bins = config.num_mel_bins
    mel.low_freq = config.low_freq
    mel.high_freq = config.high_freq
    opts.use_energy = config.use_energy


WAVEFORM_BLOCK_SECONDS = 10


def _run(computer, samples: np.ndarray, config, dim: int) -> np.ndarray:
    samples = np.asarray(samples, dtype=np.float32)
    if samples.ndim == 2:
        if samples.shape[0] != 1:
            raise ValueError(f"expected mono audio, got an array of shape {samples.shape}")
        samples = samples[0]
    if config.scale_to_int16:
        samples = samples * INT16_SCALE
    # In blocks: the computer takes a Python list (32 bytes a sample), and the frames do not depend on how the
    # waveform arrives, so a whole recording costs one block's list, not hours of it.
    block = WAVEFORM_BLOCK_SECONDS * int(config.sampling_rate)
    for start in range(0, max(len(samples), 1), block):
        computer.accept_waveform(float(config.sampling_rate), samples[start : start + block].tolist())
    computer.input_finished()
    n = computer.num_frames_ready
    if n == 0:
        return np.zeros((0, dim), dtype=np.float32)
    return np.stack([np.asarray(computer.get_frame(i), dtype=np.float32) for i in range(n)])


def check_rate(config, sampling_rate: int) -> None:
    if sampling_rate != config.sampling_rate:
        raise ValueError(
            f"audio at {sampling_rate} Hz but the extractor is configured for {config.sampling_rate} Hz; "
            "resample the recordings first (lhotse: cuts.resample(...))"
        )


class _KnfExtractor(FeatureExtractor):
    """What both kaldi-native-fbank extractors share; a subclass builds its online computer."""

    def _online_computer(self) -> Any:
        raise NotImplementedError

    def extract(self, samples: np.ndarray, sampling_rate: int) -> np.ndarray:
        check_rate(self.config, sampling_rate)
        return _run(self._online_computer(), samples, self.config, self.feature_dim(sampling_rate))

    @property
    def frame_shift(self) -> float:
        return self.config.frame_shift_ms / 1000.0


# lhotse registration: FeatureExtractor.from_dict finds each class by its ``name``.
@register_extractor
class KnfMfcc(_KnfExtractor):
    """40-dim hires MFCC by kaldi-native-fbank; (T, num_ceps) float32."""

    name = "kaldi-native-mfcc"
    config_type = KnfMfccConfig

    def _online_computer(self) -> knf.OnlineMfcc:
        opts = knf.MfccOptions()
        _frame_options(self.config, opts)
        opts.num_ceps = self.config.num_ceps
        opts.cepstral_lifter = self.config.cepstral_lifter
        return knf.OnlineMfcc(opts)

    def feature_dim(self, sampling_rate: int) -> int:
        return self.config.num_ceps


@register_extractor
class KnfFbank(_KnfExtractor):
    """Log mel filterbank by kaldi-native-fbank; (T, num_mel_bins) float32."""

    name = "kaldi-native-fbank"
    config_type = KnfFbankConfig

    def _online_computer(self) -> knf.OnlineFbank:
        opts = knf.FbankOptions()
        _frame_options(self.config, opts)
        return knf.OnlineFbank(opts)

    def feature_dim(self, sampling_rate: int) -> int:
        return self.config.num_mel_bins


def expected_num_frames(
    num_samples: int, sampling_rate: int = 16000, frame_length_ms: float = 25.0, frame_shift_ms: float = 10.0
) -> int:
    """Frames with ``snip_edges=True``: ``1 + (num_samples - window) // shift`` (0 if shorter than a window)."""
    window = int(round(sampling_rate * frame_length_ms / 1000))
    shift = int(round(sampling_rate * frame_shift_ms / 1000))
    return 0 if num_samples < window else 1 + (num_samples - window) // shift


def make_extractor(kind: str, **options: Any) -> FeatureExtractor:
    """``mfcc`` or ``fbank`` with config overrides."""
    if kind == "mfcc":
        return KnfMfcc(KnfMfccConfig(**options))
    if kind == "fbank":
        return KnfFbank(KnfFbankConfig(**options))
    raise ValueError(f"unknown feature type {kind!r}; choose mfcc or fbank")
