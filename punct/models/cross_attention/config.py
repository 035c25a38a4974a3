"""Configuration of the punctuation + case models (the ITN recipe's ``conf/mm*.yaml``), one frozen dataclass.

Defaults are the thesis' values (Stankov 2024, sections 5.1, 5.4, 5.6, 5.7); the mini
config shrinks the dimensions so that a model trains in minutes on 2 CPU cores.
"""

from __future__ import annotations

from dataclasses import dataclass

from punct.labels import check_first_word
from punct.training.loop import check_batching

SOUND_ENCODERS = ("conv", "am")
MM_ATTENTIONS = ("full", "aligned")
DEV_METRICS = ("macro_f1", "loss", "last")


@dataclass(frozen=True)
class MmConfig:
    # ---- text encoder and heads (thesis 5.1, 5.3) --------------------------------------
    bert_model: str = ""  # text encoder: a local folder (or hub name) that AutoTokenizer/AutoModel read, any BERT-like
    # type (BERT, RoBERTa such as RobeCzech, ...); empty: the offline MiniLM package (uncased, English WordPiece)
    text_letters: str = ""  # letters the text tokenizer must keep: those a WordPiece vocabulary lacks take its
    # [unusedN] slots, their embeddings start from the base letters' and train even with freeze_text_embeddings
    # (punct.models.text.letters); empty: the tokenizer as it is
    head_hidden: int = 768  # Linear(hidden, head_hidden) + tanh, then Linear to the classes
    head_activation: str = "tanh"
    head_dropout: float = 0.2
    text_layers: int = 0  # > 0: keep only the first N layers of the text encoder (CPU budgets); 0: all
    freeze_text_embeddings: bool = False  # keep the text encoder's embedding tables fixed (all but added letters' rows)
    max_length: int = 512  # sub-tokens per segment incl. [CLS]/[SEP]; longer segments are skipped (counted)
    # ---- mel front end (thesis 5.6; torchaudio's MelSpectrogram, computed here with torch.stft) ----
    sample_rate: int = 16000
    win_length: int = 512
    hop_length: int = 256
    num_mel_bins: int = 128
    log_mel: bool = True  # log(mel + 1e-6); the thesis does not say, raw power mel is badly scaled
    # ---- which sound encoder (thesis 5.5, 5.6) ------------------------------------------
    sound_encoder: str = "conv"  # conv: the mel front end and conv blocks below, trained from scratch (5.6);
    # am: a trained CTC acoustic model of the recipe (stage 1, punct.am), frozen, as the pretrained audio encoder
    # (the thesis' "audio encoder baseline" 5.5 uses wav2vec2): its layer-am_layer output frames, LayerNorm and a
    # Linear to the text hidden size, then the audio transformer blocks below (the mel/conv values are unused)
    am_dir: str = ""  # the AM folder (exp/am: best-valid-loss.pt, mfcc.yaml); training stores its absolute path here,
    # so the checkpoint's config names the AM that decoding must use
    am_layer: int = 12  # tapped layer (punct.am.model numbering: 12 = tdnnf12, EfficientPunct's embeddings)
    am_frame_stride: int = 4  # average groups of this many AM frames (10 ms each) into one audio frame: the audio
    # transformer's cost grows with the square of the frame count (15 s: 1500 AM frames, 375 at stride 4)
    # ---- convolutional sound encoder (thesis 5.6) ---------------------------------------
    conv_channels: tuple[int, ...] = (128, 256, 256, 512, 512, 768, 768)
    conv_kernels: tuple[int, ...] = (2, 2, 2, 2, 2, 2, 2)
    conv_strides: tuple[int, ...] = (2, 2, 2, 2, 1, 2, 1)
    conv_dropout: float = 0.1
    conv_layer_norm_eps: float = 1.0e-5
    audio_layers: int = 2  # transformer encoder blocks after the convolutions
    audio_heads: int = 8
    audio_ffn: int = 2048
    audio_dropout: float = 0.1
    audio_layer_norm_eps: float = 1.0e-5
    # ---- multimodal encoder (thesis 5.4) ---------------------------------------------
    mm_layers: int = 2
    mm_heads: int = 8
    mm_ffn: int = 2048
    mm_dropout: float = 0.2
    mm_layer_norm_eps: float = 6.0e-5
    mm_attention: str = "full"  # full: every text token attends every audio frame (thesis 5.4); aligned: a word's
    # sub-tokens attend only the frames of words i - c .. i + c (c = mm_attention_context) by the word times, a word's
    # frames running from its start to the next word's start (its sound and the pause after it); special tokens and
    # words without frames attend every frame.  The alignment then need not be learnt (egs/parczech/README.md)
    mm_attention_context: int = 1
    mm_zero_init: bool = False  # zero the output projections of the multimodal blocks' attention/FFN branches:
    # the blocks start as (normalised) identities, so training starts from the text-only function
    # ---- variants (thesis 5.7, 5.8) --------------------------------------------------
    positional: bool = False  # shared word-position embedding e(i) on audio frames and text tokens
    max_words: int = 512  # size of the positional-embedding table (later words share the last row)
    random_audio: bool = False  # permute every segment's audio (seeded): no usable sound (thesis 5.8)
    random_audio_unit: str = "samples"  # what is permuted: "samples" (the waveform, sounds like white noise,
    # thesis Figure 5.31) or "frames" (the mel frames)
    # ---- training (thesis 5.1) -------------------------------------------------------
    punct_weight: float = 0.5  # L = 0.5 Lp + 0.5 Lc
    case_weight: float = 0.5
    # Lp weighs each punctuation class by (majority count / its count in the training words) ** this power,
    # at most max_class_weight (> 0); 0: plain cross-entropy (the thesis).  The dev loss stays unweighted.
    punct_class_weight_power: float = 0.0
    max_class_weight: float = 0.0
    # the first word of a segment: "exclude" (the thesis, 5.9) leaves its punctuation and case labels out of
    # the loss and the dev/test scores and writes its reference labels as predictions; "include" trains and
    # scores every word (the default here, so that older configs and checkpoints keep their meaning;
    # conf/mm*.yaml set exclude).  See punct.labels (the first word of a segment).
    first_word: str = "include"
    lr: float = 6.0e-5  # peak learning rate
    lr_new: float = 0.0  # peak rate of the randomly initialised parts (sound + multimodal encoders); 0: lr
    weight_decay: float = 0.01
    warmup_fraction: float = 0.2  # linear warm-up over this part of all updates, then linear decay to 0
    batch_size: int = 400
    batching: str = "random"  # random: shuffled segments; length: segments of like sub-token count together, the
    # batches in shuffled order (punct.training.loop.like_length_batches: less padding of text and audio), each batch's
    # loss weighed by its trained words over the mean (every word counts alike, as in random batches)
    length_group: int = 8  # batching: length sorts the shuffled segments within runs of this many batches (a batch's
    # segments change from epoch to epoch); 0: the whole epoch at once
    num_epochs: int = 15
    grad_clip: float = 1.0
    eval_batch_size: int = 64
    max_train_segments: int = 0  # > 0: a seeded sample of the training segments
    # which epoch becomes best-valid-f1.pt: "macro_f1" (the dev punctuation macro F1 over the 8 marks), "loss"
    # (the lowest dev loss, unweighted, both heads; with few dev examples of the rare marks both are noisy) or
    # "last" (the last epoch: dev is still scored after every epoch, for history.json, and picks nothing)
    dev_metric: str = "macro_f1"
    # > 1: after the last epoch the weights of the last N epochs are averaged (icefall's --avg) and the average,
    # not the epoch dev_metric picks, becomes best-valid-f1.pt (its dev scores in best-valid-f1.json); the last N
    # epoch checkpoints are kept until then whatever keep_last_epochs says
    average_epochs: int = 1
    keep_last_epochs: int = 1
    log_interval: int = 50
    num_threads: int = 0  # torch.set_num_threads when > 0
    num_workers: int = 0  # DataLoader workers (audio loading and mel)
    # mixed precision of the training forward passes (punct.training.loop.Amp): none, bf16, fp16 (CUDA only),
    # auto (bf16 where the hardware has it natively) or fastest (none or bf16 by a timed step: punct.training.precision)
    amp: str = "none"
    seed: int = 42

    def __post_init__(self) -> None:
        check_first_word(self.first_word)
        check_batching(self.batching)
        if self.length_group < 0:
            raise ValueError(f"length_group must be >= 0, got {self.length_group}")
        if self.sound_encoder not in SOUND_ENCODERS:
            raise ValueError(f"sound_encoder must be one of {SOUND_ENCODERS}, got {self.sound_encoder!r}")
        if self.mm_attention not in MM_ATTENTIONS:
            raise ValueError(f"mm_attention must be one of {MM_ATTENTIONS}, got {self.mm_attention!r}")
        if self.mm_attention_context < 0:
            raise ValueError(f"mm_attention_context must be >= 0, got {self.mm_attention_context}")
        if self.dev_metric not in DEV_METRICS:
            raise ValueError(f"dev_metric must be one of {DEV_METRICS}, got {self.dev_metric!r}")
        if self.average_epochs < 1:
            raise ValueError(f"average_epochs must be >= 1, got {self.average_epochs}")
        if self.am_frame_stride < 1:
            raise ValueError(f"am_frame_stride must be >= 1, got {self.am_frame_stride}")
        if self.punct_class_weight_power < 0 or self.max_class_weight < 0:
            raise ValueError(
                f"punct_class_weight_power and max_class_weight must be >= 0, got "
                f"{self.punct_class_weight_power} and {self.max_class_weight}"
            )
