#!/usr/bin/env python3
"""README result tables generated from stage-8 results (``exp/results/results.json``), never typed.

One row per run (seed) with the test F1 of BERT, the TDNN and the ensemble (alpha chosen on dev),
overall (micro) and macro, the acoustic model's dev WER and alignment error, and the run's wall time
when a ``run.json`` (written by ``local/multi_seed.sh``) lies beside the results; then mean ± sd
(sample standard deviation) over the runs.

  python -m punct.bin.results_table runs/seed1/results.json runs/seed2/results.json     # print
  python -m punct.bin.results_table --readme README.md --name mustc runs/seed*/results.json
  python -m punct.bin.results_table --out-dir exp/multi_seed runs/seed*/results.json   # summary.json/.md

With ``--readme`` the text between ``<!-- results:NAME:begin -->`` and ``<!-- results:NAME:end -->``
is replaced by the table (the markers must exist).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from punct.utils.atomic import atomic_write_text
from punct.utils.logging import setup_logging

MODELS = ("BERT only", "TDNN", "Ensemble")


@dataclass
class RunRow:
    """The numbers of one run that the table shows (percent; None when the run did not record them)."""

    seed: Optional[int]
    overall: Dict[str, float]  # model -> test overall (micro) F1
    macro: Dict[str, float]  # model -> test macro F1
    alpha: float
    dev_wer: Optional[float]
    dev_alignment_ms: Optional[float]
    wall_seconds: Optional[float]


def system_key(systems: Dict, model: str) -> str:
    """The results.json key of a model; the ensemble is the one at the alpha chosen on dev."""
    if model != "Ensemble":
        return model
    for key in systems:
        if key.startswith("Ensemble") and "chosen on dev" in key:
            return key
    raise KeyError(f"no ensemble chosen on dev among {sorted(systems)}")


def read_run(path: Path) -> RunRow:
    """A row from one results.json (and its optional run.json neighbour)."""
    results = json.loads(path.read_text(encoding="utf-8"))
    test = results["systems"][list(results["systems"])[-1]]
    overall, macro = {}, {}
    for model in MODELS:
        scores = test[system_key(test, model)]
        overall[model] = 100 * scores["overall"]["f1"]
        macro[model] = 100 * scores["macro_f1"]
    am = results.get("acoustic_model", {})
    run_file = path.parent / "run.json"
    run = json.loads(run_file.read_text(encoding="utf-8")) if run_file.exists() else {}
    return RunRow(
        seed=results.get("seed", run.get("seed")), overall=overall, macro=macro, alpha=results["chosen_alpha"],
        dev_wer=am.get("wer", {}).get("dev"), dev_alignment_ms=am.get("alignment_median_ms", {}).get("dev"),
        wall_seconds=run.get("wall_seconds"),
    )


def mean_sd(values: Sequence[Optional[float]]) -> Optional[Tuple[float, float]]:
    """Mean and sample standard deviation (0 for one value); None if a value is missing."""
    if not values or any(v is None for v in values):
        return None
    array = np.asarray(values, dtype=np.float64)
    return float(array.mean()), float(array.std(ddof=1)) if len(array) > 1 else 0.0


def _cell(value: Optional[float], digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _minutes(seconds: Optional[float]) -> str:
    return "n/a" if seconds is None else f"{int(seconds // 60)} min {int(round(seconds % 60)):02d} s"


def _summary_cell(stats: Optional[Tuple[float, float]], digits: int = 1) -> str:
    return "n/a" if stats is None else f"{stats[0]:.{digits}f} ± {stats[1]:.{digits}f}"


def columns(rows: Sequence[RunRow]) -> Dict[str, List[Optional[float]]]:
    """Column name -> value per run, in table order."""
    cols: Dict[str, List[Optional[float]]] = {}
    for model in MODELS:
        cols[f"{model} overall"] = [r.overall[model] for r in rows]
    for model in MODELS:
        cols[f"{model} macro"] = [r.macro[model] for r in rows]
    cols["alpha"] = [r.alpha for r in rows]
    cols["AM dev WER"] = [r.dev_wer for r in rows]
    cols["alignment error (ms)"] = [r.dev_alignment_ms for r in rows]
    return cols


def render_table(rows: Sequence[RunRow]) -> str:
    cols = columns(rows)
    header = ["Seed"] + list(cols) + ["Wall time"]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for i, row in enumerate(rows):
        cells = [_cell(values[i]) for values in cols.values()]
        lines.append(f"| {row.seed if row.seed is not None else 'n/a'} | " + " | ".join(cells)
                     + f" | {_minutes(row.wall_seconds)} |")
    if len(rows) > 1:
        cells = [_summary_cell(mean_sd(values)) for values in cols.values()]
        wall = mean_sd([r.wall_seconds for r in rows])
        lines.append("| **mean ± sd** | " + " | ".join(cells) + f" | {_minutes(wall[0]) if wall else 'n/a'} |")
    return "\n".join(lines) + "\n"


def summary(rows: Sequence[RunRow]) -> Dict:
    """Machine-readable summary: every run's row and mean/sd per column."""
    stats = {name: mean_sd(values) for name, values in columns(rows).items()}
    stats["wall_seconds"] = mean_sd([r.wall_seconds for r in rows])
    return {
        "runs": [asdict(r) for r in rows],
        "mean": {k: v[0] for k, v in stats.items() if v is not None},
        "sd": {k: v[1] for k, v in stats.items() if v is not None},
    }


def replace_region(text: str, name: str, content: str, where: str = "README") -> str:
    """``text`` with the part between the ``results:<name>`` markers replaced by ``content``."""
    begin, end = f"<!-- results:{name}:begin -->", f"<!-- results:{name}:end -->"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), flags=re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"{where}: no region between {begin} and {end}")
    return pattern.sub(lambda _: f"{begin}\n{content}{end}", text, count=1)


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, nargs="+", help="results.json files (one per run)")
    parser.add_argument("--readme", type=Path, default=None, help="rewrite the marked region of this file")
    parser.add_argument("--name", default="mustc", help="marker name: <!-- results:NAME:begin/end -->")
    parser.add_argument("--out-dir", type=Path, default=None, help="also write summary.json and summary.md here")
    parser.add_argument("--command", default="", help="the command that produced the runs (shown under the table)")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = get_parser().parse_args(argv)
    setup_logging()
    for path in args.results:
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {path}")
    rows = [read_run(path) for path in args.results]
    table = render_table(rows)
    if args.command:
        table += f"\nProduced by `{args.command}`; test set, F1 in percent; sd = sample standard deviation.\n"
    if args.out_dir is not None:
        args.out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out_dir / "summary.json", json.dumps(summary(rows), indent=2) + "\n")
        atomic_write_text(args.out_dir / "summary.md", table)
        logging.info("wrote %s/summary.json and summary.md", args.out_dir)
    if args.readme is not None:
        text = args.readme.read_text(encoding="utf-8")
        atomic_write_text(args.readme, replace_region(text, args.name, table, str(args.readme)))
        logging.info("%s: rewrote the results:%s region from %d run(s)", args.readme, args.name, len(rows))
    else:
        sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
