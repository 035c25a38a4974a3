"""ONNX Runtime backend (punct.inference.onnx_runtime / export, punct.bin.export_onnx, punctuate --backend onnx)
and bf16 BERT, on a tiny randomly initialised recipe."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

from benchmarks.random_models import save_recipe
from punct.inference.acoustic import am_forward
from punct.inference.inputs import from_pair
from punct.inference.outputs import Result
from punct.inference.pipeline import Punctuator
from tests.inference.test_pipeline import tiny_models, write_wav

TRANSCRIPTS = ["the cat sat on a mat", "why not hello world", "a cat on the mat why not", "hello the world"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A tiny recipe, its speech, and its ONNX export (float32 + int8 calibrated on the speech)."""
    from punct.bin.export_onnx import main

    root = tmp_path_factory.mktemp("onnx")
    save_recipe(root / "recipe", tiny_models(root), alpha=0.5)
    lines, texts = [], []
    for i, seconds in enumerate((2.0, 3.0, 2.5, 4.0)):
        wav = write_wav(root / f"u{i}.wav", seconds, seed=10 + i)
        lines.append(f"u{i} {wav}\n")
        texts.append(f"u{i} {TRANSCRIPTS[i]}\n")
    (root / "wav.scp").write_text("".join(lines))
    (root / "text").write_text("".join(texts))
    torch.set_num_threads(1)
    assert (
        main(["--recipe-dir", str(root / "recipe"), "--wav-scp", str(root / "wav.scp"), "--text", str(root / "text")])
        == 0
    )
    return root


def requests(root: Path):
    return [from_pair(root / f"u{i}.wav", TRANSCRIPTS[i], f"u{i}") for i in range(4)]


def run(root: Path, precision=None, **kwargs):
    p = Punctuator.from_recipe(root / "recipe", **kwargs)
    if precision:
        p.use_onnx(root / "recipe" / "exp" / "onnx", precision)
    out = list(p.run(requests(root)))
    assert all(isinstance(r, Result) for r in out), out
    return out


def test_export_folder(exported):
    folder = exported / "recipe" / "exp" / "onnx"
    info = json.loads((folder / "export.json").read_text())
    assert info["precisions"] == ["float32", "int8"] and info["calibration_utterances"] == 4
    assert info["layer"] == 12 and info["percentile"] == 99.99
    for name in ("am", "tdnn"):
        float_ops = {n.op_type for n in onnx.load(str(folder / f"{name}.onnx")).graph.node}
        int8_ops = {n.op_type for n in onnx.load(str(folder / f"{name}.int8.onnx")).graph.node}
        assert "QuantizeLinear" not in float_ops
        assert {"QuantizeLinear", "DequantizeLinear"} <= int8_ops  # the convolutions run on int8 tensors


def test_the_am_graph_reads_no_layer_lengths(tmp_path):
    """The factorised layers crop their bypass with constant ends: a bypass that read its input's length would
    put a Shape node after every layer, and in the int8 graph ONNX Runtime then transposes and dequantises each
    layer's output only to read its length (8 % of the AM's time at paper size, benchmarks/README.md)."""
    from punct.am.model import AmModelConfig, TdnnAcousticModel
    from punct.inference.onnx_runtime import export_am

    config = AmModelConfig(dim=24, bottleneck_dim=8, prefinal_small_dim=16, prefinal_big_dim=24, frame_subsample=3)
    am = TdnnAcousticModel(dataclasses.replace(config, num_tokens=5)).eval()
    graph = onnx.load(str(export_am(am, tmp_path / "am.onnx"))).graph
    shapes = sum(n.op_type == "Shape" for n in graph.node)
    cropping_layers = sum(1 for stride in config.time_strides if stride)
    assert 0 < shapes < cropping_layers  # the input padding, the tap's crop, the interpolation: not one per layer


