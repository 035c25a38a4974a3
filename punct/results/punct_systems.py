"""The punctuation systems' results (BERT, TDNN, their ensemble, pause only): the scoring stage's RESULTS.md +
results.json shaped like EfficientPunct's tables, and the README tables made from one or more of those
results.json (:mod:`punct.bin.results_table`).

* Table 3 shape: rows BERT-only, TDNN, ensemble (chosen alpha, and the paper's 0.4) and, when stage 8 scored it,
  the pause-only baseline (:mod:`punct.models.pause`); columns comma / full stop / question / overall (micro) F1 /
  macro F1, then the same with P/R.
* Paired differences: overall F1 of one system minus another's with a paired bootstrap interval, per split.
* What was scored: per split, the utterances and words of the stage-0 manifest that were scored, and
  those dropped before scoring, by reason (no features, no alignment at stage 3, no posteriors ...).
* Table 4 shape: F1 per class, overall and macro for alpha = 0.0 .. 1.0 on dev and test.
* Table 5 shape: parameters of the embedding network (AM up to layer 12 + BERT encoder) and of
  the inference network (punctuation TDNN + BERT head; :func:`punct.results.facts.parameter_breakdown`); a count
  that could not be read is "n/a".
* ``f1_vs_alpha.png`` (overall and macro F1 against alpha, dev and test) and ``confusion_<system>.png``
  (:mod:`punct.results.plots`).

The JSON holds every number the markdown shows (fractions; the markdown shows percent).

The README tables (:class:`RunResult`, one per run's results.json): F1 in percent, one row per model and F1 (BERT
only, TDNN, the ensemble at the alpha chosen on dev, and Pause only when every run scored it), one column per run,
then mean ± sample sd; and per run the alpha chosen on dev, the acoustic model's WER and alignment error, what was
scored, and the wall time.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lhotse.utils import Pathlike

from punct.results.plots import plot_confusion, plot_f1_vs_alpha
from punct.results.stages import STAGES_NOTE, stage_rows
from punct.results.tables import (
    duration,
    machine_speed_cell,
    machine_speed_rows,
    markdown_table,
    mean_sd_cell,
    number,
    read_run_json,
    run_name,
    spread,
)
from punct.scoring.ensemble import AlphaChoice
from punct.scoring.intervals import Interval
from punct.scoring.punct_scores import Coverage
from punct.utils.atomic import atomic_write_text

# The kind of a stage-8 results.json (told by its "systems"; punct.results.regions.results_kind).
KIND = "ensemble"

MARK_NAMES = {",": "Comma", ".": "Full stop", "?": "Question"}


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def _count(n: int | None) -> str:
    return "n/a" if n is None else f"{n:,} ({n:.1e})"


def _mark_label(c: str) -> str:
    return f"{MARK_NAMES.get(c, c)} ({c})"


MAX_LISTED_DROPS = 10  # dropped utterances named in RESULTS.md (results.json lists all)


def scored_lines(splits: dict[str, dict]) -> list[str]:
    """Per split: what was scored out of the manifest, and the dropped utterances with their reason."""
    lines = []
    for split, info in splits.items():
        scored = Coverage.from_dict(info)
        lines.append(f"- {split} (`{scored.manifest}`): {scored.summary()}")
        dropped = list(scored.dropped_ids.items())
        for key, reason in dropped[:MAX_LISTED_DROPS]:
            lines.append(f"  - `{key}`: {reason}")
        if len(dropped) > MAX_LISTED_DROPS:
            lines.append(
                f"  - ... and {len(dropped) - MAX_LISTED_DROPS} more (results.json: splits.{split}.dropped_ids)"
            )
    return lines


def f1_table(systems: dict[str, dict], marks: Sequence[str]) -> list[str]:
    """Table 3 shape: F1 per mark, overall (micro) and macro, one row per system."""
    lines = [
        "| Model | " + " | ".join(_mark_label(c) for c in marks) + " | Overall | Macro |",
        "|---|" + "---:|" * (len(marks) + 2),
    ]
    for name, s in systems.items():
        lines.append(
            f"| {name} | "
            + " | ".join(_pct(s["per_class"][c]["f1"]) for c in marks)
            + f" | {_pct(s['overall']['f1'])} | {_pct(s['macro_f1'])} |"
        )
    return lines


def precision_recall_table(systems: dict[str, dict], marks: Sequence[str]) -> list[str]:
    lines = [
        "| Model | " + " | ".join(f"{c} P | {c} R" for c in marks) + " | Overall P | Overall R |",
        "|---|" + "---:|" * (2 * len(marks) + 2),
    ]
    for name, s in systems.items():
        cells = [f"{_pct(s['per_class'][c]['precision'])} | {_pct(s['per_class'][c]['recall'])}" for c in marks]
        lines.append(
            f"| {name} | "
            + " | ".join(cells)
            + f" | {_pct(s['overall']['precision'])} | {_pct(s['overall']['recall'])} |"
        )
    return lines


def alpha_table(sweep: dict[str, list[dict]], marks: Sequence[str], chosen_alpha: float) -> list[str]:
    """Table 4 shape: per alpha and split, F1 per mark, overall and macro; the dev choice marked."""
    splits = list(sweep)
    columns = list(marks) + ["overall", "macro"]
    lines = [
        "| alpha | " + " | ".join(f"{split} {c}" for split in splits for c in columns) + " |",
        "|---:|" + "---:|" * (len(splits) * len(columns)),
    ]
    for i, point in enumerate(sweep[splits[0]]):
        cells = []
        for split in splits:
            p = sweep[split][i]
            cells += [_pct(p["per_class_f1"][c]) for c in marks] + [_pct(p["overall_f1"]), _pct(p["macro_f1"])]
        chosen = " (chosen)" if abs(point["alpha"] - chosen_alpha) < 1e-9 else ""
        lines.append(f"| {point['alpha']:.1f}{chosen} | " + " | ".join(cells) + " |")
    return lines


def parameter_table(params: dict) -> list[str]:
    """Table 5 shape: embedding and inference network parameters; an unknown count is "n/a"."""
    lines = ["| Part | Component | Parameters |", "|---|---|---:|"]
    for part in ("embedding", "inference"):
        for name, n in params[part].items():
            lines.append(f"| {part} network | {name} | {_count(n)} |")
        known = [n for n in params[part].values() if n is not None]
        total = sum(known) if len(known) == len(params[part]) else None
        lines.append(f"| {part} network | **total** | {_count(total)} |")
    if params.get("notes"):
        lines += [""] + [f"- {note}" for note in params["notes"]]
    return lines


def paired_table(paired: dict) -> list[str]:
    """One row per comparison, one column per split: overall F1 of a system minus a baseline's (percent) with its
    paired bootstrap interval."""
    splits = list(paired["splits"])
    comparisons: dict[tuple[str, str], dict[str, Interval]] = {}
    for split in splits:
        for row in paired["splits"][split]:
            interval = Interval(row["difference"], row["low"], row["high"])
            comparisons.setdefault((row["system"], row["baseline"]), {})[split] = interval
    lines = ["| Comparison | " + " | ".join(splits) + " |", "|---|" + "---:|" * len(splits)]
    for (system, baseline), by_split in comparisons.items():
        cells = [by_split[split].fmt() if split in by_split else "n/a" for split in splits]
        lines.append(f"| {system} minus {baseline} | " + " | ".join(cells) + " |")
    return lines


def paired_lines(paired: dict) -> list[str]:
    """The section of the paired comparisons (none recorded: no lines)."""
    if not paired or not any(paired["splits"].values()):
        return []
    level = round(100 * paired["level"])
    return [
        f"## Paired differences ({paired['statistic']})",
        "",
        f"The {paired['statistic']} of a system minus a baseline's on the same words, in points, with a paired "
        f"bootstrap {level} % interval: {paired['num_resamples']} resamples of the {paired['unit']} (seed "
        f"{paired['seed']}), both systems scored on each; an interval that excludes 0 is a difference significant at "
        f"the {100 - level} % level.",
        "",
        *paired_table(paired),
        "",
    ]


def pause_line(results: dict) -> list[str]:
    """The pause-only baseline's classifier, when it was scored."""
    choice = results.get("pause_model")
    if not choice:
        return []
    return [
        f"- Pause only: per word, the silence after and before it, its duration and whether it ends the segment "
        f"(stage 3's word alignment); {choice['name']}, chosen on dev (overall F1 {_pct(choice['dev_overall_f1'])})"
    ]


