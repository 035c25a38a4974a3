#!/usr/bin/env python3
"""README result tables generated from results files (``exp/results/results.json``), never typed.

It reads one or more results.json (one per run, e.g. one per seed) of one kind, told by the file itself:

* egs/mustc stage 8 (punct.bin.score_ensemble; punct.results.punct_systems): two markdown tables of a split
  (default test):

  - F1 in percent, one row per model and F1 (BERT only, TDNN, the ensemble at the alpha chosen on dev;
    overall = micro over the marks, macro = mean of the marks' F1), one column per run, then mean ± sd;
  - per run: the alpha chosen on dev, the acoustic model's dev WER and alignment error, the utterances
    and words scored out of the manifest's, and the wall time when a ``run.json`` (utils/multi_seed.sh) lies
    beside the results.json;

* egs/parczech stage 6 (punct.bin.score_itn, ``"kind": "itn"``; punct.results.itn_systems): one row per model (the
  rows the results hold) with [,], [.], [cap] and macro F1, the marks (of 8) with F1 > 0 and, where score_itn
  recorded it, the macro F1 minus the baseline's (text-only) with its paired bootstrap interval; for one run each
  F1 with its bootstrap 95 % interval, for several runs mean ± sd and a second table of each run's values (macro
  F1 with its interval); then per run the segments and words, the first-word rule, and where recorded the AM's
  dev WER, the recognition WER, the ensemble alphas and the wall time (a row no run recorded is left out).

sd is the sample standard deviation (n - 1); with one run there is no mean ± sd.

  python -m punct.bin.results_table exp/results/results.json                       # print
  python -m punct.bin.results_table --readme README.md --name mustc runs/seed*/results.json
  python -m punct.bin.results_table --readme RESULTS.md --name parczech exp/results/results.json
  python -m punct.bin.results_table --out-dir exp/multi_seed runs/seed*/results.json   # summary.json/.md

With ``--readme`` the text between ``<!-- results:NAME:begin -->`` and ``<!-- results:NAME:end -->``
is replaced by the tables (NAME: --name, which --readme needs); a README without both markers is an error
and is left unchanged.

Every generated region of the READMEs is listed in a recipe's ``RESULTS/regions.yaml`` with the committed
results.json it comes from (paths relative to that file) and the command that made the runs::

  mustc:                                  # the region's NAME
    readme: ../RESULTS.md
    command: utils/multi_seed.sh ...
    results: [corpus1001/seed1/results.json, ...]

``--regions egs/mustc/RESULTS/regions.yaml`` rewrites each listed region from its files; with ``--check`` it
rewrites nothing and exits 1 when a region differs from what its files give (a hand edit, or a stale table),
printing the difference (the tests run it on every recipe).

  python -m punct.bin.results_table --regions egs/mustc/RESULTS/regions.yaml --check
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from punct.results.regions import replace_region, tables_and_summary, update_regions
from punct.utils.atomic import atomic_write_text
from punct.utils.logging import setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, nargs="*", help="results.json files (one per run, all of one kind)")
    parser.add_argument(
        "--regions",
        type=Path,
        default=None,
        help="a RESULTS/regions.yaml: rewrite (or --check) every README region it lists",
    )
    parser.add_argument("--check", action="store_true", help="with --regions: compare, rewrite nothing")
    parser.add_argument("--split", default="test", help="split whose scores the tables show")
    parser.add_argument("--readme", type=Path, default=None, help="rewrite the marked region of this file")
    parser.add_argument(
        "--name",
        default=None,
        help="marker name: <!-- results:NAME:begin/end -->, e.g. the recipe's folder name (needed with --readme)",
    )
    parser.add_argument("--out-dir", type=Path, default=None, help="also write summary.json and summary.md here")
    parser.add_argument("--command", default="", help="the command that produced the runs (shown under the tables)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = get_parser()
    args = parser.parse_args(argv)
    if args.readme is not None and not args.name:
        parser.error("--readme needs --name (the marker name, e.g. mustc)")
    setup_logging()
    if args.regions is not None:
        return update_regions(args.regions, args.check)
    if not args.results:
        parser.error("give results.json files, or --regions")
    for path in args.results:
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {path}")
    kind, tables, data = tables_and_summary(args.results, args.split, args.command)
    if args.out_dir is not None:
        args.out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out_dir / "summary.json", json.dumps(data, indent=2) + "\n")
        atomic_write_text(args.out_dir / "summary.md", tables)
        logging.info("wrote %s/summary.json and summary.md", args.out_dir)
    if args.readme is not None:
        name = args.name
        text = args.readme.read_text(encoding="utf-8")
        atomic_write_text(args.readme, replace_region(text, name, tables, str(args.readme)))
        logging.info("%s: rewrote the results:%s region from %d run(s)", args.readme, name, len(args.results))
    else:
        sys.stdout.write(tables)
    return 0


if __name__ == "__main__":
    sys.exit(main())
