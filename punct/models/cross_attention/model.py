"""The punctuation + case models: text-only baseline and the cross-attention multimodal model (thesis 5.3-5.8).

Text-only (thesis 5.3): a BERT-like encoder with two heads (punctuation, 9 classes; case,
2 classes) read at every word's last sub-token: :class:`punct.models.text.model.PunctBert`, used
here through :class:`TextOnlyModel`.

Multimodal (thesis 5.4, 5.6, 5.7; :class:`CrossAttentionModel`)::

    words -> PunctBert.encoder -> (N, T, D) [+ e(word of token)] --------------------.
    audio -> mel (N, M, 128) -> 7 conv blocks -> (N, F, C) -> Linear to D if C != D   |
          [+ e(word of frame)] -> 2 transformer encoder blocks -> (N, F, D) ---------.|
                                                                                     vv
        2 multimodal blocks (self-attention over text, cross-attention text -> audio, FFN)
        -> word vectors at the last sub-tokens -> PunctBert heads (punct, case)

With ``mm_attention: aligned`` (not in the thesis) the cross-attention of a word's tokens is restricted by the
word times to the frames of that word and its neighbours (:func:`aligned_attention_mask`).

With ``sound_encoder: am`` the audio side is :class:`AmSoundEncoder` instead: the frames of the recipe's
trained acoustic model (frozen, run by the dataset: :mod:`punct.models.cross_attention.am_frames`) ->
LayerNorm -> Linear to D [+ e(word of frame)] -> the transformer encoder blocks (thesis 5.5, wav2vec2 there);
their times are :class:`punct.models.cross_attention.geometry.AmFrameGeometry`'s (10 ms AM frames, averaged in groups).

The positional embedding ``e`` is one table shared by both modalities: word ``i``'s audio
frames (by the word timestamps, see :class:`punct.models.cross_attention.geometry.SoundGeometry`) and
word ``i``'s sub-tokens get ``e(i)``; special tokens and frames that overlap no word get nothing.  On the
audio side it is added after the convolutions (before the transformer blocks), on the text side to the final
hidden states of the text encoder (thesis 5.7).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import torch
from torch import nn

from punct.labels import label_scheme
from punct.models.cross_attention.am_frames import am_frames_of
from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.geometry import SoundGeometry
from punct.models.text.letters import LetterRowsEmbedding
from punct.models.text.model import HeadSpec, PunctBert

PUNCT_HEAD = "punct"
CASE_HEAD = "case"


def head_specs(cfg: MmConfig) -> list[HeadSpec]:
    """The two heads of every model of the ``itn`` label scheme (thesis 5.1: dropout 0.2, Linear 768 + tanh, Linear)."""
    punct_set, case_set = label_scheme("itn")
    return [
        HeadSpec(name, label_set.classes, cfg.head_hidden, cfg.head_activation, cfg.head_dropout)
        for name, label_set in ((PUNCT_HEAD, punct_set), (CASE_HEAD, case_set))
    ]


def add_word_positions(x: torch.Tensor, word_index: torch.Tensor, table: nn.Embedding) -> torch.Tensor:
    """``x[n, t] + e(word_index[n, t])`` where the index is a word (>= 0); (N, T, D) -> (N, T, D).

    Words past the end of the table share its last row."""
    has_word = (word_index >= 0).unsqueeze(-1)
    index = word_index.clamp(min=0, max=table.num_embeddings - 1)
    return x + table(index) * has_word.to(x.dtype)


# ---- sound encoder ---------------------------------------------------------------------


class ConvBlock(nn.Module):
    """Conv1d (no padding) -> LayerNorm over channels -> GELU -> dropout; (N, T, Cin) -> (N, T', Cout)."""

    def __init__(
        self, in_channels: int, out_channels: int, kernel: int, stride: int, dropout: float, eps: float
    ) -> None:
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel, stride)
        self.norm = nn.LayerNorm(out_channels, eps=eps)
        self.activation = nn.GELU()
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x.transpose(1, 2)).transpose(1, 2)
        return self.dropout(self.activation(self.norm(x)))


