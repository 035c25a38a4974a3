"""``--amp fastest``: the rule that picks bf16 from timed steps, a probe that leaves the model and the random
generators as they were, and a training under ``fastest`` that equals the training with the mode it chose."""

from __future__ import annotations

import dataclasses
import logging

import pytest
import torch

from punct.models.punct_tdnn.train import train_tdnn
from punct.training import precision
from punct.training.checkpoint import load_checkpoint
from punct.training.loop import Amp, TrainState
from punct.training.precision import fastest_amp, step_seconds, training_amp
from tests.helpers.precision import force_fastest_verdict
from tests.helpers.synthetic_splits import small_training, train_dev_splits


def _net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.Dropout(0.5), torch.nn.Linear(16, 3)
    )


def _loss_of(inputs: torch.Tensor):
    def loss_of(model: torch.nn.Module, amp: Amp, i: int) -> torch.Tensor:
        with amp.autocast():
            out = model(inputs)
        return out.float().pow(2).mean()

    return loss_of


@pytest.mark.parametrize(
    "native, bf16_seconds, chosen",
    [(True, 0.55, "bf16"), (True, 0.95, "none"), (True, 1.6, "none"), (False, 0.1, "none")],
)
def test_bf16_only_where_it_is_clearly_faster(native, bf16_seconds, chosen, monkeypatch):
    monkeypatch.setattr(precision, "has_native_bf16", lambda device: native)
    measured = []

    def fake(model, loss_of, amp, device):
        measured.append(amp.mode)
        return bf16_seconds if amp.mode == "bf16" else 1.0

    choice = fastest_amp(_net(), _loss_of(torch.ones(4, 8)), torch.device("cpu"), measure=fake)
    assert choice.mode == chosen
    assert measured == (["none", "bf16"] if native else [])  # emulated bf16 is not even measured


def test_the_probe_changes_neither_the_model_nor_the_random_generators():
    model = _net().train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    loss_of = _loss_of(torch.randn(32, 8))
    rng = torch.get_rng_state()
    seconds = step_seconds(model, loss_of, Amp("none"), torch.device("cpu"), repeats=2)
    assert seconds > 0
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # BatchNorm's running stats too
    assert all(p.grad is None for p in model.parameters())
    assert torch.equal(torch.get_rng_state(), rng)  # dropout's draws in the probe did not advance the generator


def test_each_timed_step_takes_the_next_of_the_first_training_batches():
    """A training whose batch shapes keep changing pays for new kernels in most steps: the probe times steps on
    batches of the training's own shapes, not one batch repeated."""
    shapes = [(4, 8), (6, 8), (5, 8)]
    made = []
    loss_of = precision.probe_loss_of(
        lambda: made.append("made") or [torch.randn(*shape) for shape in shapes],
        lambda model, batch, amp: model(batch).pow(2).mean(),
    )
    seen = []
    probe_model = torch.nn.Linear(8, 2)
    probe_model.register_forward_hook(lambda module, inputs, output: seen.append(tuple(inputs[0].shape)))
    for i in range(5):
        loss_of(probe_model, Amp("none"), i)
    assert seen == [(4, 8), (6, 8), (5, 8), (4, 8), (6, 8)] and made == ["made"]  # made once, reused in turn
    assert precision.probe_index_batches(10, 3) == [range(0, 3), range(3, 6), range(6, 9)]  # full batches only
    assert precision.probe_index_batches(2, 3) == [range(0, 2)]
    assert precision.probe_index_batches(40, 3) == [range(0, 3), range(3, 6), range(6, 9), range(9, 12)]
    with pytest.raises(ValueError, match="no training batch to time"):
        precision.probe_loss_of(lambda: [], lambda model, batch, amp: batch)(probe_model, Amp("none"), 0)


