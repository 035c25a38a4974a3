"""Stage 1 with utterance-level training data: a Kaldi data directory or lhotse manifests -> AM manifests.

  python -m punct.bin.import_am_data --prefix parczech --config conf/utterances.yaml --data data/parczech_asr_train \\
      [--dev data/parczech_asr_dev] --out-dir data/am_manifests_import --seed 42

Writes ``<prefix>_{recordings,supervisions}_{train,dev}.jsonl.gz`` and ``import_stats.json`` (see
``punct.am_data.utterances``: text normalisation, CMVN grouping, dev part, what is an error and what a skip).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from punct.am_data.utterances import UtteranceImportConfig, import_utterance_data
from punct.features import FeatureConfig
from punct.utils.config import add_config_arguments, config_from_args, load_config
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument(
        "--data",
        type=Path,
        required=True,
        help="training utterances: a Kaldi data dir (wav.scp, text, [segments], [utt2spk]), a folder "
        "of lhotse manifests (recordings + supervisions, or cuts) or a cuts manifest",
    )
    parser.add_argument(
        "--dev",
        type=Path,
        default=None,
        help="dev utterances in the same forms; default: dev_unit(s) of --data drawn with --seed until they "
        "hold dev_share of the hours",
    )
    parser.add_argument("--out-dir", type=Path, required=True, help="output folder (data/am_manifests_import)")
    parser.add_argument("--prefix", required=True, help="output manifest name prefix (e.g. parczech)")
    parser.add_argument("--config", type=Path, default=None, help="YAML with UtteranceImportConfig values")
    parser.add_argument(
        "--feat-config",
        type=Path,
        default=None,
        help="the AM's feature config (conf/mfcc.yaml): its sampling_rate overrides the config's",
    )
    parser.add_argument("--seed", type=int, default=42, help="seed of the held-out dev speakers/recordings")
    add_config_arguments(parser, UtteranceImportConfig)
    return parser


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    setup_logging()
    if args.feat_config is not None and args.sampling_rate is None:
        args.sampling_rate = int(load_config(FeatureConfig, args.feat_config).options.get("sampling_rate", 16000))
    config = config_from_args(UtteranceImportConfig, args, args.config)
    log_config(config)
    import_utterance_data(args.data, args.out_dir, config, seed=args.seed, prefix=args.prefix, dev=args.dev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
