"""The README table of live punctuation's F1 against latency (``egs/mustc/RESULTS/streaming.json``, measured by
``benchmarks/bench_streaming.py`` with ``punct.inference.latency``)."""

from __future__ import annotations


def markdown_table(results: dict) -> str:
    """The README table of ``egs/mustc/RESULTS/streaming.json``: one block of rows per split."""
    lines = [
        "| split | latency (s) | BERT F1 | TDNN F1 | ensemble F1 | words final | median wait (s) | max wait (s) "
        "| RTF (CPU) | RTF p95 per chunk (CPU) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for split, rows in results["splits"].items():
        for row in rows:
            latency = "offline (inf)" if row["latency"] == "inf" else f"{row['latency']:g}"
            lines.append(
                f"| {split} | {latency} | {row['f1']['BERT']:.1f} | {row['f1']['TDNN']:.1f} | "
                f"{row['f1']['ensemble']:.1f} | {100 * row['final_share']:.0f} % | {row['wait_median']:.2f} | "
                f"{row['wait_max']:.2f} | {row['rtf_cpu']:.3f} | {row['rtf_cpu_chunk_p95']:.2f} |"
            )
    return "\n".join(lines) + "\n"
