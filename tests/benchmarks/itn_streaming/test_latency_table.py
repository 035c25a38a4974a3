"""benchmarks.itn_streaming.latency_table: the ITN models' table of punctuation and case F1 against latency over
seeds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def row(latency, macro, cap, final=0.25):
    return {"latency": latency, "punct_macro_f1": macro, "punct_overall_f1": 2 * macro, "cap_f1": cap,
            "final_share": final, "rtf": 0.1}  # fmt: skip


def bench_file(path: Path, seed: int, splits: dict) -> Path:
    path.write_text(json.dumps({"kind": "itn_streaming", "seed": seed, "splits": splits}), encoding="utf-8")
    return path


def test_mean_sd_per_model_and_latency(tmp_path):
    from benchmarks.itn_streaming.latency_table import itn_latency_tables, latency_table, read_itn_streaming

    files = [
        bench_file(tmp_path / "a.json", 1, {"dev": {"mm": [row(0.3, 10, 20), row("inf", 30, 40, 1.0)],
                                                    "text": [row(0.3, 8, 18), row("inf", 28, 38, 1.0)]}}),
        bench_file(tmp_path / "b.json", 2, {"dev": {"mm": [row(0.3, 14, 22), row("inf", 32, 44, 1.0)]}}),
    ]  # fmt: skip
    rows = read_itn_streaming(files)
    header, table = latency_table(rows, "dev", "punct_macro_f1")
    assert header == ["latency (s)", "text-only", "multimodal", "words final"]
    assert table[0] == ["0.3", "n/a", "12.0 ± 2.8", "25 %"]  # seed 2 lacks the text model
    assert table[1][0] == "offline" and table[1][2] == "31.0 ± 1.4" and table[1][3] == "100 %"
    _, cap = latency_table(rows, "dev", "cap_f1")
    assert cap[0][2] == "21.0 ± 1.4"
    text = itn_latency_tables(rows, "bench")
    assert "**dev, punctuation macro F1 (%)**" in text and "**dev, [cap] F1 (%)**" in text
    assert "**dev, punctuation overall F1 (%)**" in text and "| 0.3 | n/a | 24.0 ± 5.7 | 25 % |" in text
    assert "seeds 1, 2" in text and "`bench`" in text


def test_a_measurement_twice_or_a_file_of_another_kind_is_an_error(tmp_path):
    from benchmarks.itn_streaming.latency_table import read_itn_streaming

    a = bench_file(tmp_path / "a.json", 1, {"dev": {"mm": [row(0.3, 10, 20)]}})
    b = bench_file(tmp_path / "b.json", 1, {"dev": {"mm": [row(0.3, 11, 21)]}})
    with pytest.raises(ValueError, match="in another file"):
        read_itn_streaming([a, b])
    other = tmp_path / "c.json"
    other.write_text(json.dumps({"kind": "streaming", "seed": 1, "splits": {}}), encoding="utf-8")
    with pytest.raises(ValueError, match="not a bench_itn_streaming.py result"):
        read_itn_streaming([other])


def test_plot_of_the_seeds(tmp_path):
    from benchmarks.itn_streaming.latency_table import plot_itn_latency, read_itn_streaming

    files = [
        bench_file(tmp_path / f"{seed}.json", seed, {"dev": {"mm": [row(0.3, 10 + seed, 20), row("inf", 30, 40)]}})
        for seed in (1, 2)
    ]
    plot_itn_latency(read_itn_streaming(files), "dev", tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
