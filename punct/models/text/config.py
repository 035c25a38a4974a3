"""Training configuration of the text branch (``egs/<corpus>/conf/bert*.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass

from punct.models.text.losses import LossConfig
from punct.training.loop import check_batching
from punct.training.truncation import RightTruncation

LR_SCHEDULES = ("constant", "linear")


@dataclass(frozen=True)
class BertTrainConfig:
    """Fine-tuning values; defaults are the SCL paper's setup (Huang et al. 2021, section 4.2)."""

    bert_model: str = ""  # local folder or hub name; empty: the offline MiniLM package
    max_length: int = 256  # encoder input length in training (tokens incl. [CLS]/[SEP])
    infer_max_length: int = 0  # encoder input length for dev scoring; 0: max_length (the dumps use the training length)
    context: int = 32  # sub-tokens of left/right context around predicted words when a text is chunked
    batch_size: int = 32  # chunks per training batch
    batching: str = "random"  # random: shuffled chunks; length: chunks of like length together, the batches in
    # shuffled order (less padding where the encoder cannot be packed: punct.models.text.packing)
    encoder_layers: int = 0  # > 0: only the encoder's first N transformer layers are kept (a smaller encoder for CPU
    # budgets; the checkpoint holds N layers); 0 keeps all, as the papers
    freeze_layers: int = 0  # the embeddings and the encoder's first N layers are not trained: no gradient
    # flows below layer N (its backward pass is skipped); 0 trains all, as the papers
    freeze_embeddings: bool = False  # the embedding tables alone are not trained (freeze_layers > 0 implies it): no
    # gradient of the 11.9 M MiniLM embedding parameters and no optimiser step on them
    eval_batch_size: int = 64  # chunks per inference batch
    lr: float = 1.0e-5  # AdamW learning rate
    weight_decay: float = 0.01  # AdamW weight decay (biases and LayerNorm excluded)
    warmup_steps: int = 0  # linear warm-up of the learning rate, then lr_schedule
    lr_schedule: str = "constant"  # after the warm-up: constant, or linear (down to 0 at the last step of num_epochs)
    num_epochs: int = 20  # the paper trains 20 epochs and picks the best on dev
    grad_clip: float = 1.0  # max gradient norm (0 disables)
    loss: str = "ce"  # ce, scl or focal
    scl_lambda: float = 0.1  # L = (1 - lambda) CE + lambda SCL
    scl_temperature: float = 0.6  # supcon: tau, the loss scaled by temperature / base temperature
    scl_base_temperature: float = 0.07
    scl_reduction: str = "mean"  # mean over anchors, or sum (eq. 5 as printed)
    scl_form: str = "supcon"  # supcon (the authors' code) or literal (tau = temperature / base temperature)
    focal_gamma: float = 2.0
    head_hidden: int = 1024  # EfficientPunct MLP hidden size
    head_activation: str = "relu"
    head_dropout: float = 0.1
    extra_text: str = ""  # optional plain text file of punctuated prose added to the training data
    extra_text_words: int = 40  # words per pseudo-utterance cut from the extra text
    extra_text_max_words: int = 0  # 0: all of it
    max_train_utts: int = 0  # 0: all; >0 keeps a seeded random subset (quick experiments)
    right_truncation: float = 0.0  # share of training chunks cut after a random word, as live captions show them
    keep_last_epochs: int = 2  # epoch-N.pt files kept (older ones deleted); 0 keeps all
    # > 0: a mid-epoch checkpoint epoch-E-batch-B.pt every this many optimizer steps, the newest kept, that --resume
    # continues from to the uninterrupted run's weights (punct.training.resume); 0: epoch-N.pt only
    save_every_n_steps: int = 0
    log_interval: int = 20  # batches between training log lines
    num_threads: int = 0  # torch CPU threads; 0 leaves torch's default
    amp: str = "none"  # mixed precision (none, bf16, fp16, auto, fastest); --amp overrides it
    seed: int = 42

    def loss_config(self) -> LossConfig:
        return LossConfig(
            name=self.loss,
            scl_lambda=self.scl_lambda,
            scl_temperature=self.scl_temperature,
            scl_base_temperature=self.scl_base_temperature,
            scl_reduction=self.scl_reduction,
            scl_form=self.scl_form,
            focal_gamma=self.focal_gamma,
        )

    def truncation(self) -> RightTruncation | None:
        """The training chunks' right truncation (:mod:`punct.models.text.truncation`), or None
        (``right_truncation: 0``)."""
        truncation = RightTruncation(self.right_truncation)
        return truncation if truncation.share > 0 else None

    def __post_init__(self) -> None:
        self.truncation()  # checks right_truncation
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {self.lr_schedule!r}")
        check_batching(self.batching)
        if self.freeze_layers < 0:
            raise ValueError(f"freeze_layers must be >= 0, got {self.freeze_layers}")
        if self.encoder_layers < 0:
            raise ValueError(f"encoder_layers must be >= 0, got {self.encoder_layers}")
        if self.encoder_layers and self.freeze_layers >= self.encoder_layers:
            raise ValueError(
                f"freeze_layers ({self.freeze_layers}) must be below encoder_layers ({self.encoder_layers}): "
                "nothing would train"
            )
