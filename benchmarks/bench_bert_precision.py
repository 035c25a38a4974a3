#!/usr/bin/env python3
"""BERT in float32 and in bfloat16 on this CPU, and what ``punctuate --bert-precision fastest`` picks here.

Whether bf16 pays depends on the CPU (AMX, AVX512-BF16 without AMX, neither), so the README's table has one row
per CPU kind, each measured on such a machine with this script.  Per size (random models, as bench_inference.py):
the CPU seconds per audio second of BERT over the mini corpus' dev text (``Punctuator.text_outputs``, the path
``punctuate`` runs) in each precision, the smallest of ``--repeats`` runs, one thread; the share of words whose
BERT label is the same in both; and the start-up probe's timings and choice.

  python benchmarks/bench_bert_precision.py [--sizes paper mini] [--audio-seconds 300]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402  (benchmarks/common.py; puts the repo on sys.path)

from punct.features import FeatureConfig  # noqa: E402
from punct.inference.pipeline import Punctuator  # noqa: E402
from punct.inference.precision import fastest_bert_precision  # noqa: E402
from punct.inference.words import transcript_words  # noqa: E402
from punct.labels import PUNCT4  # noqa: E402
from punct.models.text.data import Utterance  # noqa: E402
from punct.utils.config import load_config  # noqa: E402


def text_seconds(p: Punctuator, utterances: list[Utterance], bf16: bool, repeats: int) -> tuple[float, list]:
    """Smallest CPU time of BERT over ``utterances`` and the outputs of the last run."""
    p.bert_bf16 = bf16
    times, outputs = [], []
    for _ in range(repeats):
        start = time.process_time()
        outputs = p.text_outputs(utterances)
        times.append(time.process_time() - start)
    p.bert_bf16 = False
    return min(times), outputs


def bench_size(size: str, args) -> dict:
    import torch

    torch.set_num_threads(1)
    models = common.random_models(size)
    p = Punctuator(
        feature_config=load_config(FeatureConfig, common.CONF / "mfcc.yaml"),
        am=models.am,
        tokens=models.tokens,
        bert=models.bert,
        tdnn=models.tdnn,
        alpha=0.4,
    )
    requests, audio = common.speech_requests(args.audio_seconds, corpus=args.corpus)
    utterances = []
    for r in requests:
        _, words, _ = transcript_words(r.transcript, p.normalize_config)
        utterances.append(Utterance(r.id, words, [PUNCT4.none] * len(words)))
    float32_s, exact = text_seconds(p, utterances, False, args.repeats)
    bf16_s, approximate = (0.0, [])
    choice = fastest_bert_precision(p)
    row = {
        "size": size,
        "audio_seconds": audio,
        "words": sum(len(u.words) for u in utterances),
        "float32_rtf": float32_s / audio,
        "fastest_choice": choice.precision,
        "probe_float32_s": choice.float32_seconds,
        "probe_bf16_s": choice.bf16_seconds,
        "probe_reason": choice.reason,
    }
    if choice.bf16_seconds > 0:  # the device computes bf16 natively
        bf16_s, approximate = text_seconds(p, utterances, True, args.repeats)
        same = sum(
            int((a.posteriors["punct"].argmax(1) == b.posteriors["punct"].argmax(1)).sum())
            for a, b in zip(exact, approximate)
        )
        row.update(bf16_rtf=bf16_s / audio, labels_equal=same / row["words"])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["paper", "mini"], choices=("paper", "mini"))
    parser.add_argument("--audio-seconds", type=float, default=300.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=common.MINI_CORPUS)
    parser.add_argument("--out-name", default="bert_precision")
    args = parser.parse_args()
    results: dict = {"machine_before": common.machine(), "sizes": {}}
    for size in args.sizes:
        results["sizes"][size] = bench_size(size, args)
    results["machine_after"] = common.machine()
    machine = results["machine_before"]
    rows = [
        [
            r["size"],
            r["float32_rtf"],
            r.get("bf16_rtf", "-"),
            r.get("labels_equal", "-"),
            r["fastest_choice"],
            r["probe_reason"],
        ]
        for r in results["sizes"].values()
    ]
    common.print_table(
        f"BERT on 1 thread, CPU s per audio s: {machine['cpu']} ({machine['cpu_kind']}; load {machine['load_1_5_15']})",
        ["size", "float32", "bf16", "labels equal", "--bert-precision fastest", "start-up probe"],
        rows,
    )
    common.write_json(args.out_name, results)


if __name__ == "__main__":
    main()
