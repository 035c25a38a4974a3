"""Stage 8 report: RESULTS.md + results.json shaped like EfficientPunct's tables, and two plots.

* Table 3 shape: rows BERT-only, TDNN, ensemble (chosen alpha, and the paper's 0.4);
  columns comma / full stop / question / overall (micro) F1 / macro F1, then the same with P/R.
* What was scored: per split, the utterances and words of the stage-0 manifest that were scored, and
  those dropped before scoring, by reason (no features, no alignment at stage 3, no posteriors ...).
* Table 4 shape: F1 per class, overall and macro for alpha = 0.0 .. 1.0 on dev and test.
* Table 5 shape: parameters of the embedding network (AM up to layer 12 + BERT encoder) and of
  the inference network (punctuation TDNN + BERT head); a count that could not be read is "n/a".
* ``f1_vs_alpha.png`` (overall and macro F1 against alpha, dev and test) and ``confusion_<system>.png``.

The JSON holds every number the markdown shows (fractions; the markdown shows percent).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np
from lhotse.utils import Pathlike

from punct.ensemble import AlphaChoice
from punct.metrics import Coverage
from punct.utils.atomic import atomic_path, atomic_write_text

MARK_NAMES = {",": "Comma", ".": "Full stop", "?": "Question"}


def _pct(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def _count(n: Optional[int]) -> str:
    return "n/a" if n is None else f"{n:,} ({n:.1e})"


def _mark_label(c: str) -> str:
    return f"{MARK_NAMES.get(c, c)} ({c})"


MAX_LISTED_DROPS = 10  # dropped utterances named in RESULTS.md (results.json lists all)


def scored_lines(splits: Dict[str, Dict]) -> List[str]:
    """Per split: what was scored out of the manifest, and the dropped utterances with their reason."""
    lines = []
    for split, info in splits.items():
        scored = Coverage.from_dict(info)
        lines.append(f"- {split} (`{scored.manifest}`): {scored.summary()}")
        dropped = list(scored.dropped_ids.items())
        for key, reason in dropped[:MAX_LISTED_DROPS]:
            lines.append(f"  - `{key}`: {reason}")
        if len(dropped) > MAX_LISTED_DROPS:
            lines.append(f"  - ... and {len(dropped) - MAX_LISTED_DROPS} more (results.json: splits.{split}.dropped_ids)")
    return lines


def f1_table(systems: Dict[str, Dict], marks: Sequence[str]) -> List[str]:
    """Table 3 shape: F1 per mark, overall (micro) and macro, one row per system."""
    lines = ["| Model | " + " | ".join(_mark_label(c) for c in marks) + " | Overall | Macro |",
             "|---|" + "---:|" * (len(marks) + 2)]
    for name, s in systems.items():
        lines.append(f"| {name} | " + " | ".join(_pct(s["per_class"][c]["f1"]) for c in marks)
                     + f" | {_pct(s['overall']['f1'])} | {_pct(s['macro_f1'])} |")
    return lines


def precision_recall_table(systems: Dict[str, Dict], marks: Sequence[str]) -> List[str]:
    lines = ["| Model | " + " | ".join(f"{c} P | {c} R" for c in marks) + " | Overall P | Overall R |",
             "|---|" + "---:|" * (2 * len(marks) + 2)]
    for name, s in systems.items():
        cells = [f"{_pct(s['per_class'][c]['precision'])} | {_pct(s['per_class'][c]['recall'])}" for c in marks]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {_pct(s['overall']['precision'])} | {_pct(s['overall']['recall'])} |")
    return lines


def alpha_table(sweep: Dict[str, List[Dict]], marks: Sequence[str], chosen_alpha: float) -> List[str]:
    """Table 4 shape: per alpha and split, F1 per mark, overall and macro; the dev choice marked."""
    splits = list(sweep)
    columns = list(marks) + ["overall", "macro"]
    lines = ["| alpha | " + " | ".join(f"{split} {c}" for split in splits for c in columns) + " |",
             "|---:|" + "---:|" * (len(splits) * len(columns))]
    for i, point in enumerate(sweep[splits[0]]):
        cells = []
        for split in splits:
            p = sweep[split][i]
            cells += [_pct(p["per_class_f1"][c]) for c in marks] + [_pct(p["overall_f1"]), _pct(p["macro_f1"])]
        chosen = " (chosen)" if abs(point["alpha"] - chosen_alpha) < 1e-9 else ""
        lines.append(f"| {point['alpha']:.1f}{chosen} | " + " | ".join(cells) + " |")
    return lines


def parameter_table(params: Dict) -> List[str]:
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


def alpha_rule(results: Dict) -> str:
    """How stage 8 chose alpha (results.json written before the rule was recorded: the argmax)."""
    choice = results.get("alpha_choice")
    return AlphaChoice(**choice).describe() if choice else "highest overall F1"


def render_markdown(results: Dict) -> str:
    marks: List[str] = results["classes"][1:]
    lines = ["# Results: EfficientPunct (BERT, punctuation TDNN, ensemble)", "", "What was scored:", ""]
    lines += scored_lines(results["splits"])
    lines.append("")
    if results.get("seed") is not None:
        lines.append(f"- seed: {results['seed']}")
    lines += [
        f"- alpha chosen on dev ({alpha_rule(results)}): **{results['chosen_alpha']:.1f}**; the paper's alpha: {results['paper_alpha']:.1f}",
        "- overall = micro-average over , . ? (NP excluded; EfficientPunct's \"overall\"); macro = mean F1 of , . ? "
        "(Huang et al.'s \"overall\": the mean of the three marks' scores); numbers in percent",
        "",
    ]
    for split, systems in results["systems"].items():
        lines += [f"## F1 on {split} (Table 3 shape)", ""] + f1_table(systems, marks)
        lines += ["", f"Precision / recall on {split}:", ""] + precision_recall_table(systems, marks) + [""]
    lines += ["## F1 against alpha (Table 4 shape; alpha = weight of the TDNN)", ""]
    lines += alpha_table(results["alpha_sweep"], marks, results["chosen_alpha"])
    lines += ["", "## Parameters (Table 5 shape)", ""] + parameter_table(results["parameters"])
    plots = results.get("plots", {})
    if plots:
        lines += ["", "## Plots", ""] + [f"- {name}: `{path}`" for name, path in plots.items()]
    return "\n".join(lines) + "\n"


def parse_markdown_table(text: str, heading: str) -> List[List[str]]:
    """Rows (cells as strings, header first, separator dropped) of the first table after ``heading``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#") and heading in line)
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= set("-:") for c in cells):
                rows.append(cells)
        elif rows:
            break
    return rows


