"""egs/parczech stage 2: recognised words with times of the long recordings (chunked CTC recognition).

  # per job (JOB=1..nj): a share of the recordings
  python -m punct.bin.recognise_long --manifest-dir data/manifests --am-dir exp/am \\
      --out-dir exp/asr/words --job 1 --nj 2 [--ref-dir data/corpus_mini/synth]
  # then once: merge counts and WER over all recordings
  python -m punct.bin.recognise_long --manifest-dir data/manifests --am-dir exp/am \\
      --out-dir exp/asr/words --summary exp/asr/summary.txt

Per recording: ``<out-dir>/<recording id>.words.tsv`` (``word<TAB>start<TAB>end``, the format of the
mini corpus' synth folder) and ``<out-dir>/<recording id>.stats.json`` (chunks, merge cases, CPU
time, and with ``--ref-dir`` the word errors against ``<ref-dir>/<recording id>.words.tsv``).  Both
are written atomically, the words file last: a recording whose words file is newer than the model's
checkpoint is done and skipped on a re-run unless ``--overwrite``.  See ``punct.asr.recogniser`` for the features and CMVN.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Dict, List

import torch
from lhotse import RecordingSet, load_manifest
from tqdm import tqdm

from punct.asr.recogniser import load_am, recognise_recording, total_wer, word_errors
from punct.asr.chunks import ChunkConfig
from punct.align.dataset import read_recognised_words, write_recognised_words
from punct.utils.atomic import atomic_write_text
from punct.utils.cli import add_device_arguments
from punct.utils.config import add_config_arguments, config_from_args
from punct.utils.device import resolve_device
from punct.utils.jobs import add_job_arguments, check_job, job_share
from punct.utils.logging import log_config, setup_logging

RECORDINGS = "parczech_recordings_all.jsonl.gz"


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--manifest-dir", type=Path, required=True, help=f"stage 0 output ({RECORDINGS})")
    parser.add_argument("--am-dir", type=Path, required=True, help="AM folder: best-valid-loss.pt and mfcc.yaml")
    parser.add_argument("--checkpoint", default="best-valid-loss.pt", help="checkpoint name inside --am-dir")
    parser.add_argument("--out-dir", type=Path, required=True, help="output folder of <recording id>.words.tsv")
    parser.add_argument("--ref-dir", type=Path, default=None,
                        help="optional folder of reference <recording id>.words.tsv (the synth folder) for the WER")
    parser.add_argument("--config", type=Path, default=None, help="YAML with ChunkConfig values")
    parser.add_argument("--summary", type=Path, default=None,
                        help="instead of recognising: sum the stats of every recording into this file")
    parser.add_argument("--overwrite", action="store_true", help="recognise finished recordings again")
    add_device_arguments(parser)
    add_config_arguments(parser, ChunkConfig)
    add_job_arguments(parser)
    return parser


def words_path(out_dir: Path, recording_id: str) -> Path:
    return out_dir / f"{recording_id}.words.tsv"


def stats_path(out_dir: Path, recording_id: str) -> Path:
    return out_dir / f"{recording_id}.stats.json"


def is_recognised(out_dir: Path, recording_id: str, checkpoint: Path) -> bool:
    """A words file made with this checkpoint (written after it last changed)."""
    path = words_path(out_dir, recording_id)
    return path.is_file() and checkpoint.is_file() and path.stat().st_mtime_ns >= checkpoint.stat().st_mtime_ns


def recognise_job(args, recordings: RecordingSet, config: ChunkConfig) -> Dict[str, int]:
    device = resolve_device(args.device)
    share = job_share([r for r in recordings], args.job, args.nj)
    checkpoint = args.am_dir / args.checkpoint
    todo = [r for r in share if args.overwrite or not is_recognised(args.out_dir, r.id, checkpoint)]
    logging.info("job %d/%d: %d recordings, %d done already", args.job, args.nj, len(share), len(share) - len(todo))
    if not todo:
        return {"recognised": 0, "skipped_done": len(share)}
    model, tokens, feat_config = load_am(args.am_dir, args.checkpoint, device)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for rec in tqdm(todo, desc=f"recognise job {args.job}", mininterval=10):
        words, counts = recognise_recording(rec, model, tokens, feat_config, config, device)
        stats: Dict[str, object] = {"recording": rec.id, **counts}
        if args.ref_dir is not None:
            ref_path = words_path(args.ref_dir, rec.id)
            if ref_path.is_file():
                stats["errors"] = word_errors([w.word for w in read_recognised_words(ref_path)], [w.word for w in words])
            else:
                logging.warning("%s: no such file; no WER for %s", ref_path, rec.id)
        atomic_write_text(stats_path(args.out_dir, rec.id), json.dumps(stats) + "\n")
        write_recognised_words(words_path(args.out_dir, rec.id), words)
        logging.info("%s", json.dumps(stats))
    return {"recognised": len(todo), "skipped_done": len(share) - len(todo)}


def summarise(out_dir: Path, recordings: RecordingSet) -> str:
    """Totals over the recordings' stats files; raises if a recording is not finished."""
    missing = [r.id for r in recordings if not words_path(out_dir, r.id).is_file()]
    if missing:
        raise FileNotFoundError(f"{out_dir}: {len(missing)} recordings not recognised yet, e.g. {missing[0]}")
    totals: Dict[str, float] = {}
    errors: List[Dict[str, int]] = []
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
    lines = [f"recordings {len(recordings)}, {totals['duration'] / 3600:.2f} h, {int(totals['chunks'])} chunks, "
             f"{int(totals['words'])} words, {totals['cpu_seconds']:.0f} CPU s",
             "chunk joins: " + ", ".join(f"{k} {int(totals[k])}" for k in ("matched", "discarded", "concatenated"))]
    wer = total_wer(errors)
    if wer is not None:
        lines.append(f"long-recording {wer.summary().split(' %SER')[0]} ({len(errors)} recordings with a reference)")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    setup_logging()
    config = config_from_args(ChunkConfig, args, args.config)
    log_config({**vars(args), "chunks": config}, "args")
    torch.set_num_threads(args.num_threads)
    recordings = load_manifest(args.manifest_dir / RECORDINGS)
    if args.summary is not None:
        text = summarise(args.out_dir, recordings)
        atomic_write_text(args.summary, text)
        logging.info("%s:\n%s", args.summary, text.strip())
        return 0
    check_job(args.job, args.nj)
    counts = recognise_job(args, recordings, config)
    logging.info("job %d: %s", args.job, counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
