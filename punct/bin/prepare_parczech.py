"""Stage 0 of egs/parczech: a ParCzech-layout corpus (audio + gold verticals) -> lhotse manifests.

python -m punct.bin.prepare_parczech /path/to/parczech-3.0-original data/manifests
"""

from __future__ import annotations

import argparse
from pathlib import Path

from punct.corpora.parczech import prepare_parczech
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument(
        "corpus_dir", type=Path, help="folder with <term>ps/audio/YYYY/MM/DD/<id>.{mp3,wav} and .vert files"
    )
    parser.add_argument("out_dir", type=Path, help="where parczech_{recordings,supervisions}_all.jsonl.gz go")
    parser.add_argument(
        "--numbers",
        choices=["spoken", "keep"],
        default="spoken",
        help="official tokens with digits (and %% § / +): said as words (num2words) or kept as written",
    )
    parser.add_argument("--log-file", type=Path, default=None, help="also log to this file")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = get_parser().parse_args(argv)
    setup_logging(args.log_file)
    log_config({"args": vars(args)})
    _, _, counts = prepare_parczech(args.corpus_dir, args.out_dir, numbers=args.numbers)
    print(" ".join(f"{k}={v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
