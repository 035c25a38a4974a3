#!/usr/bin/env python3
"""README result tables generated from results files (``exp/results/results.json``), never typed.

It reads one or more results.json (one per run, e.g. one per seed) of one kind, told by the file itself:

* egs/mustc stage 8 (punct.bin.score_ensemble): two markdown tables of a split (default test):

  - F1 in percent, one row per model and F1 (BERT only, TDNN, the ensemble at the alpha chosen on dev;
    overall = micro over the marks, macro = mean of the marks' F1), one column per run, then mean ± sd;
  - per run: the alpha chosen on dev, the acoustic model's dev WER and alignment error, the utterances
    and words scored out of the manifest's, and the wall time when a ``run.json`` (utils/multi_seed.sh) lies
    beside the results.json;

* egs/parczech stage 6 (punct.bin.score_itn, ``"kind": "itn"``; punct.itn_results): one row per model (the
  rows the results hold) with [,], [.], [cap] and macro F1, the marks (of 8) with F1 > 0 and, where score_itn
  recorded it, the macro F1 minus the baseline's (text-only) with its paired bootstrap interval; for one run each
  F1 with its bootstrap 95 % interval, for several runs mean ± sd and a second table of each run's values (macro
  F1 with its interval); then per run the segments and words, the first-word rule, and where recorded the AM's dev WER, the recognition WER,
  the ensemble alphas and the wall time (a row no run recorded is left out).

sd is the sample standard deviation (n - 1); with one run there is no mean ± sd.

  python -m punct.bin.results_table exp/results/results.json                       # print
  python -m punct.bin.results_table --readme README.md --name mustc runs/seed*/results.json
  python -m punct.bin.results_table --readme ../../README.md --name parczech exp/results/results.json
  python -m punct.bin.results_table --out-dir exp/multi_seed runs/seed*/results.json   # summary.json/.md

With ``--readme`` the text between ``<!-- results:NAME:begin -->`` and ``<!-- results:NAME:end -->``
is replaced by the tables (NAME: --name, which --readme needs); a README without both markers is an error
and is left unchanged.

Every generated region of the READMEs is listed in a recipe's ``RESULTS/regions.yaml`` with the committed
results.json it comes from (paths relative to that file) and the command that made the runs::

  mustc:                                  # the region's NAME
    readme: ../../../README.md
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
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from punct import itn_results
from punct.tables import (duration, markdown_table, mean_sd_cell, number, read_run_json, region_content, replace_region,
                          run_name, spread)
from punct.tables import mean_sd  # noqa: F401  (re-exported: callers and tests import it from here)
from punct.utils.atomic import atomic_write_text
from punct.utils.logging import setup_logging

MODELS = ("BERT only", "TDNN", "Ensemble")
MODEL_LABELS = {"BERT only": "BERT only", "TDNN": "TDNN", "Ensemble": "Ensemble (alpha chosen on dev)"}
F1_KINDS = ("overall", "macro")


@dataclass
class RunResult:
    """The numbers of one run's split (F1 as fractions, as in results.json; None: not recorded)."""

    path: Path
    seed: Optional[int]
    f1: Dict[str, Dict[str, float]]  # model -> "overall" | "macro" | a mark -> F1
    alpha: float
    scored_utterances: Optional[int]
    manifest_utterances: Optional[int]
    scored_words: Optional[int]
    manifest_words: Optional[int]
    dev_wer: Optional[float]  # percent
    test_wer: Optional[float]  # percent
    dev_alignment_ms: Optional[float]
    wall_seconds: Optional[float]

    @property
    def name(self) -> str:
        return run_name(self.seed, self.path)


def system_key(systems: Dict, model: str) -> str:
    """The results.json key of a model; the ensemble is the one at the alpha chosen on dev."""
    if model != "Ensemble":
        if model not in systems:
            raise KeyError(f"no system {model!r} among {sorted(systems)}")
        return model
    for key in systems:
        if key.startswith("Ensemble") and "chosen on dev" in key:
            return key
    raise KeyError(f"no ensemble chosen on dev among {sorted(systems)}")


def model_f1(scores: Dict, marks: Sequence[str]) -> Dict[str, float]:
    f1 = {"overall": scores["overall"]["f1"], "macro": scores["macro_f1"]}
    f1.update({mark: scores["per_class"][mark]["f1"] for mark in marks if mark in scores.get("per_class", {})})
    return f1


