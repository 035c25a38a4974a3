"""The speech-informed ITN systems' results: the results.json of the ITN scoring stage (written by
:mod:`punct.bin.score_itn`), the tables of its RESULTS.md (Table 5.1, detection, F1 by length, paired differences),
and the README tables made from one or more results.json (:mod:`punct.bin.results_table`, which tells this kind by
``"kind": "itn"``).

results.json (F1 and rates as fractions, WER in percent)::

    {"kind": "itn", "seed": 42 | null,                  # the run's seed (score_itn --run-seed)
     "bootstrap": {"num_resamples": 1000, "seed": 42, "level": 0.95},
     "classes": [",", ".", ...],                        # the 8 marks in RESULTS.md's order
     "splits": {"test": {"first_word": "exclude", "segments": 36, "words": 610, "scored_words": 574,
                         "other_counts": {"<row>": {"segments": ..., "words": ...}}}, ...},
     "models": [{"name": "text-only", "dir": "exp/text", "scores": {"dev": {...}, "test": {...}},
                 "score_files": {"dev": "scores/text-only.dev.json", ...},
                 "chosen_alpha": {"punct": 0.9, "case": 0.9},           # alpha: from <dir>/alpha.json
                 "alpha_choice": {"punct": {"rule": "paired-se", "alpha": 0.9, "best_alpha": 0.9, ...}, ...}}, ...],
     "acoustic_model": {"dir": "exp/am", "wer": {"dev": 52.6}},             # if <am-dir>/wer_dev.txt
     "recognition": {"dir": ..., "wer": 36.1, "words": ..., "errors": ..., "recordings": 10, "models": [...]}}

``models`` is in the table's row order; an ensemble's ``alpha_choice`` is its alpha.json's ``alpha_rule`` (per head,
:class:`punct.scoring.ensemble.AlphaChoice`: the rule, the chosen alpha, the dev argmax, the gain over the better single
model and its standard error), which the scoring stage's RESULTS.md states as the punctuation recipe's does. Each
``scores`` entry is :meth:`punct.scoring.itn.ItnScores.to_dict`, the content of the ``scores/<row>.<split>.json`` file
it names (so a copied results.json stands alone).  The segment counts of a split are those of the first row;
``other_counts`` names rows scored on other segments (e.g. an ensemble that left out segments without posteriors).
``acoustic_model`` and ``recognition`` are there only when the recipe wrote the files they come from:
``<am-dir>/wer_dev.txt`` (stage 1's greedy decoding of the AM's dev part) and the ``<recording>.stats.json`` files of
stage 2's recognition, whose ``errors`` count the recognised words against the mini corpus' synthesizer words.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from punct.labels import PUNCT9
from punct.results.facts import acoustic_model_health
from punct.results.plots import plot_f1_by_length, plot_itn_model
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
    runs_cell,
    spread,
)
from punct.scoring import itn
from punct.scoring.ensemble import AlphaChoice
from punct.scoring.intervals import Interval
from punct.scoring.itn import FIRST_WORD_NOTES, ItnScores
from punct.utils.atomic import atomic_write_text

KIND = "itn"
# The table's F1 columns: key in ItnRun.f1 -> header.
F1_COLUMNS: tuple[tuple[str, str], ...] = ((",", "[,] F1"), (".", "[.] F1"), ("cap", "[cap] F1"), ("macro", "macro F1"))
MARKS_ABOVE_ZERO = "marks with F1 > 0"


# ---- writing (punct.bin.score_itn) -------------------------------------------------------------


def safe(name: str) -> str:
    """A row name as a file-name part ("EfficientPunct TDNN" -> "EfficientPunct_TDNN")."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", name)


def score_file(name: str, split: str) -> str:
    """The scores file of a row and split, relative to the output folder."""
    return f"scores/{safe(name)}.{split}.json"


def split_counts(scores: dict[str, ItnScores]) -> dict:
    """A split's rule and counts (those of the first row) and the rows scored on other segments."""
    first = next(iter(scores.values()))
    other = {
        name: {"segments": s.num_segments, "words": s.num_words}
        for name, s in scores.items()
        if (s.num_segments, s.num_words) != (first.num_segments, first.num_words)
    }
    return {
        "first_word": first.first_word,
        "segments": first.num_segments,
        "words": first.num_words,
        "scored_words": first.scored_words,
        "other_counts": other,
    }


