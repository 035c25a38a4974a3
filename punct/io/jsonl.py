"""JSON-lines files (lhotse manifests, prediction files), read record by record with ``file:line`` in errors."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from lhotse.utils import Pathlike


def open_text(path: Path) -> TextIO:
    """``path`` opened for reading UTF-8 text, through gzip when its name ends in ``.gz``."""
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")


def count_records(path: Pathlike, what: str) -> int:
    """How many records (non-blank lines) ``path`` holds, without parsing them."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such {what}")
    with open_text(path) as f:
        return sum(1 for line in f if line.strip())


def read_jsonl(path: Pathlike, what: str) -> Iterator[tuple[str, Any]]:
    """(``file:line``, record) of every non-blank line; ``what`` names the file in the missing-file error."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such {what}")
    with open_text(path) as f:
        for line_number, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{line_number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: not valid JSON: {e}") from None
            yield where, record


def record_ids(path: Pathlike, what: str) -> Iterator[str]:
    """The ``id`` of every record (a manifest's items), in order, one line parsed at a time."""
    for where, record in read_jsonl(path, what):
        if not isinstance(record, dict) or "id" not in record:
            raise ValueError(f"{where}: a record without an id")
        yield record["id"]
