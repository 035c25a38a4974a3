"""The punctuation TDNN's training config (conf/tdnn*.yaml): the network (``model:``), how examples are made,
balanced and batched, the optimizer, the label scheme and the dev selection.

Apart from :mod:`punct.models.punct_tdnn.train` so that a step that only reads a config or a checkpoint
(decoding, the ensemble, ``punctuate``) imports neither the training loop nor its data pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from punct.labels import check_first_word, label_scheme
from punct.models.punct_tdnn.sampling import BALANCE_MODES
from punct.models.punct_tdnn.tdnn import TdnnConfig
from punct.training.batch_norm import BATCH_NORM_STATS
from punct.training.truncation import RightTruncation


@dataclass(frozen=True)
class TrainTdnnConfig:
    """conf/tdnn.yaml (paper values) and conf/tdnn_mini.yaml."""

    model: TdnnConfig = field(default_factory=TdnnConfig)  # input_dim is replaced by the shards' widths
    # window: one 301-frame window per word, cut at load time (EfficientPunct); utterance: the conv stack
    # runs once per utterance and each word reads its slice (same network, ~window/words-per-window less
    # compute; BatchNorm statistics then come from whole utterances, and balance becomes class weights).
    example_unit: str = "window"
    utterances_per_batch: int = 8  # example_unit=utterance: utterances per batch (per rank)
    balance: str = "oversample"  # oversample (EfficientPunct), weighted or none; see punct.models.punct_tdnn.sampling
    optimizer: str = "sgd"  # sgd or adam
    lr: float = 1e-5
    lr_decay: float = 1.0  # learning rate factor per epoch after the first (1: constant, as the authors' code)
    momentum: float = 0.9  # sgd only
    weight_decay: float = 0.0
    batch_size: int = 128  # per rank
    epochs: int = 25
    loss_reduction: str = "sum"  # sum over the batch (the authors' code) or mean
    epoch_limit: int = 0  # >0: at most this many examples per epoch (after balancing), for quick runs
    group_utterances: int = 0  # >0: shuffle in blocks of this many utterances (cache locality at scale)
    cache_utterances: int = 256  # LRU cache of utterance matrices per data-loader worker
    # >0: each loader worker reads each of its utterances once per epoch and shuffles their windows in a buffer
    # of this many utterances (held outside the cache); 0: its windows in the epoch order, read through the cache
    # (punct.models.punct_tdnn.reader)
    shuffle_buffer: int = 0
    num_workers: int = 2  # DataLoader workers cutting windows
    prefetch_factor: int = 4  # batches prefetched per worker
    log_interval: int = 50  # batches between loss log lines
    # > 0: a mid-epoch checkpoint epoch-E-batch-B.pt every this many optimizer steps, the newest kept, that --resume
    # continues from to the uninterrupted run's weights (punct.training.resume); 0: epoch-N.pt only
    save_every_n_steps: int = 0
    max_class_weight: float = 0.0  # utterance mode: >0 caps the class weights (punct9's rare marks would weigh ~700)
    # utterance mode: weight = (majority count / class count) ** class_weight_power; 1 is oversampling's expected
    # effect, 0.5 a softer balance that keeps the rare marks' precision
    class_weight_power: float = 1.0
    label_set: str = (
        "punct4"  # a scheme of punct.labels.LABEL_SCHEMES: punct4 (4 classes) or itn (9 punctuation + 2 case)
    )
    case_weight: float = 0.5  # weight of the case loss when the model has a case head (punctuation: 1 - case_weight)
    dev_metric: str = (
        "overall_f1"  # checkpoint selection on the punctuation head: overall_f1 or macro_f1 (non-blank mean)
    )
    # each cut's first word: include (train and score every word, EfficientPunct) or exclude (neither trained nor
    # scored, the ParCzech thesis; conf/tdnn*.yaml of egs/parczech); see punct.labels
    first_word: str = "include"
    # BatchNorm statistics used at evaluation: ema (PyTorch's running average, momentum 0.1: about the last 10
    # batches, as the authors' code) or recompute (after each epoch, the plain average over its last
    # batch_norm_batches batches through its final weights; the training itself is unchanged).  With ema and
    # 8-utterance batches the statistics follow the last few talks read; see punct.training.batch_norm.
    batch_norm_stats: str = "ema"
    batch_norm_batches: int = 0  # recompute: the epoch's last this many batches, kept in memory (0: all of them)
    # live captions: this share of the training examples (utterances or windows) is cut after a word's end plus
    # 0..right_truncation_frames frames (0: the model's right context), as punctuate --stream shows a word at a
    # short latency (punct.models.punct_tdnn.truncation); 0: every example whole (EfficientPunct)
    right_truncation: float = 0.0
    right_truncation_frames: int = 0

    def __post_init__(self) -> None:
        check_first_word(self.first_word)
        if self.batch_norm_stats not in BATCH_NORM_STATS:
            raise ValueError(f"batch_norm_stats must be one of {BATCH_NORM_STATS}, got {self.batch_norm_stats!r}")
        if self.batch_norm_batches < 0:
            raise ValueError(f"batch_norm_batches must be >= 0, got {self.batch_norm_batches}")
        if self.balance not in BALANCE_MODES:
            raise ValueError(f"balance must be one of {BALANCE_MODES}, got {self.balance!r}")
        if self.example_unit not in ("window", "utterance"):
            raise ValueError(f"example_unit must be window or utterance, got {self.example_unit!r}")
        if self.shuffle_buffer < 0:
            raise ValueError(f"shuffle_buffer must be >= 0, got {self.shuffle_buffer}")
        if self.optimizer not in ("sgd", "adam"):
            raise ValueError(f"optimizer must be sgd or adam, got {self.optimizer!r}")
        punct_set, case_set = label_scheme(self.label_set)
        classes = punct_set.classes
        case_classes = case_set.classes if case_set is not None else None
        if self.model.num_classes != len(classes):
            raise ValueError(
                f"label_set {self.label_set} has {len(classes)} classes, model.num_classes is {self.model.num_classes}"
            )
        if self.model.case_classes and (case_classes is None or self.model.case_classes != len(case_classes)):
            raise ValueError(f"label_set {self.label_set} has no {self.model.case_classes}-class case labels")
        if self.dev_metric not in ("overall_f1", "macro_f1"):
            raise ValueError(f"dev_metric must be overall_f1 or macro_f1, got {self.dev_metric!r}")
        if not 0.0 <= self.case_weight <= 1.0:
            raise ValueError(f"case_weight must be in [0, 1], got {self.case_weight}")
        if not 0.0 < self.lr_decay <= 1.0:
            raise ValueError(f"lr_decay must be in (0, 1], got {self.lr_decay}")
        if self.class_weight_power < 0:
            raise ValueError(f"class_weight_power must be >= 0, got {self.class_weight_power}")
        if self.loss_reduction not in ("sum", "mean"):
            raise ValueError(f"loss_reduction must be sum or mean, got {self.loss_reduction!r}")
        self.truncation()  # checks right_truncation and right_truncation_frames

    def truncation(self) -> RightTruncation | None:
        """The training examples' right truncation, or None (``right_truncation: 0``)."""
        frames = self.right_truncation_frames or self.model.context
        truncation = RightTruncation(self.right_truncation, frames)
        return truncation if truncation.share > 0 else None


def corpus_classes(cfg: TrainTdnnConfig) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """(punctuation classes, case classes or None) that FusionCorpus reads for this config."""
    punct_set, case_set = label_scheme(cfg.label_set)
    return punct_set.classes, (case_set.classes if case_set is not None and cfg.model.case_classes else None)
