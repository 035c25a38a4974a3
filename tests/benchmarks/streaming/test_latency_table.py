"""benchmarks.streaming.latency_table: the README table of F1 against latency, and the committed table against its
JSON."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def row(latency, f1s, final=0.5):
    return {
        "latency": latency,
        "f1": dict(zip(("BERT", "TDNN", "ensemble"), f1s)),
        "final_share": final,
        "wait_median": 0.42,
        "wait_max": 0.61,
        "rtf": 0.2,
        "rtf_cpu": 0.1234,
        "rtf_cpu_chunk_p95": 0.5,
    }


def test_markdown_table_one_row_per_split_and_latency():
    from benchmarks.streaming.latency_table import markdown_table

    table = markdown_table({"splits": {"dev": [row(0.5, (40.04, 55.55, 56.0)), row("inf", (50, 60, 61), 1.0)]}})
    lines = table.splitlines()
    assert len(lines) == 4
    assert lines[2] == "| dev | 0.5 | 40.0 | 55.5 | 56.0 | 50 % | 0.42 | 0.61 | 0.123 | 0.50 |"
    assert lines[3].startswith("| dev | offline (inf) | 50.0 | 60.0 | 61.0 | 100 % |")


def test_committed_table_is_the_committed_results():
    """benchmarks/streaming/README.md's results:streaming region is the table of egs/mustc/RESULTS/streaming.json."""
    from benchmarks.streaming.latency_table import markdown_table
    from punct.results.regions import region_content

    results = REPO / "egs" / "mustc" / "RESULTS" / "streaming.json"
    readme = REPO / "benchmarks" / "streaming" / "README.md"
    content = region_content(readme.read_text(encoding="utf-8"), "streaming", str(readme))
    assert content == markdown_table(json.loads(results.read_text(encoding="utf-8")))


def streaming_file(path: Path, seed: int, share: float, splits: dict, frames: int = 0, bert: float = 0.0) -> Path:
    result = {"kind": "streaming", "seed": seed, "alpha": 0.6, "right_truncation": share}
    result |= {"right_truncation_frames": frames, "bert_right_truncation": bert, "splits": splits}
    path.write_text(json.dumps(result), encoding="utf-8")
    return path


def test_truncation_tables_mean_sd_and_paired_difference(tmp_path):
    """Per variant the mean ± sd over seeds; the difference column pairs the seeds (a dev and a test file of one
    run are merged)."""
    from benchmarks.streaming.latency_table import read_streaming_runs, truncation_rows, truncation_tables

    files = [
        streaming_file(tmp_path / "a.json", 1, 0.0, {"dev": [row(0.3, (30, 40, 41)), row("inf", (50, 60, 62))]}),
        streaming_file(tmp_path / "b.json", 2, 0.0, {"dev": [row(0.3, (30, 44, 45)), row("inf", (50, 62, 63))]}),
        streaming_file(tmp_path / "c.json", 1, 0.5, {"dev": [row(0.3, (30, 50, 51)), row("inf", (50, 59, 61))]}),
        streaming_file(tmp_path / "d.json", 2, 0.5, {"dev": [row(0.3, (30, 52, 53)), row("inf", (50, 62, 63))]}),
        streaming_file(tmp_path / "e.json", 1, 0.0, {"test": [row(0.3, (30, 33, 34))]}),
    ]
    runs = read_streaming_runs(files)
    assert [(r.seed, r.variant.tdnn_share) for r in runs] == [(1, 0.0), (1, 0.5), (2, 0.0), (2, 0.5)]
    header, rows = truncation_rows(runs, "TDNN")
    assert header == ["split", "latency (s)", "rt 0", "TDNN rt 0.5", "TDNN rt 0.5 − rt 0"]
    assert rows[0] == ["dev", "0.3", "42.0 ± 2.8", "51.0 ± 1.4", "9.0 ± 1.4"]
    assert rows[1] == ["dev", "offline", "61.0 ± 1.4", "60.5 ± 2.1", "-0.5 ± 0.7"]
    # the test split has seed 1 of rt 0 only: its mean needs every seed
    assert rows[2] == ["test", "0.3", "n/a", "n/a", "n/a"]
    tables = truncation_tables(runs, "cmd")
    assert "**ensemble**" in tables and "| dev | 0.3 | 43.0 ± 2.8 | 52.0 ± 1.4 | 9.0 ± 1.4 |" in tables
    assert "seeds 1, 2" in tables and "`cmd`" in tables
    assert "**BERT**" not in tables  # no variant trains BERT differently: its columns would be copies
    bert_variant = streaming_file(tmp_path / "f.json", 1, 0.0, {"dev": [row(0.3, (35, 40, 42))]}, bert=0.5)
    assert "**BERT**" in truncation_tables(read_streaming_runs([*files, bert_variant]))


