"""Live punctuation and case of egs/parczech's stage-4 models (9 marks + capitalisation) against the latency: every
segment of a trained run's dev (or test) split streamed 0.1 s at a time, each word labelled from what had arrived
when it was due (``benchmarks.itn_streaming.segments``), with the real-time factor of the model passes on one thread.

Latency ``inf`` is stage 4's decode of the whole segments (the script checks that it equals exp/<model>/decode).
Writes benchmarks/results/itn_streaming.json and its committed copy --results-dir/NAME.json with the run's seed;
files of several seeds make the table of egs/parczech/RESULTS/regions.yaml's ``streaming`` region
(``benchmarks.itn_streaming.latency_table``) and, with ``--plot-from``, the plot of their mean and sd:

  . ./path.sh
  python benchmarks/bench_itn_streaming.py --recipe-dir /work/runs/parczech_seed2026 --splits dev \\
      --results-dir egs/parczech/RESULTS/streaming/seed2026 --name streaming_dev
  python benchmarks/bench_itn_streaming.py --plot-from egs/parczech/RESULTS/streaming/seed*/streaming_dev.json \
      --plot egs/parczech/RESULTS/streaming/streaming_dev.png
"""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
from pathlib import Path

from common import itn_bench_parser, machine, print_table, save_result

LATENCIES = (0.3, 0.5, 1.0, 2.0, math.inf)
MODELS = ("text", "mm", "mm_pe")


def check_offline(recipe_dir: Path, model: str, split: str, predictions) -> None:
    """Stage 4's decode of ``split`` (exp/<model>/decode/<split>.jsonl) must be what latency inf gave."""
    path = recipe_dir / "exp" / model / "decode" / f"{split}.jsonl"
    decoded = {d["id"]: d for d in map(json.loads, path.read_text(encoding="utf-8").splitlines())}
    for seg_id, punct, case in zip(predictions.ids, predictions.punct_hyp, predictions.case_hyp):
        if decoded[seg_id]["punct_hyp"] != punct or decoded[seg_id]["case_hyp"] != case:
            raise RuntimeError(f"{path}: segment {seg_id} was decoded otherwise than the stream at latency inf")


def measure(recipe_dir: Path, models: list[str], splits: list[str], latencies: list[float]) -> dict:
    import torch

    from benchmarks.itn_streaming.latency_table import KIND
    from benchmarks.itn_streaming.segments import CHUNK_SECONDS, latency_row, stream_split
    from punct.models.cross_attention.checkpoint import load_model
    from punct.models.cross_attention.data import load_split

    torch.set_num_threads(1)
    recipe_dir = recipe_dir.resolve()
    os.chdir(recipe_dir)  # the manifests name the audio relative to the recipe
    segments = Path("data/segments")
    result = {"kind": KIND, "machine": machine(), "recipe_dir": str(recipe_dir), "chunk_seconds": CHUNK_SECONDS}
    result["splits"] = {split: {} for split in splits}
    for name in models:
        model, cfg, kind = load_model(Path("exp") / name / "best-valid-f1.pt")
        result.setdefault("seed", cfg.seed)
        if cfg.seed != result["seed"]:
            raise ValueError(f"exp/{name}: seed {cfg.seed}, but another model of the run has seed {result['seed']}")
        pad_id = model.text.tokenizer.pad_token_id or 0
        for split in splits:
            data = load_split(
                segments / f"parczech_supervisions_{split}.jsonl.gz",
                segments / f"parczech_recordings_{split}.jsonl.gz",
                model.text.tokenizer,
                cfg,
                model.uses_audio,
            )
            rows = []
            for latency in latencies:
                streamed = stream_split(model, data, cfg, latency, torch.device("cpu"), pad_id)
                if math.isinf(latency):
                    check_offline(recipe_dir, name, split, streamed.predictions)
                rows.append({**latency_row(streamed, latency), "sound_encoder": cfg.sound_encoder, "kind": kind})
                print(f"{name} {split} latency {latency}: {rows[-1]}", flush=True)
            result["splits"][split][name] = rows
    return result


def main() -> None:
    parser = itn_bench_parser(__doc__, "itn_streaming", MODELS, LATENCIES)
    args = parser.parse_args()
    if args.plot_from is not None:
        from benchmarks.itn_streaming.latency_table import plot_itn_latency, read_itn_streaming

        if args.plot is None:
            raise SystemExit("--plot-from needs --plot OUT.png")
        plot_itn_latency(read_itn_streaming(args.plot_from), "dev", args.plot)
        return
    if args.recipe_dir is None:
        raise SystemExit("give --recipe-dir (measure) or --plot-from (plot)")
    command = shlex.join(["python", "benchmarks/bench_itn_streaming.py", *sys.argv[1:]])
    results_dir = args.results_dir.resolve() if args.results_dir is not None else None
    result = measure(args.recipe_dir, args.models, args.splits, args.latencies)
    result["command"] = command
    save_result("itn_streaming", result, results_dir, args.name)
    rows = [
        [split, model, row["latency"], round(row["punct_macro_f1"], 1), round(row["cap_f1"], 1), row["final_share"],
         row["rtf"]]
        for split, by_model in result["splits"].items()
        for model, model_rows in by_model.items()
        for row in model_rows
    ]  # fmt: skip
    print_table(
        "punctuation macro F1 and [cap] F1 (%) against latency",
        ["split", "model", "latency s", "macro F1", "cap F1", "final", "RTF"],
        rows,
    )


if __name__ == "__main__":
    main()
