#!/usr/bin/env python3
"""Punctuate new audio with a trained EfficientPunct recipe (features, AM layer 12, forced alignment,
BERT, punctuation TDNN, ensemble at the recipe's alpha).

  # Kaldi-style data directory files (utt2spk optional: per-speaker CMVN)
  python -m punct.bin.punctuate --recipe-dir egs/mustc --wav-scp data/new/wav.scp --text data/new/text \\
      --out-dir exp/punctuate/new
  # a lhotse cut manifest (transcript = first supervision's text)
  python -m punct.bin.punctuate --recipe-dir egs/mustc --cuts cuts.jsonl.gz --out-dir out
  # one file; --text is a transcript file, --transcript the transcript itself
  python -m punct.bin.punctuate --recipe-dir egs/mustc --wav talk.wav --transcript "so what did we learn" --out-dir out
  # no transcript: the acoustic model's greedy hypothesis is punctuated
  python -m punct.bin.punctuate --recipe-dir egs/mustc --wav-scp wav.scp --transcript-from am --out-dir out
  # fastest on CPUs: int8 AM and TDNN in ONNX Runtime (after python -m punct.bin.export_onnx), bf16 BERT
  python -m punct.bin.punctuate --recipe-dir egs/mustc --cuts cuts.jsonl.gz --backend onnx --bert-bf16 \
      --vectorised-features --out-dir out

By default the output equals what the recipe's stages computed and scored for the same audio and words (stage 1's
features, stage 4's quantised layer 12, stage 6's word vectors; the whole split gives stage 8's posteriors); the
speed options above trade that for time.

Writes ``<out-dir>/text[.JOB]`` (``<utt> <punctuated text>``), ``<out-dir>/punct[.JOB].jsonl`` (per word:
label, start/end seconds, TDNN/BERT/ensemble posteriors) and ``<out-dir>/failed[.JOB]`` (``<utt> <reason>:
<message>``).  An utterance that cannot be processed is reported and skipped; the exit code is 1 when
any failed (0 with --allow-failures, for steps/punctuate.sh which checks the merged list itself).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import torch

from punct.inference.inputs import from_cuts, from_kaldi, from_pair
from punct.inference.pipeline import Failure, Punctuator, merged_cmvn, recipe_paths
from punct.utils.atomic import atomic_write_text
from punct.utils.cli import HelpFormatter, parse_and_log
from punct.utils.device import resolve_device
from punct.utils.jobs import add_job_arguments, check_job, job_share


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """The input options: Kaldi files, a cut manifest or one audio file, and where the transcripts come from."""
    src = parser.add_argument_group("input (one of --wav-scp, --cuts, --wav)")
    src.add_argument("--wav-scp", type=Path, default=None, help="Kaldi wav.scp: '<utt> <path>' or '<utt> <command> |'")
    src.add_argument(
        "--text",
        type=Path,
        default=None,
        help="with --wav-scp: Kaldi text '<utt> <transcript>'; with --wav: a file holding the transcript",
    )
    src.add_argument(
        "--utt2spk", type=Path, default=None, help="with --wav-scp: '<utt> <speaker>' for per-speaker CMVN"
    )
    src.add_argument(
        "--segments",
        type=Path,
        default=None,
        help="with --wav-scp: Kaldi segments '<utt> <recording> <start> <end>' (wav.scp lists recordings)",
    )
    src.add_argument("--cuts", type=Path, default=None, help="lhotse cut manifest (transcript = supervision text)")
    src.add_argument("--wav", type=Path, default=None, help="one audio file")
    src.add_argument("--transcript", default=None, help="with --wav: the transcript itself")
    src.add_argument("--utt-id", default=None, help="with --wav: the utterance id [file stem]")
    src.add_argument(
        "--transcript-from",
        choices=("input", "am"),
        default="input",
        help="input: the given transcripts; am: the acoustic model's greedy hypothesis (no transcript needed)",
    )


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The model options: a trained recipe folder, any of whose files may be given instead."""
    models = parser.add_argument_group("models (defaults: the recipe's files)")
    models.add_argument("--recipe-dir", type=Path, default=Path("."), help="trained recipe directory (egs/mustc)")
    models.add_argument("--feat-config", type=Path, default=None, help="[<recipe>/conf/mfcc.yaml]")
    models.add_argument("--am-model", type=Path, default=None, help="[<recipe>/exp/am/best-valid-loss.pt]")
    models.add_argument("--bert-model-dir", type=Path, default=None, help="[<recipe>/exp/bert/best-valid-f1]")
    models.add_argument("--tdnn-model", type=Path, default=None, help="[<recipe>/exp/tdnn/best-valid-f1.pt]")
    models.add_argument(
        "--results-json",
        type=Path,
        default=None,
        help="stage 8's results with chosen_alpha [<recipe>/exp/results/results.json]",
    )
    models.add_argument(
        "--alpha", type=float, default=None, help="ensemble weight of the TDNN [chosen_alpha of stage 8]"
    )


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    add_input_arguments(parser)
    add_model_arguments(parser)
    parser.add_argument(
        "--cmvn",
        default="speaker",
        help="speaker: CMVN per speaker (utt2spk / cut speaker; else per utterance) over the input; "
        "or a stage-1 stats file (data/fbank/cmvn_train.json) whose speakers are merged into one",
    )
    parser.add_argument("--out-dir", type=Path, required=True, help="output folder")
    parser.add_argument("--group-size", type=int, default=16, help="utterances per BERT/TDNN batch")
    parser.add_argument("--max-length", type=int, default=0,
                        help="BERT input length (tokens incl. specials); 0: the length BERT was trained on")
    parser.add_argument("--context", type=int, default=-1,
                        help="BERT sub-tokens of context around chunk words; -1: the training value")
    parser.add_argument("--quantize", nargs="*", choices=("bert", "tdnn"), default=None,
                        help="dynamic int8 quantisation of the Linear layers of these parts (no value: bert); CPU only")
    parser.add_argument("--bert-bf16", action="store_true",
                        help="BERT under bfloat16 autocast (CPUs with AVX-512 BF16 / AMX, or GPUs)")
    parser.add_argument("--vectorised-features", action="store_true",
                        help="NumPy MFCC instead of stage 1's kaldi-native-fbank: 3-7x faster features, equal to 1e-3 "
                             "but no longer bit-identical to what the recipe scored")
    parser.add_argument("--backend", choices=("torch", "onnx"), default="torch",
                        help="onnx: the AM and the TDNN's conv stack in ONNX Runtime, from --onnx-dir (CPU only)")
    parser.add_argument("--onnx-dir", type=Path, default=None,
                        help="export of python -m punct.bin.export_onnx [<recipe>/exp/onnx]")
    parser.add_argument("--onnx-precision", choices=("int8", "float32"), default="int8",
                        help="with --backend onnx: static int8 or float32 graphs")
    parser.add_argument("--allow-failures", action="store_true", help="exit 0 even when some utterances failed")
    parser.add_argument("--threads", "--num-threads", dest="num_threads", type=int, default=1,
                        help="CPU threads of torch and of ONNX Runtime")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--seed", type=int, default=42, help="random seed (the pipeline itself is deterministic)")
    add_job_arguments(parser)
    return parser


