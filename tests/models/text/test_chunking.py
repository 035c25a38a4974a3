"""Chunking of long word sequences: every word predicted exactly once, chunks fit, context kept."""

from __future__ import annotations

import random

import pytest
import torch

from punct.models.text.chunking import Chunk, encode_chunks, plan_chunks, word_pieces
from punct.models.text.data import Utterance
from punct.models.text.infer import predict_words
from punct.models.text.model import HeadSpec, PunctBert


def test_short_utterance_is_one_chunk():
    assert plan_chunks([1, 2, 3], max_content=6, context=2) == [Chunk(0, 3, 0, 3)]
    assert plan_chunks([], max_content=6, context=2) == []


def test_hand_worked_plan():
    # 10 one-token words, 6 tokens per chunk, 1 token of context on each side.
    assert plan_chunks([1] * 10, max_content=6, context=1) == [Chunk(0, 6, 0, 5), Chunk(4, 10, 5, 10)]


def check_plan(lengths, max_content, context):
    chunks = plan_chunks(lengths, max_content, context)
    predicted = [w for c in chunks for w in range(c.pred_start, c.pred_end)]
    assert predicted == list(range(len(lengths)))  # each word exactly once, in order
    for c in chunks:
        assert c.start <= c.pred_start < c.pred_end <= c.end
        size = sum(lengths[c.start : c.end])
        assert size <= max_content
        left = sum(lengths[c.start : c.pred_start])
        right = sum(lengths[c.pred_end : c.end])
        assert left <= context and right <= context
        # context is maximal: one more whole word would break the budget or the chunk size
        if c.start > 0:
            assert left + lengths[c.start - 1] > context or size + lengths[c.start - 1] > max_content
        if c.end < len(lengths):
            assert right + lengths[c.end] > context or size + lengths[c.end] > max_content
    return chunks


@pytest.mark.parametrize("seed", range(30))
def test_random_plans(seed):
    rng = random.Random(seed)
    max_content = rng.randint(3, 40)
    context = rng.randint(0, (max_content - 1) // 2)
    lengths = [rng.randint(1, min(max_content, rng.choice([1, 3, max_content]))) for _ in range(rng.randint(1, 120))]
    check_plan(lengths, max_content, context)


def test_word_as_long_as_the_chunk():
    chunks = check_plan([2, 2, 10, 2, 2], max_content=10, context=3)
    assert any(c.start == c.pred_start == 2 and c.end == c.pred_end == 3 for c in chunks)


def test_bad_arguments():
    with pytest.raises(ValueError):
        plan_chunks([1, 2], max_content=4, context=2)  # context must be < max_content / 2
    with pytest.raises(ValueError):
        plan_chunks([1, 5], max_content=4, context=1)  # a word longer than a chunk


def test_word_pieces_and_last_subtoken_positions(tiny_tokenizer):
    words = ["the", "unbelievably", "", "cat", "runs"]
    pieces = word_pieces(tiny_tokenizer, words, max_content=3)
    tokens = [tiny_tokenizer.convert_ids_to_tokens(p) for p in pieces.pieces]
    # "unbelievably" = un ##bel ##ie ##va ##bly: truncated to its last 3 sub-tokens; "" -> [UNK]
    assert tokens == [["the"], ["##ie", "##va", "##bly"], ["[UNK]"], ["cat"], ["run", "##s"]]
    assert (pieces.num_empty, pieces.num_truncated) == (1, 1)
    encoded = encode_chunks(pieces.pieces, max_length=30, context=2, cls_id=2, sep_id=3)
    assert len(encoded) == 1
    ids = encoded[0].input_ids
    assert ids[0] == 2 and ids[-1] == 3
    assert encoded[0].word_indices == [0, 1, 2, 3, 4]
    # each position is the word's last sub-token
    assert [tiny_tokenizer.convert_ids_to_tokens(ids[p]) for p in encoded[0].word_positions] == [
        "the",
        "##bly",
        "[UNK]",
        "cat",
        "##s",
    ]


def test_encode_chunks_positions_follow_plan(tiny_tokenizer):
    rng = random.Random(3)
    vocab_words = ["the", "cat", "unbelievably", "runs", "faster", "don't", "a"]
    words = [rng.choice(vocab_words) for _ in range(60)]
    pieces = word_pieces(tiny_tokenizer, words, max_content=14).pieces
    encoded = encode_chunks(pieces, max_length=16, context=3, cls_id=2, sep_id=3)
    assert len(encoded) > 1
    seen = []
    for e in encoded:
        assert len(e.input_ids) <= 16
        for pos, w in zip(e.word_positions, e.word_indices):
            assert e.input_ids[pos] == pieces[w][-1]
        seen.extend(e.word_indices)
    assert seen == list(range(len(words)))


def test_long_utterance_inference_fills_every_word(tiny_tokenizer, tiny_encoder):
    model = PunctBert(tiny_encoder, tiny_tokenizer, [HeadSpec(hidden=8)])
    model.eval()
    words = ["the", "cat", "unbelievably", "sat", "on", "the", "mat"] * 8
    utt = Utterance("long", words, ["NP"] * len(words))
    (out,) = list(predict_words(model, [utt], max_length=16, context=3, batch_size=3, device=torch.device("cpu")))
    assert out.vectors.shape == (len(words), 32)
    assert (abs(out.vectors).sum(axis=1) > 0).all()
    assert abs(out.posteriors["punct"].sum(axis=1) - 1).max() < 1e-5
    # The first chunk's words equal a direct forward pass over that chunk.
    pieces = word_pieces(tiny_tokenizer, words, 14).pieces
    first = encode_chunks(pieces, 16, 3, tiny_tokenizer.cls_token_id, tiny_tokenizer.sep_token_id)[0]
    with torch.no_grad():
        hidden = tiny_encoder(input_ids=torch.tensor([first.input_ids])).last_hidden_state[0]
    expected = hidden[first.word_positions].numpy()
    assert abs(out.vectors[first.word_indices] - expected).max() < 1e-5
