#!/usr/bin/env python3
"""How a recipe grows with the corpus: every stage run on mini-style corpora of 1, 2, 4 and 8 hours of training
speech, its cost recorded per stage, a per-hour slope fitted and extrapolated to MuST-C (400 h) and ParCzech
(1,000 h).

  python benchmarks/bench_scale.py --hours 1 2 4 8 --work-dir /tmp/scale            # egs/mustc, ~1.5 h on 2 cores
  python benchmarks/bench_scale.py --recipe parczech --hours 1 2 4 --work-dir /tmp/scale   # egs/parczech
  python benchmarks/bench_scale.py --table-only                                     # the tables of the committed JSON
  python benchmarks/bench_scale.py --plan --work-dir /tmp/scale --commit-copy        # the 400 h plan from it

Each size is a fresh copy of the recipe (no data/, exp/) that builds the corpus ``--corpus-size <H>h``: H hours of
training talks like the mini corpus' and its dev and test talks (punct.corpora.mini_english.scaled_splits).  The
stages run one at a time (``--overlap-branches false``, ``--nj``, every process on one thread), each under
``benchmarks/scale/probe.py``: wall and CPU seconds, the peak RSS of the largest process and of each kind of
process (a stage's jobs and its merge), bytes read and written, and the size of data/ and exp/ after it.  The
models are the mini configs' with fewer epochs (``--epochs``): a training stage's cost is its epochs times an
epoch's, and the epoch is what grows.  Sizes above ``--train-max-hours`` skip the AM's and BERT's trainings (stages
2 and 5) and take the models of the largest size that trained them, so that the data path (stages 0, 1, 3, 4, 6-8)
reaches 8 h in a session's time on 2 cores.

``--plan`` works out a 400 h run on 8 GPUs from the committed JSON (``benchmarks.scale.gpu_plan``: FLOPs of the
paper-size models counted on their graphs, stage 7's per-hour epoch cost of ``bench_train.py --epoch-cost``, the
measured CPU slopes) and writes ``plan.json`` beside it.

egs/parczech builds ``--corpus-size <H>h`` as its small corpus (punct.corpora.mini_czech.scaled_size): small's
voices, a speaker per sitting, about H hours of training speakers' audio and 3 more speakers each for dev and test,
held out by stage 3 (its segments config's speaker counts).  Its configs are the small ones; the AM trains 12 epochs
by default (the mini config's), as stage 2 recognises with it and stages 3-6 need the words it gets right: at 0.3 h
(1.04 h of audio, ~97 updates an epoch on 2 ranks) small's 6 had just left CTC's blank plateau and recognised 4
words a minute, under stage 2's 10.  Its splits exist only after stage 3, so a size's training hours (the fits' x)
are those of the segment dataset (``data/segments/stats.json``: the segments' seconds, not the recordings'; at
0.3 h, 2 training speakers of 8, the recordings were 1.04 h and the training segments 0.138 h, dev 0.241 h, test
0.227 h).

A size whose figures exist in the work dir is not run again (re-running resumes).  The JSON goes to
``benchmarks/results/scale_<recipe>.json`` and, with ``--commit-copy``, to ``egs/<recipe>/RESULTS/scale/``, from
which the tables of ``benchmarks/README.md`` and ``docs/scaling.md`` are generated
(``benchmarks.scale.growth``).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import common  # noqa: E402
import yaml

from benchmarks.scale import growth
from punct.corpora.mini_czech import SCALED_HELD_OUT_SPEAKERS


def mustc_changes(epochs: tuple[int, int, int]) -> dict[str, dict]:
    """The mini configs with ``epochs`` (AM, BERT, TDNN), stage 5 in float32 on one thread, and stage 7 reading its
    shards as the paper config does (a shuffle buffer of utterances, not the whole split cached).  Stage 5's ``amp:
    fastest`` times a step in each precision and picks by a few percent, and bf16 autocast doubled its peak RSS
    (893 MB at 1 h in float32, 1,848 MB at 2 h in bf16): a size would differ from the next by the pick."""
    am_epochs, bert_epochs, tdnn_epochs = epochs
    return {
        "am": {"num_epochs": am_epochs, "average_epochs": 1, "extra_epochs": 0, "max_dev_wer": None},
        "bert": {"num_epochs": bert_epochs, "num_threads": 1, "amp": "none"},
        "tdnn": {"epochs": tdnn_epochs, "shuffle_buffer": 64, "cache_utterances": 128},
    }


def parczech_changes(epochs: tuple[int, int, int]) -> dict[str, dict]:
    """The small configs with ``epochs`` (AM, stage 4's models, TDNN), no extra AM epochs (every size trains as
    many), stage 3 holding out the <H>h corpus' dev and test speakers, and stage 5 reading its shards as the paper
    config does; decode: small's as it is."""
    am_epochs, mm_epochs, tdnn_epochs = epochs
    return {
        "am": {"num_epochs": am_epochs, "extra_epochs": 0, "max_dev_wer": None},
        "decode": {},
        "segments": {"num_dev_speakers": SCALED_HELD_OUT_SPEAKERS, "num_test_speakers": SCALED_HELD_OUT_SPEAKERS},
        "mm": {"num_epochs": mm_epochs},
        "tdnn": {"epochs": tdnn_epochs, "shuffle_buffer": 64, "cache_utterances": 128},
    }


