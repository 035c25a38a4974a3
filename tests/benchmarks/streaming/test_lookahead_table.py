"""benchmarks.streaming.lookahead_table: the table of BERT's F1 against the words it reads ahead, over seeds."""

from __future__ import annotations

import json

import pytest

from benchmarks.streaming.lookahead_table import KIND, lookahead_table, read_lookahead_runs
from punct.results.regions import results_kind


def result(seed: int, f1_by_k: dict, split: str = "dev") -> dict:
    rows = [{"lookahead": k, "words": 10, "f1": f1} for k, f1 in f1_by_k.items()]
    return {"kind": KIND, "seed": seed, "split": split, "rows": rows}


def write(tmp_path, name: str, data: dict):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


def test_rows_pair_each_seed_with_its_whole_segment(tmp_path):
    paths = [
        write(tmp_path, "s1", result(1, {0: 20.0, 2: 50.0, "all": 60.0})),
        write(tmp_path, "s2", result(2, {0: 10.0, 2: 54.0, "all": 58.0})),
    ]
    assert results_kind(paths[0]) == KIND
    lines = lookahead_table(paths, "cmd").splitlines()
    assert lines[0] == "| split | words read ahead | seed 1 | seed 2 | mean ± sd | − all |"
    # k = 2: 50 and 54 -> 52.0 ± 2.8; minus the whole segment per seed: -10 and -4 -> -7.0 ± 4.2
    assert lines[3] == "| dev | 2 | 50.0 | 54.0 | 52.0 ± 2.8 | -7.0 ± 4.2 |"
    assert lines[4] == "| dev | all | 60.0 | 58.0 | 59.0 ± 1.4 | 0.0 ± 0.0 |"
    assert lines[-1].endswith("Made with `cmd`.")


def test_bad_inputs_are_errors_naming_the_file(tmp_path):
    one = write(tmp_path, "one", result(1, {0: 1.0, "all": 2.0}))
    with pytest.raises(ValueError, match="seed 1 is already in another file"):
        read_lookahead_runs([one, write(tmp_path, "again", result(1, {0: 1.0, "all": 2.0}))])
    with pytest.raises(ValueError, match="several splits"):
        read_lookahead_runs([one, write(tmp_path, "test", result(2, {0: 1.0, "all": 2.0}, "test"))])
    with pytest.raises(ValueError, match="not a bench_lookahead.py result"):
        read_lookahead_runs([write(tmp_path, "other", {"kind": "streaming"})])
    with pytest.raises(ValueError, match="no row of lookahead 'all'"):
        lookahead_table([write(tmp_path, "partial", result(3, {0: 1.0}))])
