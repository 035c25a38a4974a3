"""Kaldi MFCC / log-mel features computed for all frames at once with PyTorch.

kaldi-native-fbank computes one frame at a time (~16 us per 10 ms frame on one thread of this
machine, a tenth of the pipeline's time at paper size); the same float32 arithmetic over a
(frames, window) matrix, with one batched real FFT, takes about a fifth of that and honours
``torch.set_num_threads``.  The values equal kaldi-native-fbank's to float
tolerance (tests/features/test_vectorised.py), so the inference pipeline uses these for the
configurations they cover (``supports``) and kaldi-native-fbank for the rest (dither, edges
that are not snipped, energy, other windows).  Manifests are always written by kaldi-native-fbank.

The steps follow Kaldi's ``compute-mfcc-feats``: per frame remove the DC offset, pre-emphasise
(the first sample against itself), window, zero-pad to a power of two, power spectrum, triangular
mel filters on the mel scale ``1127 ln(1 + f / 700)`` over the FFT bins below Nyquist, log floored
at float32 epsilon; for MFCC an orthonormal DCT-II and the sine lifter.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

from punct.features.extractor import INT16_SCALE, KnfFbankConfig, KnfMfccConfig, check_rate

WINDOWS = ("povey", "hanning", "hamming", "rectangular")
LOG_FLOOR = float(np.finfo(np.float32).eps)


def supports(config: KnfMfccConfig | KnfFbankConfig) -> bool:
    """True when the vectorised computation reproduces kaldi-native-fbank for ``config``."""
    return config.snip_edges and config.dither == 0.0 and not config.use_energy and config.window_type in WINDOWS


def mel_scale(hz: np.ndarray) -> np.ndarray:
    return 1127.0 * np.log1p(np.asarray(hz, dtype=np.float64) / 700.0)


@lru_cache(maxsize=8)
def window_function(kind: str, length: int) -> np.ndarray:
    n = np.arange(length, dtype=np.float64)
    if kind == "rectangular":
        return np.ones(length)
    if kind == "hamming":
        return 0.54 - 0.46 * np.cos(2 * np.pi * n / (length - 1))
    hann = 0.5 - 0.5 * np.cos(2 * np.pi * n / (length - 1))
    return hann**0.85 if kind == "povey" else hann


@lru_cache(maxsize=8)
def mel_filters(num_bins: int, fft_size: int, sampling_rate: int, low_freq: float, high_freq: float) -> np.ndarray:
    """(fft_size // 2, num_bins) triangular weights; ``high_freq <= 0`` is an offset from Nyquist."""
    nyquist = sampling_rate / 2
    high = high_freq if high_freq > 0 else nyquist + high_freq
    if not 0 <= low_freq < high <= nyquist:
        raise ValueError(f"mel range [{low_freq}, {high}] Hz must lie in [0, {nyquist}] Hz")
    mel_low, mel_high = mel_scale(low_freq), mel_scale(high)
    step = (mel_high - mel_low) / (num_bins + 1)
    left = mel_low + step * np.arange(num_bins)[None, :]
    centre, right = left + step, left + 2 * step
    mel = mel_scale(np.arange(fft_size // 2) * sampling_rate / fft_size)[:, None]
    rising = (mel - left) / (centre - left)
    falling = (right - mel) / (right - centre)
    inside = (mel > left) & (mel < right)
    return np.where(inside, np.where(mel <= centre, rising, falling), 0.0)


@lru_cache(maxsize=8)
def dct_with_lifter(num_ceps: int, num_bins: int, lifter: float) -> np.ndarray:
    """(num_bins, num_ceps): the first ``num_ceps`` rows of the orthonormal DCT-II, liftered, transposed."""
    k = np.arange(num_ceps)[:, None]
    j = np.arange(num_bins)[None, :]
    dct = np.sqrt(2.0 / num_bins) * np.cos(np.pi / num_bins * (j + 0.5) * k)
    dct[0] = np.sqrt(1.0 / num_bins)
    if lifter != 0.0:
        dct *= (1.0 + 0.5 * lifter * np.sin(np.pi * np.arange(num_ceps) / lifter))[:, None]
    return dct.T


def frame_sizes(config) -> tuple[int, int, int]:
    """Window length, shift and FFT size in samples."""
    length = int(config.sampling_rate * config.frame_length_ms / 1000)
    shift = int(config.sampling_rate * config.frame_shift_ms / 1000)
    return length, shift, 1 << max(length - 1, 1).bit_length()


def log_mel(samples: np.ndarray, config: KnfMfccConfig | KnfFbankConfig) -> torch.Tensor:
    """(frames, num_mel_bins) float32 log mel energies of mono ``samples`` in [-1, 1]."""
    if not supports(config):
        raise ValueError(f"the vectorised features do not cover {config}; use kaldi-native-fbank")
    samples = np.asarray(samples, dtype=np.float32)
    if samples.ndim == 2:
        if samples.shape[0] != 1:
            raise ValueError(f"expected mono audio, got an array of shape {samples.shape}")
        samples = samples[0]
    length, shift, fft_size = frame_sizes(config)
    if len(samples) < length:
        return torch.zeros(0, config.num_mel_bins)
    waveform = torch.from_numpy(samples)
    if config.scale_to_int16:
        waveform = waveform * INT16_SCALE
    frames = waveform.unfold(0, length, shift)  # snip_edges: only whole windows
    if config.remove_dc_offset:
        frames = frames - frames.mean(dim=1, keepdim=True)
    if config.preemph_coeff != 0.0:
        frames = torch.cat(
            [frames[:, :1] * (1.0 - config.preemph_coeff), frames[:, 1:] - config.preemph_coeff * frames[:, :-1]], dim=1
        )
    frames = frames * _tensor(window_function(config.window_type, length))
    spectrum = torch.fft.rfft(frames, fft_size)[:, : fft_size // 2]
    power = spectrum.real.square() + spectrum.imag.square()
    filters = mel_filters(config.num_mel_bins, fft_size, config.sampling_rate, config.low_freq, config.high_freq)
    return torch.log(torch.clamp(power @ _tensor(filters), min=LOG_FLOOR))


def _tensor(matrix: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(matrix.astype(np.float32))


class VectorisedExtractor:
    """``extract(samples, sampling_rate)`` like the lhotse extractors of :mod:`punct.features.extractor`."""

    def __init__(self, config: KnfMfccConfig | KnfFbankConfig) -> None:
        if not supports(config):
            raise ValueError(f"the vectorised features do not cover {config}; use kaldi-native-fbank")
        self.config = config

    def extract(self, samples: np.ndarray, sampling_rate: int) -> np.ndarray:
        check_rate(self.config, sampling_rate)
        with torch.inference_mode():
            energies = log_mel(samples, self.config)
            if isinstance(self.config, KnfMfccConfig):
                c = self.config
                energies = energies @ _tensor(dct_with_lifter(c.num_ceps, c.num_mel_bins, c.cepstral_lifter))
        return energies.numpy()
