#!/usr/bin/env python3
"""Storage of the layer-12 acoustic shards (stage 4) under each kaldiio compression of punct/io/shards.py.

Layer-12 matrices of real speech (the mini corpus' dev segments) from the acoustic model at paper size
(1024 dims) and mini size (256 dims), randomly initialised (the storage and the relative error depend on
the value distribution, not on training; a trained recipe's AM is used instead when one exists), are
written with ``ShardWriter`` under none / two_byte / speech_feature: bytes per audio hour, write and
read time per audio hour, and the reconstruction error (max |error|, RMS error / RMS of the values).

The F1 change each compression causes needs a trained recipe (``--recipe-dir``, default egs/mustc, with
exp/am, exp/emb_bert, exp/tdnn and data/fbank cuts): the dev layer-12 shards are re-dumped from the
features under each compression (punct.am.dump.dump_shard, as stage 4) and the trained TDNN re-scored
(fully convolutional) -- TDNN F1 and ensemble F1 at the recipe's alpha.  Otherwise "not measured".

  python benchmarks/bench_storage.py [--audio-seconds 60]
Writes benchmarks/results/storage.json.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import common  # noqa: E402
import numpy as np
import torch

from punct.features import FeatureConfig
from punct.inference.acoustic import am_forward
from punct.io.shards import MatrixReader, ShardWriter
from punct.utils.config import load_config

COMPRESSIONS = ("none", "two_byte", "speech_feature")


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--audio-seconds", type=float, default=60.0, help="speech whose layer-12 matrices are stored")
    parser.add_argument(
        "--recipe-dir",
        type=Path,
        default=common.REPO / "egs" / "mustc",
        help="trained recipe for the F1 change (skipped when untrained)",
    )
    return parser


def layer12_matrices(size: str, audio_seconds: float, recipe: Path) -> dict:
    """{"source": ..., "matrices": [(key, (T, D))], "audio_seconds": s} from a trained or random AM."""

    trained = recipe / "exp" / "am" / "best-valid-loss.pt"
    if size == "trained":
        from punct.am.checkpoint import load_model

        am, _ = load_model(trained)
        source = str(trained)
    else:
        am = common.random_models(size).am
        source = f"random {size}-size AM"
    feature_config = load_config(FeatureConfig, common.CONF / "mfcc.yaml")
    requests, audio = common.speech_requests(audio_seconds)
    extractor = feature_config.extractor()
    from punct.features.cmvn import SpeakerCmvn

    raw = [(r.speaker, r.id, extractor.extract(*r.audio())) for r in requests]
    cmvn = SpeakerCmvn.accumulate([(s, f) for s, _, f in raw], norm_vars=feature_config.norm_vars)
    mats = [(k, am_forward(am, cmvn.apply(s, f), 12)[0]) for s, k, f in raw]
    return {
        "source": source,
        "dim": int(mats[0][1].shape[1]),
        "matrices": mats,
        "audio_seconds": sum(m.shape[0] for _, m in mats) / 100.0,
    }


def measure(data: dict, tmp: Path) -> list[dict]:
    rows = []
    values = np.concatenate([m for _, m in data["matrices"]])
    rms = float(np.sqrt(np.mean(values.astype(np.float64) ** 2)))
    hours = data["audio_seconds"] / 3600.0
    for comp in COMPRESSIONS:
        prefix = tmp / f"emb_{comp}"
        start = time.process_time()
        with ShardWriter(prefix, comp) as writer:
            for key, mat in data["matrices"]:
                writer.write(key, mat)
        write_s = time.process_time() - start
        size = (tmp / f"emb_{comp}.ark").stat().st_size
        reader = MatrixReader(tmp / f"emb_{comp}.scp")
        start = time.process_time()
        back = np.concatenate([reader[key] for key, _ in data["matrices"]])
        read_s = time.process_time() - start
        err = back.astype(np.float64) - values
        rows.append(
            {
                "compression": comp,
                "bytes_per_audio_hour": size / hours,
                "gb_per_audio_hour": size / hours / 1e9,
                "write_cpu_s_per_audio_hour": write_s / hours,
                "read_cpu_s_per_audio_hour": read_s / hours,
                "max_abs_error": float(np.abs(err).max()),
                "relative_rms_error": float(np.sqrt(np.mean(err**2)) / rms),
                "values_rms": rms,
            }
        )
    return rows


def f1_by_compression(recipe: Path) -> dict:
    need = [
        "exp/am/best-valid-loss.pt",
        "exp/tdnn/best-valid-f1.pt",
        "exp/emb_bert/dev/vec.scp",
        "exp/emb_bert/dev/post.scp",
        "data/fbank/mustc_cuts_dev.jsonl.gz",
        "data/fbank/mustc_cuts_dev_ali.jsonl.gz",
    ]
    missing = [p for p in need if not (recipe / p).exists()]
    if missing:
        return {"measured": False, "reason": f"no trained recipe in {recipe} when run (missing {', '.join(missing)})"}
    from punct.am.checkpoint import load_model as load_am
    from punct.am.dataset import load_split
    from punct.am.dump import dump_shard
    from punct.inference.recipe import read_chosen_alpha
    from punct.labels import PUNCT4
    from punct.models.punct_tdnn.checkpoint import load_model as load_tdnn
    from punct.models.punct_tdnn.dataset import FusionCorpus
    from punct.models.punct_tdnn.infer import corpus_predictions
    from punct.scoring.ensemble import ensemble
    from punct.scoring.punct_scores import score

    cwd = os.getcwd()
    os.chdir(recipe)  # feature storage paths in the cuts are relative to the recipe directory
    try:
        am, _ = load_am(Path("exp/am/best-valid-loss.pt"))
        tdnn = load_tdnn("exp/tdnn/best-valid-f1.pt")
        alpha = read_chosen_alpha(Path("exp/results/results.json"))
        cuts, cmvn = load_split(Path("data/fbank"), "dev", "mustc")
        bert_post = MatrixReader("exp/emb_bert/dev/post.scp")
        out: dict = {"measured": True, "alpha": alpha, "by_compression": {}}
        with tempfile.TemporaryDirectory(prefix="bench_storage_f1_") as tmp:
            for comp in COMPRESSIONS:
                prefix = Path(tmp) / f"emb_{comp}"
                dump_shard(am, list(cuts), cmvn, prefix, 12, comp)
                corpus = FusionCorpus(
                    "data/fbank/mustc_cuts_dev_ali.jsonl.gz",
                    f"{prefix}.scp",
                    "exp/emb_bert/dev/vec.scp",
                    cache_utterances=0,
                )
                ref, p_tdnn = corpus_predictions(tdnn, corpus, torch.device("cpu"))
                p_bert = np.concatenate([bert_post[u.key] for u in corpus.utterances])
                tdnn_f1 = score(ref, p_tdnn.argmax(1), PUNCT4.classes).overall["f1"]
                ens_f1 = score(ref, ensemble(p_tdnn, p_bert, alpha).argmax(1), PUNCT4.classes).overall["f1"]
                out["by_compression"][comp] = {"tdnn_f1": tdnn_f1, "ensemble_f1": ens_f1, "words": int(len(ref))}
                if comp == "none":
                    base_post, base_ens = p_tdnn, ensemble(p_tdnn, p_bert, alpha).argmax(1)
                out["by_compression"][comp].update(
                    max_abs_tdnn_posterior_change=float(np.abs(p_tdnn - base_post).max()),
                    tdnn_labels_changed=int((p_tdnn.argmax(1) != base_post.argmax(1)).sum()),
                    ensemble_labels_changed=int((ensemble(p_tdnn, p_bert, alpha).argmax(1) != base_ens).sum()),
                )
        base = out["by_compression"]["none"]
        for _comp, r in out["by_compression"].items():
            r["tdnn_f1_change"] = r["tdnn_f1"] - base["tdnn_f1"]
            r["ensemble_f1_change"] = r["ensemble_f1"] - base["ensemble_f1"]
        return out
    finally:
        os.chdir(cwd)


def main() -> None:
    args = get_parser().parse_args()
    torch.set_num_threads(1)
    results: dict = {"machine_before": common.machine(), "storage": {}}
    sizes = ["paper", "mini"]
    if (args.recipe_dir / "exp" / "am" / "best-valid-loss.pt").exists():
        sizes.append("trained")
    with tempfile.TemporaryDirectory(prefix="bench_storage_") as tmp:
        for size in sizes:
            data = layer12_matrices(size, args.audio_seconds, args.recipe_dir)
            results["storage"][size] = {
                "source": data["source"],
                "dim": data["dim"],
                "audio_seconds": data["audio_seconds"],
                "rows": measure(data, Path(tmp)),
            }
    results["f1"] = f1_by_compression(args.recipe_dir)
    results["machine_after"] = common.machine()
    rows = []
    for size, r in results["storage"].items():
        for row in r["rows"]:
            rows.append(
                [
                    f"{size} ({r['dim']})",
                    row["compression"],
                    row["gb_per_audio_hour"],
                    row["write_cpu_s_per_audio_hour"],
                    row["read_cpu_s_per_audio_hour"],
                    row["max_abs_error"],
                    row["relative_rms_error"],
                ]
            )
    common.print_table(
        f"Layer-12 shards per audio hour (load {results['machine_before']['load_1_5_15']})",
        [
            "AM (dims)",
            "compression",
            "GB / audio h",
            "write CPU s / audio h",
            "read CPU s / audio h",
            "max |error|",
            "RMS error / RMS",
        ],
        rows,
    )
    f1 = results["f1"]
    if f1["measured"]:
        common.print_table(
            f"F1 on dev by shard compression (trained recipe, alpha {f1['alpha']})",
            [
                "compression",
                "words",
                "TDNN F1",
                "change",
                "ensemble F1",
                "change",
                "max |TDNN post. change|",
                "TDNN labels changed",
                "ensemble labels changed",
            ],
            [
                [
                    c,
                    r["words"],
                    r["tdnn_f1"],
                    r["tdnn_f1_change"],
                    r["ensemble_f1"],
                    r["ensemble_f1_change"],
                    r["max_abs_tdnn_posterior_change"],
                    r["tdnn_labels_changed"],
                    r["ensemble_labels_changed"],
                ]
                for c, r in f1["by_compression"].items()
            ],
        )
    else:
        print(f"F1 change by compression: not measured ({f1['reason']})")
    print(f"load before/after: {results['machine_before']['uptime']} / {results['machine_after']['uptime']}")
    common.write_json("storage", results)


if __name__ == "__main__":
    main()
