#!/usr/bin/env python3
"""Stage 8 (first half): per-word TDNN posteriors of a split, fully convolutionally.

The conv stack runs once over each (zero-padded) utterance and each word reads its 243-frame slice
(punct.models.punct_tdnn.infer.word_posteriors, which ``punctuate`` calls too; exactly the windowed result).
The split's shards must have been made as the training split's were (their ``source.json`` against the
checkpoint's ``inputs``), else the job stops naming both.  Writes <out-dir>/post.JOB.{ark,scp}: one
(words x classes) matrix per cut id, columns in the class order of the model's label set (MuST-C: 4,
PUNCT4.classes; ParCzech ``label_set: itn`` with a case head: 9 + 2, the punctuation softmax then the case
softmax); a finished shard is skipped unless
--overwrite.  Merge with ``cat post.*.scp > post.scp`` (egs/mustc/local/score.sh does).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import torch

from punct.io.shards import ShardWriter, is_shard_done
from punct.io.sources import check_split_sources
from punct.models.punct_tdnn.checkpoint import checkpoint_inputs, checkpoint_train_config, load_model
from punct.models.punct_tdnn.config import corpus_classes
from punct.models.punct_tdnn.dataset import open_split, split_paths
from punct.models.punct_tdnn.infer import utterance_posteriors
from punct.utils.cli import add_device_arguments, parse_and_log
from punct.utils.device import resolve_device
from punct.utils.jobs import add_job_arguments, job_share


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model", type=Path, required=True, help="TDNN checkpoint (exp/tdnn/best-valid-f1.pt)")
    parser.add_argument("--split", required=True, help="split name (dev, test)")
    parser.add_argument("--cuts-dir", type=Path, default=Path("data/fbank"), help="folder of the aligned cut manifests")
    parser.add_argument(
        "--cuts-pattern",
        required=True,
        help="cut manifest name in --cuts-dir, {split} = split (e.g. mustc_cuts_{split}_ali.jsonl.gz)",
    )
    parser.add_argument(
        "--am-emb-dir", type=Path, default=Path("exp/emb_am"), help="layer-12 shards: <dir>/<split>/emb.scp"
    )
    parser.add_argument(
        "--bert-emb-dir", type=Path, default=Path("exp/emb_bert"), help="BERT word vectors: <dir>/<split>/vec.scp"
    )
    parser.add_argument("--out-dir", type=Path, required=True, help="output folder (exp/tdnn/post/<split>)")
    add_device_arguments(parser, threads_help="torch intra-op threads")
    parser.add_argument("--overwrite", action="store_true", help="redo a finished shard")
    add_job_arguments(parser)
    return parser


def main() -> None:
    args = parse_and_log(get_parser())
    prefix = args.out_dir / f"post.{args.job}"
    if is_shard_done(prefix) and not args.overwrite:
        logging.info("%s.scp is done; skipping (use --overwrite to redo)", prefix)
        return
    torch.set_num_threads(args.num_threads)
    device = resolve_device(args.device)
    paths = split_paths(args.cuts_dir, args.am_emb_dir, args.bert_emb_dir, args.split, args.cuts_pattern)
    # the split's matrices must be made as the training split's were (same AM, layer, word vectors)
    check_split_sources(checkpoint_inputs(args.model), args.am_emb_dir, args.bert_emb_dir, args.split, args.model)
    classes, case_classes = corpus_classes(checkpoint_train_config(args.model))
    model = load_model(args.model, device)
    corpus = open_split(
        paths["cuts"], paths["acoustic_scp"], paths["text_scp"], 0, classes, case_classes, model.config.window_centre
    )
    mine = job_share(list(range(len(corpus.utterances))), args.job, args.nj)
    words = 0
    with ShardWriter(prefix) as writer:
        for key, post in utterance_posteriors(model, corpus, device, mine, progress=True):
            writer.write(key, post)
            words += len(post)
    logging.info("job %d/%d: %d utterances, %d words -> %s.scp", args.job, args.nj, len(mine), words, prefix)


if __name__ == "__main__":
    main()
