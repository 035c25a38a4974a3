"""``--amp fastest`` (or ``amp: fastest`` in a config): the training precision chosen by timing the loop's own
training step in float32 and in bf16 on this machine.

Whether bf16 autocast pays depends on the CPU, not only on whether it has bf16 instructions: the TDNN acoustic
model trained 14 % slower in bf16 than in float32 on an Intel Xeon with AVX512-BF16 and no AMX, and 1.2-1.5x
faster on an AMD EPYC with the same instructions (benchmarks/README.md).  ``auto`` reads the instruction set;
``fastest`` measures.  bf16 is kept only where it takes at most ``BF16_MAX_TIME_SHARE`` of float32's time
(:func:`punct.utils.device.bf16_pays`, the rule of ``punctuate --bert-precision fastest`` too).

The probe runs forward and backward of a few steps on a *copy* of the model, without optimizer steps, with the
random generators forked, so the training that follows is exactly the training ``--amp`` with the chosen mode
would run.  Under torchrun every rank measures and the summed times decide, so all ranks agree.

Each timed step takes another of the training's first batches (:data:`PROBE_BATCHES`), so a step pays what a
training step pays when the batch shapes keep changing: oneDNN compiles its kernels per input shape, and on a Xeon
with AMX the bf16 kernels cost far more to compile than to run.  Timed on one batch repeated, bf16 looked faster for
egs/parczech's acoustic model there (0.123 against 0.172 s per step) and its epochs then took 2:45-4:22 min, where
float32's took 1:20 (DynamicBucketingSampler: nearly every batch a new shape; benchmarks/README.md).  Models whose
batches keep one shape (the TDNN's windows) pay the compilation once, in the warm-up step, as in their training.
"""

from __future__ import annotations

import copy
import functools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from punct.training.loop import Amp
from punct.utils.device import bf16_pays, has_native_bf16

FASTEST = "fastest"

PROBE_BATCHES = 4  # the warm-up step's batch and the timed steps' (one each)

# loss_of(model, amp, i): the training loss of ``model`` on probe batch ``i`` (0: the warm-up's), its forward pass
# under ``amp.autocast()``
LossOf = Callable[[torch.nn.Module, Amp, int], torch.Tensor]


def probe_index_batches(num_examples: int, batch_size: int) -> list[range]:
    """The example indices of the first :data:`PROBE_BATCHES` full batches of ``batch_size`` (fewer if the data is
    short; one of all examples if it holds less than a batch): no batch is smaller than training's."""
    count = max(1, min(PROBE_BATCHES, num_examples // batch_size))
    return [range(k * batch_size, min((k + 1) * batch_size, num_examples)) for k in range(count)]


def probe_loss_of(
    make_batches: Callable[[], Sequence[Any]], loss: Callable[[torch.nn.Module, Any, Amp], torch.Tensor]
) -> LossOf:
    """A :data:`LossOf` on the training batches that ``make_batches`` makes on first use (at most
    :data:`PROBE_BATCHES`, as training would see them; fewer are reused in turn): only ``--amp fastest`` makes them,
    inside the probe's forked random generators."""
    batches = functools.cache(make_batches)

    def loss_of(model: torch.nn.Module, amp: Amp, i: int) -> torch.Tensor:
        made = batches()
        if not made:
            raise ValueError("--amp fastest: no training batch to time")
        return loss(model, made[i % len(made)], amp)

    return loss_of


@dataclass(frozen=True)
class AmpChoice:
    mode: str  # none or bf16
    float32_seconds: float  # per step, the mean of the probe's timed steps (0: not measured)
    bf16_seconds: float
    reason: str


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _clock(device: torch.device) -> float:
    """CPU seconds of this process on the CPU (steadier than wall time on a shared machine), wall seconds on a GPU."""
    return time.perf_counter() if device.type == "cuda" else time.process_time()


def step_seconds(
    model: torch.nn.Module, loss_of: LossOf, amp: Amp, device: torch.device, repeats: int = PROBE_BATCHES - 1
) -> float:
    """Mean time of a training step's forward and backward under ``amp`` over ``repeats`` steps, each on the next
    probe batch, after a warm-up step on batch 0, on a copy of ``model`` (no optimizer step, random generators
    restored afterwards: the training is not changed)."""
    probe = copy.deepcopy(model).train()
    cuda_devices = []
    if device.type == "cuda":
        cuda_devices = [device.index if device.index is not None else torch.cuda.current_device()]
    times = []
    with torch.random.fork_rng(devices=cuda_devices):
        for repeat in range(repeats + 1):
            _synchronize(device)
            start = _clock(device)
            loss_of(probe, amp, repeat).backward()
            probe.zero_grad(set_to_none=True)
            _synchronize(device)
            if repeat > 0:  # the first step is a warm-up: first-call allocations, and batch 0's kernels
                times.append(_clock(device) - start)
    return sum(times) / len(times)


def _summed_over_ranks(seconds: list[float], device: torch.device) -> list[float]:
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return seconds
    totals = torch.tensor(seconds, dtype=torch.float64, device=device)
    torch.distributed.all_reduce(totals)
    return totals.tolist()


def fastest_amp(model: torch.nn.Module, loss_of: LossOf, device: torch.device, measure=step_seconds) -> AmpChoice:
    """none or bf16, whichever trains ``model`` faster here (bf16 only where ``device`` computes it natively)."""
    if not has_native_bf16(device):
        return AmpChoice("none", 0.0, 0.0, f"{device} has no native bfloat16")
    seconds = [measure(model, loss_of, Amp(mode, device.type), device) for mode in ("none", "bf16")]
    float32_seconds, bf16_seconds = _summed_over_ranks(seconds, device)
    return AmpChoice(
        "bf16" if bf16_pays(float32_seconds, bf16_seconds) else "none",
        float32_seconds,
        bf16_seconds,
        f"probe: float32 {float32_seconds:.3f} s, bf16 {bf16_seconds:.3f} s per step",
    )


def check_amp(mode: str, device: torch.device) -> None:
    """Refuses an impossible ``--amp`` (fp16 on the CPU, bf16 on a GPU without it) before any data is read;
    ``fastest`` is checked when :func:`training_amp` resolves it."""
    if mode != FASTEST:
        Amp(mode, device.type)


def training_amp(
    mode: str,
    device: torch.device,
    model: torch.nn.Module,
    loss_of: LossOf,
    measure=step_seconds,
    *,
    state: Any = None,
) -> Amp:
    """The :class:`Amp` of ``--amp mode``; ``fastest`` is resolved here by :func:`fastest_amp` on ``model``
    (unwrapped from DDP) and ``loss_of`` (the loop's loss on its first training batches).

    ``state``: the loop's training state (saved in every ``epoch-N.pt``), whose ``amp`` field records the mode
    ``fastest`` chose: a resumed run trains on in that mode instead of probing again (a second probe, on a
    machine that is busier or another, could switch the precision half-way through a training)."""
    if mode != FASTEST:
        return Amp(mode, device.type)
    if state is not None and state.amp:
        logging.info("--amp fastest: %s, as chosen when this training started (resumed)", _name(state.amp))
        return Amp(state.amp, device.type)
    choice = fastest_amp(model, loss_of, device, measure)
    logging.info("--amp fastest: %s (%s)", _name(choice.mode), choice.reason)
    if state is not None:
        state.amp = choice.mode
    return Amp(choice.mode, device.type)


def _name(mode: str) -> str:
    return "bf16" if mode == "bf16" else "float32"
