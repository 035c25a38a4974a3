"""The recipe's trained CTC acoustic model as the frozen audio encoder of the cross-attention model
(``sound_encoder: am``; the thesis' audio-encoder baseline, 5.5, with the stage-1 TDNN for wav2vec2).

A segment's samples -> MFCC with the AM's own feature config (``<am_dir>/mfcc.yaml``) -> CMVN over the
segment's own frames (the AM was trained with per-recording CMVN; a segment is the recording the
cross-attention model sees) -> layer ``am_layer`` of the AM, run alone on the segment in eval mode
without gradients (as :func:`punct.am.infer.run_model`, so the edges are padded as in the EfficientPunct
dump of stage 5) -> groups of ``am_frame_stride`` frames averaged
(:class:`punct.models.cross_attention.geometry.AmFrameGeometry` gives their times).

The AM never trains: it is not part of the model's parameters, its BatchNorm layers stay in eval mode,
and the dataset computes each segment's frames once and keeps them (float16) for the following
epochs, so an epoch costs about what the conv encoder's does after the first.  The cache lives in the
process that reads the dataset: with ``num_workers`` > 0 each epoch's new workers start without it and run
the AM again (the recipe's configs read in the main process, ``num_workers: 0``).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import torch

from punct.am.checkpoint import load_am
from punct.am.infer import run_model
from punct.am.model import TdnnAcousticModel
from punct.features import FeatureConfig
from punct.features.cmvn import SpeakerCmvn
from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.geometry import AmFrameGeometry

AM_CHECKPOINT = "best-valid-loss.pt"


class AmFrames:
    """samples -> (frames, dim) pooled layer-k outputs of a frozen acoustic model."""

    def __init__(
        self,
        model: TdnnAcousticModel,
        feat_config: FeatureConfig,
        layer: int,
        stride: int,
        where: str = "acoustic model",
    ) -> None:
        if not 0 <= layer < model.num_layers:
            raise ValueError(
                f"{where}: am_layer must be in 0..{model.num_layers - 1} ({model.layer_names()}), got {layer}"
            )
        self.model = model.eval().requires_grad_(False)
        self.feat_config = feat_config
        self.extractor = feat_config.extractor()
        self.layer = layer
        options = feat_config.options
        self.geometry = AmFrameGeometry(
            float(options.get("frame_length_ms", 25.0)) / 1000,
            float(options.get("frame_shift_ms", 10.0)) / 1000,
            int(options.get("sampling_rate", 16000)),
            stride,
        )
        with torch.no_grad():
            self.dim = int(self.model(torch.zeros(1, 1, model.config.feat_dim), layer=layer).shape[-1])

    @property
    def sample_rate(self) -> int:
        return self.geometry.sample_rate

    def __call__(self, samples: np.ndarray) -> np.ndarray:
        """(num_samples,) float waveform at ``sample_rate`` -> (geometry.num_frames(num_samples), dim) float32."""
        if len(samples) < self.geometry.min_samples:
            raise ValueError(f"need at least {self.geometry.min_samples} samples for one AM frame, got {len(samples)}")
        feats = self.extractor.extract(np.asarray(samples, dtype=np.float32), self.sample_rate)
        cmvn = SpeakerCmvn.accumulate([("segment", feats)], norm_vars=self.feat_config.norm_vars)
        self.model.eval()  # never train mode: BatchNorm running statistics must not move
        frames = run_model(self.model, cmvn.apply("segment", feats), layer=self.layer)
        return pool_frames(frames, self.geometry.stride)


def pool_frames(frames: np.ndarray, stride: int) -> np.ndarray:
    """(T, C) -> (T // stride, C): the mean of each group of ``stride`` consecutive rows (a last partial group
    is dropped)."""
    num = frames.shape[0] // stride
    return frames[: num * stride].reshape(num, stride, frames.shape[1]).mean(axis=1)


@functools.lru_cache(maxsize=4)
def load_am_frames(am_dir: str, layer: int, stride: int) -> AmFrames:
    """The AM of an AM folder (``best-valid-loss.pt`` and ``mfcc.yaml``) as an :class:`AmFrames`; one per
    (folder, layer, stride) in a process, shared by the splits."""
    model, _, feat_config = load_am(am_dir, AM_CHECKPOINT)
    return AmFrames(model, feat_config, layer, stride, where=str(Path(am_dir) / AM_CHECKPOINT))


def am_frames_of(cfg: MmConfig) -> AmFrames:
    """The frozen AM of ``cfg`` (``sound_encoder: am``): a clear error when ``am_dir`` is not an AM folder."""
    if not cfg.am_dir:
        raise ValueError("sound_encoder am needs am_dir (the recipe's exp/am, or --am-dir)")
    if not (Path(cfg.am_dir) / AM_CHECKPOINT).is_file():
        raise FileNotFoundError(f"{Path(cfg.am_dir) / AM_CHECKPOINT}: no such file (am_dir of sound_encoder am)")
    return load_am_frames(str(Path(cfg.am_dir).resolve()), cfg.am_layer, cfg.am_frame_stride)
