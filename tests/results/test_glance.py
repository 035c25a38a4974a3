import json
import shutil
from pathlib import Path

import pytest

from punct.results import glance, itn_systems, punct_systems
from punct.results.tables import mean_sd_cell

REPO = Path(__file__).resolve().parents[2]
MUSTC_RUNS = sorted((REPO / "egs/mustc/RESULTS/default").glob("seed*/results.json"))
ITN_RUNS = sorted((REPO / "egs/parczech/RESULTS/small_753eb4c").glob("seed*/results.json"))


def rows_of(table: str) -> dict[tuple[str, str], list[str]]:
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == len(glance.HEADER) and cells[0] not in ("configuration", "---"):
            rows[cells[0], cells[1]] = cells[2:]
    return rows


def test_each_recipe_gets_a_row_per_system_with_the_mean_of_its_runs():
    table = glance.glance_table({"punct4 runs": MUSTC_RUNS, "itn runs": ITN_RUNS}, "test", "make runs")
    rows = rows_of(table)
    runs = [punct_systems.read_run(p, "test") for p in MUSTC_RUNS]
    for model in punct_systems.models_of(runs):
        overall, macro, case, count = rows["punct4 runs", punct_systems.MODEL_LABELS[model]]
        assert overall == mean_sd_cell([100 * r.f1[model]["overall"] for r in runs])
        assert macro == mean_sd_cell([100 * r.f1[model]["macro"] for r in runs])
        assert case == "" and count.startswith(f"{len(runs)} (seeds ")
    itn_runs = [itn_systems.read_itn_run(p, "test") for p in ITN_RUNS]
    for row in itn_systems.row_names(itn_runs):
        overall, macro, case, _ = rows["itn runs", row]
        assert overall == ""  # an ITN scoring records no micro-average over its marks
        assert case == mean_sd_cell([itn_systems.percent(r, row, "cap") for r in itn_runs])
    assert "from the runs of `make runs`" in table


def test_one_run_shows_its_value_without_a_spread():
    rows = rows_of(glance.glance_table({"one": MUSTC_RUNS[:1]}, "dev"))
    run = punct_systems.read_run(MUSTC_RUNS[0], "dev")
    assert rows["one", "TDNN"][0] == f"{100 * run.f1['TDNN']['overall']:.1f}"
    assert rows["one", "TDNN"][3] == f"1 (seed {run.seed})"


def test_a_group_of_two_kinds_is_an_error(tmp_path):
    itn_copy = tmp_path / "itn.json"
    shutil.copy(ITN_RUNS[0], itn_copy)
    assert json.loads(itn_copy.read_text())["kind"] == itn_systems.KIND
    with pytest.raises(ValueError, match="mixed: runs of a punct4 recipe and of an ITN recipe"):
        glance.glance_table({"mixed": [MUSTC_RUNS[0], itn_copy]})
