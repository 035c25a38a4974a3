"""README tables from results.json: per-run values, mean and sample sd (checked against hand-computed
numbers), the summary JSON, and the README region (which must exist)."""

from __future__ import annotations

import json
import math

import pytest

from punct.bin.results_table import main
from punct.results.punct_systems import read_run, render_tables
from punct.results.regions import replace_region
from punct.results.tables import mean_sd

MARKS = (",", ".", "?")


def write_run(folder, seed, overall, macro, comma=0.5, alpha=0.6, wall=None, wer=70.0, ali=16.0):
    """A results.json with the keys stage 8 writes (fractions), and an optional run.json beside it."""
    folder.mkdir(parents=True)
    names = {"BERT only": "BERT only", "TDNN": "TDNN", "Ensemble": f"Ensemble (alpha={alpha:.1f}, chosen on dev)"}
    test = {}
    for model, key in names.items():
        per_class = {m: {"f1": comma if m == "," else 0.0} for m in MARKS}
        test[key] = {"overall": {"f1": overall[model]}, "macro_f1": macro[model], "per_class": per_class}
    test["Ensemble (alpha=0.4, paper)"] = {"overall": {"f1": 0.0}, "macro_f1": 0.0, "per_class": {}}
    results = {
        "seed": seed,
        "classes": ["NP", *MARKS],
        "chosen_alpha": alpha,
        "systems": {"dev": {}, "test": test},
        "splits": {"test": {"utterances": 56, "words": 1491, "manifest_utterances": 57, "manifest_words": 1543}},
        "acoustic_model": {"wer": {"dev": wer, "test": wer - 5.0}, "alignment_median_ms": {"dev": ali}},
    }
    (folder / "results.json").write_text(json.dumps(results))
    if wall is not None:
        (folder / "run.json").write_text(json.dumps({"seed": seed, "wall_seconds": wall}))
    return folder / "results.json"


@pytest.fixture
def three_runs(tmp_path):
    return [
        write_run(
            tmp_path / "s1",
            1,
            {"BERT only": 0.50, "TDNN": 0.70, "Ensemble": 0.72},
            {"BERT only": 0.30, "TDNN": 0.50, "Ensemble": 0.52},
            comma=0.40,
            wall=800,
            wer=70.0,
        ),
        write_run(
            tmp_path / "s2",
            2,
            {"BERT only": 0.48, "TDNN": 0.66, "Ensemble": 0.70},
            {"BERT only": 0.30, "TDNN": 0.40, "Ensemble": 0.50},
            comma=0.60,
            alpha=0.8,
            wall=860,
            wer=66.0,
        ),
        write_run(
            tmp_path / "s3",
            3,
            {"BERT only": 0.43, "TDNN": 0.71, "Ensemble": 0.69},
            {"BERT only": 0.33, "TDNN": 0.45, "Ensemble": 0.47},
            comma=0.20,
            wall=830,
            wer=68.5,
        ),
    ]


def sample_sd(values):
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def test_mean_and_sample_sd():
    mean, sd = mean_sd([60.0, 70.0, 80.0])
    assert mean == pytest.approx(70.0)
    assert sd == pytest.approx(10.0)  # sqrt((100 + 0 + 100) / 2): n - 1 in the denominator
    assert mean_sd([5.0]) == (5.0, 0.0)
    assert mean_sd([1.0, None]) is None


def test_tables_one_row_per_model_and_f1(three_runs):
    runs = [read_run(p) for p in three_runs]
    assert runs[1].f1["Ensemble"]["overall"] == pytest.approx(0.70) and runs[1].alpha == 0.8
    assert runs[0].wall_seconds == 800 and runs[0].dev_wer == 70.0
    lines = render_tables(runs).splitlines()
    assert lines[0] == "| Model | F1 | seed 1 | seed 2 | seed 3 | mean ± sd |"
    # TDNN overall: 70, 66, 71 -> mean 69.0, sd sqrt((1 + 9 + 4) / 2) = 2.65
    assert "| TDNN | overall | 70.0 | 66.0 | 71.0 | 69.0 ± 2.6 |" in lines
    assert "| TDNN | macro | 50.0 | 40.0 | 45.0 | 45.0 ± 5.0 |" in lines
    assert "| BERT only | overall | 50.0 | 48.0 | 43.0 | 47.0 ± 3.6 |" in lines
    assert "| Ensemble (alpha chosen on dev) | overall | 72.0 | 70.0 | 69.0 | 70.3 ± 1.5 |" in lines
    assert "| alpha chosen on dev | 0.6 | 0.8 | 0.6 | 0.7 ± 0.1 |" in lines
    assert "| AM test WER (%, greedy CTC) | 65.0 | 61.0 | 63.5 | 63.2 ± 2.0 |" in lines
    assert (
        "| test utterances (words) scored | 56 of 57 (1491 of 1543) | 56 of 57 (1491 of 1543) "
        "| 56 of 57 (1491 of 1543) |  |" in lines
    )
    assert "| wall time | 13 min 20 s | 14 min 20 s | 13 min 50 s | 13 min 50 s ± 30 s |" in lines


