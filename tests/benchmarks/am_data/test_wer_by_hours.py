"""AM dev WER by training hours: nested subsets, the README table and its region (benchmarks/bench_am_data.py)."""

from __future__ import annotations

import json

import pytest

from benchmarks.am_data.wer_by_hours import ALL, KIND, nested_subsets, render_tables
from punct.results.regions import tables_and_summary


def test_subsets_are_nested_and_hold_their_hours():
    durations = [(f"u{i:03d}", 5.0 + i % 7) for i in range(200)]  # 0.42 h
    subsets = nested_subsets(durations, [0.05, 0.1, 0.2, ALL], seed=3)
    seconds = dict(durations)
    for small, large in [(0.05, 0.1), (0.1, 0.2), (0.2, ALL)]:
        assert subsets[large][: len(subsets[small])] == subsets[small]
    for hours in (0.05, 0.1, 0.2):
        held = sum(seconds[i] for i in subsets[hours])
        assert hours * 3600 <= held < hours * 3600 + 12  # the shortest prefix: at most one utterance more
    assert sorted(subsets[ALL]) == sorted(seconds)
    assert nested_subsets(durations, [0.1], seed=3)[0.1] == subsets[0.1]  # the order depends on the seed only
    assert nested_subsets(list(reversed(durations)), [0.1], seed=3)[0.1] == subsets[0.1]  # not on the input order
    with pytest.raises(ValueError, match="0.5 h asked for"):
        nested_subsets(durations, [0.5])


def _run(init, hours, wer, held=0.1):
    return {
        "init": init,
        "hours": hours,
        "train_hours": held,
        "cuts": 50,
        "dev_wer": wer,
        "config": "conf/am.yaml",
        "num_epochs": 12,
        "wall_seconds": 60.0,
        "cpu_seconds": 40.0,
    }


def _corpus(name="czech"):
    return {
        "name": name,
        "title": "Czech mini corpus",
        "command": "python benchmarks/bench_am_data.py --name czech",
        "commit": "abc1234",
        "machine": {"cpu": "a CPU"},
        "dev": {"cuts": 54, "hours": 0.11},
        "runs": [
            _run("from scratch", 0.1, 100.0),
            _run("from an AM", 0.1, 80.25),
            _run("from scratch", ALL, 60.0, held=1.0),
        ],
    }


def test_table_has_a_row_per_subset_and_a_column_per_init(tmp_path):
    text = render_tables({"kind": KIND, "corpora": [_corpus()]})
    assert "| training speech | utterances | dev WER, from scratch | dev WER, from an AM |" in text
    assert "| 0.1 h | 50 | 100.0 | 80.2 |" in text
    assert "| all (1.00 h) | 50 | 60.0 |  |" in text  # a cell not measured stays empty
    assert "54 dev utterances (0.11 h)" in text and "at abc1234 (training and decoding: 3 min wall, 2 min CPU" in text
    assert render_tables({"kind": KIND, "corpora": [_corpus()]}, names=["english"]) == ""
    path = tmp_path / "am_data.json"
    path.write_text(json.dumps({"kind": KIND, "corpora": [_corpus()]}))
    assert tables_and_summary([path], "test") == (KIND, text, {})  # what the README regions are rewritten with
    with pytest.raises(ValueError, match="not an am_data"):
        render_tables({"kind": "itn", "corpora": []})
