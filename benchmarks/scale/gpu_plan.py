"""A 400 h run on a GPU cluster worked out on paper: the FLOPs of the paper-size models counted on their real
graphs (``torch.utils.flop_counter``, random weights at conf/{am,bert,tdnn}.yaml's dims), the bytes that go to
the GPU, and the CPU stages from the measured per-hour slopes of ``benchmarks/bench_scale.py``.

Every GPU figure is an **estimate**: training FLOPs are taken as 3x the forward's (the backward costs about twice the
forward), and a GPU is assumed to sustain ``SUSTAINED`` of its dense bf16 peak; both are stated beside the table.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

KIND = "scale_plan"
FRAMES_PER_SECOND = 100  # MFCC and layer-12 frames (10 ms shift)
H100_BF16_DENSE_TFLOPS = 989.0  # NVIDIA's H100 SXM figure, dense (no sparsity)
# assumed shares of the peak a training sustains, on the low side of what is reported for such models (none measured
# here): BERT-base's 768-wide matmuls on 256-token chunks vs the TDNNs' narrow 1-D convolutions and small batches
SUSTAINED = {"bert": 0.15, "tdnn": 0.05}


@dataclasses.dataclass(frozen=True)
class ModelFlops:
    am_per_second: float  # forward, one second of audio (frame_subsample as at inference)
    bert_per_token: float  # forward, per sub-token of a max_length chunk
    tdnn_per_window: float  # forward, one 301-frame window of fused frames (window mode)
    tdnn_per_second: float  # forward, one second of an utterance, fully convolutional (utterance mode)
    bert_max_length: int
    bert_context: int


def count_flops(fn: Callable[[], object]) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        fn()
    return float(counter.get_total_flops())


def model_flops(models, bert_max_length: int, bert_context: int, seconds: float = 10.0) -> ModelFlops:
    """FLOPs of ``models`` (``benchmarks.random_models.RandomModels`` at paper size)."""
    frames = int(seconds * FRAMES_PER_SECOND)
    am, tdnn = models.am, models.tdnn
    feats = torch.randn(1, frames, am.config.feat_dim)
    ids = torch.randint(1000, 2000, (1, bert_max_length))
    window = torch.randn(1, tdnn.config.window, tdnn.config.input_dim)
    utterance = torch.randn(frames + tdnn.config.window - 1, tdnn.config.input_dim)
    centres = torch.arange(tdnn.config.window - 1, utterance.shape[0], 25)
    return ModelFlops(
        am_per_second=count_flops(lambda: am(feats, subsample=am.config.frame_subsample)) / seconds,
        bert_per_token=count_flops(lambda: models.bert.encoder(input_ids=ids)) / bert_max_length,
        tdnn_per_window=count_flops(lambda: tdnn(window)),
        tdnn_per_second=count_flops(lambda: tdnn.utterance_logits(utterance, centres)) / seconds,
        bert_max_length=bert_max_length,
        bert_context=bert_context,
    )


@dataclasses.dataclass(frozen=True)
class ClusterShape:
    hours: float = 400.0  # MuST-C's training speech
    gpus: int = 8
    cpu_jobs: int = 32  # --nj of the CPU stages (1, 8) and of the text branch's dump
    loader_workers: int = 4  # stage 7's DataLoader workers per GPU
    peak_tflops: float = H100_BF16_DENSE_TFLOPS


def gpu_hours(flops: float, shape: ClusterShape, model: str) -> float:
    """Wall hours of ``flops`` spread over the cluster's GPUs at the assumed sustained rate of ``model``."""
    return flops / (shape.gpus * SUSTAINED[model] * shape.peak_tflops * 1e12) / 3600.0


def cpu_stage_hours(fit: dict[str, float], shape: ClusterShape, jobs: int) -> float:
    """Wall hours of a stage whose CPU seconds per hour were measured (``growth.fit_line`` of ``cpu_seconds``),
    its work spread over ``jobs`` one-thread jobs."""
    return (fit["at_zero"] + fit["per_hour"] * shape.hours) / jobs / 3600.0


