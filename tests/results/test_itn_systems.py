"""egs/parczech's results.json (punct.bin.score_itn, punct.results.itn_systems) and the README table made from it
(punct.bin.results_table): hand-built predictions are scored by the real scorer, and the tables must hold the F1
values this file computes on its own (plain counting, first word of each segment left out), their mean and sample
sd over runs, the run's facts where the recipe wrote them, and go into the ``results:parczech`` README region
without touching egs/mustc's."""

from __future__ import annotations

import json
import random
import re
import statistics
from pathlib import Path

import pytest

from punct.bin import results_table, score_itn
from punct.labels import PUNCT9
from punct.results.itn_systems import render_itn_groups
from punct.results.regions import tables_and_summary, update_regions
from punct.scoring.ensemble import AlphaChoice
from tests.results.test_punct_systems import write_run as write_mustc_run

MARKS = PUNCT9.classes[1:]
ROWS = ("text-only", "multimodal", "EfficientPunct TDNN", "EfficientPunct ensemble")
DROPPED = 2  # the ensemble row leaves out the last segments of each split (as one without posteriors would)
MARK_WEIGHTS = {"blank": 60, ",": 14, ".": 10, "?": 4, "!": 3, ":": 3, "-": 2, '"': 2, ";": 2}
Segment = tuple[list[str], list[str]]  # (marks, cases) of the words
# the punctuation head's alpha as punct.bin.ensemble_itn records it: the paired rule kept the dev argmax 0.9
PUNCT_CHOICE = AlphaChoice(0.9, "paired-se", 0.9, 0.213, 0.004, 1000, "macro F1 (8 marks)", 1.0, 0.201)


def reference(split: str, num: int = 24) -> list[Segment]:
    """The same reference segments in every run (one corpus)."""
    rng = random.Random(f"corpus-{split}")
    segments = []
    for _ in range(num):
        n = rng.randint(4, 11)
        marks = rng.choices(list(MARK_WEIGHTS), weights=list(MARK_WEIGHTS.values()), k=n)
        segments.append((marks, [rng.choice(["blank", "cap"]) for _ in range(n)]))
    return segments


def predict(segments: list[Segment], rng: random.Random, accuracy: float) -> list[Segment]:
    """Right with probability ``accuracy``, else blank, , or . (cap flipped); the first word copies the reference
    (what the writers do under first_word exclude)."""
    hyp = []
    for marks, cases in segments:
        m = [r if i == 0 or rng.random() < accuracy else rng.choice(["blank", ",", "."]) for i, r in enumerate(marks)]
        c = [
            r if i == 0 or rng.random() < accuracy else ("blank" if r == "cap" else "cap") for i, r in enumerate(cases)
        ]
        hyp.append((m, c))
    return hyp


def f1(pairs: list[tuple[str, str]], cls: str) -> float:
    """2 TP / (2 TP + FP + FN): the F1 of one class, counted here rather than by punct.scoring.punct_scores."""
    tp = sum(r == cls and h == cls for r, h in pairs)
    fp = sum(r != cls and h == cls for r, h in pairs)
    fn = sum(r == cls and h != cls for r, h in pairs)
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def expected_scores(ref: list[Segment], hyp: list[Segment]) -> dict[str, float]:
    """F1 of , . [cap], macro F1 over the 8 marks, and the marks with F1 > 0, on every word but the first."""
    marks = [(r, h) for (rm, _), (hm, _) in zip(ref, hyp) for r, h in zip(rm[1:], hm[1:])]
    cases = [(r, h) for (_, rc), (_, hc) in zip(ref, hyp) for r, h in zip(rc[1:], hc[1:])]
    per_mark = {m: f1(marks, m) for m in MARKS}
    return {
        ",": per_mark[","],
        ".": per_mark["."],
        "cap": f1(cases, "cap"),
        "macro": sum(per_mark.values()) / len(MARKS),
        "marks": sum(v > 0 for v in per_mark.values()),
    }


def write_decode(model_dir: Path, split: str, ref: list[Segment], hyp: list[Segment]) -> None:
    lines = [
        json.dumps(
            {
                "id": f"{split}-{k:03d}",
                "words": [f"w{i}" for i in range(len(rm))],
                "first_word": "exclude",
                "punct_ref": rm,
                "punct_hyp": hm,
                "case_ref": rc,
                "case_hyp": hc,
            }
        )
        for k, ((rm, rc), (hm, hc)) in enumerate(zip(ref, hyp))
    ]
    (model_dir / "decode").mkdir(parents=True, exist_ok=True)
    (model_dir / "decode" / f"{split}.jsonl").write_text("\n".join(lines) + "\n")


