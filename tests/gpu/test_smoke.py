"""tests/gpu/smoke.sh on a machine with a GPU: both recipes' tiny corpus on cuda, one torchrun training.

Skipped without a GPU (this project's CI has none); docs/slurm_gpu.md ("A GPU smoke run") says how
to run the script by hand and what it showed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import torch

SMOKE = Path(__file__).resolve().parent / "smoke.sh"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU: tests/gpu/smoke.sh needs one")
def test_gpu_smoke_run(tmp_path):
    out = subprocess.run([str(SMOKE), "--work", str(tmp_path)], capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    summary = (tmp_path / "summary.txt").read_text()
    assert summary.count(" ok") == 9 + 1 + 7, summary
    print("\n" + summary)


def test_smoke_script_help_and_bad_argument():
    assert "under 8 minutes" in subprocess.run([str(SMOKE), "--help"], capture_output=True, text=True).stdout
    bad = subprocess.run([str(SMOKE), "--bogus"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown argument --bogus" in bad.stderr