def alpha_rule(results: dict) -> str:
    """How stage 8 chose alpha (results.json written before the rule was recorded: the argmax)."""
    choice = results.get("alpha_choice")
    return AlphaChoice(**choice).describe() if choice else "highest overall F1"


def render_markdown(results: dict) -> str:
    marks: list[str] = results["classes"][1:]
    lines = ["# Results: EfficientPunct (BERT, punctuation TDNN, ensemble)", "", "What was scored:", ""]
    lines += scored_lines(results["splits"])
    lines.append("")
    if results.get("seed") is not None:
        lines.append(f"- seed: {results['seed']}")
    lines += [
        f"- alpha chosen on dev ({alpha_rule(results)}): **{results['chosen_alpha']:.1f}**; "
        f"the paper's alpha: {results['paper_alpha']:.1f}",
        '- overall = micro-average over , . ? (NP excluded; EfficientPunct\'s "overall"); macro = mean F1 of , . ? '
        "(Huang et al.'s \"overall\": the mean of the three marks' scores); numbers in percent",
        *pause_line(results),
        "",
    ]
    for split, systems in results["systems"].items():
        lines += [f"## F1 on {split} (Table 3 shape)", ""] + f1_table(systems, marks)
        lines += ["", f"Precision / recall on {split}:", ""] + precision_recall_table(systems, marks) + [""]
    lines += paired_lines(results.get("paired", {}))
    lines += ["## F1 against alpha (Table 4 shape; alpha = weight of the TDNN)", ""]
    lines += alpha_table(results["alpha_sweep"], marks, results["chosen_alpha"])
    lines += ["", "## Parameters (Table 5 shape)", ""] + parameter_table(results["parameters"])
    plots = results.get("plots", {})
    if plots:
        lines += ["", "## Plots", ""] + [f"- {name}: `{path}`" for name, path in plots.items()]
    return "\n".join(lines) + "\n"


