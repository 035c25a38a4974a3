"""Long-form punctuate: peak memory and real-time factor on whole recordings of 3 to 60 minutes, and (with
--f1) overall F1 of test talks as one recording against segment by segment.

The recording is one mini-corpus test talk (espeak-ng reading Jane Austen, ~3 min) repeated to the length asked,
with its segments' texts repeated as the transcript; ``punctuate`` aligns it in 30 s chunks
(``punct.recognition.long_align``) and runs BERT and the TDNN one pause-delimited stretch at a time.  Each length
runs in a fresh process (``--child``) so that its peak RSS (``resource.getrusage``, ``ru_maxrss``) is its own;
the 3-minute row shows what the process needs anyway (Python, torch, the models).  One CPU thread.
The F1 table is written to benchmarks/results/longform_f1.json as soon as it is done.

  . ./path.sh
  python benchmarks/bench_longform.py --recipe-dir /work/runs/mustc_seed1 --minutes 3 30 60
  python benchmarks/bench_longform.py --recipe-dir /work/runs/mustc_seed1 --f1 --split test

Without a trained recipe (--recipe-dir absent or untrained) the models are random at mini size
(``benchmarks/common.random_models("mini")``): the alignment is then meaningless but the work and memory are the same.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from common import REPO, machine, print_table, trained_recipe, write_json


def punctuator(recipe_dir: Path | None):
    import torch

    from punct.inference.pipeline import Punctuator

    torch.set_num_threads(1)
    if recipe_dir is not None and trained_recipe(recipe_dir):
        return Punctuator.from_recipe(recipe_dir), "trained"
    from common import random_models

    from punct.features import FeatureConfig

    m = random_models("mini")
    return Punctuator(feature_config=FeatureConfig(), am=m.am, tokens=m.tokens, bert=m.bert, tdnn=m.tdnn), "random"


def peak_rss_mb() -> float:
    """This process's peak resident memory: VmHWM (Linux; unlike ``ru_maxrss`` it starts afresh at exec, so the
    parent's peak does not count), else ``resource.getrusage``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(recipe_dir: Path | None, minutes: float, talk_recipe: Path) -> dict:
    """One long-form run in this process: the talk repeated to ``minutes``; wall, CPU, RTF and peak RSS."""
    from benchmarks.streaming.talk import load_talks, recipe_prefix
    from punct.inference.outputs import Failure

    p, models = punctuator(recipe_dir)
    talk = load_talks(talk_recipe, "test", recipe_prefix(talk_recipe, "test"))[0]
    repeat = max(1, round(minutes * 60 / talk.duration))
    p.long_form_config = replace(p.long_form_config, long_form="always")
    before = peak_rss_mb()
    start, cpu = time.perf_counter(), time.process_time()
    out = next(iter(p.run([talk.whole_request(repeat)])))
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    if isinstance(out, Failure):
        raise SystemExit(f"long-form run failed: {out.message}")
    return {
        "models": models,
        "talk": talk.id,
        "repeat": repeat,
        "audio_seconds": out.duration,
        "words": len(out.words),
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "rtf_wall": wall / out.duration,
        "rtf_cpu": cpu / out.duration,
        "peak_rss_mb_before_run": before,
        "peak_rss_mb": peak_rss_mb(),
        "stage_seconds": {k: round(v, 2) for k, v in p.timer.seconds.items()},
    }


def f1_rows(recipe_dir: Path, split: str) -> tuple[list, dict]:
    """Every talk of the split, segment by segment and as one recording; pooled over the talks as well."""
    import numpy as np

    from benchmarks.streaming.talk import compare, load_talks, recipe_prefix

    p, _ = punctuator(recipe_dir)
    rows, per_talk = [], []
    for talk in load_talks(recipe_dir, split, recipe_prefix(recipe_dir, split)):
        c = compare(p, talk)
        per_talk.append(c.__dict__)
        rows.append(
            [
                c.talk,
                round(c.duration, 1),
                c.segments,
                c.segments_failed,
                c.words,
                round(c.f1_segments["ensemble"], 2),
                round(c.f1_long["ensemble"], 2),
                round(c.f1_long["ensemble"] - c.f1_segments["ensemble"], 2),
            ]
        )
    from benchmarks.streaming.talk import overall_f1

    pooled = {k: [x for c in per_talk for x in c["labels"][k]] for k in ("reference", "segments", "long")}
    seg, long = overall_f1(pooled["reference"], pooled["segments"]), overall_f1(pooled["reference"], pooled["long"])
    rows.append(
        [
            "all (pooled)",
            round(sum(c["duration"] for c in per_talk), 1),
            sum(c["segments"] for c in per_talk),
            sum(c["segments_failed"] for c in per_talk),
            len(pooled["reference"]),
            round(seg, 2),
            round(long, 2),
            round(long - seg, 2),
        ]
    )
    for c in per_talk:
        c.pop("labels")
        c["start_differences"] = np.percentile(np.abs(c["start_differences"]), [50, 90, 99, 100]).tolist()
    return rows, {"talks": per_talk, "pooled": {"words": len(pooled["reference"]), "f1_segments": seg, "f1_long": long}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe-dir", type=Path, default=None, help="trained egs/mustc (else random mini models)")
    parser.add_argument(
        "--talk-recipe", type=Path, default=None, help="recipe whose data/manifests give the test talk [--recipe-dir]"
    )
    parser.add_argument("--minutes", type=float, nargs="+", default=[3, 30, 60])
    parser.add_argument("--f1", action="store_true", help="F1 of each talk of --split, long-form vs segments")
    parser.add_argument("--split", default="test")
    parser.add_argument("--child", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    talk_recipe = args.talk_recipe or args.recipe_dir
    if talk_recipe is None:
        raise SystemExit("give --recipe-dir or --talk-recipe (a recipe with data/manifests and its corpus)")
    if args.child is not None:
        print(json.dumps(child(args.recipe_dir, args.child, talk_recipe)))
        return
    result = {"machine": machine(), "recipe_dir": str(args.recipe_dir), "runs": []}
    if args.f1:
        rows, f1 = f1_rows(args.recipe_dir, args.split)
        result["f1"] = f1
        write_json("longform_f1", {"machine": result["machine"], "recipe_dir": str(args.recipe_dir), **f1})
        print_table(
            f"overall F1 (%, ensemble) of {args.split} talks: segment by segment vs one recording",
            ["talk", "seconds", "segments", "not scored", "words", "segments F1", "long-form F1", "difference"],
            rows,
        )
    rows = []
    for minutes in args.minutes:
        cmd = [sys.executable, __file__, "--child", str(minutes), "--talk-recipe", str(talk_recipe)]
        if args.recipe_dir is not None:
            cmd += ["--recipe-dir", str(args.recipe_dir)]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
        if out.returncode != 0:
            raise SystemExit(out.stderr[-3000:])
        run = json.loads(out.stdout.strip().splitlines()[-1])
        result["runs"].append(run)
        rows.append(
            [
                round(run["audio_seconds"] / 60, 1),
                run["words"],
                run["models"],
                round(run["wall_seconds"], 1),
                round(run["rtf_wall"], 4),
                round(run["rtf_cpu"], 4),
                round(run["peak_rss_mb_before_run"]),
                round(run["peak_rss_mb"]),
            ]
        )
        print(f"{minutes} min done: {run}", flush=True)
    print_table(
        "long-form punctuate, one CPU thread",
        ["minutes", "words", "models", "wall s", "RTF wall", "RTF CPU", "RSS before MB", "peak RSS MB"],
        rows,
    )
    write_json("longform", result)


if __name__ == "__main__":
    main()
