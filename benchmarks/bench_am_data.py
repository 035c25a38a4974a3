#!/usr/bin/env python3
"""How much speech the CTC acoustic model needs: dev WER of nested training subsets (hours), trained from scratch and
started from another trained AM (``--am-init`` of egs/parczech).

For a corpus's stage-1 AM data (a folder of ``<prefix>_cuts_{train,dev}.jsonl.gz`` with features and
``cmvn_{train,dev}.json``: egs/parczech's ``data/am_fbank``, egs/mustc's ``data/fbank``), it draws nested subsets of the
training utterances (``benchmarks.am_data.wer_by_hours.nested_subsets``: one seeded order, each subset a prefix of it),
writes each as a stage-1 folder of its own (the subset's cuts, CMVN statistics over the subset alone, the whole dev
part), and runs the recipe's own entry points on it, each in a fresh process on one torch thread, as egs/parczech's
``local/train_am.sh`` runs them: ``punct.bin.init_am`` (with ``--init``), ``punct.bin.train_am --resume`` with the
recipe's config (the epochs it sets), and ``punct.bin.decode_am`` for the greedy WER of the one fixed dev part.
A finished run (``<work-dir>/<init>_<hours>/result.json`` of the same subset, configs and init) is not redone, so
rows can be added by running again with more ``--hours``.

  python benchmarks/bench_am_data.py --name czech --title "Czech mini corpus" \\
      --fbank-dir /work/h38_runs/parczech/data/am_fbank --prefix parczech \\
      --config egs/parczech/conf/am_mini.yaml --init-config egs/parczech/conf/am_mini_init.yaml \\
      --init /work/runs/mustc_seed1/exp/am/best-valid-loss.pt --init-name "from the English mini AM" \\
      --hours 0.1 0.25 0.5 all --work-dir /work/h38_runs/am_data/czech --out egs/parczech/RESULTS/am_data.json
  python -m punct.bin.results_table --regions egs/parczech/RESULTS/regions.yaml   # the README table from the JSON

Writes (updates) the corpus's entry of ``--out`` (default benchmarks/results/am_data.json) after every run, and
prints the table; ``--render-only`` prints the table of ``--out`` and trains nothing.  The README regions are
generated from the committed JSON by ``punct.bin.results_table --regions`` (``RESULTS/regions.yaml`` of the recipe).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import resource
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import common  # noqa: E402  (puts the repository on sys.path)
from lhotse import CutSet, load_manifest

from benchmarks.am_data.wer_by_hours import ALL, KIND, hours_label, nested_subsets, render_tables
from punct.am.config import AmConfig
from punct.am.dev_wer import read_wer
from punct.features.cmvn import SpeakerCmvn
from punct.features.compute import accumulate_cmvn, cuts_path
from punct.utils.atomic import atomic_write_text
from punct.utils.config import load_config

SCRATCH = "from scratch"


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--name", help="the corpus's key in the JSON (e.g. czech)")
    parser.add_argument("--title", help="the corpus's name in the README (e.g. 'Czech mini corpus')")
    parser.add_argument("--fbank-dir", type=Path, help="stage-1 AM data: <prefix>_cuts_{train,dev}, cmvn_{train,dev}")
    parser.add_argument(
        "--base-dir",
        type=Path,
        default=None,
        help="relative feature paths of the cuts start here (default: the recipe folder, two levels above --fbank-dir)",
    )
    parser.add_argument("--prefix", help="cut manifest name prefix (parczech, mustc)")
    parser.add_argument("--config", type=Path, help="the AM config of training from scratch")
    parser.add_argument(
        "--init", type=Path, default=None, help="a trained AM checkpoint to start from (a second column)"
    )
    parser.add_argument("--init-config", type=Path, default=None, help="the AM config of training from --init")
    parser.add_argument("--init-name", default="from a trained AM", help="the column of the --init runs")
    parser.add_argument("--hours", nargs="+", default=["0.1", "0.25", "0.5", "all"], help="subset sizes (h, or all)")
    parser.add_argument(
        "--init-hours", nargs="*", default=None, help="the subsets trained from --init too (default: every --hours)"
    )
    parser.add_argument("--subset-seed", type=int, default=0, help="seed of the utterance order the subsets share")
    parser.add_argument("--seed", type=int, default=42, help="seed of every training (egs/parczech's default)")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/bench_am_data"), help="subsets and AM folders")
    parser.add_argument("--out", type=Path, default=common.RESULTS / "am_data.json", help="the JSON to update")
    parser.add_argument("--render-only", action="store_true", help="train nothing: print the table of --out")
    return parser


def _absolute(cuts: CutSet, base: Path) -> CutSet:
    """The cuts with feature paths that work from any folder."""
    return CutSet.from_cuts(
        c if Path(c.features.storage_path).is_absolute() else c.with_features_path_prefix(base) for c in cuts
    )


def write_subset(fbank_dir: Path, base: Path, prefix: str, ids: list[str], out: Path) -> dict:
    """``out`` as a stage-1 folder: the training cuts ``ids`` with CMVN statistics of their own, the whole dev part."""
    if (out / "subset.json").is_file():
        info = json.loads((out / "subset.json").read_text())
        if info["ids"] == ids:
            return info
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    train = load_manifest(cuts_path(fbank_dir, "train", prefix))
    chosen = set(ids)
    subset = _absolute(train.filter(lambda c: c.id in chosen).to_eager(), base)
    norm_vars = SpeakerCmvn.load(fbank_dir / "cmvn_train.json").norm_vars
    subset.to_file(cuts_path(out, "train", prefix))
    accumulate_cmvn(subset, norm_vars=norm_vars).save(out / "cmvn_train.json")
    dev = _absolute(load_manifest(cuts_path(fbank_dir, "dev", prefix)), base)
    dev.to_file(cuts_path(out, "dev", prefix))
    shutil.copy(fbank_dir / "cmvn_dev.json", out / "cmvn_dev.json")
    info = {"ids": ids, "cuts": len(subset), "train_hours": sum(c.duration for c in subset) / 3600}
    atomic_write_text(out / "subset.json", json.dumps(info) + "\n")
    return info


def _run(cmd: list[str], log: Path) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as f:
        f.write("# " + " ".join(cmd) + "\n")
        f.flush()
        done = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=common.REPO)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} failed (exit {done.returncode}): see {log}")


def _init_counts(log: Path) -> dict | None:
    """What ``punct.am.init_from`` copied: ``{'copied': N, 'kept': N, 'output_rows': N}`` from its log line."""
    match = re.search(r"epoch-0\.pt: from .*?: (\{.*\})", log.read_text(encoding="utf-8"))
    return ast.literal_eval(match.group(1)) if match else None


def train_and_score(data_dir: Path, exp: Path, args, config: Path, init: Path | None) -> dict:
    """One AM: optional init, training and the greedy dev WER, each a fresh process of the recipe's entry points."""
    shutil.rmtree(exp, ignore_errors=True)
    common_args = ["--fbank-dir", str(data_dir), "--prefix", args.prefix, "--exp-dir", str(exp)]
    python = [sys.executable, "-m"]
    cpu0, wall0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    counts = None
    if init is not None:
        cmd = python + ["punct.bin.init_am", "--config", str(config), "--source", str(init), "--seed", str(args.seed)]
        _run(cmd + common_args, exp / "log" / "init.log")
        counts = _init_counts(exp / "log" / "init.log")
    cmd = python + ["punct.bin.train_am", "--config", str(config), "--device", "cpu", "--num-threads", "1"]
    _run(cmd + common_args + ["--seed", str(args.seed), "--resume"], exp / "log" / "train.log")
    cmd = python + ["punct.bin.decode_am", "--splits", "dev", "--device", "cpu", "--num-threads", "1"]
    _run(cmd + common_args, exp / "log" / "decode.log")
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    wer_line = (exp / "wer_dev.txt").read_text(encoding="utf-8").strip()
    return {
        "dev_wer": read_wer(exp / "wer_dev.txt"),
        "wer_line": wer_line,
        "tokens": len((exp / "tokens.txt").read_text(encoding="utf-8").splitlines()),
        "wall_seconds": time.perf_counter() - wall0,
        "cpu_seconds": (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime),
        "init_counts": counts,
    }