def test_streaming_runs_refuse_a_latency_measured_twice(tmp_path):
    import pytest

    from benchmarks.streaming.latency_table import read_streaming_runs

    dev = {"dev": [row(0.3, (30, 40, 41))]}
    files = [streaming_file(tmp_path / "a.json", 1, 0.0, dev), streaming_file(tmp_path / "b.json", 1, 0.0, dev)]
    with pytest.raises(ValueError, match="b.json: dev at latency 0.3"):
        read_streaming_runs(files)
    (tmp_path / "old.json").write_text(json.dumps({"splits": dev}), encoding="utf-8")
    with pytest.raises(ValueError, match="old.json: not a bench_streaming.py result"):
        read_streaming_runs([tmp_path / "old.json"])
    streaming_file(tmp_path / "bert.json", 1, 0.0, dev)
    result = json.loads((tmp_path / "bert.json").read_text())
    del result["bert_right_truncation"]  # a result of before BERT's right truncation: refused, not taken as 0
    (tmp_path / "bert.json").write_text(json.dumps(result))
    with pytest.raises(ValueError, match="bert.json: .*no 'bert_right_truncation'"):
        read_streaming_runs([tmp_path / "bert.json"])


def test_recipe_facts_read_the_seed_alpha_and_truncation(tmp_path):
    from benchmarks.streaming.latency_table import recipe_facts
    from punct.results.regions import results_kind

    (tmp_path / "exp" / "results").mkdir(parents=True)
    (tmp_path / "exp" / "tdnn").mkdir()
    (tmp_path / "exp" / "results" / "results.json").write_text(json.dumps({"seed": 3, "chosen_alpha": 0.7}))
    (tmp_path / "exp" / "tdnn" / "config.yaml").write_text("epochs: 12\n")  # trained before right_truncation
    (tmp_path / "exp" / "bert").mkdir()
    (tmp_path / "exp" / "bert" / "config.yaml").write_text("right_truncation: 0.25\n")
    facts = recipe_facts(tmp_path)
    assert facts == {
        "kind": "streaming",
        "seed": 3,
        "alpha": 0.7,
        "right_truncation": 0.0,
        "right_truncation_frames": 0,
        "bert_right_truncation": 0.25,
    }
    (tmp_path / "exp" / "tdnn" / "config.yaml").write_text("right_truncation: 0.5\nright_truncation_frames: 20\n")
    assert recipe_facts(tmp_path)["right_truncation_frames"] == 20
    path = streaming_file(tmp_path / "s.json", 3, 0.5, {})
    assert results_kind(path) == "streaming"


def test_variant_names_and_order():
    from benchmarks.streaming.latency_table import Variant

    variants = sorted([Variant(0.5, 0, 0.5), Variant(), Variant(0.5, 20), Variant(0.5)])
    assert [v.name for v in variants] == ["rt 0", "TDNN rt 0.5", "TDNN rt 0.5, BERT rt 0.5", "TDNN rt 0.5 (20 fr)"]


