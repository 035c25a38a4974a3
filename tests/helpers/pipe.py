"""A command fed raw PCM through a pipe as a live source would (``sox ... -t raw - | command``), with the time its
first output came and the time the input ended."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path


def sox_pcm(wav: Path) -> bytes:
    """``wav`` as raw 16-bit signed mono PCM at 16 kHz (sox's output on stdout)."""
    command = ["sox", str(wav), "-t", "raw", "-r", "16000", "-b", "16", "-c", "1", "-e", "signed", "-"]
    return subprocess.run(command, check=True, capture_output=True).stdout


@dataclass
class PipeRun:
    returncode: int
    stdout: str
    stderr: str
    first_output: float | None  # time.monotonic() of the first bytes on stdout
    input_closed: float  # time.monotonic() when stdin was closed


def feed_pipe(command: list[str], pcm: bytes, step: int = 3200, pause: float = 0.01, timeout: float = 120) -> PipeRun:
    """Runs ``command`` with ``pcm`` written to its stdin ``step`` bytes (0.1 s) at a time, ``pause`` seconds apart."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    output_times: list[float] = []
    printed: list[bytes] = []

    def read() -> None:
        while data := os.read(proc.stdout.fileno(), 4096):
            output_times.append(time.monotonic())
            printed.append(data)

    reader = threading.Thread(target=read)
    reader.start()
    for i in range(0, len(pcm), step):
        proc.stdin.write(pcm[i : i + step])
        proc.stdin.flush()
        time.sleep(pause)
    closed = time.monotonic()
    proc.stdin.close()
    stderr = proc.stderr.read().decode()
    returncode = proc.wait(timeout=timeout)
    reader.join()
    first = output_times[0] if output_times else None
    return PipeRun(returncode, b"".join(printed).decode(), stderr, first, closed)
