"""Chunks packed end to end into one row, without padding, for inference and training.

A batch of padded chunks costs every padding position as much as a real token, and each batch is one more
pass over the encoder's weights.  A packed row holds the chunks of a batch one after the other, ``(1, total
tokens)``: each chunk's position ids start again from the encoder's first position, and the attention is
computed within each chunk only (:func:`chunk_attention`, a transformers attention function: one scaled
dot-product attention per chunk, no mask).  The linear layers, most of an encoder's time on a CPU (87 % of
BERT-base's on one thread), then run once over the real tokens of the whole batch.  Every token sees exactly
what it sees in its own chunk, so the outputs are those of the padded batches up to float rounding (on the
speed benchmark's 9 utterances bit-identical, in float32 and in bf16: benchmarks/README.md).  Stage 5 trains
on packed rows too (its batches of 16 chunks of 11-86 tokens computed 1.29 tokens per real one padded); the
attention dropout then drops the weights within each chunk, as it does in a padded row.

Packing needs the encoder's position numbering (:func:`first_position`: BERT from 0; RoBERTa-like encoders
after the padding id) and transformers' attention interface; other encoders run padded batches.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch.nn import functional as F

CHUNK_ATTENTION = "punct_chunk_attention"
# model types whose position ids count from the padding id + 1 (transformers' create_position_ids_from_input_ids)
_POSITIONS_AFTER_PADDING = ("roberta", "xlm-roberta", "camembert")


def chunk_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    chunk_bounds: Sequence[tuple[int, int]] = (),
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """Attention of a packed row (query, key, value: (1, heads, tokens, head dim)) within each chunk
    ``[start, end)`` of ``chunk_bounds``; returns (1, tokens, heads, head dim), as transformers' functions do."""
    if attention_mask is not None or not chunk_bounds or query.shape[0] != 1:
        raise ValueError("chunk_attention needs one packed row, its chunk_bounds and no attention mask")
    dropout = dropout if module.training else 0.0
    outputs = [
        F.scaled_dot_product_attention(
            query[:, :, a:b], key[:, :, a:b], value[:, :, a:b], dropout_p=dropout, scale=scaling
        )
        for a, b in chunk_bounds
    ]
    return torch.cat(outputs, dim=2).transpose(1, 2).contiguous(), None


def first_position(encoder: torch.nn.Module) -> int | None:
    """The position id of an unpadded input's first token for ``encoder``; None where packing is not known to
    give the padded batches' outputs (another position scheme, or no transformers attention interface)."""
    config = getattr(encoder, "config", None)
    can_set = getattr(encoder, "_can_set_attn_implementation", None)
    if config is None or can_set is None or not can_set():
        return None
    if getattr(config, "position_embedding_type", "absolute") != "absolute" or getattr(config, "is_decoder", False):
        return None
    if config.model_type == "bert":
        return 0
    if config.model_type in _POSITIONS_AFTER_PADDING and config.pad_token_id is not None:
        return config.pad_token_id + 1
    return None


@dataclass(frozen=True)
class PackedRow:
    """Chunks laid end to end: the encoder's inputs, each chunk's token range and its words' positions."""

    input_ids: torch.Tensor  # (1, tokens)
    position_ids: torch.Tensor  # (1, tokens), each chunk from first_position
    chunk_bounds: tuple[tuple[int, int], ...]  # [start, end) of each chunk in the row
    word_positions: torch.Tensor  # (words,) row position of each predicted word's last sub-token, chunk by chunk
    words_per_chunk: tuple[int, ...]

    def to(self, device: torch.device) -> PackedRow:
        return PackedRow(
            self.input_ids.to(device),
            self.position_ids.to(device),
            self.chunk_bounds,
            self.word_positions.to(device),
            self.words_per_chunk,
        )


def pack_chunks(chunks: Sequence[tuple[Sequence[int], Sequence[int]]], first: int) -> PackedRow:
    """Packs chunks ``(input_ids, word_positions)`` (as :func:`punct.models.text.model.collate_chunks` takes them)."""
    if not chunks:
        raise ValueError("pack_chunks needs at least one chunk")
    ids: list[int] = []
    positions: list[int] = []
    bounds: list[tuple[int, int]] = []
    word_positions: list[int] = []
    for chunk_ids, chunk_words in chunks:
        start = len(ids)
        ids.extend(chunk_ids)
        positions.extend(range(first, first + len(chunk_ids)))
        bounds.append((start, len(ids)))
        word_positions.extend(start + p for p in chunk_words)
    return PackedRow(
        torch.tensor([ids], dtype=torch.long),
        torch.tensor([positions], dtype=torch.long),
        tuple(bounds),
        torch.tensor(word_positions, dtype=torch.long),
        tuple(len(w) for _, w in chunks),
    )


@contextmanager
def packed_attention(encoder: torch.nn.Module) -> Iterator[None]:
    """``encoder`` runs :func:`chunk_attention` inside the block; its own attention function is restored after
    (a padded batch gets its usual attention)."""
    from transformers import AttentionInterface

    AttentionInterface.register(CHUNK_ATTENTION, chunk_attention)  # the same function each time: idempotent
    previous = encoder.config._attn_implementation
    encoder.set_attn_implementation(CHUNK_ATTENTION)
    try:
        yield
    finally:
        encoder.set_attn_implementation(previous)
