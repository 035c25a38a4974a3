"""End to end: egs/mustc/run.sh stage 0 builds the tiny corpus and its manifests, in a scratch copy of the recipe."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from lhotse import load_manifest

from punct.labels import WordLabels
from tests.helpers.recipe_copy import copy_recipe


def supervision_words(sup):
    """``(words, punct)`` lists of a supervision, validated by :class:`WordLabels`."""
    labelled = WordLabels.from_supervision(sup)
    return list(labelled.words), list(labelled.punct)


def test_run_sh_stage0_tiny(repo_root: Path, tmp_path: Path):
    cache = Path(os.environ.get("PUNCT_CACHE", Path.home() / ".cache" / "punct"))
    have_text = (cache / "janeaustenr_books.json").exists() or list(cache.glob("r-cran-janeaustenr_*.deb"))
    if not have_text and shutil.which("apt-get") is None:
        pytest.skip("no apt-get to fetch r-cran-janeaustenr and no cached copy")
    recipe = copy_recipe(repo_root, "mustc", tmp_path / "mustc")
    env = dict(os.environ, PUNCT_CACHE=str(cache))
    proc = subprocess.run(
        ["./run.sh", "--stage", "0", "--stop-stage", "0", "--corpus-size", "tiny"],
        cwd=recipe,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    if proc.returncode != 0 and not have_text and "could not download" in output:
        pytest.skip("r-cran-janeaustenr could not be downloaded here")
    assert proc.returncode == 0, output[-3000:]
    # Both tables are printed: mark -> label mapping and the label distribution.
    assert "punctuation mark -> label" in output and "segments" in output
    corpus = recipe / "data/corpus_tiny_natural"
    assert (corpus / ".done").exists() and (corpus / "data/tst-COMMON/txt/tst-COMMON.word_times.jsonl").exists()
    for split, mustc_split in (("train", "train"), ("dev", "dev"), ("test", "tst-COMMON")):
        sups = load_manifest(recipe / f"data/manifests/mustc_supervisions_{split}.jsonl.gz")
        lines = (corpus / f"data/{mustc_split}/txt/{mustc_split}.en").read_text().splitlines()
        assert len(sups) == len(lines) > 0
        for sup in sups:
            words, punct = supervision_words(sup)
            assert words and len(words) == len(punct)
    # A second run keeps the corpus and the manifests.
    again = subprocess.run(
        ["./run.sh", "--stage", "0", "--stop-stage", "0", "--corpus-size", "tiny"],
        cwd=recipe,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert again.returncode == 0
    assert "already built" in again.stdout + again.stderr
    assert "already prepared" in again.stdout + again.stderr
