"""punct.inference.precision: BERT's precision chosen per machine (``punctuate --bert-precision``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from punct.inference import precision
from punct.inference.precision import (
    bf16_linear_twin,
    cpu_flags,
    cpu_kind,
    fastest_bert_precision,
    probe_seconds,
    probe_utterances,
    set_bert_precision,
)
from punct.utils.device import has_native_bf16
from tests.helpers.random_recipe import random_recipe, stream_punctuator

XEON_AMX = "processor\t: 0\nflags\t\t: fpu sse avx512f avx512_vnni avx512_bf16 amx_bf16 amx_tile amx_int8\n"
EPYC = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 avx512f avx512_vnni avx512_bf16\n"
OLD = "processor\t: 0\nflags\t\t: fpu sse4_2 avx2 avx_vnni\n"


def test_cpu_kinds_from_cpuinfo():
    assert cpu_kind(cpu_flags(XEON_AMX)) == "AMX, VNNI"
    assert cpu_kind(cpu_flags(EPYC)) == "AVX512-BF16, no AMX, VNNI"
    assert cpu_kind(cpu_flags(OLD)) == "no bf16 instructions, VNNI"
    assert cpu_kind(cpu_flags("processor : 0\n")) == "no bf16 instructions, no VNNI"


class _FakePunctuator:
    device = torch.device("cpu")
    bert_bf16 = False


def test_fastest_keeps_bf16_only_when_clearly_faster(monkeypatch):
    monkeypatch.setattr(precision, "has_native_bf16", lambda device: True)

    def timings(float32: float, bf16: float):
        return lambda punctuator, bf16_on: bf16 if bf16_on else float32

    def choose(float32: float, bf16: float) -> str:
        measure = timings(float32, bf16)
        return fastest_bert_precision(_FakePunctuator(), lambda p, bf16: measure(p, bf16)).precision

    assert choose(1.0, 0.55) == "bf16"  # the AMD EPYC of benchmarks/README.md
    assert choose(1.0, 1.6) == "float32"  # the Xeon without AMX of the speed issue
    assert choose(1.0, 0.95) == "float32"  # a near tie stays exact


def test_fastest_measures_nothing_without_native_bf16(monkeypatch):
    monkeypatch.setattr(precision, "has_native_bf16", lambda device: False)

    def never(*args, **kwargs):
        raise AssertionError("measured although bf16 would be emulated")

    choice = fastest_bert_precision(_FakePunctuator(), never)
    assert choice.precision == "float32" and "no native bfloat16" in choice.reason


def test_probe_runs_the_real_text_path_and_restores_the_setting(tmp_path):
    punctuator = stream_punctuator(random_recipe(tmp_path, 3.0))
    assert len(probe_utterances(300)[0].words) == 300
    assert probe_seconds(punctuator, bf16=False, repeats=1) > 0
    assert punctuator.bert_bf16 is False
    choice = set_bert_precision(punctuator, "fastest")
    assert punctuator.bert_bf16 == (choice.precision == "bf16")
    if not has_native_bf16(punctuator.device):
        assert choice.precision == "float32"
    set_bert_precision(punctuator, "float32")
    exact = punctuator.text_outputs(probe_utterances(40))[0]
    reference = stream_punctuator(random_recipe(tmp_path / "again", 3.0)).text_outputs(probe_utterances(40))[0]
    np.testing.assert_array_equal(exact.vectors, reference.vectors)  # float32: the recipe's numbers, exactly
    with pytest.raises(ValueError, match="unknown BERT precision 'int4'"):
        set_bert_precision(punctuator, "int4")


@pytest.mark.skipif(not has_native_bf16(torch.device("cpu")), reason="this CPU has no native bfloat16")
def test_bf16_changes_the_numbers_a_little(tmp_path):
    punctuator = stream_punctuator(random_recipe(tmp_path, 3.0))
    utterances = probe_utterances(40)
    exact = punctuator.text_outputs(utterances)[0].posteriors["punct"]
    set_bert_precision(punctuator, "bf16")
    assert punctuator.bert_bf16
    approximate = punctuator.text_outputs(utterances)[0].posteriors["punct"]
    assert not np.array_equal(exact, approximate) and np.abs(exact - approximate).max() < 0.05


def test_the_bf16_twin_computes_what_autocast_does_and_shares_the_rest(tmp_path):
    punctuator = stream_punctuator(random_recipe(tmp_path, 3.0))
    bert = punctuator.bert
    twin = bf16_linear_twin(bert)
    linear = [name for name, m in twin.named_modules() if isinstance(m, torch.nn.Linear)]
    assert linear and all(m.weight.dtype == torch.bfloat16 for m in twin.modules() if isinstance(m, torch.nn.Linear))
    own = dict(bert.named_parameters())
    for name, tensor in twin.named_parameters():
        shared = tensor is own[name]
        assert shared == (name.rsplit(".", 1)[0] not in linear), name  # only the Linear weights are new
    assert twin.tokenizer is bert.tokenizer
    assert all(p.dtype == torch.float32 for p in bert.parameters())  # the original is left as it was
    ids = torch.randint(5, 50, (2, 12))
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        expected = bert.encoder(input_ids=ids).last_hidden_state
        got = twin.encoder(input_ids=ids).last_hidden_state
    assert torch.equal(expected, got)
    punctuator.bert_bf16 = True  # what set_bert_precision(punctuator, "bf16") sets where the CPU has bf16 instructions
    first = punctuator.text_outputs(probe_utterances(40))[0].posteriors["punct"]
    twins = punctuator._bf16_twins
    np.testing.assert_array_equal(punctuator.text_outputs(probe_utterances(40))[0].posteriors["punct"], first)
    assert punctuator._bf16_twins is twins  # made once, kept while the models are