def test_onnx_float32_equals_pytorch(exported):
    from punct.inference.onnx_runtime import OnnxAcousticModel

    p = Punctuator.from_recipe(exported / "recipe")
    feats = np.random.default_rng(3).normal(size=(333, 40)).astype(np.float32)  # another length than exported
    emb, log_probs = OnnxAcousticModel(exported / "recipe" / "exp" / "onnx" / "am.onnx")(feats)
    want_emb, want_lp = am_forward(p.am, feats, 12)
    np.testing.assert_allclose(emb, want_emb, atol=1e-4)
    np.testing.assert_allclose(log_probs, want_lp, atol=1e-4)
    reference, onnx_float = run(exported), run(exported, "float32")
    for a, b in zip(reference, onnx_float):
        assert a.words == b.words and a.spans == b.spans and a.labels == b.labels
        np.testing.assert_allclose(b.p_tdnn, a.p_tdnn, atol=1e-5)
        np.testing.assert_allclose(b.p_ensemble, a.p_ensemble, atol=1e-5)


def test_onnx_int8_is_close_but_quantised(exported):
    reference, int8 = run(exported), run(exported, "int8")
    diffs = [np.abs(b.p_tdnn - a.p_tdnn).max() for a, b in zip(reference, int8)]
    assert all(a.words == b.words for a, b in zip(reference, int8))
    assert max(diffs) < 0.05, diffs
    assert max(diffs) > 1e-6, diffs  # not the float graph under another name


@pytest.mark.parametrize("precision", [None, "float32", "int8"])
def test_the_storage_rounding_is_skipped_before_int8_graphs_only(exported, monkeypatch, precision):
    """lilcom's feature rounding and the 16-bit layer-12 rounding are finer than the int8 graphs' own input
    quantisation: skipped before them, kept for PyTorch and the float32 graphs (the recipe's numbers)."""
    from punct.inference import chain

    calls = {"features": 0, "layer 12": 0}

    def counted(name, function):
        def call(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)

        return call

    monkeypatch.setattr(chain, "stored_features", counted("features", chain.stored_features))
    monkeypatch.setattr(chain, "stored_matrix", counted("layer 12", chain.stored_matrix))
    out = run(exported, precision)
    expected = 0 if precision == "int8" else len(out)
    assert calls == {"features": expected, "layer 12": expected}


def test_stale_or_missing_export_is_refused(exported, tmp_path):
    from punct.inference.onnx_runtime import load_sessions

    folder = exported / "recipe" / "exp" / "onnx"
    other = tmp_path / "other.pt"
    other.write_bytes(b"a retrained checkpoint")
    with pytest.raises(ValueError, match="another checkpoint"):
        load_sessions(folder, "int8", am_checkpoint=other)
    with pytest.raises(FileNotFoundError, match="export.json"):
        load_sessions(tmp_path, "int8")


def test_punctuate_cli_onnx_backend(exported, tmp_path):
    from punct.bin.punctuate import main

    common = [
        "--recipe-dir",
        str(exported / "recipe"),
        "--wav-scp",
        str(exported / "wav.scp"),
        "--text",
        str(exported / "text"),
        "--device",
        "cpu",
        "--threads",
        "1",
    ]
    assert main(common + ["--out-dir", str(tmp_path / "torch")]) == 0
    assert main(common + ["--out-dir", str(tmp_path / "onnx"), "--backend", "onnx", "--onnx-precision", "float32"]) == 0
    assert (tmp_path / "onnx" / "text").read_text() == (tmp_path / "torch" / "text").read_text()
    assert main(common + ["--out-dir", str(tmp_path / "int8"), "--backend", "onnx"]) == 0
    assert len((tmp_path / "int8" / "text").read_text().splitlines()) == 4


@pytest.mark.skipif(not torch.ops.mkldnn._is_mkldnn_bf16_supported(), reason="this CPU has no bfloat16 instructions")
def test_bf16_bert_is_close(exported):
    reference, bf16 = run(exported), run(exported, bert_bf16=True)
    diffs = [np.abs(b.p_bert - a.p_bert).max() for a, b in zip(reference, bf16)]
    assert 0 < max(diffs) < 0.05, diffs  # bf16 really ran, and stayed close


@pytest.mark.skipif(torch.ops.mkldnn._is_mkldnn_bf16_supported(), reason="this CPU has bfloat16 instructions")
def test_bf16_bert_refused_without_hardware(exported):
    with pytest.raises(ValueError, match="bfloat16"):
        Punctuator.from_recipe(exported / "recipe", bert_bf16=True)
