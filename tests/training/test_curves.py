"""Training curves: TensorBoard event files read back with TensorBoard's own reader, and the PNG of the history,
from the shared class and from real training loops (the punctuation TDNN on synthetic splits, the AM on the tiny
espeak corpus)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from punct.training import curves as curves_module
from punct.training.curves import (
    CURVES_PNG,
    NO_CURVES,
    TENSORBOARD_DIR,
    TrainingCurves,
    curve_points,
    curves_for,
    flat_numbers,
)
from tests.helpers.espeak_corpus import cached_corpus, espeak_available
from tests.helpers.synthetic_splits import small_training, train_dev_splits

HISTORY = [
    {"epoch": 1, "train_loss": 2.0, "dev_loss": 1.5, "overall_f1": 0.2, "per_class_f1": {"COMMA": 0.1}, "seconds": 3},
    {"epoch": 2, "train_loss": 1.0, "dev_loss": 1.2, "overall_f1": 0.4, "per_class_f1": {"COMMA": 0.3}, "seconds": 3},
]


def scalars(exp_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """tag -> (step, value) of the event files in ``exp_dir/tensorboard`` as TensorBoard reads them."""
    events = EventAccumulator(str(exp_dir / TENSORBOARD_DIR))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def assert_png(path: Path) -> None:
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    assert image[..., :3].std() > 0.01  # something is drawn on the white page


def test_steps_and_epochs_are_written_and_plotted(tmp_path):
    curves = TrainingCurves(tmp_path, png_interval=0)
    for epoch, step in ((1, 4), (2, 8)):
        curves.add_scalars({"train/loss": 3.0 - step / 4}, step - 2)
        curves.add_scalars({"train/loss": 2.9 - step / 4}, step)
        curves.end_epoch(HISTORY[:epoch], step)
        assert_png(tmp_path / CURVES_PNG)  # drawn at the epoch's end
    flushed = scalars(tmp_path)["epoch/dev_loss"]  # at the epoch's end, before close
    assert [(step, round(value, 4)) for step, value in flushed] == [(4, 1.5), (8, 1.2)]
    curves.close()
    found = scalars(tmp_path)
    assert set(found) == {
        "train/loss",
        "epoch/train_loss",
        "epoch/dev_loss",
        "epoch/overall_f1",
        "epoch/per_class_f1/COMMA",
        "epoch/seconds",
    }
    assert [step for step, _ in found["train/loss"]] == [2, 4, 6, 8]
    assert [round(v, 3) for _, v in found["epoch/per_class_f1/COMMA"]] == [0.1, 0.3]
    assert_png(tmp_path / CURVES_PNG)
    assert not list(tmp_path.glob(".*tmp*"))  # the PNG was renamed into place


def test_the_png_has_a_loss_and_an_f1_panel_and_skips_times():
    panels = curve_points(HISTORY)
    assert set(panels) == {"loss", "f1"}
    assert panels["loss"] == {"train_loss": ([1, 2], [2.0, 1.0]), "dev_loss": ([1, 2], [1.5, 1.2])}
    assert set(panels["f1"]) == {"overall_f1", "per_class_f1/COMMA"}
    late_dev = [{"epoch": 1, "train_loss": 2.0}, {"epoch": 2, "train_loss": 1.0, "dev_loss": 0.5}]
    assert curve_points(late_dev)["loss"]["dev_loss"] == ([2], [0.5])  # a dev loss scored from epoch 2 on
    assert dict(flat_numbers({"epoch": 1, "step": 9, "ok": True, "name": "x", "x": 2})) == {"x": 2.0}


def test_quick_epochs_are_drawn_every_png_interval_and_at_the_end(tmp_path, monkeypatch):
    drawn = []
    monkeypatch.setattr(curves_module, "plot_history", lambda history, path: drawn.append(len(history)))
    curves = TrainingCurves(tmp_path, png_interval=3600)
    history = []
    for record in HISTORY:
        history.append(record)
        curves.end_epoch(history, record["epoch"])
    assert drawn == []  # both epochs came too soon after the start
    curves.close()
    assert drawn == [2]
    curves.close()
    assert drawn == [2]  # nothing left to draw
    curves = TrainingCurves(tmp_path, png_interval=0)
    curves.end_epoch(history, 2)
    curves.end_epoch(history, 2)
    assert drawn == [2, 2, 2]  # slow epochs: every one drawn
    curves.close()
    assert drawn == [2, 2, 2]


def test_a_resumed_run_purges_what_an_interrupted_run_wrote_after_its_checkpoint(tmp_path):
    first = TrainingCurves(tmp_path)
    for step in (1, 2, 3, 4, 5):
        first.add_scalars({"train/loss": float(step)}, step)
    first.end_epoch(HISTORY[:1], 2)  # the checkpoint of epoch 1 is at step 2; steps 3-5 are lost work
    first.close()
    resumed = TrainingCurves(tmp_path, start_step=2)
    resumed.add_scalars({"train/loss": 30.0}, 3)
    resumed.end_epoch(HISTORY, 4)
    resumed.close()
    assert scalars(tmp_path)["train/loss"] == [(1, 1.0), (2, 2.0), (3, 30.0)]


def test_other_ranks_write_nothing(tmp_path):
    curves = curves_for(tmp_path, is_main=False)
    assert not curves.enabled
    curves.add_scalars({"train/loss": 1.0}, 1)
    curves.end_epoch(HISTORY, 2)
    curves.close()
    NO_CURVES.end_epoch(HISTORY, 2)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("unit", ["window"])
def test_the_punct_tdnn_loop_writes_its_curves(tmp_path, unit):
    from punct.models.punct_tdnn.train import train_tdnn

    corpora = train_dev_splits(tmp_path / "data", seed=30)
    cfg = small_training(unit, log_interval=1)
    exp = tmp_path / "exp"
    train_tdnn(cfg, corpora["train"], corpora["dev"], exp, torch.device("cpu"), seed=1, progress=False)
    found = scalars(exp)
    assert {"train/loss_per_example", "epoch/train_loss", "epoch/overall_f1", "epoch/macro_f1"} <= set(found)
    assert any(tag.startswith("epoch/per_class_f1/") for tag in found)
    steps = torch.load(exp / "epoch-2.pt", weights_only=True)["state"]["step"]
    assert [step for step, _ in found["epoch/train_loss"]] == [steps // 2, steps]
    assert [step for step, _ in found["train/loss_per_example"]] == list(range(1, steps + 1))
    assert_png(exp / CURVES_PNG)


@pytest.mark.skipif(not espeak_available(), reason="espeak-ng/sox not installed")
def test_the_am_loop_keeps_a_history_and_writes_its_curves(tmp_path):
    from punct.am.train import run_training
    from tests.am.test_train import TINY

    torch.set_num_threads(1)
    state, _ = run_training(
        prefix="mustc", config=TINY, fbank_dir=cached_corpus() / "fbank", exp_dir=tmp_path, device_name="cpu", seed=3
    )
    assert [record["epoch"] for record in state.history] == [1, 2]
    assert torch.load(tmp_path / "epoch-2.pt", weights_only=True)["state"]["history"] == state.history
    found = scalars(tmp_path)
    assert {"train/loss_per_frame", "train/lr", "epoch/train_loss", "epoch/dev_loss"} <= set(found)
    assert found["epoch/train_loss"][-1][0] == state.step and len(found["train/loss_per_frame"]) == state.step
    assert_png(tmp_path / CURVES_PNG)