def write_facts(root: Path) -> tuple[Path, Path]:
    """An AM folder with stage 1's wer_dev.txt and a words folder with stage 2's stats (one without a reference)."""
    am, words = root / "exp" / "am", root / "exp" / "asr" / "am_words"
    am.mkdir(parents=True)
    words.mkdir(parents=True)
    (am / "wer_dev.txt").write_text("%WER 52.60 [ 263 / 500, 10 ins, 50 del, 203 sub ] %SER 90.00 [ 9 / 10 ]\n")
    for rec, errors in (
        ("r1", {"words": 100, "sub": 10, "dele": 5, "ins": 3}),
        ("r2", {"words": 50, "sub": 4, "dele": 0, "ins": 1}),
    ):
        (words / f"{rec}.stats.json").write_text(json.dumps({"recording": rec, "model": "exp/am", "errors": errors}))
    (words / "r3.stats.json").write_text(json.dumps({"recording": "r3", "model": "exp/am"}))
    return am, words


def score_run(
    root: Path, run_seed: int, splits: tuple[str, ...] = ("dev", "test"), facts: bool = False, wall: float | None = None
) -> tuple[Path, dict[str, dict[str, float]]]:
    """Predictions of every row, scored by punct.bin.score_itn into <root>/exp/results; returns results.json
    and the test scores computed here, by row."""
    expected = {}
    for k, row in enumerate(ROWS):
        model_dir = root / "exp" / row.replace(" ", "_")
        for split in splits:
            ref = reference(split)[:-DROPPED] if row == "EfficientPunct ensemble" else reference(split)
            hyp = predict(ref, random.Random(f"{run_seed}-{row}-{split}"), accuracy=0.45 + 0.15 * k)
            write_decode(model_dir, split, ref, hyp)
            if split == "test":
                expected[row] = expected_scores(ref, hyp)
    (root / "exp" / "EfficientPunct_ensemble" / "alpha.json").write_text(
        json.dumps({"chosen_alpha": {"punct": 0.9, "case": 0.7}, "alpha_rule": {"punct": PUNCT_CHOICE.to_dict()}})
    )  # the case head's rule not recorded (an alpha.json written before the rules were)
    out = root / "exp" / "results"
    args = [
        "--out-dir",
        str(out),
        "--splits",
        ",".join(splits),
        "--num-resamples",
        "60",
        "--run-seed",
        str(run_seed),
        "--max-attention-plots",
        "0",
    ]
    if facts:
        am, words = write_facts(root)
        args += ["--am-dir", str(am), "--words-dir", str(words)]
    score_itn.main(args + [f"{root / 'exp' / row.replace(' ', '_')}:{row}" for row in ROWS])
    if wall is not None:
        (out / "run.json").write_text(json.dumps({"seed": run_seed, "wall_seconds": wall}))
    return out / "results.json", expected


@pytest.fixture(scope="module")
def one_run(tmp_path_factory):
    return score_run(tmp_path_factory.mktemp("run"), 42, facts=True)


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    return [score_run(root / f"seed{s}", s, splits=("test",), wall=w) for s, w in ((1, 800), (2, 860), (3, 830))]


