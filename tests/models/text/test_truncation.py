"""punct.models.text.truncation: BERT training chunks cut on the right as live captions show the words."""

from __future__ import annotations

import pytest

from punct.models.text.data import Utterance, make_examples
from punct.models.text.truncation import cut_example, training_examples
from punct.training.truncation import RightTruncation

WORDS = ["the", "cat", "sat", "on", "unbelievably", "fast", "mat", "and", "the", "dog", "ran"]
LABELS = ["NP", ",", "NP", "NP", "NP", ".", "NP", "NP", "NP", "NP", "?"]


def test_a_cut_chunk_is_the_chunk_of_the_utterance_ending_at_the_cut(tiny_tokenizer):
    """An utterance that fits one chunk, cut after word k: the same tokens, positions and labels as the chunk of
    the utterance of its first k + 1 words (what a stream's BERT reads when the text so far ends there)."""
    [example] = make_examples([Utterance("u", WORDS, LABELS)], tiny_tokenizer, max_length=64, context=4)
    for k in range(len(WORDS)):
        cut = cut_example(example, k)
        [expected] = make_examples([Utterance("u", WORDS[: k + 1], LABELS[: k + 1])], tiny_tokenizer, 64, 4)
        assert cut == expected, k
    with pytest.raises(ValueError, match="word 11 of a chunk that predicts 11 words"):
        cut_example(example, len(WORDS))


def test_a_chunk_of_a_long_utterance_keeps_its_left_context(tiny_tokenizer):
    """In a chunk with left context the cut keeps the context and predicts its words up to the cut."""
    examples = make_examples([Utterance("u", WORDS * 3, LABELS * 3)], tiny_tokenizer, max_length=16, context=3)
    middle = next(e for e in examples if e.chunk.word_indices[0] > 0 and len(e.labels) > 1)
    cut = cut_example(middle, 0)
    assert cut.chunk.word_indices == middle.chunk.word_indices[:1] and cut.labels == middle.labels[:1]
    assert (
        cut.chunk.input_ids[: cut.chunk.word_positions[0] + 1] == middle.chunk.input_ids[: len(cut.chunk.input_ids) - 1]
    )
    assert cut.chunk.input_ids[-1] == tiny_tokenizer.sep_token_id
    assert cut.chunk.word_positions[0] == len(cut.chunk.input_ids) - 2  # its word's last sub-token precedes [SEP]


def test_draws_are_seeded_per_epoch_and_example(tiny_tokenizer):
    utterances = [Utterance(f"u{i}", WORDS[i:], LABELS[i:]) for i in range(8)]
    examples = make_examples(utterances, tiny_tokenizer, max_length=64, context=4)
    indices = list(range(len(examples)))
    assert training_examples(examples, indices, None, 7, 1) == examples
    everything = RightTruncation(1.0)
    epoch1 = training_examples(examples, indices, everything, 7, 1)
    assert epoch1 == training_examples(examples, indices, everything, 7, 1)  # a rerun draws the same cuts
    assert epoch1 != training_examples(examples, indices, everything, 7, 2)  # another epoch, other cuts
    assert all(e.labels == x.labels[: len(e.labels)] for e, x in zip(epoch1, examples))
    shorter = sum(len(e.labels) < len(x.labels) for e, x in zip(epoch1, examples))
    assert shorter >= len(examples) // 2
    half = training_examples(examples * 50, range(len(examples) * 50), RightTruncation(0.5), 7, 1)
    share = sum(e != x for e, x in zip(half, examples * 50)) / len(half)
    assert 0.3 < share < 0.5  # half are drawn; a cut after the last word leaves the chunk as it was