def read_requests(args) -> list:
    given = [x for x in (args.wav_scp, args.cuts, args.wav) if x is not None]
    if len(given) != 1:
        raise SystemExit("punctuate: give exactly one of --wav-scp, --cuts, --wav")
    use_text = args.transcript_from == "input"
    if args.wav_scp is not None:
        if use_text and args.text is None:
            raise SystemExit("punctuate: --wav-scp needs --text (or --transcript-from am)")
        return from_kaldi(args.wav_scp, args.text if use_text else None, args.utt2spk, args.segments)
    if args.cuts is not None:
        return from_cuts(args.cuts, use_transcripts=use_text)
    transcript = None
    if use_text:
        if (args.text is None) == (args.transcript is None):
            raise SystemExit("punctuate: --wav needs one of --text FILE or --transcript TEXT (or --transcript-from am)")
        if args.text is not None:
            if not args.text.is_file():
                raise SystemExit(f"punctuate: {args.text}: no such file")
            transcript = " ".join(args.text.read_text(encoding="utf-8").split())
        else:
            transcript = args.transcript
    return [from_pair(args.wav, transcript, args.utt_id)]


def speaker_share(requests: list, job: int, nj: int) -> list:
    """This job's share of the requests, whole speakers at a time (CMVN stats are per speaker)."""
    by_speaker: dict = {}
    for r in requests:
        by_speaker.setdefault(r.speaker, []).append(r)
    return [r for group in job_share(list(by_speaker.values()), job, nj) for r in group]


