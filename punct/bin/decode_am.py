"""Greedy CTC decoding of a split with the trained acoustic model; writes the WER.

  python -m punct.bin.decode_am --fbank-dir data/fbank --exp-dir exp/am --splits dev test
Outputs: ``<exp-dir>/wer_<split>.txt`` (Kaldi-style %WER line) and ``<exp-dir>/recogs-<split>.txt``
(``<id> ref: ...`` / ``<id> hyp: ...``).

A model trained with the CTC loss on every k-th output frame (``ctc_subsample``) is decoded on those
frames too (``--frame-subsample 0``, the default, reads k from the checkpoint), as Kaldi decodes its
chain models at the subsampled frame rate; at all 100 frames/s its spikes repeat on neighbouring frames.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import torch

from punct.am.checkpoint import load_model, training_config
from punct.am.dataset import cut_words, load_split
from punct.am.decode import WerStats, greedy_ids
from punct.am.infer import run_model
from punct.features.compute import load_cut_features
from punct.utils.atomic import atomic_write_text
from punct.utils.cli import add_device_arguments, parse_and_log
from punct.utils.device import resolve_device
from punct.utils.progress import progress


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--fbank-dir", type=Path, required=True, help="stage-1 output")
    parser.add_argument("--exp-dir", type=Path, required=True, help="AM folder (checkpoint, outputs)")
    parser.add_argument("--checkpoint", default="best-valid-loss.pt", help="checkpoint name inside --exp-dir")
    parser.add_argument("--splits", nargs="+", required=True, help="splits to decode")
    parser.add_argument("--prefix", required=True, help="cut manifest name prefix (e.g. mustc)")
    add_device_arguments(parser)
    parser.add_argument(
        "--frame-subsample",
        type=int,
        default=0,
        help="decode every k-th output frame; 0: the checkpoint's ctc_subsample",
    )
    return parser


def decode_split(model, tokens, args, split: str, device, frame_subsample: int = 1) -> WerStats:
    cuts, cmvn = load_split(args.fbank_dir, split, args.prefix)
    stats = WerStats()
    lines = []
    audio, start = 0.0, time.process_time()
    for cut in progress(cuts, desc=f"decode {split}", mininterval=10):
        log_probs = run_model(model, load_cut_features(cut, cmvn), device=device)[::frame_subsample]
        hyp = tokens.decode_words(greedy_ids(torch.from_numpy(log_probs), log_probs.shape[0]))
        ref = cut_words(cut)
        stats.add(ref, hyp)
        lines.append(f"{cut.id} ref: {' '.join(ref)}\n{cut.id} hyp: {' '.join(hyp)}\n")
        audio += cut.duration
    cpu = time.process_time() - start
    atomic_write_text(args.exp_dir / f"recogs-{split}.txt", "".join(lines))
    atomic_write_text(args.exp_dir / f"wer_{split}.txt", stats.summary() + "\n")
    logging.info("%s: %s (%.1f audio s per CPU s)", split, stats.summary(), audio / max(cpu, 1e-9))
    return stats


def main(argv=None) -> int:
    args = parse_and_log(get_parser(), argv, "args")
    torch.set_num_threads(args.num_threads)
    device = resolve_device(args.device)
    checkpoint = args.exp_dir / args.checkpoint
    model, tokens = load_model(checkpoint, device)
    frame_subsample = args.frame_subsample or training_config(checkpoint).ctc_subsample
    logging.info("decoding one output frame in %d", frame_subsample)
    for split in args.splits:
        decode_split(model, tokens, args, split, device, frame_subsample)
    return 0


if __name__ == "__main__":
    sys.exit(main())