def read_run(path: Path, split: str = "test") -> RunResult:
    """One run from its results.json (and the run.json that utils/multi_seed.sh writes beside it)."""
    results = json.loads(path.read_text(encoding="utf-8"))
    if split not in results["systems"]:
        raise KeyError(f"{path}: no split {split!r} (has {sorted(results['systems'])})")
    systems = results["systems"][split]
    marks = results.get("classes", ["NP", ",", ".", "?"])[1:]
    f1 = {model: model_f1(systems[system_key(systems, model)], marks) for model in MODELS}
    scored = results.get("splits", {}).get(split, {})
    am = results.get("acoustic_model", {})
    run = read_run_json(path)
    return RunResult(
        path=path, seed=results.get("seed", run.get("seed")), f1=f1, alpha=results["chosen_alpha"],
        scored_utterances=scored.get("utterances"), manifest_utterances=scored.get("manifest_utterances"),
        scored_words=scored.get("words"), manifest_words=scored.get("manifest_words"),
        dev_wer=am.get("wer", {}).get("dev"), test_wer=am.get("wer", {}).get("test"),
        dev_alignment_ms=am.get("alignment_median_ms", {}).get("dev"),
        wall_seconds=run.get("wall_seconds"),
    )


def run_quantities(runs: Sequence[RunResult]) -> Dict[str, List[Optional[float]]]:
    """The per-run numbers other than F1, by name (units in the name)."""
    return {
        "alpha": [r.alpha for r in runs],
        "am_dev_wer_percent": [r.dev_wer for r in runs],
        "am_test_wer_percent": [r.test_wer for r in runs],
        "alignment_error_dev_ms": [r.dev_alignment_ms for r in runs],
        "scored_utterances": [r.scored_utterances for r in runs],
        "scored_words": [r.scored_words for r in runs],
        "wall_seconds": [r.wall_seconds for r in runs],
    }


def summary(runs: Sequence[RunResult], split: str = "test") -> Dict:
    """Machine-readable summary: per model and F1 kind (overall, macro, each mark) the runs' values,
    mean and sample sd (fractions), and the same for the other per-run numbers."""
    marks = [m for m in runs[0].f1[MODELS[0]] if m not in F1_KINDS]
    models = {}
    for model in MODELS:
        models[model] = {f"{kind}_f1": spread([r.f1[model][kind] for r in runs]) for kind in F1_KINDS}
        models[model]["per_class_f1"] = {mark: spread([r.f1[model].get(mark) for r in runs]) for mark in marks}
    return {
        "split": split,
        "sd": "sample standard deviation (n - 1)",
        "runs": [{"name": r.name, "seed": r.seed, "results": str(r.path), "manifest_utterances": r.manifest_utterances,
                  "manifest_words": r.manifest_words} for r in runs],
        "models": models,
        "per_run": {name: spread(values) for name, values in run_quantities(runs).items()},
    }


def f1_rows(runs: Sequence[RunResult]) -> List[List[str]]:
    """One row per model and F1 kind: the runs' F1 in percent, then mean ± sd when several runs."""
    rows = []
    for model in MODELS:
        for kind in F1_KINDS:
            values = [100 * r.f1[model][kind] for r in runs]
            row = [MODEL_LABELS[model], kind] + [number(v) for v in values]
            rows.append(row + ([mean_sd_cell(values)] if len(runs) > 1 else []))
    return rows


def scored_cell(run: RunResult) -> str:
    """"56 of 57 (1491 of 1543)": utterances (words) scored of the manifest's."""
    if run.scored_utterances is None:
        return "n/a"
    if run.manifest_utterances is None:
        return f"{run.scored_utterances} ({run.scored_words})"
    return f"{run.scored_utterances} of {run.manifest_utterances} ({run.scored_words} of {run.manifest_words})"


def run_rows(runs: Sequence[RunResult], split: str) -> List[List[str]]:
    """Per-run numbers: alpha, AM dev and test WER, alignment error, utterances and words scored, wall time."""
    several = len(runs) > 1
    rows = []
    for label, values, digits in (("alpha chosen on dev", [r.alpha for r in runs], 1),
                                  ("AM dev WER (%, greedy CTC)", [r.dev_wer for r in runs], 1),
                                  ("AM test WER (%, greedy CTC)", [r.test_wer for r in runs], 1),
                                  ("alignment error on dev (median ms)", [r.dev_alignment_ms for r in runs], 1)):
        row = [label] + [number(v, digits) for v in values]
        rows.append(row + ([mean_sd_cell(values, lambda x: number(x, digits))] if several else []))
    rows.append([f"{split} utterances (words) scored"] + [scored_cell(r) for r in runs] + ([""] if several else []))
    walls = [r.wall_seconds for r in runs]
    rows.append(["wall time"] + [duration(w) for w in walls] + ([mean_sd_cell(walls, duration)] if several else []))
    return rows


def render_tables(runs: Sequence[RunResult], split: str = "test") -> str:
    names = [r.name for r in runs] + (["mean ± sd"] if len(runs) > 1 else [])
    lines = markdown_table(["Model", "F1"] + names, f1_rows(runs), text_columns=2)
    lines += [""] + markdown_table(["Run"] + names, run_rows(runs, split), text_columns=1)
    return "\n".join(lines) + "\n"


