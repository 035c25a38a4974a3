"""punct.inference.precision: BERT's precision chosen per machine (``punctuate --bert-precision``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from punct.inference import precision
from punct.inference.precision import (
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
