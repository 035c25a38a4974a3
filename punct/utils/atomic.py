"""Outputs that are either complete or absent.

Every file is written under a temporary name in the same directory and renamed into
place when complete; a ``.done`` marker written last says a multi-file output (a shard,
a stage) is finished.  An interrupted writer therefore never leaves something that looks
complete, and a re-run can skip exactly what is done.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from punct.utils.pathlike import Pathlike


@contextlib.contextmanager
def atomic_path(path: Pathlike, suffix: str = "") -> Iterator[Path]:
    """Yields a temporary path beside ``path``; renames it to ``path`` if the block succeeds.

    ``suffix`` keeps a file ending that a writer relies on (e.g. ".jsonl.gz" for lhotse).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{suffix}", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    os.chmod(tmp, 0o666 & ~_current_umask())  # mkstemp makes 0600; outputs get the usual permissions
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: Pathlike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def done_marker(path: Pathlike) -> Path:
    """The marker of an output: ``x.ark`` -> ``x.ark.done``; a directory ``d`` -> ``d/.done``."""
    path = Path(path)
    return path / ".done" if path.is_dir() else path.with_name(path.name + ".done")


def is_done(path: Pathlike, newer_than: Pathlike | None = None) -> bool:
    """Whether ``path`` was finished; with ``newer_than`` (e.g. the model it was made with), also
    whether it was finished after that file last changed: outputs of an older model count as not done."""
    marker = done_marker(path)
    if not marker.exists():
        return False
    return newer_than is None or marker.stat().st_mtime >= Path(newer_than).stat().st_mtime


def mark_done(path: Pathlike) -> None:
    atomic_write_text(done_marker(path), "")


def clear_done(path: Pathlike) -> None:
    done_marker(path).unlink(missing_ok=True)
