"""Adds the stage times of a recipe run, read from its log, to its ``run.json`` (``"stages"``:
:mod:`punct.results.stages`); ``utils/multi_seed.sh`` runs it after each run.

  python -m punct.bin.stage_times ../parczech_seed1/run.log ../parczech_seed1/exp/results/run.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from punct.results.stages import stage_seconds
from punct.utils.atomic import atomic_write_text


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", type=Path, help="the run's log (run.sh's output, with its 'Stage N:' lines)")
    parser.add_argument("run_json", type=Path, help="the run's run.json (utils/multi_seed.sh), rewritten")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = get_parser().parse_args(argv)
    stages = stage_seconds(args.log.read_text(encoding="utf-8"), where=str(args.log))
    if not stages:
        print(f"{args.log}: no 'Stage N:' line of run.sh; {args.run_json} keeps no stage times", file=sys.stderr)
        return 0
    record = json.loads(args.run_json.read_text(encoding="utf-8"))
    record["stages"] = stages
    atomic_write_text(args.run_json, json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
