"""One log format for the whole toolkit: time, level, file:line, message (like utils/log.sh)."""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

LOG_FORMAT = "%(asctime)s %(levelname)s [%(filename)s:%(lineno)d] %(message)s"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"


def setup_logging(log_file: Path | None = None, level: int = logging.INFO) -> None:
    """Logs to stderr, and also to ``log_file`` when given."""
    handlers: list = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    logging.basicConfig(level=level, format=LOG_FORMAT, datefmt=DATE_FORMAT, handlers=handlers, force=True)


def log_config(config: Any, title: str = "config") -> None:
    """Logs a config (dataclass or dict) as sorted JSON: the first line of every entry point.  Non-ASCII
    text (Czech paths and names) is written as it is, not as \\u escapes."""
    data = asdict(config) if is_dataclass(config) else dict(config)
    logging.info("%s: %s", title, json.dumps(data, sort_keys=True, default=str, ensure_ascii=False))
