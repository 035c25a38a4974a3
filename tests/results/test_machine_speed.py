"""The host-speed probe that utils/multi_seed.sh records in each run.json."""

from __future__ import annotations

import json

import pytest
import torch

from punct.bin import machine_speed as machine_speed_bin
from punct.results.machine_speed import WORKLOAD, probe


def test_probe_times_the_workload_on_one_thread_and_restores_the_thread_count():
    torch.set_num_threads(2)
    try:
        one = probe(steps=1, repeats=3)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(1)
    three = probe(steps=3, repeats=3)
    assert 0 < one.seconds < three.seconds  # more passes take longer: it times the work, not a constant
    assert (one.steps, one.repeats, one.workload) == (1, 3, WORKLOAD)
    with pytest.raises(ValueError, match="steps and repeats must be >= 1"):
        probe(steps=0)


def test_the_result_is_added_to_a_run_json_beside_what_it_holds(tmp_path, capsys):
    run_json = tmp_path / "run.json"
    run_json.write_text(json.dumps({"seed": 3, "machine_speed": {"before": {"seconds": 1.5}}}) + "\n")
    assert machine_speed_bin.main(["--steps", "1", "--repeats", "1", "--into", str(run_json), "--key", "after"]) == 0
    record = json.loads(run_json.read_text())
    assert record["seed"] == 3 and record["machine_speed"]["before"] == {"seconds": 1.5}
    assert record["machine_speed"]["after"]["seconds"] > 0 and record["machine_speed"]["after"]["steps"] == 1
    with pytest.raises(SystemExit, match="no_such.json: cannot read a run.json"):
        machine_speed_bin.main(["--steps", "1", "--repeats", "1", "--into", str(tmp_path / "no_such.json")])
