"""Markdown result tables shared by every kind of results.json (punct.bin.results_table): numbers,
mean ± sample sd over runs, durations, tables written and read back, and the ``run.json`` that
utils/multi_seed.sh writes beside each run's results.json.

>>> mean_sd([60.0, 70.0, 80.0])
(70.0, 10.0)
>>> number(None), duration(615.0)
('n/a', '10 min 15 s')
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np


def mean_sd(values: Sequence[float | None]) -> tuple[float, float] | None:
    """Mean and sample standard deviation (0 for one value); None if a value is missing."""
    if not values or any(v is None for v in values):
        return None
    array = np.asarray(values, dtype=np.float64)
    return float(array.mean()), float(array.std(ddof=1)) if len(array) > 1 else 0.0


def spread(values: Sequence[float | None]) -> dict:
    """{"values": [...], "mean": m, "sd": s} (mean and sd None when a run lacks the value)."""
    stats = mean_sd(values)
    return {"values": list(values), "mean": stats[0] if stats else None, "sd": stats[1] if stats else None}


def number(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


def mean_sd_cell(values: Sequence[float | None], fmt: Callable[[float | None], str] = number) -> str:
    """ "69.0 ± 2.6"; n/a when a run lacks the value."""
    stats = mean_sd(values)
    return "n/a" if stats is None else f"{fmt(stats[0])} ± {fmt(stats[1])}"


def runs_cell(values: Sequence[float | None], fmt: Callable[[float | None], str] = number) -> str:
    """One run's value alone (it has no spread), or "mean ± sd" over several runs."""
    if len(values) == 1:
        return fmt(values[0])
    return mean_sd_cell(values, fmt)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], text_columns: int) -> list[str]:
    """The lines of a markdown table: the first ``text_columns`` columns left-aligned, the rest right."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * text_columns + "---:|" * (len(header) - text_columns)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def read_run_json(results: Path) -> dict:
    """The ``run.json`` beside a results.json (utils/multi_seed.sh: seed, wall_seconds, command ...); {} if absent."""
    run_file = Path(results).parent / "run.json"
    return json.loads(run_file.read_text(encoding="utf-8")) if run_file.exists() else {}


def machine_speed_cell(run: dict) -> str | None:
    """A run.json's ``machine_speed`` (punct.bin.machine_speed, before and after the run) as "0.41 / 0.43"; None
    if it has none."""
    speed = run.get("machine_speed") or {}
    if not speed:
        return None
    return " / ".join(f"{speed[k]['seconds']:.2f}" if k in speed else "?" for k in ("before", "after"))


def machine_speed_rows(cells: Sequence[str | None], several: bool) -> list[list[str]]:
    """The per-run table's row of the runs' host speed probes (:func:`machine_speed_cell`); none if no run has one."""
    if not any(cells):
        return []
    row = ["host speed probe (s before / after the run; smaller: faster)"] + [c or "not recorded" for c in cells]
    return [row + ([""] if several else [])]


def run_name(seed: int | None, results: Path) -> str:
    """A run's column title: "seed N", else the folder of its results.json."""
    return f"seed {seed}" if seed is not None else Path(results).parent.name


def parse_markdown_table(text: str, heading: str) -> list[list[str]]:
    """Rows (cells as strings, header first, separator dropped) of the first table after ``heading``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#") and heading in line)
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= set("-:") for c in cells):
                rows.append(cells)
        elif rows:
            break
    return rows
