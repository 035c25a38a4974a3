"""punctuate's options checked before any model is read: --quantize (dynamic int8, CPU kernels only) on a GPU, two BERT
precisions, and --model (an exported folder) with the recipe's file options or a folder that is not one."""

from __future__ import annotations

import pytest
import torch

from punct.bin import punctuate
from punct.inference.pipeline import Punctuator


def test_quantize_refuses_cuda_models():
    punctuator = object.__new__(Punctuator)  # only the device matters: the check comes before any model
    punctuator.device = torch.device("cuda", 0)
    with pytest.raises(ValueError, match="CPU only.*cuda:0.*--device cpu"):
        punctuator.quantize(("bert",))


def test_cli_refuses_quantize_on_cuda_before_reading_models(tmp_path, monkeypatch):
    monkeypatch.setattr(punctuate, "resolve_device", lambda name: torch.device("cuda"))

    def no_models(*args, **kwargs):
        raise AssertionError("the models were read before --quantize was checked")

    monkeypatch.setattr(punctuate.Punctuator, "from_recipe", no_models)
    (tmp_path / "u.wav").touch()
    argv = [
        "--wav",
        str(tmp_path / "u.wav"),
        "--transcript",
        "hello",
        "--out-dir",
        str(tmp_path / "out"),
        "--device",
        "auto",
        "--quantize",
    ]
    with pytest.raises(ValueError, match="--quantize: .*CPU only.*resolved to cuda"):
        punctuate.main(argv)
    monkeypatch.setattr(punctuate, "resolve_device", lambda name: torch.device("cpu"))
    with pytest.raises(AssertionError, match="models were read"):  # on the CPU the run goes on to the models
        punctuate.main(argv)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--bert-bf16", "--bert-precision", "fastest"], "give one of them"),
        (["--quantize", "--bert-precision", "bf16"], "--quantize bert runs BERT in int8"),
        (["--quantize", "bert", "--bert-bf16"], "--quantize bert runs BERT in int8"),
    ],
)
def test_cli_refuses_two_bert_precisions_before_reading_models(tmp_path, monkeypatch, options, message):
    def no_models(*args, **kwargs):
        raise AssertionError("the models were read before the BERT precision options were checked")

    monkeypatch.setattr(punctuate.Punctuator, "from_recipe", no_models)
    (tmp_path / "u.wav").touch()
    argv = ["--wav", str(tmp_path / "u.wav"), "--transcript", "hello", "--out-dir", str(tmp_path / "out"), *options]
    with pytest.raises(ValueError, match=message):
        punctuate.main(argv)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--model", "MODEL", "--am-model", "am.pt"], "--model reads every file from its folder; drop --am-model"),
        (["--model", "MODEL"], r"punct_export\.json: no such file.*not an exported model folder"),
        (["--cmvn", "train"], "--cmvn train reads the --model folder's stats"),
    ],
)
def test_cli_model_folder_options_are_checked(tmp_path, options, message):
    (tmp_path / "u.wav").touch()
    (tmp_path / "MODEL").mkdir()
    options = [str(tmp_path / "MODEL") if o == "MODEL" else o for o in options]
    argv = ["--wav", str(tmp_path / "u.wav"), "--transcript", "hello", "--out-dir", str(tmp_path / "out"), *options]
    with pytest.raises(SystemExit, match=message):
        punctuate.main(argv)
