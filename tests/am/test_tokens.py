"""The token table (punct.am.tokens)."""

import pytest

from punct.am.tokens import BLANK, SPACE, TokenTable, UnknownCharacterError


def test_token_table_round_trip(tmp_path):
    table = TokenTable.from_words([["it's", "a"], ["cat", "42"]])
    assert table.symbols[:2] == [BLANK, SPACE]
    ids = table.encode_words(["a", "cat"])
    assert ids == [table.ids["a"], table.space_id, table.ids["c"], table.ids["a"], table.ids["t"]]
    table.save(tmp_path / "tokens.txt")
    assert (tmp_path / "tokens.txt").read_text().splitlines()[0] == "<blk> 0"
    loaded = TokenTable.load(tmp_path / "tokens.txt")
    assert loaded.symbols == table.symbols
    assert loaded.decode_words(ids) == ["a", "cat"]
    with pytest.raises(UnknownCharacterError, match="'z'"):
        table.encode_words(["zoo"])
    (tmp_path / "bad.txt").write_text("<blk> 0\na 2\n")
    with pytest.raises(ValueError, match="bad.txt:2"):
        TokenTable.load(tmp_path / "bad.txt")
