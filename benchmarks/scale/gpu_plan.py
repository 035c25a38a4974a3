"""A 400 h run on a GPU cluster worked out on paper: the FLOPs of the paper-size models counted on their real
graphs (``torch.utils.flop_counter``, random weights at conf/{am,bert,tdnn}.yaml's dims), the bytes that go to
the GPU, and the CPU stages from the measured per-hour slopes of ``benchmarks/bench_scale.py``.

Every GPU figure is an **estimate**: training FLOPs are taken as 3x the forward's (the backward costs about twice the
forward), and a GPU is assumed to sustain ``SUSTAINED`` of its dense bf16 peak; both are stated beside the table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

KIND = "scale_plan"
FRAMES_PER_SECOND = 100  # MFCC and layer-12 frames (10 ms shift)
H100_BF16_DENSE_TFLOPS = 989.0  # NVIDIA's H100 SXM figure, dense (no sparsity)
# assumed shares of the peak a training sustains: BERT-base's large matmuls vs the TDNNs' narrow 1-D convolutions
SUSTAINED = {"bert": 0.25, "tdnn": 0.10}


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
