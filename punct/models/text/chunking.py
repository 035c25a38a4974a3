"""Words -> sub-tokens -> encoder-sized chunks, with every word predicted exactly once.

A BERT-like encoder reads at most ``max_length`` tokens including its two special tokens
([CLS] ... [SEP]), i.e. ``max_length - 2`` sub-tokens of content (510 for BERT's 512).
An utterance (a list of words) longer than that is split into chunks by this rule:

* every chunk holds a run of whole words ``[start, end)`` whose sub-tokens fit;
* inside it, the words ``[pred_start, pred_end)`` are the ones the chunk *predicts*;
  the words before them (at most ``context`` sub-tokens) are left context and the words
  after them (at most ``context`` sub-tokens) right context;
* the predicted ranges of consecutive chunks are adjacent and cover all words, so each word
  is predicted exactly once, always with up to ``context`` sub-tokens of text on each side
  (less only at the utterance edges);
* a chunk predicts at least one word, so the plan always terminates.

A word's prediction is read at its **last** sub-token; the other sub-tokens carry no label.
Words are tokenised in Unicode NFC (a vocabulary holds composed letters such as "č"); a word that
comes out with the unknown token is tried again without its diacritics (an accent-keeping vocabulary
without "ü" reads "müller" as "muller", as an accent-stripping one would).  A word that the tokenizer
turns into no sub-token at all gets the unknown token, and a word longer than the whole content
budget keeps its last ``max_content`` sub-tokens (counted and logged by the callers that see real data).
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from punct.models.text.letters import strip_diacritics


class Chunk(NamedTuple):
    """Word ranges of one chunk: ``[start, end)`` is encoded, ``[pred_start, pred_end)`` predicted."""

    start: int
    end: int
    pred_start: int
    pred_end: int


def plan_chunks(piece_lengths: Sequence[int], max_content: int, context: int) -> list[Chunk]:
    """Splits words with the given sub-token counts into chunks (see the module docstring).

    Args:
      piece_lengths: number of sub-tokens of each word (each >= 1 and <= max_content).
      max_content: sub-tokens a chunk may hold, special tokens excluded (``max_length - 2``).
      context: sub-tokens of left and of right context to give the predicted words; must be
        less than half of ``max_content`` so that a chunk always has room to predict.
    Returns:
      the chunks in order; an empty utterance gives no chunk.
    """
    if max_content < 1:
        raise ValueError(f"max_content must be >= 1, got {max_content}")
    if context < 0 or 2 * context >= max_content:
        raise ValueError(f"context must be in [0, max_content/2), got {context} for max_content {max_content}")
    for i, n in enumerate(piece_lengths):
        if not 1 <= n <= max_content:
            raise ValueError(f"word {i} has {n} sub-tokens; expected 1..{max_content}")
    num_words = len(piece_lengths)
    if sum(piece_lengths) <= max_content:
        return [Chunk(0, num_words, 0, num_words)] if num_words else []

    # suffix[i] = sub-tokens of words i.. (to know how much right context is left to reserve)
    suffix = [0] * (num_words + 1)
    for i in range(num_words - 1, -1, -1):
        suffix[i] = suffix[i + 1] + piece_lengths[i]
    chunks: list[Chunk] = []
    pred_start = 0
    while pred_start < num_words:
        # Left context: whole words before pred_start, within the context budget.
        start, left = pred_start, 0
        while start > 0 and left + piece_lengths[start - 1] <= context:
            start -= 1
            left += piece_lengths[start]
        # Predicted words: as many as fit while keeping room for up to ``context`` sub-tokens
        # of the words that follow; always at least one.
        pred_end, used = pred_start, 0
        while pred_end < num_words:
            n = piece_lengths[pred_end]
            reserve = min(context, suffix[pred_end + 1])
            if pred_end > pred_start and left + used + n + reserve > max_content:
                break
            used += n
            pred_end += 1
        # A single long predicted word may not fit beside the full left context: shrink it.
        while left + used > max_content:
            left -= piece_lengths[start]
            start += 1
        # Right context: whole words after the predicted ones, within the budget and the chunk size.
        end, right = pred_end, 0
        while (
            end < num_words
            and right + piece_lengths[end] <= context
            and left + used + right + piece_lengths[end] <= max_content
        ):
            right += piece_lengths[end]
            end += 1
        chunks.append(Chunk(start, end, pred_start, pred_end))
        pred_start = pred_end
    return chunks


@dataclass(frozen=True)
class WordPieces:
    """Sub-token ids of each word of one utterance, plus how many words needed repair."""

    pieces: list[list[int]]
    num_empty: int = 0
    num_truncated: int = 0


def _split_by_word(tokenizer, words: Sequence[str]) -> list[list[int]]:
    """Sub-token ids of each word, grouped by the tokenizer's word ids (never by ``##`` or ``Ġ`` marks)."""
    pieces: list[list[int]] = [[] for _ in words]
    if words:
        encoding = tokenizer(list(words), is_split_into_words=True, add_special_tokens=False)
        for token_id, word_id in zip(encoding["input_ids"], encoding.word_ids()):
            if word_id is not None:
                pieces[word_id].append(token_id)
    return pieces


