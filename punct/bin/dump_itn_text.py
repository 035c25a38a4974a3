#!/usr/bin/env python3
"""Dump per-word vectors and punctuation + case posteriors of the ParCzech text-only model (stage 5).

  python -m punct.bin.dump_itn_text --checkpoint exp/text/best-valid-f1.pt \\
      --supervisions data/segments/parczech_supervisions_dev.jsonl.gz --out-dir exp/emb_text/dev --job 1 --nj 2

Writes ``<out-dir>/vec.JOB.{ark,scp}`` (words x hidden: the final hidden state at each word's last
sub-token) and ``<out-dir>/post.JOB.{ark,scp}`` (words x 11: the punctuation softmax in
``punct.text.token_labels.PUNCT9.classes`` order, then the case softmax in ``CASE.classes`` order); key =
segment id.  A job whose two shards are done is skipped unless ``--overwrite``.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import torch

from punct.io.shards import WordItems, add_word_dump_arguments, run_word_dump
from punct.models.cross_attention.data import ItnDataset, read_segments
from punct.models.cross_attention.dump import load_text_model, word_outputs
from punct.utils.cli import HelpFormatter, parse_and_log
from punct.utils.jobs import job_share


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--checkpoint", type=Path, required=True, help="text-only model (exp/text/best-valid-f1.pt)")
    parser.add_argument(
        "--supervisions",
        type=Path,
        required=True,
        help="segments of the split (e.g. parczech_supervisions_<split>.jsonl.gz)",
    )
    parser.add_argument("--out-dir", type=Path, required=True, help="output folder, e.g. exp/emb_text/dev")
    parser.add_argument("--batch-size", type=int, default=32, help="segments per forward pass")
    add_word_dump_arguments(parser)
    return parser


def text_model_items(args: argparse.Namespace, device: torch.device) -> WordItems:
    model, cfg = load_text_model(args.checkpoint, device)
    segments = job_share(read_segments(args.supervisions), args.job, args.nj)
    dataset = ItnDataset(segments, None, model.text.tokenizer, cfg, with_audio=False, where=str(args.supervisions))
    logging.info(
        "job %d/%d: %d segments (%d dumpable), %d words",
        args.job,
        args.nj,
        len(segments),
        len(dataset),
        sum(len(s.words) for s in dataset.segments),
    )
    return ((out.id, out.vectors, out.posteriors) for out in word_outputs(model, dataset, args.batch_size, device))


def main(argv: list[str] | None = None) -> None:
    args = parse_and_log(get_parser(), argv)
    run_word_dump(args, lambda device: text_model_items(args, device))


if __name__ == "__main__":
    main()
