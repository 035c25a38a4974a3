"""Is ONNX Runtime a lever for BERT in float32?  BERT's encoder (paper size: BERT-base; mini: MiniLM-L6 sized) with
random weights on a batch of token rows, one thread: CPU seconds per batch in PyTorch, in ONNX Runtime from the
plain export, and in ONNX Runtime after ``onnxruntime.transformers``' BERT fusions (attention, gelu, layer norm),
each with its largest difference from PyTorch's hidden states and the operators the fusion made.

  . ./path.sh
  python benchmarks/bench_bert_ort.py --size paper --batch 4 --tokens 96
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from pathlib import Path

import numpy as np
from common import bert_config, best_cpu, machine, print_table, write_json


def cpu_seconds(run, repeats: int) -> float:
    """The fastest of ``repeats`` timed calls (after one untimed), in CPU seconds of this process."""
    run()
    return best_cpu(run, repeats)


def ort_session(path: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def measure(size: str, batch: int, tokens: int, repeats: int) -> dict:
    import torch
    from onnxruntime.transformers.optimizer import optimize_model
    from transformers import BertModel

    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = bert_config(size)
    bert = BertModel(config, add_pooling_layer=False).eval()

    class Encoder(torch.nn.Module):  # hidden states only: one output to export
        def __init__(self, bert: BertModel) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, ids, mask):
            return self.bert(input_ids=ids, attention_mask=mask).last_hidden_state

    encoder = Encoder(bert).eval()
    ids = torch.randint(1000, 20000, (batch, tokens))
    mask = torch.ones_like(ids)
    feeds = {"ids": ids.numpy(), "mask": mask.numpy()}
    rows = []
    with torch.inference_mode():
        reference = encoder(ids, mask).numpy()
        rows.append({"runtime": "pytorch", "cpu_seconds": cpu_seconds(lambda: encoder(ids, mask), repeats)})
    with tempfile.TemporaryDirectory() as tmp:
        plain, fused = Path(tmp) / "plain.onnx", Path(tmp) / "fused.onnx"
        dynamic = {"ids": {0: "batch", 1: "tokens"}, "mask": {0: "batch", 1: "tokens"}, "h": {0: "batch", 1: "tokens"}}
        torch.onnx.export(
            encoder, (ids, mask), str(plain), input_names=["ids", "mask"], output_names=["h"],
            dynamic_axes=dynamic, opset_version=17, dynamo=False,
        )  # fmt: skip
        optimized = optimize_model(
            str(plain), model_type="bert", num_heads=config.num_attention_heads, hidden_size=config.hidden_size
        )
        optimized.save_model_to_file(str(fused))
        fusions = {k: v for k, v in optimized.get_fused_operator_statistics().items() if v}
        for name, path in (("onnxruntime", plain), ("onnxruntime, fused", fused)):
            session = ort_session(path)
            out = session.run(None, feeds)[0]
            seconds = cpu_seconds(lambda s=session: s.run(None, feeds), repeats)
            rows.append({"runtime": name, "cpu_seconds": seconds, "max_abs_diff": float(np.abs(out - reference).max())})
    for row in rows:
        row["speed_vs_pytorch"] = rows[0]["cpu_seconds"] / row["cpu_seconds"]
    return {"size": size, "batch": batch, "tokens": tokens, "repeats": repeats, "rows": rows, "fusions": fusions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=["paper", "mini"], default="paper")
    parser.add_argument("--batch", type=int, default=4, help="token rows per call")
    parser.add_argument("--tokens", type=int, default=96, help="tokens per row")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out-name", default="bert_ort", help="benchmarks/results/NAME.json")
    args = parser.parse_args()
    result = measure(args.size, args.batch, args.tokens, args.repeats)
    result["machine"] = machine()
    result["command"] = shlex.join(["python", "benchmarks/bench_bert_ort.py", *sys.argv[1:]])
    write_json(args.out_name, result)
    rows = [[r["runtime"], r["cpu_seconds"], r["speed_vs_pytorch"], r.get("max_abs_diff", 0.0)] for r in result["rows"]]
    title = f"BERT ({args.size}) on {args.batch} x {args.tokens} tokens, 1 thread; fusions: {result['fusions']}"
    print_table(title, ["runtime", "CPU s", "x PyTorch", "max |diff|"], rows)


if __name__ == "__main__":
    main()
