"""BERT's precision on this machine: ``punctuate --bert-precision float32|bf16|fastest``.

Whether bfloat16 pays depends on the CPU, not only on whether it has bf16 instructions: with AMX it was 1.6-1.8x
as fast as float32; on an AMD EPYC with AVX512-BF16 (no AMX) 1.7x; on an Intel Xeon with
AVX512-BF16 and no AMX it was slower (benchmarks/README.md, "BERT's precision per CPU kind").  So ``fastest``
measures: it runs the same text through :meth:`Chain.text_outputs` in both precisions and keeps bf16 only where
it is clearly faster.  float32 stays the default, since it is what the recipe's stages computed and scored.
"""

from __future__ import annotations

import copy
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from punct.labels import PUNCT4
from punct.models.text.data import Utterance
from punct.utils.device import bf16_pays, has_native_bf16

PRECISIONS = ("float32", "bf16", "fastest")
PROBE_TEXT = "so we decided to measure how long the model takes on a few hundred words of ordinary text"


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The instruction-set flags of the first processor in ``/proc/cpuinfo`` (empty where there is none)."""
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text() if path.exists() else ""
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def cpu_name(cpuinfo: str | None = None) -> str:
    """The first processor's model name in ``/proc/cpuinfo`` ("unknown" where there is none)."""
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text() if path.exists() else ""
    for line in cpuinfo.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def cpu_kind(flags: set[str]) -> str:
    """What of the CPU decides BERT's precision: AMX, AVX512-BF16 without AMX, or neither (and VNNI for int8)."""
    if "amx_bf16" in flags:
        kind = "AMX"
    elif "avx512_bf16" in flags:
        kind = "AVX512-BF16, no AMX"
    else:
        kind = "no bf16 instructions"
    vnni = "avx512_vnni" in flags or "avx_vnni" in flags
    return f"{kind}, {'VNNI' if vnni else 'no VNNI'}"


@dataclass(frozen=True)
class PrecisionChoice:
    precision: str  # float32 or bf16
    float32_seconds: float  # CPU seconds of the probe (0: not measured)
    bf16_seconds: float
    reason: str


def bf16_linear_twin(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``model`` whose ``nn.Linear`` layers hold their weights and biases in bfloat16; every other tensor
    (embeddings, norms) and attribute (a tokenizer) is ``model``'s own, not a copy.

    Under bfloat16 autocast it computes exactly what ``model`` does: autocast rounds a float32 weight to bf16
    the same way, but again on every call.  Rounding once saved 4 % of BERT-base's time on one thread of an
    AMD EPYC (BERT 0.0057 -> 0.0055 RTF, benchmarks/README.md); it costs the copy (2 bytes a Linear weight)."""
    linear_tensors = {
        id(t) for m in model.modules() if isinstance(m, torch.nn.Linear) for t in m.parameters(recurse=False)
    }
    memo = {id(v): v for k, v in vars(model).items() if not k.startswith("_")}  # a tokenizer, configs
    memo.update({id(t): t for t in (*model.parameters(), *model.buffers()) if id(t) not in linear_tensors})
    twin = copy.deepcopy(model, memo)
    for module in twin.modules():
        if isinstance(module, torch.nn.Linear):
            module.to(torch.bfloat16)
    return twin


def probe_utterances(num_words: int = 300) -> list[Utterance]:
    """A few hundred words of plain text: the probe both precisions run on."""
    text = PROBE_TEXT.split()
    words = [text[i % len(text)] for i in range(num_words)]
    return [Utterance("precision-probe", words, [PUNCT4.none] * num_words)]


def probe_seconds(punctuator, bf16: bool, repeats: int = 3) -> float:
    """Smallest CPU time of ``punctuator.text_outputs`` on the probe text, with BERT in bf16 or float32."""
    utterances = probe_utterances()
    saved = punctuator.bert_bf16
    punctuator.bert_bf16 = bf16
    try:
        punctuator.text_outputs(utterances)  # warm-up: first-call allocations and kernel choices
        times = []
        for _ in range(repeats):
            start = time.process_time()
            punctuator.text_outputs(utterances)
            times.append(time.process_time() - start)
    finally:
        punctuator.bert_bf16 = saved
    return min(times)


def fastest_bert_precision(punctuator, measure=probe_seconds) -> PrecisionChoice:
    """float32 or bf16, whichever runs BERT faster here (bf16 only where the device computes it natively)."""
    if not has_native_bf16(punctuator.device):
        return PrecisionChoice("float32", 0.0, 0.0, f"{punctuator.device} has no native bfloat16")
    float32_seconds = measure(punctuator, bf16=False)
    bf16_seconds = measure(punctuator, bf16=True)
    faster = bf16_pays(float32_seconds, bf16_seconds)
    return PrecisionChoice(
        "bf16" if faster else "float32",
        float32_seconds,
        bf16_seconds,
        f"probe: float32 {float32_seconds:.3f} s, bf16 {bf16_seconds:.3f} s CPU",
    )


def check_bf16(device: torch.device) -> None:
    """bfloat16 is fast only where the hardware has it: refuse it elsewhere rather than run slowly."""
    if has_native_bf16(device):
        return
    if device.type == "cuda":
        raise ValueError(f"{device} does not support bfloat16")
    raise ValueError(
        "this CPU has no bfloat16 instructions (AVX-512 BF16 / AMX): bf16 would be emulated and slower than float32"
    )


def set_bert_precision(punctuator, precision: str) -> PrecisionChoice:
    """Sets ``punctuator``'s BERT precision (``PRECISIONS``) and says what was chosen and why."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown BERT precision {precision!r} (one of {', '.join(PRECISIONS)})")
    if precision == "fastest":
        choice = fastest_bert_precision(punctuator)
    else:
        choice = PrecisionChoice(precision, 0.0, 0.0, "asked for")
    if choice.precision == "bf16":
        check_bf16(punctuator.device)
    punctuator.bert_bf16 = choice.precision == "bf16"
    if punctuator.device.type == "cpu":
        logging.info("BERT in %s (%s; CPU: %s)", choice.precision, choice.reason, cpu_kind(cpu_flags()))
    else:
        logging.info("BERT in %s (%s)", choice.precision, choice.reason)
    return choice
