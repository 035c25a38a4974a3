"""One table across conditions (punct.results.curve): mean ± sd per condition and split, from results.json files,
and a regions.yaml region with groups."""

from __future__ import annotations

import json

from punct.results.curve import render_curve
from punct.results.regions import read_regions, region_tables

MARKS = (",", ".", "?")


def write_run(folder, seed, tdnn: dict[str, float], alpha=0.6, pause: float | None = None):
    """A results.json of stage 8 whose TDNN scores ``tdnn[split]`` (overall F1), the other systems fixed."""
    folder.mkdir(parents=True)
    systems = {}
    for split, f1 in tdnn.items():
        scores = {
            "BERT only": 0.5,
            "TDNN": f1,
            f"Ensemble (alpha={alpha:.1f}, chosen on dev)": f1 + 0.01,
            "Ensemble (alpha=0.4, paper)": 0.0,
        }
        if pause is not None:
            scores["Pause only"] = pause
        systems[split] = {
            name: {"overall": {"f1": v}, "macro_f1": v / 2, "per_class": {m: {"f1": v} for m in MARKS}}
            for name, v in scores.items()
        }
    results = {"seed": seed, "classes": ["NP", *MARKS], "chosen_alpha": alpha, "systems": systems}
    results["acoustic_model"] = {"wer": {"dev": 50.0 + seed}}
    (folder / "results.json").write_text(json.dumps(results))
    return folder / "results.json"


def test_one_column_per_condition_and_split(tmp_path):
    marks = [write_run(tmp_path / f"m{s}", s, {"dev": 0.7 + 0.02 * s, "test": 0.6}, pause=0.5) for s in (1, 2, 3)]
    none = [
        write_run(tmp_path / f"n{s}", s, {"dev": 0.4, "test": 0.3 + 0.01 * s}, alpha=0.1, pause=0.2) for s in (1, 2)
    ]
    table = render_curve({"marks": marks, "none": none}, "the command")
    lines = table.splitlines()
    assert lines[0] == "| Model | F1 | marks dev | marks test | none dev | none test |"
    tdnn = next(line for line in lines if line.startswith("| TDNN | overall"))
    # marks dev: 72, 74, 76 -> 74.0 ± 2.0; none test: 31, 32 -> 31.5 ± 0.7
    assert tdnn == "| TDNN | overall | 74.0 ± 2.0 | 60.0 ± 0.0 | 40.0 ± 0.0 | 31.5 ± 0.7 |"
    assert any(line.startswith("| Pause only | overall | 50.0 ± 0.0") for line in lines)
    assert "| alpha chosen on dev |  | 0.6 ± 0.0 |  | 0.1 ± 0.0 |  |" in lines
    assert "| seeds |  | 1, 2, 3 |  | 1, 2 |  |" in lines
    assert "from 5 results.json of `the command`" in table


def test_pause_only_is_left_out_unless_every_run_has_it(tmp_path):
    with_pause = [write_run(tmp_path / "a", 1, {"dev": 0.7, "test": 0.6}, pause=0.5)]
    without = [write_run(tmp_path / "b", 1, {"dev": 0.7, "test": 0.6})]
    assert "Pause only" not in render_curve({"a": with_pause, "b": without})


def test_a_region_with_groups(tmp_path):
    for condition in ("marks", "natural"):
        write_run(tmp_path / condition / "s1", 1, {"dev": 0.5, "test": 0.4})
    (tmp_path / "README.md").write_text("<!-- results:curve:begin -->\n<!-- results:curve:end -->\n")
    (tmp_path / "regions.yaml").write_text(
        "curve:\n  readme: README.md\n  command: cmd\n  split: both\n  groups:\n"
        "    marks: [marks/s1/results.json]\n    natural: [natural/s1/results.json]\n"
    )
    (region,) = read_regions(tmp_path / "regions.yaml")
    assert list(region.groups) == ["marks", "natural"] and len(region.results) == 2
    assert (
        region_tables(region).splitlines()[0] == "| Model | F1 | marks dev | marks test | natural dev | natural test |"
    )


def test_one_split_only(tmp_path):
    runs = {c: [write_run(tmp_path / c, 1, {"dev": 0.5, "test": 0.4})] for c in ("pretrained", "fine-tuned")}
    lines = render_curve(runs, splits=("dev",)).splitlines()
    assert lines[0] == "| Model | F1 | pretrained dev | fine-tuned dev |"
    assert "| alpha chosen on dev |  | 0.6 | 0.6 |" in lines  # one run: its value, no spread
