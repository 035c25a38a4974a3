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
decoder, is done and skipped on a re-run unless ``--overwrite``.  See ``punct.recognition.recogniser`` (the
AM's features and CMVN) and ``punct.recognition.transformers_ctc`` (frame rate and vocabulary of a
transformers model), ``punct.recognition.beam_search``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import torch
from lhotse import RecordingSet, load_manifest

from punct.labels import read_recognised_words, write_recognised_words
from punct.recognition.beam_search import BeamSearchConfig, CtcBeamSearch
from punct.recognition.chunks import ChunkConfig
from punct.recognition.recogniser import ChunkRecogniser, TdnnRecogniser, recognise_recording, total_wer, word_errors
from punct.recognition.transformers_ctc import load_transformers_ctc
from punct.recognition.word_lm import read_word_lm
from punct.utils.atomic import atomic_write_text
from punct.utils.cli import add_device_arguments
from punct.utils.config import add_config_arguments, config_from_args
from punct.utils.device import resolve_device
from punct.utils.jobs import add_job_arguments, check_job, job_share
from punct.utils.logging import log_config, setup_logging
from punct.utils.progress import progress

GREEDY = "greedy"


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


def words_path(out_dir: Path, recording_id: str) -> Path:
    return out_dir / f"{recording_id}.words.tsv"


def stats_path(out_dir: Path, recording_id: str) -> Path:
    return out_dir / f"{recording_id}.stats.json"


def model_file(args) -> Path:
    """The file whose change makes earlier outputs stale: the newest of the AM checkpoint (or the files of
    --asr-model) and the LM."""
    if args.am_dir is not None:
        files = [args.am_dir / args.checkpoint]
    else:
        files = [p for p in args.asr_model.glob("*") if p.is_file()] if args.asr_model.is_dir() else []
        if not files:
            raise FileNotFoundError(
                f"{args.asr_model}: no such folder, or it is empty; --asr-model needs a "
                "transformers CTC folder (processor + model)"
            )
    if args.lm is not None:
        files.append(args.lm)
    return max(files, key=lambda p: p.stat().st_mtime_ns)


def model_name(args) -> str:
    return str((args.am_dir / args.checkpoint if args.am_dir is not None else args.asr_model).resolve())


