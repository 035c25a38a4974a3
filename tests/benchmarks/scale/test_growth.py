"""Per-hour fits of the scaling benchmark's figures and their tables (benchmarks/scale/growth.py)."""

from __future__ import annotations

import pytest

from benchmarks.scale.growth import KIND, at_hours, fit_line, fit_sizes, process_growth, render_tables, train_hours


def test_fit_line_recovers_a_line_and_says_how_well():
    fit = fit_line([1, 2, 4, 8], [13.0, 16.0, 22.0, 34.0])  # 10 + 3 h
    assert fit == {"per_hour": pytest.approx(3.0), "at_zero": pytest.approx(10.0), "r2": 1.0}
    assert at_hours(fit, 400) == pytest.approx(1210.0)
    noisy = fit_line([1, 2, 4, 8], [13.0, 17.0, 21.0, 34.0])
    assert noisy["r2"] < 1.0
    assert fit_line([1, 2, 4], [5.0, 5.0, 5.0]) == {"per_hour": pytest.approx(0.0), "at_zero": 5.0, "r2": 1.0}


def _size(hours: float, seconds_per_hour: float, merge_mb: float) -> dict:
    def stage(number, wall, disk):
        return {
            "stage": number,
            "wall_seconds": wall,
            "cpu_seconds": wall * 1.5,
            "peak_rss_mb": merge_mb,
            "read_mb": 10.0 * hours,
            "written_mb": 20.0 * hours,
            "folders_mb": {"data": disk, "exp": 1.0},
            "processes": {
                "punct.bin.align": {"peak_rss_mb": 300.0, "processes": 2},
                "punct.bin.align --merge": {"peak_rss_mb": merge_mb, "processes": 1},
                "python -c": {"peak_rss_mb": 12.0, "processes": 1},
            },
        }

    return {
        "size": f"{hours:g}h",
        "corpus": {"train": {"hours": hours, "segments": 1, "words": 1}},
        "stages": [stage(0, 5.0 + seconds_per_hour * hours, 100.0 * hours), stage(3, 2.0, 100.0 * hours + 7.0)],
    }


def test_fit_sizes_per_stage_and_disk_is_what_each_stage_added():
    sizes = [_size(h, 30.0, 200.0 + 10 * h) for h in (1, 2, 4)]
    fits = fit_sizes(sizes)
    assert list(fits) == ["0", "3"]
    assert fits["0"]["wall_seconds"]["per_hour"] == pytest.approx(30.0)
    assert fits["0"]["disk_mb"]["per_hour"] == pytest.approx(100.0)
    assert fits["3"]["disk_mb"] == {"per_hour": pytest.approx(0.0), "at_zero": pytest.approx(7.0), "r2": 1.0}
    assert fits["3"]["peak_rss_mb"]["per_hour"] == pytest.approx(10.0)


def test_process_growth_and_tables():
    sizes = [_size(h, 30.0, 200.0 + 10 * h) for h in (1, 8)]
    rows = process_growth(sizes)
    assert (3, "punct.bin.align --merge", 1, 8, 210.0, 280.0) in rows
    data = {
        "kind": KIND,
        "recipe": "mustc",
        "command": "python benchmarks/bench_scale.py",
        "commit": "abc1234",
        "began": "2026-12-08 02:00 UTC",
        "machine": {"cpu": "Some CPU", "cpu_kind": "AVX2", "cores": 2},
        "nj": 2,
        "epochs": {"am": 1, "bert": 1, "tdnn": 1},
        "sizes": sizes,
        "fits": fit_sizes(sizes),
    }
    text = render_tables(data)
    assert text.startswith("**egs/mustc**: `python benchmarks/bench_scale.py`, at abc1234, 2026-12-08 02:00 UTC;")
    sizes[0]["stages"][0].update(commit="def5678", finished="2026-12-08 01:50 UTC")
    sizes[1]["stages"][1].update(commit="abc1234", finished="2026-12-08 03:10 UTC")
    assert "stages run at def5678, abc1234, 2026-12-08 01:50 UTC to 2026-12-08 03:10 UTC;" in render_tables(data)
    assert "| 3 alignment | 2 / 210 | 2 / 280 |" in text
    assert "| 3 | `punct.bin.align --merge` | 1.00 -> 8.00 | 210 -> 280 | 1.33 |" in text
    assert "python -c" not in text.split("Peak RSS of each kind")[1]  # below 50 MB: left out
    # 30 s/h from 5 s at 0 h: 400 h -> 12005 s = 3.3 h
    assert "| 0 corpus, manifests | 30.0 | 45.0 | 100.0 | 10.0 | 280 | 3.3 |" in text


def test_a_stage_skipped_at_a_larger_size_is_fitted_on_the_sizes_that_ran_it():
    sizes = [_size(h, 30.0, 200.0 + 10 * h) for h in (1, 2, 4, 8)]
    folders = sizes[-1]["stages"][0]["folders_mb"]
    sizes[-1]["stages"][0] = {"stage": 0, "skipped": "the model of the 4h size", "folders_mb": folders}
    fits = fit_sizes(sizes)
    assert fits["0"]["wall_seconds"]["per_hour"] == pytest.approx(30.0)
    assert fits["0"]["disk_mb"]["per_hour"] == pytest.approx(100.0)  # 1, 2 and 4 h only
    assert fits["3"]["disk_mb"] == {"per_hour": pytest.approx(0.0), "at_zero": pytest.approx(7.0), "r2": 1.0}
    stage0 = [row for row in process_growth(sizes) if row[0] == 0 and row[1] == "punct.bin.align --merge"]
    assert stage0 == [(0, "punct.bin.align --merge", 1, 4, 210.0, 240.0)]


def test_disk_is_a_stages_own_output_folders_when_recorded():
    sizes = [_size(h, 30.0, 200.0) for h in (1, 2)]
    for size in sizes:
        size["stages"][1]["outputs_mb"] = 4.0 * train_hours(size)  # stage 3's folders, not the data/ and exp/ delta
    assert fit_sizes(sizes)["3"]["disk_mb"]["per_hour"] == pytest.approx(4.0)