def test_results_json_holds_the_run(one_run):
    path, expected = one_run
    results = json.loads(path.read_text())
    assert results["kind"] == "itn" and results["seed"] == 42 and results["bootstrap"]["num_resamples"] == 60
    assert [m["name"] for m in results["models"]] == list(ROWS)
    words = sum(len(m) for m, _ in reference("test"))
    assert results["splits"]["test"] == {
        "first_word": "exclude",
        "segments": 24,
        "words": words,
        "scored_words": words - 24,
        "other_counts": {
            "EfficientPunct ensemble": {
                "segments": 24 - DROPPED,
                "words": sum(len(m) for m, _ in reference("test")[:-DROPPED]),
            }
        },
    }
    for model in results["models"]:
        assert set(model["scores"]) == {"dev", "test"}
        for split, file in model["score_files"].items():  # the embedded scores are those of the scores files
            assert json.loads((path.parent / file).read_text()) == model["scores"][split]
        test = model["scores"]["test"]
        assert test["macro_f1"]["value"] == pytest.approx(expected[model["name"]]["macro"])
        assert test["punct_f1"][","]["value"] == pytest.approx(expected[model["name"]][","])
        assert test["cap_f1"]["value"] == pytest.approx(expected[model["name"]]["cap"])
    assert results["models"][3]["chosen_alpha"] == {"punct": 0.9, "case": 0.7}
    assert results["models"][3]["alpha_choice"] == {"punct": PUNCT_CHOICE.to_dict()}
    assert "chosen_alpha" not in results["models"][0] and "alpha_choice" not in results["models"][0]
    # RESULTS.md states each head's alpha and how it was chosen (the dev argmax, the paired gain and its error)
    md = (path.parent / "RESULTS.md").read_text().splitlines()
    assert (
        "- EfficientPunct ensemble: punct alpha chosen on dev (paired rule: dev argmax alpha 0.9 (macro F1 (8 marks) "
        "21.3); +1.2 over the TDNN alone, standard error 0.4 of the paired difference over 1000 resamples of the "
        "segments: kept): **0.9**" in md
    )
    assert "- EfficientPunct ensemble: case alpha chosen on dev (rule not recorded): **0.7**" in md
    assert results["acoustic_model"]["wer"] == {"dev": 52.6}
    recognition = results["recognition"]  # r1 + r2 (r3 has no reference): (18 + 5) errors of 150 words
    assert recognition["wer"] == pytest.approx(100 * 23 / 150) and recognition["recordings"] == 2


def test_one_run_table_has_the_values_and_intervals(one_run):
    path, expected = one_run
    lines = tables_and_summary([path], "test")[1].splitlines()
    assert lines[0] == (
        "| Model | [,] F1 | [.] F1 | [cap] F1 | macro F1 | marks (of 8) with F1 > 0 "
        "| macro F1 minus text-only (paired) |"
    )
    results = json.loads(path.read_text())
    for model in results["models"]:
        row, test = model["name"], model["scores"]["test"]
        cells = []
        for key, iv in (
            (",", test["punct_f1"][","]),
            (".", test["punct_f1"]["."]),
            ("cap", test["cap_f1"]),
            ("macro", test["macro_f1"]),
        ):
            assert iv["low"] <= iv["value"] <= iv["high"]
            cells.append(f"{100 * expected[row][key]:.1f} ({100 * iv['low']:.1f}-{100 * iv['high']:.1f})")
        if row in ("text-only", "EfficientPunct ensemble"):  # the baseline; segments not the baseline's
            assert "macro_f1_vs_baseline" not in test
            difference = "—"
        else:
            iv = test["macro_f1_vs_baseline"]
            point = expected[row]["macro"] - expected["text-only"]["macro"]
            assert iv["value"] == pytest.approx(point) and iv["low"] <= point <= iv["high"]
            difference = f"{100 * point:+.1f} ({100 * iv['low']:+.1f}, {100 * iv['high']:+.1f})"
        assert f"| {row} | {' | '.join(cells)} | {expected[row]['marks']} of 8 | {difference} |" in lines
    words = sum(len(m) for m, _ in reference("test"))
    assert f"| test segments (words, scored words) | 24 ({words} words, {words - 24} scored) |" in lines
    assert "| first word of each segment | exclude |" in lines
    assert "| AM dev WER (%, greedy CTC) | 52.6 |" in lines
    assert f"| recognition WER (%, long recordings) | {100 * 23 / 150:.1f} |" in lines
    assert "| EfficientPunct ensemble: punct alpha chosen on dev | 0.9 |" in lines
    assert "| EfficientPunct ensemble: case alpha chosen on dev | 0.7 |" in lines
    assert not any(line.startswith("| wall time") for line in lines)  # no run.json: no wall time
    caption = lines[-1]
    assert "60 resamples" in caption and "first word of each segment not scored" in caption
    assert f"EfficientPunct ensemble ({24 - DROPPED} segments)" in caption


