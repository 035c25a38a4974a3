"""Tiny randomly initialised encoders for tests: a WordPiece vocabulary written by the test and a 2-layer BERT, or
a byte-level BPE trained offline on the test's sentences (``tokenizers``) and a 2-layer RoBERTa, saved as a model
folder."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import torch


def make_tokenizer(tmp_path: Path, vocab: Sequence[str], strip_accents: bool = True, lower_case: bool = True):
    from transformers import BertTokenizer

    vocab_file = Path(tmp_path) / "vocab.txt"
    vocab_file.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return BertTokenizer(vocab=str(vocab_file), strip_accents=strip_accents, do_lower_case=lower_case)


def make_encoder(vocab_size: int, hidden_size: int = 32, seed: int = 0, max_positions: int = 64):
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=2 * hidden_size,
        max_position_embeddings=max_positions,
    )
    return BertModel(config)


ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # ids 0-4, RoBERTa's order


def make_roberta_folder(folder: Path, sentences: Iterable[str], hidden_size: int = 16, seed: int = 0) -> Path:
    """A RoBERTa model folder (config, random weights, byte-level BPE tokenizer trained on ``sentences``)."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizer

    folder = Path(folder)
    bpe_dir = folder / "bpe"
    bpe_dir.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(list(sentences), vocab_size=400, min_frequency=1, special_tokens=ROBERTA_SPECIALS)
    bpe.save_model(str(bpe_dir))
    tokenizer = RobertaTokenizer(vocab=str(bpe_dir / "vocab.json"), merges=str(bpe_dir / "merges.txt"))
    tokenizer.save_pretrained(folder)
    torch.manual_seed(seed)
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=2 * hidden_size,
        max_position_embeddings=66,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    RobertaModel(config).save_pretrained(folder)
    return folder
