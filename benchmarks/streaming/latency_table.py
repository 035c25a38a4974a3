"""README tables of live punctuation's F1 against latency, measured by ``benchmarks/bench_streaming.py`` with
``benchmarks.streaming.measure``: one trained run's table (``egs/mustc/RESULTS/streaming.json``), and the comparison
of training variants (``right_truncation`` of the TDNN and of BERT) over seeds, a region of
``egs/mustc/RESULTS/regions.yaml`` whose streaming.json files carry their recipe's seed and variant
(:func:`recipe_facts`)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from punct.results.plots import pyplot, save_figure
from punct.results.tables import markdown_table as markdown_lines
from punct.results.tables import mean_sd_cell, number


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
    (stage 8's results.json), the ensemble alpha chosen on dev, and the right truncation the TDNN and BERT were
    trained with (exp/tdnn/config.yaml, exp/bert/config.yaml; 0 for a model trained before the option existed)."""
    import yaml

    def config(model: str) -> dict:
        return yaml.safe_load((recipe_dir / "exp" / model / "config.yaml").read_text(encoding="utf-8")) or {}

    results = json.loads((recipe_dir / "exp" / "results" / "results.json").read_text(encoding="utf-8"))
    tdnn, bert = config("tdnn"), config("bert")
    return {
        "kind": KIND,
        "seed": results.get("seed"),
        "alpha": results.get("chosen_alpha"),
        "right_truncation": float(tdnn.get("right_truncation", 0.0)),
        "right_truncation_frames": int(tdnn.get("right_truncation_frames", 0)),
        "bert_right_truncation": float(bert.get("right_truncation", 0.0)),
    }


@dataclass(frozen=True, order=True)
class Variant:
    """How a run's models were trained for live captions (recipe_facts)."""

    tdnn_share: float = 0.0  # right_truncation of conf/tdnn_mini.yaml
    tdnn_frames: int = 0  # right_truncation_frames (0: the TDNN's right context)
    bert_share: float = 0.0  # right_truncation of conf/bert_mini.yaml

    @property
    def name(self) -> str:
        parts = []
        if self.tdnn_share:
            parts.append(f"TDNN rt {self.tdnn_share:g}" + (f" ({self.tdnn_frames} fr)" if self.tdnn_frames else ""))
        if self.bert_share:
            parts.append(f"BERT rt {self.bert_share:g}")
        return ", ".join(parts) or "rt 0"


@dataclass(frozen=True)
class StreamingRun:
    """One trained recipe's F1 against latency, merged from the streaming.json files of its bench runs."""

    seed: int
    variant: Variant
    # (split, latency) -> model -> overall F1 in %; latency "inf" is offline
    f1: dict[tuple[str, float | str], dict[str, float]]
    # (split, latency) -> CPU RTF of the whole stream and of each pipeline part ("" for the whole; files written
    # before the parts were measured have the whole only)
    rtf_cpu: dict[tuple[str, float | str], dict[str, float]] = field(default_factory=dict)


def read_streaming_runs(paths: Sequence[Path]) -> list[StreamingRun]:
    """The runs of streaming.json files (several files of one seed and variant, e.g. dev and test, are merged;
    a (split, latency) measured twice is an error)."""
    merged: dict[tuple[int, Variant], dict] = {}
    rtf: dict[tuple[int, Variant], dict] = {}
    for path in paths:
        result = json.loads(Path(path).read_text(encoding="utf-8"))
        try:
            if result["kind"] != KIND:
                raise KeyError("kind")
            variant = Variant(
                float(result["right_truncation"]),
                int(result["right_truncation_frames"]),
                float(result["bert_right_truncation"]),
            )
            key = (int(result["seed"]), variant)
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(
                f"{path}: not a bench_streaming.py result with its recipe's seed and right truncation (no {e})"
            ) from e
        f1 = merged.setdefault(key, {})
        for split, rows in result["splits"].items():
            for row in rows:
                if (split, row["latency"]) in f1:
                    raise ValueError(f"{path}: {split} at latency {row['latency']} is already in another file")
                f1[(split, row["latency"])] = row["f1"]
                rtf.setdefault(key, {})[(split, row["latency"])] = {"": row["rtf_cpu"], **row.get("rtf_cpu_parts", {})}
    return [StreamingRun(seed, variant, f1, rtf[(seed, variant)]) for (seed, variant), f1 in sorted(merged.items())]


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
    header = ["split", "latency (s)", *(v.name for v in variants)]
    header += [f"{v.name} − {base.name}" for v in variants[1:]]

    def values(variant: Variant, key: tuple[str, float | str]) -> list[float | None]:
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


PARTS = ("features", "am", "bert", "tdnn")


