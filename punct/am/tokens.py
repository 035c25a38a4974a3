"""The character token table of the acoustic model (``exp/am/tokens.txt``: ``<symbol> <id>`` per line).

Id 0 is the CTC blank ``<blk>``; the word separator (a space in the text) is ``|``; the other
tokens are the characters of the training words (lowercase letters, digits, apostrophe).
The text of an utterance is its ``custom["words"]`` joined by single spaces (the data contract).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from lhotse.utils import Pathlike

from punct.utils.atomic import atomic_write_text

BLANK = "<blk>"
SPACE = "|"


class UnknownCharacterError(ValueError):
    pass


class TokenTable:
    def __init__(self, symbols: Sequence[str]) -> None:
        if not symbols or symbols[0] != BLANK:
            raise ValueError(f"token 0 must be {BLANK}")
        if len(set(symbols)) != len(symbols):
            raise ValueError("duplicate symbols in token table")
        self.symbols: list[str] = list(symbols)
        self.ids: dict[str, int] = {s: i for i, s in enumerate(self.symbols)}

    def __len__(self) -> int:
        return len(self.symbols)

    @property
    def space_id(self) -> int:
        return self.ids[SPACE]

    @staticmethod
    def from_words(word_lists: Iterable[Sequence[str]]) -> TokenTable:
        chars = set()
        for words in word_lists:
            for word in words:
                chars.update(word)
        chars.discard(" ")
        chars.discard(SPACE)
        return TokenTable([BLANK, SPACE] + sorted(chars))

    def encode_words(self, words: Sequence[str]) -> list[int]:
        """Token ids of the words joined by the separator; raises UnknownCharacterError."""
        ids: list[int] = []
        for i, word in enumerate(words):
            if i:
                ids.append(self.space_id)
            for ch in word:
                if ch not in self.ids or ch in (BLANK, SPACE):
                    raise UnknownCharacterError(f"character {ch!r} of word {word!r} is not in the token table")
                ids.append(self.ids[ch])
        return ids

    def decode_words(self, ids: Iterable[int]) -> list[str]:
        """Token ids (blanks and repeats already removed) -> words."""
        text = "".join(" " if i == self.space_id else self.symbols[i] for i in ids if i != 0)
        return text.split()

    def save(self, path: Pathlike) -> None:
        atomic_write_text(path, "".join(f"{s} {i}\n" for i, s in enumerate(self.symbols)))

    @staticmethod
    def load(path: Pathlike) -> TokenTable:
        symbols: list[str] = []
        for line_number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            fields = line.split()
            if len(fields) != 2 or not fields[1].isdigit() or int(fields[1]) != len(symbols):
                raise ValueError(f"{path}:{line_number}: expected '<symbol> {len(symbols)}', got {line!r}")
            symbols.append(fields[0])
        return TokenTable(symbols)
