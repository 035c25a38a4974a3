"""Randomly truncated right context for BERT: training chunks that look like what live captions show it
(``punctuate --stream --latency L``, :mod:`punct.inference.streaming`).

A stream punctuates a word whose pause-delimited stretch is still open, once ``L`` seconds of audio after its
end have arrived, from the words reported so far: BERT reads them as if the text ended there, so at a short
``L`` the due word is the last or nearly the last one it sees.  Trained on whole utterances only, BERT learns
that the last word before [SEP] ends a sentence.  With ``right_truncation: p``
(:class:`punct.models.text.config.BertTrainConfig`) a share ``p`` of the training chunks is cut after one of
its predicted words (drawn uniformly, seeded by (seed, epoch, example):
:class:`punct.training.truncation.RightTruncation`): the sub-tokens after that word are dropped, [SEP] follows
it, and the predicted words up to it keep their labels, the last one with no right context, the one before it
with one word, and so on.  A chunk of an utterance that fits one chunk, cut after word ``k``, is the chunk of
the utterance of its first ``k + 1`` words (tests/models/text/test_truncation.py).  Dev scores stay on whole
utterances.
"""

from __future__ import annotations

from collections.abc import Sequence

from punct.models.text.chunking import EncodedChunk
from punct.models.text.data import Example
from punct.training.truncation import RightTruncation


def cut_example(example: Example, word: int) -> Example:
    """``example`` cut after its ``word``-th predicted word (0-based): later sub-tokens dropped, [SEP] kept."""
    chunk = example.chunk
    if not 0 <= word < len(chunk.word_positions):
        raise ValueError(f"word {word} of a chunk that predicts {len(chunk.word_positions)} words")
    end = chunk.word_positions[word] + 1
    cut = EncodedChunk(
        chunk.input_ids[:end] + chunk.input_ids[-1:],
        chunk.word_positions[: word + 1],
        chunk.word_indices[: word + 1],
    )
    return Example(example.utt_index, cut, example.labels[: word + 1])


def training_examples(
    examples: Sequence[Example], indices: Sequence[int], truncation: RightTruncation | None, seed: int, epoch: int
) -> list[Example]:
    """The examples at ``indices``, each cut as ``truncation`` draws for it in this epoch (None: none is)."""
    batch = []
    for i in indices:
        example = examples[i]
        cut = None if truncation is None else truncation.draw_word(seed, epoch, i, len(example.labels))
        batch.append(example if cut is None else cut_example(example, cut[0]))
    return batch