RECIPES = {
    # run.sh options of every stage; the stages measured (mustc's 9, the export, does not grow with the corpus;
    # parczech's 7 neither); the configs copied to conf/<model>_scale.yaml with the recipe's changes; the models
    # whose epochs --epochs gives, and their default
    "mustc": {
        "stages": [0, 1, 2, 3, 4, 5, 6, 7, 8],
        "options": ["--overlap-branches", "false", "--bert-extra-text", "none", "--prosody", "natural"],
        "configs": {"am": "am_mini.yaml", "bert": "bert_mini.yaml", "tdnn": "tdnn_mini.yaml"},
        # the stages that train a model another stage reads, and the folders that hold it (less what they exclude)
        "trainings": {2: ("exp/am", ["ali"]), 5: ("exp/bert", [])},
        # what each stage writes (a folder inside another stage's is counted as its own stage's)
        "outputs": {
            0: ["data/corpus_*", "data/manifests"],
            1: ["data/fbank"],
            2: ["exp/am"],
            3: ["exp/am/ali"],
            4: ["exp/emb_am"],
            5: ["exp/bert"],
            6: ["exp/emb_bert"],
            7: ["exp/tdnn"],
            8: ["exp/results", "exp/pause"],
        },
        "changes": mustc_changes,
        "epochs": {"am": 1, "bert": 1, "tdnn": 1},
    },
    "parczech": {
        "stages": [0, 1, 2, 3, 4, 5, 6],
        "options": ["--prosody", "natural"],
        "configs": {
            "am": "am_small.yaml",
            "decode": "decode_small.yaml",
            "segments": "segments_small.yaml",
            "mm": "mm_small.yaml",
            "tdnn": "tdnn_small.yaml",
        },
        "changes": parczech_changes,
        "epochs": {"am": 12, "mm": 1, "tdnn": 1},
        "trainings": {},
    },
}
print = functools.partial(print, flush=True)  # noqa: A001  (the log of a long run, read while it runs)
# every process one thread: a stage's parallelism is its --nj jobs, and its CPU seconds are work, not the spinning
# of a second torch thread that waits for a core another process holds (stage 2 of 1 h: 379 CPU s with torch's
# 2 threads beside other jobs, 35 CPU s with one)
ONE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
LINKED = ("steps", "utils", "path.sh", "cmd.sh", "local")


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", choices=sorted(RECIPES), default="mustc")
    parser.add_argument("--hours", type=float, nargs="+", default=[1, 2, 4, 8], help="training hours of each size")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/punct_scale"), help="one recipe copy per size")
    parser.add_argument("--nj", type=int, default=2, help="parallel jobs of every stage (run.sh --nj)")
    parser.add_argument("--seed", type=int, default=1, help="run.sh --seed")
    parser.add_argument(
        "--epochs",
        type=int,
        nargs=3,
        metavar=("AM", "TEXT", "TDNN"),
        help="epochs of the AM, the text model(s) (mustc: BERT; parczech: stage 4's) and the TDNN; "
        "default: mustc 1 1 1, parczech 12 1 1",
    )
    parser.add_argument(
        "--train-max-hours",
        type=float,
        default=None,
        help="larger sizes skip the trainings of stages 2 and 5 and reuse the largest trained size's models",
    )
    parser.add_argument("--commit-copy", action="store_true", help="also write egs/<recipe>/RESULTS/scale/")
    parser.add_argument("--table-only", action="store_true", help="print the committed JSON's tables, run nothing")
    parser.add_argument("--plan", action="store_true", help="the 400 h plan from the committed JSON, run nothing")
    parser.add_argument(
        "--epoch-cost",
        type=Path,
        default=common.REPO / "egs" / "mustc" / "RESULTS" / "scale" / "train_epoch_cost.json",
        help="--plan: stage 7's epoch cost per hour (bench_train.py --epoch-cost)",
    )
    return parser


