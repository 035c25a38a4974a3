"""Progress bars on a terminal only: a log file written by ``utils/run.pl`` or SLURM holds no carriage-return bars.

Every loop that shows progress calls :func:`progress` instead of ``tqdm`` itself.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, TypeVar

from tqdm import tqdm

T = TypeVar("T")


def on_terminal(stream: Any = None) -> bool:
    """Whether ``stream`` (default: the current ``sys.stderr``, where tqdm draws) is a terminal."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


def progress(iterable: Iterable[T], *, enabled: bool = True, **tqdm_kwargs: Any) -> tqdm:
    """``tqdm(iterable, **tqdm_kwargs)``, disabled unless ``enabled`` (e.g. the main rank) and stderr is a terminal.

    A disabled bar still iterates (and has ``len`` where ``iterable`` has), it only draws nothing.
    """
    file = tqdm_kwargs.get("file") or sys.stderr
    show = enabled and not tqdm_kwargs.pop("disable", False) and on_terminal(file)
    return tqdm(iterable, disable=not show, **tqdm_kwargs)
