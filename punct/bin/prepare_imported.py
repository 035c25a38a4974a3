"""A corpus of your own (lhotse manifests or Kaldi data dirs per split) -> the MuST-C recipe's manifests with words
and punctuation labels (punct/corpora/imported.py).

  python -m punct.bin.prepare_imported --form manifests --train-parts train-clean-100 train-clean-360 \\
      --dev-part dev-clean --test-part test-clean --text-field orig_text data/libritts_manifests data/manifests
  python -m punct.bin.prepare_imported --form data-dir /data/kaldi/data data/manifests   # data/{train,dev,test}
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from punct.bin.prepare_mustc import already_prepared, files_fingerprint, write_report
from punct.corpora.imported import FORMS, part_manifest_files, prepare_imported
from punct.text.normalize import NormalizeConfig, add_normalize_arguments, format_mark_table
from punct.utils.cli import HelpFormatter, add_rerun_arguments
from punct.utils.config import config_from_args
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument(
        "source_dir",
        type=Path,
        help="folder of lhotse manifests (--form manifests) or of Kaldi data dirs, one per part",
    )
    parser.add_argument("output_dir", type=Path, help="where mustc_{recordings,supervisions}_<split>.jsonl.gz go")
    parser.add_argument(
        "--form",
        choices=FORMS,
        required=True,
        help="manifests: <corpus>_{recordings,supervisions}_<part>.jsonl.gz; data-dir: <part>/wav.scp, "
        "text, [segments, utt2spk]",
    )
    parser.add_argument("--train-parts", nargs="+", default=["train"], help="the parts that make the train split")
    parser.add_argument("--dev-part", nargs="+", default=["dev"], help="the part(s) that make the dev split")
    parser.add_argument("--test-part", nargs="+", default=["test"], help="the part(s) that make the test split")
    parser.add_argument(
        "--text-field",
        default="text",
        help="supervision field with the punctuated text: text, or a key of custom (LibriTTS: "
        "orig_text); manifests only",
    )
    parser.add_argument(
        "--end-tolerance",
        type=float,
        default=0.1,
        help="a segment ending at most this many seconds after its audio is clipped, not skipped",
    )
    parser.add_argument(
        "--sampling-rate",
        type=int,
        default=16000,
        help="recordings at another rate are resampled to this one (a lhotse transform)",
    )
    add_rerun_arguments(parser, "rewrite manifests that are already complete")
    add_normalize_arguments(parser)
    return parser


def input_files(args: argparse.Namespace, parts: dict[str, list[str]]) -> list[Path]:
    """The files that are read: the parts' manifests, or the tables of their Kaldi data dirs."""
    files: list[Path] = []
    for names in parts.values():
        for part in names:
            if args.form == "manifests":
                files += part_manifest_files(args.source_dir, part)
            else:
                files += sorted(p for p in (args.source_dir / part).glob("*") if p.is_file())
    return files


def main() -> None:
    args = get_parser().parse_args()
    setup_logging(args.log_file)
    norm = config_from_args(NormalizeConfig, args, args.normalize_config, prefix="norm-")
    log_config({"args": vars(args), "normalize": norm})
    parts = {"train": args.train_parts, "dev": args.dev_part, "test": args.test_part}
    if not args.source_dir.is_dir():
        raise SystemExit(f"{args.source_dir}: no such directory")
    try:
        stamp = json.dumps(
            {
                "source_dir": str(args.source_dir.resolve()),
                "form": args.form,
                "parts": parts,
                "inputs": files_fingerprint([f.resolve() for f in input_files(args, parts)]),
                "text_field": args.text_field,
                "end_tolerance": args.end_tolerance,
                "sampling_rate": args.sampling_rate,
                "normalize": repr(norm),
            },
            sort_keys=True,
        )
        print(format_mark_table(norm))
        if already_prepared(args.output_dir, stamp, args.overwrite):
            return
        begin = time.time()
        _, stats = prepare_imported(
            args.form,
            args.source_dir,
            args.output_dir,
            parts=parts,
            norm=norm,
            text_field=args.text_field,
            end_tolerance=args.end_tolerance,
            sampling_rate=args.sampling_rate,
        )
    except (FileNotFoundError, ValueError) as e:  # bad input: the message names the file (and line)
        logging.error("%s", e)
        raise SystemExit(1) from None
    write_report(args.output_dir, stats, stamp)
    logging.info("prepared %s (%s) -> %s in %.1f s", args.source_dir, args.form, args.output_dir, time.time() - begin)


if __name__ == "__main__":
    main()
