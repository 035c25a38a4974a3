"""The 400 h plan on paper (benchmarks/scale/gpu_plan.py): FLOPs counted on real graphs, rows, totals."""

from __future__ import annotations

import pytest
import torch

from benchmarks.scale.gpu_plan import (
    ClusterShape,
    ModelFlops,
    chunk_overlap,
    count_flops,
    gpu_hours,
    make_plan,
    render_plan,
)


def test_count_flops_of_a_linear_layer():
    layer = torch.nn.Linear(64, 32, bias=False)
    assert count_flops(lambda: layer(torch.randn(10, 64))) == 2 * 10 * 64 * 32


def test_chunk_overlap_and_gpu_hours():
    assert chunk_overlap(256, 32) == pytest.approx(254 / 190)
    shape = ClusterShape(gpus=2, peak_tflops=100.0)
    # 0.05 x 100 TFLOP/s x 2 GPUs = 10 TFLOP/s: 36 PFLOP take an hour
    assert gpu_hours(36e15, shape, "tdnn") == pytest.approx(1.0)


def _fit(per_hour: float, at_zero: float = 0.0) -> dict:
    return {"per_hour": per_hour, "at_zero": at_zero, "r2": 1.0}


def test_plan_rows_bounds_and_totals():
    fits = {stage: {"cpu_seconds": _fit(36.0)} for stage in "013468"}
    scale = {
        "fits": fits,
        "sizes": [{"corpus": {"train": {"hours": 2.0, "words": 22000}}}],
        "machine": {"cpu": "Some CPU"},
        "nj": 2,
        "commit": "abc1234",
    }
    flops = ModelFlops(1e9, 1e8, 1e9, 1e8, bert_max_length=256, bert_context=32)
    stage7 = {
        "window": {"examples_per_hour": 40000, "loader_cpu_seconds_per_hour": 720.0, "h2d_bytes_per_hour": 8e10},
        "utterance": {"examples_per_hour": 11000, "loader_cpu_seconds_per_hour": 3.6, "h2d_bytes_per_hour": 5e9},
    }
    shape = ClusterShape(hours=400.0, gpus=8, cpu_jobs=32, loader_workers=4)
    plan = make_plan(scale, flops, {"am": 10, "bert": 20, "tdnn": 25}, 1.2, stage7, shape)
    rows = {row["stage"]: row for row in plan["rows"]}
    assert rows["1"]["wall_hours"] == pytest.approx(36.0 * 400 / 32 / 3600, abs=0.01)  # 0.125 h
    assert rows["8"]["wall_hours"] == pytest.approx(4.0)  # one job: 36 s/h x 400 h
    # window: 720 s/h x 400 h x 25 epochs over 32 workers = 62.5 h of loader, more than the GPUs' share
    assert rows["7 (window)"]["bound"] == "loader CPU (measured)"
    assert rows["7 (window)"]["wall_hours"] == pytest.approx(62.5)
    assert rows["7 (utterance)"]["wall_hours"] < rows["7 (window)"]["wall_hours"] / 10
    others = sum(row["wall_hours"] for stage, row in rows.items() if not stage.startswith("7"))
    assert plan["total_hours"]["window"] == pytest.approx(others + 62.5, abs=0.1)
    assert plan["words_per_hour"] == 11000
    text = render_plan(plan)
    assert "| all, stage 7 in window mode | | | **" in text
    assert "estimate" not in text or "(estimate)" in text
