"""Frame geometry of the cross-attention model's audio side: the time window of each audio frame and the word
it overlaps most, for the conv sound encoder's latent frames (:class:`SoundGeometry`) and for the frozen acoustic
model's pooled frames (:class:`AmFrameGeometry`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from punct.models.cross_attention.config import MmConfig

NO_WORD = -1  # word index of special tokens, padding and frames that overlap no word


# ---- geometry: mel frames -> latent frames -> times ----------------------------------------


@dataclass(frozen=True)
class SoundGeometry:
    """Frame counts and times of the sound encoder (no padding anywhere).

    Latent frame ``j`` reads mel frames ``[j S, j S + R)`` where ``S`` is the product of the
    strides and ``R`` the receptive field in mel frames; its *time window* is the stride
    ``S`` hops wide and centred on the centre of its receptive field (in seconds from the
    segment start).
    """

    win_length: int
    hop_length: int
    sample_rate: int
    kernels: tuple[int, ...]
    strides: tuple[int, ...]

    @staticmethod
    def from_config(cfg: MmConfig) -> SoundGeometry:
        if not (len(cfg.conv_channels) == len(cfg.conv_kernels) == len(cfg.conv_strides)):
            raise ValueError("conv_channels, conv_kernels and conv_strides must have the same length")
        return SoundGeometry(
            cfg.win_length, cfg.hop_length, cfg.sample_rate, tuple(cfg.conv_kernels), tuple(cfg.conv_strides)
        )

    @property
    def stride(self) -> int:
        """Mel frames between consecutive latent frames."""
        return int(np.prod(self.strides))

    @property
    def receptive_field(self) -> int:
        """Mel frames read by one latent frame."""
        r, jump = 1, 1
        for k, s in zip(self.kernels, self.strides):
            r += (k - 1) * jump
            jump *= s
        return r

    @property
    def min_mel_frames(self) -> int:
        """Mel frames needed for one latent frame."""
        return self.receptive_field

    def num_latent(self, num_mel: int) -> int:
        n = num_mel
        for k, s in zip(self.kernels, self.strides):
            n = (n - k) // s + 1 if n >= k else 0
        return max(n, 0)

    def frame_windows(self, num_frames: int) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) seconds of each latent frame's time window."""
        hop_s = self.hop_length / self.sample_rate
        span = (self.receptive_field - 1) * self.hop_length + self.win_length
        centre = (np.arange(num_frames) * self.stride * self.hop_length + span / 2) / self.sample_rate
        half = self.stride * hop_s / 2
        return centre - half, centre + half

    def frame_words(self, starts: Sequence[float], ends: Sequence[float], num_frames: int) -> np.ndarray:
        """Word index of each latent frame: the word with the largest overlap with the frame's
        time window, ``NO_WORD`` when it overlaps none (silence)."""
        return words_by_overlap(*self.frame_windows(num_frames), starts, ends)


@dataclass(frozen=True)
class AmFrameGeometry:
    """Frame counts and times of the acoustic-model frames (``sound_encoder: am``).

    The AM's feature frame ``t`` covers ``[t shift, t shift + length)`` seconds of the segment
    (Kaldi's snip_edges: ``1 + (samples - window) // hop`` frames), and its layer-k output frame ``t``
    is the model's view of feature frame ``t`` (:mod:`punct.am.model`).  Groups of ``stride``
    consecutive frames are averaged into one audio frame; pooled frame ``j``'s time window is the
    ``stride`` hops wide span around the centres of its feature frames.
    """

    frame_length: float  # seconds
    frame_shift: float
    sample_rate: int
    stride: int = 1

    @property
    def window_samples(self) -> int:
        return int(round(self.frame_length * self.sample_rate))

    @property
    def shift_samples(self) -> int:
        return int(round(self.frame_shift * self.sample_rate))

    @property
    def min_samples(self) -> int:
        """Samples needed for one pooled frame."""
        return self.window_samples + (self.stride - 1) * self.shift_samples

    def num_feature_frames(self, num_samples: int) -> int:
        return 0 if num_samples < self.window_samples else 1 + (num_samples - self.window_samples) // self.shift_samples

    def num_frames(self, num_samples: int) -> int:
        """Pooled frames of a segment of ``num_samples`` (a last incomplete group is dropped)."""
        return self.num_feature_frames(num_samples) // self.stride

    def frame_windows(self, num_frames: int) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) seconds of each pooled frame's time window."""
        first_centre = np.arange(num_frames) * self.stride * self.frame_shift + self.frame_length / 2
        start = first_centre - self.frame_shift / 2
        return start, start + self.stride * self.frame_shift

    def frame_words(self, starts: Sequence[float], ends: Sequence[float], num_frames: int) -> np.ndarray:
        """Word index of each pooled frame (largest overlap, ``NO_WORD`` for none), as :class:`SoundGeometry`."""
        return words_by_overlap(*self.frame_windows(num_frames), starts, ends)


def words_by_overlap(
    frame_starts: np.ndarray, frame_ends: np.ndarray, starts: Sequence[float], ends: Sequence[float]
) -> np.ndarray:
    """Per frame window: the index of the word (``[starts[i], ends[i])``) it overlaps most, ``NO_WORD`` if none."""
    num_frames = len(frame_starts)
    if not len(starts) or not num_frames:
        return np.full(num_frames, NO_WORD, dtype=np.int64)
    ws, we = np.asarray(starts, dtype=np.float64), np.asarray(ends, dtype=np.float64)
    overlap = np.clip(
        np.minimum(frame_ends[:, None], we[None, :]) - np.maximum(frame_starts[:, None], ws[None, :]), 0.0, None
    )
    best = overlap.argmax(axis=1)
    return np.where(overlap.max(axis=1) > 0, best, NO_WORD).astype(np.int64)
