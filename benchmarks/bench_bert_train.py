#!/usr/bin/env python3
"""Stage 5's training step (BERT fine-tuning) on padded batches and on packed rows, float32 and bf16.

Stage 5 runs beside the acoustic model (stages 2-4) on the mini recipe, so its time decides the whole run's as
soon as it is the longer branch.  A batch of chunks padded to its longest computes every padding position;
packed into one row (:mod:`punct.models.text.packing`, what ``punct.models.text.train`` does where the encoder
allows) it computes the real tokens only.  This script runs the recipe's own pieces (``collate_examples``,
``compute_loss`` with conf/bert_mini.yaml's loss, ``punct.training.loop.Amp``, AdamW as stage 5 builds it) over
the mini corpus' training text (the talks' segments and the extra prose, chunked with the config's
max_length and context), the same ``--steps`` batches of ``batch_size`` chunks (stage 5's random order) each way,
one thread, and reports CPU seconds per step (the smallest of ``--repeats`` passes) and the computed tokens per
real one.  Sizes as the other benchmarks: mini = MiniLM-L6 shaped, paper = BERT-base shaped (random weights:
the shapes set the cost).

  python benchmarks/bench_bert_train.py [--sizes mini paper] [--steps 20]
Writes benchmarks/results/bert_train.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402  (benchmarks/common.py; puts the repo on sys.path)
import torch  # noqa: E402

from punct.models.text import train  # noqa: E402
from punct.models.text.config import BertTrainConfig  # noqa: E402
from punct.models.text.data import Utterance, make_examples, read_extra_text  # noqa: E402
from punct.models.text.losses import build_loss  # noqa: E402
from punct.models.text.packing import first_position  # noqa: E402
from punct.text.normalize import NormalizeConfig, normalize  # noqa: E402
from punct.training.loop import Amp, DistInfo  # noqa: E402
from punct.utils.config import load_config  # noqa: E402
from punct.utils.device import has_native_bf16  # noqa: E402


def training_text(corpus: Path, cfg: BertTrainConfig) -> list[Utterance]:
    """The mini corpus' training utterances as stage 5 reads them: each talk segment, then the extra prose in
    pseudo-utterances of ``extra_text_words`` words, normalised with the recipe's conf/normalize.yaml."""
    talks = corpus / "data" / "train" / "txt" / "train.en"
    extra = corpus / "text" / "train_extra.txt"
    for path in (talks, extra):
        if not path.is_file():
            raise FileNotFoundError(
                f"{path}: no mini corpus; build it with cd egs/mustc && ./run.sh --stage 0 --stop-stage 0"
            )
    norm = load_config(NormalizeConfig, common.CONF / "normalize.yaml")
    utterances = []
    for i, line in enumerate(talks.read_text(encoding="utf-8").splitlines()):
        result = normalize(line, norm)
        if result.words:
            utterances.append(Utterance(f"train-{i}", result.words, result.labels))
    return utterances + read_extra_text(extra, cfg.extra_text_words, norm=norm)


def step_seconds(model, loss_fn, optimizer, batches: list[dict], amp: Amp, repeats: int) -> float:
    """Smallest CPU seconds per training step over ``batches`` (forward, loss, backward, AdamW step)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for batch in batches:
            loss, _ = train.compute_loss(model, loss_fn, batch, torch.device("cpu"), amp)
            optimizer.zero_grad(set_to_none=True)
            amp.step(loss, optimizer, model.parameters(), 1.0)
        best = min(best, (time.process_time() - start) / len(batches))
    return best


def bench_size(size: str, args, cfg: BertTrainConfig) -> dict:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = common.random_models(size).bert.train()
    loss_fn = build_loss(cfg.loss_config())
    optimizer = train.build_optimizer(model, cfg)
    examples = make_examples(training_text(args.corpus, cfg), model.tokenizer, cfg.max_length, cfg.context)
    share = train.epoch_batches(range(len(examples)), cfg.batch_size, cfg.seed + 1, DistInfo())[: args.steps]
    pad_id, first = train.pad_token_id(model.tokenizer), first_position(model.encoder)
    if first is None:
        raise RuntimeError(f"{size}: this encoder cannot be packed")
    chosen = [[examples[i] for i in batch] for batch in share]
    padded = [train.collate_examples(b, pad_id) for b in chosen]
    packed = [train.collate_examples(b, pad_id, first) for b in chosen]
    real = sum(int(b["attention_mask"].sum()) for b in padded)
    row = {
        "size": size,
        "steps": len(chosen),
        "chunks_per_step": cfg.batch_size,
        "real_tokens_per_step": real / len(chosen),
        "padded_tokens_per_real": sum(b["input_ids"].numel() for b in padded) / real,
        "packed_tokens_per_real": sum(b["packed"].input_ids.numel() for b in packed) / real,
    }
    precisions = ["none"] + (["bf16"] if has_native_bf16(torch.device("cpu")) else [])
    for precision in precisions:
        amp = Amp(precision)
        for name, batches in (("padded", padded), ("packed", packed)):
            step_seconds(model, loss_fn, optimizer, batches[:2], amp, 1)  # warm-up: kernels, allocator
            row[f"{precision}_{name}_s"] = step_seconds(model, loss_fn, optimizer, batches, amp, args.repeats)
        row[f"{precision}_speedup"] = row[f"{precision}_padded_s"] / row[f"{precision}_packed_s"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["mini", "paper"], choices=("paper", "mini"))
    parser.add_argument("--steps", type=int, default=20, help="training batches timed each way")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--config", type=Path, default=common.CONF / "bert_mini.yaml", help="stage 5's config")
    parser.add_argument("--corpus", type=Path, default=common.MINI_CORPUS)
    parser.add_argument("--out-name", default="bert_train")
    args = parser.parse_args()
    cfg = dataclasses.replace(load_config(BertTrainConfig, args.config), seed=1)
    results: dict = {"machine_before": common.machine(), "config": str(args.config), "sizes": {}}
    for size in args.sizes:
        results["sizes"][size] = bench_size(size, args, cfg)
    results["machine_after"] = common.machine()
    machine = results["machine_before"]
    rows = []
    for r in results["sizes"].values():
        for precision in ("none", "bf16"):
            if f"{precision}_padded_s" in r:
                rows.append(
                    [
                        r["size"],
                        "float32" if precision == "none" else precision,
                        r["padded_tokens_per_real"],
                        r[f"{precision}_padded_s"],
                        r[f"{precision}_packed_s"],
                        r[f"{precision}_speedup"],
                    ]
                )
    common.print_table(
        f"Stage 5 training step, 1 thread, CPU s: {machine['cpu']} ({machine['cpu_kind']}; "
        f"load {machine['load_1_5_15']})",
        ["size", "precision", "padded tokens per real", "padded s/step", "packed s/step", "speed-up"],
        rows,
    )
    common.write_json(args.out_name, results)


if __name__ == "__main__":
    main()
