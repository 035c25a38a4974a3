"""Tiny randomly initialised BERTs for tests: a WordPiece vocabulary written by the test and a 2-layer encoder."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch


def make_tokenizer(tmp_path: Path, vocab: Sequence[str], strip_accents: bool = True):
    from transformers import BertTokenizer

    vocab_file = Path(tmp_path) / "vocab.txt"
    vocab_file.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return BertTokenizer(vocab=str(vocab_file), strip_accents=strip_accents)


def make_encoder(vocab_size: int, hidden_size: int = 32, seed: int = 0, max_positions: int = 64):
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=2 * hidden_size, max_position_embeddings=max_positions,
    )
    return BertModel(config)
