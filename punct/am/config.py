"""The acoustic model's configs: the network (``conf/am*.yaml`` ``model:``) and its training (the rest of the file).

Plain dataclasses without torch, so that a step that only reads a config (``punct.bin.check_am_wer`` after stage
2) starts in a fraction of a second instead of the ~3 s of importing torch; :mod:`punct.am.model` and
:mod:`punct.am.train` import them from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class AmModelConfig:
    """Model hyper-parameters (conf/am.yaml ``model:``)."""

    feat_dim: int = 40
    splice: tuple[int, ...] = (-1, 0, 1)
    dim: int = 1024
    bottleneck_dim: int = 128
    time_strides: tuple[int, ...] = (1, 1, 1, 0, 3, 3, 3, 3, 3, 3, 3, 3)  # tdnnf2..tdnnf13
    prefinal_small_dim: int = 256
    prefinal_big_dim: int = 1024
    bypass_scale: float = 0.66
    dropout: float = 0.0
    num_tokens: int = 0  # set from the token table
    # k: the layers from the first whose context (and every later one's) is a multiple of k run on every
    # k-th frame, their outputs interpolated back to every frame (1: all layers at 100 frames/s)
    frame_subsample: int = 1


@dataclass(frozen=True)
class AmConfig:
    """conf/am.yaml: the model (nested ``model:``) and its training."""

    model: AmModelConfig = field(default_factory=AmModelConfig)
    num_epochs: int = 10
    lr: float = 2e-3  # Adam peak learning rate
    lr_decay: float = 0.85  # learning rate factor per epoch after the first
    warmup_steps: int = 300
    weight_decay: float = 1e-6
    grad_clip: float = 5.0
    # The CTC loss reads every k-th output frame (Kaldi's chain models: frame-subsampling-factor 3).
    # At 100 frames/s (k = 1) the model sits on the CTC blank plateau for many epochs (the mini
    # AM for all 32); k = 3 leaves it within 2-3 epochs.  The network is convolutional, so every frame
    # still gets the trained function: at model.frame_subsample 1 decoding, alignment and layer-12 compute
    # all 100 frames/s; at model.frame_subsample k (which must then be this k) they compute the frames the
    # loss read and interpolate the rest (punct.am.model).
    ctc_subsample: int = 1
    max_duration: float = 200.0  # seconds of audio per batch (per rank)
    num_buckets: int = 10
    spec_augment: bool = True
    num_time_masks: int = 2
    max_time_mask: int = 20  # frames
    num_freq_masks: int = 2
    max_freq_mask: int = 6  # feature bins
    log_interval: int = 50  # batches between log lines
    num_workers: int = 0  # DataLoader processes reading features (0: the training process reads them)
    # > 0: a mid-epoch checkpoint epoch-E-batch-B.pt every this many optimizer steps, the newest kept, that --resume
    # continues from to the uninterrupted run's weights (punct.training.resume); 0: epoch-N.pt only
    save_every_n_steps: int = 0
    amp: str = "none"  # mixed precision (none, bf16, fp16, auto, fastest); --amp overrides it
    # > 1: after the last epoch the weights of the last N epochs are averaged (icefall's --avg), and the
    # average is the model later stages read (best-valid-loss.pt), and only the averaged epochs' dev loss is
    # computed; 1: every epoch's dev loss, and the epoch with the lowest is the model.
    average_epochs: int = 1
    # With average_epochs > 1: false computes only the average's dev loss, not the averaged single epochs'
    # (they decide nothing; on the mini corpus they cost ~50 s of stage 2's ~11 minutes).
    averaged_epochs_dev_loss: bool = True
    # Stage 1/2 stops when the greedy dev WER (wer_dev.txt) is above this (%): an AM that never left the CTC blank
    # plateau recognises almost no words, and the later stages would run on nothing (punct.am.dev_wer).
    # None: no check (the toy AMs of the tiny corpora).
    max_dev_wer: float | None = 90.0
    # While the averaged model's dev WER is above max_dev_wer, stage 2 trains ``extra_epochs`` more (resumed from the
    # last epoch-N.pt: the learning rate does not depend on num_epochs, so these are the epochs a longer run trains)
    # and averages again, up to ``max_epochs`` in all, before it stops: for a seed that leaves the CTC blank plateau
    # late.  0: no extra epochs.
    extra_epochs: int = 0
    max_epochs: int = 0

    def __post_init__(self) -> None:
        k = self.model.frame_subsample
        if self.extra_epochs < 0 or self.max_epochs < 0:
            raise ValueError(f"extra_epochs and max_epochs must be >= 0, got {self.extra_epochs}, {self.max_epochs}")
        if k < 1 or self.ctc_subsample < 1:
            raise ValueError(f"model.frame_subsample and ctc_subsample must be >= 1, got {k} and {self.ctc_subsample}")
        if k > 1 and self.ctc_subsample != k:
            raise ValueError(
                f"model.frame_subsample {k} computes frames 0, {k}, {2 * k}, ... only: the CTC loss must read those "
                f"(ctc_subsample {k}), got ctc_subsample {self.ctc_subsample}"
            )
