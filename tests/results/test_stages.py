"""Stage times of a recipe run: read from run.sh's log lines into run.json (punct.bin.stage_times, which
utils/multi_seed.sh runs), shown under the ITN tables."""

from __future__ import annotations

import json

import pytest

from punct.bin import results_table, stage_times
from punct.results.stages import stage_rows, stage_seconds
from tests.results.test_itn_systems import score_run

LOG = """2026-11-26 18:03:01 INFO [run.sh:158] ./run.sh --seed 7 --corpus-size small
2026-11-26 18:03:01 INFO [run.sh:164] Stage 0: corpus -> lhotse manifests
some output of stage 0
2026-11-26 18:03:45 INFO [run.sh:205] Stage 1: acoustic model
2026-11-26 18:15:05 INFO [run.sh:236] Stage 2: recognised words
2026-11-26 18:19:00 INFO [run.sh:322] Stage 4: text-only and cross-attention models
2026-11-26 18:24:00 INFO [run.sh:300] Stage 5: EfficientPunct with a case head
2026-11-26 18:41:30 INFO [run.sh:355] Stage 6: score dev and test
2026-11-26 18:41:50 INFO [run.sh:368] ./run.sh: success
"""


def test_each_stage_lasts_until_the_next_stage_line():
    stages = stage_seconds(LOG)
    assert [s["stage"] for s in stages] == ["0", "1", "2", "4", "5", "6"]
    assert [s["seconds"] for s in stages] == [44, 680, 235, 300, 1050, 20]
    assert [s["start_seconds"] for s in stages] == [0, 44, 724, 959, 1259, 2309]


def test_a_log_without_success_is_refused_and_one_without_stages_has_none():
    with pytest.raises(ValueError, match="run.log: no 'run.sh: success' line"):
        stage_seconds(LOG.rsplit("\n", 2)[0])
    assert stage_seconds("a recipe that logs no stages\n") == []


def test_rows_by_stage_number_with_the_sum():
    header, rows = stage_rows(["seed 1", "seed 2"], [stage_seconds(LOG), None])
    assert header == ["Run", "stage 0", "stage 1", "stage 2", "stage 4", "stage 5", "stage 6", "stages together"]
    assert rows == [["seed 1", "44 s", "11 min 20 s", "3 min 55 s", "5 min 00 s", "17 min 30 s", "20 s", "38 min 49 s"]]


def test_run_json_gets_the_stages_and_the_itn_tables_show_them(tmp_path):
    runs = []
    for seed in (1, 2):
        path, _ = score_run(tmp_path / f"seed{seed}", seed, splits=("test",), wall=2330)
        (tmp_path / f"run{seed}.log").write_text(LOG)
        assert stage_times.main([str(tmp_path / f"run{seed}.log"), str(path.parent / "run.json")]) == 0
        record = json.loads((path.parent / "run.json").read_text())
        assert record["seed"] == seed and record["wall_seconds"] == 2330  # kept
        assert [s["seconds"] for s in record["stages"]] == [44, 680, 235, 300, 1050, 20]
        runs.append(path)
    results_table.main(["--out-dir", str(tmp_path / "summary"), *map(str, runs)])
    summary = (tmp_path / "summary" / "summary.md").read_text()
    assert "| Run | stage 0 | stage 1 | stage 2 | stage 4 | stage 5 | stage 6 | stages together |" in summary
    assert "| seed 2 | 44 s | 11 min 20 s | 3 min 55 s | 5 min 00 s | 17 min 30 s | 20 s | 38 min 49 s |" in summary
    assert "Stage times from each run's log" in summary


def test_the_mustc_tables_show_the_stages_too(tmp_path):
    from tests.results.test_punct_systems import write_run

    f1 = {"BERT only": 0.5, "TDNN": 0.7, "Ensemble": 0.72}
    path = write_run(tmp_path / "seed1", 1, f1, f1, wall=2330)
    (tmp_path / "run.log").write_text(LOG)
    stage_times.main([str(tmp_path / "run.log"), str(path.parent / "run.json")])
    results_table.main(["--out-dir", str(tmp_path / "summary"), str(path)])
    summary = (tmp_path / "summary" / "summary.md").read_text()
    assert "| seed 1 | 44 s | 11 min 20 s | 3 min 55 s | 5 min 00 s | 17 min 30 s | 20 s | 38 min 49 s |" in summary
    assert "Stage times from each run's log" in summary