def caption(split: str, num_runs: int, command: str = "") -> str:
    """The line under the tables: what they show and where they come from."""
    text = (f"{split.capitalize()} set, F1 in percent (overall = micro-average over the marks, macro = mean of the "
            f"marks' F1){'; sd = sample standard deviation' if num_runs > 1 else ''}. Generated by "
            f"`punct.bin.results_table` from {num_runs} results.json")
    return text + (f" of `{command}`.\n" if command else ".\n")


ENSEMBLE = "ensemble"


def results_kind(path: Path) -> str:
    """The kind of a results.json, from its content: itn (egs/parczech stage 6) or ensemble (egs/mustc stage 8)."""
    results = json.loads(path.read_text(encoding="utf-8"))
    if results.get("kind") == itn_results.KIND:
        return itn_results.KIND
    if "systems" in results:
        return ENSEMBLE
    raise ValueError(f"{path}: neither egs/mustc stage-8 results (with systems) nor egs/parczech stage-6 results "
                     f"(kind {itn_results.KIND!r})")


def tables_and_summary(paths: Sequence[Path], split: str, command: str = "") -> Tuple[str, str, Dict]:
    """(kind, the markdown tables with their caption, the summary) of runs of one kind."""
    kinds = sorted({results_kind(path) for path in paths})
    if len(kinds) > 1:
        raise ValueError(f"results of several kinds ({', '.join(kinds)}): one table per recipe")
    if kinds[0] == itn_results.KIND:
        runs = [itn_results.read_itn_run(path, split) for path in paths]
        tables = itn_results.render_itn_tables(runs) + "\n" + itn_results.itn_caption(runs, command)
        data = itn_results.itn_summary(runs)
    else:
        runs = [read_run(path, split) for path in paths]
        tables = render_tables(runs, split) + "\n" + caption(split, len(runs), command)
        data = summary(runs, split)
    seeds = [r.seed for r in runs if r.seed is not None]
    if len(set(seeds)) < len(seeds):
        logging.warning("several runs share a seed: %s", seeds)
    return kinds[0], tables, data


@dataclass(frozen=True)
class Region:
    """One generated README region: ``results:<name>`` of ``readme``, from ``results`` made by ``command``."""

    name: str
    readme: Path
    results: Tuple[Path, ...]
    command: str = ""
    split: str = "test"


def read_regions(path: Path) -> List[Region]:
    """The regions a ``RESULTS/regions.yaml`` lists (paths resolved against its folder)."""
    import yaml

    entries = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    regions = []
    for name, entry in entries.items():
        try:
            regions.append(Region(name, path.parent / entry["readme"],
                                  tuple(path.parent / r for r in entry["results"]), entry.get("command", ""),
                                  entry.get("split", "test")))
        except (KeyError, TypeError) as e:
            raise ValueError(f"{path}: region {name!r} needs readme and results ({e})") from e
    return regions


def region_tables(region: Region) -> str:
    for result in region.results:
        if not result.is_file():
            raise FileNotFoundError(f"{result}: no such file (region {region.name})")
    return tables_and_summary(region.results, region.split, region.command)[1]


def update_regions(path: Path, check: bool) -> int:
    """Rewrites (or with ``check`` compares) every region of ``path``; 1 when a checked region differs."""
    import difflib

    stale = 0
    for region in read_regions(path):
        text = region.readme.read_text(encoding="utf-8")
        tables = region_tables(region)
        if not check:
            atomic_write_text(region.readme, replace_region(text, region.name, tables, str(region.readme)))
            logging.info("%s: rewrote the results:%s region", region.readme, region.name)
            continue
        current = region_content(text, region.name, str(region.readme))
        if current != tables:
            stale += 1
            sys.stdout.writelines(difflib.unified_diff(
                current.splitlines(keepends=True), tables.splitlines(keepends=True),
                f"{region.readme} results:{region.name}", f"generated from {path}"))
    if stale:
        logging.error("%d region(s) differ from their results.json: regenerate with --regions %s", stale, path)
    return 1 if stale else 0


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, nargs="*", help="results.json files (one per run, all of one kind)")
    parser.add_argument("--regions", type=Path, default=None,
                        help="a RESULTS/regions.yaml: rewrite (or --check) every README region it lists")
    parser.add_argument("--check", action="store_true", help="with --regions: compare, rewrite nothing")
    parser.add_argument("--split", default="test", help="split whose scores the tables show")
    parser.add_argument("--readme", type=Path, default=None, help="rewrite the marked region of this file")
    parser.add_argument("--name", default=None,
                        help="marker name: <!-- results:NAME:begin/end -->, e.g. the recipe's folder name (needed with --readme)")
    parser.add_argument("--out-dir", type=Path, default=None, help="also write summary.json and summary.md here")
    parser.add_argument("--command", default="", help="the command that produced the runs (shown under the tables)")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
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
