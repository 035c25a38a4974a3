"""Dev table of cross-attention trainings (punct.bin.train_mm exp folders): per training the epoch the dev loss
picks with its dev macro F1, [cap] F1 and marks with F1 > 0, the epoch the dev macro F1 picks, the last epoch, and
the average of the last epochs where the training made one (``average_epochs`` > 1) -- the numbers that decide
conf/mm*.yaml values on dev (egs/parczech/local/mm_variants.sh).

  python -m punct.bin.mm_dev_table exp/mm exp/var/*_s*          # a Markdown table on stdout
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "exp_dirs", type=Path, nargs="+", help="train_mm exp folders (history.json, best-valid-f1.json)"
    )
    args = parser.parse_args(argv)
    print(markdown_table(args.exp_dirs), end="")


if __name__ == "__main__":
    main()
