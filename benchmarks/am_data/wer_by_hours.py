"""How much speech the acoustic model needs: nested training subsets by hours, and the README table of their dev
WERs (``benchmarks/bench_am_data.py`` trains and scores; this module draws the subsets and renders its JSON, which
``punct.bin.results_table --regions`` puts into the READMEs: ``egs/*/RESULTS/regions.yaml``).

The JSON (``egs/parczech/RESULTS/am_data.json``; WER in percent, times in seconds)::

    {"kind": "am_data",
     "corpora": [{"name": "czech", "title": "Czech mini corpus", "prefix": "parczech",
                  "command": "python benchmarks/bench_am_data.py ...", "commit": "...", "machine": {...},
                  "dev": {"cuts": 54, "hours": 0.11}, "train_hours": 1.0,
                  "runs": [{"init": "scratch", "hours": 0.1, "train_hours": 0.1003, "cuts": 51, "tokens": 41,
                            "config": "...", "num_epochs": 12, "dev_wer": 99.6, "wer_line": "%WER ...",
                            "wall_seconds": 60.1, "cpu_seconds": 59.8, "init_counts": {...} | null}, ...]}]}

``hours`` is the subset asked for (null: all the training utterances), ``train_hours`` what it holds.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

KIND = "am_data"
ALL = None  # the subset of every training utterance


def nested_subsets(
    durations: Sequence[tuple[str, float]], hours: Sequence[float | None], seed: int = 0
) -> dict[float | None, list[str]]:
    """Cut ids of nested subsets: the cuts in one seeded random order, each subset the shortest prefix of that
    order holding at least its ``hours`` (``None``: every cut).  A smaller subset is a prefix of every larger one,
    so a row differs from the one above it only by the speech added."""
    order = sorted(durations)
    random.Random(seed).shuffle(order)
    subsets: dict[float | None, list[str]] = {}
    for want in hours:
        if want is ALL:
            subsets[want] = [cut_id for cut_id, _ in order]
            continue
        if want <= 0:
            raise ValueError(f"subset hours must be positive, got {want}")
        taken, total = [], 0.0
        for cut_id, duration in order:
            if total >= want * 3600:
                break
            taken.append(cut_id)
            total += duration
        if total < want * 3600:
            raise ValueError(f"{want} h asked for, but the training utterances hold {total / 3600:.3f} h")
        subsets[want] = taken
    return subsets


def hours_label(hours: float | None, held: float) -> str:
    """The row label of a subset: ``0.25 h``, or ``all (1.00 h)``."""
    return f"all ({held:.2f} h)" if hours is ALL else f"{hours:g} h"


def _wer(run: dict | None) -> str:
    return "" if run is None else f"{run['dev_wer']:.1f}"


def render_corpus(corpus: dict) -> str:
    """One markdown table of a corpus: a row per subset, a dev WER column per initialisation."""
    inits = list(dict.fromkeys(run["init"] for run in corpus["runs"]))
    subsets = list(dict.fromkeys(run["hours"] for run in corpus["runs"]))
    by_key = {(run["init"], run["hours"]): run for run in corpus["runs"]}
    header = ["training speech", "utterances"] + [f"dev WER, {init}" for init in inits]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for hours in subsets:
        runs = [by_key.get((init, hours)) for init in inits]
        first = next(run for run in runs if run is not None)
        cells = [hours_label(hours, first["train_hours"]), str(first["cuts"])] + [_wer(run) for run in runs]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def render_tables(data: dict, names: Sequence[str] | None = None) -> str:
    """The README region: per corpus (``names``, default all) its caption, table and the command that measured it."""
    if data.get("kind") != KIND:
        raise ValueError(f"not an {KIND} JSON (kind {data.get('kind')!r})")
    parts = []
    for corpus in data["corpora"]:
        if names is not None and corpus["name"] not in names:
            continue
        configs = sorted({f"`{run['config']}` ({run['num_epochs']} epochs)" for run in corpus["runs"]})
        wall = sum(run["wall_seconds"] for run in corpus["runs"]) / 60
        cpu = sum(run.get("cpu_seconds", 0.0) for run in corpus["runs"]) / 60
        parts.append(
            f"{corpus['title']}: greedy dev WER (%) on {corpus['dev']['cuts']} dev utterances "
            f"({corpus['dev']['hours']:.2f} h); {', '.join(configs)}.\n\n"
            + render_corpus(corpus)
            + f"\nMeasured by `{corpus['command']}` at {corpus['commit']} (training and decoding: {wall:.0f} min wall, "
            f"{cpu:.0f} min CPU, one torch thread, {corpus['machine']['cpu']}).\n"
        )
    return "\n".join(parts)


def render(paths: Sequence[Path], command: str = "") -> str:
    """The region of JSON files of this kind (their corpora in order; each records its own command)."""
    corpora = [corpus for path in paths for corpus in json.loads(Path(path).read_text(encoding="utf-8"))["corpora"]]
    return render_tables({"kind": KIND, "corpora": corpora})