def plot_f1_vs_alpha(sweep: Dict[str, List[Dict]], chosen: float, paper_alpha: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for split, points in sweep.items():
        alphas = [p["alpha"] for p in points]
        line, = ax.plot(alphas, [100 * p["overall_f1"] for p in points], marker="o", label=f"{split} overall")
        if all("macro_f1" in p for p in points):
            ax.plot(alphas, [100 * p["macro_f1"] for p in points], marker="s", linestyle="--",
                    color=line.get_color(), label=f"{split} macro")
    ax.axvline(chosen, color="green", linestyle="--", label=f"chosen on dev ({chosen:.1f})")
    ax.axvline(paper_alpha, color="grey", linestyle=":", label=f"paper ({paper_alpha:.1f})")
    ax.set_xlabel("alpha (weight of the TDNN)")
    ax.set_ylabel("F1 (%)")
    ax.set_title("Ensemble p = alpha p_tdnn + (1 - alpha) p_bert")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=120)
    plt.close(fig)


def plot_confusion(confusion: Sequence[Sequence[int]], classes: Sequence[str], title: str, path: Path) -> None:
    """Row-normalised confusion matrix in percent (rows = reference, each labelled with its word count)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cm = np.asarray(confusion, dtype=np.float64)
    rows = cm.sum(axis=1, keepdims=True)
    pct = np.divide(100 * cm, rows, out=np.zeros_like(cm), where=rows > 0)
    fig, ax = plt.subplots(figsize=(1 + 0.6 * len(classes), 1 + 0.55 * len(classes)))
    ax.imshow(pct, cmap="Blues", vmin=0, vmax=100)
    ax.set_xticks(range(len(classes)), labels=classes)
    ax.set_yticks(range(len(classes)), labels=[f"{c} ({int(n)})" for c, n in zip(classes, rows[:, 0])])
    for i in range(len(classes)):
        for j in range(len(classes)):
            ax.text(j, i, f"{pct[i, j]:.0f}", ha="center", va="center", fontsize=7, color="white" if pct[i, j] > 50 else "black")
    ax.set_xlabel("prediction")
    ax.set_ylabel("reference (words)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)

def write_results(results: Dict, out_dir: Pathlike, confusion_system: Optional[str] = None, plot: bool = True) -> Path:
    """Writes RESULTS.md, results.json and the plots into ``out_dir``; returns the markdown path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = dict(results)
    if plot:
        plots = {"overall and macro F1 against alpha": "f1_vs_alpha.png"}
        plot_f1_vs_alpha(results["alpha_sweep"], results["chosen_alpha"], results["paper_alpha"], out_dir / "f1_vs_alpha.png")
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


