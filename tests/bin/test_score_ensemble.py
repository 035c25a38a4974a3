"""Stage 8 end to end on synthetic posteriors: RESULTS.md + results.json written, parseable, consistent."""

from __future__ import annotations

import dataclasses
import json
import sys

import numpy as np
import pytest
from lhotse import CutSet, SupervisionSet

from punct.bin.train_pause import main as train_pause
from punct.io.shards import write_shard
from punct.labels import PUNCT4
from punct.results.tables import parse_markdown_table
from tests.helpers.synthetic_splits import make_split

PAUSE_GRID = ["--logistic-c", "1", "--tree-depths", "2", "--tree-iterations", "20"]


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory):
    """Per split: 8 aligned cuts, one of them without TDNN posteriors; the stage-0 manifest also has
    an utterance that stage 3 could not align (its reason in exp/am/ali/<split>.failed) and one that
    has no features (absent from mustc_cuts_<split>.jsonl.gz).  The pause-only baseline (exp/pause) is fit
    on a train split of 16 cuts and has posteriors of every aligned cut."""
    root = tmp_path_factory.mktemp("report")
    rng = np.random.default_rng(0)
    make_split(root, "train", num_utts=16, text_dim=3, am_dim=2, seed=19)
    for i, split in enumerate(("dev", "test")):
        paths = make_split(root, split, num_utts=8, text_dim=3, am_dim=2, seed=20 + i)
        cuts = CutSet.from_file(paths["cuts"])
        # TDNN posteriors: right on 80% of the words
        items = []
        for cut in cuts:
            ref = np.array([PUNCT4.classes.index(p) for p in cut.supervisions[0].custom["punct"]])
            guess = np.where(rng.random(len(ref)) < 0.8, ref, rng.integers(0, 4, len(ref)))
            post = np.full((len(ref), 4), 0.1, dtype=np.float32)
            post[np.arange(len(ref)), guess] = 0.7
            items.append((cut.id, post))
        write_shard(root / "exp" / "tdnn" / "post" / split / "post", items[1:])  # one utterance without posteriors
        sups = [c.supervisions[0] for c in cuts]
        lost = dataclasses.replace(sups[0], id=f"lost-{split}", custom={"words": ["a", "b", "c"], "punct": ["NP"] * 3})
        no_features = dataclasses.replace(
            sups[0], id=f"nofeat-{split}", custom={"words": ["d", "e"], "punct": ["NP", "."]}
        )
        (root / "data" / "manifests").mkdir(parents=True, exist_ok=True)
        SupervisionSet.from_segments(sups + [lost, no_features]).to_file(
            root / "data" / "manifests" / f"mustc_supervisions_{split}.jsonl.gz"
        )
        lost_cut = dataclasses.replace(cuts[0], id=lost.id, supervisions=[lost])
        CutSet.from_cuts(list(cuts) + [lost_cut]).to_file(root / "data" / "fbank" / f"mustc_cuts_{split}.jsonl.gz")
        (root / "exp" / "am" / "ali").mkdir(parents=True, exist_ok=True)
        (root / "exp" / "am" / "ali" / f"{split}.failed").write_text(f"{lost.id} unknown character: '4' in '47'\n")
    # stage 0 (punct.bin.prepare_mustc) left segments out of the manifests: counted in RESULTS.md
    (root / "data" / "manifests" / "mustc_skipped.json").write_text(
        json.dumps({"dev": {"unspeakable_token": 2, "no_words": 1}, "test": {}, "train": {"unspeakable_token": 5}})
    )
    train_pause(
        [
            "--cuts-dir",
            str(root / "data/fbank"),
            "--cuts-pattern",
            "mustc_cuts_{split}_ali.jsonl.gz",
            "--exp-dir",
            str(root / "exp/pause"),
            "--seed",
            "7",
            *PAUSE_GRID,
        ]
    )
    return score(root, root / "exp" / "results", "--pause-dir", str(root / "exp/pause"))


def score(root, out, *options):
    """Stage 8 (punct.bin.score_ensemble) on the fixture's folders."""
    argv = sys.argv
    sys.argv = [
        "score_ensemble",
        "--prefix",
        "mustc",
        "--cuts-dir",
        str(root / "data/fbank"),
        "--bert-emb-dir",
        str(root / "exp/emb_bert"),
        "--tdnn-post-dir",
        str(root / "exp/tdnn/post"),
        "--am-dir",
        str(root / "exp/am"),
        "--am-emb-dir",
        str(root / "exp/emb_am"),
        "--bert-dir",
        str(root / "exp/bert"),
        "--tdnn-model",
        str(root / "exp/tdnn/none.pt"),
        "--out-dir",
        str(out),
        "--supervisions-dir",
        str(root / "data/manifests"),
        "--seed",
        "7",
        *options,
    ]
    try:
        from punct.bin.score_ensemble import main

        main()
    finally:
        sys.argv = argv
    return out


