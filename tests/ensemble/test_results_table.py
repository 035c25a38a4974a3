"""README tables from results.json: the per-run rows, mean and sample sd, and the README region."""

from __future__ import annotations

import json
import math

import pytest

from punct.bin.results_table import main, mean_sd, read_run, render_table, replace_region


def write_run(folder, seed, f1s, macro, alpha=0.6, wall=None, wer=70.0, ali=16.0):
    """A results.json with the keys stage 8 writes (fractions), and an optional run.json."""
    folder.mkdir(parents=True)
    names = {"BERT only": "BERT only", "TDNN": "TDNN", "Ensemble": f"Ensemble (alpha={alpha:.1f}, chosen on dev)"}
    test = {names[m]: {"overall": {"f1": f1s[m]}, "macro_f1": macro[m]} for m in names}
    test["Ensemble (alpha=0.4, paper)"] = {"overall": {"f1": 0.0}, "macro_f1": 0.0}
    results = {"seed": seed, "chosen_alpha": alpha, "systems": {"dev": {}, "test": test},
               "acoustic_model": {"wer": {"dev": wer}, "alignment_median_ms": {"dev": ali}}}
    (folder / "results.json").write_text(json.dumps(results))
    if wall is not None:
        (folder / "run.json").write_text(json.dumps({"seed": seed, "wall_seconds": wall}))
    return folder / "results.json"


def test_mean_and_sample_sd():
    mean, sd = mean_sd([60.0, 70.0, 80.0])
    assert mean == pytest.approx(70.0)
    assert sd == pytest.approx(math.sqrt(((60 - 70) ** 2 + (80 - 70) ** 2) / 2))  # n - 1 in the denominator
    assert mean_sd([5.0]) == (5.0, 0.0)
    assert mean_sd([1.0, None]) is None


def test_rows_and_summary(tmp_path):
    paths = [
        write_run(tmp_path / "s1", 1, {"BERT only": 0.50, "TDNN": 0.70, "Ensemble": 0.72},
                  {"BERT only": 0.3, "TDNN": 0.5, "Ensemble": 0.52}, wall=800),
        write_run(tmp_path / "s2", 2, {"BERT only": 0.48, "TDNN": 0.66, "Ensemble": 0.70},
                  {"BERT only": 0.3, "TDNN": 0.4, "Ensemble": 0.5}, alpha=0.8, wall=860),
    ]
    rows = [read_run(p) for p in paths]
    assert rows[1].overall["Ensemble"] == pytest.approx(70.0) and rows[1].alpha == 0.8
    assert rows[0].wall_seconds == 800 and rows[0].dev_wer == 70.0
    table = render_table(rows).splitlines()
    assert table[0].startswith("| Seed | BERT only overall | TDNN overall | Ensemble overall |")
    assert table[2].startswith("| 1 | 50.0 | 70.0 | 72.0 |") and table[2].endswith("| 13 min 20 s |")
    assert table[4].startswith("| **mean ± sd** | 49.0 ± 1.4 | 68.0 ± 2.8 | 71.0 ± 1.4 |")
    main(["--out-dir", str(tmp_path / "summary"), *map(str, paths)])
    summary = json.loads((tmp_path / "summary" / "summary.json").read_text())
    assert summary["mean"]["TDNN overall"] == pytest.approx(68.0)
    assert summary["sd"]["TDNN overall"] == pytest.approx(math.sqrt(8.0))
    assert summary["mean"]["wall_seconds"] == pytest.approx(830.0)


def test_readme_region_is_replaced_and_must_exist(tmp_path):
    text = "intro\n<!-- results:mustc:begin -->\nold table\n<!-- results:mustc:end -->\nafter\n"
    new = replace_region(text, "mustc", "| new |\n")
    assert new == "intro\n<!-- results:mustc:begin -->\n| new |\n<!-- results:mustc:end -->\nafter\n"
    assert replace_region(new, "mustc", "| newer |\n").count("results:mustc:begin") == 1
    with pytest.raises(ValueError, match="no region"):
        replace_region(text, "parczech", "x")
    readme = tmp_path / "README.md"
    readme.write_text(text)
    path = write_run(tmp_path / "s1", 3, {"BERT only": 0.5, "TDNN": 0.6, "Ensemble": 0.7},
                     {"BERT only": 0.3, "TDNN": 0.4, "Ensemble": 0.5})
    main(["--readme", str(readme), "--name", "mustc", str(path)])
    assert "| 3 | 50.0 | 60.0 | 70.0 |" in readme.read_text() and "old table" not in readme.read_text()