def _with_corpus_audio(results_json, digest):
    run_json = results_json.parent / "run.json"
    run_json.write_text(json.dumps({**json.loads(run_json.read_text()), "corpus_audio": digest}))


def test_corpus_audio_row_says_whether_the_runs_heard_the_same_audio(three_runs):
    assert not any("corpus audio" in line for line in render_tables([read_run(p) for p in three_runs]).splitlines())
    for path in three_runs:
        _with_corpus_audio(path, "corpus_mini:0123456789ab")
    lines = render_tables([read_run(p) for p in three_runs]).splitlines()
    assert f"| corpus audio (digest of build.json's md5s) |{' corpus_mini:0123456789ab |' * 3} the same |" in lines
    _with_corpus_audio(three_runs[2], "corpus_mini:ba9876543210")
    row = next(line for line in render_tables([read_run(p) for p in three_runs]).splitlines() if "corpus audio" in line)
    assert row.endswith("| corpus_mini:ba9876543210 | **differ** |")


def test_host_speed_row_shows_each_runs_probe_before_and_after(three_runs):
    assert not any("host speed" in line for line in render_tables([read_run(p) for p in three_runs]).splitlines())
    for path, before in zip(three_runs[:2], (0.407, 0.8125)):
        run_json = path.parent / "run.json"
        speed = {"before": {"seconds": before}, "after": {"seconds": 0.431}}
        run_json.write_text(json.dumps({**json.loads(run_json.read_text()), "machine_speed": speed}))
    lines = render_tables([read_run(p) for p in three_runs]).splitlines()
    assert (
        "| host speed probe (s before / after the run; smaller: faster) | 0.41 / 0.43 | 0.81 / 0.43 | not recorded |  |"
        in lines
    )


def test_one_run_has_no_mean_column(three_runs):
    lines = render_tables([read_run(three_runs[0])]).splitlines()
    assert lines[0] == "| Model | F1 | seed 1 |"
    assert "| TDNN | overall | 70.0 |" in lines and not any("±" in line for line in lines)


def test_summary_json_mean_and_sd_per_model_and_metric(three_runs, tmp_path):
    main(["--out-dir", str(tmp_path / "summary"), *map(str, three_runs)])
    summary = json.loads((tmp_path / "summary" / "summary.json").read_text())
    expected = {
        ("TDNN", "overall_f1"): [0.70, 0.66, 0.71],
        ("BERT only", "macro_f1"): [0.30, 0.30, 0.33],
        ("Ensemble", "overall_f1"): [0.72, 0.70, 0.69],
    }
    for (model, metric), values in expected.items():
        got = summary["models"][model][metric]
        assert got["values"] == pytest.approx(values)
        assert got["mean"] == pytest.approx(sum(values) / 3)
        assert got["sd"] == pytest.approx(sample_sd(values))
    comma = summary["models"]["TDNN"]["per_class_f1"][","]
    assert comma["mean"] == pytest.approx(0.40) and comma["sd"] == pytest.approx(0.20)
    assert summary["per_run"]["wall_seconds"]["mean"] == pytest.approx(830.0)
    assert summary["per_run"]["wall_seconds"]["sd"] == pytest.approx(30.0)
    assert summary["per_run"]["am_dev_wer_percent"]["sd"] == pytest.approx(sample_sd([70.0, 66.0, 68.5]))
    assert [r["seed"] for r in summary["runs"]] == [1, 2, 3]
    assert (tmp_path / "summary" / "summary.md").read_text().startswith("| Model | F1 | seed 1 |")


def _with_pause(results_json, overall, macro):
    results = json.loads(results_json.read_text())
    results["systems"]["test"]["Pause only"] = {
        "overall": {"f1": overall},
        "macro_f1": macro,
        "per_class": {m: {"f1": 0.25} for m in MARKS},
    }
    results_json.write_text(json.dumps(results))


