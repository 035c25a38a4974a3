#!/usr/bin/env python3
"""Runs one command (a recipe stage) and records what it cost: wall and CPU seconds, the peak RSS of its largest
process, bytes read and written, and the peak RSS of each kind of process it started.

  python benchmarks/scale/probe.py --out stage.json -- ./run.sh --stage 3 --stop-stage 3 ...

It runs as a process of its own, so that the kernel's figures of its waited-for descendants are the command's
alone: ``getrusage(RUSAGE_CHILDREN)`` gives the CPU seconds of the whole process tree and, as ``ru_maxrss``, the
peak RSS of its largest single process (not a sum); ``/proc/self/io`` adds the tree's I/O (``rchar`` / ``wchar``:
bytes through read and write calls, page cache included; ``read_bytes`` / ``write_bytes``: what reached the disk).
A sampler walks the tree every ``--interval`` seconds and keeps each process' high-water mark (``VmHWM``) under
its kind (``python -m punct.bin.align --merge`` -> ``punct.bin.align --merge``), so that a stage's jobs and its
merge are told apart; a process that lives less than an interval may be missed by the sampler (never by the
totals).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

PAGE_KB = 1024  # ru_maxrss and VmHWM are in kB on Linux


def process_kind(argv: list[str]) -> str | None:
    """What a process is, from its command line: the module or script a Python runs (with ``--merge``), else
    the program's name; None for the shells that only orchestrate."""
    if not argv:
        return None
    program = os.path.basename(argv[0])
    if program.startswith("python"):
        rest = argv[1:]
        if "-m" in rest and rest.index("-m") + 1 < len(rest):
            name = rest[rest.index("-m") + 1]
        elif "-c" in rest:
            name = "python -c"
        else:
            name = next((os.path.basename(a) for a in rest if not a.startswith("-")), "python")
        return f"{name} --merge" if "--merge" in rest else name
    if program in ("bash", "sh", "perl", "sleep", "tee", "cat", "grep", "sed", "awk", "date", "du"):
        return None
    return program


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def _descendants(root: int) -> list[int]:
    children = _children_map()
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def _high_water_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _argv(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


class KindSampler(threading.Thread):
    """Peak RSS (MB) and process count per kind over the tree under ``root``."""

    def __init__(self, root: int, interval: float) -> None:
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.peak_kb: dict[str, int] = {}
        self.pids: dict[str, set[int]] = {}
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            for pid in _descendants(self.root):
                kind = process_kind(_argv(pid))
                hwm = _high_water_kb(pid) if kind else None
                if kind is None or hwm is None:
                    continue
                self.peak_kb[kind] = max(self.peak_kb.get(kind, 0), hwm)
                self.pids.setdefault(kind, set()).add(pid)

    def figures(self) -> dict[str, dict]:
        return {
            kind: {"peak_rss_mb": round(self.peak_kb[kind] / PAGE_KB, 1), "processes": len(self.pids[kind])}
            for kind in sorted(self.peak_kb, key=lambda k: -self.peak_kb[k])
        }


def read_io() -> dict[str, int]:
    with open("/proc/self/io") as f:
        return {key: int(value) for key, value in (line.split(": ") for line in f)}


def probe(command: list[str], cwd: Path, log: Path, interval: float = 0.5) -> dict:
    """Runs ``command`` in ``cwd`` (stdout and stderr to ``log``) and returns its figures; raises
    ``subprocess.CalledProcessError`` when it fails."""
    io_before = read_io()
    start = time.perf_counter()
    with open(log, "w") as out:
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        sampler = KindSampler(process.pid, interval)
        sampler.start()
        returncode = process.wait()
    wall = time.perf_counter() - start
    sampler.stopped.set()
    sampler.join()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    io_after = read_io()
    if returncode != 0:
        raise subprocess.CalledProcessError(returncode, command)
    return {
        "command": command,
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / PAGE_KB, 1),
        "read_mb": round((io_after["rchar"] - io_before["rchar"]) / 1e6, 1),
        "written_mb": round((io_after["wchar"] - io_before["wchar"]) / 1e6, 1),
        "disk_read_mb": round((io_after["read_bytes"] - io_before["read_bytes"]) / 1e6, 1),
        "disk_written_mb": round((io_after["write_bytes"] - io_before["write_bytes"]) / 1e6, 1),
        "processes": sampler.figures(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="JSON of the figures")
    parser.add_argument("--log", type=Path, required=True, help="the command's stdout and stderr")
    parser.add_argument("--cwd", type=Path, default=Path.cwd())
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between samples of the process tree")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- command ...")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (after --)")
    try:
        figures = probe(command, args.cwd, args.log, args.interval)
    except subprocess.CalledProcessError as e:
        sys.exit(f"{' '.join(command)} failed with status {e.returncode}; see {args.log}")
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(json.dumps(figures, indent=1) + "\n")
    tmp.replace(args.out)


if __name__ == "__main__":
    main()
