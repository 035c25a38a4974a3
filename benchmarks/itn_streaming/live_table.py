"""The README tables of egs/parczech's live captions on whole speeches: ``benchmarks/bench_itn_live.py``
(``benchmarks.itn_streaming.speeches``) on the stage-4 models of several seeds, as the ``live`` region of
``egs/parczech/RESULTS/regions.yaml``.

``punctuate_itn --pause-split`` is chosen here, from the files: the value measured on dev at latency inf whose mean
over models and seeds of punctuation overall F1 and [cap] F1 (the two heads the tool prints, weighted alike) is the
highest.  The latency tables of every split are then at that value; a split measured at other values only is an
error, so that test is read at the value dev chose."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.itn_streaming import latency_table as itn_latency
from punct.results.tables import markdown_table, mean_sd_cell

KIND = "itn_live"

# (seed, split, model, pause split, latency) -> the bench's row
Rows = dict[tuple[int, str, str, float, float | str], dict]


def read_itn_live(paths: Sequence[Path]) -> Rows:
    """The rows of bench_itn_live.py files by (seed, split, model, pause split, latency)."""
    return itn_latency.read_bench_rows(
        paths,
        KIND,
        "bench_itn_live.py",
        lambda seed, split, model, row: (seed, split, model, float(row["pause_split"]), row["latency"]),
    )


def _selection_score(row: dict) -> float:
    return (row["punct_overall_f1"] + row["cap_f1"]) / 2


def chosen_pause_split(rows: Rows) -> float:
    """The pause split of the highest dev score at latency inf (mean over models and seeds; see the docstring)."""
    by_value: dict[float, list[float]] = {}
    for (_, split, _, pause_split, latency), row in rows.items():
        if split == "dev" and latency == "inf":
            by_value.setdefault(pause_split, []).append(_selection_score(row))
    if not by_value:
        raise ValueError("no dev rows at latency inf: the pause split is chosen on them")
    counts = {len(v) for v in by_value.values()}
    if len(counts) > 1:
        raise ValueError(f"the pause splits were measured on unequal numbers of models and seeds: {counts}")
    return max(by_value, key=lambda value: float(np.mean(by_value[value])))


def pause_split_table(rows: Rows) -> tuple[list[str], list[list[str]]]:
    """Dev at latency inf: a row per pause split, per model its overall and [cap] F1, then the selection score and
    the segments per speech the rule cut."""
    seeds = sorted({k[0] for k in rows})
    models = _models(rows, "dev")
    values = sorted({k[3] for k in rows if k[1] == "dev" and k[4] == "inf"})
    names = [itn_latency.MODEL_NAMES.get(m, m) for m in models]
    header = ["pause split (s)", *(f"{n} overall" for n in names), *(f"{n} [cap]" for n in names), "score"]
    header.append("segments per speech")
    table = []
    for value in values:
        cell_rows = {(s, m): rows.get((s, "dev", m, value, "inf")) for s in seeds for m in models}
        known = [r for r in cell_rows.values() if r is not None]
        cells = [
            mean_sd_cell([cell_rows[s, m][metric] if cell_rows[s, m] else None for s in seeds])
            for metric in ("punct_overall_f1", "cap_f1")
            for m in models
        ]
        score = float(np.mean([_selection_score(r) for r in known]))
        segments = float(np.mean([r["segments"] / r["speeches"] for r in known]))
        table.append([f"{value:g}", *cells, f"{score:.1f}", f"{segments:.1f}"])
    return header, table


def _models(rows: Rows, split: str) -> list[str]:
    order = list(itn_latency.MODEL_NAMES)
    found = {k[2] for k in rows if k[1] == split}
    return sorted(found, key=lambda m: order.index(m) if m in order else len(order))


def at_pause_split(rows: Rows, pause_split: float) -> itn_latency.Rows:
    """The rows at one pause split, keyed as ``benchmarks.itn_streaming.latency_table`` keys them."""
    return {(s, split, m, latency): row for (s, split, m, p, latency), row in rows.items() if p == pause_split}


def itn_live_tables(rows: Rows, command: str = "") -> str:
    """The README region: the dev table of the pause splits, then per split F1 against latency at the chosen one."""
    if not rows:
        raise ValueError("no bench_itn_live.py rows")
    chosen = chosen_pause_split(rows)
    header, table = pause_split_table(rows)
    parts = [
        "**dev, latency inf: `--pause-split` (F1 in %)**\n\n" + "\n".join(markdown_table(header, table, 1)) + "\n",
        f"Chosen on dev: `--pause-split {chosen:g}` (the highest score: mean over models and seeds of punctuation "
        "overall F1 and [cap] F1).\n",
    ]
    at_chosen = at_pause_split(rows, chosen)
    splits = sorted({k[1] for k in rows}, key=lambda s: (s != "dev", s))
    for split in splits:
        if not any(k[1] == split for k in at_chosen):
            raise ValueError(f"{split}: not measured at the pause split dev chose ({chosen:g} s)")
        for metric, title in itn_latency.METRICS:
            header, table = itn_latency.latency_table(at_chosen, split, metric)
            parts.append(f"**{split}, {title} (%)**\n\n" + "\n".join(markdown_table(header, table, 1)) + "\n")
    header, table = rtf_table(at_chosen, "dev")
    parts.append(
        "**dev, compute: CPU seconds per second of audio (one thread), mean over seeds**\n\n"
        + "\n".join(markdown_table(header, table, 1))
        + "\n"
    )
    seeds = sorted({k[0] for k in rows})
    parts.append("Words per seed (latency inf, the chosen pause split): " + "; ".join(word_counts(at_chosen)) + ".\n")
    caption = (
        f"Mean ± sd over seeds {', '.join(map(str, seeds))} (sample sd). Each held-out speaker's turn in a recording "
        "streamed whole through `punctuate_itn`'s streamer, 0.1 s of audio at a time, with the recogniser's words "
        "(stage 2), and scored on every recognised word aligned to an official word, the first word of a segment too "
        "(`benchmarks.itn_streaming.speeches`); offline: latency inf. Words final: labelled from their whole segment."
    )
    if command:
        caption += f" Made with `{command}`."
    return "\n".join(parts) + "\n" + caption + "\n"


def rtf_table(rows: itn_latency.Rows, split: str) -> tuple[list[str], list[list[str]]]:
    """A row per latency, a column per model: the stream's CPU real-time factor (``rtf_cpu``), mean over seeds."""
    models = _models({(k[0], k[1], k[2], 0.0, k[3]): r for k, r in rows.items()}, split)
    latencies = sorted({k[3] for k in rows if k[1] == split}, key=lambda x: float("inf") if x == "inf" else x)
    table = []
    for latency in latencies:
        cells = []
        for model in models:
            values = [r["rtf_cpu"] for k, r in rows.items() if k[1:] == (split, model, latency) and "rtf_cpu" in r]
            cells.append(f"{np.mean(values):.4f}" if values else "n/a")
        table.append(["offline" if latency == "inf" else f"{latency:g}", *cells])
    return ["latency (s)", *(itn_latency.MODEL_NAMES.get(m, m) for m in models)], table


def word_counts(rows: itn_latency.Rows) -> list[str]:
    """Per split and seed at latency inf: the speeches, the words scored, inserted and deleted (the deleted ones
    with a mark); the counts do not depend on the model."""
    counts = []
    offline = {(k[1], k[0]): row for k, row in rows.items() if k[3] == "inf"}
    for split, seed in sorted(offline, key=lambda k: (k[0] != "dev", k)):
        row = offline[split, seed]
        counts.append(
            f"{split} seed {seed}: {row['speeches']} speeches, {row['words']} words scored, {row['inserted_words']} "
            f"inserted, {row['deleted_words']} deleted ({row['deleted_marks']} with a mark)"
        )
    return counts


def plot_live(paths: Sequence[Path], split: str, out: Path) -> None:
    """F1 against latency at the pause split dev chose (``benchmarks.itn_streaming.latency_table.plot_itn_latency``)."""
    rows = read_itn_live(paths)
    itn_latency.plot_itn_latency(at_pause_split(rows, chosen_pause_split(rows)), split, out)


def render(paths: Sequence[Path], command: str = "") -> str:
    """The region of bench_itn_live.py's files (:func:`itn_live_tables`)."""
    return itn_live_tables(read_itn_live(paths), command)
