"""An exported model folder (punct.inference.model_folder): copied anywhere, it gives the recipe's posteriors, and a
folder that is incomplete, changed or from a newer punct is refused with the file named."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from benchmarks.random_models import save_recipe
from punct.inference.inputs import from_pair
from punct.inference.model_folder import (
    BASE_ENCODER_DIR,
    FORMAT_VERSION,
    MANIFEST,
    export_efficientpunct,
    read_model_folder,
)
from punct.inference.outputs import Failure
from punct.inference.pipeline import Punctuator
from punct.inference.recipe import recipe_paths
from tests.inference.test_pipeline import ALPHA, tiny_models, write_wav

TRANSCRIPTS = ("hello world the cat", "why not", "the cat is here and why")


def posteriors(punctuator: Punctuator, wavs) -> list[dict[str, np.ndarray]]:
    """Per utterance, the BERT, TDNN and ensemble posteriors of every word."""
    outputs = list(punctuator.run([from_pair(w, t) for w, t in zip(wavs, TRANSCRIPTS)]))
    assert not [o for o in outputs if isinstance(o, Failure)]
    return [
        {name: np.array([w[name] for w in o.to_json()["words"]]) for name in ("bert", "tdnn", "ensemble")}
        for o in outputs
    ]


def assert_same(got: list[dict], expected: list[dict]) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        for name in ("bert", "tdnn", "ensemble"):
            np.testing.assert_allclose(g[name], e[name], atol=1e-6, rtol=0, err_msg=name)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A tiny recipe, its posteriors on three wavs, and its export moved to another folder with the recipe gone."""
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("model_folder")
    save_recipe(root / "recipe", tiny_models(root), alpha=ALPHA)
    wavs = [write_wav(root / f"u{i}.wav", s, seed=i) for i, s in enumerate((2.0, 3.0, 1.5))]
    expected = posteriors(Punctuator.from_recipe(root / "recipe"), wavs)
    export_efficientpunct(recipe_paths(root / "recipe"), root / "export", alpha=ALPHA, word_vectors="fine-tuned")
    moved = root / "elsewhere" / "model"
    shutil.copytree(root / "export", moved)
    shutil.rmtree(root / "export")
    shutil.rmtree(root / "recipe")
    return moved, wavs, expected


def test_a_copied_folder_gives_the_recipe_posteriors(exported):
    folder, wavs, expected = exported
    punctuator = Punctuator.from_model_dir(folder)
    assert punctuator.alpha == ALPHA
    assert_same(posteriors(punctuator, wavs), expected)


def test_the_folder_holds_no_optimizer_and_lists_every_file(exported):
    folder, _, _ = exported
    model = read_model_folder(folder, kind="efficientpunct")
    on_disk = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - {MANIFEST}
    assert set(model.files) == on_disk
    tdnn = torch.load(folder / "tdnn" / "best-valid-f1.pt", weights_only=True)
    assert tdnn["optimizer"] is None and "rng" not in tdnn and tdnn["inputs"]["acoustic"] is not None


@pytest.mark.parametrize(
    "damage, error, named",
    [
        (lambda f: (f / "am" / "best-valid-loss.pt").unlink(), FileNotFoundError, "am/best-valid-loss.pt"),
        (lambda f: (f / "bert" / "config.json").write_text("{}"), ValueError, "bert/config.json"),
        (lambda f: (f / MANIFEST).unlink(), FileNotFoundError, MANIFEST),
    ],
)
def test_a_damaged_folder_is_refused_naming_the_file(exported, tmp_path, damage, error, named):
    folder = shutil.copytree(exported[0], tmp_path / "model")
    damage(folder)
    with pytest.raises(error, match=named.replace(".", r"\.")):
        Punctuator.from_model_dir(folder)


def test_a_folder_of_a_newer_format_or_another_kind_is_refused(exported, tmp_path):
    folder = shutil.copytree(exported[0], tmp_path / "model")
    manifest = json.loads((folder / MANIFEST).read_text())
    (folder / MANIFEST).write_text(json.dumps({**manifest, "format_version": FORMAT_VERSION + 1}))
    with pytest.raises(ValueError, match="upgrade punct"):
        read_model_folder(folder)
    (folder / MANIFEST).write_text(json.dumps({**manifest, "kind": "itn"}))
    with pytest.raises(ValueError, match="'itn' model folder"):
        Punctuator.from_model_dir(folder)


def test_pretrained_word_vectors_take_their_encoder_along(tmp_path):
    """A TDNN that fuses the pretrained encoder's vectors needs that encoder: the folder holds a copy, and works
    once the original encoder folder is gone."""
    from transformers import BertConfig, BertModel

    torch.set_num_threads(1)
    models = tiny_models(tmp_path)
    base = tmp_path / "base_encoder"
    torch.manual_seed(5)
    BertModel(BertConfig(**models.bert.encoder.config.to_dict())).save_pretrained(base)
    models.bert.base_encoder = str(base)
    save_recipe(tmp_path / "recipe", models, alpha=ALPHA, word_vectors="pretrained")
    wavs = [write_wav(tmp_path / f"u{i}.wav", s, seed=i) for i, s in enumerate((2.0, 3.0, 1.5))]
    recipe = Punctuator.from_recipe(tmp_path / "recipe")
    assert recipe.word_vector_model is not None
    expected = posteriors(recipe, wavs)
    export_efficientpunct(
        recipe_paths(tmp_path / "recipe"), tmp_path / "model", alpha=ALPHA, word_vectors="pretrained", base_encoder=base
    )
    shutil.rmtree(base)
    assert (tmp_path / "model" / BASE_ENCODER_DIR / "config.json").is_file()
    assert_same(posteriors(Punctuator.from_model_dir(tmp_path / "model"), wavs), expected)


