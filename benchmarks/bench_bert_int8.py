"""BERT's encoder as a static int8 ONNX Runtime graph, calibrated like the AM's (QDQ, per-channel s8 weights, u8
activations with percentile ranges from training chunks): what it costs in overall F1 on a trained egs/mustc
recipe's dev split, against the float32 model of the recipe's stages, and the time of the BERT pass on one thread.

Only MatMul and Gemm are quantised: the attention mask holds -inf, which no calibration histogram takes.  Rows:
PyTorch float32 (stage 6's computation), the same graph in ORT float32 (the export alone), and int8 for each
--percentiles value (0: min/max ranges), each with or without the attention's activation x activation MatMuls.
Writes benchmarks/results/bert_int8.json.

  . ./path.sh
  python benchmarks/bench_bert_int8.py --recipe-dir /work/runs/mustc_seed1
"""

from __future__ import annotations

import argparse
import copy
import shlex
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np
from common import machine, print_table, write_json


def calibration_feeds(bert, utterances, count: int, max_length: int, seed: int = 0) -> list[dict]:
    """``count`` training utterances' first words as padded chunks of the inference length (one shape)."""
    rng = np.random.default_rng(seed)
    feeds = []
    for i in rng.choice(len(utterances), min(count, len(utterances)), replace=False):
        enc = bert.tokenizer(
            utterances[i].words[: max_length // 2],
            is_split_into_words=True,
            truncation=True,
            max_length=max_length,
            padding="max_length",
            return_tensors="np",
        )
        feeds.append({k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask")})
    return feeds


def attention_matmuls(path: Path) -> list[str]:
    """The MatMul nodes of a graph with no constant input (attention scores, attention x values)."""
    import onnx

    graph = onnx.load(str(path)).graph
    constants = {i.name for i in graph.initializer} | {n.output[0] for n in graph.node if n.op_type == "Constant"}
    return [n.name for n in graph.node if n.op_type == "MatMul" and not any(i in constants for i in n.input)]


def with_onnx_encoder(bert, path: Path):
    """``bert`` whose encoder runs as the ONNX graph ``path`` on one thread."""
    import torch

    from punct.inference.onnx_runtime import session

    class OnnxEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.session, self.config = session(path, 1), bert.encoder.config

        def forward(self, input_ids, attention_mask):
            feeds = {"input_ids": input_ids.numpy(), "attention_mask": attention_mask.numpy()}
            hidden = self.session.run(None, {k: v.astype(np.int64) for k, v in feeds.items()})[0]
            return types.SimpleNamespace(last_hidden_state=torch.from_numpy(hidden))

    model = copy.deepcopy(bert)
    model.encoder = OnnxEncoder()
    return model.eval()


def measure(recipe_dir: Path, percentiles: list[float], calibration: int) -> dict:
    import torch

    from punct.inference.onnx_runtime import export_graph, quantize_int8
    from punct.labels import PUNCT4
    from punct.models.text.data import read_utterances
    from punct.models.text.infer import predict_words
    from punct.models.text.model import PunctBert
    from punct.scoring.punct_scores import score

    torch.set_num_threads(1)
    bert = PunctBert.from_pretrained(recipe_dir / "exp" / "bert" / "best-valid-f1").eval()
    max_length, context = bert.inference_chunking()
    manifests = recipe_dir / "data" / "manifests"
    dev = read_utterances(manifests / "mustc_supervisions_dev.jsonl.gz")
    reference = np.array([c for u in dev for c in PUNCT4.encode(u.labels)])

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = bert.encoder

        def forward(self, input_ids, attention_mask):
            return self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    def run(name: str, model) -> dict:
        wall, cpu = time.perf_counter(), time.process_time()
        outputs = list(predict_words(model, dev, max_length, context, 8, torch.device("cpu")))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        labels = np.concatenate([o.posteriors["punct"].argmax(-1) for o in outputs])
        vectors = np.concatenate([o.vectors for o in outputs])
        return {"name": name, "f1": score(reference, labels, PUNCT4.classes).overall["f1"], "labels": labels,
                "vectors": vectors, "seconds": wall, "cpu_seconds": cpu}  # fmt: skip

    rows = [run("PyTorch float32", bert)]
    with tempfile.TemporaryDirectory(prefix="bert_int8_") as tmp:
        float_graph = Path(tmp) / "bert.onnx"
        ids = torch.randint(5, 1000, (2, 64))
        names = ("input_ids", "attention_mask", "hidden")
        axes = {name: {0: "chunks", 1: "tokens"} for name in names}
        export_graph(Encoder(), (ids, torch.ones_like(ids)), float_graph, names[:2], names[2:], axes)
        rows.append(run("ORT float32", with_onnx_encoder(bert, float_graph)))
        train = read_utterances(manifests / "mustc_supervisions_train.jsonl.gz")
        feeds = calibration_feeds(bert, train, calibration, max_length)
        for percentile in percentiles:
            for attention in (True, False):
                graph = Path(tmp) / f"bert.int8.{percentile:g}.{attention}.onnx"
                exclude = () if attention else attention_matmuls(float_graph)
                quantize_int8(float_graph, graph, feeds, percentile=percentile, op_types=["MatMul", "Gemm"],
                              symbolic_shapes=False, exclude=exclude)  # fmt: skip
                ranges = f"percentile {percentile:g}" if percentile else "min/max"
                name = f"ORT int8, {ranges}" + ("" if attention else ", attention in float")
                rows.append(run(name, with_onnx_encoder(bert, graph)))
    labels, vectors, f1 = rows[0]["labels"], rows[0]["vectors"], rows[0]["f1"]
    for row in rows:
        row["labels_changed"] = int((row.pop("labels") != labels).sum())
        row["max_vector_change"] = float(np.abs(row.pop("vectors") - vectors).max())
        row["f1_change"] = row["f1"] - f1
    return {"machine": machine(), "recipe_dir": str(recipe_dir), "words": int(reference.size),
            "calibration_chunks": calibration, "max_length": max_length, "rows": rows}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe-dir", type=Path, required=True, help="a trained egs/mustc run")
    parser.add_argument("--percentiles", type=float, nargs="+", default=[99.99, 0.0], help="0: min/max ranges")
    parser.add_argument("--calibration", type=int, default=64, help="training chunks for the activation ranges")
    args = parser.parse_args()
    result = measure(args.recipe_dir, args.percentiles, args.calibration)
    result["command"] = shlex.join(["python", "benchmarks/bench_bert_int8.py", *sys.argv[1:]])
    write_json("bert_int8", result)
    print_table(
        f"BERT on {result['words']} dev words (one thread)",
        ["model", "overall F1", "F1 change", "labels changed", "max vector change", "seconds", "CPU seconds"],
        [[r["name"], r["f1"], r["f1_change"], r["labels_changed"], r["max_vector_change"], r["seconds"],
          r["cpu_seconds"]] for r in result["rows"]],
    )  # fmt: skip


if __name__ == "__main__":
    main()
