"""benchmarks.itn_streaming.live_table: live captions on whole speeches: the pause split chosen on dev at latency
inf, then F1 against latency at it for every split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def row(pause_split, latency, overall, cap, final=0.25):
    return {"pause_split": pause_split, "latency": latency, "punct_overall_f1": overall, "punct_macro_f1": overall / 2,
            "cap_f1": cap, "final_share": final, "rtf": 0.1, "rtf_cpu": 0.01 if latency == "inf" else 0.1,
            "segments": 6, "speeches": 2, "words": 40, "inserted_words": 3, "deleted_words": 4,
            "deleted_marks": 1}  # fmt: skip


def bench_file(path: Path, seed: int, splits: dict) -> Path:
    path.write_text(json.dumps({"kind": "itn_live", "seed": seed, "splits": splits}), encoding="utf-8")
    return path


def sweep(tmp_path: Path, seed: int, best: float, test_at: float | None = None) -> Path:
    """Dev at two pause splits (``best`` scores higher) and two latencies at ``best``; test at ``test_at``."""
    other = 1.0 if best != 1.0 else 0.5
    mm = [row(best, "inf", 40 + seed, 30), row(other, "inf", 38, 28), row(best, 1.0, 35, 29, 0.1)]
    text = [row(best, "inf", 30, 10), row(other, "inf", 31, 10)]
    splits = {"dev": {"mm": mm, "text": text}}
    if test_at is not None:
        splits["test"] = {"mm": [row(test_at, "inf", 45, 33)]}
    return bench_file(tmp_path / f"{seed}.json", seed, splits)


def test_the_pause_split_is_chosen_on_dev_and_the_latency_tables_are_at_it(tmp_path):
    from benchmarks.itn_streaming.live_table import (
        chosen_pause_split,
        itn_live_tables,
        pause_split_table,
        read_itn_live,
    )

    rows = read_itn_live([sweep(tmp_path, 1, 0.5, test_at=0.5), sweep(tmp_path, 2, 0.5, test_at=0.5)])
    assert chosen_pause_split(rows) == 0.5
    header, table = pause_split_table(rows)
    assert header[0] == "pause split (s)" and header[-1] == "segments per speech"
    assert [r[0] for r in table] == ["0.5", "1"]
    assert table[0][1:3] == ["30.0 ± 0.0", "41.5 ± 0.7"]  # overall F1: text-only, multimodal
    assert table[0][-2:] == ["27.9", "3.0"]  # mean of (overall + [cap]) / 2; segments per speech
    text = itn_live_tables(rows, "bench")
    assert "`--pause-split 0.5`" in text
    assert "**dev, punctuation overall F1 (%)**" in text and "**test, [cap] F1 (%)**" in text
    assert "| 1 | n/a | 35.0 ± 0.0 | 10 % |" in text  # dev at latency 1 s, only the multimodal model measured
    assert "| offline | 45.0 ± 0.0 | 100 % |" not in text and "| offline | 45.0 ± 0.0 | 25 % |" in text
    assert "seeds 1, 2" in text and "`bench`" in text
    assert "| 1 | n/a | 0.1000 |" in text and "| offline | 0.0100 | 0.0100 |" in text  # CPU seconds per second
    assert "dev seed 1: 2 speeches, 40 words scored, 3 inserted, 4 deleted (1 with a mark); dev seed 2:" in text
    assert "; test seed 1: 2 speeches" in text


def test_another_value_wins_when_its_dev_scores_are_higher(tmp_path):
    from benchmarks.itn_streaming.live_table import chosen_pause_split, read_itn_live

    assert chosen_pause_split(read_itn_live([sweep(tmp_path, 1, 1.0)])) == 1.0


def test_test_at_a_value_dev_did_not_choose_is_an_error(tmp_path):
    from benchmarks.itn_streaming.live_table import itn_live_tables, read_itn_live

    rows = read_itn_live([sweep(tmp_path, 1, 0.5, test_at=1.0)])
    with pytest.raises(ValueError, match="test: not measured at the pause split dev chose"):
        itn_live_tables(rows)


def test_a_measurement_twice_or_a_file_of_another_kind_is_an_error(tmp_path):
    from benchmarks.itn_streaming.live_table import read_itn_live

    a = bench_file(tmp_path / "a.json", 1, {"dev": {"mm": [row(1.0, "inf", 40, 30)]}})
    b = bench_file(tmp_path / "b.json", 1, {"dev": {"mm": [row(1.0, "inf", 41, 30)]}})
    with pytest.raises(ValueError, match="twice"):
        read_itn_live([a, b])
    other = tmp_path / "c.json"
    other.write_text(json.dumps({"kind": "itn_streaming", "seed": 1, "splits": {}}), encoding="utf-8")
    with pytest.raises(ValueError, match="not a bench_itn_live.py result"):
        read_itn_live([other])


def test_the_plot_is_at_the_chosen_pause_split(tmp_path):
    from benchmarks.itn_streaming.live_table import plot_live

    out = tmp_path / "live.png"
    plot_live([sweep(tmp_path, 1, 0.5), sweep(tmp_path, 2, 0.5)], "dev", out)
    assert out.stat().st_size > 1000
