"""How far BERT must read ahead: a trained egs/mustc run's dev overall F1 of its fine-tuned BERT when each word is
punctuated from the words up to k after it only (``benchmarks.streaming.measure.lookahead_rows``), against all of its
segment's words (stage 8's BERT).  A stream that has heard k more words can give BERT no more than that text; a text
model for streams (a bounded lookahead, with cached left states) would start from these numbers.

Writes benchmarks/results/lookahead.json and its committed copy --results-dir/NAME.json with the run's seed; the
README table over seeds is generated from those files (``lookahead_*`` in egs/mustc/RESULTS/regions.yaml,
benchmarks.streaming.lookahead_table).

  . ./path.sh
  python benchmarks/bench_lookahead.py --recipe-dir /work/runs/mustc_seed1 --name lookahead/seed1
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

from common import print_table, recipe_record, recipe_split_parser, save_result

LOOKAHEADS = ("0", "1", "2", "3", "5", "all")


def measure(recipe_dir: Path, split: str, lookaheads: list[int | None]) -> dict:
    from benchmarks.streaming.lookahead_table import KIND
    from benchmarks.streaming.measure import lookahead_rows
    from punct.inference.pipeline import Punctuator
    from punct.models.text.data import read_utterances

    punctuator = Punctuator.from_recipe(recipe_dir)
    utterances = read_utterances(recipe_dir / "data" / "manifests" / f"mustc_supervisions_{split}.jsonl.gz")
    start = time.perf_counter()
    rows = lookahead_rows(punctuator, utterances, lookaheads)
    return {"kind": KIND, "rows": rows, **recipe_record(recipe_dir, split, time.perf_counter() - start)}


def main() -> None:
    parser = recipe_split_parser(__doc__, "lookahead")
    parser.add_argument("--lookaheads", nargs="+", default=list(LOOKAHEADS), help="words; all: the whole segment")
    args = parser.parse_args()
    lookaheads = [None if k == "all" else int(k) for k in args.lookaheads]
    result = measure(args.recipe_dir, args.split, lookaheads)
    result["command"] = shlex.join(["python", "benchmarks/bench_lookahead.py", *sys.argv[1:]])
    save_result("lookahead", result, args.results_dir, args.name)
    rows = [[row["lookahead"], row["words"], round(row["f1"], 1)] for row in result["rows"]]
    print_table(f"{args.split} overall F1 (%) of BERT reading k words ahead", ["k", "words", "BERT"], rows)


if __name__ == "__main__":
    main()
