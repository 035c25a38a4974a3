"""What costs a stream its points against stage 8 when latency is unbounded: a trained egs/mustc run's dev talks
streamed at latency inf under every combination of what the stream is given and what stage 8 had
(``benchmarks.streaming.measure.offline_factor_rows``): word times (aligning the whole talk, as a recogniser's CTM, or
stage 3's per segment), stretches (between pauses, or the talk's segments: ``punctuate --stream --segments``) and
CMVN stats (the training speakers' merged, or the talk's speaker's stage-1 stats: ``--cmvn-speaker``).  With all
three of stage 8's the stream gives stage 8's posteriors.

Writes benchmarks/results/stream_offline.json and its committed copy --results-dir/NAME.json with the run's seed,
its stage-8 F1 of the split and --label (e.g. the corpus' prosody); the README table over seeds is generated from
those files (``stream_offline`` in egs/mustc/RESULTS/regions.yaml, benchmarks.streaming.stream_offline_table).

  . ./path.sh
  python benchmarks/bench_stream_offline.py --recipe-dir /work/runs/mustc_seed1 --label natural \\
      --name stream_offline/natural_seed1
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

from common import print_table, recipe_record, recipe_split_parser, save_result


def measure(recipe_dir: Path, split: str, label: str) -> dict:
    import torch

    from benchmarks.streaming.measure import offline_factor_rows
    from benchmarks.streaming.stream_offline_table import KIND, stage8_f1
    from benchmarks.streaming.talk import load_talks, recipe_prefix
    from punct.inference.acoustic import merged_cmvn
    from punct.inference.pipeline import Punctuator

    torch.set_num_threads(1)
    stats = recipe_dir / "data" / "fbank" / "cmvn_train.json"
    punctuator = Punctuator.from_recipe(recipe_dir, global_cmvn=merged_cmvn(stats))
    results = json.loads((recipe_dir / "exp" / "results" / "results.json").read_text(encoding="utf-8"))
    start = time.perf_counter()
    rows = offline_factor_rows(
        punctuator, recipe_dir, split, load_talks(recipe_dir, split, recipe_prefix(recipe_dir, split))
    )
    record = recipe_record(recipe_dir, split, time.perf_counter() - start)
    return {"kind": KIND, "label": label, "stage8": stage8_f1(results, split), "rows": rows, **record}


def main() -> None:
    parser = recipe_split_parser(__doc__, "stream_offline")
    parser.add_argument("--label", required=True, help="what tells the run's corpus apart, e.g. its prosody")
    args = parser.parse_args()
    result = measure(args.recipe_dir, args.split, args.label)
    result["command"] = shlex.join(["python", "benchmarks/bench_stream_offline.py", *sys.argv[1:]])
    save_result("stream_offline", result, args.results_dir, args.name)
    rows = [
        [row["times"], row["cuts"], row["cmvn"], *(round(row["f1"][m], 1) for m in ("BERT", "TDNN", "ensemble"))]
        for row in result["rows"]
    ]
    rows.append(["stage 8", "", "", *(round(result["stage8"][m], 1) for m in ("BERT", "TDNN", "ensemble"))])
    print_table(f"{args.split} overall F1 (%) at latency inf", ["times", "cuts", "CMVN", "BERT", "TDNN", "ens"], rows)


if __name__ == "__main__":
    main()
