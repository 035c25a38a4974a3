#!/usr/bin/env python3
"""Export a trained recipe's acoustic model and punctuation TDNN to ONNX for ``punctuate --backend onnx``:
float32 graphs and static int8 graphs calibrated on the recipe's speech (``punct.inference.onnx_runtime``).

  # in egs/mustc after stage 7: calibrate on 200 training utterances, write exp/onnx
  python -m punct.bin.export_onnx --recipe-dir . --cuts data/fbank/mustc_cuts_train.jsonl.gz
  python -m punct.bin.punctuate --recipe-dir . --backend onnx --cuts new_cuts.jsonl.gz --out-dir out

Calibration input: a lhotse cut manifest with recordings (``--cuts``) or a Kaldi data directory's
``--wav-scp`` + ``--text`` (+ ``--utt2spk``); ``--calibration-utterances`` of them drawn at random are used.
Training speech is the natural choice (the recipe's dev split then stays unseen for the F1 check).
Activation ranges are the 99.99th percentile of the calibration values (``--percentile``; 0 for min/max).
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
from pathlib import Path

import torch

from punct.inference.inputs import from_cuts, from_kaldi
from punct.inference.onnx_runtime import DEFAULT_PERCENTILE, PRECISIONS
from punct.inference.pipeline import Punctuator
from punct.inference.recipe import recipe_paths
from punct.utils.cli import HelpFormatter, parse_and_log


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--recipe-dir", type=Path, default=Path("."), help="trained recipe directory (e.g. egs/mustc)")
    parser.add_argument("--am-model", type=Path, default=None, help="[<recipe>/exp/am/best-valid-loss.pt]")
    parser.add_argument("--bert-model-dir", type=Path, default=None, help="[<recipe>/exp/bert/best-valid-f1]")
    parser.add_argument("--tdnn-model", type=Path, default=None, help="[<recipe>/exp/tdnn/best-valid-f1.pt]")
    parser.add_argument("--out-dir", type=Path, default=None, help="export folder [<recipe>/exp/onnx]")
    parser.add_argument("--precisions", nargs="+", choices=PRECISIONS, default=list(PRECISIONS))
    parser.add_argument("--cuts", type=Path, default=None, help="calibration: lhotse cuts with recordings")
    parser.add_argument("--wav-scp", type=Path, default=None, help="calibration: Kaldi wav.scp (with --text)")
    parser.add_argument("--text", type=Path, default=None, help="calibration: Kaldi text")
    parser.add_argument("--utt2spk", type=Path, default=None, help="calibration: utt2spk for per-speaker CMVN")
    parser.add_argument(
        "--calibration-utterances",
        type=int,
        default=200,
        help="utterances drawn at random (--seed) whose activations set the int8 ranges",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the calibration draw")
    parser.add_argument(
        "--per-channel",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="int8 weights with one scale per output channel",
    )
    parser.add_argument(
        "--percentile",
        type=float,
        default=DEFAULT_PERCENTILE,
        help="int8 activation ranges: this percentile of the calibration values (0: min/max)",
    )
    parser.add_argument(
        "--reduce-range",
        action="store_true",
        help="7-bit weights, for x86 CPUs without AVX-512 VNNI (avoids u8 x s8 saturation)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    from punct.inference.export import export_recipe

    args = parse_and_log(get_parser(), argv)
    torch.set_num_threads(1)
    calibration = []
    if "int8" in args.precisions:
        if (args.cuts is None) == (args.wav_scp is None):
            raise SystemExit("export_onnx: int8 needs calibration speech: give one of --cuts, --wav-scp (with --text)")
        if args.wav_scp is not None and args.text is None:
            raise SystemExit("export_onnx: --wav-scp needs --text")
        calibration = (
            from_cuts(args.cuts) if args.cuts is not None else from_kaldi(args.wav_scp, args.text, args.utt2spk)
        )
        random.Random(args.seed).shuffle(calibration)
        calibration = calibration[: args.calibration_utterances]
    paths = recipe_paths(args.recipe_dir, am_checkpoint=args.am_model, tdnn_checkpoint=args.tdnn_model)
    punctuator = Punctuator.from_recipe(
        args.recipe_dir,
        am_checkpoint=args.am_model,
        bert_dir=args.bert_model_dir,
        tdnn_checkpoint=args.tdnn_model,
        device=torch.device("cpu"),
    )
    out_dir = args.out_dir or args.recipe_dir / "exp" / "onnx"
    info = export_recipe(
        punctuator,
        out_dir,
        am_checkpoint=paths["am_checkpoint"],
        tdnn_checkpoint=paths["tdnn_checkpoint"],
        precisions=args.precisions,
        calibration=calibration,
        per_channel=args.per_channel,
        reduce_range=args.reduce_range,
        percentile=args.percentile,
    )
    logging.info("wrote %s (%s)", out_dir, ", ".join(info.precisions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
