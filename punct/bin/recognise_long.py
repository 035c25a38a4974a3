"""egs/parczech stage 2: recognised words with times of the long recordings (chunked CTC recognition).

  # per job (JOB=1..nj): a share of the recordings, with the recipe's AM (exp/am) ...
  python -m punct.bin.recognise_long --manifest-dir data/manifests --am-dir exp/am \\
      --out-dir exp/asr/words --job 1 --nj 2 [--ref-dir data/corpus_mini/synth]
  # ... or with a local transformers CTC folder (processor + model, e.g. a Czech wav2vec2)
  python -m punct.bin.recognise_long --manifest-dir data/manifests --asr-model /models/wav2vec2-cs \\
      --out-dir exp/asr/words --job 1 --nj 2
  # beam search with a word n-gram LM (ARPA: punct.bin.build_word_lm, or KenLM's) instead of greedy decoding
  python -m punct.bin.recognise_long ... --lm exp/asr/lm/words.arpa --decode-config conf/decode.yaml
  # then once: merge counts and WER over all recordings
  python -m punct.bin.recognise_long --manifest-dir data/manifests --am-dir exp/am \\
      --out-dir exp/asr/words --summary exp/asr/summary.txt

Per recording: ``<out-dir>/<recording id>.words.tsv`` (``word<TAB>start<TAB>end``, the format of the
mini corpus' synth folder) and ``<out-dir>/<recording id>.stats.json`` (chunks, merge cases, CPU
time, and with ``--ref-dir`` the word errors against ``<ref-dir>/<recording id>.words.tsv``).  Both
are written atomically, the words file last: a recording whose words file is newer than the model (the AM
checkpoint, or the newest file of the --asr-model folder) and the LM, and whose stats name that model and
decoder, is done and skipped on a re-run unless ``--overwrite``.  The jobs and the summary:
``punct.recognition.recordings``.  See ``punct.recognition.recogniser`` (the AM's features and CMVN) and
``punct.recognition.transformers_ctc`` (frame rate and vocabulary of a transformers model),
``punct.recognition.beam_search``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import torch
from lhotse import load_manifest

from punct.recognition.beam_search import BeamSearchConfig
from punct.recognition.chunks import ChunkConfig
from punct.recognition.recordings import RecognitionJob, recognise_job, write_summary
from punct.utils.cli import add_device_arguments
from punct.utils.config import add_config_arguments, config_from_args, options_as
from punct.utils.jobs import add_job_arguments
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument(
        "--manifest-dir", type=Path, required=True, help="stage 0 output (<prefix>_recordings_all.jsonl.gz)"
    )
    parser.add_argument("--prefix", required=True, help="manifest name prefix (e.g. parczech)")
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument("--am-dir", type=Path, help="the recipe's AM folder: best-valid-loss.pt and mfcc.yaml")
    model.add_argument(
        "--asr-model",
        type=Path,
        help="instead of --am-dir: a local transformers CTC folder (processor + model, e.g. wav2vec2)",
    )
    parser.add_argument("--checkpoint", default="best-valid-loss.pt", help="checkpoint name inside --am-dir")
    parser.add_argument("--out-dir", type=Path, required=True, help="output folder of <recording id>.words.tsv")
    parser.add_argument(
        "--ref-dir",
        type=Path,
        default=None,
        help="optional folder of reference <recording id>.words.tsv (the synth folder) for the WER",
    )
    parser.add_argument("--config", type=Path, default=None, help="YAML with ChunkConfig values")
    parser.add_argument(
        "--lm",
        type=Path,
        default=None,
        help="a word n-gram LM (ARPA) for beam search (BeamSearchConfig); without it: greedy decoding",
    )
    parser.add_argument(
        "--decode-config", type=Path, default=None, help="YAML with BeamSearchConfig values (with --lm)"
    )
    parser.add_argument(
        "--summary",
        type=Path,
        default=None,
        help="instead of recognising: sum the stats of every recording into this file",
    )
    parser.add_argument("--overwrite", action="store_true", help="recognise finished recordings again")
    parser.add_argument(
        "--min-words-per-minute",
        type=float,
        default=10.0,
        help="with --summary: exit 1 when fewer words per minute of audio were recognised (speech has "
        "~100-150): the recogniser learned (almost) nothing; 0: no check",
    )
    add_device_arguments(parser)
    add_config_arguments(parser, ChunkConfig)
    add_config_arguments(parser, BeamSearchConfig)
    add_job_arguments(parser)
    return parser


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    setup_logging()
    config = config_from_args(ChunkConfig, args, args.config)
    beam_config = config_from_args(BeamSearchConfig, args, args.decode_config)
    log_config({**vars(args), "chunks": config, "beam_search": beam_config}, "args")
    torch.set_num_threads(args.num_threads)
    recordings = load_manifest(args.manifest_dir / f"{args.prefix}_recordings_all.jsonl.gz")
    if args.summary is not None:
        problem = write_summary(args.summary, args.out_dir, recordings, args.min_words_per_minute)
        if problem:
            logging.error("%s", problem)
            return 1
        return 0
    counts = recognise_job(options_as(RecognitionJob, args), recordings, config, beam_config)
    logging.info("job %d: %s", args.job, counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