def write_results(results: dict, out_dir: Pathlike, confusion_system: str | None = None, plot: bool = True) -> Path:
    """Writes RESULTS.md, results.json and the plots into ``out_dir``; returns the markdown path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = dict(results)
    if plot:
        plots = {"overall and macro F1 against alpha": "f1_vs_alpha.png"}
        plot_f1_vs_alpha(
            results["alpha_sweep"], results["chosen_alpha"], results["paper_alpha"], out_dir / "f1_vs_alpha.png"
        )
        last_split = list(results["systems"])[-1]
        systems = results["systems"][last_split]
        for name in [confusion_system] if confusion_system else list(systems):
            slug = "_".join("".join(ch if ch.isalnum() else " " for ch in name.lower()).split())
            file = f"confusion_{last_split}_{slug}.png"
            plot_confusion(systems[name]["confusion"], results["classes"], f"{name} ({last_split})", out_dir / file)
            plots[f"confusion matrix, {name}, {last_split}"] = file
        results["plots"] = plots
    atomic_write_text(out_dir / "results.json", json.dumps(results, indent=2) + "\n")
    md = out_dir / "RESULTS.md"
    atomic_write_text(md, render_markdown(results))
    logging.info("wrote %s", md)
    return md


# ---- the README tables of one or more runs (punct.bin.results_table) -------------------------------------

MODELS = ("BERT only", "TDNN", "Ensemble")
OPTIONAL_MODELS = ("Pause only",)  # in the tables when every run scored it (results.json before it: none did)
MODEL_LABELS = {
    "BERT only": "BERT only",
    "TDNN": "TDNN",
    "Ensemble": "Ensemble (alpha chosen on dev)",
    "Pause only": "Pause only",
}
F1_KINDS = ("overall", "macro")


@dataclass
class RunResult:
    """The numbers of one run's split (F1 as fractions, as in results.json; None: not recorded)."""

    path: Path
    seed: int | None
    f1: dict[str, dict[str, float]]  # model -> "overall" | "macro" | a mark -> F1
    alpha: float
    scored_utterances: int | None
    manifest_utterances: int | None
    scored_words: int | None
    manifest_words: int | None
    dev_wer: float | None  # percent
    test_wer: float | None  # percent
    dev_alignment_ms: float | None
    wall_seconds: float | None
    stages: list[dict] | None = None  # the run.json's stage times (punct.results.stages), if recorded
    corpus_audio: str | None = None  # the run.json's digest of the mini corpus' audio (build_record.corpora_digest)
    machine_speed: str | None = None  # the run.json's host speed probe, before / after (punct.bin.machine_speed)

    @property
    def name(self) -> str:
        return run_name(self.seed, self.path)


