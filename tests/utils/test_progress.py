"""Progress bars: drawn on a terminal (a pseudo-terminal here), absent from logs and pipes."""

from __future__ import annotations

import fcntl
import io
import os
import select
import struct
import sys
import termios

import pytest

from punct.utils.progress import on_terminal, progress


@pytest.fixture
def terminal():
    """A pseudo-terminal: the master's file descriptor (to read the screen) and a stream on its slave side (to be
    set as sys.stderr inside the test: pytest sets its own capture again between a fixture and the test)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 24 rows, 100 columns
    stream = os.fdopen(slave, "w", buffering=1)
    yield master, stream
    stream.close()
    os.close(master)


def screen(master: int) -> str:
    """What has reached the terminal so far."""
    out = b""
    while select.select([master], [], [], 0.2)[0]:
        chunk = os.read(master, 4096)
        if not chunk:
            break
        out += chunk
    return out.decode(errors="replace")


def test_a_log_gets_no_bar_but_every_item(capsys):
    bar = progress(range(5), desc="epoch 1", mininterval=0)
    assert not on_terminal() and bar.disable
    assert list(bar) == [0, 1, 2, 3, 4] and len(bar) == 5
    assert capsys.readouterr().err == ""


def test_a_pipe_or_file_gets_no_bar():
    log = io.StringIO()
    assert list(progress("abc", file=log, mininterval=0)) == ["a", "b", "c"]
    assert log.getvalue() == ""


def test_a_terminal_gets_a_bar(terminal, monkeypatch):
    master, stream = terminal
    monkeypatch.setattr(sys, "stderr", stream)
    bar = progress(range(3), desc="epoch 1", mininterval=0)
    assert on_terminal() and not bar.disable
    assert list(bar) == [0, 1, 2]
    bar.close()
    shown = screen(master)
    assert "epoch 1" in shown and "3/3" in shown and "\r" in shown


def test_a_terminal_gets_no_bar_when_not_enabled(terminal, monkeypatch):
    master, stream = terminal
    monkeypatch.setattr(sys, "stderr", stream)
    for bar in (progress(range(3), enabled=False, desc="rank 1"), progress(range(3), disable=True, desc="rank 1")):
        assert bar.disable and list(bar) == [0, 1, 2]
    assert on_terminal() and "rank 1" not in screen(master)
