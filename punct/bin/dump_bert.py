#!/usr/bin/env python3
"""Dump per-word BERT vectors and posteriors of one job's share of a split (stage 6).

  python -m punct.bin.dump_bert --model-dir exp/bert/best-valid-f1 \\
      --supervisions data/manifests/mustc_supervisions_dev.jsonl.gz --out-dir exp/emb_bert/dev --job 1 --nj 2

Writes ``<out-dir>/vec.JOB.{ark,scp}`` (words x hidden: the final hidden state at each word's
last sub-token) and ``<out-dir>/post.JOB.{ark,scp}`` (words x classes softmax of the
``--head`` head, columns in the head's class order, PUNCT4.classes for MuST-C); key = supervision
id.  A job whose two shards are done is skipped unless ``--overwrite``.

``--word-vectors pretrained`` takes the vectors from the encoder the model was fine-tuned from (the
posteriors stay the fine-tuned model's): features for a second model (the punctuation TDNN) that are
not fitted to the training split's labels, whereas the fine-tuned encoder has learnt them there.
Which model and encoder gave the vectors is written to ``<out-dir>/source.json`` (``punct.io.sources``):
the TDNN records it, and ``punctuate`` computes its word vectors the same way.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import torch

from punct.io.shards import WordItems, add_word_dump_arguments, run_word_dump
from punct.io.sources import WORD_VECTORS, WordVectorSource, files_sha256, write_source
from punct.models.text.data import job_utterances
from punct.models.text.infer import word_outputs
from punct.models.text.model import PunctBert, pretrained_encoder_model, weight_files
from punct.utils.cli import HelpFormatter, parse_and_log
from punct.utils.progress import progress


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--model-dir", type=Path, required=True, help="PunctBert folder (exp/bert/best-valid-f1)")
    parser.add_argument("--supervisions", type=Path, required=True, help="supervisions of the split (lhotse jsonl.gz)")
    parser.add_argument("--out-dir", type=Path, required=True, help="output folder, e.g. exp/emb_bert/dev")
    parser.add_argument("--head", default="punct", help="head whose posteriors are dumped")
    parser.add_argument(
        "--max-length",
        type=int,
        default=0,
        help="encoder input length (tokens incl. specials); 0: the length the model was trained on",
    )
    parser.add_argument(
        "--context",
        type=int,
        default=-1,
        help="sub-tokens of context around predicted words in long texts; -1: the training value",
    )
    parser.add_argument("--batch-size", type=int, default=64, help="chunks per forward pass")
    parser.add_argument(
        "--word-vectors",
        choices=WORD_VECTORS,
        default="fine-tuned",
        help="encoder of the word vectors: the fine-tuned model's (EfficientPunct) or the pretrained "
        "one it started from (its punct_model.json base_encoder); posteriors: the fine-tuned model",
    )
    add_word_dump_arguments(parser)
    return parser


def bert_items(args: argparse.Namespace, device: torch.device) -> WordItems:
    model = PunctBert.from_pretrained(args.model_dir).to(device)
    model.head_spec(args.head)  # fails early with the known head names
    utterances = job_utterances(args.supervisions, args.job, args.nj, model.head_spec(args.head).classes)
    logging.info(
        "job %d/%d: %d utterances, %d words", args.job, args.nj, len(utterances), sum(len(u.words) for u in utterances)
    )
    max_length, context = model.inference_chunking(args.max_length, args.context)
    logging.info("chunks of at most %d tokens with %d sub-tokens of context", max_length, context)
    vector_model = None
    if args.word_vectors == "pretrained":
        vector_model = pretrained_encoder_model(model)
        logging.info("word vectors from the pretrained encoder %s", vector_model.base_encoder or "(offline MiniLM)")
    outputs = word_outputs(model, utterances, max_length, context, args.batch_size, device, vector_model)
    bar = progress(outputs, total=len(utterances), desc=f"dump job {args.job}", mininterval=10)
    return ((out.id, out.vectors, out.posteriors[args.head]) for out in bar)


def main(argv: list[str] | None = None) -> None:
    args = parse_and_log(get_parser(), argv)
    source = WordVectorSource(
        model_dir=str(args.model_dir),
        model_sha256=files_sha256(weight_files(args.model_dir)),
        word_vectors=args.word_vectors,
    )
    write_source(args.out_dir, source)  # every job writes the same record
    run_word_dump(args, lambda device: bert_items(args, device))


if __name__ == "__main__":
    main()
