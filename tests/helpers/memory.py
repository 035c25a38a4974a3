"""Peak Python memory of a call (tracemalloc): what the merge tests compare between a split of N and of 4N items."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable


def peak_bytes(call: Callable[..., object], *args) -> int:
    """The most bytes Python held during ``call(*args)`` beyond what it held before (tracemalloc's peak).

    ``call`` runs twice: first untraced, to fill CPython's free lists (of tuples, dicts, ...: memory kept for reuse,
    bounded, that a full collection empties), then traced with the cyclic collector off, so that their refilling
    does not count as memory the call holds."""
    gc.collect()
    call(*args)
    gc.disable()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        call(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        gc.enable()
    return peak - before
