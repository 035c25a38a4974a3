"""egs/parczech stages 3-4: help text, and the tiny corpus end to end (stages 0-4, marked slow)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "egs" / "parczech"


def test_help_describes_stages_3_and_4():
    proc = subprocess.run(["bash", str(RECIPE / "run.sh"), "--help"], cwd=RECIPE, capture_output=True, text=True)
    text = proc.stdout + proc.stderr
    assert "exp/{text,mm,mm_pe,mm_pe_random}" in text and "exp/results" in text
    for conf in ("mm.yaml", "mm_mini.yaml", "mm_tiny.yaml"):
        assert (RECIPE / "conf" / conf).is_file()


@pytest.mark.slow
def test_tiny_corpus_end_to_end(tmp_path):
    """A private copy of the recipe (links to the repository), every stage on the tiny corpus."""
    work = tmp_path / "parczech"
    work.mkdir()
    shutil.copy(RECIPE / "run.sh", work / "run.sh")
    shutil.copytree(RECIPE / "conf", work / "conf")
    for name in ("steps", "utils", "local", "path.sh", "cmd.sh"):
        os.symlink(REPO / name, work / name)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.run(["bash", "./run.sh", "--corpus-size", "tiny"], cwd=work, capture_output=True, text=True, env=env,
                          timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for name in ("text", "mm", "mm_pe", "mm_pe_random"):
        assert (work / "exp" / name / ".done").is_file()
        assert (work / "exp" / name / "decode" / "test.jsonl").is_file()
    results = (work / "exp" / "results" / "RESULTS.md").read_text()
    for row in ("| text-only |", "| multimodal |", "| multimodal+PE |", "| random-audio |", "| EfficientPunct | —"):
        assert row in results
    assert any((work / "exp" / "results" / "plots").glob("attention_multimodal+PE_dev_*.png"))
    # a second run of stages 3-4 skips the finished trainings and rewrites the results
    again = subprocess.run(["bash", "./run.sh", "--corpus-size", "tiny", "--stage", "3"], cwd=work, capture_output=True,
                           text=True, env=env, timeout=600)
    assert again.returncode == 0 and "is done; skipping" in again.stdout + again.stderr
