"""Punctuate and case a recording with an egs/parczech stage-4 model (9 marks + capitalisation), offline or as it
arrives (``punct.inference.itn_stream``).

The words and their times come from a recogniser as a CTM (``<utt> 1 <start> <dur> <word>``); the audio from a
file or, with ``--wav -``, raw 16-bit mono PCM at the model's rate on stdin.  Each word is printed as soon as it is
ready (flushed per word; a line ends after . ! or ?):

  sox sitting.wav -t raw -r 16000 -b 16 -c 1 -e signed - | \\
    python -m punct.bin.punctuate_itn --model exp/mm/best-valid-f1.pt --wav - --ctm sitting.ctm --latency 1.0
  # an exported folder (punct-export; the recipe's exp/model): its default model, or --system text|mm|mm_pe
  python -m punct.bin.punctuate_itn --model egs/parczech/exp/model --wav sitting.wav --ctm sitting.ctm

``--latency inf`` (the default) labels every word from its whole segment, i.e. offline.  With ``--out`` a JSON line per
word (word, times, mark, case, when it was labelled, final) is written too.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from pathlib import Path

import torch

from punct.am.ctm import read_timed_words
from punct.inference.itn_stream import SENTENCE_ENDS, ItnStreamer, SegmentRule
from punct.inference.model_folder import itn_model, read_model_folder
from punct.inference.streaming import LinePrinter, pcm_chunks, run_stream, wav_chunks
from punct.models.cross_attention.checkpoint import load_model
from punct.utils.atomic import atomic_write_text
from punct.utils.cli import parse_and_log


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--model",
        type=Path,
        required=True,
        help="an exported model folder (punct-export; the recipe's exp/model), or a stage-4 model file "
        "exp/<text|mm|mm_pe>/best-valid-f1.pt",
    )
    parser.add_argument("--system", default=None, help="with a model folder: which of its models [its default]")
    parser.add_argument("--wav", required=True, help="the audio: a file, or - for raw 16-bit mono PCM on stdin")
    parser.add_argument("--ctm", type=Path, required=True, help="the recogniser's words with times")
    parser.add_argument("--utt-id", default=None, help="the CTM utterance of the audio (default: its only one)")
    parser.add_argument("--latency", type=float, default=math.inf, help="seconds after a word's end; inf: offline")
    parser.add_argument("--pause-split", type=float, default=SegmentRule.pause_split, help="seconds of pause")
    parser.add_argument("--max-segment", type=float, default=SegmentRule.max_segment, help="seconds")
    parser.add_argument("--chunk", type=float, default=0.1, help="seconds of audio read at a time")
    parser.add_argument("--out", type=Path, default=None, help="a JSON line per word")
    parser.add_argument("--num-threads", type=int, default=1)
    return parser


def load_itn_model(path: Path, system: str | None):
    """The model of an exported folder (its ``system``, or its default) or of a stage-4 model file."""
    if not path.is_dir():
        if system is not None:
            raise SystemExit("punctuate_itn: --system picks a model of an exported folder; --model is a file")
        return load_model(path)
    try:
        checkpoint, am_dir = itn_model(read_model_folder(path, kind="itn"), system)
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"punctuate_itn: {e}") from None
    return load_model(checkpoint, am_dir=am_dir)


def main(argv: list[str] | None = None) -> int:
    args = parse_and_log(get_parser(), argv)
    torch.set_num_threads(args.num_threads)
    if not args.ctm.is_file():
        raise SystemExit(f"punctuate_itn: {args.ctm}: no such file")
    try:
        table = read_timed_words(args.ctm)
    except ValueError as e:
        raise SystemExit(f"punctuate_itn: {e}") from None
    utt_id = args.utt_id or (next(iter(table)) if len(table) == 1 else Path(args.wav).stem)
    if utt_id not in table:
        raise SystemExit(f"punctuate_itn: no words of {utt_id!r} in {args.ctm} (give --utt-id)")
    model, cfg, kind = load_itn_model(args.model, args.system)
    streamer = ItnStreamer(model, cfg, args.latency, SegmentRule(args.pause_split, args.max_segment), utt_id)
    chunk = max(1, int(round(args.chunk * streamer.rate)))
    if args.wav == "-":
        chunks = pcm_chunks(sys.stdin.buffer, chunk)
    else:
        chunks = wav_chunks(Path(args.wav), chunk, streamer.rate)
    printer = LinePrinter(sys.stdout, SENTENCE_ENDS)
    words, stats = run_stream(streamer, chunks, table[utt_id], printer)
    printer.close()
    summary = stats.summary()
    logging.info(
        "%s: %d words (%s model) in %d segments from %.1f s of audio; latency %s s: %d final; RTF %.4f (CPU %.4f)",
        utt_id,
        len(words),
        kind,
        streamer.segments,
        summary["audio_seconds"],
        args.latency,
        sum(w.final for w in words),
        summary["rtf"],
        summary["rtf_cpu"],
    )
    if args.out is not None:
        fields = ("word", "start", "end", "label", "case", "emitted_at", "final", "first")
        lines = [json.dumps({f: getattr(w, f) for f in fields}, ensure_ascii=False) + "\n" for w in words]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out, "".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