def test_an_itn_folder_with_an_am_sound_encoder_works_without_the_recipe(tmp_path):
    """punctuate_itn --model on an exported ITN folder (a text-only model and a ``sound_encoder: am`` model, whose AM
    the folder holds) labels a recording as the recipe's model files did, once the recipe's AM folder is gone."""
    from punct.bin import punctuate_itn
    from punct.inference.model_folder import export_itn
    from punct.models.cross_attention.checkpoint import save_model
    from punct.models.cross_attention.data import read_segments
    from punct.models.cross_attention.model import build_model
    from tests.helpers.cross_attention import make_encoder, make_tokenizer, tiny_config, write_corpus
    from tests.helpers.tiny_am import write_am_dir

    torch.set_num_threads(1)
    data = write_corpus(tmp_path, num_segments=4)
    write_am_dir(tmp_path / "am")
    bert = tmp_path / "bert"
    make_encoder().save_pretrained(bert)
    make_tokenizer(tmp_path).save_pretrained(bert)
    files = {}
    for kind, name, extra in (
        ("text", "text", {}),
        ("mm", "mm", {"sound_encoder": "am", "am_dir": str(tmp_path / "am")}),
    ):
        cfg = tiny_config(bert_model=str(bert), first_word="exclude", **extra)
        torch.manual_seed(1)
        model = build_model(kind, cfg).eval()
        with torch.no_grad():
            for p in model.text.heads.parameters():
                p.normal_(0, 2.0)
        files[name] = tmp_path / "exp" / name / "best-valid-f1.pt"
        files[name].parent.mkdir(parents=True)
        save_model(files[name], model, kind, cfg)
    ctm = tmp_path / "rec.ctm"
    lines = [
        f"rec 1 {seg.start + s:.3f} {e - s:.3f} {w}"
        for seg in read_segments(data / "parczech_supervisions_dev.jsonl.gz")
        for w, s, e in zip(seg.words, seg.word_starts, seg.word_ends)
    ]
    ctm.write_text("\n".join(lines) + "\n")

    def labels(model: str, *options: str) -> list[tuple]:
        out = tmp_path / f"out_{len(list(tmp_path.glob('out_*')))}.jsonl"
        argv = ["--model", model, "--wav", str(tmp_path / "rec.wav"), "--ctm", str(ctm), "--out", str(out), *options]
        assert punctuate_itn.main(argv) == 0
        return [(w["word"], w["label"], w["case"]) for w in map(json.loads, out.read_text().splitlines())]

    expected = {name: labels(str(path)) for name, path in files.items()}
    assert expected["mm"] != expected["text"]  # two models that label differently: the system chosen matters
    export_itn(files, tmp_path / "export", default_system="mm", am_dir=tmp_path / "am")
    moved = tmp_path / "elsewhere" / "model"
    shutil.copytree(tmp_path / "export", moved)
    for gone in ("export", "am", "exp"):
        shutil.rmtree(tmp_path / gone)
    assert labels(str(moved)) == expected["mm"]
    assert labels(str(moved), "--system", "text") == expected["text"]
    with pytest.raises(SystemExit, match="no system 'mm_pe'"):
        labels(str(moved), "--system", "mm_pe")


def test_an_onnx_export_travels_with_the_folder(tmp_path):
    """The recipe's ONNX graphs, copied into the folder, pass punctuate's check against the folder's (model-only)
    TDNN checkpoint and give the recipe's ONNX posteriors; graphs of another TDNN are refused."""
    from punct.inference.export import export_recipe
    from punct.inference.model_folder import efficientpunct_paths, onnx_dir

    torch.set_num_threads(1)
    paths = save_recipe(tmp_path / "recipe", tiny_models(tmp_path), alpha=ALPHA)
    wavs = [write_wav(tmp_path / f"u{i}.wav", s, seed=i) for i, s in enumerate((2.0, 3.0, 1.5))]
    recipe = Punctuator.from_recipe(tmp_path / "recipe")
    export_recipe(
        recipe, tmp_path / "onnx", am_checkpoint=paths["am"], tdnn_checkpoint=paths["tdnn"], precisions=("float32",)
    )
    recipe.use_onnx(tmp_path / "onnx", "float32", am_checkpoint=paths["am"], tdnn_checkpoint=paths["tdnn"])
    expected = posteriors(recipe, wavs)
    model = export_efficientpunct(
        recipe_paths(tmp_path / "recipe"), tmp_path / "model", alpha=ALPHA, word_vectors="fine-tuned",
        onnx_dir=tmp_path / "onnx",
    )  # fmt: skip
    folder = efficientpunct_paths(model)
    punctuator = Punctuator.from_model_dir(tmp_path / "model").use_onnx(
        onnx_dir(model), "float32", am_checkpoint=folder["am_checkpoint"], tdnn_checkpoint=folder["tdnn_checkpoint"]
    )
    assert_same(posteriors(punctuator, wavs), expected)
    other = save_recipe(tmp_path / "other", tiny_models(tmp_path, seed=3), alpha=ALPHA)
    with pytest.raises(ValueError, match="exported from other checkpoints"):
        export_efficientpunct(
            {**recipe_paths(tmp_path / "recipe"), "tdnn_checkpoint": other["tdnn"]}, tmp_path / "bad", alpha=ALPHA,
            word_vectors="fine-tuned", onnx_dir=tmp_path / "onnx",
        )  # fmt: skip
    assert not (tmp_path / "bad").exists() and not (tmp_path / ".bad.partial").exists()  # no half-written folder