def acoustic_model_health(am_dir: Path, splits: List[str]) -> Dict[str, Dict[str, float]]:
    """The AM's greedy WER (``wer_<split>.txt``) and forced-alignment word-start error against the
    synthesizer (``ali/<split>.ali_error.json``, mini corpus only) where stages 2-3 wrote them."""
    health: Dict[str, Dict[str, float]] = {}
    for split in splits:
        wer_file, ali_file = am_dir / f"wer_{split}.txt", am_dir / "ali" / f"{split}.ali_error.json"
        if wer_file.exists():
            match = re.search(r"%WER ([0-9.]+)", wer_file.read_text(encoding="utf-8"))
            if match:
                health.setdefault("wer", {})[split] = float(match.group(1))
        if ali_file.exists():
            ali = json.loads(ali_file.read_text(encoding="utf-8"))
            if "median_abs_ms" in ali:
                health.setdefault("alignment_median_ms", {})[split] = ali["median_abs_ms"]
    return health


def find_am_checkpoint(am_dir: Path) -> Optional[Path]:
    """The acoustic model checkpoint ``punct.am.train`` selects (``best-valid-loss.pt``), else its newest ``epoch-N.pt``."""
    from punct.am.train import BEST_CHECKPOINT
    from punct.training.loop import latest_checkpoint

    best = am_dir / BEST_CHECKPOINT
    return best if best.exists() else latest_checkpoint(am_dir)


def am_parameters_to_layer(checkpoint_path: Path, layer: int = 12) -> int:
    """Parameters of the acoustic model up to layer ``layer``, counted by the model itself."""
    from punct.am.train import load_model

    model, _ = load_model(checkpoint_path)
    return model.parameters_to_layer(layer)


def parameter_breakdown(am_dir: Optional[Path], bert_dir: Optional[Path], tdnn_checkpoint: Optional[Path]) -> Dict:
    """Table 5: {"embedding": {...}, "inference": {...}, "notes": [...]}; unreadable counts are None."""
    notes: List[str] = []
    am = bert_encoder = bert_head = tdnn = None
    if am_dir is not None:
        ckpt = find_am_checkpoint(Path(am_dir)) if Path(am_dir).is_dir() else None
        if ckpt is None:
            notes.append(f"no acoustic model checkpoint in {am_dir}: its count is n/a")
        else:
            try:
                am = am_parameters_to_layer(ckpt)
                notes.append(f"acoustic model counted from {ckpt} (input, tdnn1, tdnnf2..tdnnf12)")
            except Exception as e:  # noqa: BLE001 - the report still gets written, with the reason
                notes.append(f"acoustic model count failed ({e})")
    if bert_dir is not None and not Path(bert_dir).exists():
        notes.append(f"no BERT folder {bert_dir}: its counts are n/a")
    elif bert_dir is not None:
        try:
            from punct.models.text.model import PunctBert

            bert = PunctBert.from_pretrained(bert_dir)
            bert_encoder = sum(p.numel() for p in bert.encoder.parameters())
            bert_head = sum(p.numel() for p in bert.heads.parameters())
            notes.append(f"BERT encoder and head counted from {bert_dir}")
        except Exception as e:  # noqa: BLE001
            notes.append(f"BERT count failed for {bert_dir} ({type(e).__name__}: {e})")
    if tdnn_checkpoint is not None and not Path(tdnn_checkpoint).exists():
        notes.append(f"no TDNN checkpoint {tdnn_checkpoint}: its count is n/a")
    elif tdnn_checkpoint is not None:
        from punct.models.punct_tdnn.tdnn import count_parameters
        from punct.models.punct_tdnn.train import load_model

        tdnn = count_parameters(load_model(tdnn_checkpoint))
    return {
        "embedding": {"acoustic model up to layer 12": am, "BERT encoder": bert_encoder},
        "inference": {"punctuation TDNN": tdnn, "BERT head": bert_head},
        "notes": notes,
    }