def alpha_record(model_dir: Path) -> dict:
    """An ensemble's ``<model dir>/alpha.json`` (punct.bin.ensemble_itn); {} for a model without one."""
    path = Path(model_dir) / "alpha.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def alpha_lines(models: Sequence[tuple[Path, str]]) -> list[str]:
    """RESULTS.md's lines on the ensembles' alphas: per head the alpha chosen on dev and how (the rule, the dev
    argmax, and for the paired rule the gain over the better single model and its standard error), as the punctuation
    recipe's scoring states its alpha; [] without an ensemble."""
    lines = []
    for path, name in models:
        record = alpha_record(path)
        for head, alpha in record.get("chosen_alpha", {}).items():
            choice = record.get("alpha_rule", {}).get(head)
            how = AlphaChoice(**choice).describe("the text model", "segments") if choice else "rule not recorded"
            lines.append(f"- {name}: {head} alpha chosen on dev ({how}): **{alpha:.1f}**")
    return lines + [""] if lines else []


def recognition_facts(words_dir: Path) -> dict:
    """Stage 2's recognition WER, summed over the ``<recording>.stats.json`` of ``words_dir`` that hold word
    errors against a reference; {} when none does (e.g. words from the synthesizer, or no reference)."""
    errors, models = [], set()
    for path in sorted(Path(words_dir).glob("*.stats.json")):
        stats = json.loads(path.read_text(encoding="utf-8"))
        if "errors" in stats:
            errors.append(stats["errors"])
            models.add(stats.get("model", "unknown"))
    if not errors:
        return {}
    words = sum(e["words"] for e in errors)
    wrong = sum(e["sub"] + e["dele"] + e["ins"] for e in errors)
    return {
        "dir": str(Path(words_dir).resolve()),
        "wer": 100.0 * wrong / max(1, words),
        "words": words,
        "errors": wrong,
        "recordings": len(errors),
        "models": sorted(models),
    }


def run_facts(am_dir: Path | None = None, words_dir: Path | None = None) -> dict:
    """What the recipe's files say about the run: the AM's dev WER and the recognition WER, where written."""
    facts: dict[str, dict] = {}
    if am_dir is not None:
        health = acoustic_model_health(Path(am_dir), ["dev"])
        if health.get("wer"):
            facts["acoustic_model"] = {"dir": str(am_dir), "wer": health["wer"]}
    if words_dir is not None and Path(words_dir).is_dir():
        recognition = recognition_facts(Path(words_dir))
        if recognition:
            facts["recognition"] = recognition
    return facts


def build_results(
    models: Sequence[tuple[Path, str]],
    scores: dict[str, dict[str, ItnScores]],
    classes: Sequence[str],
    bootstrap: dict,
    seed: int | None = None,
    facts: dict | None = None,
) -> dict:
    """The results.json of a run (module docstring) from the scores of every split (split -> row -> scores)."""
    rows = []
    for path, name in models:
        row = {
            "name": name,
            "dir": str(path),
            "scores": {split: s[name].to_dict() for split, s in scores.items()},
            "score_files": {split: score_file(name, split) for split in scores},
        }
        record = alpha_record(path)
        if record.get("chosen_alpha") is not None:
            row["chosen_alpha"] = record["chosen_alpha"]
        if record.get("alpha_rule"):
            row["alpha_choice"] = record["alpha_rule"]
        rows.append(row)
    return {
        "kind": KIND,
        "seed": seed,
        "bootstrap": bootstrap,
        "classes": list(classes),
        "splits": {split: split_counts(s) for split, s in scores.items()},
        "models": rows,
        **(facts or {}),
    }


# ---- reading and tables (punct.bin.results_table) ----------------------------------------------


@dataclass
class ItnRun:
    """One run's split as the tables show it (F1 as fractions; None: not recorded)."""

    path: Path
    seed: int | None
    split: str
    f1: dict[str, dict[str, Interval]]  # row -> "," | "." | "cap" | "macro" -> F1 with its 95 % interval
    marks_above_zero: dict[str, int]  # row -> marks whose F1 is above 0
    num_marks: int
    counts: dict  # the split's entry of results.json (first_word, segments, words, scored_words, other_counts)
    alphas: dict[str, dict[str, float]]  # row -> head -> alpha chosen on dev
    bootstrap: dict
    am_dev_wer: float | None  # percent
    recognition_wer: float | None
    wall_seconds: float | None
    # row -> macro F1 minus the baseline row's with its paired bootstrap interval (score_itn --baseline); empty in
    # results.json files written before
    vs_baseline: dict[str, Interval] = dataclasses.field(default_factory=dict)
    baseline: str | None = None
    stages: list[dict] | None = None  # the run.json's stage times (punct.results.stages), if recorded
    machine_speed: str | None = None  # the run.json's host speed probe, before / after (punct.bin.machine_speed)

    @property
    def name(self) -> str:
        return run_name(self.seed, self.path)


