"""The systems of the punct4 scoring stage (punct.scoring.systems): what reached scoring, the stacked posteriors,
the predictions and paired comparisons, and the whole scoring of dev and test (the entry point's CLI and outputs:
tests/bin/test_score_ensemble.py)."""

from __future__ import annotations

import numpy as np
import pytest
from lhotse import CutSet

from punct.io.shards import write_shard
from punct.labels import PUNCT4
from punct.scoring.systems import (
    ScoringInputs,
    ScoringSettings,
    StageOutputs,
    alpha_grid,
    paired_comparisons,
    score_splits,
    stacked_posteriors,
    stage3_failures,
    system_predictions,
)
from tests.helpers.synthetic_splits import make_split


def test_paired_comparisons_of_known_systems():
    """Equal systems differ by 0 on every resample; a perfect one beats one that never marks by 1 on each."""
    rng = np.random.default_rng(0)
    lengths = [int(n) for n in rng.integers(3, 9, 20)]
    ref = rng.integers(1, 4, sum(lengths))  # every word has a mark: no resample without one
    hyps = {"dev": {"TDNN": ref.copy(), "BERT only": np.zeros_like(ref), "Pause only": ref.copy()}}
    paired = paired_comparisons(hyps, {"dev": ref}, {"dev": lengths}, 4, 0.5, 200, 1)
    rows = {(r["system"], r["baseline"]): (r["difference"], r["low"], r["high"]) for r in paired["splits"]["dev"]}
    assert rows == {
        ("TDNN", "Pause only"): (0.0, 0.0, 0.0),
        ("BERT only", "Pause only"): (-1.0, -1.0, -1.0),
        ("TDNN", "BERT only"): (1.0, 1.0, 1.0),
    }
    assert paired["num_resamples"] == 200 and paired["seed"] == 1


def test_the_first_stage_without_an_output_is_the_reason():
    stages = StageOutputs(
        feature_cuts={"a", "b", "c", "d"}, aligned_cuts={"a", "b", "c"}, am_embeddings=None, bert_vectors=None,
        bert_posteriors={"a", "b"},
    )  # fmt: skip
    assert [stages.reason(key) for key in ("e", "d", "c", "a")] == [
        "without features at stage 1",
        "not aligned at stage 3",
        "without BERT posteriors at stage 6",
        "without TDNN posteriors at stage 8",
    ]
    stages.feature_cuts, stages.am_embeddings = None, {"b"}
    assert [stages.reason(key) for key in ("d", "a")] == [
        "not in the aligned cuts (stage 1 or 3)",
        "without layer-12 embeddings at stage 4",
    ]


def test_stage3_failures_read_the_reason_of_each_cut(tmp_path):
    assert stage3_failures(tmp_path / "absent.failed") == {}
    path = tmp_path / "dev.failed"
    path.write_text("cut-1 unknown character: '4' in '47'\ncut-2\n\n")
    assert stage3_failures(path) == {"cut-1": "unknown character: '4' in '47'", "cut-2": ""}


def test_stacked_posteriors_need_every_key_with_a_row_per_word(tmp_path):
    write_shard(tmp_path / "post", [("a", np.eye(4, dtype=np.float32)[:2]), ("b", np.eye(4, dtype=np.float32))])
    scp = tmp_path / "post.scp"
    stacked = stacked_posteriors(scp, ["b", "a"], [4, 2], 4)
    assert stacked.shape == (6, 4) and stacked[4:].tolist() == np.eye(4)[:2].tolist()
    with pytest.raises(ValueError, match="no posteriors of c"):
        stacked_posteriors(scp, ["a", "c"], [2, 1], 4)
    with pytest.raises(ValueError, match=r"a has shape \(2, 4\), expected \(3, 4\)"):
        stacked_posteriors(scp, ["a"], [3], 4)
    with pytest.raises(FileNotFoundError):
        stacked_posteriors(tmp_path / "none.scp", ["a"], [2], 4)


def test_the_paper_alpha_joins_the_grid_and_every_system_predicts():
    assert alpha_grid(0.5, 0.4) == [0.0, 0.4, 0.5, 1.0] and alpha_grid(0.1, 0.4) == pytest.approx(
        [i / 10 for i in range(11)]
    )
    pt, pb = np.array([[0.1, 0.9], [0.8, 0.2]]), np.array([[0.7, 0.3], [0.4, 0.6]])
    hyps = system_predictions((np.zeros(2), pt, pb), np.array([[0.0, 1.0], [0.0, 1.0]]), 0.3, 0.4)
    assert {name: hyp.tolist() for name, hyp in hyps.items()} == {
        "BERT only": [0, 1],
        "TDNN": [1, 0],
        "Ensemble (alpha=0.3, chosen on dev)": [0, 0],
        "Ensemble (alpha=0.4, paper)": [1, 0],
        "Pause only": [1, 1],
    }


def test_a_perfect_tdnn_scores_one_on_the_same_words(tmp_path):
    """TDNN posteriors that are the references: its F1 is 1, the argmax rule picks an alpha that scores 1 on dev,
    and without a pause-only baseline only TDNN minus BERT only is compared."""
    for i, split in enumerate(("dev", "test")):
        cuts = CutSet.from_file(make_split(tmp_path, split, num_utts=6, text_dim=3, am_dim=2, seed=30 + i)["cuts"])
        items = [
            (
                cut.id,
                np.eye(4, dtype=np.float32)[[PUNCT4.classes.index(p) for p in cut.supervisions[0].custom["punct"]]],
            )
            for cut in cuts
        ]
        write_shard(tmp_path / "exp" / "tdnn" / "post" / split / "post", items)
    inputs = ScoringInputs(
        prefix="mustc",
        cuts_dir=tmp_path / "data" / "fbank",
        bert_emb_dir=tmp_path / "exp" / "emb_bert",
        tdnn_post_dir=tmp_path / "exp" / "tdnn" / "post",
        am_dir=tmp_path / "exp" / "am",
    )
    results = score_splits(inputs, ScoringSettings(alpha_rule="argmax", seed=3))
    assert list(results) == [
        "seed", "classes", "splits", "chosen_alpha", "alpha_choice", "paper_alpha", "systems", "alpha_sweep",
        "paired", "pause_model",
    ]  # fmt: skip
    assert results["seed"] == 3 and results["pause_model"] is None
    dev = {p["alpha"]: p["overall_f1"] for p in results["alpha_sweep"]["dev"]}
    assert dev[1.0] == 1.0 and dev[results["chosen_alpha"]] == 1.0
    assert results["chosen_alpha"] == min(alpha for alpha, f1 in dev.items() if f1 == 1.0)
    for split in ("dev", "test"):
        systems = results["systems"][split]
        assert systems["TDNN"]["overall"]["f1"] == 1.0
        assert systems["TDNN"]["num_words"] == systems["BERT only"]["num_words"] == results["splits"][split]["words"]
        assert results["splits"][split]["utterances"] == 6
        assert [(r["system"], r["baseline"]) for r in results["paired"]["splits"][split]] == [("TDNN", "BERT only")]
