"""Times a fixed one-thread workload (:mod:`punct.results.machine_speed`) and prints it as JSON, or adds it to a
run's ``run.json`` under ``machine_speed.<key>`` (``utils/multi_seed.sh``: before and after each run).

  python -m punct.bin.machine_speed
  python -m punct.bin.machine_speed --into exp/results/run.json --key after
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from punct.results.machine_speed import probe
from punct.utils.atomic import atomic_write_text


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10, help="passes per timing")
    parser.add_argument("--repeats", type=int, default=5, help="timings; their median is kept")
    parser.add_argument("--into", type=Path, default=None, help="a run.json to add the result to (rewritten)")
    parser.add_argument("--key", default="probe", help="the result's name under machine_speed in --into")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = get_parser().parse_args(argv)
    speed = probe(args.steps, args.repeats).as_dict()
    if args.into is None:
        print(json.dumps(speed))
        return 0
    try:
        record = json.loads(args.into.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise SystemExit(f"{args.into}: cannot read a run.json to add the machine speed to: {e}") from None
    record.setdefault("machine_speed", {})[args.key] = speed
    atomic_write_text(args.into, json.dumps(record) + "\n")
    print(f"{args.into}: machine_speed.{args.key} = {speed['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
