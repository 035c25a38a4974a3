"""README tables of live punctuation's F1 against latency, measured by ``benchmarks/bench_streaming.py`` with
``punct.inference.latency``: one trained run's table (``egs/mustc/RESULTS/streaming.json``), and the comparison of
TDNN training variants (``right_truncation``) over seeds, a region of ``egs/mustc/RESULTS/regions.yaml`` whose
streaming.json files carry their recipe's seed and variant (:func:`recipe_facts`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from punct.results.tables import markdown_table as markdown_lines
from punct.results.tables import mean_sd_cell


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


KIND = "streaming"
MODELS = ("BERT", "TDNN", "ensemble")


def recipe_facts(recipe_dir: Path) -> dict:
    """What tells runs of ``benchmarks/bench_streaming.py`` apart, read from the trained recipe: the run's seed
    (stage 8's results.json), the ensemble alpha chosen on dev, and the TDNN's right truncation (exp/tdnn's
    training config; 0 for a model trained before the option existed)."""
    import yaml

    results = json.loads((recipe_dir / "exp" / "results" / "results.json").read_text(encoding="utf-8"))
    config = yaml.safe_load((recipe_dir / "exp" / "tdnn" / "config.yaml").read_text(encoding="utf-8"))
    return {
        "kind": KIND,
        "seed": results.get("seed"),
        "alpha": results.get("chosen_alpha"),
        "right_truncation": float(config.get("right_truncation", 0.0)),
        "right_truncation_frames": int(config.get("right_truncation_frames", 0)),
    }


@dataclass(frozen=True)
class StreamingRun:
    """One trained model's F1 against latency, merged from the streaming.json files of its bench runs."""

    seed: int
    right_truncation: float
    right_truncation_frames: int
    # (split, latency) -> model -> overall F1 in %; latency "inf" is offline
    f1: dict[tuple[str, float | str], dict[str, float]]

    @property
    def variant(self) -> tuple[float, int]:
        return self.right_truncation, self.right_truncation_frames


def read_streaming_runs(paths: Sequence[Path]) -> list[StreamingRun]:
    """The runs of streaming.json files (several files of one seed and variant, e.g. dev and test, are merged;
    a (split, latency) measured twice is an error)."""
    merged: dict[tuple[int, float, int], dict] = {}
    for path in paths:
        result = json.loads(Path(path).read_text(encoding="utf-8"))
        if result.get("kind") != KIND or result.get("seed") is None:
            raise ValueError(f"{path}: not a bench_streaming.py result with its recipe's seed (kind {KIND!r})")
        key = (int(result["seed"]), float(result["right_truncation"]), int(result["right_truncation_frames"]))
        f1 = merged.setdefault(key, {})
        for split, rows in result["splits"].items():
            for row in rows:
                if (split, row["latency"]) in f1:
                    raise ValueError(f"{path}: {split} at latency {row['latency']} is already in another file")
                f1[(split, row["latency"])] = row["f1"]
    return [StreamingRun(*key, f1) for key, f1 in sorted(merged.items())]


def _variant_name(variant: tuple[float, int]) -> str:
    share, frames = variant
    return f"rt {share:g}" + (f" ({frames} fr)" if frames else "")


def _latency_order(latency: float | str) -> float:
    return float("inf") if latency == "inf" else float(latency)


def truncation_rows(runs: Sequence[StreamingRun], model: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of one model's F1 against latency for each training variant (mean ± sd over seeds), and
    each variant's paired difference from the first (per seed, then mean ± sd); a cell lacking a seed is n/a."""
    variants = sorted({run.variant for run in runs})
    by_variant = {v: {run.seed: run for run in runs if run.variant == v} for v in variants}
    seeds = sorted({run.seed for run in runs})
    keys = sorted({key for run in runs for key in run.f1}, key=lambda k: (k[0] != "dev", k[0], _latency_order(k[1])))
    base = variants[0]
    header = ["split", "latency (s)", *(_variant_name(v) for v in variants)]
    header += [f"{_variant_name(v)} − {_variant_name(base)}" for v in variants[1:]]

    def values(variant: tuple[float, int], key: tuple[str, float | str]) -> list[float | None]:
        runs_of = by_variant[variant]
        return [runs_of[s].f1[key][model] if s in runs_of and key in runs_of[s].f1 else None for s in seeds]

    def difference(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else a - b

    rows = []
    for key in keys:
        cells = [mean_sd_cell(values(v, key)) for v in variants]
        cells += [mean_sd_cell(list(map(difference, values(v, key), values(base, key)))) for v in variants[1:]]
        split, latency = key
        rows.append([split, "offline" if latency == "inf" else f"{latency:g}", *cells])
    return header, rows


def truncation_tables(runs: Sequence[StreamingRun], command: str = "") -> str:
    """The README region comparing TDNN training variants (``right_truncation``) on live punctuation: one table
    per model whose F1 the variants change (the TDNN and the ensemble), and a caption."""
    if not runs:
        raise ValueError("no streaming runs")
    seeds = sorted({run.seed for run in runs})
    parts = []
    for model in ("TDNN", "ensemble"):
        header, rows = truncation_rows(runs, model)
        parts.append(f"**{model}**: overall F1 (%)\n\n" + "\n".join(markdown_lines(header, rows, 2)) + "\n")
    caption = (
        f"Mean ± sd over seeds {', '.join(map(str, seeds))} (sample sd); the difference column is paired by seed. "
        "rt: the share of training utterances cut after a word's end (`right_truncation` of conf/tdnn_mini.yaml). "
        "BERT is the same model in every variant. The ensemble uses each run's alpha chosen on dev."
    )
    if command:
        caption += f" Made with `{command}`."
    return "\n".join(parts) + "\n" + caption + "\n"