def test_files_written(results_dir):
    for name in ("RESULTS.md", "results.json", "f1_vs_alpha.png"):
        assert (results_dir / name).stat().st_size > 0, name
    assert list(results_dir.glob("confusion_test_*.png"))


def test_tables_match_the_json(results_dir):
    text = (results_dir / "RESULTS.md").read_text()
    results = json.loads((results_dir / "results.json").read_text())
    table = parse_markdown_table(text, "F1 on test")
    assert table[0] == ["Model", "Comma (,)", "Full stop (.)", "Question (?)", "Overall", "Macro"]
    systems = results["systems"]["test"]
    assert [row[0] for row in table[1:]] == list(systems)
    assert table[1][0] == "BERT only" and table[2][0] == "TDNN" and table[3][0].startswith("Ensemble (alpha=")
    for row in table[1:]:
        s = systems[row[0]]
        expected = [s["per_class"][c]["f1"] for c in (",", ".", "?")] + [s["overall"]["f1"], s["macro_f1"]]
        assert [float(x) for x in row[1:]] == [round(100 * v, 1) for v in expected]
        assert s["macro_f1"] == pytest.approx(np.mean([s["per_class"][c]["f1"] for c in (",", ".", "?")]))


def test_caption_says_whose_overall_each_average_is(results_dir):
    """EfficientPunct's overall is the micro average; Huang et al.'s overall (their Table 1) is the macro one."""
    text = (results_dir / "RESULTS.md").read_text()
    assert "both papers" not in text
    assert 'overall = micro-average over , . ? (NP excluded; EfficientPunct\'s "overall")' in text
    assert 'macro = mean F1 of , . ? (Huang et al.\'s "overall"' in text


def test_results_say_what_was_dropped_before_scoring(results_dir):
    text = (results_dir / "RESULTS.md").read_text()
    results = json.loads((results_dir / "results.json").read_text())
    assert results["seed"] == 7
    for split in ("dev", "test"):
        info = results["splits"][split]
        assert info["manifest"].endswith(f"mustc_supervisions_{split}.jsonl.gz")
        # 8 aligned utterances + 1 that stage 3 lost + 1 without features; one aligned has no TDNN posteriors
        assert (info["manifest_utterances"], info["utterances"]) == (10, 7)
        assert info["dropped"]["not aligned at stage 3"] == {"utterances": 1, "words": 3}
        assert info["dropped"]["without features at stage 1"] == {"utterances": 1, "words": 2}
        assert info["dropped"]["without TDNN posteriors at stage 8"]["utterances"] == 1
        assert info["manifest_words"] == info["words"] + sum(d["words"] for d in info["dropped"].values())
        assert info["words"] == results["systems"][split]["TDNN"]["num_words"]
        assert info["dropped_ids"][f"lost-{split}"] == "not aligned at stage 3: unknown character: '4' in '47'"
        assert info["dropped_ids"][f"nofeat-{split}"] == "without features at stage 1"
        assert (
            f"- {split} (`{info['manifest']}`): 7 of 10 utterances "
            f"({info['words']} of {info['manifest_words']} words) scored" in text
        )
        assert f"`lost-{split}`: not aligned at stage 3: unknown character" in text
    assert "1 not aligned at stage 3 (3 words)" in text and "1 without features at stage 1 (2 words)" in text
    assert results["splits"]["dev"]["not_in_manifest"] == {"unspeakable_token": 2, "no_words": 1}
    assert "left out of the manifest at stage 0: 1 no words, 2 unspeakable token" in text
    assert results["splits"]["test"]["not_in_manifest"] == {}


def test_alpha_table_marks_the_dev_choice(results_dir):
    text = (results_dir / "RESULTS.md").read_text()
    results = json.loads((results_dir / "results.json").read_text())
    table = parse_markdown_table(text, "F1 against alpha")
    rows = table[1:]
    assert len(rows) == 11
    chosen_rows = [r for r in rows if "(chosen)" in r[0]]
    assert len(chosen_rows) == 1 and float(chosen_rows[0][0].split()[0]) == results["chosen_alpha"]
    dev = {p["alpha"]: p["overall_f1"] for p in results["alpha_sweep"]["dev"]}
    choice = results["alpha_choice"]
    assert choice["rule"] == "paired-se" and dev[choice["best_alpha"]] == max(dev.values()) == pytest.approx(
        choice["best_score"]
    )
    assert results["chosen_alpha"] in (choice["single_alpha"], choice["best_alpha"])
    if results["chosen_alpha"] != choice["best_alpha"]:  # the mixture's paired gain was within one SE
        assert choice["best_score"] - dev[results["chosen_alpha"]] <= choice["standard_error"]
    # RESULTS.md names the dev argmax beside the chosen alpha
    assert f"dev argmax alpha {choice['best_alpha']:.1f}" in text
    # overall and macro beside each other for both splits; the macro cells are the sweep's macro F1
    assert table[0][1:] == [f"{split} {c}" for split in ("dev", "test") for c in (",", ".", "?", "overall", "macro")]
    macro = [round(100 * p["macro_f1"], 1) for p in results["alpha_sweep"]["test"]]
    assert [float(r[10]) for r in rows] == macro
    # BERT-only and TDNN rows equal the sweep's end points
    test = {p["alpha"]: p["overall_f1"] for p in results["alpha_sweep"]["test"]}
    assert test[0.0] == results["systems"]["test"]["BERT only"]["overall"]["f1"]
    assert test[1.0] == results["systems"]["test"]["TDNN"]["overall"]["f1"]