def latency_table(runs: Sequence[StreamingRun], command: str = "") -> str:
    """The README region of one training variant's runs: per split and latency each model's F1, the ensemble's
    distance from its own offline F1 (paired by seed), and the CPU RTF, whole and of each part of the pipeline
    (mean ± sd over seeds)."""
    seeds = sorted({run.seed for run in runs})
    keys = sorted({key for run in runs for key in run.f1}, key=lambda k: (k[0] != "dev", k[0], _latency_order(k[1])))
    header = ["split", "latency (s)", *(f"{m} F1" for m in MODELS), "ensemble − offline"]
    header += ["CPU RTF", *(f"{part} RTF" for part in PARTS)]

    def rtf_cell(key: tuple[str, float | str], part: str) -> str:
        values = [run.rtf_cpu[key].get(part) if key in run.rtf_cpu else None for run in runs]
        return mean_sd_cell(values, lambda v: number(v, 4))

    rows = []
    for split, latency in keys:
        offline = (split, "inf")
        f1 = [run.f1.get((split, latency), {}) for run in runs]  # a run without this split and latency: n/a
        gaps = [
            here["ensemble"] - run.f1[offline]["ensemble"] if here and offline in run.f1 else None
            for here, run in zip(f1, runs)
        ]
        cells = [mean_sd_cell([here.get(m) for here in f1]) for m in MODELS]
        cells += [mean_sd_cell(gaps), *(rtf_cell((split, latency), part) for part in ("", *PARTS))]
        rows.append([split, "offline" if latency == "inf" else f"{latency:g}", *cells])
    caption = (
        f"Overall F1 (%), mean ± sd over seeds {', '.join(map(str, seeds))} (sample sd) of {runs[0].variant.name} "
        "runs; ensemble − offline is paired by seed. CPU RTF: CPU seconds of the one-thread process per second of "
        "audio, whole and per part of the pipeline (features: extraction, storage rounding and CMVN; am: the AM to "
        "layer 12 and its storage rounding; bert: BERT and the word vectors; tdnn: the TDNN's windows)."
    )
    if command:
        caption += f" Made with `{command}`."
    return "\n".join(markdown_lines(header, rows, 2)) + "\n\n" + caption + "\n"


def truncation_tables(runs: Sequence[StreamingRun], command: str = "") -> str:
    """The README region comparing training variants (``right_truncation`` of the TDNN and of BERT) on live
    punctuation: one table per model that the variants train differently, one of the ensemble, and a caption;
    runs of one variant alone: :func:`latency_table`."""
    if not runs:
        raise ValueError("no streaming runs")
    if len({run.variant for run in runs}) == 1:
        return latency_table(runs, command)
    seeds = sorted({run.seed for run in runs})
    trained = {
        "BERT": {run.variant.bert_share for run in runs},
        "TDNN": {(run.variant.tdnn_share, run.variant.tdnn_frames) for run in runs},
    }
    parts = []
    shown = [m for m in MODELS if m == "ensemble" or len(trained[m]) > 1]  # a model no variant changes: left out
    for model in shown:
        header, rows = truncation_rows(runs, model)
        parts.append(f"**{model}**: overall F1 (%)\n\n" + "\n".join(markdown_lines(header, rows, 2)) + "\n")
    caption = (
        f"Mean ± sd over seeds {', '.join(map(str, seeds))} (sample sd); a difference column is paired by seed. "
        "TDNN rt p: a share p of the TDNN's training utterances cut after a word's end (`right_truncation` of "
        "conf/tdnn_mini.yaml); BERT rt p: a share p of BERT's training chunks cut after a word (`right_truncation` "
        "of conf/bert_mini.yaml). The ensemble uses each run's alpha chosen on dev."
    )
    if command:
        caption += f" Made with `{command}`."
    return "\n".join(parts) + "\n" + caption + "\n"


def read_alpha_sweeps(paths: Sequence[Path], split: str = "dev") -> dict[int, dict]:
    """seed -> {"alpha": the recipe's, latency -> alpha text -> ensemble F1} from streaming.json files whose
    rows hold ``f1_by_alpha`` (``benchmarks.streaming.measure.latency_rows``)."""
    sweeps: dict[int, dict] = {}
    for path in paths:
        result = json.loads(Path(path).read_text(encoding="utf-8"))
        rows = result.get("splits", {}).get(split, [])
        if not rows or any("f1_by_alpha" not in row for row in rows):
            raise ValueError(f"{path}: no {split} rows with f1_by_alpha (bench_streaming.py from before the sweep?)")
        seed = int(result["seed"])
        if seed in sweeps:
            raise ValueError(f"{path}: seed {seed} is already in another file")
        sweeps[seed] = {"alpha": float(result["alpha"]), **{row["latency"]: row["f1_by_alpha"] for row in rows}}
    return sweeps


def _best_alpha(f1_by_alpha: Sequence[dict[str, float]]) -> str:
    """The alpha of the highest mean F1 over ``f1_by_alpha``, the smallest on a tie (the rule of
    ``punct.scoring.ensemble.choose_alpha``, here on F1 values already computed)."""
    alphas = sorted(f1_by_alpha[0], key=float)
    return max(alphas, key=lambda a: (statistics.fmean(f1[a] for f1 in f1_by_alpha), -float(a)))


