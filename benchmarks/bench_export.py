#!/usr/bin/env python3
"""Size of an exported EfficientPunct model folder (punct.inference.model_folder) at mini and paper size, by part,
with the time to export it and to load it (``Punctuator.from_model_dir``).

The models are randomly initialised at the recipe's dimensions (mini: conf/am_mini.yaml, a MiniLM-L6-sized text
encoder, conf/tdnn_mini.yaml; paper: conf/am.yaml, BERT-base, conf/tdnn.yaml): a folder's size depends on the
dimensions, not on the weights.  The tokenizer is the offline MiniLM's (bert-base-uncased's vocabulary).

  python benchmarks/bench_export.py
Writes benchmarks/results/export.json.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import common  # noqa: E402
import torch

from benchmarks.random_models import save_recipe
from punct.inference.model_folder import export_efficientpunct, folder_bytes, read_model_folder
from punct.inference.pipeline import Punctuator
from punct.inference.recipe import recipe_paths

PARTS = {"am": "acoustic model", "bert": "text model", "tdnn": "punctuation TDNN"}


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="mini,paper", help="model sizes to export")
    return parser


def measure(size: str, root: Path) -> dict:
    """Export a random recipe of ``size``; bytes per part, seconds to export and to load."""
    save_recipe(root / "recipe", common.random_models(size), alpha=0.4)
    start = time.perf_counter()
    export_efficientpunct(recipe_paths(root / "recipe"), root / "model", alpha=0.4, word_vectors="fine-tuned")
    export_seconds = time.perf_counter() - start
    model = read_model_folder(root / "model")
    by_part = {part: 0 for part in (*PARTS, "other")}
    for name, entry in model.files.items():
        top = name.split("/", 1)[0]
        by_part[top if top in PARTS else "other"] += entry["bytes"]
    start = time.perf_counter()
    Punctuator.from_model_dir(root / "model")
    load_seconds = time.perf_counter() - start
    return {
        "size": size,
        "bytes": folder_bytes(model),
        "bytes_by_part": by_part,
        "files": len(model.files),
        "export_seconds": export_seconds,
        "load_seconds": load_seconds,
    }


def main() -> None:
    args = get_parser().parse_args()
    torch.set_num_threads(1)
    rows = []
    for size in args.sizes.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(measure(size, Path(tmp)))
    common.print_table(
        "Exported model folder (random weights at the recipe's dimensions)",
        ["size", "MB", *(f"{PARTS.get(p, p)} MB" for p in (*PARTS, "other")), "export s", "load s"],
        [
            [
                r["size"],
                r["bytes"] / 1e6,
                *(r["bytes_by_part"][p] / 1e6 for p in (*PARTS, "other")),
                r["export_seconds"],
                r["load_seconds"],
            ]
            for r in rows
        ],
    )
    common.write_json("export", {"machine": common.machine(), "rows": rows})


if __name__ == "__main__":
    main()
