"""Stage times of a recipe run, read from its log (``run.sh``'s ``Stage N: ...`` lines and its closing
``success`` line, each stamped by ``utils/recipe.sh``'s ``log``), kept in the run's ``run.json`` and shown as a
table of the runs' stage times (:func:`stage_rows`).

A stage lasts from its ``Stage N`` line to the next stage line (or to the ``success`` line).  A recipe that
starts a stage inside another (egs/parczech: stage 5 beside stage 4's cross-attention trainings) is timed the
same way, so there the two share the time from stage 4's line to stage 6's; the table's caption says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from punct.results.tables import duration

STAGES_NOTE = (
    " Stage times from each run's log (run.json's stages, punct.results.stages): from a stage's log line to the next"
    " stage's."
)
STAMP = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) INFO \[run\.sh:\d+\] "
STAGE_LINE = re.compile(STAMP + r"Stage (\d+): ")
END_LINE = re.compile(STAMP + r"\S*run\.sh: success")


def stage_seconds(log_text: str, where: str = "run.log") -> list[dict]:
    """``[{"stage": "N", "start_seconds": s, "seconds": d}, ...]`` in the log's order, from the first stage line
    ([] for a log without stage lines); a log with stages but without its success line (a failed or running
    run) is refused."""
    stamps: list[tuple[str, datetime]] = []
    end = None
    for line in log_text.splitlines():
        if match := STAGE_LINE.search(line):
            stamps.append((match.group(2), datetime.fromisoformat(match.group(1))))
        elif match := END_LINE.search(line):
            end = datetime.fromisoformat(match.group(1))
    if not stamps:
        return []
    if end is None:
        raise ValueError(f"{where}: no 'run.sh: success' line: the run failed or is still running")
    first = stamps[0][1]
    times = [t for _, t in stamps] + [end]
    return [
        {
            "stage": stage,
            "start_seconds": (start - first).total_seconds(),
            "seconds": (times[i + 1] - start).total_seconds(),
        }
        for i, (stage, start) in enumerate(stamps)
    ]


def stage_rows(names: Sequence[str], stages: Sequence[Sequence[dict] | None]) -> tuple[list[str], list[list[str]]]:
    """(header, one row per run that recorded its stages): each stage's time and the sum, by stage number."""
    numbers = list(dict.fromkeys(s["stage"] for run in stages if run for s in run))
    numbers.sort(key=int)
    rows = []
    for name, run in zip(names, stages):
        if not run:
            continue
        seconds = {s["stage"]: s["seconds"] for s in run}
        rows.append([name] + [duration(seconds.get(n)) for n in numbers] + [duration(sum(seconds.values()))])
    return ["Run"] + [f"stage {n}" for n in numbers] + ["stages together"], rows
