#!/usr/bin/env python3
"""Acoustic-model training throughput (egs/mustc stage 2) and the stage-2 time it predicts.

Stage 2 dominates the mini recipe's wall time (in bf16 14.3 of 17.5 minutes on an Intel Xeon and about 10 of 14
on an AMD EPYC; in float32 11 of 14 on the Xeon), and the same commit trains at different speeds on different
CPUs.  This benchmark measures the machine: random features and character targets shaped like the mini corpus'
batches (:func:`make_batches`, ``--chars-per-second`` targets), through the recipe's own model, loss,
precision and optimizer (``punct.am.train.compute_loss`` with the config's ``ctc_subsample``,
``punct.training.loop.Amp``, Adam fused as in stage 2):

* train: forward, backward and the Adam step, in seconds of speech (unpadded) per CPU second of this
  process and per wall second;
* dev: the validation pass (forward only, float32 as in ``compute_validation_loss``).

For each precision (float32, and bf16 where the CPU computes it natively: what ``amp: auto`` picks) and
thread count, the predicted stage 2 is ``num_epochs x train hours / train rate + dev passes x dev hours /
dev rate`` (wall rates; the dev passes are the epochs whose dev loss stage 2 computes, plus the average's;
the defaults are the mini corpus' 0.88 h of training and 0.36 h of dev speech).  The recipe trains on one
thread beside the text branch (``--overlap-branches``); two threads only pay where the machine has a free
core.

  python benchmarks/bench_am.py [--config egs/mustc/conf/am_mini.yaml] [--threads 1 2] [--seconds 20]
Writes benchmarks/results/am.json.
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from dataclasses import dataclass
from pathlib import Path

import common  # noqa: E402  (puts the repository on sys.path)
import torch

from punct.am.config import AmConfig
from punct.am.model import build_model
from punct.am.train import build_optimizer, compute_loss, first_dev_loss_epoch
from punct.training.loop import NO_AMP, Amp
from punct.utils.config import load_config
from punct.utils.device import has_native_bf16

FRAMES_PER_SECOND = 100
NUM_TOKENS = 29  # the mini corpus' character table (blank, space, letters, apostrophe)


@dataclass
class Rate:
    precision: str
    threads: int
    part: str  # train or dev
    speech_seconds: float
    cpu_seconds: float
    wall_seconds: float

    @property
    def per_cpu_second(self) -> float:
        return self.speech_seconds / self.cpu_seconds

    @property
    def per_wall_second(self) -> float:
        return self.speech_seconds / self.wall_seconds


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=common.CONF / "am_mini.yaml", help="AM config")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts to measure")
    parser.add_argument(
        "--seconds", type=float, default=20.0, help="wall seconds per measurement (after one warm-up batch)"
    )
    parser.add_argument(
        "--utterance-seconds", type=float, default=6.8, help="median utterance length (mini corpus: 6.8 s)"
    )
    parser.add_argument("--utterance-spread", type=float, default=0.47, help="sd of the log length (mini corpus: 0.47)")
    parser.add_argument("--num-utterances", type=int, default=100, help="utterances in the cycled batches")
    parser.add_argument(
        "--chars-per-second", type=float, default=19.0, help="CTC targets per second of speech (mini: 18.9)"
    )
    parser.add_argument("--train-hours", type=float, default=0.88, help="training speech per epoch (mini: 0.88 h)")
    parser.add_argument("--dev-hours", type=float, default=0.36, help="dev speech per epoch (mini: 0.36 h)")
    return parser


def make_batches(config: AmConfig, args: argparse.Namespace, generator: torch.Generator) -> list[dict]:
    """Batches of at most ``config.max_duration`` seconds of random features and targets: utterance lengths
    log-normal around ``--utterance-seconds`` (the mini corpus: median 6.8 s, 10 % / 90 % at 3.9 / 13.0 s),
    sorted and packed as a bucketing sampler does, each batch padded to its longest utterance.  The shapes
    vary from batch to batch as in training (CPU kernels are planned per input shape)."""
    log_seconds = torch.randn(args.num_utterances, generator=generator) * args.utterance_spread + math.log(
        args.utterance_seconds
    )
    seconds = sorted(min(config.max_duration, max(1.0, float(x))) for x in log_seconds.exp())
    groups: list[list[float]] = [[]]
    for length in seconds:
        if groups[-1] and sum(groups[-1]) + length > config.max_duration:
            groups.append([])
        groups[-1].append(length)
    batches = []
    for i in torch.randperm(len(groups), generator=generator).tolist():
        frames = torch.tensor([int(x * FRAMES_PER_SECOND) for x in groups[i]])
        targets = torch.tensor([int(x * args.chars_per_second) for x in groups[i]])
        batches.append(
            {
                "feats": torch.randn(len(frames), int(frames.max()), config.model.feat_dim, generator=generator),
                "feat_lens": frames,
                "targets": torch.randint(1, NUM_TOKENS, (len(frames), int(targets.max())), generator=generator),
                "target_lens": targets,
            }
        )
    return batches


def measure(config: AmConfig, batches: list[dict], amp: Amp, threads: int, part: str, seconds: float) -> Rate:
    """Runs training steps (or dev forward passes) over ``batches``, in turn, for about ``seconds`` of wall
    time (at least one pass)."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = build_model(config, NUM_TOKENS)
    optimizer = build_optimizer(model, config)
    ctc = torch.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    device = torch.device("cpu")

    def step(batch: dict) -> None:
        if part == "train":
            model.train()
            loss, frames = compute_loss(model, batch, device, ctc, config.ctc_subsample, amp)
            optimizer.zero_grad()
            amp.step(loss / frames, optimizer, model.parameters(), config.grad_clip)
        else:
            model.eval()
            with torch.no_grad():
                compute_loss(model, batch, device, ctc, config.ctc_subsample)

    step(batches[0])  # warm-up
    speech, wall0, cpu0 = 0.0, time.perf_counter(), time.process_time()
    for i in itertools.count():
        batch = batches[i % len(batches)]
        step(batch)
        speech += float(batch["feat_lens"].sum()) / FRAMES_PER_SECOND
        if i + 1 >= len(batches) and time.perf_counter() - wall0 >= seconds:
            break
    precision = amp.mode if part == "train" and amp.enabled else "float32"
    return Rate(precision, threads, part, speech, time.process_time() - cpu0, time.perf_counter() - wall0)


