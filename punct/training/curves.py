"""Training curves that people look at: TensorBoard event files and a PNG of the per-epoch history.

Every training loop (AM, BERT, punctuation TDNN, cross-attention) makes one :class:`TrainingCurves` for its
experiment folder, on the main rank only (elsewhere :data:`NO_CURVES`, which does nothing):

- ``add_scalars({"train/loss": ...}, step)`` at the steps the loop already logs;
- ``end_epoch(state.history, step)`` after each epoch: the last history record's numbers as ``epoch/<key>``
  scalars (nested records flattened, ``per_class_f1/COMMA``), the event file flushed, and ``curves.png``
  redrawn from the whole history (losses in one panel, F1 scores in another), written atomically;
- ``close()`` at the end: the event file closed, ``curves.png`` drawn if an epoch is not in it yet.

Drawing costs a few tenths of a second, which epochs of a second (the tiny recipes' TDNN) would feel: the PNG is
redrawn at an epoch's end only when ``png_interval`` seconds have passed since it was last drawn (or since the
curves were made), so epochs of minutes get one each and a run of quick epochs one every ten seconds or only one,
at its end.

The event files go to ``<exp_dir>/tensorboard/`` (``tensorboard --logdir exp``); the x axis of every scalar is
the global optimizer step, so a run resumed from ``epoch-N.pt`` (``start_step``: its step) purges the events
that an interrupted run wrote after that checkpoint.  TensorBoard and matplotlib are imported only when a
first curve is written, so neither costs a start-up.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from pathlib import Path
from typing import Any

from punct.utils.atomic import atomic_path
from punct.utils.pathlike import Pathlike

TENSORBOARD_DIR = "tensorboard"
CURVES_PNG = "curves.png"
NOT_PLOTTED = ("epoch", "step")  # history keys that are the x axis, not a curve
PANEL_LABELS = {"loss": "loss", "f1": "F1"}


@dataclass
class TrainingCurves:
    """The curves of one training run in ``exp_dir``; ``exp_dir=None``: writes nothing (other ranks).

    ``start_step``: the global step training starts from (0, or a resumed checkpoint's); ``png_interval``: the
    fewest seconds between two drawings of ``curves.png`` at epoch ends (and before the first).
    """

    exp_dir: Pathlike | None
    start_step: int = 0
    png_interval: float = 10.0
    _writer: Any = field(default=None, init=False, repr=False)
    _drawn_at: float = field(default_factory=time.monotonic, init=False, repr=False)  # or when training started
    _undrawn: list[Mapping] | None = field(default=None, init=False, repr=False)  # a history newer than the PNG

    @property
    def enabled(self) -> bool:
        return self.exp_dir is not None

    @property
    def png(self) -> Path | None:
        return Path(self.exp_dir) / CURVES_PNG if self.enabled else None

    def add_scalars(self, values: Mapping[str, float], step: int) -> None:
        """One point per tag at global step ``step`` (buffered: written to disk at the latest at an epoch's end)."""
        if not self.enabled:
            return
        writer = self._summary_writer()
        for tag, value in values.items():
            writer.add_scalar(tag, float(value), step)

    def end_epoch(self, history: Sequence[Mapping], step: int) -> None:
        """The last record of ``history`` as ``epoch/<key>`` scalars at ``step``, flushed; ``curves.png`` redrawn
        (unless it was drawn less than ``png_interval`` seconds ago: then at the next epoch's end or ``close``)."""
        if not self.enabled or not history:
            return
        self.add_scalars({f"epoch/{key}": value for key, value in flat_numbers(history[-1])}, step)
        self._writer.flush()
        self._undrawn = list(history)
        if time.monotonic() - self._drawn_at >= self.png_interval:
            self._draw()

    def close(self) -> None:
        """The event file closed and ``curves.png`` up to date."""
        if self._undrawn is not None:
            self._draw()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _draw(self) -> None:
        plot_history(self._undrawn, self.png)
        self._drawn_at, self._undrawn = time.monotonic(), None

    def _summary_writer(self):
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter  # lazily: TensorBoard costs about a second to import

            log_dir = Path(self.exp_dir) / TENSORBOARD_DIR
            self._writer = SummaryWriter(log_dir=str(log_dir), purge_step=self.start_step + 1)
        return self._writer


NO_CURVES = TrainingCurves(None)


def curves_for(exp_dir: Pathlike, is_main: bool, start_step: int = 0) -> TrainingCurves:
    """The curves of a run in ``exp_dir`` (``start_step``: see :class:`TrainingCurves`), by the main rank only."""
    return TrainingCurves(exp_dir if is_main else None, start_step)


def flat_numbers(record: Mapping, prefix: str = "") -> Iterator[tuple[str, float]]:
    """``(key, value)`` of every number in ``record`` but the x axis (``epoch``, ``step``); nested mappings give
    ``outer/inner`` keys.  Booleans, strings and lists are left out."""
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from flat_numbers(value, f"{name}/")
        elif isinstance(value, Real) and not isinstance(value, bool) and name not in NOT_PLOTTED:
            yield name, float(value)


def panel_of(key: str) -> str | None:
    """Which panel of ``curves.png`` draws history key ``key``: ``loss`` (losses, every ``train_*``), ``f1``
    (every F1), or None (times and other counts)."""
    if "loss" in key or key.startswith("train_"):
        return "loss"
    if "f1" in key:
        return "f1"
    return None


def curve_points(history: Sequence[Mapping]) -> dict[str, dict[str, tuple[list[int], list[float]]]]:
    """panel -> key -> (epochs, values): the epochs that have the key (a dev loss may start later)."""
    panels: dict[str, dict[str, tuple[list[int], list[float]]]] = {}
    for i, record in enumerate(history, 1):
        epoch = int(record.get("epoch", i))
        for key, value in flat_numbers(record):
            panel = panel_of(key)
            if panel is not None:
                epochs, values = panels.setdefault(panel, {}).setdefault(key, ([], []))
                epochs.append(epoch)
                values.append(value)
    return panels


def plot_history(history: Sequence[Mapping], path: Pathlike) -> None:
    """``path`` (a PNG): the history's losses and F1 scores against the epoch, one panel each, written atomically."""
    from matplotlib.figure import Figure  # lazily; a Figure without pyplot uses the Agg canvas and no global state
    from matplotlib.ticker import MaxNLocator

    panels = curve_points(history)
    fig = Figure(figsize=(6 * max(1, len(panels)), 4))
    axes = fig.subplots(1, max(1, len(panels)), squeeze=False)[0]
    for ax, (panel, curves) in zip(axes, sorted(panels.items(), key=lambda item: item[0] != "loss")):
        for key, (epochs, values) in curves.items():
            ax.plot(epochs, values, marker="o", markersize=3, label=key)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(PANEL_LABELS[panel])
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=100, format="png")
