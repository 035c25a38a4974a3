"""Shared pieces of the benchmarks: model sizes, speech to run on, machine facts, tables and JSON.

Run from the repository root after ``. ./path.sh`` (e.g. ``python benchmarks/bench_inference.py``).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
RESULTS = REPO / "benchmarks" / "results"
CONF = REPO / "egs" / "mustc" / "conf"
MINI_CORPUS = REPO / "egs" / "mustc" / "data" / "corpus_mini_natural"  # the default prosody's


def machine() -> dict:
    """CPU, load and library versions, recorded with every result."""
    import torch

    from punct.inference.precision import cpu_flags, cpu_kind, cpu_name

    load = os.getloadavg()
    return {
        "cpu": cpu_name(),
        "cpu_kind": cpu_kind(cpu_flags()),  # AMX / AVX512-BF16 / VNNI: what a speed claim depends on
        "cores": os.cpu_count(),
        "load_1_5_15": [round(x, 2) for x in load],
        "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
    }


def am_config(size: str):
    """The acoustic model's dims: paper (conf/am.yaml) or mini (conf/am_mini.yaml)."""
    from punct.am.config import AmConfig
    from punct.utils.config import load_config

    return load_config(AmConfig, CONF / ("am.yaml" if size == "paper" else "am_mini.yaml")).model


def tdnn_config(size: str):
    from punct.models.punct_tdnn.config import TrainTdnnConfig
    from punct.utils.config import load_config

    return load_config(TrainTdnnConfig, CONF / ("tdnn.yaml" if size == "paper" else "tdnn_mini.yaml")).model


def bert_config(size: str):
    """paper: BERT-base (transformers.BertConfig() defaults: 12 layers, 768, 12 heads);
    mini: MiniLM-L6 sized (6 layers, 384, 12 heads, 1536)."""
    from transformers import BertConfig

    if size == "paper":
        return BertConfig()
    return BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)


def tokenizer():
    """The uncased 30,522-piece WordPiece tokenizer of the offline MiniLM (the same vocabulary as bert-base-uncased)."""
    from transformers import AutoTokenizer

    from punct.models.text.model import default_bert_model

    return AutoTokenizer.from_pretrained(default_bert_model())


def random_models(size: str, seed: int = 0):
    from benchmarks.random_models import random_models as make

    return make(
        am_config=am_config(size),
        bert_config=bert_config(size),
        tokenizer=tokenizer(),
        tdnn_config=tdnn_config(size),
        seed=seed,
    )


def speech_requests(audio_seconds: float, split: str = "dev", corpus: Path = MINI_CORPUS):
    """Requests over the mini corpus' segments (espeak speech + Austen text) up to ``audio_seconds``."""
    import soundfile as sf
    import yaml

    from punct.inference.inputs import Request

    txt = corpus / "data" / split / "txt"
    if not (txt / f"{split}.yaml").is_file():
        raise FileNotFoundError(
            f"{txt / (split + '.yaml')}: no mini corpus; build it with "
            "cd egs/mustc && ./run.sh --stage 0 --stop-stage 0"
        )
    segments = yaml.safe_load((txt / f"{split}.yaml").read_text())
    texts = (txt / f"{split}.en").read_text(encoding="utf-8").splitlines()
    requests, total = [], 0.0
    for i, (seg, text) in enumerate(zip(segments, texts)):
        wav = corpus / "data" / split / "wav" / seg["wav"]

        def load(wav=wav, seg=seg):
            info = sf.info(str(wav))
            start = int(round(seg["offset"] * info.samplerate))
            frames = int(round(seg["duration"] * info.samplerate))
            samples, rate = sf.read(str(wav), start=start, frames=frames, dtype="float32")
            return samples, rate

        requests.append(Request(f"{Path(seg['wav']).stem}_{i}", load, text, seg["speaker_id"], str(wav)))
        total += seg["duration"]
        if total >= audio_seconds:
            break
    return requests, total


def best_cpu(fn, repeats: int) -> float:
    """Smallest CPU time of ``fn()`` over ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def print_table(title: str, header: Sequence[str], rows: list[Sequence]) -> str:
    cells = [[str(c) for c in header]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = [
        f"## {title}",
        "| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in cells[1:]]
    text = "\n".join(lines)
    print(text + "\n", flush=True)
    return text


def _fmt(value) -> str:
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:.0f}"
        if abs(value) >= 1:
            return f"{value:.2f}"
        return f"{value:.4f}" if abs(value) >= 1e-3 else f"{value:.2e}"
    return str(value)


def write_json(name: str, data: dict) -> Path:
    from punct.utils.atomic import atomic_write_text

    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    atomic_write_text(path, json.dumps(data, indent=1, default=_json_default) + "\n")
    print(f"wrote {path}")
    return path


def itn_bench_parser(description: str, name: str, models: Sequence[str], latencies: Sequence[float]):
    """The options of the egs/parczech streaming benches (bench_itn_streaming.py, bench_itn_live.py): a trained
    run, its models, splits and latencies, where the committed copy goes, or only a plot of earlier files."""
    import argparse

    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe-dir", type=Path, default=None, help="a trained egs/parczech run (stage 4 done)")
    parser.add_argument("--models", nargs="+", default=list(models), help="folders under exp/")
    parser.add_argument("--splits", nargs="+", default=["dev"])
    parser.add_argument("--latencies", type=float, nargs="+", default=list(latencies), help="seconds; inf: offline")
    parser.add_argument("--results-dir", type=Path, default=None, help="committed copy of the JSON")
    parser.add_argument("--name", default=name, help="file name in --results-dir: NAME.json")
    parser.add_argument("--plot-from", type=Path, nargs="+", default=None, help="only plot these results files")
    parser.add_argument("--plot", type=Path, default=None, help="the plot of --plot-from (dev split)")
    return parser


def recipe_split_parser(description: str, name: str):
    """The options of a benchmark over a trained egs/mustc run's split (bench_stream_offline.py,
    bench_lookahead.py): the run, the split, and where the committed copy of the JSON goes."""
    import argparse

    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe-dir", type=Path, required=True, help="a trained egs/mustc run")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--results-dir", type=Path, default=REPO / "egs/mustc/RESULTS", help="committed copy")
    parser.add_argument("--name", default=name, help="file name in --results-dir: NAME.json")
    return parser


def recipe_record(recipe_dir: Path, split: str, seconds: float) -> dict:
    """What every result over a trained run's split records: the run's seed (its stage-8 results.json), the split,
    the measuring time, the machine and the run's folder."""
    results = json.loads((recipe_dir / "exp" / "results" / "results.json").read_text(encoding="utf-8"))
    return {
        "seed": results.get("seed"),
        "split": split,
        "seconds": round(seconds, 1),
        "machine": machine(),
        "recipe_dir": str(recipe_dir),
    }


def save_result(name: str, result: dict, results_dir: Path | None, file_name: str) -> None:
    """benchmarks/results/NAME.json and, with ``results_dir``, its committed copy ``results_dir/file_name.json``."""
    from punct.utils.atomic import atomic_write_text

    write_json(name, result)
    if results_dir is not None:
        results_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(results_dir / f"{file_name}.json", json.dumps(result, indent=1) + "\n")


def _json_default(x):
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)


def trained_recipe(recipe: Path) -> bool:
    """True when ``recipe`` holds every model the pipeline needs (stages 2, 5, 7)."""
    return all(
        (recipe / p).exists()
        for p in ("exp/am/best-valid-loss.pt", "exp/bert/best-valid-f1/punct_model.json", "exp/tdnn/best-valid-f1.pt")
    )
