"""train_bert's options that cut the text branch's compute: ``batching: length`` (chunks of like length
together), ``freeze_layers`` (the embeddings and the lowest layers not trained), ``freeze_embeddings`` and
``encoder_layers`` (only the first layers kept)."""

from __future__ import annotations

import random

import pytest
import torch

from punct.bin import train_bert
from punct.models.text import train as text_train
from punct.models.text.config import BertTrainConfig
from punct.models.text.model import PunctBert
from punct.training.loop import DistInfo
from tests.helpers.text_model import make_encoder
from tests.models.text.test_train_gpu_options import args, data, model_state  # noqa: F401  (the data fixture)


def padded_tokens(batches: list[list[int]], lengths: list[int]) -> int:
    return sum(len(b) * max(lengths[i] for i in b) for b in batches)


def test_length_batches_hold_like_lengths_and_every_chunk_once():
    rng = random.Random(3)
    lengths = [rng.randint(10, 90) for _ in range(203)]
    plain = text_train.epoch_batches(range(203), 16, seed=4, dist=DistInfo())
    by_length = text_train.epoch_batches(range(203), 16, seed=4, dist=DistInfo(), lengths=lengths)
    assert sorted(i for b in by_length for i in b) == list(range(203))
    assert [len(b) for b in by_length].count(16) == 12
    assert padded_tokens(by_length, lengths) < 1.1 * sum(lengths) < padded_tokens(plain, lengths)
    spans = sorted((min(lengths[i] for i in b), max(lengths[i] for i in b)) for b in by_length)
    assert all(hi <= next_lo for (_, hi), (next_lo, _) in zip(spans, spans[1:]))  # consecutive runs of lengths
    other_epoch = text_train.epoch_batches(range(203), 16, seed=5, dist=DistInfo(), lengths=lengths)
    assert [b[0] for b in other_epoch] != [b[0] for b in by_length]  # the batches come in another order


def test_two_ranks_share_each_global_batch_of_like_length():
    lengths = [i % 37 for i in range(64)]
    one = text_train.epoch_batches(range(64), 8, seed=1, dist=DistInfo(), lengths=lengths)
    ranks = [text_train.epoch_batches(range(64), 4, 1, DistInfo(rank=r, world_size=2), lengths) for r in (0, 1)]
    assert [sorted(a + b) for a, b in zip(*ranks)] == [sorted(b) for b in one]


def test_frozen_layers_keep_their_pretrained_weights_and_the_rest_learns(data):  # noqa: F811
    exp = data / "exp_frozen"
    train_bert.main(args(data, exp, "--batch-size", "8", "--num-epochs", "1", "--freeze-layers", "1"))
    trained = model_state(exp, 1)
    init = {f"encoder.{k}": v for k, v in make_encoder(max_positions=64).state_dict().items()}  # the data's encoder
    frozen = [k for k in init if ".embeddings." in k or ".layer.0." in k]
    trained_layers = [k for k in init if ".layer.1." in k and k.endswith("weight")]
    assert frozen and trained_layers
    assert all(torch.equal(trained[k], init[k]) for k in frozen)
    assert all(not torch.equal(trained[k], init[k]) for k in trained_layers)
    with pytest.raises(ValueError, match=r"freeze_layers must be in 0\.\.2 for this encoder, got 3"):
        PunctBert.from_encoder(str(data / "tiny-bert")).freeze_lower_layers(3)


def test_frozen_embeddings_keep_their_pretrained_weights_and_every_layer_learns(data):  # noqa: F811
    exp = data / "exp_frozen_embeddings"
    train_bert.main(args(data, exp, "--batch-size", "8", "--num-epochs", "1", "--freeze-embeddings", "true"))
    trained = model_state(exp, 1)
    init = {f"encoder.{k}": v for k, v in make_encoder(max_positions=64).state_dict().items()}
    frozen = [k for k in init if ".embeddings." in k]
    layer_weights = [k for k in init if ".layer." in k and k.endswith("weight")]
    assert frozen and layer_weights
    assert all(torch.equal(trained[k], init[k]) for k in frozen)
    assert all(not torch.equal(trained[k], init[k]) for k in layer_weights)


def test_an_encoder_cut_to_its_first_layer_trains_saves_and_loads_as_one_layer(data):  # noqa: F811
    exp = data / "exp_one_layer"
    train_bert.main(args(data, exp, "--batch-size", "8", "--num-epochs", "1", "--encoder-layers", "1"))
    trained = model_state(exp, 1)
    init = {f"encoder.{k}": v for k, v in make_encoder(max_positions=64).state_dict().items()}
    assert not any(".layer.1." in k for k in trained)  # the second of the data's two layers is gone
    layer_0 = [k for k in init if ".layer.0." in k and k.endswith("weight")]
    assert layer_0 and all(not torch.equal(trained[k], init[k]) for k in layer_0)
    best = PunctBert.from_pretrained(exp / "best-valid-f1")
    assert best.encoder.config.num_hidden_layers == 1 and len(best.encoder.encoder.layer) == 1
    assert all(torch.equal(v, trained[k]) for k, v in best.state_dict().items() if k in trained)
    with pytest.raises(ValueError, match="an encoder needs at least one layer, got 0"):
        best.keep_first_layers(0)


def test_freeze_values_are_checked():
    with pytest.raises(ValueError, match="freeze_layers must be >= 0"):
        BertTrainConfig(freeze_layers=-1)
    with pytest.raises(ValueError, match=r"freeze_layers \(2\) must be below encoder_layers \(2\)"):
        BertTrainConfig(encoder_layers=2, freeze_layers=2)
    with pytest.raises(ValueError, match="batching must be one of random, length"):
        BertTrainConfig(batching="sorted")