def chunk_overlap(max_length: int, context: int) -> float:
    """Sub-tokens a chunked text passes through BERT per sub-token of text: each chunk of ``max_length`` (with
    [CLS] and [SEP]) labels its middle and reads ``context`` sub-tokens on each side."""
    return (max_length - 2) / (max_length - 2 - 2 * context)


def plan_rows(
    flops: ModelFlops,
    fits: dict[str, dict[str, dict[str, float]]],
    epochs: dict[str, int],
    words_per_hour: float,
    tokens_per_word: float,
    stage7: dict[str, dict[str, float]],
    shape: ClusterShape,
) -> list[dict]:
    """Per stage of egs/mustc: where it runs, its work at ``shape.hours`` and its estimated wall hours.

    ``stage7[mode]`` (window, utterance): ``examples_per_hour``, ``loader_cpu_seconds_per_hour`` and
    ``h2d_bytes_per_hour`` of one epoch (``benchmarks/bench_train.py --epoch-cost``).  A CPU-side bound of a GPU
    stage is its measured CPU seconds at mini size spread over one job per GPU (the mini models' share of it runs on
    the GPU instead).
    """
    audio_seconds = shape.hours * 3600.0
    tokens = words_per_hour * shape.hours * tokens_per_word * chunk_overlap(flops.bert_max_length, flops.bert_context)
    rows = []

    def row(stage: str, where: str, work: str, hours: float, bound: str) -> None:
        rows.append({"stage": stage, "where": where, "work": work, "wall_hours": round(hours, 2), "bound": bound})

    def cpu(stage: str, jobs: int) -> float:
        return cpu_stage_hours(fits[stage]["cpu_seconds"], shape, jobs)

    row("1", f"{shape.cpu_jobs} CPU jobs", "MFCC + CMVN", cpu("1", shape.cpu_jobs), "CPU (measured)")
    am_train = 3 * flops.am_per_second * audio_seconds * epochs["am"]
    row("2", f"{shape.gpus} GPUs (DDP)", f"{am_train:.2e} FLOPs", gpu_hours(am_train, shape, "tdnn"), "GPU (estimate)")
    am_forward = flops.am_per_second * audio_seconds
    for stage, what in (("3", "forward + CTC Viterbi on CPU"), ("4", "forward + 2-byte shards written")):
        gpu, host = gpu_hours(am_forward, shape, "tdnn"), cpu(stage, shape.gpus)
        row(stage, f"{shape.gpus} GPU jobs", what, max(gpu, host), "CPU side (measured)" if host > gpu else "GPU")
    bert_train = 3 * flops.bert_per_token * tokens * epochs["bert"]
    row(
        "5",
        f"{shape.gpus} GPUs (DDP)",
        f"{bert_train:.2e} FLOPs",
        gpu_hours(bert_train, shape, "bert"),
        "GPU (estimate)",
    )
    bert_forward = flops.bert_per_token * tokens
    gpu, host = gpu_hours(bert_forward, shape, "bert"), cpu("6", shape.gpus)
    row("6", f"{shape.gpus} GPU jobs", "forward", max(gpu, host), "CPU side (measured)" if host > gpu else "GPU")
    for mode, figures in stage7.items():
        examples = figures["examples_per_hour"] * shape.hours
        forward = flops.tdnn_per_window * examples if mode == "window" else flops.tdnn_per_second * audio_seconds
        model_flops = 3 * forward * epochs["tdnn"]
        loader = figures["loader_cpu_seconds_per_hour"] * shape.hours * epochs["tdnn"]
        gpu = gpu_hours(model_flops, shape, "tdnn")
        host = loader / (shape.gpus * shape.loader_workers) / 3600.0
        bound = "loader CPU (measured)" if host > gpu else "GPU (estimate)"
        row(
            f"7 ({mode})",
            f"{shape.gpus} GPUs x {shape.loader_workers} workers",
            f"{model_flops:.2e} FLOPs",
            max(gpu, host),
            bound,
        )
    # stage 8 trains the pause-only baseline on the training split in one process: no jobs to spread it over
    row("8", "1 CPU job", "pause baseline, scoring", cpu("8", 1), "CPU (measured)")
    return rows


