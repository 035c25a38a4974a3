#!/usr/bin/env python3
"""Dump per-word vectors and punctuation + case posteriors of the ParCzech text-only model (stage 5).

  python -m punct.bin.dump_itn_text --checkpoint exp/text/best-valid-f1.pt \\
      --supervisions data/segments/parczech_supervisions_dev.jsonl.gz --out-dir exp/emb_text/dev --job 1 --nj 2

Writes ``<out-dir>/vec.JOB.{ark,scp}`` (words x hidden: the final hidden state at each word's last
sub-token) and ``<out-dir>/post.JOB.{ark,scp}`` (words x 11: the punctuation softmax in
``punct.token_labels.PUNCT9.classes`` order, then the case softmax in ``CASE.classes`` order); key =
segment id.  A job whose two shards are done is skipped unless ``--overwrite``.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import List, Optional

import torch

from punct.io.shards import ShardWriter, is_shard_done
from punct.models.cross_attention.data import ItnDataset, read_segments
from punct.models.cross_attention.dump import load_text_model, word_outputs
from punct.utils.cli import HelpFormatter
from punct.utils.device import resolve_device
from punct.utils.jobs import add_job_arguments, job_share
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--checkpoint", type=Path, required=True, help="text-only model (exp/text/best-valid-f1.pt)")
    parser.add_argument("--supervisions", type=Path, required=True, help="segments of the split (parczech_supervisions_<split>.jsonl.gz)")
    parser.add_argument("--out-dir", type=Path, required=True, help="output folder, e.g. exp/emb_text/dev")
    parser.add_argument("--batch-size", type=int, default=32, help="segments per forward pass")
    parser.add_argument("--compression", default="none", help="kaldiio compression of the vectors: none, two_byte, ...")
    parser.add_argument("--num-threads", type=int, default=1, help="torch CPU threads per job")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--overwrite", action="store_true", help="rewrite shards that are already done")
    add_job_arguments(parser)
    return parser


def main(argv: Optional[List[str]] = None) -> None:
    args = get_parser().parse_args(argv)
    setup_logging()
    log_config(vars(args), "arguments")
    vec_prefix, post_prefix = args.out_dir / f"vec.{args.job}", args.out_dir / f"post.{args.job}"
    if not args.overwrite and is_shard_done(vec_prefix) and is_shard_done(post_prefix):
        logging.info("%s and %s are done; skipping (use --overwrite to redo)", vec_prefix, post_prefix)
        return
    if args.num_threads > 0:
        torch.set_num_threads(args.num_threads)
    device = resolve_device(args.device)
    model, cfg = load_text_model(args.checkpoint, device)
    segments = job_share(read_segments(args.supervisions), args.job, args.nj)
    dataset = ItnDataset(segments, None, model.text.tokenizer, cfg, with_audio=False, where=str(args.supervisions))
    logging.info("job %d/%d: %d segments (%d dumpable), %d words", args.job, args.nj, len(segments), len(dataset),
                 sum(len(s.words) for s in dataset.segments))
    with ShardWriter(vec_prefix, args.compression) as vec_writer, ShardWriter(post_prefix, "none") as post_writer:
        for out in word_outputs(model, dataset, args.batch_size, device):
            vec_writer.write(out.id, out.vectors)
            post_writer.write(out.id, out.posteriors)
    logging.info("wrote %s.scp and %s.scp", vec_prefix, post_prefix)


if __name__ == "__main__":
    main()
