"""MuST-C v1/v2 (or the mini corpus, same layout) -> lhotse manifests with words and punctuation labels.

python -m punct.bin.prepare_mustc /data/MUSTC_v1.0/en-de data/manifests
python -m punct.bin.prepare_mustc --unipunc-dir /data/unipunc /data/MUSTC_v1.0/en-de data/manifests
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import time
from pathlib import Path

from punct.corpora.mustc import format_summary, prepare_mustc, prepare_unipunc
from punct.text.normalize import NormalizeConfig, add_normalize_arguments, format_mark_table
from punct.utils.atomic import atomic_write_text
from punct.utils.cli import add_rerun_arguments
from punct.utils.config import config_from_args
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("corpus_dir", type=Path, help="MuST-C en-X directory (holds data/{train,dev,tst-COMMON})")
    parser.add_argument("output_dir", type=Path, help="where mustc_{recordings,supervisions}_<split>.jsonl.gz go")
    parser.add_argument(
        "--unipunc-dir",
        type=Path,
        default=None,
        help="folder with UniPunc's train-audio.json and test-audio.json: use that split instead",
    )
    parser.add_argument("--language", default="en", help="suffix of the source-language text file")
    parser.add_argument(
        "--end-tolerance",
        type=float,
        default=0.1,
        help="a segment ending at most this many seconds after its wav is clipped, not skipped",
    )
    parser.add_argument("--seed", type=int, default=42, help="seed of the UniPunc train/dev split")
    parser.add_argument(
        "--splits",
        nargs="+",
        default=["train", "dev", "test"],
        help="splits to prepare (test = tst-COMMON); UniPunc always gives train, dev and test",
    )
    parser.add_argument("--dev-fraction", type=float, default=0.1, help="share of UniPunc train that becomes dev")
    add_rerun_arguments(parser, "rewrite manifests that are already complete")
    add_normalize_arguments(parser)
    return parser


def input_fingerprint(args: argparse.Namespace) -> str:
    """Size and modification time of every text/json input, so a rebuilt corpus is prepared again."""
    files = (
        sorted(args.corpus_dir.glob("**/txt/*"))
        + sorted(args.corpus_dir.glob("*/wav"))
        + sorted(args.corpus_dir.glob("data/*/wav"))
    )
    if args.unipunc_dir is not None:
        files += sorted(args.unipunc_dir.glob("*.json"))
    return files_fingerprint(files)


def files_fingerprint(files: list[Path]) -> str:
    """A digest of the paths, sizes and modification times of ``files``: it changes when an input does."""
    digest = hashlib.sha1()
    for f in files:
        st = f.stat()
        digest.update(f"{f}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def main() -> None:
    args = get_parser().parse_args()
    setup_logging(args.log_file)
    norm = config_from_args(NormalizeConfig, args, args.normalize_config, prefix="norm-")
    log_config({"args": vars(args), "normalize": norm})
    stamp = json.dumps(
        {
            "corpus_dir": str(args.corpus_dir.resolve()),
            "inputs": input_fingerprint(args),
            "unipunc_dir": str(args.unipunc_dir.resolve()) if args.unipunc_dir else None,
            "language": args.language,
            "end_tolerance": args.end_tolerance,
            "seed": args.seed,
            "dev_fraction": args.dev_fraction,
            "normalize": repr(norm),
            "splits": args.splits,
        },
        sort_keys=True,
    )
    print(format_mark_table(norm))
    if already_prepared(args.output_dir, stamp, args.overwrite):
        return
    begin = time.time()
    if args.unipunc_dir is not None:
        _, stats = prepare_unipunc(
            args.corpus_dir,
            args.unipunc_dir,
            args.output_dir,
            seed=args.seed,
            dev_fraction=args.dev_fraction,
            norm=norm,
            end_tolerance=args.end_tolerance,
        )
    else:
        _, stats = prepare_mustc(
            args.corpus_dir,
            args.output_dir,
            splits=args.splits,
            norm=norm,
            language=args.language,
            end_tolerance=args.end_tolerance,
        )
    write_report(args.output_dir, stats, stamp)
    logging.info("prepared %s -> %s in %.1f s", args.corpus_dir, args.output_dir, time.time() - begin)


def already_prepared(output_dir: Path, stamp: str, overwrite: bool) -> bool:
    """True (and the summary printed) when ``output_dir`` holds manifests prepared from the inputs ``stamp``
    describes; else the marker is removed, so that an interrupted preparation never looks complete."""
    done = output_dir / ".mustc.done"
    if done.exists() and not overwrite:
        if done.read_text(encoding="utf-8").strip() == stamp:
            logging.info(
                "%s: manifests already prepared from the same inputs; skipping (--overwrite redoes)", output_dir
            )
            print((output_dir / "mustc_summary.txt").read_text(encoding="utf-8"), end="")
            return True
        logging.info("%s: prepared from other inputs before; preparing again", output_dir)
    done.unlink(missing_ok=True)
    return False


def write_report(output_dir: Path, stats: dict, stamp: str) -> None:
    """``mustc_summary.txt``, ``mustc_skipped.json`` and last the ``.mustc.done`` marker with ``stamp``."""
    summary = format_summary(stats)
    atomic_write_text(output_dir / "mustc_summary.txt", summary + "\n")
    # Segments left out of the manifests, per split and reason: stage 8 shows them in RESULTS.md.
    atomic_write_text(
        output_dir / "mustc_skipped.json",
        json.dumps({split: dict(sorted(st.skipped.items())) for split, st in stats.items()}, indent=1, sort_keys=True)
        + "\n",
    )
    print(summary)
    atomic_write_text(output_dir / ".mustc.done", stamp + "\n")


if __name__ == "__main__":
    main()