def word_pieces(tokenizer, words: Sequence[str], max_content: int) -> WordPieces:
    """Sub-token ids per word, from a fast tokenizer (``is_split_into_words`` keeps word ids).

    Words are tokenised in NFC; a word with the unknown token among its sub-tokens is tokenised
    again without its diacritics, and keeps that if it has no unknown token.  A word with no
    sub-token gets the unknown token; one longer than ``max_content`` keeps its last
    ``max_content`` sub-tokens (its last sub-token is the one that is predicted).
    """
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"{type(tokenizer).__name__} is not a fast tokenizer; word ids are needed")
    words = [unicodedata.normalize("NFC", w) for w in words]
    pieces = _split_by_word(tokenizer, words)
    unk = tokenizer.unk_token_id
    for i, p in enumerate(pieces):
        if unk is not None and unk in p and strip_diacritics(words[i]) != words[i]:
            plain = _split_by_word(tokenizer, [strip_diacritics(words[i])])[0]
            if plain and unk not in plain:
                pieces[i] = plain
    num_empty = num_truncated = 0
    for i, p in enumerate(pieces):
        if not p:
            pieces[i] = [tokenizer.unk_token_id]
            num_empty += 1
        elif len(p) > max_content:
            pieces[i] = p[-max_content:]
            num_truncated += 1
    return WordPieces(pieces, num_empty, num_truncated)


class EncodedChunk(NamedTuple):
    """One encoder input: token ids with specials, and per predicted word its last sub-token position."""

    input_ids: list[int]
    word_positions: list[int]  # position in input_ids of the last sub-token of each predicted word
    word_indices: list[int]  # index of that word in the utterance


def special_ids(tokenizer) -> tuple:
    cls_id = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    sep_id = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    if cls_id is None or sep_id is None:
        raise ValueError(f"{type(tokenizer).__name__} has neither [CLS]/[SEP] nor <s>/</s> tokens")
    return cls_id, sep_id


def encode_chunks(
    pieces: Sequence[Sequence[int]], max_length: int, context: int, cls_id: int, sep_id: int
) -> list[EncodedChunk]:
    """Applies :func:`plan_chunks` to per-word sub-tokens and builds ``[CLS] ... [SEP]`` inputs."""
    chunks = plan_chunks([len(p) for p in pieces], max_length - 2, context)
    encoded = []
    for chunk in chunks:
        ids = [cls_id]
        positions, indices = [], []
        for w in range(chunk.start, chunk.end):
            ids.extend(pieces[w])
            if chunk.pred_start <= w < chunk.pred_end:
                positions.append(len(ids) - 1)
                indices.append(w)
        ids.append(sep_id)
        encoded.append(EncodedChunk(ids, positions, indices))
    return encoded


def log_repairs(repairs: WordPieces, where: str) -> None:
    if repairs.num_empty or repairs.num_truncated:
        logging.warning(
            "%s: %d word(s) without sub-tokens mapped to [UNK], %d over-long word(s) truncated",
            where,
            repairs.num_empty,
            repairs.num_truncated,
        )
