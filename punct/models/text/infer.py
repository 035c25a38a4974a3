"""Per-word outputs of a :class:`PunctBert` for whole utterances (any length).

Utterances are chunked by :mod:`punct.models.text.chunking` (each word predicted exactly once),
run in batches (packed rows without padding, :mod:`punct.models.text.packing`, or padded batches of similar
length), and the per-word results put back in word order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np
import torch

from punct.models.text.data import Utterance, make_examples
from punct.models.text.model import PunctBert, collate_chunks
from punct.models.text.packing import first_position, pack_chunks


class WordOutputs(NamedTuple):
    id: str
    vectors: np.ndarray  # (W, H) final hidden state at each word's last sub-token
    posteriors: dict[str, np.ndarray]  # head -> (W, C) softmax


@torch.no_grad()
def predict_words(
    model: PunctBert,
    utterances: Sequence[Utterance],
    max_length: int,
    context: int,
    batch_size: int,
    device: torch.device,
    group_size: int = 512,
) -> Iterator[WordOutputs]:
    """Yields one :class:`WordOutputs` per utterance, in input order (0-row arrays for no words)."""
    model.eval()
    pad_id = model.tokenizer.pad_token_id if model.tokenizer.pad_token_id is not None else 0
    hidden = model.hidden_size
    for g in range(0, len(utterances), group_size):
        group = utterances[g : g + group_size]
        examples = _examples(group, model, max_length, context)
        vectors = [np.zeros((len(u.words), hidden), dtype=np.float32) for u in group]
        posts = {
            h.name: [np.zeros((len(u.words), len(h.classes)), dtype=np.float32) for u in group]
            for h in model.head_specs
        }
        for batch_examples, vec, probs in _batch_outputs(model, examples, batch_size, pad_id, device):
            for row, e in enumerate(batch_examples):
                n = len(e.chunk.word_indices)
                idx = np.asarray(e.chunk.word_indices, dtype=np.int64)
                vectors[e.utt_index][idx] = vec[row][:n]
                for name in posts:
                    posts[name][e.utt_index][idx] = probs[name][row][:n]
        for u, utt in enumerate(group):
            yield WordOutputs(utt.id, vectors[u], {name: posts[name][u] for name in posts})


def _batch_outputs(model: PunctBert, examples: Sequence, batch_size: int, pad_id: int, device: torch.device):
    """Yields (examples of a batch, per-example word vectors, head -> per-example posteriors) as numpy arrays.

    Batches of ``batch_size`` chunks packed into one row where the encoder allows it
    (:mod:`punct.models.text.packing`), else padded batches of chunks of similar length."""
    first = first_position(model.encoder)
    if first is None:
        batches = similar_length_batches([len(e.chunk.input_ids) for e in examples], batch_size)
    else:
        batches = [list(range(i, min(i + batch_size, len(examples)))) for i in range(0, len(examples), batch_size)]
    for batch_indices in batches:
        batch_examples = [examples[i] for i in batch_indices]
        chunks = [(e.chunk.input_ids, e.chunk.word_positions) for e in batch_examples]
        if first is None:
            batch = collate_chunks(chunks, pad_id)
            vec, logits = model(
                batch["input_ids"].to(device), batch["attention_mask"].to(device), batch["word_positions"].to(device)
            )
        else:
            row = pack_chunks(chunks, first)
            vec, logits = model.forward_packed(row.to(device))
        vec = vec.float().cpu().numpy()  # (N, W, H) padded, or (words, H) packed
        probs = {name: torch.softmax(x.float(), dim=-1).cpu().numpy() for name, x in logits.items()}
        if first is not None:  # one array per chunk, as the padded batch's rows
            ends = np.cumsum(row.words_per_chunk)[:-1]
            vec, probs = np.split(vec, ends), {name: np.split(p, ends) for name, p in probs.items()}
        yield batch_examples, vec, probs


def word_outputs(
    model: PunctBert,
    utterances: Sequence[Utterance],
    max_length: int,
    context: int,
    batch_size: int,
    device: torch.device,
    vector_model: PunctBert | None = None,
) -> Iterator[WordOutputs]:
    """:func:`predict_words` of ``model``, with the word vectors of ``vector_model`` when given (e.g. the
    encoder ``model`` was fine-tuned from: ``punct.models.text.model.pretrained_encoder_model``): stage 6's
    dump and ``punctuate`` both get a TDNN's word vectors here."""
    outputs = predict_words(model, utterances, max_length, context, batch_size, device)
    if vector_model is None:
        yield from outputs
        return
    vectors = predict_words(vector_model, utterances, max_length, context, batch_size, device)
    for out, vec in zip(outputs, vectors, strict=True):
        if out.id != vec.id or out.vectors.shape[0] != vec.vectors.shape[0]:
            raise RuntimeError(
                f"word vectors of {vec.id} ({vec.vectors.shape[0]} words) do not match {out.id} "
                f"({out.vectors.shape[0]} words)"
            )
        yield WordOutputs(out.id, vec.vectors, out.posteriors)


def similar_length_batches(lengths: Sequence[int], batch_size: int, max_padding: float = 0.2) -> list[list[int]]:
    """Indices of ``lengths`` sorted by length and cut into batches of at most ``batch_size`` whose padding
    is at most ``max_padding`` of the batch's tokens: padded positions cost as much as real ones, so one
    batch of 7 chunks of 20-46 tokens took ~10 % longer than batches of like lengths (BERT-base, one CPU thread)."""
    batches: list[list[int]] = []
    tokens = 0
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        if batches and len(batches[-1]) < batch_size:
            padded = (len(batches[-1]) + 1) * lengths[i]
            if padded - (tokens + lengths[i]) <= max_padding * padded:
                batches[-1].append(i)
                tokens += lengths[i]
                continue
        batches.append([i])
        tokens = lengths[i]
    return batches


def _examples(group: Sequence[Utterance], model: PunctBert, max_length: int, context: int):
    """Examples without labels (inference needs only the words)."""
    unlabeled = [Utterance(u.id, u.words, [model.head_specs[0].classes[0]] * len(u.words)) for u in group]
    return make_examples(
        unlabeled, model.tokenizer, max_length, context, model.head_specs[0].classes, where="inference"
    )
