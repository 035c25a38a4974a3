"""The README table of BERT's F1 against the words it may read ahead, from the JSON files of
``benchmarks/bench_lookahead.py`` (one per trained run: ``benchmarks.streaming.measure.lookahead_rows``), a column per
seed, their mean ± sd and the paired difference from reading the whole segment."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from punct.results.tables import markdown_table, mean_sd_cell, number

KIND = "lookahead"
WHOLE = "all"


def read_lookahead_runs(paths: Sequence[Path]) -> dict[int, dict]:
    """{seed: result} of bench_lookahead.py files of one split; a seed given twice is an error."""
    runs: dict[int, dict] = {}
    for path in paths:
        result = json.loads(Path(path).read_text(encoding="utf-8"))
        if result.get("kind") != KIND:
            raise ValueError(f"{path}: not a bench_lookahead.py result (kind {result.get('kind')!r})")
        if result["seed"] in runs:
            raise ValueError(f"{path}: seed {result['seed']} is already in another file")
        runs[result["seed"]] = result
    if len({r["split"] for r in runs.values()}) > 1:
        raise ValueError(f"results of several splits: {sorted({r['split'] for r in runs.values()})}")
    return runs


def lookahead_table(paths: Sequence[Path], command: str = "") -> str:
    """The README region: a row per lookahead (words), F1 per seed, mean ± sd, and minus the whole segment's."""
    runs = read_lookahead_runs(paths)
    seeds = sorted(runs)
    f1 = {s: {str(row["lookahead"]): row["f1"] for row in runs[s]["rows"]} for s in seeds}
    lookaheads = [str(row["lookahead"]) for row in runs[seeds[0]]["rows"]]
    if WHOLE not in lookaheads:
        raise ValueError(f"{paths[0]}: no row of lookahead {WHOLE!r} (the whole segment) to compare with")
    header = ["split", "words read ahead", *(f"seed {s}" for s in seeds), "mean ± sd", f"− {WHOLE}"]
    split = runs[seeds[0]]["split"]
    rows = [
        [
            split,
            k,
            *(number(f1[s][k]) for s in seeds),
            mean_sd_cell([f1[s][k] for s in seeds]),
            mean_sd_cell([f1[s][k] - f1[s][WHOLE] for s in seeds]),
        ]
        for k in lookaheads
    ]
    caption = (
        "BERT's overall F1 (%) when each word is punctuated from its segment's words up to k after it only (all: "
        "every word of the segment, stage 8's BERT), with the run's fine-tuned weights (trained on whole segments); "
        "mean ± sd over seeds (sample sd), the difference paired by seed."
        + (f" Made with `{command}`." if command else "")
    )
    return "\n".join(markdown_table(header, rows, 2)) + "\n\n" + caption + "\n"


def render(paths: Sequence[Path], command: str = "") -> str:
    """The region of bench_lookahead.py's files (:func:`lookahead_table`)."""
    return lookahead_table(paths, command)
