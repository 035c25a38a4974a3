"""Export a trained recipe's AM and TDNN to ONNX (float32, and static int8 calibrated on its speech).

The calibration runs the recipe's own float pipeline (``Punctuator``) over some utterances: their
CMVN-normalised features feed the AM graph, and the TDNN's word-factored inputs (layer-12 frames, BERT
word vectors, frame -> word index, padded as inference pads them) feed the TDNN graph.  export.json is
written last, so a folder without it is an interrupted export.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from lhotse.utils import Pathlike

from punct.inference.inputs import Request, UtteranceError
from punct.inference.onnx_runtime import (
    DEFAULT_PERCENTILE,
    PRECISIONS,
    ExportInfo,
    export_am,
    export_tdnn,
    graph_name,
    quantize_int8,
    write_export_info,
)
from punct.inference.pipeline import Punctuator
from punct.io.sources import file_sha256
from punct.models.punct_tdnn.tdnn import pad_utterance

AM_CHUNK_FRAMES = 400  # calibration pieces (4 s of features)
TDNN_CHUNK_FRAMES = 700  # calibration pieces of the padded TDNN input (300 padding frames + 4 s)


@torch.inference_mode()
def calibration_feeds(
    punctuator: Punctuator, requests: Sequence[Request]
) -> tuple[list[dict[str, np.ndarray]], list[dict[str, np.ndarray]]]:
    """(AM feeds, TDNN feeds) of the requests that go through the float pipeline, in pieces of one shape
    each; failures are logged and counted."""
    feats = punctuator.features(requests)
    prepared, skipped = [], 0
    for req in requests:
        try:
            f = feats[req.id]
            if isinstance(f, UtteranceError):
                raise f
            prepared.append(punctuator.acoustic(req, f))
        except UtteranceError as e:
            skipped += 1
            logging.warning("calibration: %s skipped (%s: %s)", req.id, e.reason, e)
    if not prepared:
        raise ValueError(f"calibration: none of the {len(requests)} utterances could be processed ({skipped} failed)")
    logging.info("calibration: %d utterances (%d skipped)", len(prepared), skipped)
    am_feeds = [np.ascontiguousarray(feats[p.request.id], dtype=np.float32)[None] for p in prepared]
    context = punctuator.tdnn.config.context
    tdnn_inputs = []
    for x in punctuator.tdnn_inputs(prepared, punctuator.bert_outputs(prepared)):
        acoustic, index = pad_utterance(x.acoustic, x.word_index, context)
        tdnn_inputs.append((acoustic[None].float().numpy(), x.word_vectors.float().numpy(), index[None].numpy()))
    return am_chunks(am_feeds), tdnn_chunks(tdnn_inputs)


def am_chunks(feats: Sequence[np.ndarray], frames: int = AM_CHUNK_FRAMES) -> list[dict[str, np.ndarray]]:
    """AM calibration feeds of one shape: (1, n, F) pieces, n = ``frames`` or the shortest utterance.

    The percentile calibrator stacks its observations, so every feed must have the same shape."""
    n = min([frames] + [f.shape[1] for f in feats])
    return [{"feats": np.ascontiguousarray(f[:, b : b + n])} for f in feats for b in range(0, f.shape[1] - n + 1, n)]


def tdnn_chunks(
    inputs: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], frames: int = TDNN_CHUNK_FRAMES
) -> list[dict[str, np.ndarray]]:
    """TDNN calibration feeds of one shape: (padded acoustic, word vectors, word index) cut into half-overlapping
    pieces of ``frames`` (or the shortest input), each utterance's word table zero-padded to the longest."""
    words = max(v.shape[0] for _, v, _ in inputs)
    n = min([frames] + [a.shape[1] for a, _, _ in inputs])
    feeds = []
    for acoustic, vectors, index in inputs:
        table = np.zeros((words, vectors.shape[1]), dtype=np.float32)
        table[: len(vectors)] = vectors
        index = np.where(index < 0, words, index).astype(np.int64)  # row `words` is the graph's zero row
        for b in range(0, acoustic.shape[1] - n + 1, max(1, n // 2)):
            feeds.append(
                {
                    "acoustic": np.ascontiguousarray(acoustic[:, b : b + n]),
                    "word_vectors": table,
                    "word_index": np.ascontiguousarray(index[:, b : b + n]),
                }
            )
    return feeds


def export_recipe(
    punctuator: Punctuator,
    out_dir: Pathlike,
    *,
    am_checkpoint: Pathlike,
    tdnn_checkpoint: Pathlike,
    precisions: Sequence[str] = PRECISIONS,
    calibration: Sequence[Request] = (),
    per_channel: bool = True,
    reduce_range: bool = False,
    percentile: float = DEFAULT_PERCENTILE,
) -> ExportInfo:
    """Writes ``<out_dir>/{am,tdnn}[.int8].onnx`` and export.json; int8 needs ``calibration`` requests.

    ``punctuator`` must hold the float PyTorch models (not quantised, no ONNX backend)."""
    unknown = set(precisions) - set(PRECISIONS)
    if unknown or not precisions:
        raise ValueError(f"precisions must be among {PRECISIONS}, got {list(precisions)}")
    if punctuator.onnx is not None:
        raise ValueError("export needs the PyTorch models: this Punctuator already runs ONNX graphs")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "export.json").unlink(missing_ok=True)  # not complete until rewritten
    export_am(punctuator.am, out / graph_name("am", "float32"), punctuator.layer)
    export_tdnn(punctuator.factored, out / graph_name("tdnn", "float32"))
    used = 0
    if "int8" in precisions:
        if not calibration:
            raise ValueError("int8 export needs calibration utterances")
        am_feeds, tdnn_feeds = calibration_feeds(punctuator, calibration)
        used = len(calibration)
        for name, feeds in (("am", am_feeds), ("tdnn", tdnn_feeds)):
            quantize_int8(
                out / graph_name(name, "float32"),
                out / graph_name(name, "int8"),
                feeds,
                per_channel=per_channel,
                reduce_range=reduce_range,
                percentile=percentile,
            )
            logging.info("wrote %s (calibrated on %d pieces)", out / graph_name(name, "int8"), len(feeds))
    info = ExportInfo(
        layer=punctuator.layer,
        am_dim=punctuator.am.config.dim,
        text_dim=punctuator.bert.hidden_size,
        num_tokens=len(punctuator.tokens),
        precisions=tuple(p for p in PRECISIONS if p in precisions),
        am_sha256=file_sha256(am_checkpoint),
        tdnn_sha256=file_sha256(tdnn_checkpoint),
        calibration_utterances=used,
        per_channel=per_channel,
        reduce_range=reduce_range,
        percentile=percentile,
    )
    write_export_info(out, info)
    return info
