"""Live punctuation (``punctuate --stream``): overall F1 of BERT, the TDNN and the ensemble against the latency,
on every talk of a trained recipe's dev and test splits, with the compute time per 0.1 s chunk on one thread.

How it is measured: ``benchmarks.streaming.measure`` (each talk's reference words aligned offline and given as a CTM;
the audio streamed 0.1 s at a time; fixed CMVN stats, the recipe's data/fbank/cmvn_train.json).  Latency ``inf`` is
offline ``punctuate`` with the same CTM and stats.  Writes benchmarks/results/streaming.json and its committed
copy --results-dir/NAME.json (egs/mustc/RESULTS/streaming.json), with the recipe's seed, ensemble alpha and the
right truncation its TDNN and BERT were trained with, the plot --results-dir/NAME.png and, with --readme, the
table into the README's ``results:streaming`` region (``--from-json`` redoes only the table and the plot).

  . ./path.sh
  python benchmarks/bench_streaming.py --recipe-dir /work/runs/mustc_seed1 --readme benchmarks/streaming/README.md
  python benchmarks/bench_streaming.py --from-json egs/mustc/RESULTS/streaming.json \\
      --readme benchmarks/streaming/README.md

Files of several runs (e.g. one per seed and right_truncation, --name streaming_dev) make the generated comparison
table of egs/mustc/RESULTS/regions.yaml's ``truncation`` region (benchmarks.streaming.latency_table).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from pathlib import Path

from common import REPO, machine, print_table, write_json

LATENCIES = (0.3, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf)


def measure(recipe_dir: Path, splits: list[str], latencies: list[float]) -> dict:
    import torch

    from benchmarks.streaming.latency_table import recipe_facts
    from benchmarks.streaming.measure import latency_rows
    from benchmarks.streaming.talk import load_talks, recipe_prefix
    from punct.inference.acoustic import merged_cmvn
    from punct.inference.pipeline import Punctuator

    torch.set_num_threads(1)
    stats = recipe_dir / "data" / "fbank" / "cmvn_train.json"
    punctuator = Punctuator.from_recipe(recipe_dir, global_cmvn=merged_cmvn(stats))
    result = {**recipe_facts(recipe_dir), "machine": machine(), "recipe_dir": str(recipe_dir), "cmvn": str(stats)}
    result["splits"] = {}
    for split in splits:
        start = time.perf_counter()
        result["splits"][split] = latency_rows(
            punctuator, load_talks(recipe_dir, split, recipe_prefix(recipe_dir, split)), latencies
        )
        print(f"{split}: {time.perf_counter() - start:.0f} s", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe-dir", type=Path, default=None, help="a trained egs/mustc run")
    parser.add_argument("--splits", nargs="+", default=["dev", "test"])
    parser.add_argument("--latencies", type=float, nargs="+", default=list(LATENCIES), help="seconds; inf: offline")
    parser.add_argument("--from-json", type=Path, default=None, help="only render this results file's table")
    parser.add_argument("--readme", type=Path, default=None, help="write the table into its results:streaming region")
    parser.add_argument(
        "--results-dir", type=Path, default=REPO / "egs/mustc/RESULTS", help="committed copy of the JSON, and the plot"
    )
    parser.add_argument(
        "--name", default="streaming", help="file names in --results-dir: NAME.json and NAME.png (e.g. streaming_dev)"
    )
    args = parser.parse_args()
    from benchmarks.streaming.latency_table import markdown_table, plot_f1_vs_latency
    from punct.results.regions import replace_region
    from punct.utils.atomic import atomic_write_text

    if args.from_json is not None:
        result = json.loads(args.from_json.read_text(encoding="utf-8"))
    elif args.recipe_dir is not None:
        result = measure(args.recipe_dir, args.splits, args.latencies)
        result["command"] = shlex.join(["python", "benchmarks/bench_streaming.py", *sys.argv[1:]])
        write_json("streaming", result)
        args.results_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.results_dir / f"{args.name}.json", json.dumps(result, indent=1) + "\n")
    else:
        raise SystemExit("give --recipe-dir (measure) or --from-json (render)")
    rows = [
        [split, row["latency"], *(round(row["f1"][m], 1) for m in ("BERT", "TDNN", "ensemble")), row["final_share"]]
        for split, split_rows in result["splits"].items()
        for row in split_rows
    ]
    print_table("overall F1 (%) against latency", ["split", "latency s", "BERT", "TDNN", "ensemble", "final"], rows)
    plot_f1_vs_latency(result, args.results_dir / f"{args.name}.png")
    if args.readme is not None:
        text = args.readme.read_text(encoding="utf-8")
        args.readme.write_text(replace_region(text, "streaming", markdown_table(result), str(args.readme)))


if __name__ == "__main__":
    main()
