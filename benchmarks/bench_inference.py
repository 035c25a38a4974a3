#!/usr/bin/env python3
"""Real-time factor of the punctuation pipeline (punct.inference) on ONE CPU thread.

For each size (paper: AM 1024/128 x 13 layers, BERT-base, the 3.0 M TDNN; mini: conf/*_mini.yaml dims,
MiniLM-sized BERT), with randomly initialised weights (speed does not depend on them), over the mini
corpus' dev speech with its transcripts:

Times are CPU seconds of this (single-threaded) process, the smallest of ``--repeats`` runs, so that the
other jobs on a shared machine distort them less; the whole pipeline's wall time is reported too.

* RTF (seconds of compute per second of audio) of the whole pipeline and of each part (audio read,
  features + CMVN, AM, alignment, BERT, TDNN) under each configuration (``CONFIGS``: float32 PyTorch,
  dynamic int8 BERT, bf16 BERT, the AM and TDNN conv stack in ONNX Runtime in float32 and static int8,
  and the fastest combination), with the change of the outputs against float32;
* the float32 and fastest configurations on each of ``--threads``;
* the FLOPs behind each model, and the AM run only to layer 12 against the full pass with the tap;
* the punctuation TDNN windowed (one 301-frame window per word, the paper's way), fully convolutional,
  with the word-factored fusion layer (the pipeline's), batched, and in ONNX Runtime, with the largest
  output difference from the windowed form;
* when a trained recipe exists (``--recipe-dir``, default egs/mustc), the BERT / TDNN / ensemble F1 of
  every configuration on its dev split, from the audio through the whole pipeline.

  python benchmarks/bench_inference.py [--sizes paper mini] [--audio-seconds 60]
Writes benchmarks/results/inference.json.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import time
import warnings
from pathlib import Path

import common  # noqa: E402  (benchmarks/common.py; puts the repo on sys.path)
import numpy as np
import torch

from punct.features import FeatureConfig
from punct.inference.acoustic import am_forward
from punct.inference.outputs import Failure
from punct.inference.pipeline import Punctuator
from punct.inference.precision import check_bf16
from punct.inference.timing import STAGES
from punct.models.punct_tdnn.frames import cut_window, fuse_frames, text_table
from punct.models.text.data import Utterance
from punct.models.text.infer import predict_words
from punct.utils.config import load_config


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--sizes",
        nargs="*",
        default=["paper", "mini"],
        choices=["paper", "mini"],
        help="model sizes to time (none: only the F1 change of quantisation)",
    )
    parser.add_argument("--skip-f1", action="store_true", help="skip the F1 of the configurations on --recipe-dir")
    parser.add_argument("--out-name", default="inference", help="results/<name>.json")
    parser.add_argument("--audio-seconds", type=float, default=60.0, help="speech to run on (mini corpus dev)")
    parser.add_argument(
        "--recipe-dir",
        type=Path,
        default=common.REPO / "egs" / "mustc",
        help="trained recipe for the F1 of each configuration (skipped when untrained)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed runs; the smallest time of each part is kept")
    parser.add_argument(
        "--calibration-utterances",
        type=int,
        default=200,
        help="random training utterances of the recipe that calibrate its int8 graphs",
    )
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2], help="thread counts of the threads table")
    parser.add_argument(
        "--corpus",
        type=Path,
        default=common.MINI_CORPUS,
        help="mini corpus (data/corpus_mini of a recipe after stage 0) whose speech is timed",
    )
    return parser


def flops(fn) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return float(counter.get_total_flops())


def timed_run(p: Punctuator, requests, repeats: int) -> dict:
    """The pipeline over ``requests`` ``repeats`` times; the smallest time of each part and of the whole
    (the usual estimate of the cost without interference from other processes)."""
    best: dict = {}
    for _ in range(repeats):
        p.timer.reset()
        start, cpu = time.perf_counter(), time.process_time()
        out = list(p.run(requests))
        run = {
            "total": time.perf_counter() - start,
            "cpu": time.process_time() - cpu,
            "parts": dict(p.timer.seconds),
            "cpu_parts": dict(p.timer.cpu_seconds),
        }
        if not best:
            best = run
        else:
            best["total"], best["cpu"] = min(best["total"], run["total"]), min(best["cpu"], run["cpu"])
            for key in ("parts", "cpu_parts"):
                best[key] = {k: min(v, run[key][k]) for k, v in best[key].items()}
    failed = [o for o in out if isinstance(o, Failure)]
    if failed:
        logging.warning("%d failures, e.g. %s", len(failed), failed[0].message)
    best["outputs"] = out
    return best


# The speed-ups measured, each a function of (Punctuator with float PyTorch models, ONNX export folder,
# threads) -> the variant to run.  "onnx" rows run the AM and the TDNN's conv stack in ONNX Runtime.
CONFIGS = {
    "float32": lambda p, onnx, threads: p,
    "vectorised features": lambda p, onnx, threads: vectorised_features(p),
    "int8 BERT (dynamic)": lambda p, onnx, threads: p.quantize(("bert",)),
    "bf16 BERT": lambda p, onnx, threads: bf16_bert(p),
    "ONNX float32 AM+TDNN": lambda p, onnx, threads: p.use_onnx(onnx, "float32", threads),
    "ONNX int8 AM+TDNN": lambda p, onnx, threads: p.use_onnx(onnx, "int8", threads),
    "ONNX int8 AM+TDNN, bf16 BERT": lambda p, onnx, threads: bf16_bert(p.use_onnx(onnx, "int8", threads)),
    "ONNX int8 AM+TDNN, bf16 BERT, vectorised features": lambda p, onnx, threads: vectorised_features(
        bf16_bert(p.use_onnx(onnx, "int8", threads))
    ),
    # a CPU where bf16 is slower than float32 (there --bert-precision fastest keeps float32): the fastest
    # configuration that keeps float32's BERT
    "ONNX int8 AM+TDNN, vectorised features": lambda p, onnx, threads: vectorised_features(
        p.use_onnx(onnx, "int8", threads)
    ),
    # the int8 path of a CPU with VNNI and without fast bf16 (punctuate --quantize bert)
    "ONNX int8 AM+TDNN, int8 BERT (dynamic), vectorised features": lambda p, onnx, threads: vectorised_features(
        p.use_onnx(onnx, "int8", threads).quantize(("bert",))
    ),
}
FASTEST = "ONNX int8 AM+TDNN, bf16 BERT, vectorised features"


def bf16_bert(p: Punctuator) -> Punctuator:
    check_bf16(p.device)
    p.bert_bf16 = True
    return p


def vectorised_features(p: Punctuator) -> Punctuator:
    """NumPy MFCC (``punct.features.vectorised``) instead of stage 1's kaldi-native-fbank
    (``--vectorised-features``)."""
    p.extractor = p.feature_config.extractor(vectorised=True)
    return p


def variant(base: Punctuator, name: str, onnx: Path, threads: int = 1) -> Punctuator:
    """A copy of ``base`` (float PyTorch models) configured as ``CONFIGS[name]``, with its own timer."""
    p = copy.copy(base)
    p.timer = type(base.timer)()
    return CONFIGS[name](p, onnx, threads)


def export_random(p: Punctuator, folder: Path, calibration) -> Path:
    """ONNX export (float32 + int8 calibrated on ``calibration``) of the random models, with stand-in checkpoints."""
    from punct.inference.export import export_recipe

    stand_in = folder / "weights_are_random"
    stand_in.parent.mkdir(parents=True, exist_ok=True)
    stand_in.write_text("random weights, no checkpoint\n")
    export_recipe(p, folder, am_checkpoint=stand_in, tdnn_checkpoint=stand_in, calibration=calibration)
    return folder


def rtf_of(run: dict, audio: float) -> dict:
    return {
        "rtf_total": run["total"] / audio,
        "rtf_parts": {k: v / audio for k, v in run["parts"].items()},
        "cpu_rtf_total": run["cpu"] / audio,
        "cpu_rtf_parts": {k: v / audio for k, v in run["cpu_parts"].items()},
    }


def output_change(run: dict, reference: dict) -> dict:
    """Largest posterior changes and label agreement of ``run`` against the float32 run (same requests)."""
    pairs = [
        (o, f)
        for o, f in zip(run["outputs"], reference["outputs"])
        if not isinstance(o, Failure) and not isinstance(f, Failure) and o.words == f.words
    ]
    a = np.concatenate([f.p_ensemble for _, f in pairs])
    b = np.concatenate([o.p_ensemble for o, _ in pairs])
    return {
        "max_abs_ensemble_change": float(np.abs(a - b).max()),
        "max_abs_tdnn_change": max(float(np.abs(o.p_tdnn - f.p_tdnn).max()) for o, f in pairs),
        "max_abs_bert_change": max(float(np.abs(o.p_bert - f.p_bert).max()) for o, f in pairs),
        "label_agreement": float((a.argmax(1) == b.argmax(1)).mean()),
        "utterances_compared": len(pairs),
    }


def bench_configs(p: Punctuator, requests, audio: float, onnx: Path, args) -> dict:
    """Every configuration on one thread, and float32 / the fastest on each of ``args.threads``."""
    out: dict = {}
    reference = None
    for name in CONFIGS:
        q = variant(p, name, onnx)
        list(q.run(requests[:1]))  # warm-up
        run = timed_run(q, requests, args.repeats)
        reference = reference or run
        out[name] = {**rtf_of(run, audio), **output_change(run, reference)}
    threads: dict = {}
    for n in args.threads:
        torch.set_num_threads(n)
        for name in ("float32", FASTEST):
            q = variant(p, name, onnx, n)
            list(q.run(requests[:1]))
            threads[f"{name} | {n}"] = {
                "threads": n,
                "config": name,
                **rtf_of(timed_run(q, requests, args.repeats), audio),
            }
    torch.set_num_threads(1)
    return {"configs": out, "threads": threads}


def bench_size(size: str, args) -> dict:
    import tempfile

    models = common.random_models(size)
    feature_config = load_config(FeatureConfig, common.CONF / "mfcc.yaml")
    # layer 12 quantised as the recipe's stage-4 shards are (two_byte, the default), as punctuate then does
    p = Punctuator(
        feature_config=feature_config,
        am=models.am,
        tokens=models.tokens,
        bert=models.bert,
        tdnn=models.tdnn,
        alpha=0.4,
        embedding_compression="two_byte",
    )
    requests, audio = common.speech_requests(args.audio_seconds, corpus=args.corpus)
    calibration, _ = common.speech_requests(args.audio_seconds, split="train", corpus=args.corpus)
    params = {
        name: sum(x.numel() for x in m.parameters()) / 1e6
        for name, m in (("am", models.am), ("bert", models.bert), ("tdnn", models.tdnn))
    }
    with tempfile.TemporaryDirectory(prefix=f"bench_onnx_{size}_") as tmp:
        onnx = export_random(p, Path(tmp) / "onnx", calibration)
        timings = bench_configs(p, requests, audio, onnx, args)
        words = sum(len(o.words) for o in p.run(requests) if not isinstance(o, Failure))
        res = {
            "size": size,
            "audio_seconds": audio,
            "utterances": len(requests),
            "words": words,
            "params_m": params,
            **timings,
        }
        res["gflops_per_audio_second"] = model_flops(p, requests)
        res["am_rtf"] = am_passes(p, requests, audio, args.repeats)
        res["bert_chunking"] = bert_chunking(p, requests)
        res["tdnn"] = tdnn_forms(p, requests, audio, args.repeats, onnx)
    return res


def model_flops(p: Punctuator, requests) -> dict:
    """FLOPs per second of audio of each model (first utterances up to ~10 s)."""
    feats = p.features(requests)
    sample, dur = [], 0.0
    for r in requests:
        sample.append(r)
        dur += feats[r.id].shape[0] / 100
        if dur >= 10:
            break
    prepared = [p.acoustic(r, feats[r.id]) for r in sample]
    am_f = sum(flops(lambda f=feats[r.id]: am_forward(p.am, f, 12)) for r in sample)
    utts = [Utterance(x.request.id, x.words, ["NP"] * len(x.words)) for x in prepared]
    bert_f = flops(lambda: list(predict_words(p.bert, utts, 512, 32, 32, torch.device("cpu"))))
    tdnn_f = flops(lambda: p.classify(prepared))  # includes BERT: subtract
    return {"am": am_f / dur / 1e9, "bert": bert_f / dur / 1e9, "tdnn_fully_conv": (tdnn_f - bert_f) / dur / 1e9}


def am_passes(p: Punctuator, requests, audio: float, repeats: int) -> dict:
    """The AM's full pass with the layer-12 tap (the pipeline) against a pass only to layer 12 (a dump), and
    the full pass of the same weights computing every frame (``frame_subsample`` 1: no strided inference)."""
    feats = p.features(requests)
    every_frame = p.am.with_frame_subsample(1)

    def am_full(model=p.am):
        for r in requests:
            am_forward(model, feats[r.id], 12)

    @torch.inference_mode()
    def am_to_12():
        for r in requests:
            p.am(torch.from_numpy(feats[r.id]).unsqueeze(0), layer=12)

    return {
        "frame_subsample": p.am.frame_subsample,
        "full_pass_with_tap": common.best_cpu(am_full, repeats) / audio,
        "to_layer_12_only": common.best_cpu(am_to_12, repeats) / audio,
        "full_pass_every_frame": common.best_cpu(lambda: am_full(every_frame), repeats) / audio,
    }


def bert_chunking(p: Punctuator, requests) -> dict:
    """How much text BERT encodes more than once: sub-tokens in the chunks (specials excluded) per word
    sub-token, with the pipeline's chunk length and context (1.0: every utterance fits one chunk)."""
    from punct.models.text.chunking import word_pieces
    from punct.models.text.data import make_examples

    feats = p.features(requests)
    utterances = [
        Utterance(x.request.id, x.words, ["NP"] * len(x.words)) for x in (p.acoustic(r, feats[r.id]) for r in requests)
    ]
    examples = make_examples(utterances, p.bert.tokenizer, p.max_length, p.context, where="bench")
    encoded = sum(len(e.chunk.input_ids) - 2 for e in examples)
    content = sum(
        len(piece) for u in utterances for piece in word_pieces(p.bert.tokenizer, u.words, p.max_length - 2).pieces
    )
    return {
        "max_length": p.max_length,
        "context": p.context,
        "utterances": len(utterances),
        "chunks": len(examples),
        "encoded_per_word_subtoken": encoded / max(content, 1),
    }