def alpha_by_latency_table(paths: Sequence[Path], command: str = "", split: str = "dev") -> str:
    """The README region of the ensemble's alpha chosen per latency: per latency the ensemble's F1 at the recipe's
    alpha (stage 8's, chosen on dev segments offline), at the alpha the seed's own stream scores best at (in-sample),
    and at the alpha the other seeds' streams score best at together (held out: no seed's alpha reads its own
    scores), each also minus the seed's offline F1 (latency inf, the recipe's alpha); mean ± sd over seeds."""
    sweeps = read_alpha_sweeps(paths, split)
    seeds = sorted(sweeps)
    latencies = sorted({k for sweep in sweeps.values() for k in sweep if k != "alpha"}, key=_latency_order)
    if len(seeds) < 2:
        raise ValueError("the held-out alpha needs streams of two seeds at least")

    def recipe_f1(seed: int, latency) -> float:
        return sweeps[seed][latency][str(round(sweeps[seed]["alpha"], 10))]

    header = ["split", "latency (s)", "recipe's alpha: F1", "− offline", "own best alpha", "its F1", "− offline"]
    header += ["held-out alpha", "its F1", "− offline"]
    rows = []
    for latency in latencies:
        here = [s for s in seeds if latency in sweeps[s]]
        offline = {s: recipe_f1(s, "inf") if "inf" in sweeps[s] else None for s in here}

        def gap(value: float, seed: int, offline: dict = offline) -> float | None:
            return None if offline[seed] is None else value - offline[seed]

        recipe = [recipe_f1(s, latency) for s in here]
        own = {s: _best_alpha([sweeps[s][latency]]) for s in here}
        held = {s: _best_alpha([sweeps[o][latency] for o in here if o != s]) for s in here}
        own_f1 = [sweeps[s][latency][own[s]] for s in here]
        held_f1 = [sweeps[s][latency][held[s]] for s in here]
        rows.append(
            [
                split,
                "offline" if latency == "inf" else f"{latency:g}",
                mean_sd_cell(recipe),
                mean_sd_cell([gap(v, s) for v, s in zip(recipe, here)]),
                " / ".join(own[s] for s in here),
                mean_sd_cell(own_f1),
                mean_sd_cell([gap(v, s) for v, s in zip(own_f1, here)]),
                " / ".join(held[s] for s in here),
                mean_sd_cell(held_f1),
                mean_sd_cell([gap(v, s) for v, s in zip(held_f1, here)]),
            ]
        )
    recipe_alphas = " / ".join(f"{sweeps[s]['alpha']:g}" for s in seeds)
    caption = (
        f"The ensemble's overall F1 (%) on {split}, mean ± sd over seeds {', '.join(map(str, seeds))} (sample sd), "
        "at three alphas (the TDNN's weight; alphas listed per seed in seed order): the recipe's (stage 8's, "
        f"{recipe_alphas}), the seed's own stream's best (chosen on the "
        "numbers it is scored on), and the best of the other seeds' streams pooled (held out). − offline: minus the "
        "seed's stream at latency inf with the recipe's alpha, paired by seed."
    )
    if command:
        caption += f" Made with `{command}`."
    return "\n".join(markdown_lines(header, rows, 2)) + "\n\n" + caption + "\n"


def plot_f1_vs_latency(results: dict, path: Path) -> None:
    """Overall F1 of BERT, the TDNN and the ensemble against the latency of live punctuation, one panel per split;
    offline (latency inf) drawn as a dotted line (``egs/mustc/RESULTS/streaming.json``)."""
    plt = pyplot()
    splits = list(results["splits"])
    fig, axes = plt.subplots(1, len(splits), figsize=(5 * len(splits), 3.8), squeeze=False)
    for ax, split in zip(axes[0], splits):
        rows = results["splits"][split]
        timed = [r for r in rows if r["latency"] != "inf"]
        offline = next((r for r in rows if r["latency"] == "inf"), None)
        for model, marker in (("BERT", "s"), ("TDNN", "^"), ("ensemble", "o")):
            latencies, f1 = [r["latency"] for r in timed], [r["f1"][model] for r in timed]
            (line,) = ax.plot(latencies, f1, marker=marker, label=model)
            if offline is not None:
                ax.axhline(offline["f1"][model], color=line.get_color(), linestyle=":", linewidth=1)
        ax.set_xlabel("latency (s of audio after a word's end)")
        ax.set_ylabel("overall F1 (%)")
        ax.set_title(f"{split} (dotted: offline)")
        ax.grid(alpha=0.3)
        ax.legend()
    save_figure(plt, fig, path, dpi=120)


def render(paths: Sequence[Path], command: str = "") -> str:
    """The region of bench_streaming.py's files: the training variants' tables (:func:`truncation_tables`)."""
    return truncation_tables(read_streaming_runs(paths), command)


# The other tables of the same files a region may ask for (``table:`` in regions.yaml)
TABLES = {"alpha_by_latency": alpha_by_latency_table}
