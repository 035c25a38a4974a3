#!/usr/bin/env python3
"""Real-time factor of the punctuation pipeline (punct.inference) on ONE CPU thread.

For each size (paper: AM 1024/128 x 13 layers, BERT-base, the 3.0 M TDNN; mini: conf/*_mini.yaml dims,
MiniLM-sized BERT), with randomly initialised weights (speed does not depend on them), over the mini
corpus' dev speech with its transcripts:

Times are CPU seconds of this (single-threaded) process, the smallest of ``--repeats`` runs, so that the
other jobs on a shared machine distort them less; the whole pipeline's wall time is reported too.

* RTF (seconds of compute per second of audio) of the whole pipeline and of each part
  (audio read, features + CMVN, AM, alignment, BERT, TDNN, ensemble), and the FLOPs behind each model;
* the AM run only to layer 12 (what a dump needs) against the single full pass the pipeline makes
  (layer 12 tapped on the way; the forced alignment needs the CTC output);
* the punctuation TDNN windowed (one 301-frame window per word, the paper's way) against fully
  convolutional (one pass per utterance; batched over utterances), with the largest output difference;
* dynamic int8 quantisation of the Linear layers (BERT, TDNN): speed and output change, and, when a
  trained recipe exists (``--recipe-dir``, default egs/mustc), the overall F1 change on its dev split.

  python benchmarks/bench_inference.py [--sizes paper mini] [--audio-seconds 60]
Writes benchmarks/results/inference.json.
"""

from __future__ import annotations

import argparse
import copy
import logging
import time
import warnings
from pathlib import Path
from typing import Dict, List

import numpy as np
import torch

import common  # noqa: E402  (benchmarks/common.py; puts the repo on sys.path)
from punct.features import FeatureConfig
from punct.fusion.frames import cut_window, frame_word_index, fuse_frames, text_table, window_centres
from punct.inference.pipeline import STAGES, Failure, Punctuator, am_forward
from punct.text.data import Utterance
from punct.text.infer import predict_words
from punct.utils.config import load_config


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="*", default=["paper", "mini"], choices=["paper", "mini"],
                        help="model sizes to time (none: only the F1 change of quantisation)")
    parser.add_argument("--skip-f1", action="store_true", help="skip the F1 change of quantisation")
    parser.add_argument("--out-name", default="inference", help="results/<name>.json")
    parser.add_argument("--audio-seconds", type=float, default=60.0, help="speech to run on (mini corpus dev)")
    parser.add_argument("--recipe-dir", type=Path, default=common.REPO / "egs" / "mustc",
                        help="trained recipe for the F1 change of quantisation (skipped when untrained)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs; the smallest time of each part is kept")
    parser.add_argument("--f1-utterances", type=int, default=50, help="dev utterances scored for the F1 change")
    return parser


def flops(fn) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return float(counter.get_total_flops())


def timed_run(p: Punctuator, requests, repeats: int) -> Dict:
    """The pipeline over ``requests`` ``repeats`` times; the smallest time of each part and of the whole
    (the usual estimate of the cost without interference from other processes)."""
    best: Dict = {}
    for _ in range(repeats):
        p.timer.reset()
        start, cpu = time.perf_counter(), time.process_time()
        out = list(p.run(requests))
        run = {"total": time.perf_counter() - start, "cpu": time.process_time() - cpu, "parts": dict(p.timer.seconds),
               "cpu_parts": dict(p.timer.cpu_seconds)}
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