def _interval(d: dict) -> Interval:
    return Interval(d["value"], d["low"], d["high"])


def read_itn_run(path: Path, split: str = "test") -> ItnRun:
    """One run from its results.json (and the run.json that utils/multi_seed.sh writes beside it)."""
    results = json.loads(Path(path).read_text(encoding="utf-8"))
    if split not in results["splits"]:
        raise KeyError(f"{path}: no split {split!r} (has {sorted(results['splits'])})")
    f1, above, num_marks = {}, {}, 0
    for model in results["models"]:
        s = model["scores"][split]
        f1[model["name"]] = {
            ",": _interval(s["punct_f1"][","]),
            ".": _interval(s["punct_f1"]["."]),
            "cap": _interval(s["cap_f1"]),
            "macro": _interval(s["macro_f1"]),
        }
        above[model["name"]] = sum(1 for v in s["punct_f1"].values() if v["value"] > 0)
        num_marks = len(s["punct_f1"])
    run = read_run_json(path)
    return ItnRun(
        path=Path(path),
        seed=results.get("seed", run.get("seed")),
        split=split,
        f1=f1,
        marks_above_zero=above,
        num_marks=num_marks,
        counts=results["splits"][split],
        bootstrap=results.get("bootstrap", {}),
        alphas={m["name"]: m["chosen_alpha"] for m in results["models"] if m.get("chosen_alpha")},
        am_dev_wer=results.get("acoustic_model", {}).get("wer", {}).get("dev"),
        recognition_wer=results.get("recognition", {}).get("wer"),
        wall_seconds=run.get("wall_seconds"),
        vs_baseline={
            m["name"]: _interval(m["scores"][split]["macro_f1_vs_baseline"])
            for m in results["models"]
            if "macro_f1_vs_baseline" in m["scores"][split]
        },
        baseline=next(
            (m["scores"][split]["baseline"] for m in results["models"] if "baseline" in m["scores"][split]), None
        ),
        stages=run.get("stages"),
        machine_speed=machine_speed_cell(run),
    )


def row_names(runs: Sequence[ItnRun]) -> list[str]:
    """The rows of every run, in the order they first appear."""
    return list(dict.fromkeys(name for r in runs for name in r.f1))


def percent(run: ItnRun, row: str, key: str) -> float | None:
    """F1 of a row in percent, or the count of marks above 0 (key MARKS_ABOVE_ZERO); None if the run lacks the row."""
    if row not in run.f1:
        return None
    return float(run.marks_above_zero[row]) if key == MARKS_ABOVE_ZERO else 100 * run.f1[row][key].value


def interval_cell(iv: Interval) -> str:
    """ "52.0 (41.5-60.9)": F1 and its 95 % interval in percent."""
    return f"{100 * iv.value:.1f} ({100 * iv.low:.1f}-{100 * iv.high:.1f})"


def difference_cell(iv: Interval | None) -> str:
    """ "+5.2 (+3.0, +7.4)": a difference of F1 and its paired 95 % interval in points; "—" for none."""
    return "—" if iv is None else f"{100 * iv.value:+.1f} ({100 * iv.low:+.1f}, {100 * iv.high:+.1f})"


def baseline_of(runs: Sequence[ItnRun]) -> str | None:
    """The baseline row of the paired differences when every run recorded them against the same one, else None."""
    baselines = {r.baseline for r in runs}
    return baselines.pop() if len(baselines) == 1 else None


def difference_header(baseline: str) -> str:
    return f"macro F1 minus {baseline} (paired)"


