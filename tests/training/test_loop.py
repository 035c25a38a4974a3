"""punct.training.loop: --amp (Amp), per-rank batches (rank_batches, RankBatchSampler), DataLoader options."""

from __future__ import annotations

import argparse
import contextlib

import pytest
import torch

from punct.training import loop as training
from punct.training.loop import (
    AMP_MODES,
    NO_AMP,
    Amp,
    DistInfo,
    RankBatchSampler,
    add_amp_argument,
    like_length_batches,
    loader_options,
    rank_batches,
    resolve_amp,
)
from punct.utils.device import has_native_bf16


def test_fp16_on_cpu_and_unknown_modes_are_refused():
    with pytest.raises(ValueError, match="fp16 needs a CUDA device.*bf16"):
        Amp("fp16", "cpu")
    with pytest.raises(ValueError, match="--amp must be one of"):
        Amp("int8", "cpu")


def test_no_amp_is_float32_and_passes_through():
    assert not NO_AMP.enabled and NO_AMP.dtype == torch.float32
    assert isinstance(NO_AMP.autocast(), contextlib.nullcontext)
    assert not NO_AMP.scaler.is_enabled()


def test_bf16_autocast_on_cpu_runs_matmuls_in_bf16_and_keeps_float32_weights():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    amp = Amp("bf16", "cpu")
    assert not amp.scaler.is_enabled()  # bf16 needs no loss scaling
    before = model.weight.detach().clone()
    with amp.autocast():
        out = model(torch.randn(5, 4))
    assert out.dtype == torch.bfloat16
    loss = torch.nn.functional.cross_entropy(out.float(), torch.tensor([0, 1, 2, 0, 1]))
    amp.step(loss, optimizer, model.parameters(), grad_clip=1.0)
    assert torch.isfinite(loss)
    assert model.weight.dtype == torch.float32 and not torch.equal(before, model.weight)


def test_step_clips_the_gradient_norm():
    model = torch.nn.Linear(2, 1, bias=False)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    with torch.no_grad():
        model.weight.zero_()
    loss = (model(torch.tensor([[300.0, 400.0]])) - 1000.0).pow(2).sum()  # gradient norm 1e6
    NO_AMP.step(loss, optimizer, model.parameters(), grad_clip=2.0)
    assert model.weight.norm().item() == pytest.approx(2.0, rel=1e-5)


def test_amp_argument():
    parser = argparse.ArgumentParser()
    add_amp_argument(parser)
    assert parser.parse_args([]).amp == "none"
    assert parser.parse_args(["--amp", "bf16"]).amp == "bf16"
    assert set(AMP_MODES) == {"none", "bf16", "fp16"}
    with pytest.raises(SystemExit):
        parser.parse_args(["--amp", "fp32"])


def test_rank_batches_together_are_the_single_process_batches():
    order = [7, 3, 9, 0, 4, 8, 1, 6, 2, 5, 11, 10, 12]  # 13 items
    single = rank_batches(order, 4)
    assert single == [order[0:4], order[4:8], order[8:12], order[12:13]]  # one process: plain chunks, nothing cut
    ranks = [rank_batches(order, 2, DistInfo(r, 2, r)) for r in range(2)]
    assert len(ranks[0]) == len(ranks[1])  # every rank takes part in every step
    assert [len(b) for b in ranks[0]] == [len(b) for b in ranks[1]]
    merged = [sorted(a + b) for a, b in zip(*ranks)]
    assert merged == [sorted(b) for b in rank_batches(order[:12], 4)]  # the 13th item is cut (13 % 2)
    assert not set(ranks[0][0]) & set(ranks[1][0])


def _batches(loader) -> list:
    return [b.tolist() for b in loader]


@pytest.mark.parametrize("seed", [0, 17])
def test_rank_batch_sampler_keeps_the_shuffled_dataloader_order(seed):
    """One process: the same batches as DataLoader(shuffle=True, generator) with the same seed (the loader's
    worker-seed draw comes first from that generator in both)."""
    data = torch.arange(23)
    reference = torch.utils.data.DataLoader(
        data, batch_size=5, shuffle=True, generator=torch.Generator().manual_seed(seed)
    )
    generator = torch.Generator().manual_seed(seed)
    ours = torch.utils.data.DataLoader(
        data, batch_sampler=RankBatchSampler(len(data), 5, DistInfo(), generator), generator=generator
    )
    assert _batches(ours) == _batches(reference) and len(ours) == len(reference) == 5
    halves = []
    for rank in range(2):
        generator = torch.Generator().manual_seed(seed)
        sampler = RankBatchSampler(len(data), 5, DistInfo(rank, 2, rank), generator)
        halves.append(_batches(torch.utils.data.DataLoader(data, batch_sampler=sampler, generator=generator)))
        assert len(sampler) == len(halves[-1]) == 3  # 22 usable items in global batches of 10
    generator = torch.Generator().manual_seed(seed)
    whole = _batches(
        torch.utils.data.DataLoader(
            data, batch_sampler=RankBatchSampler(len(data), 10, DistInfo(), generator), generator=generator
        )
    )
    merged = [sorted(a + b) for a, b in zip(*halves)]
    assert merged[:2] == [sorted(b) for b in whole[:2]]
    assert set(merged[2]) < set(whole[2])  # the last global batch lost the item cut from the 23 (23 % 2)