def _stamp(*parts) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update((part.read_bytes() if isinstance(part, Path) else str(part).encode()) + b"\0")
    return digest.hexdigest()[:16]


def one_run(args, init_name: str, hours, subset: dict, data_dir: Path) -> dict:
    """The result of one (initialisation, subset) cell, trained now or read back from its finished folder."""
    init = args.init if init_name != SCRATCH else None
    config = args.init_config if init is not None else args.config
    exp = args.work_dir / f"{'init' if init else 'scratch'}_{hours_label(hours, 0).split()[0]}"
    stamp = _stamp(config, init or "", ",".join(subset["ids"]), args.seed)
    done = exp / "result.json"
    if done.is_file() and json.loads(done.read_text())["stamp"] == stamp:
        return json.loads(done.read_text())
    print(f"training {init_name}, {hours_label(hours, subset['train_hours'])} -> {exp}", flush=True)
    result = train_and_score(data_dir, exp, args, config, init)
    result = {
        "init": init_name,
        "hours": hours,
        "train_hours": subset["train_hours"],
        "cuts": subset["cuts"],
        "config": _relative(config),
        "num_epochs": load_config(AmConfig, config).num_epochs,
        "init_checkpoint": str(init) if init else None,
        "commit": _commit(),
        **result,
        "stamp": stamp,
    }
    atomic_write_text(done, json.dumps(result, indent=1) + "\n")
    return result