def test_several_runs_mean_sd_and_per_run_values(three_runs):
    paths = [p for p, _ in three_runs]
    lines = tables_and_summary(paths, "test")[1].splitlines()
    assert lines[0] == (
        "| Model | [,] F1 | [.] F1 | [cap] F1 | macro F1 | marks (of 8) with F1 > 0 "
        "| macro F1 minus text-only (paired) |"
    )
    assert "| Model | F1 | seed 1 | seed 2 | seed 3 |" in lines
    for row in ROWS:
        runs = [expected[row] for _, expected in three_runs]
        cells = []
        for key in (",", ".", "cap", "macro"):
            values = [100 * e[key] for e in runs]
            cells.append(f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f}")
            if key != "macro":
                assert f"| {row} | [{key}] F1 | " + " | ".join(f"{v:.1f}" for v in values) + " |" in lines
        # each run's macro F1 with its own bootstrap interval around it
        macro_line = next(line for line in lines if line.startswith(f"| {row} | macro F1 | "))
        cells_of_runs = [c.strip() for c in macro_line.split("|")[3:-1]]
        assert len(cells_of_runs) == len(runs)
        for cell, e in zip(cells_of_runs, runs):
            match = re.fullmatch(r"(\d+\.\d) \((\d+\.\d)-(\d+\.\d)\)", cell)
            assert match, cell
            value, low, high = map(float, match.groups())
            assert value == pytest.approx(100 * e["macro"], abs=0.051)
            assert low <= value <= high and low < high
        marks = [e["marks"] for e in runs]
        cells.append(f"{statistics.mean(marks):.1f} ± {statistics.stdev(marks):.1f}")
        if row in ("text-only", "EfficientPunct ensemble"):
            cells.append("—" if row == "text-only" else "n/a")
        else:
            differences = [100 * (e[row]["macro"] - e["text-only"]["macro"]) for _, e in three_runs]
            cells.append(f"{statistics.mean(differences):.1f} ± {statistics.stdev(differences):.1f}")
        assert f"| {row} | {' | '.join(cells)} |" in lines
        assert f"| {row} | marks with F1 > 0 | " + " | ".join(map(str, marks)) + " |" in lines
    assert "| wall time | 13 min 20 s | 14 min 20 s | 13 min 50 s | 13 min 50 s ± 30 s |" in lines
    assert not any("WER" in line for line in lines)  # no run recorded a WER: no such rows
    assert "sample standard deviation" in lines[-1]


def test_facts_show_the_host_speed_probe_where_a_run_recorded_it(three_runs, tmp_path):
    paths = []
    for i, (path, _) in enumerate(three_runs):  # copies: the module's runs stay as they are
        copy = tmp_path / f"run{i}"
        copy.mkdir()
        run = json.loads((path.parent / "run.json").read_text())
        if i == 1:
            run["machine_speed"] = {"before": {"seconds": 0.62}, "after": {"seconds": 0.6449}}
        (copy / "run.json").write_text(json.dumps(run))
        (copy / "results.json").write_text(path.read_text())
        paths.append(copy / "results.json")
    lines = tables_and_summary(paths, "test")[1].splitlines()
    speeds = "| not recorded | 0.62 / 0.64 | not recorded |  |"
    assert "| host speed probe (s before / after the run; smaller: faster) " + speeds in lines


def test_summary_json_of_several_runs(three_runs, tmp_path):
    results_table.main(["--out-dir", str(tmp_path), *(str(p) for p, _ in three_runs)])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["kind"] == "itn" and [r["seed"] for r in summary["runs"]] == [1, 2, 3]
    for row in ROWS:
        macro = [expected[row]["macro"] for _, expected in three_runs]
        got = summary["models"][row]["f1"]["macro"]
        assert got["values"] == pytest.approx(macro)
        assert got["mean"] == pytest.approx(statistics.mean(macro)) and got["sd"] == pytest.approx(
            statistics.stdev(macro)
        )
        assert summary["models"][row]["marks_above_zero"]["values"] == [e[row]["marks"] for _, e in three_runs]
    assert summary["per_run"]["wall_seconds"]["mean"] == pytest.approx(830.0)
    assert (tmp_path / "summary.md").read_text().startswith("| Model | [,] F1 |")