def tdnn_forms(p: Punctuator, requests, audio: float, repeats: int, onnx: Path) -> dict:
    """The TDNN windowed (the paper's way), fully convolutional over fused frames, with the word-factored
    fusion layer (the pipeline's default), batched, and in ONNX Runtime; all on the same inputs."""
    from punct.inference.onnx_runtime import OnnxTdnnConvStack, graph_name

    feats = p.features(requests)
    prepared = [p.acoustic(r, feats[r.id]) for r in requests]
    inputs = p.tdnn_inputs(prepared, p.bert_outputs(prepared))
    ctx = p.tdnn.config.context
    t0 = time.process_time()
    windows = []
    for x in inputs:
        table, index = text_table(x.word_vectors.numpy()), x.word_index.numpy()
        windows += [cut_window(x.acoustic.numpy(), table, index, int(c), ctx) for c in x.centres]
    cut_time = time.process_time() - t0
    fused = [
        torch.from_numpy(fuse_frames(x.word_vectors.numpy(), x.acoustic.numpy(), x.word_index.numpy())) for x in inputs
    ]
    onnx_stacks = {prec: OnnxTdnnConvStack(onnx / graph_name("tdnn", prec)) for prec in ("float32", "int8")}
    forms = {
        "windowed": lambda: torch.cat(
            [
                torch.softmax(p.tdnn(torch.from_numpy(np.stack(windows[b : b + 128]))), -1)
                for b in range(0, len(windows), 128)
            ]
        ),
        "fully conv": lambda: torch.cat(
            [torch.softmax(p.tdnn.utterance_logits(f, x.centres), -1) for f, x in zip(fused, inputs)]
        ),
        "word-factored": lambda: torch.cat(
            [torch.softmax(p.factored.utterance_logits(*x.tensors(p.device)), -1) for x in inputs]
        ),
        "word-factored batched": lambda: torch.from_numpy(np.concatenate(batched(p, inputs))),
        "ONNX float32": lambda: torch.cat(
            [
                torch.softmax(p.factored.utterance_logits(*x.tensors(p.device), conv_stack=onnx_stacks["float32"]), -1)
                for x in inputs
            ]
        ),
        "ONNX int8": lambda: torch.cat(
            [
                torch.softmax(p.factored.utterance_logits(*x.tensors(p.device), conv_stack=onnx_stacks["int8"]), -1)
                for x in inputs
            ]
        ),
    }
    out: dict = {"words": len(windows), "window_cutting_rtf": cut_time / audio, "forms": {}}
    with torch.inference_mode():
        reference = forms["windowed"]().numpy()
        for name, fn in forms.items():
            diff = float(np.abs(fn().numpy() - reference).max())
            out["forms"][name] = {"rtf": common.best_cpu(fn, repeats) / audio, "max_abs_diff_vs_windowed": diff}
    return out