def _relative(path: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(common.REPO)) if path.is_relative_to(common.REPO) else str(path)


def _commit() -> str:
    git = ["git", "-C", str(common.REPO)]
    head = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    code = ["punct", "benchmarks/bench_am_data.py", "egs/mustc/conf", "egs/parczech/conf"]  # what the numbers depend on
    dirty = subprocess.run(git + ["status", "--porcelain", *code], capture_output=True, text=True).stdout
    return head + ("+uncommitted" if dirty.strip() else "")


def save(args, corpus: dict) -> None:
    """``--out`` with this corpus's entry replaced (the other corpora's kept)."""
    data = json.loads(args.out.read_text()) if args.out.is_file() else {"kind": KIND, "corpora": []}
    data["corpora"] = [c for c in data["corpora"] if c["name"] != corpus["name"]] + [corpus]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def run_corpus(args) -> dict:
    base = args.base_dir or args.fbank_dir.resolve().parents[1]
    train = load_manifest(cuts_path(args.fbank_dir, "train", args.prefix))
    dev = load_manifest(cuts_path(args.fbank_dir, "dev", args.prefix))
    hours = [ALL if h == "all" else float(h) for h in args.hours]
    subsets = nested_subsets([(c.id, c.duration) for c in train], hours, args.subset_seed)
    inits = [SCRATCH] + ([args.init_name] if args.init else [])
    init_hours = hours if args.init_hours is None else [ALL if h == "all" else float(h) for h in args.init_hours]
    corpus = {
        "name": args.name,
        "title": args.title or args.name,
        "prefix": args.prefix,
        "command": "python benchmarks/bench_am_data.py " + shlex.join(sys.argv[1:]),
        "commit": _commit(),
        "machine": common.machine(),
        "fbank_dir": str(args.fbank_dir),
        "subset_seed": args.subset_seed,
        "train_hours": sum(c.duration for c in train) / 3600,
        "dev": {"cuts": len(dev), "hours": sum(c.duration for c in dev) / 3600},
        "runs": [],
    }
    for h in hours:
        data_dir = args.work_dir / f"data_{hours_label(h, 0).split()[0]}"
        subset = write_subset(args.fbank_dir, base, args.prefix, subsets[h], data_dir)
        for init_name in inits if h in init_hours else [SCRATCH]:
            corpus["runs"].append(one_run(args, init_name, h, subset, data_dir))
            save(args, corpus)
    return corpus


def render(args) -> None:
    print(render_tables(json.loads(args.out.read_text(encoding="utf-8"))))


def main() -> None:
    args = get_parser().parse_args()
    if not args.render_only:
        missing = [o for o in ("name", "fbank_dir", "prefix", "config") if getattr(args, o) is None]
        if missing or (args.init is not None and args.init_config is None):
            sys.exit(f"needed: {', '.join('--' + m.replace('_', '-') for m in missing) or '--init-config with --init'}")
        for option in ("fbank_dir", "config", "init", "init_config", "work_dir", "base_dir"):
            if getattr(args, option) is not None:
                setattr(args, option, getattr(args, option).resolve())
        args.work_dir.mkdir(parents=True, exist_ok=True)
        corpus = run_corpus(args)
        rows = [
            [r["init"], hours_label(r["hours"], r["train_hours"]), r["cuts"], r["dev_wer"], r["wall_seconds"]]
            for r in corpus["runs"]
        ]
        common.print_table(
            f"{corpus['title']}: AM dev WER by training hours", ["init", "hours", "cuts", "dev WER %", "wall s"], rows
        )
        print(f"wrote {args.out}")
    render(args)


if __name__ == "__main__":
    main()
