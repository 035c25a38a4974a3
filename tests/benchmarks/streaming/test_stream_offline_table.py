"""benchmarks.streaming.stream_offline_table: the table of a stream at unbounded latency against stage 8, over seeds."""

from __future__ import annotations

import json

import pytest

from benchmarks.streaming.stream_offline_table import KIND, offline_rows, read_runs, stage8_f1, stream_offline_tables


def result(seed: int, tdnn: float, stage8_tdnn: float, label: str = "natural") -> dict:
    rows = [
        {"times": t, "cuts": c, "cmvn": n, "words": 10, "f1": {"BERT": 50.0, "TDNN": tdnn + k, "ensemble": tdnn}}
        for k, (t, c, n) in enumerate([("a", "pauses", "training stats"), ("b", "segments", "speaker stats")])
    ]
    stage8 = {"BERT": 50.0, "TDNN": stage8_tdnn, "ensemble": stage8_tdnn}
    return {"kind": KIND, "label": label, "seed": seed, "split": "dev", "stage8": stage8, "rows": rows}


def test_rows_pair_each_seed_with_its_stage8(tmp_path):
    paths = []
    for seed, tdnn, stage8 in ((1, 60.0, 62.0), (2, 64.0, 64.0)):
        paths.append(tmp_path / f"s{seed}.json")
        paths[-1].write_text(json.dumps(result(seed, tdnn, stage8)))
    rows = offline_rows(read_runs(paths)["natural"])
    # TDNN of the first combination: 60 and 64 -> 62.0 ± 2.8; minus stage 8 per seed: -2 and 0 -> -1.0 ± 1.4
    assert rows[0][:3] == ["a", "pauses", "training stats"]
    assert rows[0][4] == "62.0 ± 2.8" and rows[0][6] == "-1.0 ± 1.4"
    assert rows[1][4] == "63.0 ± 2.8" and rows[-1][0] == "stage 8" and rows[-1][4] == "63.0 ± 1.4"
    assert "**natural** (dev, seeds 1, 2)" in stream_offline_tables(paths, "cmd")
    paths.append(tmp_path / "again.json")
    paths[-1].write_text(json.dumps(result(2, 1.0, 1.0)))
    with pytest.raises(ValueError, match="seed 2 is already in another file"):
        read_runs(paths)


def test_stage8_f1_takes_the_ensemble_chosen_on_dev():
    systems = {
        "BERT only": {"overall": {"f1": 0.5}},
        "TDNN": {"overall": {"f1": 0.6}},
        "Ensemble (alpha=0.4, paper)": {"overall": {"f1": 0.1}},
        "Ensemble (alpha=0.8, chosen on dev)": {"overall": {"f1": 0.7}},
    }
    assert stage8_f1({"systems": {"dev": systems}}, "dev") == pytest.approx({"BERT": 50, "TDNN": 60, "ensemble": 70})
