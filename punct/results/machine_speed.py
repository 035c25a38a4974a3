"""How fast this machine computes right now: a fixed one-thread workload, timed.

The hosts we run on change speed from hour to hour (the same default egs/mustc run took 4 min 41 s and 9 min 36 s
on the same machine kind on one day: benchmarks/README.md), so a wall time means little without the speed of the
host it was measured on.  ``utils/multi_seed.sh`` times this probe before and after each run and keeps both in the
run's ``run.json``: runs whose probes agree ran on a host of the same speed, and runs whose probes differ say by how
much the host did.  It is a proxy, not a conversion factor: a recipe's stages need not slow down as one workload
does (a same-hour run of reference code remains the firmer comparison).

The workload: forward and backward passes of one transformer encoder layer at MiniLM's size (hidden 384, 12 heads,
feed-forward 1536) over 4 x 128 tokens in float32 on one thread, the kind of work that dominates the recipes'
trainings.  Float32 runs alike on every CPU kind, where bf16 would time a different path on CPUs with and without
AMX.  The result is the median of ``repeats`` timings (one timing: ``steps`` passes), after a warm-up pass.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass

import torch

WORKLOAD = "1 thread, float32, TransformerEncoderLayer(384, 12 heads, ffn 1536) forward+backward on 4 x 128 tokens"


@dataclass(frozen=True)
class MachineSpeed:
    seconds: float  # median seconds of `steps` passes: smaller is faster
    steps: int
    repeats: int
    workload: str = WORKLOAD

    def as_dict(self) -> dict:
        return asdict(self)


def probe(steps: int = 10, repeats: int = 5) -> MachineSpeed:
    """Times the workload (``steps`` passes, ``repeats`` times) on one thread; the caller's thread count is
    restored."""
    if steps < 1 or repeats < 1:
        raise ValueError(f"steps and repeats must be >= 1, got {steps} and {repeats}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        generator = torch.Generator().manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(384, 12, 1536, dropout=0.0, batch_first=True)
        tokens = torch.randn(4, 128, 384, generator=generator)

        def one_pass() -> None:
            layer.zero_grad(set_to_none=True)
            layer(tokens).square().mean().backward()

        one_pass()  # warm-up: first-call allocations and kernel choices
        timings = []
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(steps):
                one_pass()
            timings.append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(threads)
    return MachineSpeed(round(statistics.median(timings), 4), steps, repeats)
