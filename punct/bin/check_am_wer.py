"""After AM training (steps/train_am.sh): stop when the AM's greedy dev WER is above ``max_dev_wer``.

  python -m punct.bin.check_am_wer --config conf/am.yaml --wer-file exp/am/wer_dev.txt [--max-dev-wer 95]
  python -m punct.bin.check_am_wer --config conf/am_mini.yaml --wer-file exp/am/wer_dev.txt --exp-dir exp/am

Exit status 1 with a message (punct.am.dev_wer: why, and the options that help) when the WER is above the limit
(``--max-dev-wer``, else the config's ``max_dev_wer``; ``none`` turns the check off); 0 otherwise.  With
``--exp-dir``, a WER above the limit prints ``train-to N`` (exit status 0) instead while the config's
``extra_epochs`` / ``max_epochs`` give the AM in ``--exp-dir`` more epochs: steps/train_am.sh then resumes it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from punct.am.config import AmConfig
from punct.am.dev_wer import AmLearnedNothing, check_dev_wer, epochs_to_train_on, read_wer
from punct.utils.config import load_config


def _limit(text: str) -> float | None:
    return None if text.lower() in ("none", "null", "off") else float(text)


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--config", type=Path, required=True, help="the AM config (its max_dev_wer)")
    parser.add_argument("--wer-file", type=Path, required=True, help="wer_dev.txt of punct.bin.decode_am")
    parser.add_argument(
        "--max-dev-wer",
        type=_limit,
        default=argparse.SUPPRESS,
        help="highest dev WER (%%) that goes on; none: no check (default: the config's max_dev_wer)",
    )
    parser.add_argument(
        "--exp-dir",
        type=Path,
        default=None,
        help="the AM's folder (its best-valid-loss.pt): print 'train-to N' while the config gives it more epochs",
    )
    parser.add_argument(
        "--hint", default="", help="the recipe's options that help (more data, a trained AM), added to the message"
    )
    return parser


def _more_epochs(wer_file: Path, exp_dir: Path, config: AmConfig, limit: float | None) -> int:
    """The epochs in all to train the AM of ``exp_dir`` on to (``punct.am.dev_wer.epochs_to_train_on``; 0: none).
    Its checkpoint, and so torch, is read only for an AM above the limit whose config gives it extra epochs."""
    wer = read_wer(wer_file)
    if config.extra_epochs <= 0 or limit is None or wer <= limit:
        return 0
    from punct.am.checkpoint import BEST_CHECKPOINT, trained_epochs  # torch: ~3 s, for this case only

    epochs = trained_epochs(exp_dir / BEST_CHECKPOINT)
    return epochs_to_train_on(wer, limit, epochs, config.extra_epochs, config.max_epochs)


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    config = load_config(AmConfig, args.config)
    limit = args.max_dev_wer if "max_dev_wer" in args else config.max_dev_wer
    if args.exp_dir is not None:
        target = _more_epochs(args.wer_file, args.exp_dir, config, limit)
        if target:
            print(f"train-to {target}")
            return 0
    try:
        wer = check_dev_wer(args.wer_file, limit, str(args.config), args.hint)
    except AmLearnedNothing as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 1
    print(
        f"dev WER {wer:.2f} % " + ("(no max_dev_wer check)" if limit is None else f"<= max_dev_wer {limit:g} %"),
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