def test_loader_options_pin_memory_for_gpus_only():
    assert loader_options(3, torch.device("cpu")) == {"num_workers": 3, "pin_memory": False}
    assert loader_options(0, torch.device("cuda", 0)) == {"num_workers": 0, "pin_memory": True}


@pytest.mark.parametrize("native", [True, False])
def test_auto_is_bf16_only_where_the_hardware_has_it(native, monkeypatch):
    monkeypatch.setattr(training, "has_native_bf16", lambda device: native)
    amp = Amp("auto", "cpu")
    assert amp.mode == ("bf16" if native else "none")
    assert amp.dtype == (torch.bfloat16 if native else torch.float32)
    assert resolve_amp("none", torch.device("cpu")) == "none" and resolve_amp("bf16", torch.device("cpu")) == "bf16"


def test_native_bf16_matches_what_torch_reports_for_this_cpu():
    assert has_native_bf16(torch.device("cpu")) == bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def test_like_length_batches_sort_a_shuffled_order_and_cut_it_as_rank_batches_do():
    lengths = [5, 1, 4, 1, 3, 9, 2, 2, 7]
    order = [8, 3, 0, 6, 1, 5, 2, 7, 4]
    assert like_length_batches(order, lengths, 3) == [[3, 1, 6], [7, 4, 2], [0, 8, 5]]  # ties keep their order
    two_ranks = like_length_batches(order, lengths, 2, world_size=2)
    assert two_ranks == [[3, 1, 6, 7], [2, 0, 8, 5]]  # order cut to 8 items (9 % 2: item 4 goes) first, as rank_batches
    assert sorted(i for b in two_ranks for i in b) == sorted(order[:8])
    # group 2: sorted within each run of 2 batches of the shuffled order, [8, 3, 0, 6, 1, 5] and [2, 7, 4]
    assert like_length_batches(order, lengths, 3, group=2) == [[3, 1, 6], [0, 8, 5], [7, 4, 2]]


@pytest.mark.parametrize("seed", [0, 17])
def test_rank_batch_sampler_with_lengths_gives_like_length_batches_in_a_seeded_order(seed):
    lengths = [int(x) for x in torch.randint(1, 60, (53,), generator=torch.Generator().manual_seed(seed))]
    data = torch.arange(len(lengths))

    def epoch(rank: int = 0, world: int = 1, batch_size: int = 4, epoch_seed: int = seed) -> list:
        generator = torch.Generator().manual_seed(epoch_seed)
        sampler = RankBatchSampler(len(data), batch_size, DistInfo(rank, world, rank), generator, lengths)
        batches = _batches(torch.utils.data.DataLoader(data, batch_sampler=sampler, generator=generator))
        assert len(sampler) == len(batches)
        return batches

    batches = epoch()
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))  # every item once
    spans = sorted((min(lengths[i] for i in b), max(lengths[i] for i in b)) for b in batches)
    assert all(hi <= next_lo for (_, hi), (next_lo, _) in zip(spans, spans[1:]))  # batches hold disjoint length ranges
    by_length = [min(lengths[i] for i in b) for b in batches]
    assert by_length != sorted(by_length)  # the batches come in a shuffled order
    assert epoch(epoch_seed=seed + 1) != batches  # a new order (and new ties) every epoch
    halves = [epoch(rank, 2, 2) for rank in range(2)]  # the global batches of 4, shared by 2 ranks
    assert len(halves[0]) == len(halves[1]) == 13  # 52 usable items (53 % 2 cut)
    merged = [a + b for a, b in zip(*halves)]
    assert len({i for b in merged for i in b}) == 52
    spans = sorted((min(lengths[i] for i in b), max(lengths[i] for i in b)) for b in merged)
    assert all(hi <= next_lo for (_, hi), (next_lo, _) in zip(spans, spans[1:]))
    with pytest.raises(ValueError, match="3 lengths for 53 items"):
        RankBatchSampler(53, 4, DistInfo(), torch.Generator(), [1, 2, 3])
