"""Per-hour growth of a recipe's stages: straight lines fitted to ``benchmarks/bench_scale.py``'s figures, their
extrapolation to a real corpus, and the tables of ``benchmarks/README.md`` and ``docs/scaling.md``
(``punct.bin.results_table --regions``: ``egs/*/RESULTS/regions.yaml``, kind ``scale``).

The JSON (``egs/<recipe>/RESULTS/scale/scale.json``)::

    {"kind": "scale", "recipe": "mustc", "command": "...", "commit": "...", "machine": {...}, "nj": 2,
     "epochs": {"am": 3, "bert": 1, "tdnn": 1},
     "sizes": [{"size": "1h", "corpus": {"train": {"hours": 1.2, "segments": 530, "words": 13000}, ...},
                "stages": [{"stage": 0, "wall_seconds": 20.1, "cpu_seconds": 35.2, "peak_rss_mb": 310.0,
                            "read_mb": ..., "written_mb": ..., "folders_mb": {"data": ..., "exp": ...},
                            "processes": {"punct.bin.align --merge": {"peak_rss_mb": 250.1, "processes": 1}, ...}},
                           ...]}, ...],
     "fits": {"<stage>": {"<figure>": {"per_hour": 3.2, "at_zero": 10.0, "r2": 0.99}, ...}, ...}}

The x of every fit is the training split's hours (dev and test stay the mini corpus'), as MuST-C's training split
is nearly all of its 400 h.  For egs/parczech (``corpus``: train, dev and test of ``data/segments/stats.json``, and
the recordings' ``audio``) it is the segment dataset's training hours: the sum of the training segments' durations,
after stage 3's alignment and filters, not the hours of audio synthesised for the training speakers (dev and test are
3 speakers each at every size).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

KIND = "scale"
FIGURES = ("wall_seconds", "cpu_seconds", "peak_rss_mb", "written_mb", "read_mb", "disk_mb")
TARGET_HOURS = {"MuST-C (400 h)": 400.0, "ParCzech (1,000 h)": 1000.0}
STAGE_NAMES = {
    "mustc": {
        0: "corpus, manifests",
        1: "MFCC + CMVN",
        2: "AM training",
        3: "alignment",
        4: "layer-12 dump",
        5: "BERT fine-tuning",
        6: "BERT vectors",
        7: "punctuation TDNN",
        8: "scoring",
    },
    "parczech": {
        0: "corpus, manifests",
        1: "AM training",
        2: "recognition",
        3: "alignment, segments",
        4: "text + cross-attention models",
        5: "EfficientPunct",
        6: "scoring",
    },
}
# what the models of each recipe's run are (egs/parczech: the small corpus' configs)
MODELS = {"mustc": "mini models", "parczech": "small models"}
EPOCH_NAMES = {"am": "AM", "bert": "BERT", "mm": "stage-4 models", "tdnn": "TDNN"}


def train_hours(size: dict) -> float:
    return size["corpus"]["train"]["hours"]


def disk_mb(size: dict, index: int) -> float:
    """What stage ``index`` of a size wrote (MB): its output folders (``outputs_mb``), else what it added to data/
    and exp/ (negative when it removed more)."""
    if "outputs_mb" in size["stages"][index]:
        return size["stages"][index]["outputs_mb"]
    after = sum(size["stages"][index]["folders_mb"].values())
    before = sum(size["stages"][index - 1]["folders_mb"].values()) if index else 0.0
    return after - before


def stage_figure(size: dict, index: int, figure: str) -> float:
    return disk_mb(size, index) if figure == "disk_mb" else size["stages"][index][figure]


def fit_line(hours: Sequence[float], values: Sequence[float]) -> dict[str, float]:
    """Least squares ``value = at_zero + per_hour * hours``, with its r^2 (1.0 when the values do not vary)."""
    x, y = np.asarray(hours, dtype=float), np.asarray(values, dtype=float)
    per_hour, at_zero = np.polyfit(x, y, 1)
    residual = float(((y - (at_zero + per_hour * x)) ** 2).sum())
    total = float(((y - y.mean()) ** 2).sum())
    return {
        "per_hour": round(float(per_hour), 4),
        "at_zero": round(float(at_zero), 2),
        "r2": round(1.0 - residual / total, 4) if total > 0 else 1.0,
    }


def ran(sizes: Sequence[dict], index: int) -> list[dict]:
    """The sizes whose stage ``index`` ran (a larger size may have taken a smaller one's trained model)."""
    return [size for size in sizes if "skipped" not in size["stages"][index]]


def fit_sizes(sizes: Sequence[dict]) -> dict[str, dict[str, dict[str, float]]]:
    """A line per stage and figure over the sizes that ran it (keys: the stage as a string)."""
    fits = {}
    for index, stage in enumerate(sizes[0]["stages"]):
        measured = ran(sizes, index)
        hours = [train_hours(size) for size in measured]
        fits[str(stage["stage"])] = {
            figure: fit_line(hours, [stage_figure(size, index, figure) for size in measured]) for figure in FIGURES
        }
    return fits


def at_hours(fit: dict[str, float], hours: float) -> float:
    return fit["at_zero"] + fit["per_hour"] * hours


def process_growth(sizes: Sequence[dict]) -> list[tuple[int, str, float, float, float, float]]:
    """(stage, process kind, smallest and largest training hours that ran the stage, the kind's peak RSS MB at
    each) of every kind seen at both."""
    rows = []
    for index in range(len(sizes[0]["stages"])):
        measured = ran(sizes, index)
        small, large = measured[0], measured[-1]
        stage_small, stage_large = small["stages"][index], large["stages"][index]
        for kind, figures in stage_small["processes"].items():
            if kind in stage_large["processes"]:
                peak_large = stage_large["processes"][kind]["peak_rss_mb"]
                hours = (train_hours(small), train_hours(large))
                rows.append((stage_small["stage"], kind, *hours, figures["peak_rss_mb"], peak_large))
    return rows


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if i else "---" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _stage_label(data: dict, stage: int) -> str:
    name = STAGE_NAMES.get(data["recipe"], {}).get(stage, "")
    return f"{stage} {name}".strip()


def _measured_cell(stage: dict) -> str:
    return "(trained smaller)" if "skipped" in stage else f"{stage['wall_seconds']:.0f} / {stage['peak_rss_mb']:.0f}"


def render_measured(data: dict) -> str:
    """Wall seconds and peak RSS (largest process) per stage and size, as measured."""
    sizes = data["sizes"]
    header = ["stage"] + [f"{train_hours(s):.2f} h: wall s / peak MB" for s in sizes]
    rows = []
    for index, stage in enumerate(sizes[0]["stages"]):
        cells = [_measured_cell(size["stages"][index]) for size in sizes]
        rows.append([_stage_label(data, stage["stage"])] + cells)
    return _table(header, rows)


def render_fits(data: dict) -> str:
    """Per stage: per-hour slopes of wall, CPU, disk and peak RSS, and wall and disk extrapolated."""
    header = ["stage", "wall s/h", "CPU s/h", "disk MB/h", "peak MB/h", "peak MB at the largest"]
    header += [f"wall h, {name}" for name in TARGET_HOURS] + [f"disk GB, {name}" for name in TARGET_HOURS]
    rows = []
    for index, (stage, fits) in enumerate(data["fits"].items()):
        peak_largest = ran(data["sizes"], index)[-1]["stages"][index]["peak_rss_mb"]
        cells = [
            f"{fits['wall_seconds']['per_hour']:.1f}",
            f"{fits['cpu_seconds']['per_hour']:.1f}",
            f"{fits['disk_mb']['per_hour']:.1f}",
            f"{fits['peak_rss_mb']['per_hour']:.1f}",
            f"{peak_largest:.0f}",
        ]
        cells += [f"{at_hours(fits['wall_seconds'], h) / 3600:.1f}" for h in TARGET_HOURS.values()]
        cells += [f"{at_hours(fits['disk_mb'], h) / 1000:.1f}" for h in TARGET_HOURS.values()]
        rows.append([_stage_label(data, int(stage))] + cells)
    return _table(header, rows)


def render_processes(data: dict) -> str:
    """Peak RSS per kind of process at the smallest and the largest size that ran its stage, and their ratio."""
    header = ["stage", "process", "hours", "peak MB", "ratio"]
    rows = [
        [
            str(stage),
            f"`{kind}`",
            f"{h_small:.2f} -> {h_large:.2f}",
            f"{small:.0f} -> {large:.0f}",
            f"{large / small:.2f}",
        ]
        for stage, kind, h_small, h_large, small, large in process_growth(data["sizes"])
        if max(small, large) >= 50  # the shells' helpers and short scripts: not what a job's memory request is for
    ]
    return _table(header, rows)


def measured_when(data: dict) -> str:
    """When and at which commits the stages ran (a re-run measures only the stages whose figures are missing)."""
    stages = [stage for size in data["sizes"] for stage in size["stages"] if "finished" in stage]
    if not stages:
        return f"at {data['commit']}, {data['began']}"
    commits = ", ".join(dict.fromkeys(stage["commit"] for stage in stages))
    times = sorted(stage["finished"] for stage in stages)
    return f"stages run at {commits}, {times[0]} to {times[-1]}"


def render_tables(data: dict, names: Sequence[str] | None = None) -> str:
    """The tables of one recipe's scaling run: measured, fitted, per process."""
    machine = data["machine"]
    facts = (
        f"**egs/{data['recipe']}**: `{data['command']}`, {measured_when(data)}; "
        f"{machine['cpu']} ({machine['cpu_kind']}, "
        f"{machine['cores']} cores), --nj {data['nj']}, epochs "
        + ", ".join(f"{EPOCH_NAMES.get(model, model)} {epochs}" for model, epochs in data["epochs"].items())
        + f" ({MODELS.get(data['recipe'], 'mini models')})."
    )
    return "\n".join(
        [
            facts + "\n",
            "Measured, per stage and training hours (wall seconds / peak RSS of the largest process, MB):\n",
            render_measured(data),
            f"Fitted per hour of training speech, and extrapolated (wall on this machine's cores, "
            f"{MODELS.get(data['recipe'], 'mini models')}):\n",
            render_fits(data),
            "Peak RSS of each kind of process, smallest and largest size:\n",
            render_processes(data),
        ]
    )


def render(paths: Sequence[Path], command: str = "") -> str:
    """The region of scaling JSONs (one per recipe; each records its own command)."""
    return "\n".join(render_tables(json.loads(Path(path).read_text(encoding="utf-8"))) for path in paths)


def fits_table(paths: Sequence[Path], command: str = "", split: str = "") -> str:
    """benchmarks/README.md's table (``table: fits``): the per-hour slopes and extrapolation alone."""
    parts = []
    for path in paths:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        parts.append(f"**egs/{data['recipe']}** (`{data['command']}`, {data['machine']['cpu_kind']}):\n")
        parts.append(render_fits(data))
    return "\n".join(parts)


TABLES = {"fits": fits_table}