def f1_rows(runs: Sequence[ItnRun]) -> list[list[str]]:
    """One row per model: each F1 with its interval (one run) or mean ± sd over the runs, the marks above 0, and
    when the runs recorded them the paired macro-F1 differences to the baseline."""
    rows = []
    baseline = baseline_of(runs)
    for row in row_names(runs):
        if len(runs) == 1:
            run = runs[0]
            cells = [interval_cell(run.f1[row][key]) for key, _ in F1_COLUMNS]
            cells.append(f"{run.marks_above_zero[row]} of {run.num_marks}")
            if baseline:
                cells.append(difference_cell(run.vs_baseline.get(row)))
        else:
            cells = [mean_sd_cell([percent(r, row, key) for r in runs]) for key, _ in F1_COLUMNS]
            cells.append(mean_sd_cell([percent(r, row, MARKS_ABOVE_ZERO) for r in runs]))
            if baseline:
                values = [100 * r.vs_baseline[row].value if row in r.vs_baseline else None for r in runs]
                cells.append("—" if row == baseline else mean_sd_cell(values))
        rows.append([row] + cells)
    return rows


def per_run_cell(run: ItnRun, row: str, key: str) -> str:
    """A run's F1 in percent; macro F1 with its bootstrap 95 % interval, so that each run's intervals of two models
    can be compared; the count of marks above 0 (key MARKS_ABOVE_ZERO)."""
    if key == "macro" and row in run.f1:
        return interval_cell(run.f1[row][key])
    return number(percent(run, row, key), 0 if key == MARKS_ABOVE_ZERO else 1)


def per_run_rows(runs: Sequence[ItnRun]) -> list[list[str]]:
    """One row per model and column of the first table, one column per run (F1 in percent)."""
    rows = []
    for row in row_names(runs):
        for key, header in F1_COLUMNS + ((MARKS_ABOVE_ZERO, MARKS_ABOVE_ZERO),):
            rows.append([row, header] + [per_run_cell(r, row, key) for r in runs])
        baseline = baseline_of(runs)
        if baseline and row != baseline:
            rows.append([row, difference_header(baseline)] + [difference_cell(r.vs_baseline.get(row)) for r in runs])
    return rows


def counts_cell(run: ItnRun) -> str:
    """ "36 (610 words, 574 scored)": the split's segments and words."""
    c = run.counts
    return f"{c['segments']} ({c['words']} words, {c['scored_words']} scored)"


def fact_rows(runs: Sequence[ItnRun]) -> list[list[str]]:
    """Per-run facts: segments and words, first-word rule, the WERs and ensemble alphas where recorded, wall time."""
    several = len(runs) > 1
    split = runs[0].split
    rows = [
        [f"{split} segments (words, scored words)"] + [counts_cell(r) for r in runs] + ([""] if several else []),
        ["first word of each segment"] + [r.counts["first_word"] for r in runs] + ([""] if several else []),
    ]
    numeric = [
        ("AM dev WER (%, greedy CTC)", [r.am_dev_wer for r in runs], number),
        ("recognition WER (%, long recordings)", [r.recognition_wer for r in runs], number),
    ]
    for row in list(dict.fromkeys(name for r in runs for name in r.alphas)):
        for head in ("punct", "case"):
            numeric.append(
                (f"{row}: {head} alpha chosen on dev", [r.alphas.get(row, {}).get(head) for r in runs], number)
            )
    numeric.append(("wall time", [r.wall_seconds for r in runs], duration))
    for label, values, fmt in numeric:
        if any(v is not None for v in values):  # a fact no run recorded is left out
            rows.append([label] + [fmt(v) for v in values] + ([mean_sd_cell(values, fmt)] if several else []))
    rows += machine_speed_rows([r.machine_speed for r in runs], several)
    return rows


def render_itn_tables(runs: Sequence[ItnRun], brief: bool = False) -> str:
    """F1 per model (with intervals, or mean ± sd), then per-run F1 when several runs, then the runs' facts;
    ``brief``: the first table alone."""
    header = ["Model"] + [h for _, h in F1_COLUMNS] + [f"marks (of {runs[0].num_marks}) with F1 > 0"]
    if baseline_of(runs):
        header.append(difference_header(baseline_of(runs)))
    lines = markdown_table(header, f1_rows(runs), text_columns=1)
    if brief:
        return "\n".join(lines) + "\n"
    names = [r.name for r in runs]
    if len(runs) > 1:
        lines += [""] + markdown_table(["Model", "F1"] + names, per_run_rows(runs), text_columns=2)
        names.append("mean ± sd")
    lines += [""] + markdown_table(["Run"] + names, fact_rows(runs), text_columns=1)
    if any(r.stages for r in runs):
        header, rows = stage_rows([r.name for r in runs], [r.stages for r in runs])
        lines += [""] + markdown_table(header, rows, text_columns=1)
    return "\n".join(lines) + "\n"


