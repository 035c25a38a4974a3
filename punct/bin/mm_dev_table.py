"""Dev table of cross-attention trainings (punct.bin.train_mm exp folders): per training the epoch the dev loss
picks with its dev macro F1, [cap] F1 and marks with F1 > 0, the epoch the dev macro F1 picks, the last epoch, and
the average of the last epochs where the training made one (``average_epochs`` > 1) -- the numbers that decide
conf/mm*.yaml values on dev (egs/parczech/local/mm_variants.sh).  With ``--by-model`` a second table follows: the
trainings grouped by their folder name without its ``_s<seed>`` ending, each rule's dev scores as mean ± sd.

  python -m punct.bin.mm_dev_table exp/mm exp/var/*_s*          # a Markdown table on stdout
  python -m punct.bin.mm_dev_table --by-model RUNS/*_s*          # and the rules' means per model
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

from punct.results.tables import markdown_table as markdown_lines
from punct.results.tables import mean_sd, runs_cell

COLUMNS = (
    "training",
    "dev-loss epoch",
    "its dev macro F1",
    "its [cap] F1",
    "marks > 0",
    "dev loss",
    "dev-F1 epoch",
    "its dev macro F1",
    "last epoch's",
    "average's macro F1",
    "average's [cap] F1",
)


def training_row(exp_dir: Path) -> list[str]:
    """One training's row: F1s in percent with one decimal (``-`` where the training made no average)."""
    history = json.loads((exp_dir / "history.json").read_text())
    if not history:
        raise ValueError(f"{exp_dir / 'history.json'}: no epochs")
    by_loss = min(history, key=lambda r: r["dev_loss"])
    by_f1 = max(history, key=lambda r: r["dev_macro_f1"])
    best = json.loads((exp_dir / "best-valid-f1.json").read_text())
    averaged = "averaged_epochs" in best
    average_f1 = best["dev_punct"]["macro_f1"] if averaged else math.nan
    average_cap = best["dev_case"]["per_class"]["cap"]["f1"] if averaged else math.nan
    marks = sum(1 for key, value in by_loss.items() if key.startswith("dev_f1_") and value > 0)

    def percent(value: float) -> str:
        return "-" if math.isnan(value) else f"{100 * value:.1f}"

    return [
        exp_dir.name,
        str(by_loss["epoch"]),
        percent(by_loss["dev_macro_f1"]),
        percent(by_loss["dev_cap_f1"]),
        str(marks),
        f"{by_loss['dev_loss']:.4f}",
        str(by_f1["epoch"]),
        percent(by_f1["dev_macro_f1"]),
        percent(history[-1]["dev_macro_f1"]),
        percent(average_f1),
        percent(average_cap),
    ]


def markdown_table(exp_dirs: list[Path]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(training_row(d)) + " |" for d in exp_dirs]
    return "\n".join(lines) + "\n"


MODEL_COLUMNS = (
    "model",
    "trainings",
    "dev-loss epoch: macro F1",
    "its [cap] F1",
    "last epoch: macro F1",
    "its [cap] F1",
    "last minus dev-loss epoch",
    "dev-F1 epoch (picked on these numbers)",
)


def model_name(exp_dir: Path) -> str:
    """A training's model: its folder name without the ``_s<seed>`` ending."""
    return re.sub(r"_s\d+$", "", exp_dir.name)


def signed_cell(values: list[float]) -> str:
    """ "+3.4 ± 0.7" over several values; one value alone."""
    if len(values) == 1:
        return f"{values[0]:+.1f}"
    mean, sd = mean_sd(values)
    return f"{mean:+.1f} ± {sd:.1f}"


def model_rows(exp_dirs: list[Path]) -> list[list[str]]:
    """Per model (in order of first appearance) each rule's dev scores over its trainings, in percent."""
    groups: dict[str, list[list[dict]]] = {}
    for exp_dir in exp_dirs:
        history = json.loads((exp_dir / "history.json").read_text())
        if not history:
            raise ValueError(f"{exp_dir / 'history.json'}: no epochs")
        groups.setdefault(model_name(exp_dir), []).append(history)
    rows = []
    for name, histories in groups.items():
        by_loss = [min(h, key=lambda r: r["dev_loss"]) for h in histories]
        last = [h[-1] for h in histories]
        by_f1 = [max(h, key=lambda r: r["dev_macro_f1"]) for h in histories]

        def cell(records: list[dict], key: str) -> str:
            return runs_cell([100 * r[key] for r in records])

        gain = [100 * (b["dev_macro_f1"] - a["dev_macro_f1"]) for a, b in zip(by_loss, last)]
        rows.append(
            [
                name,
                str(len(histories)),
                cell(by_loss, "dev_macro_f1"),
                cell(by_loss, "dev_cap_f1"),
                cell(last, "dev_macro_f1"),
                cell(last, "dev_cap_f1"),
                signed_cell(gain),
                cell(by_f1, "dev_macro_f1"),
            ]
        )
    return rows


def model_table(exp_dirs: list[Path]) -> str:
    """:func:`model_rows` as a Markdown table (mean ± sample sd over a model's trainings; one alone)."""
    return "\n".join(markdown_lines(MODEL_COLUMNS, model_rows(exp_dirs), 1)) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "exp_dirs", type=Path, nargs="+", help="train_mm exp folders (history.json, best-valid-f1.json)"
    )
    parser.add_argument(
        "--by-model", action="store_true", help="then each rule's mean ± sd per model (folder name without _s<seed>)"
    )
    args = parser.parse_args(argv)
    print(markdown_table(args.exp_dirs), end="")
    if args.by_model:
        print()
        print(model_table(args.exp_dirs), end="")


if __name__ == "__main__":
    main()