def test_pause_only_rows_when_every_run_has_them(three_runs, tmp_path):
    """Runs before the pause-only baseline have no such system: their tables stay as they were; with it in every
    run, its rows follow the ensemble's, in the summary too; in only some runs, no rows."""
    before = render_tables([read_run(p) for p in three_runs])
    for path, overall in zip(three_runs[:2], (0.60, 0.64)):
        _with_pause(path, overall, 0.40)
    assert render_tables([read_run(p) for p in three_runs]) == before
    _with_pause(three_runs[2], 0.65, 0.46)
    runs = [read_run(p) for p in three_runs]
    assert runs[0].f1["Pause only"]["overall"] == pytest.approx(0.60)
    lines = render_tables(runs).splitlines()
    models = [line.split(" | ")[0].removeprefix("| ") for line in lines[2 : lines.index("")]]
    assert models == [
        m
        for m in ("BERT only", "TDNN", "Ensemble (alpha chosen on dev)", "Pause only")
        for _kind in ("overall", "macro")
    ]
    assert "| Pause only | overall | 60.0 | 64.0 | 65.0 | 63.0 ± 2.6 |" in lines
    assert "| Pause only | macro | 40.0 | 40.0 | 46.0 | 42.0 ± 3.5 |" in lines
    main(["--out-dir", str(tmp_path / "summary"), *map(str, three_runs)])
    summary = json.loads((tmp_path / "summary" / "summary.json").read_text())
    assert list(summary["models"]) == ["BERT only", "TDNN", "Ensemble", "Pause only"]
    assert summary["models"]["Pause only"]["overall_f1"]["values"] == pytest.approx([0.60, 0.64, 0.65])


def test_missing_wall_time_is_not_averaged(three_runs):
    (three_runs[1].parent / "run.json").unlink()
    lines = render_tables([read_run(p) for p in three_runs]).splitlines()
    assert "| wall time | 13 min 20 s | n/a | 13 min 50 s | n/a |" in lines


def test_readme_region_is_replaced_and_must_exist(tmp_path, three_runs):
    text = "intro\n<!-- results:mustc:begin -->\nold table\n<!-- results:mustc:end -->\nafter\n"
    new = replace_region(text, "mustc", "| new |\n")
    assert new == "intro\n<!-- results:mustc:begin -->\n| new |\n<!-- results:mustc:end -->\nafter\n"
    assert replace_region(new, "mustc", "| newer |\n").count("results:mustc:begin") == 1
    with pytest.raises(ValueError, match="no region"):
        replace_region(text, "parczech", "x")
    readme = tmp_path / "README.md"
    readme.write_text(text)
    main(["--readme", str(readme), "--name", "mustc", *map(str, three_runs)])
    written = readme.read_text()
    assert "| TDNN | overall | 70.0 | 66.0 | 71.0 | 69.0 ± 2.6 |" in written and "old table" not in written
    assert written.startswith("intro\n") and written.endswith("<!-- results:mustc:end -->\nafter\n")
    # without the markers the README is an error and stays as it was
    readme.write_text("intro only\n")
    with pytest.raises(ValueError, match="results:mustc:begin"):
        main(["--readme", str(readme), "--name", "mustc", str(three_runs[0])])
    assert readme.read_text() == "intro only\n"


def test_regions_file_regenerates_and_finds_a_hand_edit(tmp_path, three_runs, capsys):
    from punct.results.regions import update_regions

    readme = tmp_path / "README.md"
    readme.write_text("# R\n<!-- results:demo:begin -->\nold\n<!-- results:demo:end -->\nafter\n")
    regions = tmp_path / "RESULTS" / "regions.yaml"
    regions.parent.mkdir()
    files = ", ".join(f"../{p.relative_to(tmp_path)}" for p in three_runs)
    regions.write_text(f"demo:\n  readme: ../README.md\n  command: make runs\n  results: [{files}]\n")
    assert update_regions(regions, check=True) == 1  # "old" is not what the runs give
    assert update_regions(regions, check=False) == 0
    assert (
        "| Ensemble (alpha chosen on dev) | overall |" in readme.read_text() and "of `make runs`" in readme.read_text()
    )
    assert update_regions(regions, check=True) == 0
    readme.write_text(readme.read_text().replace("| overall | ", "| overall | 9", 1))  # a hand edit
    capsys.readouterr()
    assert update_regions(regions, check=True) == 1
    assert "results:demo" in capsys.readouterr().out


def test_every_readme_region_is_generated_from_committed_results():
    """Each results:NAME region of the READMEs is listed in a recipe's RESULTS/regions.yaml, and equals what its
    committed results.json files give (a hand edit or a stale table fails here)."""
    from pathlib import Path

    from punct.results.regions import read_regions, region_names, update_regions

    repo = Path(__file__).resolve().parents[2]
    files = sorted(repo.glob("egs/*/RESULTS/regions.yaml"))
    listed = {(region.readme.resolve(), region.name) for f in files for region in read_regions(f)}
    for readme in [
        repo / "README.md",
        repo / "benchmarks" / "README.md",
        *repo.glob("egs/*/*.md"),
        *repo.glob("docs/*.md"),
    ]:
        for name in region_names(readme.read_text(encoding="utf-8")):
            assert (readme.resolve(), name) in listed, (
                f"{readme}: region {name} is not in any egs/*/RESULTS/regions.yaml"
            )
    for f in files:
        assert update_regions(f, check=True) == 0, f"{f}: a README region differs from its results.json"