def test_the_probe_times_the_warm_up_batch_apart_from_the_timed_ones():
    used = []

    def loss_of(model, amp, i):
        used.append(i)
        return model(torch.ones(2, 8)).sum()

    step_seconds(_net(), loss_of, Amp("none"), torch.device("cpu"), repeats=3)
    assert used == [0, 1, 2, 3]


def test_a_given_mode_is_not_measured(monkeypatch):
    monkeypatch.setattr(precision, "step_seconds", lambda *args: pytest.fail("measured"))
    assert training_amp("bf16", torch.device("cpu"), _net(), _loss_of(torch.ones(4, 8))).mode == "bf16"
    assert training_amp("none", torch.device("cpu"), _net(), _loss_of(torch.ones(4, 8))).mode == "none"


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    return train_dev_splits(tmp_path_factory.mktemp("fastest"), seed=51)


@pytest.mark.parametrize("bf16_faster, mode", [(False, "none"), (True, "bf16")])
def test_training_under_fastest_is_the_training_with_the_chosen_mode(
    corpora, tmp_path, monkeypatch, caplog, bf16_faster, mode
):
    """The real probe runs in the real loop (on a copy, generators forked); only the verdict is forced, so that
    both branches run on any CPU."""
    force_fastest_verdict(monkeypatch, bf16_faster)
    cfg = small_training("window", epochs=1, epoch_limit=64)
    models = {}
    for amp in ("fastest", mode):
        with caplog.at_level(logging.INFO):
            models[amp] = train_tdnn(
                cfg, corpora["train"], None, tmp_path / amp, torch.device("cpu"), seed=3, progress=False, amp=amp
            )
    assert f"--amp fastest: {'bf16' if bf16_faster else 'float32'} (probe: float32 " in caplog.text
    fastest, given = models["fastest"].state_dict(), models[mode].state_dict()
    assert fastest.keys() == given.keys()
    assert all(torch.equal(fastest[k], given[k]) for k in given)


def test_a_resumed_training_keeps_the_mode_fastest_chose(monkeypatch):
    state = TrainState()
    force_fastest_verdict(monkeypatch, bf16_faster=True)
    assert training_amp("fastest", torch.device("cpu"), _net(), _loss_of(torch.ones(4, 8)), state=state).mode == "bf16"
    assert state.amp == "bf16"  # saved with the state in every epoch-N.pt
    monkeypatch.setattr(precision, "step_seconds", lambda *args: pytest.fail("measured again after a resume"))
    resumed = TrainState(**dataclasses.asdict(state))
    assert (
        training_amp("fastest", torch.device("cpu"), _net(), _loss_of(torch.ones(4, 8)), state=resumed).mode == "bf16"
    )


def test_the_tdnn_resumed_under_fastest_trains_on_in_the_mode_of_its_first_epochs(
    corpora, tmp_path, monkeypatch, caplog
):
    """The choice travels in epoch-N.pt: a resume whose probe would now answer float32 keeps bf16."""
    force_fastest_verdict(monkeypatch, bf16_faster=True)
    train_tdnn(
        small_training("window", epochs=1, epoch_limit=64), corpora["train"], None, tmp_path, torch.device("cpu"),
        seed=3, progress=False, amp="fastest",
    )  # fmt: skip
    assert load_checkpoint(tmp_path / "epoch-1.pt")["state"]["amp"] == "bf16"
    force_fastest_verdict(monkeypatch, bf16_faster=False)
    caplog.clear()  # the first training's lines too, where an earlier test left the root logger at INFO
    with caplog.at_level(logging.INFO):
        train_tdnn(
            small_training("window", epochs=2, epoch_limit=64), corpora["train"], None, tmp_path,
            torch.device("cpu"), seed=3, resume=tmp_path / "epoch-1.pt", progress=False, amp="fastest",
        )  # fmt: skip
    assert "--amp fastest: bf16, as chosen when this training started (resumed)" in caplog.text
    assert "probe:" not in caplog.text
    assert load_checkpoint(tmp_path / "epoch-2.pt")["state"]["amp"] == "bf16"
