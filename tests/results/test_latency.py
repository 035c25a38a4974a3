"""punct.results.latency: the README table of F1 against latency, and the committed table against its JSON."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


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
    from punct.results.latency import markdown_table

    table = markdown_table({"splits": {"dev": [row(0.5, (40.04, 55.55, 56.0)), row("inf", (50, 60, 61), 1.0)]}})
    lines = table.splitlines()
    assert len(lines) == 4
    assert lines[2] == "| dev | 0.5 | 40.0 | 55.5 | 56.0 | 50 % | 0.42 | 0.61 | 0.123 | 0.50 |"
    assert lines[3].startswith("| dev | offline (inf) | 50.0 | 60.0 | 61.0 | 100 % |")


def test_committed_table_is_the_committed_results():
    """egs/mustc/local/README.md's results:streaming region is the table of egs/mustc/RESULTS/streaming.json."""
    from punct.results.latency import markdown_table
    from punct.results.regions import region_content

    results = REPO / "egs" / "mustc" / "RESULTS" / "streaming.json"
    readme = REPO / "egs" / "mustc" / "local" / "README.md"
    content = region_content(readme.read_text(encoding="utf-8"), "streaming", str(readme))
    assert content == markdown_table(json.loads(results.read_text(encoding="utf-8")))
