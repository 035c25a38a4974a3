"""Mel spectrogram of the sound encoder (thesis 5.6), computed with ``torch.stft``.

The thesis uses torchaudio's ``MelSpectrogram`` (16 kHz, window 512, hop 256, 128 bins, no
padding); torchaudio is not usable here, so this module builds the same transform: a Hann
window, the power spectrum, triangular filters on the HTK mel scale from 0 Hz to Nyquist
(no filter normalisation), and optionally the log.  Without padding a signal of ``n`` samples
gives ``1 + (n - win) // hop`` frames; frame ``k`` covers samples ``[k hop, k hop + win)``.
"""

from __future__ import annotations

import torch


def hz_to_mel(f: torch.Tensor) -> torch.Tensor:
    return 2595.0 * torch.log10(1.0 + f / 700.0)


def mel_to_hz(m: torch.Tensor) -> torch.Tensor:
    return 700.0 * (10.0 ** (m / 2595.0) - 1.0)


def mel_filterbank(num_bins: int, n_fft: int, sample_rate: int, f_min: float = 0.0, f_max: float = 0.0) -> torch.Tensor:
    """(n_fft // 2 + 1, num_bins) triangular filters, HTK mel scale, peak 1."""
    f_max = f_max or sample_rate / 2
    freqs = torch.linspace(0, sample_rate / 2, n_fft // 2 + 1, dtype=torch.float64)
    mel_points = torch.linspace(
        float(hz_to_mel(torch.tensor(f_min))), float(hz_to_mel(torch.tensor(f_max))), num_bins + 2, dtype=torch.float64
    )
    hz = mel_to_hz(mel_points)
    lower, center, upper = hz[:-2], hz[1:-1], hz[2:]
    up = (freqs[:, None] - lower[None, :]) / (center - lower)[None, :]
    down = (upper[None, :] - freqs[:, None]) / (upper - center)[None, :]
    return torch.clamp(torch.minimum(up, down), min=0.0).float()


class MelSpectrogram(torch.nn.Module):
    """(N, samples) or (samples,) float waveform -> (..., frames, num_bins)."""

    def __init__(
        self,
        sample_rate: int = 16000,
        win_length: int = 512,
        hop_length: int = 256,
        num_bins: int = 128,
        log: bool = True,
    ) -> None:
        super().__init__()
        self.sample_rate, self.win_length, self.hop_length, self.log = sample_rate, win_length, hop_length, log
        self.register_buffer("window", torch.hann_window(win_length), persistent=False)
        self.register_buffer("filters", mel_filterbank(num_bins, win_length, sample_rate), persistent=False)

    def num_frames(self, num_samples: int) -> int:
        return 0 if num_samples < self.win_length else 1 + (num_samples - self.win_length) // self.hop_length

    def forward(self, wave: torch.Tensor) -> torch.Tensor:
        if wave.size(-1) < self.win_length:
            raise ValueError(f"need at least {self.win_length} samples, got {wave.size(-1)}")
        spec = torch.stft(
            wave,
            n_fft=self.win_length,
            hop_length=self.hop_length,
            win_length=self.win_length,
            window=self.window,
            center=False,
            return_complex=True,
        )  # (..., F, T)
        power = spec.real.pow(2) + spec.imag.pow(2)
        mel = torch.matmul(power.transpose(-1, -2), self.filters)  # (..., T, bins)
        return torch.log(mel + 1e-6) if self.log else mel