def itn_caption(runs: Sequence[ItnRun], command: str = "", brief: bool = False) -> str:
    """The line under the tables (``brief``: under the first table alone): what they show and where they come
    from."""
    split, boot = runs[0].split, runs[0].bootstrap
    text = f"{split.capitalize()} set, F1 in percent"
    if len(runs) == 1:
        text += (
            f" with bootstrap 95 % intervals ({boot.get('num_resamples', '?')} resamples of the segments, "
            f"seed {boot.get('seed', '?')})"
        )
    else:
        text += "; mean ± sd over the runs (sd = sample standard deviation), each run's values " + (
            "in its RESULTS.md"
            if brief
            else "in the second table"
            f" (macro F1 with its bootstrap 95 % interval, {boot.get('num_resamples', '?')} resamples of the"
            " segments)"
        )
    text += (
        f"; macro F1 = mean F1 of the {runs[0].num_marks} marks; first word of each segment "
        f"{'not scored' if runs[0].counts['first_word'] == 'exclude' else 'scored'}."
    )
    if baseline_of(runs):
        text += (
            f" Macro F1 minus {baseline_of(runs)}: the difference in points on the same segments, with a paired"
            " bootstrap 95 % interval (both models resampled with the same draws)."
        )
    other = sorted(
        {f"{name} ({c['segments']} segments)" for r in runs for name, c in r.counts.get("other_counts", {}).items()}
    )
    if other:
        text += f" Rows scored on other segments than the first: {', '.join(other)}."
    if any(r.stages for r in runs) and not brief:
        text += STAGES_NOTE
    text += f" Generated by `punct.bin.results_table` from {len(runs)} results.json (an ITN recipe's scoring stage)"
    return text + (f" of `{command}`.\n" if command else ".\n")


def group_rows(groups: dict[str, Sequence[ItnRun]]) -> list[list[str]]:
    """One row per model and F1, one column per condition (mean ± sd over its runs, or one run's value), then the
    conditions' wall times, stage times and seeds."""
    every_run = [r for runs in groups.values() for r in runs]
    rows = []
    for row in row_names(every_run):
        for key, header in F1_COLUMNS:
            rows.append([row, header] + [runs_cell([percent(r, row, key) for r in runs]) for runs in groups.values()])
    rows.append(["wall time", ""] + [runs_cell([r.wall_seconds for r in runs], duration) for runs in groups.values()])
    numbers = sorted({s["stage"] for r in every_run for s in r.stages or []}, key=int)
    for number_ in numbers:
        cells = []
        for runs in groups.values():
            seconds = [next((s["seconds"] for s in r.stages or [] if s["stage"] == number_), None) for r in runs]
            cells.append(runs_cell(seconds, duration))
        rows.append([f"stage {number_}", ""] + cells)
    rows.append(["seeds", ""] + [", ".join(str(r.seed) for r in runs) for runs in groups.values()])
    return rows


def render_itn_groups(groups: dict[str, Sequence[Path]], split: str, command: str = "") -> str:
    """The table of a region with groups (condition -> results.json files; a column per condition) and its
    caption: e.g. the same recipe before and after a change."""
    runs = {name: [read_itn_run(p, split) for p in paths] for name, paths in groups.items()}
    lines = markdown_table(["Model", "F1"] + list(groups), group_rows(runs), text_columns=2)
    first = next(iter(runs.values()))[0]
    caption = (
        f"{split.capitalize()} set, F1 in percent, mean ± sample sd over each condition's runs, or a single run's"
        f" value; macro F1 = mean F1 of the {first.num_marks} marks. Wall and stage times per run, mean ± sd: from"
        " a stage's log line to the next stage's (run.json's stages). Generated by `punct.bin.results_table` from"
        f" {sum(len(p) for p in groups.values())} results.json"
    )
    return "\n".join(lines) + "\n\n" + caption + (f" of `{command}`.\n" if command else ".\n")