def test_runs_of_one_variant_make_one_table_with_the_gap_to_offline_and_the_parts(tmp_path):
    """One variant: each model's F1, the ensemble's distance from its own offline F1 paired by seed, and the CPU
    RTF of the whole stream and of each part (n/a for a file without parts)."""
    from benchmarks.streaming.latency_table import read_streaming_runs, truncation_tables

    parts = {"audio": 0.0, "features": 0.01, "am": 0.02, "bert": 0.05, "tdnn": 0.01, "ensemble": 0.0}
    live = row(1.0, (50, 55, 56)) | {"rtf_cpu": 0.1, "rtf_cpu_parts": parts}
    files = [
        streaming_file(tmp_path / "a.json", 1, 0.0, {"dev": [live, row("inf", (58, 59, 60))]}),
        streaming_file(tmp_path / "b.json", 2, 0.0, {"dev": [row(1.0, (52, 57, 60)), row("inf", (58, 59, 60))]}),
    ]
    lines = truncation_tables(read_streaming_runs(files), "cmd").splitlines()
    assert lines[0].startswith("| split | latency (s) | BERT F1 | TDNN F1 | ensemble F1 | ensemble − offline | CPU RTF")
    # ensemble 56 and 60 against offline 60 and 60: gaps -4 and 0
    live_row = "| dev | 1 | 51.0 ± 1.4 | 56.0 ± 1.4 | 58.0 ± 2.8 | -2.0 ± 2.8 | 0.1117 ± 0.0165 | n/a |"
    assert lines[2].startswith(live_row)
    assert lines[3].startswith("| dev | offline | 58.0 ± 0.0 | 59.0 ± 0.0 | 60.0 ± 0.0 | 0.0 ± 0.0 | 0.1234 ± 0.0000 |")
    assert "seeds 1, 2" in lines[5] and "rt 0 runs" in lines[5] and lines[5].endswith("Made with `cmd`.")


def test_alpha_by_latency_reads_the_recipe_own_and_held_out_alphas(tmp_path):
    """Per latency the ensemble's F1 at the recipe's alpha, at each seed's own best and at the best of the other
    seeds together (a tie goes to the smaller alpha), each minus the seed's offline F1 at the recipe's alpha."""
    import pytest

    from benchmarks.streaming.latency_table import alpha_by_latency_table, read_alpha_sweeps

    grid = ("0.0", "0.5", "0.6", "1.0")
    live = {1: (50, 57, 56, 54), 2: (52, 58, 55, 53), 3: (49, 54, 55, 56)}
    offline = {1: 61, 2: 63, 3: 60}
    files = []
    for seed in (1, 2, 3):
        rows = [
            row(1.0, (0, 0, 0)) | {"f1_by_alpha": dict(zip(grid, live[seed]))},
            row("inf", (0, 0, 0)) | {"f1_by_alpha": dict(zip(grid, (0, 0, offline[seed], 0)))},
        ]
        files.append(streaming_file(tmp_path / f"{seed}.json", seed, 0.0, {"dev": rows}))
    lines = alpha_by_latency_table(files, "cmd").splitlines()
    assert lines[0].startswith("| split | latency (s) | recipe's alpha: F1 | − offline | own best alpha | its F1 |")
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[:4] == ["dev", "1", "55.3 ± 0.6", "-6.0 ± 1.7"]
    assert cells[4:7] == ["0.5 / 0.5 / 1.0", "57.0 ± 1.0", "-4.3 ± 0.6"]
    # seed 2's others tie at 0.5 and 0.6: the smaller alpha
    assert cells[7:] == ["0.5 / 0.5 / 0.5", "56.3 ± 2.1", "-5.0 ± 1.0"]
    assert lines[3].split("|")[2].strip() == "offline" and "0.6 / 0.6 / 0.6" in lines[5]
    with pytest.raises(ValueError, match="f1_by_alpha"):
        read_alpha_sweeps([streaming_file(tmp_path / "old.json", 4, 0.0, {"dev": [row(1.0, (1, 2, 3))]})])