def batched(p: Punctuator, inputs) -> list:
    p.tdnn_batch = True
    try:
        return p.tdnn_posteriors(inputs)
    finally:
        p.tdnn_batch = False


@torch.inference_mode()
def recipe_f1(args) -> dict:
    """Overall F1 of every configuration on a trained recipe's dev split, from the audio through the whole
    pipeline (``Punctuator.run`` over the dev cuts, scored against the aligned cuts' labels).  int8 graphs
    are calibrated on ``--calibration-utterances`` random training utterances."""
    import os
    import random
    import tempfile

    from lhotse import load_manifest

    from punct.inference.export import export_recipe
    from punct.inference.inputs import from_cuts

    recipe = args.recipe_dir.resolve()
    need = [
        "exp/am/best-valid-loss.pt",
        "exp/bert/best-valid-f1/punct_model.json",
        "exp/tdnn/best-valid-f1.pt",
        "data/fbank/mustc_cuts_dev.jsonl.gz",
        "data/fbank/mustc_cuts_dev_ali.jsonl.gz",
        "data/fbank/mustc_cuts_train.jsonl.gz",
    ]
    missing = [n for n in need if not (recipe / n).exists()]
    if missing:
        return {"measured": False, "reason": f"no trained recipe in {recipe} when run (missing {', '.join(missing)})"}
    cwd = os.getcwd()
    os.chdir(recipe)  # audio paths inside the manifests are relative to the recipe directory
    try:
        labelled = {c.id: c.supervisions[0].custom for c in load_manifest("data/fbank/mustc_cuts_dev_ali.jsonl.gz")}
        # every dev cut, as stage 1 computed the CMVN stats over all of them; those stage 3 could not align fail
        requests = from_cuts("data/fbank/mustc_cuts_dev.jsonl.gz")
        train = from_cuts("data/fbank/mustc_cuts_train.jsonl.gz")
        random.Random(0).shuffle(train)
        base = Punctuator.from_recipe(".")
        out: dict = {
            "measured": True,
            "recipe": str(recipe),
            "alpha": base.alpha,
            "utterances": len(requests),
            "calibration_utterances": args.calibration_utterances,
            "configs": {},
        }
        with tempfile.TemporaryDirectory(prefix="bench_onnx_recipe_") as tmp:
            onnx = Path(tmp) / "onnx"
            export_recipe(
                base,
                onnx,
                am_checkpoint="exp/am/best-valid-loss.pt",
                tdnn_checkpoint="exp/tdnn/best-valid-f1.pt",
                calibration=train[: args.calibration_utterances],
            )
            for name in CONFIGS:
                p = variant(base, name, onnx)
                start = time.process_time()
                results = [o for o in p.run(requests) if not isinstance(o, Failure)]
                out["configs"][name] = {"cpu_s": time.process_time() - start, **score_results(results, labelled)}
    finally:
        os.chdir(cwd)
    out["stage8"] = stage8_f1(recipe / "exp/results/results.json", "dev")
    float_labels = out["configs"]["float32"]["labels"]
    for r in out["configs"].values():
        r["ensemble_change"] = r["ensemble_f1"] - out["stage8"]["ensemble_f1"]
        r["labels_changed"] = int(sum(a != b for a, b in zip(r.pop("labels"), float_labels)))
    return out


