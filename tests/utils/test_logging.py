"""punct.utils.logging: the log file is UTF-8 and configs keep their non-ASCII text."""

from __future__ import annotations

import logging

from punct.utils.logging import log_config, setup_logging


def test_log_config_keeps_czech_text(tmp_path):
    log_file = tmp_path / "log" / "train.log"
    try:
        setup_logging(log_file)
        log_config({"speaker": "Kučerová", "path": "data/řeč"}, "arguments")
    finally:
        logging.getLogger().handlers.clear()
    text = log_file.read_text(encoding="utf-8")
    assert 'arguments: {"path": "data/řeč", "speaker": "Kučerová"}' in text
    assert "\\u" not in text
