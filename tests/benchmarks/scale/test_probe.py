"""The stage probe of benchmarks/bench_scale.py: the largest process' peak, not the sum; CPU and bytes of the tree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROBE = Path(__file__).resolve().parents[3] / "benchmarks" / "scale" / "probe.py"


def _allocate(megabytes: int) -> str:
    code = f"import time; a = bytearray({megabytes} * 2**20); a[::4096] = b'x' * len(a[::4096]); time.sleep(1.2)"
    return f'{sys.executable} -c "{code}"'


def run_probe(tmp_path: Path, script: str) -> dict:
    import json

    out = tmp_path / "figures.json"
    subprocess.run(
        [sys.executable, str(PROBE), "--out", str(out), "--log", str(tmp_path / "log"), "--interval", "0.2"]
        + ["--", "bash", "-c", script],
        check=True,
        cwd=tmp_path,
    )
    return json.loads(out.read_text())


def test_peak_is_the_largest_process_and_io_is_the_trees(tmp_path):
    # two children at once (300 MB and 150 MB), then one writing 40 MB: the peak is the 300 MB process', not 450
    script = (
        f"{_allocate(300)} & {_allocate(150)} & wait; "
        f'{sys.executable} -c \'open("big", "wb").write(bytes(40 * 2**20))\''
    )
    figures = run_probe(tmp_path, script)
    assert 300 <= figures["peak_rss_mb"] < 400
    assert figures["written_mb"] >= 41.9  # 40 MiB
    assert figures["cpu_seconds"] > 0
    assert figures["wall_seconds"] >= 1.2
    assert figures["processes"]["python -c"]["processes"] == 3
    assert 300 <= figures["processes"]["python -c"]["peak_rss_mb"] < 400


def test_a_failing_command_fails_the_probe(tmp_path):
    with pytest.raises(subprocess.CalledProcessError):
        run_probe(tmp_path, "exit 3")
    assert not (tmp_path / "figures.json").exists()


@pytest.mark.parametrize(
    "argv, kind",
    [
        (["/venv/bin/python", "-m", "punct.bin.align", "--job", "1"], "punct.bin.align"),
        (["python3", "-m", "punct.bin.align", "--merge", "--nj", "2"], "punct.bin.align --merge"),
        (["python", "benchmarks/bench_train.py"], "bench_train.py"),
        (["bash", "utils/run.pl"], None),
        (["/usr/bin/espeak-ng", "-v", "en"], "espeak-ng"),
    ],
)
def test_process_kind(argv, kind):
    sys.path.insert(0, str(PROBE.parent))
    try:
        from probe import process_kind
    finally:
        sys.path.pop(0)
    assert process_kind(argv) == kind