def stage8_f1(results_json: Path, split: str) -> dict:
    """Stage 8's overall F1 of BERT, the TDNN and the ensemble at the chosen alpha on ``split`` (results.json)."""
    systems = json.loads(results_json.read_text(encoding="utf-8"))["systems"][split]
    chosen = next(name for name in systems if "chosen on dev" in name)
    return {
        "bert_f1": systems["BERT only"]["overall"]["f1"],
        "tdnn_f1": systems["TDNN"]["overall"]["f1"],
        "ensemble_f1": systems[chosen]["overall"]["f1"],
    }


def score_results(results, labelled: dict) -> dict:
    from punct.labels import PUNCT4
    from punct.scoring.punct_scores import score

    ref, bert, tdnn, ens, skipped = [], [], [], [], 0
    for o in results:
        custom = labelled[o.id]
        if list(custom["words"]) != o.words:
            skipped += 1  # the pipeline's normalisation gave other words than stage 0's
            continue
        ref += [PUNCT4.classes.index(x) for x in custom["punct"]]
        for posts, rows in ((o.p_bert, bert), (o.p_tdnn, tdnn), (o.p_ensemble, ens)):
            rows += posts.argmax(1).tolist()
    f1 = lambda hyp: score(np.array(ref), np.array(hyp), PUNCT4.classes).overall["f1"]  # noqa: E731
    return {
        "words": len(ref),
        "utterances_skipped": skipped,
        "bert_f1": f1(bert),
        "tdnn_f1": f1(tdnn),
        "ensemble_f1": f1(ens),
        "labels": ens,
    }


