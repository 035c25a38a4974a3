"""Utterances (words + labels) for the text branch, and their encoder-sized examples.

Words and labels come from the supervisions' ``custom["words"]`` / ``custom["punct"]``
(data contract); the manifests are read line by line so that a bad record is reported
with its file and line.  Optional extra training text (punctuated prose) goes through
:func:`punct.text.normalize.normalize` and is cut into pseudo-utterances.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from lhotse.utils import Pathlike

from punct.io.jsonl import count_records, open_text, read_jsonl
from punct.labels import PUNCT4, WordLabels, class_index
from punct.models.text.chunking import EncodedChunk, WordPieces, encode_chunks, log_repairs, special_ids, word_pieces
from punct.text.normalize import NormalizeConfig, normalize
from punct.utils.jobs import job_share_lazy


class Utterance(NamedTuple):
    id: str
    words: list[str]
    labels: list[str]


def read_utterances(path: Pathlike, classes: Sequence[str] = PUNCT4.classes) -> list[Utterance]:
    """Supervisions of a lhotse ``*.jsonl(.gz)`` manifest -> utterances.

    A record without ``custom.words``/``custom.punct``, with lists of different lengths or an
    unknown label is an error naming the file and line.
    """
    return list(iter_utterances(path, classes))


def iter_utterances(path: Pathlike, classes: Sequence[str] = PUNCT4.classes) -> Iterator[Utterance]:
    """:func:`read_utterances`, one at a time."""
    for where, record in read_jsonl(path, "supervision manifest"):
        labelled = WordLabels.from_supervision(record, classes, where=where)
        yield Utterance(labelled.id, list(labelled.words), list(labelled.punct))


def job_utterances(path: Pathlike, job: int, nj: int, classes: Sequence[str] = PUNCT4.classes) -> list[Utterance]:
    """Job ``job`` of ``nj``'s share of :func:`read_utterances`, holding only the share."""
    count = count_records(path, "supervision manifest")
    return job_share_lazy(iter_utterances(path, classes), job, nj, count=count)


def read_extra_text(
    path: Pathlike, words_per_utterance: int, max_words: int = 0, norm: NormalizeConfig | None = None
) -> list[Utterance]:
    """Punctuated prose -> pseudo-utterances of ``words_per_utterance`` words.

    Paragraphs (blank-line separated) are normalised with ``norm`` (the mark -> label mapping the
    corpus was prepared with, e.g. the recipe's conf/normalize.yaml; None: the defaults) and the
    words concatenated; ``max_words`` > 0 keeps only that many words.
    """
    norm = norm or NormalizeConfig()

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such extra text file")
    if words_per_utterance < 1:
        raise ValueError(f"words_per_utterance must be >= 1, got {words_per_utterance}")
    words: list[str] = []
    labels: list[str] = []
    paragraph: list[str] = []

    unspeakable: list[str] = []

    def flush() -> None:
        if paragraph:
            result = normalize(" ".join(paragraph), norm)
            words.extend(result.words)
            labels.extend(result.labels)
            unspeakable.extend(result.unspeakable)  # text only: nothing to say; counted, and the words go on
            paragraph.clear()

    with open_text(path) as f:
        for line in f:
            if line.strip():
                paragraph.append(line.strip())
            else:
                flush()
            if max_words and len(words) >= max_words:
                break
    flush()
    if unspeakable:
        logging.info(
            "%s: %d unspeakable token(s) left out of the words (e.g. %s)",
            path,
            len(unspeakable),
            ", ".join(unspeakable[:3]),
        )
    if max_words:
        words, labels = words[:max_words], labels[:max_words]
    stem = path.name.split(".")[0]
    return [
        Utterance(
            f"{stem}-{i // words_per_utterance}",
            words[i : i + words_per_utterance],
            labels[i : i + words_per_utterance],
        )
        for i in range(0, len(words), words_per_utterance)
    ]


class Example(NamedTuple):
    """One encoder input of one utterance, with the labels of its predicted words."""

    utt_index: int
    chunk: EncodedChunk
    labels: list[int]


def make_examples(
    utterances: Sequence[Utterance],
    tokenizer,
    max_length: int,
    context: int,
    classes: Sequence[str] = PUNCT4.classes,
    where: str = "data",
) -> list[Example]:
    """Tokenizes and chunks every utterance; utterances without words are counted and skipped."""
    index = class_index(classes)
    cls_id, sep_id = special_ids(tokenizer)
    examples: list[Example] = []
    empty = repaired_empty = repaired_long = 0
    for u, utt in enumerate(utterances):
        if not utt.words:
            empty += 1
            continue
        pieces = word_pieces(tokenizer, utt.words, max_length - 2)
        repaired_empty += pieces.num_empty
        repaired_long += pieces.num_truncated
        for chunk in encode_chunks(pieces.pieces, max_length, context, cls_id, sep_id):
            examples.append(Example(u, chunk, [index[utt.labels[w]] for w in chunk.word_indices]))
    if empty:
        logging.info("%s: skipped %d utterance(s) without words", where, empty)
    log_repairs(WordPieces([], repaired_empty, repaired_long), where)
    return examples


def batches(examples: Sequence[Example], batch_size: int, shuffle: bool, seed: int = 0) -> Iterator[list[Example]]:
    """Batches of examples; shuffled with ``seed`` (use seed + epoch for a new order each epoch)."""
    order = list(range(len(examples)))
    if shuffle:
        random.Random(seed).shuffle(order)
    for i in range(0, len(order), batch_size):
        yield [examples[j] for j in order[i : i + batch_size]]