def is_recognised(out_dir: Path, recording_id: str, model: Path, name: str, decoder: str) -> bool:
    """A words file made with this model and decoder: written after the model file last changed, and its stats
    name that model and decoder (the outputs of another recogniser in the same folder are not done)."""
    path = words_path(out_dir, recording_id)
    if not (path.is_file() and model.is_file() and path.stat().st_mtime_ns >= model.stat().st_mtime_ns):
        return False
    try:
        stats = json.loads(stats_path(out_dir, recording_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return stats.get("model") == name and stats.get("decoder", GREEDY) == decoder


def load_recogniser(args, device: torch.device) -> ChunkRecogniser:
    if args.am_dir is not None:
        return TdnnRecogniser.from_dir(args.am_dir, args.checkpoint, device)
    return load_transformers_ctc(args.asr_model, device)


def decoder_name(args, beam_config: BeamSearchConfig) -> str:
    if args.lm is None:
        return GREEDY
    return f"{CtcBeamSearch.describe_config(beam_config)} with LM {args.lm.resolve()}"


def recognise_job(args, recordings: RecordingSet, config: ChunkConfig, beam_config: BeamSearchConfig) -> dict[str, int]:
    device = resolve_device(args.device)
    share = job_share([r for r in recordings], args.job, args.nj)
    model, name, decoder = model_file(args), model_name(args), decoder_name(args, beam_config)
    todo = [r for r in share if args.overwrite or not is_recognised(args.out_dir, r.id, model, name, decoder)]
    logging.info("job %d/%d: %d recordings, %d done already", args.job, args.nj, len(share), len(share) - len(todo))
    if not todo:
        return {"recognised": 0, "skipped_done": len(share)}
    recogniser = load_recogniser(args, device)
    logging.info("recogniser: %s; decoder: %s", recogniser.name, decoder)
    decode = None
    if args.lm is not None:
        lm = read_word_lm(args.lm)
        decode = CtcBeamSearch(recogniser.symbols, lm, beam_config).decode
        logging.info("%s: %d-gram LM, %d words", args.lm, lm.order, len(lm.vocab))
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for rec in progress(todo, desc=f"recognise job {args.job}", mininterval=10):
        words, counts = recognise_recording(rec, recogniser, config, decode)
        stats: dict[str, object] = {"recording": rec.id, "model": name, "decoder": decoder, **counts}
        if args.ref_dir is not None:
            ref_path = words_path(args.ref_dir, rec.id)
            if ref_path.is_file():
                stats["errors"] = word_errors(
                    [w.word for w in read_recognised_words(ref_path)], [w.word for w in words]
                )
            else:
                logging.warning("%s: no such file; no WER for %s", ref_path, rec.id)
        atomic_write_text(stats_path(args.out_dir, rec.id), json.dumps(stats) + "\n")
        write_recognised_words(words_path(args.out_dir, rec.id), words)
        logging.info("%s", json.dumps(stats))
    return {"recognised": len(todo), "skipped_done": len(share) - len(todo)}


def summarise(out_dir: Path, recordings: RecordingSet) -> tuple[str, dict[str, float]]:
    """The summary text and totals over the recordings' stats files; raises if a recording is not finished."""
    missing = [r.id for r in recordings if not words_path(out_dir, r.id).is_file()]
    if missing:
        raise FileNotFoundError(f"{out_dir}: {len(missing)} recordings not recognised yet, e.g. {missing[0]}")
    totals: dict[str, float] = {}
    errors: list[dict[str, int]] = []
    models, decoders = set(), set()
    for rec in recordings:
        path = stats_path(out_dir, rec.id)
        try:
            stats = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ValueError(f"{path}: unreadable stats ({e})") from None
        for key in ("chunks", "words", "duration", "cpu_seconds", "matched", "discarded", "concatenated"):
            totals[key] = totals.get(key, 0) + stats.get(key, 0)
        if "errors" in stats:
            errors.append(stats["errors"])
        models.add(stats.get("model", "unknown (stats of an older version)"))
        decoders.add(stats.get("decoder", GREEDY))
    lines = [
        f"recordings {len(recordings)}, {totals['duration'] / 3600:.2f} h, {int(totals['chunks'])} chunks, "
        f"{int(totals['words'])} words, {totals['cpu_seconds']:.0f} CPU s",
        "chunk joins: " + ", ".join(f"{k} {int(totals[k])}" for k in ("matched", "discarded", "concatenated")),
        "recognised with " + ", ".join(sorted(models)),
        "decoded by " + ", ".join(sorted(decoders)),
    ]
    wer = total_wer(errors)
    if wer is not None:
        lines.append(f"long-recording {wer.summary().split(' %SER')[0]} ({len(errors)} recordings with a reference)")
    return "\n".join(lines) + "\n", totals


def too_few_words(summary_path: Path, words: float, seconds: float, min_words_per_minute: float) -> str | None:
    """Why the recognised words are too few for stage 3 (under ``min_words_per_minute``), with what helps."""
    if min_words_per_minute <= 0 or seconds <= 0 or words / (seconds / 60) >= min_words_per_minute:
        return None
    return (
        f"{summary_path}: {int(words)} words recognised in {seconds / 3600:.2f} h of audio "
        f"({words / (seconds / 60):.1f} per minute, fewer than --min-words-per-minute {min_words_per_minute:g}): "
        "the recogniser learned (almost) nothing, and stage 3 would find no segments.  What helps: an AM with a "
        "lower dev WER (stage 1: more --am-data, --am-init <trained AM>, more epochs), or a trained recogniser "
        "(--asr-model <transformers CTC folder>, --am-dir <trained AM>)."
    )


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    setup_logging()
    config = config_from_args(ChunkConfig, args, args.config)
    beam_config = config_from_args(BeamSearchConfig, args, args.decode_config)
    log_config({**vars(args), "chunks": config, "beam_search": beam_config}, "args")
    torch.set_num_threads(args.num_threads)
    recordings = load_manifest(args.manifest_dir / f"{args.prefix}_recordings_all.jsonl.gz")
    if args.summary is not None:
        text, totals = summarise(args.out_dir, recordings)
        atomic_write_text(args.summary, text)
        logging.info("%s:\n%s", args.summary, text.strip())
        problem = too_few_words(args.summary, totals["words"], totals["duration"], args.min_words_per_minute)
        if problem:
            logging.error("%s", problem)
            return 1
        return 0
    check_job(args.job, args.nj)
    if args.lm is not None and not args.lm.is_file():
        raise FileNotFoundError(f"{args.lm}: no such file (--lm: a word n-gram LM in ARPA form)")
    counts = recognise_job(args, recordings, config, beam_config)
    logging.info("job %d: %s", args.job, counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
