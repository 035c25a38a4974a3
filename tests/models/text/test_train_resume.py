"""A BERT fine-tuning interrupted within an epoch, or between two, resumes to the uninterrupted run's weights
(dropout on: its draws must follow the resume)."""

from __future__ import annotations

import dataclasses
import random

import pytest
import torch
from lhotse import SupervisionSegment, SupervisionSet

from punct.models.text.config import BertTrainConfig
from punct.models.text.train import run_training
from punct.training import resume
from punct.training.checkpoint import load_checkpoint
from tests.helpers.interrupt import killed_after_mid_epoch_checkpoint
from tests.helpers.text_model import make_encoder, make_tokenizer

WORDS = ["the", "cat", "on", "mat", "a", "dog", "so", "and", "why", "did", "it"]


def _write_supervisions(path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    segments = []
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 9))] + ["sat"]
        labels = ["," if w == "cat" else "NP" for w in words[:-1]] + ["."]
        segments.append(
            SupervisionSegment(
                id=f"ted_{seed}_{i}",
                recording_id=f"ted_{seed}",
                start=float(i),
                duration=1.0,
                text=" ".join(words),
                custom={"words": words, "punct": labels},
            )
        )
    SupervisionSet.from_segments(segments).to_file(path)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("bert")
    make_encoder(max_positions=64).save_pretrained(root / "tiny-bert")
    make_tokenizer(root).save_pretrained(root / "tiny-bert")
    _write_supervisions(root / "train.jsonl.gz", 60, 1)
    _write_supervisions(root / "dev.jsonl.gz", 8, 2)
    config = BertTrainConfig(
        bert_model=str(root / "tiny-bert"),
        lr=3e-3,
        batch_size=8,
        max_length=24,
        context=4,
        num_epochs=2,
        head_hidden=16,
        head_dropout=0.2,
        num_threads=1,
        warmup_steps=3,
        log_interval=100,
        keep_last_epochs=0,
        save_every_n_steps=3,
    )
    return root, config


def _train(data, exp_dir, resume_run: bool = False, **changes) -> dict:
    root, config = data
    run_training(
        dataclasses.replace(config, **changes),
        train=root / "train.jsonl.gz",
        dev=root / "dev.jsonl.gz",
        exp_dir=exp_dir,
        resume=resume_run,
        device_name="cpu",
    )
    return load_checkpoint(exp_dir / f"epoch-{changes.get('num_epochs', config.num_epochs)}.pt")


def _assert_same(a: dict, b: dict) -> None:
    assert a["model"].keys() == b["model"].keys()
    for name, x in a["model"].items():
        assert torch.equal(x, b["model"][name]), name
    assert a["state"]["step"] == b["state"]["step"]
    assert a["state"]["history"] == b["state"]["history"]


def test_a_run_interrupted_mid_epoch_or_between_epochs_resumes_to_the_same_weights(data, tmp_path, monkeypatch):
    straight = _train(data, tmp_path / "straight")
    assert not resume.mid_epoch_checkpoints(tmp_path / "straight")
    steps_per_epoch = straight["state"]["step"] // 2
    assert steps_per_epoch > 3

    # between epochs: one epoch, then --resume to two
    _train(data, tmp_path / "epochs", num_epochs=1, save_every_n_steps=0)
    _assert_same(straight, _train(data, tmp_path / "epochs", resume_run=True))

    # within epoch 2: stopped right after its first mid-epoch checkpoint
    with killed_after_mid_epoch_checkpoint(monkeypatch, epoch=2):
        _train(data, tmp_path / "killed")
    [(epoch, batches, _)] = resume.mid_epoch_checkpoints(tmp_path / "killed")
    assert epoch == 2 and 0 < batches < steps_per_epoch
    _assert_same(straight, _train(data, tmp_path / "killed", resume_run=True))