def system_key(systems: dict, model: str) -> str:
    """The results.json key of a model; the ensemble is the one at the alpha chosen on dev."""
    if model != "Ensemble":
        if model not in systems:
            raise KeyError(f"no system {model!r} among {sorted(systems)}")
        return model
    for key in systems:
        if key.startswith("Ensemble") and "chosen on dev" in key:
            return key
    raise KeyError(f"no ensemble chosen on dev among {sorted(systems)}")


def model_f1(scores: dict, marks: Sequence[str]) -> dict[str, float]:
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
    f1.update({model: model_f1(systems[model], marks) for model in OPTIONAL_MODELS if model in systems})
    scored = results.get("splits", {}).get(split, {})
    am = results.get("acoustic_model", {})
    run = read_run_json(path)
    return RunResult(
        path=path,
        seed=results.get("seed", run.get("seed")),
        f1=f1,
        alpha=results["chosen_alpha"],
        scored_utterances=scored.get("utterances"),
        manifest_utterances=scored.get("manifest_utterances"),
        scored_words=scored.get("words"),
        manifest_words=scored.get("manifest_words"),
        dev_wer=am.get("wer", {}).get("dev"),
        test_wer=am.get("wer", {}).get("test"),
        dev_alignment_ms=am.get("alignment_median_ms", {}).get("dev"),
        wall_seconds=run.get("wall_seconds"),
        stages=run.get("stages"),
        corpus_audio=run.get("corpus_audio"),
        machine_speed=machine_speed_cell(run),
    )


def models_of(runs: Sequence[RunResult]) -> tuple[str, ...]:
    """The models of the tables: ``MODELS``, then each of ``OPTIONAL_MODELS`` that every run scored."""
    return MODELS + tuple(m for m in OPTIONAL_MODELS if all(m in r.f1 for r in runs))


def run_quantities(runs: Sequence[RunResult]) -> dict[str, list[float | None]]:
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


def summary(runs: Sequence[RunResult], split: str = "test") -> dict:
    """Machine-readable summary: per model and F1 kind (overall, macro, each mark) the runs' values,
    mean and sample sd (fractions), and the same for the other per-run numbers."""
    marks = [m for m in runs[0].f1[MODELS[0]] if m not in F1_KINDS]
    models = {}
    for model in models_of(runs):
        models[model] = {f"{kind}_f1": spread([r.f1[model][kind] for r in runs]) for kind in F1_KINDS}
        models[model]["per_class_f1"] = {mark: spread([r.f1[model].get(mark) for r in runs]) for mark in marks}
    return {
        "split": split,
        "sd": "sample standard deviation (n - 1)",
        "runs": [
            {
                "name": r.name,
                "seed": r.seed,
                "results": str(r.path),
                "manifest_utterances": r.manifest_utterances,
                "manifest_words": r.manifest_words,
                "corpus_audio": r.corpus_audio,
            }
            for r in runs
        ],
        "models": models,
        "per_run": {name: spread(values) for name, values in run_quantities(runs).items()},
    }


