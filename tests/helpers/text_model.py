"""Tiny BERT helpers for the text-branch tests: a WordPiece vocab and a random 2-layer encoder."""

from __future__ import annotations

import pytest

from tests.helpers import tiny_bert

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    "a",
    "dog",
    "ran",
    "why",
    "did",
    "it",
    "so",
    "and",
    "is",
    "was",
    "un",
    "##bel",
    "##ie",
    "##va",
    "##bly",
    "fast",
    "##er",
    "don",
    "'",
    "t",
    "he",
    "she",
    "run",
    "##s",
    "##ing",
]


def make_tokenizer(tmp_path):
    return tiny_bert.make_tokenizer(tmp_path, VOCAB)


def make_encoder(seed: int = 0, max_positions: int = 64):
    return tiny_bert.make_encoder(len(VOCAB), hidden_size=32, seed=seed, max_positions=max_positions)


@pytest.fixture
def tiny_tokenizer(tmp_path):
    return make_tokenizer(tmp_path)


@pytest.fixture
def tiny_encoder():
    return make_encoder()