def scale_configs(recipe_dir: Path, recipe: str, epochs: tuple[int, int, int]) -> dict[str, dict]:
    """conf/<model>_scale.yaml: each of the recipe's configs with its changes (``RECIPES[recipe]["changes"]``, given
    ``epochs``); returns what was changed."""
    configs = RECIPES[recipe]["configs"]
    changes = RECIPES[recipe]["changes"](epochs)
    for model, name in configs.items():
        config = yaml.safe_load((recipe_dir / "conf" / name).read_text())
        config.update(changes[model])
        (recipe_dir / "conf" / f"{model}_scale.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return changes


def fresh_copy(recipe: Path, copy: Path) -> None:
    """The recipe without data/, exp/ and RESULTS; its shared folders linked by absolute path."""
    copy.mkdir(parents=True, exist_ok=True)
    for entry in recipe.iterdir():
        if entry.name in ("data", "exp", "RESULTS") or (copy / entry.name).exists():
            continue
        if entry.name in LINKED:
            (copy / entry.name).symlink_to(entry.resolve())
        elif entry.is_dir():
            shutil.copytree(entry, copy / entry.name)
        else:
            shutil.copy2(entry, copy / entry.name)


def folder_mb(path: Path) -> float:
    if not path.exists():
        return 0.0
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True).stdout
    return round(int(out.split()[0]) / 1e6, 1)


def corpus_facts(copy: Path, recipe: str) -> dict:
    """Hours, segments and words per split: of the built corpus (mustc: its build.json), or of the segment dataset
    (parczech: the splits of stage 3's stats.json, with the recordings' hours in ``audio``)."""
    if recipe == "parczech":
        return segment_facts(copy)
    (build,) = copy.glob("data/corpus_*/build.json")
    summary = json.loads(build.read_text())["summary"]
    return {
        split: {
            "hours": round(facts["hours"], 4),
            "segments": facts["segments"],
            "words": sum(facts["labels"].values()),
        }
        for split, facts in summary.items()
    }


def copy_dir(args: argparse.Namespace, hours: float) -> Path:
    return args.work_dir / f"{args.recipe}_{hours:g}h"


def take_models(args: argparse.Namespace, copy: Path, stage: int) -> dict:
    """Stage ``stage``'s trained model from the largest size that trained it (``--train-max-hours``)."""
    folder, excluded = RECIPES[args.recipe]["trainings"][stage]
    source_hours = max(h for h in args.hours if h <= args.train_max_hours)
    source = copy_dir(args, source_hours) / folder
    if not (copy / folder).exists():
        shutil.copytree(source, copy / folder, ignore=lambda d, names: excluded if Path(d) == source else [])
    folders = {name: folder_mb(copy / name) for name in ("data", "exp")}
    return {"stage": stage, "skipped": f"the model of the {source_hours:g}h size ({folder})", "folders_mb": folders}


def segment_facts(copy: Path) -> dict:
    """egs/parczech: hours, segments and words of data/segments' train, dev and test, and the corpus' audio hours."""
    splits = json.loads((copy / "data" / "segments" / "stats.json").read_text())["splits"]
    facts = {
        split: {
            "hours": round(splits[split]["seconds"] / 3600, 4),
            "segments": splits[split]["segments"],
            "words": splits[split]["words"],
        }
        for split in ("train", "dev", "test")
    }
    (build,) = copy.glob("data/corpus_*/build.json")
    built = json.loads(build.read_text())
    facts["audio"] = {"hours": built["hours"], "recordings": len(built["recordings"])}
    return facts


def recipe_epochs(args: argparse.Namespace) -> dict[str, int]:
    """The epochs of each trained model: --epochs, else the recipe's default."""
    default = RECIPES[args.recipe]["epochs"]
    return dict(zip(default, args.epochs)) if args.epochs else dict(default)


def stage_outputs_mb(copy: Path, outputs: dict[int, list[str]]) -> dict[int, float]:
    """MB of what each stage wrote, from the folders ``outputs`` names (less those of other stages inside them)."""
    folders = {stage: [p for pattern in patterns for p in copy.glob(pattern)] for stage, patterns in outputs.items()}
    sizes = {}
    for stage, paths in folders.items():
        inner = [q for other, qs in folders.items() if other != stage for q in qs if any(p in q.parents for p in paths)]
        sizes[stage] = round(sum(folder_mb(p) for p in paths) - sum(folder_mb(q) for q in inner), 1)
    return sizes