def f1_rows(runs: Sequence[RunResult]) -> list[list[str]]:
    """One row per model and F1 kind: the runs' F1 in percent, then mean ± sd when several runs."""
    rows = []
    for model in models_of(runs):
        for kind in F1_KINDS:
            values = [100 * r.f1[model][kind] for r in runs]
            row = [MODEL_LABELS[model], kind] + [number(v) for v in values]
            rows.append(row + ([mean_sd_cell(values)] if len(runs) > 1 else []))
    return rows


def scored_cell(run: RunResult) -> str:
    """ "56 of 57 (1491 of 1543)": utterances (words) scored of the manifest's."""
    if run.scored_utterances is None:
        return "n/a"
    if run.manifest_utterances is None:
        return f"{run.scored_utterances} ({run.scored_words})"
    return f"{run.scored_utterances} of {run.manifest_utterances} ({run.scored_words} of {run.manifest_words})"


def run_rows(runs: Sequence[RunResult], split: str) -> list[list[str]]:
    """Per-run numbers: alpha, AM dev and test WER, alignment error, utterances and words scored, wall time, and
    the digest of the corpus audio when recorded (runs compare only on the same audio)."""
    several = len(runs) > 1
    rows = []
    for label, values, digits in (
        ("alpha chosen on dev", [r.alpha for r in runs], 1),
        ("AM dev WER (%, greedy CTC)", [r.dev_wer for r in runs], 1),
        ("AM test WER (%, greedy CTC)", [r.test_wer for r in runs], 1),
        ("alignment error on dev (median ms)", [r.dev_alignment_ms for r in runs], 1),
    ):
        row = [label] + [number(v, digits) for v in values]
        rows.append(row + ([mean_sd_cell(values, lambda x, digits=digits: number(x, digits))] if several else []))
    rows.append([f"{split} utterances (words) scored"] + [scored_cell(r) for r in runs] + ([""] if several else []))
    walls = [r.wall_seconds for r in runs]
    rows.append(["wall time"] + [duration(w) for w in walls] + ([mean_sd_cell(walls, duration)] if several else []))
    rows += machine_speed_rows([r.machine_speed for r in runs], several)
    if any(r.corpus_audio for r in runs):
        digests = [r.corpus_audio or "not recorded" for r in runs]
        same = "the same" if len(set(digests)) == 1 else "**differ**"
        rows.append(["corpus audio (digest of build.json's md5s)"] + digests + ([same] if several else []))
    return rows


def render_tables(runs: Sequence[RunResult], split: str = "test", brief: bool = False) -> str:
    """F1 per model and run, then the runs' facts and stage times; ``brief``: the F1 table alone."""
    names = [r.name for r in runs] + (["mean ± sd"] if len(runs) > 1 else [])
    lines = markdown_table(["Model", "F1"] + names, f1_rows(runs), text_columns=2)
    if brief:
        return "\n".join(lines) + "\n"
    lines += [""] + markdown_table(["Run"] + names, run_rows(runs, split), text_columns=1)
    if any(r.stages for r in runs):
        header, rows = stage_rows([r.name for r in runs], [r.stages for r in runs])
        lines += [""] + markdown_table(header, rows, text_columns=1)
    return "\n".join(lines) + "\n"


BRANCH_NOTE = (
    " Stages 5-6 (BERT) run in the background beside the acoustic stages (run.sh --overlap-branches, the default;"
    " beside stages 2-4 up to ce2f7c8, 1-4 from e6b1c2e) and have no column: stage 4's includes the wait for them."
)


def caption(split: str, num_runs: int, command: str = "", stages: bool = False) -> str:
    """The line under the tables: what they show and where they come from (``stages``: a stage-time table too)."""
    notes = STAGES_NOTE + BRANCH_NOTE if stages else ""
    text = (
        f"{split.capitalize()} set, F1 in percent (overall = micro-average over the marks, macro = mean of the "
        f"marks' F1){'; sd = sample standard deviation' if num_runs > 1 else ''}.{notes}"
        f" Generated by `punct.bin.results_table` from {num_runs} results.json"
    )
    return text + (f" of `{command}`.\n" if command else ".\n")