def itn_summary(runs: Sequence[ItnRun]) -> dict:
    """Machine-readable summary: per model the runs' F1 ("," "." "cap" "macro"; fractions) and marks above 0,
    each with mean and sample sd, and the same for the per-run facts."""
    models = {}
    for row in row_names(runs):
        models[row] = {
            "f1": {key: spread([r.f1[row][key].value if row in r.f1 else None for r in runs]) for key, _ in F1_COLUMNS},
            "marks_above_zero": spread([r.marks_above_zero.get(row) for r in runs]),
            "macro_minus_baseline": spread([r.vs_baseline[row].value if row in r.vs_baseline else None for r in runs]),
        }
    return {
        "kind": KIND,
        "split": runs[0].split,
        "sd": "sample standard deviation (n - 1)",
        "runs": [
            {
                "name": r.name,
                "seed": r.seed,
                "results": str(r.path),
                **{k: r.counts.get(k) for k in ("first_word", "segments", "words", "scored_words")},
            }
            for r in runs
        ],
        "models": models,
        "per_run": {
            "am_dev_wer_percent": spread([r.am_dev_wer for r in runs]),
            "recognition_wer_percent": spread([r.recognition_wer for r in runs]),
            "wall_seconds": spread([r.wall_seconds for r in runs]),
        },
    }


# ---- RESULTS.md tables (punct.bin.score_itn) --------------------------------------------------------

# Table 5.1's row order: the marks by frequency in the thesis' training set.
THESIS_CLASS_ORDER: tuple[str, ...] = (",", ".", "-", "?", ":", '"', "!", ";")


def class_order(train_counts: dict[str, int] | None = None) -> list[str]:
    """Marks sorted by training frequency (Table 5.1); the thesis' order without counts."""
    if not train_counts:
        return list(THESIS_CLASS_ORDER)
    return sorted(PUNCT9.classes[1:], key=lambda c: (-train_counts.get(c, 0), PUNCT9.classes.index(c)))


EFFICIENTPUNCT_ROW = "EfficientPunct"


