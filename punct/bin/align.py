"""Stage 3: CTC forced alignment of each supervision's reference words (one job's share, or merge).

  python -m punct.bin.align --fbank-dir data/fbank --am-dir exp/am --splits dev test --job 1 --nj 2
  python -m punct.bin.align --fbank-dir data/fbank --am-dir exp/am --splits dev test --nj 2 --merge \\
      --word-times-dir data/corpus_mini/data
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
import time
from pathlib import Path

import torch
from lhotse import load_manifest_lazy

from punct.am.align import align_job, hypothesis_starts, job_paths, merge_alignments
from punct.am.align_quality import format_summary, read_word_times, start_errors, summarise
from punct.am.checkpoint import add_am_input_arguments, load_model
from punct.am.dataset import load_split
from punct.features.compute import cuts_path
from punct.io.jsonl import count_records, record_ids
from punct.utils.atomic import atomic_write_text, is_done, mark_done
from punct.utils.cli import add_device_arguments, parse_and_log
from punct.utils.device import resolve_device
from punct.utils.jobs import add_job_arguments, check_job, job_share_lazy


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_am_input_arguments(parser, "align")
    parser.add_argument(
        "--ali-dir", type=Path, default=None, help="output folder [<am-dir>/ali]; aligned cuts go to --fbank-dir"
    )
    parser.add_argument("--merge", action="store_true", help="merge the jobs' outputs and measure quality")
    parser.add_argument("--max-fail", type=float, default=0.05, help="fail when more than this share cannot be aligned")
    parser.add_argument(
        "--min-aligned",
        type=int,
        default=1,
        help="fail when fewer cuts of a split are aligned (stage 4 would have nothing to train on)",
    )
    parser.add_argument(
        "--word-times-dir",
        type=Path,
        default=None,
        help="corpus data folder with <split>/txt/<split>.word_times.jsonl (test: tst-COMMON), optional",
    )
    parser.add_argument("--overwrite", action="store_true", help="redo a finished job")
    add_device_arguments(parser)
    add_job_arguments(parser)
    return parser


def alignment_problem(
    split: str, aligned: int, total: int, reasons: dict[str, int], max_fail: float, min_aligned: int
) -> str | None:
    """Why a split's alignment is too poor to go on (more than ``max_fail`` failed, or fewer than ``min_aligned``
    aligned), with what helps; None when it is not."""
    failed = total - aligned
    if aligned >= min_aligned and not (total and failed / total > max_fail):
        return None
    share = f"{100 * failed / total:.1f}%" if total else "no cuts"
    helps = []
    if "unknown character" in reasons:
        helps.append(
            "'unknown character': the AM's tokens (tokens.txt) lack characters of the text: train the AM on "
            "text that has them, or normalise them away (conf/normalize.yaml)"
        )
    if set(reasons) - {"unknown character"} or not reasons:
        helps.append(
            "'no path', 'too few frames', 'word without frames': the AM learned too little (its dev WER: "
            "wer_dev.txt): more AM training data (--am-extra-size mini_am) or more epochs (num_epochs)"
        )
    return (
        f"{split}: {aligned} of {total} cuts aligned, {failed} ({share}) failed (by reason: {reasons}): more than "
        f"--max-fail {100 * max_fail:.1f}% or fewer than --min-aligned {min_aligned} aligned, too little for the "
        "stages after it.  What helps: " + "; ".join(helps) + "."
    )


def merge_split(args, split: str, ali_dir: Path) -> bool:
    """Merges one split; False when too many cuts failed."""
    split_cuts = cuts_path(args.fbank_dir, split, args.prefix)
    total = count_records(split_cuts, "file (run stage 1)")
    out = cuts_path(args.fbank_dir, split, args.prefix, "_ali")
    order = functools.partial(record_ids, split_cuts, "file (run stage 1)")  # the split's cut ids, read lazily
    counts = merge_alignments(ali_dir, split, args.nj, order, out)
    reasons = {k: v for k, v in counts.items() if k != "aligned"}
    covered = counts["aligned"] + sum(reasons.values())
    if covered != total:  # every cut of a job's share is aligned or failed: these jobs did not share this split
        logging.error(
            "%s: the %d jobs' outputs cover %d of the split's %d cuts: outputs of another --nj or split, kept from an "
            "interrupted run? Align again with --overwrite true",
            split,
            args.nj,
            covered,
            total,
        )
        return False
    logging.info(
        "%s: %d of %d cuts aligned; failures by reason: %s (list: %s)",
        split,
        counts["aligned"],
        total,
        reasons,
        ali_dir / f"{split}.failed",
    )
    if args.word_times_dir is not None:
        # MuST-C layout names the test split tst-COMMON
        candidates = [
            args.word_times_dir / name / "txt" / f"{name}.word_times.jsonl"
            for name in ([split, "tst-COMMON"] if split == "test" else [split])
        ]
        word_times = next((p for p in candidates if p.is_file()), candidates[0])
        if not word_times.is_file():
            logging.warning("%s: no such file; alignment error not measured", word_times)
        else:
            errors, qcounts = start_errors(read_word_times(word_times), hypothesis_starts(load_manifest_lazy(out)))
            summary = summarise(errors, qcounts)
            text = format_summary(split, summary)
            atomic_write_text(ali_dir / f"{split}.ali_error.txt", text)
            atomic_write_text(ali_dir / f"{split}.ali_error.json", json.dumps(summary, indent=1) + "\n")
            logging.info("%s", text.strip())
    problem = alignment_problem(split, counts["aligned"], total, reasons, args.max_fail, args.min_aligned)
    if problem:
        logging.error("%s (list: %s)", problem, ali_dir / f"{split}.failed")
        return False
    mark_done(out)
    return True


def main(argv=None) -> int:
    args = parse_and_log(get_parser(), argv, "args")
    torch.set_num_threads(args.num_threads)
    check_job(args.job, args.nj)
    ali_dir = args.ali_dir or args.am_dir / "ali"
    if args.merge:
        ok = [merge_split(args, split, ali_dir) for split in args.splits]
        return 0 if all(ok) else 1
    device = resolve_device(args.device)
    model, tokens = load_model(args.am_dir / args.checkpoint, device)
    for split in args.splits:
        cuts_out = job_paths(ali_dir, split, args.job)[0]
        if is_done(cuts_out, newer_than=args.am_dir / args.checkpoint) and not args.overwrite:
            logging.info("%s is done; skipping", cuts_out)
            continue
        cuts, cmvn = load_split(args.fbank_dir, split, args.prefix, lazy=True)
        share = job_share_lazy(cuts, args.job, args.nj)  # only this job's cuts are held
        start = time.process_time()
        counts = align_job(model, share, cmvn, tokens, ali_dir, split, args.job, device)
        logging.info("%s job %d: %s in %.1f CPU s", split, args.job, dict(counts), time.process_time() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
