"""Where ``punctuate``'s time goes: wall and CPU seconds per pipeline stage (:class:`StageTimer`)."""

from __future__ import annotations

import time
from contextlib import contextmanager

STAGES = ("audio", "features", "am", "align", "bert", "tdnn", "ensemble")


class StageTimer:
    """Wall seconds (``seconds``) and CPU seconds of this process (``cpu_seconds``) spent in each stage."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {s: 0.0 for s in STAGES}
        self.cpu_seconds: dict[str, float] = {s: 0.0 for s in STAGES}

    @contextmanager
    def __call__(self, stage: str):
        start, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - start
            self.cpu_seconds[stage] = self.cpu_seconds.get(stage, 0.0) + time.process_time() - cpu

    @contextmanager
    def outer(self, stage: str, inner: str):
        """Like ``self(stage)``, less the time that ``inner`` is charged meanwhile (a stage that calls another)."""
        start, cpu = time.perf_counter(), time.process_time()
        inner_start, inner_cpu = self.seconds.get(inner, 0.0), self.cpu_seconds.get(inner, 0.0)
        try:
            yield
        finally:
            self.seconds[stage] = (
                self.seconds.get(stage, 0.0)
                + time.perf_counter()
                - start
                - (self.seconds.get(inner, 0.0) - inner_start)
            )
            self.cpu_seconds[stage] = (
                self.cpu_seconds.get(stage, 0.0)
                + time.process_time()
                - cpu
                - (self.cpu_seconds.get(inner, 0.0) - inner_cpu)
            )

    def reset(self) -> None:
        for k in self.seconds:
            self.seconds[k] = 0.0
            self.cpu_seconds[k] = 0.0