class SoundEncoder(nn.Module):
    """Mel frames -> latent audio frames (thesis 5.6, Figure 5.14).

    Args:
      cfg: the model config (mel bins, conv blocks, transformer blocks).
      d_model: output size (the text encoder's hidden size); a Linear maps the last conv
        channel count to it when they differ.
    """

    inputs = ("mel", "mel_lengths")

    def __init__(self, cfg: MmConfig, d_model: int) -> None:
        super().__init__()
        self.geometry = SoundGeometry.from_config(cfg)
        blocks, c_in = [], cfg.num_mel_bins
        for c, k, s in zip(cfg.conv_channels, cfg.conv_kernels, cfg.conv_strides):
            blocks.append(ConvBlock(c_in, c, k, s, cfg.conv_dropout, cfg.conv_layer_norm_eps))
            c_in = c
        self.convs = nn.ModuleList(blocks)
        self.project = nn.Linear(c_in, d_model) if c_in != d_model else nn.Identity()
        self.transformer = audio_transformer(cfg, d_model)

    def latent_lengths(self, mel_lengths: torch.Tensor) -> torch.Tensor:
        return torch.tensor(
            [self.geometry.num_latent(int(n)) for n in mel_lengths], dtype=torch.long, device=mel_lengths.device
        )

    def forward(
        self,
        mel: torch.Tensor,
        mel_lengths: torch.Tensor,
        frame_words: torch.Tensor | None = None,
        positions: nn.Embedding | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """
        Args:
          mel: (N, M, bins) padded mel frames.
          mel_lengths: (N,) valid mel frames.
          frame_words: (N, F) word index of each latent frame (``NO_WORD`` for none / padding).
          positions: the shared word-position table, or None (no positional embeddings).
        Returns:
          (N, F, D) latent frames and the (N, F) padding mask (True = padding).
        """
        x = mel
        for block in self.convs:
            x = block(x)
        x = self.project(x)  # (N, F, D)
        lengths = self.latent_lengths(mel_lengths)
        if int(lengths.min()) < 1:
            raise ValueError(f"a segment is shorter than one latent frame ({self.geometry.min_mel_frames} mel frames)")
        return encode_frames(self.transformer, x, lengths, frame_words, positions)


def audio_transformer(cfg: MmConfig, d_model: int) -> nn.TransformerEncoder:
    """The ``audio_layers`` transformer encoder blocks of both sound encoders."""
    layer = nn.TransformerEncoderLayer(
        d_model,
        cfg.audio_heads,
        cfg.audio_ffn,
        cfg.audio_dropout,
        activation="gelu",
        layer_norm_eps=cfg.audio_layer_norm_eps,
        batch_first=True,
    )
    return nn.TransformerEncoder(layer, cfg.audio_layers, enable_nested_tensor=False)


def encode_frames(
    transformer: nn.TransformerEncoder,
    x: torch.Tensor,
    lengths: torch.Tensor,
    frame_words: torch.Tensor | None,
    positions: nn.Embedding | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, F, D) frames with ``lengths`` valid ones [+ e(word of frame)] -> the transformer's (N, F, D) and the
    (N, F) padding mask (True = padding)."""
    pad = torch.arange(x.size(1), device=x.device)[None, :] >= lengths[:, None]
    if positions is not None:
        if frame_words is None or frame_words.shape != pad.shape:
            raise ValueError(f"frame_words must be (N, F) = {tuple(pad.shape)}")
        x = add_word_positions(x, frame_words, positions)
    return transformer(x, src_key_padding_mask=pad), pad


class AmSoundEncoder(nn.Module):
    """Frames of a frozen acoustic model -> audio frames (``sound_encoder: am``; thesis 5.5).

    The AM runs in the data pipeline (:mod:`punct.models.cross_attention.am_frames`); here its pooled
    layer-k frames go through a LayerNorm (the AM's layers have their own scales), a Linear to ``d_model``
    and dropout, then [+ e(word of frame)] and the audio transformer blocks, as in :class:`SoundEncoder`.
    """

    inputs = ("am_frames", "am_lengths")

    def __init__(self, cfg: MmConfig, in_dim: int, d_model: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(in_dim, eps=cfg.audio_layer_norm_eps)
        self.project = nn.Linear(in_dim, d_model)
        self.dropout = nn.Dropout(cfg.audio_dropout)
        self.transformer = audio_transformer(cfg, d_model)

    def forward(
        self,
        frames: torch.Tensor,
        lengths: torch.Tensor,
        frame_words: torch.Tensor | None = None,
        positions: nn.Embedding | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """frames (N, F, in_dim) padded, lengths (N,) valid frames -> (N, F, D) and the (N, F) padding mask."""
        if int(lengths.min()) < 1:
            raise ValueError("a segment has no acoustic-model frame")
        x = self.dropout(self.project(self.norm(frames)))
        return encode_frames(self.transformer, x, lengths, frame_words, positions)


# ---- multimodal encoder ------------------------------------------------------------------


def aligned_attention_mask(
    token_words: torch.Tensor, frame_words: torch.Tensor, audio_pad: torch.Tensor, context: int
) -> torch.Tensor:
    """The cross-attention mask of ``mm_attention: aligned``: (N, T, F), True where text token ``t`` may not
    attend audio frame ``f``.

    A frame belongs to the last word that began at or before it (``frame_words`` forward-filled over the
    frames of no word), so word ``i`` owns its sound and the pause after it; a token of word ``i`` attends the
    frames of words ``i - context`` .. ``i + context``.  Tokens of no word (special tokens, padding) and words
    that own no such frame attend every frame; padding frames are never attended.
    """
    frame_owner = torch.cummax(frame_words, dim=1).values  # (N, F); frames before the first word: NO_WORD
    near = (frame_owner[:, None, :] - token_words[:, :, None]).abs() <= context
    blocked = ~near | audio_pad[:, None, :]
    unconstrained = (token_words < 0)[:, :, None] | blocked.all(dim=2, keepdim=True)
    return torch.where(unconstrained, audio_pad[:, None, :].expand_as(blocked), blocked)


class MultimodalBlock(nn.Module):
    """Self-attention over text, cross-attention (queries text, keys/values audio), FFN;
    post-norm add & norm with dropout on each branch (thesis 5.4, Figure 5.9)."""

    def __init__(self, d_model: int, heads: int, ffn: int, dropout: float, eps: float, zero_init: bool = False) -> None:
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, heads, dropout=dropout, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(d_model, heads, dropout=dropout, batch_first=True)
        self.ffn = nn.Sequential(nn.Linear(d_model, ffn), nn.Dropout(dropout), nn.GELU(), nn.Linear(ffn, d_model))
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model, eps=eps) for _ in range(3))
        self.drop1, self.drop2, self.drop3 = (nn.Dropout(dropout) for _ in range(3))
        if zero_init:  # every branch starts at 0: the block is LN(LN(LN(x))) at first
            for linear in (self.self_attn.out_proj, self.cross_attn.out_proj, self.ffn[3]):
                nn.init.zeros_(linear.weight)
                nn.init.zeros_(linear.bias)

    def forward(
        self,
        text: torch.Tensor,
        text_pad: torch.Tensor,
        audio: torch.Tensor,
        audio_pad: torch.Tensor,
        need_weights: bool = False,
        cross_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """text (N, T, D), audio (N, F, D), pads True at padding -> (N, T, D) and optionally the
        head-averaged cross-attention weights (N, T, F).  ``cross_mask`` (N, T, F), True = not attended
        (:func:`aligned_attention_mask`, which includes the audio padding), replaces ``audio_pad`` there."""
        x = self.norm1(
            text + self.drop1(self.self_attn(text, text, text, key_padding_mask=text_pad, need_weights=False)[0])
        )
        if cross_mask is None:
            y, weights = self.cross_attn(x, audio, audio, key_padding_mask=audio_pad, need_weights=need_weights)
        else:
            per_head = cross_mask.repeat_interleave(self.cross_attn.num_heads, dim=0)  # (N * heads, T, F)
            y, weights = self.cross_attn(x, audio, audio, attn_mask=per_head, need_weights=need_weights)
        x = self.norm2(x + self.drop2(y))
        x = self.norm3(x + self.drop3(self.ffn(x)))
        return x, weights


# ---- the two models ------------------------------------------------------------------------


def _gather_words(hidden: torch.Tensor, word_positions: torch.Tensor) -> torch.Tensor:
    return torch.gather(hidden, 1, word_positions.unsqueeze(-1).expand(-1, -1, hidden.size(-1)))


class TextOnlyModel(nn.Module):
    """The text-only baseline: :class:`PunctBert` with the punctuation and case heads."""

    uses_audio = False

    def __init__(self, text: PunctBert) -> None:
        super().__init__()
        self.text = text

    def forward(self, batch: dict[str, torch.Tensor], need_attention: bool = False) -> dict[str, torch.Tensor]:
        _, logits = self.text(batch["input_ids"], batch["attention_mask"], batch["word_positions"])
        return logits


class CrossAttentionModel(nn.Module):
    """Text encoder + sound encoder + multimodal blocks + the PunctBert heads (see module doc)."""

    uses_audio = True

    def __init__(self, text: PunctBert, cfg: MmConfig, am_dim: int = 0) -> None:
        super().__init__()
        self.text = text
        d = text.hidden_size
        if cfg.sound_encoder == "am":
            if am_dim < 1:
                raise ValueError("sound_encoder am: the acoustic model's frame dimension (am_dim) is needed")
            self.sound = AmSoundEncoder(cfg, am_dim, d)
        else:
            self.sound = SoundEncoder(cfg, d)
        self.attention, self.attention_context = cfg.mm_attention, cfg.mm_attention_context
        self.positions = nn.Embedding(cfg.max_words, d) if cfg.positional else None
        if self.positions is not None:
            nn.init.normal_(self.positions.weight, std=0.02)
        self.blocks = nn.ModuleList(
            MultimodalBlock(d, cfg.mm_heads, cfg.mm_ffn, cfg.mm_dropout, cfg.mm_layer_norm_eps, cfg.mm_zero_init)
            for _ in range(cfg.mm_layers)
        )

    def forward(self, batch: dict[str, torch.Tensor], need_attention: bool = False) -> dict[str, torch.Tensor]:
        """Logits per head (N, W, C); with ``need_attention`` also ``"attention"``: the last
        block's head-averaged cross-attention (N, T, F)."""
        hidden = self.text.encoder(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
        ).last_hidden_state
        if self.positions is not None:
            hidden = add_word_positions(hidden, batch["token_words"], self.positions)
        frames, lengths = (batch[key] for key in self.sound.inputs)
        audio, audio_pad = self.sound(frames, lengths, batch.get("frame_words"), self.positions)
        text_pad = batch["attention_mask"] == 0
        cross_mask = None
        if self.attention == "aligned":
            cross_mask = aligned_attention_mask(
                batch["token_words"], batch["frame_words"], audio_pad, self.attention_context
            )
        weights = None
        for i, block in enumerate(self.blocks):
            hidden, weights = block(
                hidden,
                text_pad,
                audio,
                audio_pad,
                need_weights=need_attention and i == len(self.blocks) - 1,
                cross_mask=cross_mask,
            )
        vectors = _gather_words(hidden, batch["word_positions"])
        out = {name: head(vectors) for name, head in self.text.heads.items()}
        if need_attention:
            out["attention"] = weights
        return out


MODEL_KINDS = ("text", "mm")


def build_model(kind: str, cfg: MmConfig, text: PunctBert | None = None, am_dim: int = 0) -> nn.Module:
    """A fresh model; ``text`` (a PunctBert with :func:`head_specs`) defaults to the configured encoder;
    ``am_dim`` (``sound_encoder: am``): the AM frame size, by default read from ``cfg.am_dir``'s model."""
    if kind not in MODEL_KINDS:
        raise ValueError(f"unknown model kind {kind!r}; choose one of {MODEL_KINDS}")
    if text is None:
        text = PunctBert.from_encoder(cfg.bert_model or None, head_specs(cfg), letters=cfg.text_letters)
    if cfg.text_layers > 0:
        text.keep_first_layers(cfg.text_layers)
    if cfg.freeze_text_embeddings:
        freeze_embeddings(text.encoder, text.added_letters.ids)
    if kind == "text":
        if cfg.positional or cfg.random_audio:
            logging.warning(
                "text-only model: positional=%s and random_audio=%s have no effect", cfg.positional, cfg.random_audio
            )
        return TextOnlyModel(text)
    if cfg.sound_encoder == "am" and am_dim < 1:
        am_dim = am_frames_of(cfg).dim
    return CrossAttentionModel(text, cfg, am_dim)


def freeze_embeddings(encoder: nn.Module, trainable_rows: Sequence[int] = ()) -> None:
    """Fixes the encoder's embedding tables except the word-embedding rows ``trainable_rows`` (the letters
    added by :mod:`punct.models.text.letters`, which start as copies of their base letters' rows): those
    train through a :class:`punct.models.text.letters.LetterRowsEmbedding` (same state dict)."""
    embeddings = getattr(encoder, "embeddings", None)
    if embeddings is None:
        raise ValueError(f"freeze_text_embeddings: {type(encoder).__name__} has no .embeddings")
    for p in embeddings.parameters():
        p.requires_grad_(False)
    if trainable_rows:
        encoder.set_input_embeddings(LetterRowsEmbedding(encoder.get_input_embeddings(), trainable_rows))


def new_parameters(model: nn.Module) -> list[nn.Parameter]:
    """Parameters that are new to the pretrained text encoder: everything outside it, and the trained rows of
    added letters (:class:`punct.models.text.letters.LetterRowsEmbedding`: copies of their base letters'
    rows that have to learn what the copies lack); they train at ``lr_new``."""
    embeddings = model.text.encoder.get_input_embeddings()
    pretrained = {id(p) for p in model.text.encoder.parameters()}
    if isinstance(embeddings, LetterRowsEmbedding):
        pretrained.discard(id(embeddings.rows))
    return [p for p in model.parameters() if id(p) not in pretrained]