def results_table(scores: dict[str, ItnScores], order: Sequence[str], placeholder_rows: Sequence[str] = ()) -> str:
    """Table 5.1 with the models as rows: F1 (95 % interval) of every mark and [cap], macro F1.
    ``placeholder_rows`` are models not scored yet (a row of dashes, to be filled in)."""
    cols = [f"[{c}]" for c in order] + ["[cap]", "macro F1"]
    lines = ["| Model | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for name, s in scores.items():
        cells = [s.punct_f1[c].fmt() for c in order] + [s.cap_f1.fmt(), s.macro_f1.fmt()]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for name in placeholder_rows:
        lines.append(f"| {name} | " + " | ".join("—" for _ in cols) + " |")
    return "\n".join(lines) + "\n"


def detection_table(scores: dict[str, ItnScores]) -> str:
    lines = [
        "| Model | PDP | PDR | PDP short 25 % | PDR short 25 % | PDP long 25 % | PDR long 25 % | overall F1 (micro) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in scores.items():
        d = s.detection
        lines.append(
            f"| {name} | {100 * d['all']['pdp']:.2f} | {100 * d['all']['pdr']:.2f} | {100 * d['short']['pdp']:.2f} | "
            f"{100 * d['short']['pdr']:.2f} | {100 * d['long']['pdp']:.2f} | {100 * d['long']['pdr']:.2f} | "
            f"{100 * s.punct_scores['overall']['f1']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def length_table(scores: dict[str, ItnScores]) -> str:
    bins = []
    for s in scores.values():
        for b in s.by_length:
            key = (b["min_words"], b["max_words"])
            if key not in bins:
                bins.append(key)
    bins.sort(key=lambda k: k[0])
    head = [f"{lo}-{hi}" if hi is not None else f"{lo}+" for lo, hi in bins]
    lines = ["| Model | " + " | ".join(f"{h} words" for h in head) + " |", "|---|" + "---:|" * len(bins)]
    for name, s in scores.items():
        got = {(b["min_words"], b["max_words"]): b for b in s.by_length}
        cells = [f"{100 * got[k]['detection_f1']:.1f} (n={got[k]['segments']})" if k in got else "—" for k in bins]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def paired_table(scores: dict[str, ItnScores]) -> str:
    """Macro F1 minus the baseline's with its paired 95 % interval, one row per compared model ("" without any)."""
    rows = [(name, s) for name, s in scores.items() if s.macro_f1_vs_baseline is not None]
    if not rows:
        return ""
    lines = [
        f"| Model | macro F1 minus {rows[0][1].baseline}'s (paired 95 % interval) | interval above 0 |",
        "|---|---:|---|",
    ]
    for name, s in rows:
        lines.append(
            f"| {name} | {s.macro_f1_vs_baseline.fmt()} | {'yes' if s.macro_f1_vs_baseline.low > 0 else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def header_lines(num_resamples: int, seed: int) -> list[str]:
    """RESULTS.md's opening paragraph."""
    return [
        "# Punctuation and capitalisation (speech-informed ITN, stage 6)",
        "",
        f"F1 in % with bootstrap 95 % confidence intervals ({num_resamples} resamples of the segments, seed "
        f"{seed}); macro F1 = mean over the 8 marks (blank excluded). Marks ordered by training frequency. "
        "PDP/PDR: punctuation detection precision/recall (any mark vs. none), also on the shortest and longest 25 % "
        "of the segments. Without EfficientPunct rows an EfficientPunct placeholder row is shown "
        f"(rows whose names start with `{EFFICIENTPUNCT_ROW}` replace it). Every number is also in "
        "`results.json` (`python -m punct.bin.results_table` makes the README table from it).",
        "",
    ]


def split_lines(
    split: str, scores: dict[str, ItnScores], rule: str, order: list[str], placeholders: list[str]
) -> list[str]:
    """RESULTS.md's section of one split."""
    any_s = next(iter(scores.values()))
    paired = paired_table(scores)
    return [
        f"## {split} ({any_s.num_segments} segments, {any_s.num_words} words, {any_s.scored_words} scored)",
        "",
        FIRST_WORD_NOTES[rule],
        "",
        "### F1 per class (Table 5.1)",
        "",
        results_table(scores, order, placeholders),
        *(["### Macro F1 against the baseline (paired bootstrap)", "", paired] if paired else []),
        "### Punctuation detection",
        "",
        detection_table(scores),
        "### Punctuation detection F1 by input length (Figure 5.33)",
        "",
        length_table(scores),
        f"Plots: `plots/confusion_{{punct,case}}_<model>_{split}.png`, `plots/attention_<model>_{split}_<k>.png`, "
        f"`plots/f1_by_length_{split}.png`.",
        "",
    ]


@dataclass(frozen=True)
class Bootstrap:
    num_resamples: int = 1000
    seed: int = 42


def score_split(
    models: Sequence[tuple[Path, str]],
    split: str,
    first_word: str | None,
    baseline: str,
    bootstrap: Bootstrap,
    edges: Sequence[int],
    max_attention_plots: int,
    out: Path,
) -> tuple[dict[str, ItnScores], str]:
    """Scores every model on ``split`` under one first-word rule (``first_word``, or None: the rule the
    predictions were written under); writes the scores and plots under ``out``; returns the scores and the rule."""
    predictions = {name: itn.read_predictions(path / "decode" / f"{split}.jsonl") for path, name in models}
    try:
        rule = itn.scoring_rule([s for segs in predictions.values() for s in segs], first_word)
    except ValueError as e:
        rules = {name: sorted({s.first_word for s in segs}) for name, segs in predictions.items()}
        raise ValueError(f"{split}: {e} (rules written per model: {rules})") from None
    scores: dict[str, ItnScores] = {}
    for _path, name in models:
        scores[name] = itn.score_itn(predictions[name], bootstrap.num_resamples, bootstrap.seed, edges, rule)
    if baseline in scores:
        skipped = itn.compare_with_baseline(
            predictions, scores, baseline, rule, bootstrap.num_resamples, bootstrap.seed
        )
        for name in skipped:
            logging.warning("%s %s: its segments are not %s's: no paired difference", name, split, baseline)
    else:
        logging.info("%s: no model named %r: no paired differences", split, baseline)
    for path, name in models:
        s = scores[name]
        atomic_write_text(out / score_file(name, split), json.dumps(s.to_dict(), indent=1) + "\n")
        logging.info(
            "%s %s: %d segments, first word: %s, macro F1 %s, [cap] F1 %s, PDP %.3f PDR %.3f%s",
            name,
            split,
            s.num_segments,
            rule,
            s.macro_f1.fmt(),
            s.cap_f1.fmt(),
            s.detection["all"]["pdp"],
            s.detection["all"]["pdr"],
            "" if s.macro_f1_vs_baseline is None else f", minus {baseline}'s {s.macro_f1_vs_baseline.fmt()} (paired)",
        )
        plot_itn_model(path, name, safe(name), split, s, max_attention_plots, out / "plots")
    plot_f1_by_length(
        scores, f"{split}: punctuation detection F1 by input length", out / "plots" / f"f1_by_length_{split}.png"
    )
    return scores, rule