def main() -> None:
    args = get_parser().parse_args()
    config = load_config(AmConfig, args.config)
    batches = make_batches(config, args, torch.Generator().manual_seed(0))
    precisions = [NO_AMP] + ([Amp("bf16")] if has_native_bf16(torch.device("cpu")) else [])
    rates: list[Rate] = []
    for threads in args.threads:
        rates.append(measure(config, batches, NO_AMP, threads, "dev", args.seconds))
        for amp in precisions:
            rates.append(measure(config, batches, amp, threads, "train", args.seconds))
    title = (
        f"AM training ({args.config.name}: ctc_subsample {config.ctc_subsample}, {len(batches)} batches of at most "
        f"{config.max_duration} s), seconds of speech per second"
    )
    common.print_table(
        title,
        ["part", "precision", "threads", "per CPU second", "per wall second"],
        [[r.part, r.precision, r.threads, r.per_cpu_second, r.per_wall_second] for r in rates],
    )
    # the epochs whose dev loss is computed, and the average's
    dev_passes = config.num_epochs - first_dev_loss_epoch(config) + 1 + (config.average_epochs > 1)
    predictions = []
    for r in rates:
        if r.part != "train":
            continue
        dev = next(d for d in rates if d.part == "dev" and d.threads == r.threads)
        train_seconds = args.train_hours * 3600 / r.per_wall_second
        dev_seconds = args.dev_hours * 3600 / dev.per_wall_second
        predictions.append(
            {
                "precision": r.precision,
                "threads": r.threads,
                "epoch_train_seconds": train_seconds,
                "epoch_dev_seconds": dev_seconds,
                "stage2_minutes": (config.num_epochs * train_seconds + dev_passes * dev_seconds) / 60,
            }
        )
    common.print_table(
        f"Predicted stage 2: {config.num_epochs} epochs of {args.train_hours} h train, {dev_passes} passes "
        f"over {args.dev_hours} h dev",
        ["precision", "threads", "epoch train s", "epoch dev s", "stage 2 min"],
        [
            [p["precision"], p["threads"], p["epoch_train_seconds"], p["epoch_dev_seconds"], p["stage2_minutes"]]
            for p in predictions
        ],
    )
    common.write_json(
        "am",
        {
            "machine": common.machine(),
            "config": str(args.config),
            "num_epochs": config.num_epochs,
            "dev_passes": dev_passes,
            "arguments": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "rates": [
                {**r.__dict__, "per_cpu_second": r.per_cpu_second, "per_wall_second": r.per_wall_second} for r in rates
            ],
            "predicted_stage2": predictions,
        },
    )


if __name__ == "__main__":
    main()
