"""Token table, greedy CTC decoding and WER counting."""

import pytest
import torch

from punct.am.decode import WerStats, edit_ops, greedy_ids
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


def test_greedy_merges_repeats_and_drops_blanks():
    path = [0, 3, 3, 0, 3, 1, 1, 2, 0, 0]
    logits = torch.full((12, 4), -5.0)
    logits[torch.arange(10), torch.tensor(path)] = 5.0
    assert greedy_ids(logits, 10) == [3, 3, 1, 2]
    assert greedy_ids(logits, 3) == [3]


@pytest.mark.parametrize("ref,hyp,ops", [
    ("a b c d", "a x c d e", (1, 0, 1)),
    ("a b", "", (0, 2, 0)),
    ("", "a", (0, 0, 1)),
    ("a b c", "b c", (0, 1, 0)),
    ("the cat sat", "the cat sat", (0, 0, 0)),
])
def test_edit_operations(ref, hyp, ops):
    assert edit_ops(ref.split(), hyp.split()) == ops


def test_wer_summary():
    stats = WerStats()
    stats.add("a b c d".split(), "a x c d e".split())
    stats.add("e f".split(), "e f".split())
    assert stats.words == 6 and stats.errors == 2
    assert stats.wer == pytest.approx(100 * 2 / 6)
    assert stats.summary().startswith("%WER 33.33 [ 2 / 6, 1 ins, 0 del, 1 sub ]")