def main(argv: list[str] | None = None) -> int:
    args = parse_and_log(get_parser(), argv)
    check_job(args.job, args.nj)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.num_threads)
    requests = speaker_share(read_requests(args), args.job, args.nj)
    device = resolve_device(args.device)
    if args.quantize is not None and device.type != "cpu":  # refused before the models are read
        raise ValueError(f"--quantize: dynamic int8 quantisation runs on the CPU only, but --device {args.device} "
                         f"resolved to {device}; use --device cpu, or --bert-bf16 on the GPU")
    punctuator = Punctuator.from_recipe(
        args.recipe_dir, feat_config=args.feat_config, am_checkpoint=args.am_model, bert_dir=args.bert_model_dir,
        tdnn_checkpoint=args.tdnn_model, results_json=args.results_json, alpha=args.alpha, device=device,
        group_size=args.group_size, max_length=args.max_length, context=args.context,
        global_cmvn=None if args.cmvn == "speaker" else merged_cmvn(args.cmvn), bert_bf16=args.bert_bf16,
        vectorised_features=args.vectorised_features)
    if args.quantize is not None:
        punctuator.quantize(args.quantize or ("bert",))
    if args.backend == "onnx":
        paths = recipe_paths(args.recipe_dir, am_checkpoint=args.am_model, tdnn_checkpoint=args.tdnn_model)
        punctuator.use_onnx(args.onnx_dir or args.recipe_dir / "exp" / "onnx", args.onnx_precision, args.num_threads,
                            am_checkpoint=paths["am_checkpoint"], tdnn_checkpoint=paths["tdnn_checkpoint"])
    suffix = f".{args.job}" if args.nj > 1 else ""
    text_lines, json_lines, failed_lines = [], [], []
    audio = 0.0
    start = time.perf_counter()
    for out in punctuator.run(requests):
        if isinstance(out, Failure):
            logging.error("%s: %s", out.id, out.message)
            failed_lines.append(f"{out.id} {out.message}\n")
            continue
        audio += out.duration
        text_lines.append(f"{out.id} {out.text}\n")
        json_lines.append(json.dumps(out.to_json(), ensure_ascii=False) + "\n")
        if args.wav is not None:
            print(out.text)
    wall = time.perf_counter() - start
    args.out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out_dir / f"text{suffix}", "".join(text_lines))
    atomic_write_text(args.out_dir / f"punct{suffix}.jsonl", "".join(json_lines))
    atomic_write_text(args.out_dir / f"failed{suffix}", "".join(failed_lines))
    parts = ", ".join(f"{k} {v:.2f}" for k, v in punctuator.timer.seconds.items())
    logging.info("%d of %d utterances punctuated (%d failed); %.1f s of audio in %.1f s (RTF %.4f; seconds: %s)",
                 len(text_lines), len(requests), len(failed_lines), audio, wall, wall / max(audio, 1e-9), parts)
    logging.info("wrote %s, %s, %s", args.out_dir / f"text{suffix}", args.out_dir / f"punct{suffix}.jsonl",
                 args.out_dir / f"failed{suffix}")
    if failed_lines and not args.allow_failures:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
