"""train_bert's GPU and cluster options on the CPU: --amp bf16 (fp16 refused), and DDP with two gloo
ranks under torchrun equal to one process with the ranks' combined batch size."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from punct.bin import train_bert
from punct.models.text import train as text_train
from punct.models.text.data import Example, batches
from punct.models.text.model import PunctBert
from punct.training.loop import DistInfo
from tests.helpers.precision import force_fastest_verdict
from tests.helpers.text_model import make_encoder, make_tokenizer

REPO = Path(__file__).resolve().parents[3]
# single-piece words: every utterance is one chunk of the same length, with the same number of labels
WORDS = ["the", "cat", "on", "mat", "a", "dog", "so", "and", "why", "did", "it", "is", "was"]
WORDS_PER_UTT = 6


def write_manifest(path: Path, n: int, seed: int) -> None:
    from lhotse import SupervisionSegment, SupervisionSet

    rng = random.Random(seed)
    sups = []
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(WORDS_PER_UTT - 1)] + [rng.choice(["sat", "ran"])]
        labels = ["," if w == "cat" else "NP" for w in words[:-1]] + ["." if words[-1] == "sat" else "?"]
        sups.append(
            SupervisionSegment(
                id=f"u{seed}_{i}",
                recording_id=f"r{seed}",
                start=float(i),
                duration=1.0,
                text=" ".join(words),
                custom={"words": words, "punct": labels},
            )
        )
    SupervisionSet.from_segments(sups).to_file(path)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bert_gpu")
    encoder = make_encoder(max_positions=64)
    # no dropout: the ranks' random masks would differ from one process' masks
    encoder.config.hidden_dropout_prob = encoder.config.attention_probs_dropout_prob = 0.0
    encoder.save_pretrained(root / "tiny-bert")
    make_tokenizer(root).save_pretrained(root / "tiny-bert")
    write_manifest(root / "train.jsonl.gz", 32, seed=1)
    write_manifest(root / "dev.jsonl.gz", 8, seed=2)
    return root


def args(root: Path, exp: Path, *extra: str) -> list:
    return [
        "--bert-model",
        str(root / "tiny-bert"),
        "--train",
        str(root / "train.jsonl.gz"),
        "--dev",
        str(root / "dev.jsonl.gz"),
        "--exp-dir",
        str(exp),
        "--device",
        "cpu",
        "--lr",
        "3e-3",
        "--max-length",
        "24",
        "--context",
        "4",
        "--head-hidden",
        "16",
        "--head-dropout",
        "0",
        "--num-threads",
        "1",
        "--log-interval",
        "100",
        "--keep-last-epochs",
        "0",
        "--seed",
        "5",
        *extra,
    ]


def model_state(exp: Path, epoch: int) -> dict:
    return torch.load(exp / f"epoch-{epoch}.pt", weights_only=True)["model"]


@pytest.mark.parametrize("amp", ["bf16", "fastest", "config: bf16"])
def test_bf16_training_changes_the_weights_and_saves_float32(data, monkeypatch, amp):
    """bf16 asked for, or chosen by ``fastest``'s probe (on the first training batch, its verdict forced), or
    a config's ``amp: bf16`` with no ``--amp``."""
    force_fastest_verdict(monkeypatch, bf16_faster=True)
    seen = []

    class Recorded(PunctBert):
        def forward(self, *inputs, **packed):  # padded batches
            out = super().forward(*inputs, **packed)
            seen.append((self.training, out[1]["punct"].dtype))  # head logits (LayerNorm outputs are float32)
            return out

        def forward_packed(self, row):  # packed rows: training's (through forward) and dev scoring's
            out = super().forward_packed(row)
            seen.append((self.training, out[1]["punct"].dtype))
            return out

    monkeypatch.setattr(text_train, "PunctBert", Recorded)
    exp = data / f"exp_{amp.replace(': ', '_')}"
    if amp.startswith("config"):
        config = data / "bert_bf16.yaml"
        config.write_text("amp: bf16\n")
        precision = ["--config", str(config)]
    else:
        precision = ["--amp", amp]
    train_bert.main(args(data, exp, *precision, "--batch-size", "8", "--num-epochs", "1"))
    assert (True, torch.bfloat16) in seen and (False, torch.float32) in seen  # bf16 training, float32 dev scoring
    history = json.loads((exp / "history.json").read_text())
    assert len(history) == 1 and math.isfinite(history[0]["train_loss"]) and (exp / ".done").exists()
    trained = model_state(exp, 1)
    assert all(v.dtype == torch.float32 for v in trained.values() if v.is_floating_point())
    init = make_encoder(max_positions=64).state_dict()
    name = "embeddings.word_embeddings.weight"
    assert not torch.allclose(trained[f"encoder.{name}"], init[name])


def test_fp16_on_cpu_is_refused(data):
    with pytest.raises(ValueError, match="fp16 needs a CUDA device"):
        train_bert.main(args(data, data / "exp_fp16", "--amp", "fp16"))


def test_one_process_takes_the_batches_of_the_plain_shuffle():
    examples = [Example(i, None, []) for i in range(11)]
    ours = text_train.epoch_batches(examples, 3, seed=9, dist=DistInfo())
    assert ours == list(batches(examples, 3, shuffle=True, seed=9))


def test_two_gloo_ranks_equal_one_process_with_their_combined_batch(data):
    single, ddp = data / "exp_single", data / "exp_ddp"
    train_bert.main(args(data, single, "--batch-size", "8", "--num-epochs", "2"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            "-m",
            "punct.bin.train_bert",
            *args(data, ddp, "--batch-size", "4", "--num-epochs", "2"),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert (ddp / ".done").exists() and len(list((ddp / "log").iterdir())) == 1  # rank 0's log only
    assert json.loads((ddp / "history.json").read_text())[-1]["epoch"] == 2
    steps = [torch.load(exp / "epoch-2.pt", weights_only=True)["state"]["step"] for exp in (single, ddp)]
    assert steps == [8, 8]  # 32 chunks / 8 per step, two epochs
    a, b = model_state(single, 2), model_state(ddp, 2)
    init = make_encoder(max_positions=64).state_dict()
    moved = 0
    for name, value in a.items():
        assert torch.allclose(value, b[name], atol=1e-4), name
        if name.startswith("encoder.") and name[len("encoder.") :] in init:
            moved += not torch.allclose(value, init[name[len("encoder.") :]], atol=1e-3)
    assert moved > 10  # training moved most tensors away from the initial encoder
