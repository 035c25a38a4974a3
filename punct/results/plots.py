"""Plots of results (matplotlib, Agg): F1 against alpha and confusion matrices (both recipes), cross-attention
and detection F1 by input length (egs/parczech, Stankov 2024 Figures 5.13 and 5.33).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from lhotse.utils import Pathlike

from punct.labels import CASE, PUNCT9
from punct.scoring.itn import ItnScores
from punct.utils.atomic import atomic_path


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(plt, fig, path: Pathlike, dpi: int) -> None:
    """``fig`` laid out and written to ``path`` atomically (in the format its ending names), then closed."""
    fig.tight_layout()
    with atomic_path(path, suffix=Path(path).suffix) as tmp:
        fig.savefig(tmp, dpi=dpi)
    plt.close(fig)


def plot_f1_vs_alpha(sweep: dict[str, list[dict]], chosen: float, paper_alpha: float, path: Path) -> None:
    """Overall and macro F1 against alpha, one line each per split; the dev choice and the paper's alpha marked."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for split, points in sweep.items():
        alphas = [p["alpha"] for p in points]
        (line,) = ax.plot(alphas, [100 * p["overall_f1"] for p in points], marker="o", label=f"{split} overall")
        if all("macro_f1" in p for p in points):
            ax.plot(
                alphas,
                [100 * p["macro_f1"] for p in points],
                marker="s",
                linestyle="--",
                color=line.get_color(),
                label=f"{split} macro",
            )
    ax.axvline(chosen, color="green", linestyle="--", label=f"chosen on dev ({chosen:.1f})")
    ax.axvline(paper_alpha, color="grey", linestyle=":", label=f"paper ({paper_alpha:.1f})")
    ax.set_xlabel("alpha (weight of the TDNN)")
    ax.set_ylabel("F1 (%)")
    ax.set_title("Ensemble p = alpha p_tdnn + (1 - alpha) p_bert")
    ax.grid(alpha=0.3)
    ax.legend()
    save_figure(plt, fig, path, dpi=120)


def plot_confusion(confusion: Sequence[Sequence[int]], classes: Sequence[str], title: str, path: Path) -> None:
    """Row-normalised confusion matrix in percent (rows = reference, each labelled with its word count)."""
    plt = pyplot()
    cm = np.asarray(confusion, dtype=np.float64)
    rows = cm.sum(axis=1, keepdims=True)
    pct = np.divide(100 * cm, rows, out=np.zeros_like(cm), where=rows > 0)
    fig, ax = plt.subplots(figsize=(1 + 0.6 * len(classes), 1 + 0.55 * len(classes)))
    ax.imshow(pct, cmap="Blues", vmin=0, vmax=100)
    ax.set_xticks(range(len(classes)), labels=classes)
    ax.set_yticks(range(len(classes)), labels=[f"{c} ({int(n)})" for c, n in zip(classes, rows[:, 0])])
    for i in range(len(classes)):
        for j in range(len(classes)):
            ax.text(
                j,
                i,
                f"{pct[i, j]:.0f}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if pct[i, j] > 50 else "black",
            )
    ax.set_xlabel("prediction")
    ax.set_ylabel("reference (words)")
    ax.set_title(title, fontsize=9)
    save_figure(plt, fig, path, dpi=100)


def plot_attention(example: dict, title: str, path: Pathlike) -> None:
    """Cross-attention (text tokens x audio frames) of one segment (Figure 5.13): rows labelled
    with each word (with its reference mark and case) at its last sub-token, columns with the
    word assigned to each latent frame."""
    plt = pyplot()
    attn = np.asarray(example["attention"])
    tokens, token_words = example["tokens"], example["token_words"]
    words, punct, case = example["words"], example["punct"], example["case"]

    def shown(w: int) -> str:
        word = words[w].capitalize() if case[w] == "cap" else words[w]
        return word + ("" if punct[w] == "blank" else punct[w])

    ylabels = []
    for t, w in enumerate(token_words):
        last = w >= 0 and (t + 1 == len(token_words) or token_words[t + 1] != w)
        ylabels.append(shown(w) if last else ("" if w >= 0 else tokens[t]))
    xlabels = [words[w] if w >= 0 else "" for w in example["frame_words"]]
    fig, ax = plt.subplots(figsize=(2 + 0.35 * max(len(xlabels), 4), 2 + 0.18 * len(ylabels)))
    im = ax.imshow(attn, aspect="auto", cmap="viridis")
    ax.set_yticks(range(len(ylabels)), labels=ylabels, fontsize=6)
    ax.set_xticks(range(len(xlabels)), labels=xlabels, fontsize=6, rotation=90)
    ax.set_xlabel("audio frames (word of the frame)")
    ax.set_ylabel("text tokens")
    ax.set_title(title, fontsize=8)
    fig.colorbar(im, ax=ax)
    save_figure(plt, fig, path, dpi=100)


def plot_f1_by_length(scores: dict[str, ItnScores], title: str, path: Pathlike) -> None:
    """Detection F1 per input-length bin for every model (Figure 5.33)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, s in scores.items():
        xs = [b["min_words"] if b["max_words"] is None else (b["min_words"] + b["max_words"]) / 2 for b in s.by_length]
        ax.plot(xs, [100 * b["detection_f1"] for b in s.by_length], marker="o", label=name)
    ax.set_xlabel("input length (words, bin centre)")
    ax.set_ylabel("punctuation detection F1 (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    save_figure(plt, fig, path, dpi=100)


def plot_itn_model(
    path: Path, name: str, file_name: str, split: str, s: ItnScores, max_attention: int, plots: Path
) -> None:
    """Confusion matrices of both heads of model ``name`` (its files named with ``file_name``) and the
    cross-attention of up to ``max_attention`` segments."""
    cm_p = np.asarray(s.punct_scores["confusion"])
    cm_c = np.asarray(s.case_scores["confusion"])
    plot_confusion(
        cm_p, PUNCT9.classes, f"{name} {split}: punctuation (row %)", plots / f"confusion_punct_{file_name}_{split}.png"
    )
    plot_confusion(
        cm_c, CASE.classes, f"{name} {split}: case (row %)", plots / f"confusion_case_{file_name}_{split}.png"
    )
    attn_file = path / "decode" / f"{split}.attention.json"
    if attn_file.is_file():
        for k, ex in enumerate(json.loads(attn_file.read_text(encoding="utf-8"))[:max_attention]):
            plot_attention(
                ex,
                f"{name} {split} {ex['id']} (length quartile {k + 1}, highest loss)",
                plots / f"attention_{file_name}_{split}_{k + 1}.png",
            )
