"""Packed rows of chunks (punct.models.text.packing) against each chunk read alone and against padded batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from punct.models.text import infer, packing
from punct.models.text.chunking import encode_chunks, special_ids, word_pieces
from punct.models.text.data import Utterance
from punct.models.text.model import HeadSpec, PunctBert
from tests.helpers import tiny_bert

CPU = torch.device("cpu")
WORDS = ["the", "cat", "sat", "on", "unbelievably", "long", "mats", "and", "slept"]


def utterances(lengths, seed: int = 0) -> list[Utterance]:
    rng = np.random.default_rng(seed)
    return [Utterance(f"u{k}", list(rng.choice(WORDS, n)), ["NP"] * n) for k, n in enumerate(lengths)]


@pytest.fixture
def bert(tiny_tokenizer, tiny_encoder) -> PunctBert:
    return PunctBert(tiny_encoder, tiny_tokenizer, [HeadSpec(hidden=8)]).eval()


@pytest.fixture
def roberta(tmp_path) -> PunctBert:
    folder = tiny_bert.make_roberta_folder(tmp_path / "roberta", [" ".join(WORDS)] * 4)
    return PunctBert.from_encoder(str(folder), [HeadSpec(hidden=8)]).eval()


def test_first_position_follows_the_encoders_own_numbering(bert, roberta):
    assert packing.first_position(bert.encoder) == 0
    assert packing.first_position(roberta.encoder) == roberta.encoder.config.pad_token_id + 1 == 2
    bert.encoder.config.position_embedding_type = "relative_key"  # positions relative to the padded row
    assert packing.first_position(bert.encoder) is None
    assert packing.first_position(torch.nn.Linear(2, 2)) is None  # not a transformers encoder: padded batches


@pytest.mark.parametrize("encoder", ["bert", "roberta"])
def test_a_packed_chunk_sees_what_it_sees_alone(encoder, request):
    """Each chunk of a packed row gets the vectors the encoder gives that chunk on its own (no padding, no
    packing): positions start again and attention stays inside the chunk."""
    model = request.getfixturevalue(encoder)
    cls_id, sep_id = special_ids(model.tokenizer)
    chunks = []
    for utt in utterances([3, 17, 5, 1]):
        pieces = word_pieces(model.tokenizer, utt.words, 30).pieces
        chunks += [(c.input_ids, c.word_positions) for c in encode_chunks(pieces, 32, 4, cls_id, sep_id)]
    row = packing.pack_chunks(chunks, packing.first_position(model.encoder))
    assert row.input_ids.shape == (1, sum(len(ids) for ids, _ in chunks))
    with torch.no_grad():
        vectors, logits = model.forward_packed(row)
        alone = [model.encoder(input_ids=torch.tensor([ids])).last_hidden_state[0, words] for ids, words in chunks]
    assert (
        vectors.shape
        == (sum(len(w) for _, w in chunks), model.hidden_size)
        == logits["punct"].shape[:1] + (model.hidden_size,)
    )
    assert torch.allclose(vectors, torch.cat(alone), atol=1e-5)
    # a wrong numbering would not pass: positions counted across the row change the later chunks
    shifted = packing.PackedRow(
        row.input_ids,
        torch.arange(row.input_ids.shape[1]).unsqueeze(0) + packing.first_position(model.encoder),
        row.chunk_bounds,
        row.word_positions,
        row.words_per_chunk,
    )
    with torch.no_grad():
        assert not torch.allclose(model.forward_packed(shifted)[0], vectors, atol=1e-3)


@pytest.mark.parametrize("encoder", ["bert", "roberta"])
def test_packed_and_padded_batches_give_the_same_words(encoder, request, monkeypatch):
    model = request.getfixturevalue(encoder)
    utts = utterances([3, 17, 5, 11, 2, 40, 9])  # 40 words: several chunks of 24 tokens
    packed = list(infer.predict_words(model, utts, 24, 4, 3, CPU))
    monkeypatch.setattr(infer, "first_position", lambda encoder: None)
    padded = list(infer.predict_words(model, utts, 24, 4, 3, CPU))
    for a, b in zip(packed, padded, strict=True):
        assert a.id == b.id and a.vectors.shape == b.vectors.shape == (len(a.vectors), model.hidden_size)
        assert np.abs(a.vectors).sum(axis=1).min() > 0  # every word filled
        assert np.allclose(a.vectors, b.vectors, atol=1e-5)
        assert np.allclose(a.posteriors["punct"], b.posteriors["punct"], atol=1e-5)


def test_the_encoders_attention_is_restored(bert):
    before = bert.encoder.config._attn_implementation
    row = packing.pack_chunks([([2, 5, 6, 3], [1, 2])], 0)
    with torch.no_grad():
        bert.forward_packed(row)
    assert bert.encoder.config._attn_implementation == before
    with pytest.raises(RuntimeError), packing.packed_attention(bert.encoder):
        assert bert.encoder.config._attn_implementation == packing.CHUNK_ATTENTION
        raise RuntimeError("interrupted")
    assert bert.encoder.config._attn_implementation == before
    batch = {"input_ids": torch.tensor([[2, 5, 6, 3]]), "attention_mask": torch.ones(1, 4, dtype=torch.long)}
    with torch.no_grad():  # the usual padded forward still runs (training uses it)
        assert bert.encoder(**batch).last_hidden_state.shape == (1, 4, 32)


def test_chunk_attention_refuses_what_it_cannot_do():
    q = torch.zeros(1, 2, 4, 8)
    module = torch.nn.Identity().eval()
    with pytest.raises(ValueError, match="no attention mask"):
        packing.chunk_attention(module, q, q, q, torch.zeros(1, 1, 4, 4), chunk_bounds=((0, 4),))
    with pytest.raises(ValueError, match="chunk_bounds"):
        packing.chunk_attention(module, q, q, q, None)
    with pytest.raises(ValueError, match="at least one chunk"):
        packing.pack_chunks([], 0)


@pytest.mark.parametrize("encoder", ["bert", "roberta"])
def test_a_packed_training_batch_gives_the_padded_loss_and_gradients(encoder, request):
    """Stage 5 trains on packed rows: the same loss (SCL over the batch's words, in the same order) and the same
    gradients as the padded batch, without dropout; with dropout the packed row trains (a finite loss)."""
    from punct.models.text import train
    from punct.models.text.data import make_examples
    from punct.models.text.losses import LossConfig, build_loss

    model = request.getfixturevalue(encoder)
    rng = np.random.default_rng(1)
    utts = [
        Utterance(u.id, u.words, list(rng.choice([",", ".", "?", "NP"], len(u.words))))
        for u in utterances([3, 17, 5, 11, 2, 40, 9])
    ]
    examples = make_examples(utts, model.tokenizer, 24, 4)
    loss_fn = build_loss(LossConfig(name="scl"))
    pad_id, first = train.pad_token_id(model.tokenizer), packing.first_position(model.encoder)
    losses, grads = [], []
    for collate_first in (None, first):
        model.zero_grad()
        loss, words = train.compute_loss(model, loss_fn, train.collate_examples(examples, pad_id, collate_first), CPU)
        loss.backward()
        losses.append((loss.item(), words))
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
    assert "packed" in train.collate_examples(examples, pad_id, first)
    assert losses[0][1] == losses[1][1] == sum(len(e.labels) for e in examples)
    assert losses[0][0] == pytest.approx(losses[1][0], rel=1e-5)
    assert grads[0].shape == grads[1].shape and grads[0].abs().max() > 0
    assert torch.allclose(grads[0], grads[1], atol=1e-6, rtol=1e-4)
    model.train()  # attention and hidden dropout: another draw than the padded batch's, a loss all the same
    loss, _ = train.compute_loss(model, loss_fn, train.collate_examples(examples, pad_id, first), CPU)
    assert torch.isfinite(loss) and loss.item() != pytest.approx(losses[1][0], rel=1e-6)
