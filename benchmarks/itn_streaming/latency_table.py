"""The README table of egs/parczech's live punctuation and case against latency: ``benchmarks/bench_itn_streaming.py``
(``benchmarks.itn_streaming.segments``) on the stage-4 models of several seeds, each file one run's split(s), as a
region of ``egs/parczech/RESULTS/regions.yaml``."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from punct.results.plots import pyplot, save_figure
from punct.results.tables import markdown_table, mean_sd_cell

KIND = "itn_streaming"
MODEL_NAMES = {"text": "text-only", "mm": "multimodal", "mm_pe": "multimodal + PE", "mm_pe_random": "random audio"}
METRICS = (
    ("punct_overall_f1", "punctuation overall F1"),
    ("punct_macro_f1", "punctuation macro F1"),
    ("cap_f1", "[cap] F1"),
)

# (seed, split, model, latency) -> the bench's row
Rows = dict[tuple[int, str, str, float | str], dict]


def read_bench_rows(paths: Sequence[Path], kind: str, bench: str, key: Callable[[int, str, str, dict], tuple]) -> dict:
    """The rows of an ITN streaming bench's files (``{"kind", "seed", "splits": {split: {model: [row]}}}``) by
    ``key(seed, split, model, row)``; a key measured twice is an error naming the file."""
    rows: dict = {}
    for path in paths:
        result = json.loads(Path(path).read_text(encoding="utf-8"))
        if result.get("kind") != kind or "seed" not in result:
            raise ValueError(f"{path}: not a {bench} result with its run's seed")
        for split, by_model in result["splits"].items():
            for model, model_rows in by_model.items():
                for row in model_rows:
                    k = key(int(result["seed"]), split, model, row)
                    if k in rows:
                        raise ValueError(f"{path}: {' '.join(map(str, k))} measured twice (in another file)")
                    rows[k] = row
    return rows


def read_itn_streaming(paths: Sequence[Path]) -> Rows:
    """The rows of bench_itn_streaming.py files by (seed, split, model, latency)."""
    return read_bench_rows(
        paths, KIND, "bench_itn_streaming.py", lambda seed, split, model, row: (seed, split, model, row["latency"])
    )


def _latency_order(latency: float | str) -> float:
    return float("inf") if latency == "inf" else float(latency)


def latency_table(rows: Rows, split: str, metric: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of one split and metric: a row per latency, a column per model, mean ± sd over the seeds
    (n/a where a seed lacks the value), and the share of words labelled from their whole segment."""
    seeds = sorted({k[0] for k in rows})
    order = list(MODEL_NAMES)
    models = sorted({k[2] for k in rows if k[1] == split}, key=lambda m: order.index(m) if m in order else len(order))
    latencies = sorted({k[3] for k in rows if k[1] == split}, key=_latency_order)
    header = ["latency (s)", *(MODEL_NAMES.get(m, m) for m in models), "words final"]
    table = []
    for latency in latencies:
        cells = [mean_sd_cell([_value(rows, (s, split, m, latency), metric) for s in seeds]) for m in models]
        finals = [_value(rows, (s, split, m, latency), "final_share") for s in seeds for m in models]
        known = [x for x in finals if x is not None]
        final = f"{100 * sum(known) / len(known):.0f} %" if known else "n/a"
        table.append(["offline" if latency == "inf" else f"{latency:g}", *cells, final])
    return header, table


def _value(rows: Rows, key: tuple, metric: str) -> float | None:
    return rows[key][metric] if key in rows else None


def itn_latency_tables(rows: Rows, command: str = "") -> str:
    """The README region: per split, punctuation overall and macro F1 (9 marks) and [cap] F1 against latency, and a
    caption."""
    if not rows:
        raise ValueError("no bench_itn_streaming.py rows")
    parts = []
    splits = sorted({k[1] for k in rows}, key=lambda s: (s != "dev", s))
    for split in splits:
        for metric, title in METRICS:
            header, table = latency_table(rows, split, metric)
            parts.append(f"**{split}, {title} (%)**\n\n" + "\n".join(markdown_table(header, table, 1)) + "\n")
    seeds = sorted({k[0] for k in rows})
    caption = (
        f"Mean ± sd over seeds {', '.join(map(str, seeds))} (sample sd). Each segment streamed 0.1 s at a time; a word "
        "is labelled at the first 0.1 s boundary at least `latency` after its end, from the words ended by then and "
        "the audio so far (`benchmarks.itn_streaming.segments`); offline is stage 4's decode of whole segments. "
        "Words final: labelled from the whole segment (mean over models and seeds)."
    )
    if command:
        caption += f" Made with `{command}`."
    return "\n".join(parts) + "\n" + caption + "\n"


def plot_itn_latency(rows: dict, split: str, path: Path) -> None:
    """egs/parczech's punctuation macro F1 and [cap] F1 against the latency of live captions, one panel each: per
    model the mean over seeds with its sd as error bars, offline (latency inf) as a dotted line
    (``benchmarks.itn_streaming.latency_table.read_itn_streaming`` rows)."""
    plt = pyplot()
    models = [m for m in MODEL_NAMES if any(k[1] == split and k[2] == m for k in rows)]
    fig, axes = plt.subplots(1, len(METRICS), figsize=(5 * len(METRICS), 3.8), squeeze=False)
    for ax, (metric, title) in zip(axes[0], METRICS):
        for model in models:
            values: dict = {}
            for (_, s, m, latency), row in rows.items():
                if s == split and m == model:
                    values.setdefault(latency, []).append(row[metric])
            timed = sorted(x for x in values if x != "inf")
            mean = [float(np.mean(values[x])) for x in timed]
            spread = [float(np.std(values[x], ddof=1)) if len(values[x]) > 1 else 0.0 for x in timed]
            line = ax.errorbar(timed, mean, yerr=spread, marker="o", capsize=3, label=MODEL_NAMES[model])
            if "inf" in values:
                ax.axhline(float(np.mean(values["inf"])), color=line[0].get_color(), linestyle=":", linewidth=1)
        ax.set_xlabel("latency (s of audio after a word's end)")
        ax.set_ylabel(f"{title} (%)")
        ax.set_title(f"{split} (dotted: offline)")
        ax.grid(alpha=0.3)
        ax.legend()
    save_figure(plt, fig, path, dpi=120)


def render(paths: Sequence[Path], command: str = "") -> str:
    """The region of bench_itn_streaming.py's files (:func:`itn_latency_tables`)."""
    return itn_latency_tables(read_itn_streaming(paths), command)