def best_cpu(fn, repeats: int) -> float:
    """Smallest CPU time of ``fn()`` over ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def bench_size(size: str, args) -> Dict:
    models = common.random_models(size)
    feature_config = load_config(FeatureConfig, common.CONF / "mfcc.yaml")
    p = Punctuator(feature_config=feature_config, am=models.am, tokens=models.tokens, bert=models.bert,
                   tdnn=models.tdnn, alpha=0.4)
    requests, audio = common.speech_requests(args.audio_seconds)
    params = {name: sum(x.numel() for x in m.parameters()) / 1e6
              for name, m in (("am", models.am), ("bert", models.bert), ("tdnn", models.tdnn))}
    list(p.run(requests[:1]))  # warm-up
    run = timed_run(p, requests, args.repeats)
    words = sum(len(o.words) for o in run["outputs"] if not isinstance(o, Failure))
    res = {"size": size, "audio_seconds": audio, "utterances": len(requests), "words": words, "params_m": params,
           "rtf_total": run["total"] / audio, "rtf_parts": {k: v / audio for k, v in run["parts"].items()},
           "cpu_rtf_total": run["cpu"] / audio, "cpu_rtf_parts": {k: v / audio for k, v in run["cpu_parts"].items()}}

    # FLOPs per second of audio of each model (first utterances up to ~10 s)
    feats = p.features(requests)
    sample = []
    dur = 0.0
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
    res["gflops_per_audio_second"] = {"am": am_f / dur / 1e9, "bert": bert_f / dur / 1e9,
                                      "tdnn_fully_conv": (tdnn_f - bert_f) / dur / 1e9}

    # AM: full pass with the layer-12 tap (pipeline) vs run only to layer 12
    def am_full():
        for r in requests:
            am_forward(p.am, feats[r.id], 12)

    @torch.inference_mode()
    def am_to_12():
        for r in requests:
            p.am(torch.from_numpy(feats[r.id]).unsqueeze(0), layer=12)

    res["am_rtf"] = {"full_pass_with_tap": best_cpu(am_full, args.repeats) / audio,
                     "to_layer_12_only": best_cpu(am_to_12, args.repeats) / audio}

    # TDNN: windowed vs fully convolutional on the same fused frames
    prepared = [p.acoustic(r, feats[r.id]) for r in requests]
    outs = list(predict_words(p.bert, [Utterance(x.request.id, x.words, ["NP"] * len(x.words)) for x in prepared],
                              512, 32, 32, torch.device("cpu")))
    fused, centres, windows = [], [], []
    ctx = p.tdnn.config.context
    for x, o in zip(prepared, outs):
        starts = np.array([s.start for s in x.spans])
        ends = np.array([s.end for s in x.spans])
        t = x.embedding.shape[0]
        index = frame_word_index(starts, t)
        fused.append(torch.from_numpy(fuse_frames(o.vectors, x.embedding, index)))
        centres.append(torch.from_numpy(window_centres(starts, ends, t, p.tdnn.config.window_centre).astype(np.int64)))
    t0 = time.process_time()
    for x, o in zip(prepared, outs):
        t = x.embedding.shape[0]
        index = frame_word_index(np.array([s.start for s in x.spans]), t)
        table = text_table(o.vectors)
        windows += [cut_window(x.embedding, table, index, int(c), ctx)
                    for c in window_centres(np.array([s.start for s in x.spans]), np.array([s.end for s in x.spans]), t,
                                            p.tdnn.config.window_centre)]
    cut_time = time.process_time() - t0
    with torch.inference_mode():
        stacked = [torch.from_numpy(np.stack(windows[b:b + 128])) for b in range(0, len(windows), 128)]
        win_post = torch.cat([torch.softmax(p.tdnn(w), -1) for w in stacked]).numpy()
        conv_post = np.concatenate([torch.softmax(p.tdnn.utterance_logits(f, c), -1).numpy()
                                    for f, c in zip(fused, centres)])
        batch_post = np.concatenate(p._tdnn_posteriors(fused, centres))
        win_time = best_cpu(lambda: [p.tdnn(w) for w in stacked], args.repeats)
        conv_time = best_cpu(lambda: [p.tdnn.utterance_logits(f, c) for f, c in zip(fused, centres)], args.repeats)
        batch_time = best_cpu(lambda: p._tdnn_posteriors(fused, centres), args.repeats)
    res["tdnn"] = {
        "words": len(windows), "windowed_rtf": win_time / audio, "window_cutting_rtf": cut_time / audio,
        "fully_conv_rtf": conv_time / audio, "fully_conv_batched_rtf": batch_time / audio,
        "speedup_fully_conv": win_time / conv_time, "speedup_fully_conv_batched": win_time / batch_time,
        "max_abs_diff_fully_conv": float(np.abs(win_post - conv_post).max()),
        "max_abs_diff_batched": float(np.abs(win_post - batch_post).max()),
    }

    # dynamic int8 quantisation of Linear layers: BERT only (the pipeline's --quantize), and BERT + TDNN
    a = np.concatenate([o.p_ensemble for o in run["outputs"] if not isinstance(o, Failure)])
    for name, parts in (("quantized", ("bert",)), ("quantized_bert_tdnn", ("bert", "tdnn"))):
        q = copy.copy(p)
        q.timer = type(p.timer)()
        q.quantize(parts)
        list(q.run(requests[:1]))
        qrun = timed_run(q, requests, args.repeats)
        b = np.concatenate([o.p_ensemble for o in qrun["outputs"] if not isinstance(o, Failure)])
        tdnn_change = max(float(np.abs(o.p_tdnn - f.p_tdnn).max()) for o, f in zip(qrun["outputs"], run["outputs"])
                          if not isinstance(o, Failure))
        bert_change = max(float(np.abs(o.p_bert - f.p_bert).max()) for o, f in zip(qrun["outputs"], run["outputs"])
                          if not isinstance(o, Failure))
        res[name] = {"parts": list(parts), "rtf_total": qrun["total"] / audio,
                     "rtf_parts": {k: v / audio for k, v in qrun["parts"].items()},
                     "cpu_rtf_total": qrun["cpu"] / audio,
                     "cpu_rtf_parts": {k: v / audio for k, v in qrun["cpu_parts"].items()},
                     "max_abs_posterior_change": float(np.abs(a - b).max()),
                     "max_abs_tdnn_posterior_change": tdnn_change, "max_abs_bert_posterior_change": bert_change,
                     "label_agreement": float((a.argmax(1) == b.argmax(1)).mean())}
    return res


def quantized_f1(args) -> Dict:
    """Overall F1 on a trained recipe's dev split with float32 vs dynamic-int8 BERT (and TDNN).

    Uses the recipe's own stage outputs for the acoustic side (aligned cuts, layer-12 shards
    exp/emb_am/dev) and recomputes only what quantisation changes: BERT vectors/posteriors of the dev
    words, then the TDNN (fully convolutional) and the ensemble at the recipe's alpha.  (The acoustic
    side is not re-run from audio, so a recipe whose corpus audio was rebuilt since stage 1 still scores
    consistently; tests/inference checks that the pipeline equals these components.)"""
    recipe = args.recipe_dir
    need = ["exp/bert/best-valid-f1/punct_model.json", "exp/tdnn/best-valid-f1.pt", "exp/emb_am/dev/emb.scp",
            "data/fbank/mustc_cuts_dev_ali.jsonl.gz"]
    missing = [p for p in need if not (recipe / p).exists()]
    if missing:
        return {"measured": False, "reason": f"no trained recipe in {recipe} when run (missing {', '.join(missing)})"}
    import os
    import tempfile

    from punct.ensemble import ensemble
    from punct.fusion.dataset import FusionCorpus
    from punct.fusion.infer import corpus_predictions
    from punct.fusion.train import load_model as load_tdnn
    from punct.inference.pipeline import read_chosen_alpha
    from punct.io.shards import ShardWriter
    from punct.metrics import score
    from punct.text.labels import MUSTC_CLASSES
    from punct.text.model import PunctBert
    from lhotse import load_manifest

    cwd = os.getcwd()
    os.chdir(recipe)  # shard paths inside the scps are relative to the recipe directory
    try:
        alpha = read_chosen_alpha(Path("exp/results/results.json"))
        cuts = [c for c in load_manifest("data/fbank/mustc_cuts_dev_ali.jsonl.gz")][: args.f1_utterances]
        utts = [Utterance(c.id, list(c.supervisions[0].custom["words"]), list(c.supervisions[0].custom["punct"]))
                for c in cuts]
        out: Dict = {"measured": True, "alpha": alpha, "utterances": len(utts)}
        with tempfile.TemporaryDirectory(prefix="bench_quant_f1_") as tmp:
            for name, parts in (("float", ()), ("int8", ("bert",)), ("int8_bert_tdnn", ("bert", "tdnn"))):
                bert = PunctBert.from_pretrained("exp/bert/best-valid-f1").eval()
                tdnn = load_tdnn("exp/tdnn/best-valid-f1.pt")
                if parts:
                    from torch.ao.quantization import quantize_dynamic

                    if "bert" in parts:
                        bert = quantize_dynamic(bert, {torch.nn.Linear}, dtype=torch.qint8)
                    if "tdnn" in parts:
                        tdnn = quantize_dynamic(tdnn, {torch.nn.Linear}, dtype=torch.qint8)
                start = time.process_time()
                posts = {}
                with ShardWriter(Path(tmp) / f"vec_{name}") as writer:
                    for o in predict_words(bert, utts, 512, 32, 32, torch.device("cpu")):
                        writer.write(o.id, o.vectors)
                        posts[o.id] = o.posteriors["punct"]
                bert_s = time.process_time() - start
                corpus = FusionCorpus(cuts, "exp/emb_am/dev/emb.scp", Path(tmp) / f"vec_{name}.scp", cache_utterances=0)
                ref, p_tdnn = corpus_predictions(tdnn, corpus, torch.device("cpu"))
                p_bert = np.concatenate([posts[u.key] for u in corpus.utterances])
                out[name] = {
                    "words": int(len(ref)), "bert_cpu_s": bert_s,
                    "bert_f1": score(ref, p_bert.argmax(1), MUSTC_CLASSES).overall["f1"],
                    "tdnn_f1": score(ref, p_tdnn.argmax(1), MUSTC_CLASSES).overall["f1"],
                    "overall_f1": score(ref, ensemble(p_tdnn, p_bert, alpha).argmax(1), MUSTC_CLASSES).overall["f1"],
                }
    finally:
        os.chdir(cwd)
    out["f1_change"] = out["int8"]["overall_f1"] - out["float"]["overall_f1"]
    out["f1_change_bert_tdnn"] = out["int8_bert_tdnn"]["overall_f1"] - out["float"]["overall_f1"]
    return out


def main() -> None:
    args = get_parser().parse_args()
    logging.basicConfig(level=logging.WARNING)
    warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    results: Dict = {"machine_before": common.machine(), "sizes": {}}
    for size in args.sizes:
        results["sizes"][size] = bench_size(size, args)
    results["quantized_f1"] = {"measured": False, "reason": "--skip-f1"} if args.skip_f1 else quantized_f1(args)
    results["machine_after"] = common.machine()
    rows: List = []
    for size, r in results["sizes"].items():
        q, q2 = r["quantized"], r["quantized_bert_tdnn"]
        rows.append([size, "whole pipeline", r["rtf_total"], r["cpu_rtf_total"], q["cpu_rtf_total"], q2["cpu_rtf_total"]])
        for stage in STAGES:
            rows.append([size, stage, r["rtf_parts"][stage], r["cpu_rtf_parts"][stage], q["cpu_rtf_parts"][stage],
                         q2["cpu_rtf_parts"][stage]])
    if not results["sizes"]:
        rows = []
    common.print_table(f"RTF on 1 thread (s per s of audio; load {results['machine_before']['load_1_5_15']})",
                       ["size", "part", "float32 wall", "float32 CPU", "int8 BERT CPU", "int8 BERT+TDNN CPU"], rows)
    rows = []
    for s, r in results["sizes"].items():
        g, c = r["gflops_per_audio_second"], r["cpu_rtf_parts"]
        for part, key, stage in (("AM (full pass)", "am", "am"), ("BERT", "bert", "bert"),
                                 ("TDNN (fully conv)", "tdnn_fully_conv", "tdnn")):
            params = r["params_m"][key.split("_")[0]]
            rows.append([s, part, params, g[key], c[stage], g[key] / max(c[stage], 1e-12)])
    common.print_table("Where the time goes: FLOPs per second of audio and the rate achieved on one thread",
                       ["size", "model", "M params", "GFLOP / s audio", "CPU s / s audio", "achieved GFLOP/s"], rows)
    common.print_table("AM: full pass (layer 12 tapped) vs only to layer 12 (RTF)", ["size", "full pass", "to layer 12"],
                       [[s, r["am_rtf"]["full_pass_with_tap"], r["am_rtf"]["to_layer_12_only"]]
                        for s, r in results["sizes"].items()])
    common.print_table("TDNN windowed vs fully convolutional (RTF)",
                       ["size", "words", "windowed", "fully conv", "fully conv batched", "speed-up", "speed-up batched",
                        "max |diff|"],
                       [[s, r["tdnn"]["words"], r["tdnn"]["windowed_rtf"], r["tdnn"]["fully_conv_rtf"],
                         r["tdnn"]["fully_conv_batched_rtf"], r["tdnn"]["speedup_fully_conv"],
                         r["tdnn"]["speedup_fully_conv_batched"],
                         max(r["tdnn"]["max_abs_diff_fully_conv"], r["tdnn"]["max_abs_diff_batched"])]
                        for s, r in results["sizes"].items()])
    common.print_table("int8 dynamic quantisation: ensemble output change vs float32",
                       ["size", "quantised", "max |BERT post. change|", "max |TDNN post. change|",
                        "max |ensemble change|", "label agreement"],
                       [[s, "+".join(r[k]["parts"]), r[k]["max_abs_bert_posterior_change"],
                         r[k]["max_abs_tdnn_posterior_change"], r[k]["max_abs_posterior_change"], r[k]["label_agreement"]]
                        for s, r in results["sizes"].items() for k in ("quantized", "quantized_bert_tdnn")])
    qf = results["quantized_f1"]
    if qf["measured"]:
        common.print_table(f"F1 on the trained recipe's dev split (alpha {qf['alpha']}, {qf['float']['words']} words)",
                           ["BERT / TDNN", "BERT F1", "TDNN F1", "ensemble F1", "ensemble change", "BERT CPU s"],
                           [[k, qf[k]["bert_f1"], qf[k]["tdnn_f1"], qf[k]["overall_f1"],
                             qf[k]["overall_f1"] - qf["float"]["overall_f1"], qf[k]["bert_cpu_s"]]
                            for k in ("float", "int8", "int8_bert_tdnn")])
        print(f"F1 (trained recipe dev, {qf['float']['words']} words): float {qf['float']['overall_f1']:.4f}, "
              f"int8 BERT {qf['int8']['overall_f1']:.4f} ({qf['f1_change']:+.4f}), int8 BERT+TDNN "
              f"{qf['int8_bert_tdnn']['overall_f1']:.4f} ({qf['f1_change_bert_tdnn']:+.4f})")
    else:
        print(f"F1 change of quantisation: not measured ({qf['reason']})")
    print(f"load before/after: {results['machine_before']['uptime']} / {results['machine_after']['uptime']}")
    common.write_json(args.out_name, results)


if __name__ == "__main__":
    main()
