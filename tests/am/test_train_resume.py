"""A killed AM training resumes to the uninterrupted run's weights: from a mid-epoch checkpoint (the process killed
with SIGKILL after one is written, as a cluster's time limit or preemption kills it) and from an epoch's end."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from punct.am.config import AmConfig
from punct.am.model import AmModelConfig
from punct.am.train import run_training
from punct.training import resume
from punct.training.checkpoint import load_checkpoint
from punct.utils.config import save_config
from tests.helpers.espeak_corpus import cached_corpus, espeak_available
from tests.helpers.interrupt import killed_after_mid_epoch_checkpoint

pytestmark = pytest.mark.skipif(not espeak_available(), reason="espeak-ng/sox not installed")

# SpecAugment and dropout on: their draws must follow the resume too
TINY = AmConfig(
    model=AmModelConfig(dim=24, bottleneck_dim=8, prefinal_small_dim=16, prefinal_big_dim=24, dropout=0.1),
    num_epochs=2,
    warmup_steps=1,
    max_duration=8.0,
    num_buckets=2,
    spec_augment=True,
    log_interval=100,
    save_every_n_steps=2,
)


def _train(exp_dir, config: AmConfig = TINY, resume_run: bool = False):
    torch.set_num_threads(1)
    return run_training(
        prefix="mustc",
        config=config,
        fbank_dir=cached_corpus() / "fbank",
        exp_dir=exp_dir,
        device_name="cpu",
        seed=4,
        resume=resume_run,
    )


def _assert_same_weights(a: torch.nn.Module, b: torch.nn.Module) -> None:
    for (name, x), y in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(x, y), name


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    exp = tmp_path_factory.mktemp("straight")
    state, model = _train(exp)
    return exp, state, model


def test_a_kill_after_a_mid_epoch_checkpoint_resumes_to_the_same_weights(uninterrupted, tmp_path):
    straight_dir, straight_state, straight = uninterrupted
    assert not resume.mid_epoch_checkpoints(straight_dir)  # each removed once its epoch's epoch-N.pt is written
    assert straight_state.step >= 6
    kill_after = straight_state.step // 2 + 1  # a step of epoch 2, whose checkpoint is due
    kill_after += kill_after % 2
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        import torch
        from punct.training import resume
        from punct.bin.train_am import main

        torch.set_num_threads(1)
        original = resume.save_mid_epoch

        def save_then_die(exp_dir, epoch, batches_done, write):
            path = original(exp_dir, epoch, batches_done, write)
            if int(torch.load(path, weights_only=False)["state"]["step"]) >= {kill_after}:
                os.kill(os.getpid(), signal.SIGKILL)
            return path

        resume.save_mid_epoch = save_then_die
        sys.exit(main(sys.argv[1:]))
        """
    )
    config_file = tmp_path / "am.yaml"
    save_config(TINY, config_file)
    exp = tmp_path / "exp"
    args = ["--config", config_file, "--fbank-dir", cached_corpus() / "fbank", "--exp-dir", exp]
    args += ["--prefix", "mustc", "--seed", "4", "--device", "cpu", "--num-threads", "1", "--resume"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    killed = subprocess.run([sys.executable, "-c", script, *map(str, args)], env=env, capture_output=True, text=True)
    assert killed.returncode == -9, killed.stderr[-2000:]
    [(epoch, batches, path)] = resume.mid_epoch_checkpoints(exp)
    assert resume.newest_checkpoint(exp) == path and epoch == 2 and batches > 0
    assert load_checkpoint(path)["state"]["step"] == kill_after

    state, resumed = _train(exp, resume_run=True)  # what steps/train_am.sh runs again
    _assert_same_weights(straight, resumed)
    assert state.history == straight_state.history  # the epoch's train loss too
    assert not resume.mid_epoch_checkpoints(exp)


def test_resume_from_an_epoch_checkpoint_and_within_the_first_epoch(uninterrupted, tmp_path, monkeypatch):
    straight_dir, straight_state, straight = uninterrupted
    _train(tmp_path, dataclasses.replace(TINY, num_epochs=1, save_every_n_steps=0))
    assert resume.newest_checkpoint(tmp_path).name == "epoch-1.pt"
    _, resumed = _train(tmp_path, resume_run=True)
    _assert_same_weights(straight, resumed)

    # interrupted (an exception, in this process) after the first mid-epoch checkpoint of epoch 1
    other = tmp_path / "other"
    with killed_after_mid_epoch_checkpoint(monkeypatch):
        _train(other)
    assert resume.newest_checkpoint(other).name == "epoch-1-batch-2.pt"
    _, resumed = _train(other, resume_run=True)
    _assert_same_weights(straight, resumed)
    assert load_checkpoint(other / "epoch-2.pt")["state"]["history"] == straight_state.history
