"""ONNX Runtime backend for the two convolutional networks of inference: the acoustic model (layer 12
and CTC log-posteriors in one pass) and the punctuation TDNN's conv stack (word-factored fusion),
in float32 or with static int8 quantisation calibrated on recipe speech.

PyTorch's dynamic quantisation covers Linear layers only, so the AM (all Conv1d) stays float there; at
paper size it is about 40 % of the pipeline.  ONNX Runtime quantises the convolutions statically:
activation ranges are measured once on calibration utterances (``calibrate``), weights are int8 per
output channel, and its int8 kernels use AVX-512 VNNI where the CPU has it.  Without VNNI (older x86),
u8 x s8 products can saturate; quantise there with ``reduce_range=True``.

An export folder (``exp/onnx`` by default, written by ``punct.bin.export_onnx``) holds

    am.onnx, tdnn.onnx            float32 graphs (outputs equal to PyTorch up to float rounding)
    am.int8.onnx, tdnn.int8.onnx  static int8 (QDQ format, per-channel weights)
    export.json                   layer, dimensions, and the SHA-256 of the checkpoints exported

and is loaded by :func:`load_sessions`, which refuses an export made from other checkpoints.
The TDNN's per-word head (243 -> 70 -> 1 per channel) stays in PyTorch: it is a few kFLOPs per word.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from lhotse.utils import Pathlike

from punct.am.model import TdnnAcousticModel
from punct.io.sources import file_sha256
from punct.models.punct_tdnn.tdnn import WordFactoredTdnn
from punct.utils.atomic import atomic_path, atomic_write_text

PRECISIONS = ("float32", "int8")
# Activation ranges cover 99.99 % of the calibration values: on the trained mini recipe min/max ranges
# (stretched by rare outliers, and wider the more data is seen) flipped 4-10 of 1245 dev labels, the
# 99.99th percentile 2 (benchmarks/README.md).
DEFAULT_PERCENTILE = 99.99
CALIBRATION_STRIDE = 16
OPSET = 17
EXPORT_JSON = "export.json"


@dataclass(frozen=True)
class ExportInfo:
    """What an export folder holds (export.json)."""

    layer: int  # AM layer tapped for the TDNN
    am_dim: int
    text_dim: int
    num_tokens: int
    precisions: tuple[str, ...]
    am_sha256: str  # the checkpoint files the graphs were made from
    tdnn_sha256: str
    calibration_utterances: int = 0  # for int8
    per_channel: bool = True
    reduce_range: bool = False
    percentile: float = 0.0  # activation ranges: this percentile of |x| over the calibration data (0: min/max)


def graph_name(model: str, precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    return f"{model}.onnx" if precision == "float32" else f"{model}.{precision}.onnx"


# ---- export ------------------------------------------------------------------------------------


class _TappedAm(torch.nn.Module):
    """feats (1, T, F) -> (layer output (1, T, C), CTC log-posteriors (1, T, V))."""

    def __init__(self, am: torch.nn.Module, layer: int) -> None:
        super().__init__()
        self.am, self.layer = am, layer

    def forward(self, feats: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        emb, logits = self.am.forward_with_tap(feats, self.layer)
        return emb, logits.log_softmax(dim=-1)


def export_graph(
    module: torch.nn.Module,
    inputs: tuple[torch.Tensor, ...],
    path: Path,
    input_names: Sequence[str],
    output_names: Sequence[str],
    dynamic_axes: dict[str, dict[int, str]],
) -> None:
    import warnings

    module = module.eval()
    with atomic_path(path, suffix=".onnx") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        with torch.no_grad():
            # dynamo=False: the TorchScript-based exporter handles the data-dependent crops and
            # gathers with symbolic lengths and needs no onnxscript.
            torch.onnx.export(
                module,
                inputs,
                str(tmp),
                input_names=list(input_names),
                output_names=list(output_names),
                dynamic_axes=dynamic_axes,
                opset_version=OPSET,
                dynamo=False,
            )


def export_am(am: TdnnAcousticModel, path: Pathlike, layer: int = 12, frames: int = 200) -> Path:
    """The AM with the layer tap as an ONNX graph: input ``feats`` (1, T, F), outputs ``embedding``, ``log_probs``.
    Its BatchNorms are folded into the convolutions (``punct.am.folded``) when their scales allow."""
    from punct.am.folded import FoldedAcousticModel

    path = Path(path)
    example = torch.randn(1, frames, am.config.feat_dim)
    try:
        graph_model = FoldedAcousticModel(am.cpu())  # no float BatchNorm between the int8 convolutions
    except ValueError as e:
        logging.warning("exporting the AM with its BatchNorms (%s)", e)
        graph_model = am.cpu()
    export_graph(
        _TappedAm(graph_model, layer),
        (example,),
        path,
        ["feats"],
        ["embedding", "log_probs"],
        {"feats": {1: "frames"}, "embedding": {1: "frames"}, "log_probs": {1: "frames"}},
    )
    return path


def export_tdnn(factored: WordFactoredTdnn, path: Pathlike, frames: int = 400, words: int = 5) -> Path:
    """The word-factored conv stack as an ONNX graph: inputs ``acoustic`` (1, L, Da), ``word_vectors``
    (W, Dt), ``word_index`` (1, L) int64; output ``conv`` (1, C, L - shrink).  BatchNorms folded when they allow."""
    from punct.models.punct_tdnn.tdnn import FoldedWordFactoredTdnn

    path = Path(path)
    acoustic_dim = factored.acoustic.in_features
    example = (
        torch.randn(1, frames, acoustic_dim),
        torch.randn(words, factored.text_dim),
        torch.randint(-1, words, (1, frames)),
    )
    try:
        graph_model = FoldedWordFactoredTdnn(factored.cpu())  # no float BatchNorm between the int8 convolutions
    except ValueError as e:
        logging.warning("exporting the TDNN with its BatchNorms (%s)", e)
        graph_model = factored.cpu()
    export_graph(
        graph_model,
        example,
        path,
        ["acoustic", "word_vectors", "word_index"],
        ["conv"],
        {
            "acoustic": {0: "batch", 1: "frames"},
            "word_vectors": {0: "words"},
            "word_index": {0: "batch", 1: "frames"},
            "conv": {0: "batch", 2: "out_frames"},
        },
    )
    return path


def quantize_int8(
    float_path: Pathlike,
    int8_path: Pathlike,
    calibration: Sequence[dict[str, np.ndarray]],
    per_channel: bool = True,
    reduce_range: bool = False,
    percentile: float = DEFAULT_PERCENTILE,
    op_types: Sequence[str] | None = None,
    symbolic_shapes: bool = True,
    exclude: Sequence[str] = (),
) -> Path:
    """Static int8 quantisation (QDQ, u8 activations, s8 weights) with activation ranges from ``calibration``,
    a list of input feeds of one shape: the ``percentile`` of each activation's values (0: min/max).
    ``op_types``: only these operators (e.g. MatMul and Gemm of a transformer, whose attention mask holds
    -inf, a range no histogram takes); ``symbolic_shapes=False`` skips the symbolic shape inference of the
    pre-processing (which gives up on transformers' graphs); ``exclude``: names of nodes left in float."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    if not calibration:
        raise ValueError("int8 quantisation needs at least one calibration input")
    if not 0.0 <= percentile <= 100.0:
        raise ValueError(f"percentile must be in [0, 100] (0: min/max ranges), got {percentile}")

    # The calibrator keeps every activation of the feeds it is given; in strides of CALIBRATION_STRIDE
    # feeds it summarises each stride (histograms / ranges) before the next, bounding its memory.
    stride = min(CALIBRATION_STRIDE, len(calibration))
    calibration = list(calibration)[: len(calibration) // stride * stride]

    method = CalibrationMethod.Percentile if percentile > 0 else CalibrationMethod.MinMax
    extra = {"CalibStridedMinMax": stride, **({"CalibPercentile": percentile} if percentile > 0 else {})}
    int8_path = Path(int8_path)
    quiet = logging.getLogger().level
    logging.getLogger().setLevel(logging.ERROR)  # the quantiser warns about every shape tensor it skips
    try:  # the calibrator prints its progress on stdout
        with (
            tempfile.TemporaryDirectory(prefix="punct_quant_") as tmp,
            atomic_path(int8_path, suffix=".onnx") as out,
            contextlib.redirect_stdout(io.StringIO()),
        ):
            prepared = Path(tmp) / "prepared.onnx"
            _pre_process(Path(float_path), prepared, symbolic_shapes)
            quantize_static(
                str(prepared),
                str(out),
                _calibration_reader(calibration),
                quant_format=QuantFormat.QDQ,
                per_channel=per_channel,
                reduce_range=reduce_range,
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
                calibrate_method=method,
                op_types_to_quantize=list(op_types) if op_types is not None else None,
                nodes_to_exclude=list(exclude),
                extra_options=extra,
            )
    finally:
        logging.getLogger().setLevel(quiet)
    return int8_path


def _pre_process(float_path: Path, prepared: Path, symbolic_shapes: bool) -> None:
    """onnxruntime's quantisation pre-processing of ``float_path`` into ``prepared``.  Its symbolic shape
    inference saves a model it cannot finish (with a uuid-named external-data file) into the working
    directory, so it runs in ``prepared``'s folder (a temporary one)."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    source, previous = float_path.resolve(), os.getcwd()
    os.chdir(prepared.parent)
    try:
        quant_pre_process(str(source), str(prepared), skip_symbolic_shape=not symbolic_shapes)
    finally:
        os.chdir(previous)


def _calibration_reader(calibration: Sequence[dict[str, np.ndarray]]):
    """An onnxruntime ``CalibrationDataReader`` over the feeds; the calibrator reads it one stride at a time
    through ``set_range``."""
    from onnxruntime.quantization import CalibrationDataReader

    class Feeds(CalibrationDataReader):
        def __init__(self) -> None:
            self.range = (0, len(calibration))
            self.next = 0

        def __len__(self) -> int:
            return len(calibration)

        def set_range(self, start_index: int, end_index: int) -> None:
            self.range, self.next = (start_index, end_index), start_index

        def get_next(self):
            if self.next >= self.range[1]:
                return None
            self.next += 1
            return calibration[self.next - 1]

    return Feeds()


def write_export_info(folder: Pathlike, info: ExportInfo) -> None:
    atomic_write_text(Path(folder) / EXPORT_JSON, json.dumps(asdict(info), indent=1) + "\n")


def read_export_info(folder: Pathlike) -> ExportInfo:
    path = Path(folder) / EXPORT_JSON
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file; export the models first (python -m punct.bin.export_onnx)")
    data = json.loads(path.read_text(encoding="utf-8"))
    data["precisions"] = tuple(data["precisions"])
    return ExportInfo(**data)


# ---- inference ---------------------------------------------------------------------------------


def session(path: Pathlike, threads: int = 1):
    """An ONNX Runtime CPU session with ``threads`` intra-op threads and all graph optimisations."""
    import onnxruntime as ort

    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no such ONNX graph")
    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, threads)
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class OnnxAcousticModel:
    """``__call__(feats (T, F)) -> (layer output (T, C), log-posteriors (T, V))``, as
    ``punct.inference.acoustic.am_forward``."""

    def __init__(self, path: Pathlike, threads: int = 1) -> None:
        self.session = session(path, threads)

    def __call__(self, feats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        emb, log_probs = self.session.run(None, {"feats": np.ascontiguousarray(feats, dtype=np.float32)[None]})
        return emb[0], log_probs[0]


class OnnxTdnnConvStack:
    """The word-factored conv stack: ``__call__(acoustic, word_vectors, word_index)`` on torch tensors, as
    ``WordFactoredTdnn.forward`` (so it can stand in for it in ``WordFactoredTdnn.utterance_logits``)."""

    def __init__(self, path: Pathlike, threads: int = 1) -> None:
        self.session = session(path, threads)

    def __call__(self, acoustic: torch.Tensor, word_vectors: torch.Tensor, word_index: torch.Tensor) -> torch.Tensor:
        (conv,) = self.session.run(
            None,
            {
                "acoustic": acoustic.float().numpy(),
                "word_vectors": word_vectors.float().numpy(),
                "word_index": word_index.numpy().astype(np.int64),
            },
        )
        return torch.from_numpy(conv)


@dataclass
class OnnxModels:
    """The sessions a Punctuator runs; a part that is None runs in PyTorch."""

    am: OnnxAcousticModel | None
    tdnn: OnnxTdnnConvStack | None
    info: ExportInfo
    precision: str


def load_sessions(
    folder: Pathlike,
    precision: str = "int8",
    threads: int = 1,
    am_checkpoint: Pathlike | None = None,
    tdnn_checkpoint: Pathlike | None = None,
) -> OnnxModels:
    """The AM and TDNN sessions of an export folder; with the checkpoints given, checks the export was made
    from them."""
    folder = Path(folder)
    info = read_export_info(folder)
    if precision not in info.precisions:
        raise ValueError(
            f"{folder}: exported precisions {list(info.precisions)}, not {precision!r}; "
            f"re-run python -m punct.bin.export_onnx --precisions {precision}"
        )
    for name, ckpt, expected in (("AM", am_checkpoint, info.am_sha256), ("TDNN", tdnn_checkpoint, info.tdnn_sha256)):
        if ckpt is not None and file_sha256(ckpt) != expected:
            raise ValueError(
                f"{folder}: the {name} graph was exported from another checkpoint than {ckpt} "
                "(retrained since?); re-run python -m punct.bin.export_onnx"
            )
    return OnnxModels(
        OnnxAcousticModel(folder / graph_name("am", precision), threads),
        OnnxTdnnConvStack(folder / graph_name("tdnn", precision), threads),
        info,
        precision,
    )