def run_size(args: argparse.Namespace, hours: float) -> dict:
    """Every stage of one size, probed; the figures are kept in the copy (``scale/stage<N>.json``)."""
    recipe = RECIPES[args.recipe]
    copy = copy_dir(args, hours)
    fresh_copy(common.REPO / "egs" / args.recipe, copy)
    changes = scale_configs(copy, args.recipe, tuple(recipe_epochs(args).values()))
    figures_dir = copy / "scale"
    figures_dir.mkdir(exist_ok=True)
    run_options = [
        *("--corpus-size", f"{hours:g}h", "--conf-suffix", "_scale", "--nj", str(args.nj), "--seed", str(args.seed)),
        *recipe["options"],
    ]
    stages = []
    for stage in recipe["stages"]:
        if args.train_max_hours is not None and hours > args.train_max_hours and stage in recipe["trainings"]:
            stages.append(take_models(args, copy, stage))
            continue
        out = figures_dir / f"stage{stage}.json"
        if not out.exists():
            command = ["./run.sh", "--stage", str(stage), "--stop-stage", str(stage), *run_options]
            print(f"{copy.name}: stage {stage}", flush=True)
            probe = [sys.executable, str(common.REPO / "benchmarks" / "scale" / "probe.py")]
            subprocess.run(
                [*probe, "--out", str(out), "--log", str(figures_dir / f"stage{stage}.log"), "--cwd", str(copy), "--"]
                + command,
                check=True,
                env=ONE_THREAD,
            )
            figures = json.loads(out.read_text())
            figures["folders_mb"] = {name: folder_mb(copy / name) for name in ("data", "exp")}
            figures["commit"], figures["finished"] = git_commit(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            figures["load_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
            out.write_text(json.dumps(figures, indent=1) + "\n")
        figures = json.loads(out.read_text())
        stages.append({"stage": stage, **figures})
        print(f"{copy.name}: stage {stage}: {figures['wall_seconds']:.0f} s, {figures['peak_rss_mb']:.0f} MB")
    if "outputs" in recipe:
        for stage, mb in stage_outputs_mb(copy, recipe["outputs"]).items():
            next(s for s in stages if s["stage"] == stage)["outputs_mb"] = mb
    return {
        "size": f"{hours:g}h",
        "corpus": corpus_facts(copy, args.recipe),
        "run_options": run_options,
        "config_changes": changes,
        "stages": stages,
    }


def write_plan(args: argparse.Namespace, committed: Path) -> None:
    """The 400 h plan of ``committed`` (a scaling run's JSON), printed and written beside it with --commit-copy."""
    import torch

    from benchmarks.scale import gpu_plan

    torch.set_num_threads(1)
    scale = json.loads(committed.read_text())
    conf = common.REPO / "egs" / args.recipe / "conf"
    paper = {name: yaml.safe_load((conf / f"{name}.yaml").read_text()) for name in ("am", "bert", "tdnn")}
    epochs = {"am": paper["am"]["num_epochs"], "bert": paper["bert"]["num_epochs"], "tdnn": paper["tdnn"]["epochs"]}
    flops = gpu_plan.model_flops(common.random_models("paper"), paper["bert"]["max_length"], paper["bert"]["context"])
    largest = args.work_dir / f"{args.recipe}_{scale['sizes'][-1]['size']}"
    (text,) = largest.glob("data/corpus_*/data/train/txt/train.en")
    per_word = gpu_plan.tokens_per_word(common.tokenizer(), text.read_text(encoding="utf-8").splitlines())
    modes = json.loads(args.epoch_cost.read_text())["epoch_cost"]["modes"]
    stage7 = {
        mode: {
            "examples_per_hour": figures["per_hour"]["examples"],
            "loader_cpu_seconds_per_hour": figures["per_hour"]["loader_cpu_s"],
            "h2d_bytes_per_hour": figures["per_hour"]["h2d_bytes"],
        }
        for mode, figures in modes.items()
    }
    plan = gpu_plan.make_plan(scale, flops, epochs, per_word, stage7)
    print(gpu_plan.render_plan(plan))
    if args.commit_copy:
        out = committed.with_name("plan.json")
        out.write_text(json.dumps(plan, indent=1) + "\n")
        print(f"wrote {out}")


def git_commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    args = get_parser().parse_args()
    committed = common.REPO / "egs" / args.recipe / "RESULTS" / "scale" / "scale.json"
    if args.table_only:
        print(growth.render_tables(json.loads(committed.read_text())))
        return
    if args.plan:
        write_plan(args, committed)
        return
    began = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    sizes = [run_size(args, hours) for hours in args.hours]
    data = {
        "kind": growth.KIND,
        "recipe": args.recipe,
        "command": "python benchmarks/bench_scale.py " + " ".join(sys.argv[1:]),
        "commit": git_commit(),
        "began": began,
        "machine": common.machine(),
        "nj": args.nj,
        "train_max_hours": args.train_max_hours,
        "epochs": recipe_epochs(args),
        "sizes": sizes,
    }
    data["fits"] = growth.fit_sizes(sizes)
    print(growth.render_tables(data))
    common.write_json(f"scale_{args.recipe}", data)
    if args.commit_copy:
        committed.parent.mkdir(parents=True, exist_ok=True)
        committed.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {committed}")


if __name__ == "__main__":
    main()
