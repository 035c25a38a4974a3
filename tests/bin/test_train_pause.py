"""punct.bin.train_pause on synthetic aligned cuts: posteriors of dev and test by cut id, one row per word, the dev
choice recorded; a re-run skips, another seed trains again."""

from __future__ import annotations

import json

import numpy as np
import pytest
from lhotse import CutSet

from punct.bin.train_pause import main
from punct.io.shards import MatrixReader
from punct.labels import PUNCT4, WordLabels
from punct.scoring.punct_scores import score
from tests.helpers.synthetic_splits import make_split

CUTS_PATTERN = ["--cuts-pattern", "mustc_cuts_{split}_ali.jsonl.gz"]  # the names make_split writes
SMALL_GRID = ["--logistic-c", "1", "--tree-depths", "2", "--tree-iterations", "20"]


@pytest.fixture(scope="module")
def recipe(tmp_path_factory):
    root = tmp_path_factory.mktemp("pause")
    for i, split in enumerate(("train", "dev", "test")):
        make_split(root, split, num_utts=24, text_dim=3, am_dim=2, seed=30 + i)
    exp = root / "exp" / "pause"
    main(["--cuts-dir", str(root / "data/fbank"), *CUTS_PATTERN, "--exp-dir", str(exp), "--seed", "3", *SMALL_GRID])
    return root


def test_posteriors_of_every_cut(recipe):
    exp = recipe / "exp" / "pause"
    for split in ("dev", "test"):
        cuts = CutSet.from_file(recipe / "data" / "fbank" / f"mustc_cuts_{split}_ali.jsonl.gz")
        post = MatrixReader(exp / split / "post.scp")
        assert sorted(post.keys()) == sorted(cut.id for cut in cuts)
        ref, hyp = [], []
        for cut in cuts:
            labels = WordLabels.from_supervision(cut.supervisions[0], PUNCT4).punct
            assert post[cut.id].shape == (len(labels), 4)
            np.testing.assert_allclose(post[cut.id].sum(axis=1), 1.0, atol=1e-5)
            ref += PUNCT4.encode(labels)
            hyp += post[cut.id].argmax(axis=1).tolist()
        # the synthetic pauses tell no mark, comma and full stop (not full stop from question) apart
        assert score(ref, hyp, PUNCT4.classes).overall["f1"] > 0.7, split
    assert (exp / "model.pkl").is_file() and (exp / ".done").is_file()
    choice = json.loads((exp / "choice.json").read_text())
    assert choice["seed"] == 3 and len(choice["grid"]) == 4 and choice["train"]["utterances"] == 24


def test_a_rerun_skips_and_another_seed_trains_again(recipe):
    exp = recipe / "exp" / "pause"
    args = ["--cuts-dir", str(recipe / "data/fbank"), *CUTS_PATTERN, "--exp-dir", str(exp), *SMALL_GRID]
    before = (exp / "dev" / "post.scp.done").stat().st_mtime_ns
    main([*args, "--seed", "3"])
    assert (exp / "dev" / "post.scp.done").stat().st_mtime_ns == before
    main([*args, "--seed", "4"])
    assert (exp / "dev" / "post.scp.done").stat().st_mtime_ns > before
    assert json.loads((exp / "choice.json").read_text())["seed"] == 4