def test_readme_regions_of_both_recipes(one_run, tmp_path):
    mustc = write_mustc_run(
        tmp_path / "mustc",
        1,
        {"BERT only": 0.5, "TDNN": 0.7, "Ensemble": 0.72},
        {"BERT only": 0.3, "TDNN": 0.5, "Ensemble": 0.52},
    )
    readme = tmp_path / "README.md"
    text = (
        "# r\n<!-- results:mustc:begin -->\nold mustc\n<!-- results:mustc:end -->\nmiddle\n"
        "<!-- results:parczech:begin -->\nold parczech\n<!-- results:parczech:end -->\nend\n"
    )
    readme.write_text(text)
    results_table.main(["--readme", str(readme), "--name", "parczech", str(one_run[0])])
    written = readme.read_text()
    table = tables_and_summary([one_run[0]], "test")[1]
    assert written == text.replace("old parczech\n", table)
    results_table.main(["--readme", str(readme), "--name", "mustc", str(mustc)])
    assert readme.read_text() == written.replace("old mustc\n", tables_and_summary([mustc], "test")[1])
    assert "| TDNN | overall | 70.0 |" in readme.read_text()
    readme.write_text("<!-- results:mustc:begin -->\nx\n<!-- results:mustc:end -->\n")
    with pytest.raises(ValueError, match="results:parczech:begin"):
        results_table.main(["--readme", str(readme), "--name", "parczech", str(one_run[0])])
    with pytest.raises(SystemExit):  # --readme without --name
        results_table.main(["--readme", str(readme), str(one_run[0])])
    assert readme.read_text() == "<!-- results:mustc:begin -->\nx\n<!-- results:mustc:end -->\n"


def test_kinds_do_not_mix(one_run, tmp_path):
    mustc = write_mustc_run(
        tmp_path / "mustc",
        1,
        {"BERT only": 0.5, "TDNN": 0.7, "Ensemble": 0.72},
        {"BERT only": 0.3, "TDNN": 0.5, "Ensemble": 0.52},
    )
    with pytest.raises(ValueError, match="several kinds"):
        results_table.main([str(mustc), str(one_run[0])])
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"f1": 0.5}))
    with pytest.raises(ValueError, match="neither"):
        results_table.main([str(other)])


def test_a_region_with_groups_compares_conditions_column_by_column(three_runs, tmp_path, one_run):
    """Before / after a change: one column per condition, mean ± sd over its runs (one run: its value), and the
    conditions' wall and stage times."""
    paths = []
    for i, (path, _) in enumerate(three_runs):
        copy = tmp_path / f"run{i}"
        copy.mkdir()
        run = json.loads((path.parent / "run.json").read_text())
        run["stages"] = [{"stage": "1", "start_seconds": 0, "seconds": 500 + 10 * i}, {"stage": "4", "seconds": 300}]
        (copy / "run.json").write_text(json.dumps(run))
        (copy / "results.json").write_text(path.read_text())
        paths.append(copy / "results.json")
    table = render_itn_groups({"before": paths[:2], "after": paths[2:]}, "test", "cmd")
    lines = table.splitlines()
    assert lines[0] == "| Model | F1 | before | after |"
    for row in ROWS:
        before = [100 * expected[row]["macro"] for _, expected in three_runs[:2]]
        after = 100 * three_runs[2][1][row]["macro"]
        mean_sd = f"{statistics.mean(before):.1f} ± {statistics.stdev(before):.1f}"
        assert f"| {row} | macro F1 | {mean_sd} | {after:.1f} |" in lines
    assert "| wall time |  | 13 min 50 s ± 42 s | 13 min 50 s |" in lines
    assert "| stage 1 |  | 8 min 25 s ± 7 s | 8 min 40 s |" in lines
    assert "| stage 4 |  | 5 min 00 s ± 0 s | 5 min 00 s |" in lines
    assert "| seeds |  | 1, 2 | 3 |" in lines
    assert lines[-1].startswith("Test set, F1 in percent") and lines[-1].endswith("of `cmd`.")
    regions = tmp_path / "regions.yaml"
    readme = tmp_path / "README.md"
    readme.write_text("x\n<!-- results:cmp:begin -->\n<!-- results:cmp:end -->\n")
    groups = {"before": [str(p) for p in paths[:2]], "after": [str(paths[2])]}
    region = {"readme": "README.md", "split": "test", "command": "cmd", "groups": groups}
    regions.write_text(json.dumps({"cmp": region}))
    assert update_regions(regions, check=False) == 0
    assert table in readme.read_text()