def render_plan(plan: dict) -> str:
    """The 400 h table of docs/scaling.md: a row per stage, the end-to-end sum with each stage-7 mode."""
    shape = plan["shape"]
    lines = [
        "| stage | runs on | work | wall h (estimate) | bound by |",
        "|---|---|---|---:|---|",
    ]
    lines += [
        f"| {r['stage']} | {r['where']} | {r['work']} | {r['wall_hours']:.2f} | {r['bound']} |" for r in plan["rows"]
    ]
    for mode, total in plan["total_hours"].items():
        lines.append(f"| all, stage 7 in {mode} mode | | | **{total:.1f}** | |")
    sustained, epochs = plan["sustained"], plan["epochs"]
    notes = (
        f"\n{shape['hours']:g} h of training speech on {shape['gpus']} GPUs ({shape['loader_workers']} loader "
        f"workers each) and {shape['cpu_jobs']} CPU jobs. GPU work assumed to run at {sustained['bert']:.0%} (BERT) "
        f"and {sustained['tdnn']:.0%} (TDNNs) of an H100's {shape['peak_tflops']:g} dense bf16 TFLOP/s, training "
        f"FLOPs 3x the forward's; CPU figures are the measured per-hour slopes ({plan['cpu']}, --nj {plan['nj']}). "
        f"Epochs: AM {epochs['am']}, BERT {epochs['bert']}, TDNN {epochs['tdnn']} (the paper configs). Stages run "
        "one after the other (the text branch could overlap stages 1-4).\n"
    )
    return "\n".join(lines) + "\n" + notes


def tokens_per_word(tokenizer, lines: list[str]) -> float:
    """Sub-tokens per whitespace word of ``lines`` (punctuation marks ride on their words, as stage 5 reads them)."""
    words = sum(len(line.split()) for line in lines)
    pieces = sum(len(tokenizer.tokenize(" ".join(w.strip(".,?!;:") for w in line.split()))) for line in lines)
    return pieces / max(words, 1)


def make_plan(
    scale: dict,
    flops: ModelFlops,
    epochs: dict[str, int],
    tokens_per_word: float,
    stage7: dict[str, dict[str, float]],
    shape: ClusterShape = ClusterShape(),
) -> dict:
    """The JSON of the 400 h plan (``egs/mustc/RESULTS/scale/plan.json``) from a scaling run's JSON."""
    largest = scale["sizes"][-1]["corpus"]["train"]
    words_per_hour = largest["words"] / largest["hours"]
    rows = plan_rows(flops, scale["fits"], epochs, words_per_hour, tokens_per_word, stage7, shape)
    totals = {
        mode: round(sum(r["wall_hours"] for r in rows if not r["stage"].startswith("7") or mode in r["stage"]), 1)
        for mode in stage7
    }
    return {
        "kind": KIND,
        "estimate": True,
        "shape": dataclasses.asdict(shape),
        "sustained": SUSTAINED,
        "epochs": epochs,
        "flops": dataclasses.asdict(flops),
        "words_per_hour": round(words_per_hour, 1),
        "tokens_per_word": round(tokens_per_word, 3),
        "stage7": stage7,
        "cpu": scale["machine"]["cpu"],
        "nj": scale["nj"],
        "scale_commit": scale["commit"],
        "rows": rows,
        "total_hours": totals,
    }


def render(paths: Sequence[Path], command: str = "") -> str:
    """The region of plan JSONs (``bench_scale.py --plan``)."""
    return "\n".join(render_plan(json.loads(Path(path).read_text(encoding="utf-8"))) for path in paths)