def test_parameter_table_says_what_is_missing(results_dir):
    text = (results_dir / "RESULTS.md").read_text()
    table = parse_markdown_table(text, "Parameters")
    assert table[0] == ["Part", "Component", "Parameters"]
    assert {r[1] for r in table[1:]} >= {
        "acoustic model up to layer 12",
        "BERT encoder",
        "punctuation TDNN",
        "BERT head",
    }
    assert all(r[2] == "n/a" for r in table[1:])  # nothing to count in this fixture
    assert "no acoustic model checkpoint" in text and "no BERT folder" in text and "no TDNN checkpoint" in text


def test_argmax_rule_takes_the_best_dev_alpha(results_dir):
    out = score(results_dir.parents[1], results_dir.parent / "results_argmax", "--alpha-rule", "argmax", "--no-plots")
    results = json.loads((out / "results.json").read_text())
    dev = {p["alpha"]: p["overall_f1"] for p in results["alpha_sweep"]["dev"]}
    assert results["alpha_choice"]["rule"] == "argmax"
    assert results["chosen_alpha"] == min(a for a, f1 in dev.items() if f1 == max(dev.values()))
    assert "alpha chosen on dev (highest overall F1)" in (out / "RESULTS.md").read_text()


def test_pause_only_row_on_the_same_words(results_dir):
    text = (results_dir / "RESULTS.md").read_text()
    results = json.loads((results_dir / "results.json").read_text())
    for split in ("dev", "test"):
        systems = results["systems"][split]
        assert list(systems)[-1] == "Pause only"
        pause, tdnn = systems["Pause only"], systems["TDNN"]
        assert pause["num_words"] == tdnn["num_words"] == results["splits"][split]["words"]
        assert sum(map(sum, pause["confusion"])) == sum(map(sum, tdnn["confusion"]))
        assert set(pause["per_class"]) == {"NP", ",", ".", "?"} and "macro_f1" in pause
        table = parse_markdown_table(text, f"F1 on {split}")
        assert table[-1][0] == "Pause only"
    # the synthetic pauses tell the marks apart (but . from ?): the baseline is far above chance
    assert results["systems"]["test"]["Pause only"]["overall"]["f1"] > 0.7
    chosen = json.loads((results_dir.parent / "pause" / "choice.json").read_text())["chosen"]
    assert results["pause_model"] == chosen
    assert "- Pause only: per word, the silence after and before it" in text and chosen["name"] in text


PAIRS = [("TDNN", "Pause only"), ("ensemble", "Pause only"), ("BERT only", "Pause only"), ("TDNN", "BERT only")]


def test_paired_differences_of_the_systems(results_dir):
    from punct.scoring.intervals import Interval

    text = (results_dir / "RESULTS.md").read_text()
    results = json.loads((results_dir / "results.json").read_text())
    paired = results["paired"]
    assert (paired["statistic"], paired["unit"], paired["num_resamples"], paired["level"]) == (
        "overall F1",
        "utterances",
        1000,
        0.95,
    )
    chosen = next(name for name in results["systems"]["test"] if "chosen on dev" in name)
    table = parse_markdown_table(text, "Paired differences")
    assert table[0] == ["Comparison", "dev", "test"]
    expected_names = [(chosen if a == "ensemble" else a, b) for a, b in PAIRS]
    for split in ("dev", "test"):
        rows = paired["splits"][split]
        assert [(r["system"], r["baseline"]) for r in rows] == expected_names
        systems = results["systems"][split]
        for row in rows:
            gap = systems[row["system"]]["overall"]["f1"] - systems[row["baseline"]]["overall"]["f1"]
            assert row["difference"] == pytest.approx(gap, abs=1e-12)
            assert row["low"] < row["high"]
        cells = [r[1 + ["dev", "test"].index(split)] for r in table[1:]]
        assert cells == [Interval(r["difference"], r["low"], r["high"]).fmt() for r in rows]
    assert [r[0] for r in table[1:]] == [f"{a} minus {b}" for a, b in expected_names]
    assert "paired bootstrap 95 % interval: 1000 resamples of the utterances" in text


def test_without_the_pause_baseline_no_row(results_dir):
    out = score(results_dir.parents[1], results_dir.parent / "results_no_pause", "--no-plots")
    results = json.loads((out / "results.json").read_text())
    text = (out / "RESULTS.md").read_text()
    assert "Pause only" not in results["systems"]["test"] and "Pause only" not in text
    assert results["pause_model"] is None
    pairs = [(r["system"], r["baseline"]) for r in results["paired"]["splits"]["test"]]
    assert pairs == [("TDNN", "BERT only")]