def print_tables(results: dict) -> None:
    sizes = results["sizes"]
    for size, r in sizes.items():
        rows = [
            [name, c["rtf_total"], c["cpu_rtf_total"]]
            + [c["cpu_rtf_parts"][st] for st in STAGES if st != "ensemble"]
            + [c["label_agreement"]]
            for name, c in r["configs"].items()
        ]
        common.print_table(
            f"{size} size: RTF on 1 thread (CPU s per s of audio; load {results['machine_before']['load_1_5_15']})",
            ["configuration", "wall", "CPU", *[st for st in STAGES if st != "ensemble"], "labels = float32"],
            rows,
        )
        common.print_table(
            f"{size} size: threads (wall RTF; CPU RTF counts every thread)",
            ["configuration", "threads", "wall", "CPU"],
            [[t["config"], t["threads"], t["rtf_total"], t["cpu_rtf_total"]] for t in r["threads"].values()],
        )
    rows = []
    for s, r in sizes.items():
        g, c = r["gflops_per_audio_second"], r["configs"]["float32"]["cpu_rtf_parts"]
        for part, key, stage in (
            ("AM (full pass)", "am", "am"),
            ("BERT", "bert", "bert"),
            ("TDNN (word-factored)", "tdnn_fully_conv", "tdnn"),
        ):
            rows.append([s, part, r["params_m"][key.split("_")[0]], g[key], c[stage], g[key] / max(c[stage], 1e-12)])
    common.print_table(
        "Where the float32 time goes: FLOPs per second of audio and the rate achieved on one thread",
        ["size", "model", "M params", "GFLOP / s audio", "CPU s / s audio", "achieved GFLOP/s"],
        rows,
    )
    common.print_table(
        "AM: full pass (layer 12 tapped) vs only to layer 12, and the full pass computing every frame (CPU RTF)",
        ["size", "frame_subsample", "full pass", "to layer 12", "full pass, every frame"],
        [
            [
                s,
                r["am_rtf"]["frame_subsample"],
                r["am_rtf"]["full_pass_with_tap"],
                r["am_rtf"]["to_layer_12_only"],
                r["am_rtf"]["full_pass_every_frame"],
            ]
            for s, r in sizes.items()
        ],
    )
    common.print_table(
        "BERT chunking with the pipeline's chunk length and context (encoded sub-tokens per word sub-token)",
        ["size", "max_length", "context", "utterances", "chunks", "encoded / word sub-tokens"],
        [
            [s, c["max_length"], c["context"], c["utterances"], c["chunks"], c["encoded_per_word_subtoken"]]
            for s, c in ((s, r["bert_chunking"]) for s, r in sizes.items())
        ],
    )
    common.print_table(
        "TDNN forms on the same inputs (CPU RTF; max |posterior diff| vs windowed)",
        ["size", "words", "form", "RTF", "max |diff|"],
        [
            [s, r["tdnn"]["words"], form, f["rtf"], f["max_abs_diff_vs_windowed"]]
            for s, r in sizes.items()
            for form, f in r["tdnn"]["forms"].items()
        ],
    )
    f1 = results["recipe_f1"]
    if f1["measured"]:
        stage8 = f1["stage8"]
        common.print_table(
            f"F1 on the trained recipe's dev split ({f1['recipe']}, alpha {f1['alpha']}, "
            f"{f1['configs']['float32']['words']} words, int8 calibrated on {f1['calibration_utterances']} "
            "train utterances; ensemble change and labels changed: against stage 8 and float32)",
            ["configuration", "BERT F1", "TDNN F1", "ensemble F1", "ensemble change", "labels changed", "CPU s"],
            [["stage 8 (results.json)", stage8["bert_f1"], stage8["tdnn_f1"], stage8["ensemble_f1"], 0, "", ""]]
            + [
                [k, c["bert_f1"], c["tdnn_f1"], c["ensemble_f1"], c["ensemble_change"], c["labels_changed"], c["cpu_s"]]
                for k, c in f1["configs"].items()
            ],
        )
    else:
        print(f"F1 of the configurations: not measured ({f1['reason']})")


def main() -> None:
    args = get_parser().parse_args()
    logging.basicConfig(level=logging.WARNING)
    warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    results: dict = {"machine_before": common.machine(), "sizes": {}}
    for size in args.sizes:
        results["sizes"][size] = bench_size(size, args)
    results["recipe_f1"] = {"measured": False, "reason": "--skip-f1"} if args.skip_f1 else recipe_f1(args)
    results["machine_after"] = common.machine()
    print_tables(results)
    print(f"load before/after: {results['machine_before']['uptime']} / {results['machine_after']['uptime']}")
    common.write_json(args.out_name, results)


if __name__ == "__main__":
    main()
