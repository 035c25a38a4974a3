"""train_mm's GPU and cluster options on the CPU for the cross-attention model: --amp bf16 (fp16 refused),
and DDP with two gloo ranks under torchrun equal to one process with the ranks' combined batch size."""

from __future__ import annotations

import gzip
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from punct.bin import train_mm
from punct.models.cross_attention import train as mm_train
from tests.helpers.cross_attention import (
    NO_DROPOUT,
    TINY_MODEL,
    TINY_TRAINING,
    cli_options,
    make_encoder,
    make_tokenizer,
    write_corpus,
)
from tests.helpers.precision import force_fastest_verdict

REPO = Path(__file__).resolve().parents[3]
TINY = cli_options(
    **TINY_MODEL, **TINY_TRAINING, log_interval=100, positional="true", keep_last_epochs=0, decode_splits="test"
)


def keep_five_word_segments(manifest: Path) -> int:
    """Keeps the segments of 5 words (of equal duration): every rank's batch then has as many labelled
    words as the others, so the mean of the ranks' mean losses is one process' mean loss."""
    with gzip.open(manifest, "rt", encoding="utf-8") as f:
        kept = [line for line in f if len(json.loads(line)["custom"]["words"]) == 5]
    with gzip.open(manifest, "wt", encoding="utf-8") as f:
        f.writelines(kept)
    return len(kept)


def without_key_bias(name: str, value: torch.Tensor) -> torch.Tensor:
    """An attention's biases without the key part: softmax ignores a shift of all scores, so its true
    gradient is 0 and Adam, normalising, turns the rounding noise there into full-size random steps."""
    if not name.endswith("in_proj_bias"):
        return value
    q, _, v = value.chunk(3)
    return torch.cat([q, v])


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("mm_gpu")
    data = write_corpus(root, num_segments=24)
    assert keep_five_word_segments(data / "parczech_supervisions_train.jsonl.gz") == 8
    encoder = make_encoder()
    encoder.config.hidden_dropout_prob = encoder.config.attention_probs_dropout_prob = 0.0
    encoder.save_pretrained(root / "bert")
    make_tokenizer(root).save_pretrained(root / "bert")
    return root, [
        "--model",
        "mm",
        "--data-dir",
        str(data),
        "--prefix",
        "parczech",
        "--bert-model",
        str(root / "bert"),
    ] + TINY


@pytest.mark.parametrize("amp", ["bf16", "fastest"])
def test_bf16_training_changes_the_weights_and_saves_float32(setup, monkeypatch, amp):
    """bf16 asked for, or chosen by the config's ``amp: fastest`` probe (on the first training segments, its
    verdict forced)."""
    force_fastest_verdict(monkeypatch, bf16_faster=True)
    root, common = setup
    seen = []
    build = mm_train.build_model

    def recorded_build(kind, cfg):
        model = build(kind, cfg)
        model.register_forward_hook(lambda module, inputs, out: seen.append((module.training, out["punct"].dtype)))
        return model

    monkeypatch.setattr(mm_train, "build_model", recorded_build)
    exp = root / f"exp_{amp}"
    precision = ["--amp", amp]
    if amp == "fastest":  # from the config: MmConfig's amp (conf/mm_small.yaml), --amp overrides it
        (root / "fastest.yaml").write_text("amp: fastest\n")
        precision = ["--config", str(root / "fastest.yaml")]
    train_mm.main(common + ["--exp-dir", str(exp), *precision, "--batch-size", "2", "--num-epochs", "1"])
    assert (True, torch.bfloat16) in seen and (False, torch.float32) in seen  # bf16 training, float32 dev scoring
    history = json.loads((exp / "history.json").read_text())
    assert math.isfinite(history[0]["train_loss"]) and (exp / ".done").is_file()
    weights = torch.load(exp / "epoch-1.pt", weights_only=True)["model"]
    assert all(v.dtype == torch.float32 for v in weights.values() if v.is_floating_point())
    init = make_encoder().state_dict()
    name = "embeddings.word_embeddings.weight"
    assert not torch.allclose(weights[f"text.encoder.{name}"], init[name])


def test_fp16_on_cpu_is_refused(setup):
    root, common = setup
    with pytest.raises(ValueError, match="fp16 needs a CUDA device"):
        train_mm.main(common + ["--exp-dir", str(root / "exp_fp16"), "--amp", "fp16"])


def test_two_gloo_ranks_equal_one_process_with_their_combined_batch(setup):
    root, common = setup
    single, ddp = root / "exp_single", root / "exp_ddp"
    train_mm.main(
        common + cli_options(**NO_DROPOUT) + ["--exp-dir", str(single), "--batch-size", "2", "--num-epochs", "2"]
    )
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
            "punct.bin.train_mm",
            *common,
            *cli_options(**NO_DROPOUT),
            "--exp-dir",
            str(ddp),
            "--batch-size",
            "1",
            "--num-epochs",
            "2",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert (ddp / ".done").is_file() and (ddp / "decode" / "test.jsonl").is_file()
    assert len(list((ddp / "log").iterdir())) == 1  # rank 0's log only
    saved = [torch.load(exp / "epoch-2.pt", weights_only=True) for exp in (single, ddp)]
    assert [s["state"]["step"] for s in saved] == [8, 8]  # 8 segments / 2 per step, two epochs
    a, b = saved[0]["model"], saved[1]["model"]
    for name, value in a.items():
        assert torch.allclose(without_key_bias(name, value), without_key_bias(name, b[name]), atol=2e-5), name
    fresh = torch.load(single / "epoch-1.pt", weights_only=True)["model"]
    assert any(not torch.allclose(a[n], fresh[n]) for n in a)  # the second epoch moved the weights
