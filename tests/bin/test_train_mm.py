"""punct.bin.train_mm and punct.bin.score_itn end to end on a synthetic corpus with a tiny BERT."""

from __future__ import annotations

import json

import pytest
import torch

from punct.bin import score_itn, train_mm
from tests.helpers.cross_attention import (
    TINY_MODEL,
    TINY_TRAINING,
    cli_options,
    make_encoder,
    make_tokenizer,
    write_corpus,
)


def _bert_folder(tmp_path):
    folder = tmp_path / "bert"
    make_encoder().save_pretrained(folder)
    make_tokenizer(tmp_path).save_pretrained(folder)
    return folder


TINY = cli_options(**TINY_MODEL, batch_size=2, **TINY_TRAINING, log_interval=1)


def test_train_resume_decode_and_score(tmp_path):
    data = write_corpus(tmp_path)
    bert = str(_bert_folder(tmp_path))
    mm = tmp_path / "exp" / "mm_pe"
    common = ["--data-dir", str(data), "--prefix", "parczech", "--bert-model", bert] + TINY
    train_mm.main(["--model", "mm", "--positional", "true", "--exp-dir", str(mm), "--num-epochs", "1"] + common)
    first = json.loads((mm / "history.json").read_text())
    assert len(first) == 1 and (mm / "epoch-1.pt").is_file() and (mm / ".done").is_file()
    # --resume continues at epoch 2 with the saved state
    train_mm.main(
        ["--model", "mm", "--positional", "true", "--exp-dir", str(mm), "--num-epochs", "2", "--resume"] + common
    )
    hist = json.loads((mm / "history.json").read_text())
    assert [h["epoch"] for h in hist] == [1, 2] and hist[0] == first[0]
    assert not (mm / "epoch-1.pt").exists() and (mm / "epoch-2.pt").is_file()  # keep_last_epochs = 1
    assert torch.load(mm / "epoch-2.pt", weights_only=True)["state"]["epoch"] == 2  # plain values only
    best = torch.load(mm / "best-valid-f1.pt", weights_only=True)
    assert best["kind"] == "mm" and best["config"]["positional"] is True
    lines = (mm / "decode" / "test.jsonl").read_text().splitlines()
    assert len(lines) == 6 and len(json.loads(lines[0])["punct_hyp"]) == len(json.loads(lines[0])["words"])
    attention = json.loads((mm / "decode" / "dev.attention.json").read_text())
    assert 1 <= len(attention) <= 4 and len(attention[0]["attention"]) == len(attention[0]["tokens"])

    text = tmp_path / "exp" / "text"
    train_mm.main(["--model", "text", "--exp-dir", str(text), "--num-epochs", "1"] + common)
    assert not (text / "decode" / "dev.attention.json").exists()

    out = tmp_path / "results"
    score_itn.main(
        [
            "--out-dir",
            str(out),
            "--num-resamples",
            "100",
            "--train-supervisions",
            str(data / "parczech_supervisions_train.jsonl.gz"),
            f"{text}:text-only",
            f"{mm}:multimodal+PE",
        ]
    )
    results = (out / "RESULTS.md").read_text()
    for row in ("| text-only |", "| multimodal+PE |", "| EfficientPunct | —"):
        assert row in results
    assert "## dev" in results and "## test" in results
    assert (out / "plots" / "confusion_punct_text-only_test.png").stat().st_size > 1000
    assert (out / "plots" / "attention_multimodal+PE_dev_1.png").is_file()
    assert (out / "plots" / "f1_by_length_test.png").is_file()
    scores = json.loads((out / "scores" / "multimodal+PE.test.json").read_text())
    assert (
        scores["num_segments"] == 6
        and 0.0 <= scores["macro_f1"]["low"] <= scores["macro_f1"]["value"] <= scores["macro_f1"]["high"]
    )


@pytest.mark.parametrize("dev_metric", ["loss", "last"])
def test_dev_metric_keeps_the_epoch_it_names(tmp_path, dev_metric):
    """``loss``: the epoch of the lowest dev loss; ``last``: the last epoch, whatever dev says."""
    data = write_corpus(tmp_path)
    text = tmp_path / "exp" / "text"
    train_mm.main(
        [
            "--model",
            "text",
            "--exp-dir",
            str(text),
            "--num-epochs",
            "4",
            "--dev-metric",
            dev_metric,
            "--data-dir",
            str(data),
            "--prefix",
            "parczech",
            "--bert-model",
            str(_bert_folder(tmp_path)),
        ]
        + TINY
    )
    history = json.loads((text / "history.json").read_text())
    kept = min(history, key=lambda h: h["dev_loss"])["epoch"] if dev_metric == "loss" else 4
    assert [h["epoch"] for h in history] == [1, 2, 3, 4]
    assert json.loads((text / "best-valid-f1.json").read_text())["epoch"] == kept
    assert torch.load(text / "best-valid-f1.pt", weights_only=True)["epoch"] == kept


def test_average_epochs_saves_the_mean_of_the_last_epochs_weights(tmp_path):
    data = write_corpus(tmp_path)
    text = tmp_path / "exp" / "text"
    train_mm.main(
        [
            "--model",
            "text",
            "--exp-dir",
            str(text),
            "--num-epochs",
            "3",
            "--average-epochs",
            "2",
            "--keep-last-epochs",
            "1",
            "--data-dir",
            str(data),
            "--prefix",
            "parczech",
            "--bert-model",
            str(_bert_folder(tmp_path)),
        ]
        + TINY
    )
    # keep_last_epochs 1 is raised to the 2 epochs the average needs
    assert sorted(p.name for p in text.glob("epoch-*.pt")) == ["epoch-2.pt", "epoch-3.pt"]
    epochs = [torch.load(text / f"epoch-{e}.pt", weights_only=True)["model"] for e in (2, 3)]
    best = torch.load(text / "best-valid-f1.pt", weights_only=True)
    assert best["averaged_epochs"] == [2, 3]
    trained = [
        k for k, v in best["model"].items() if v.is_floating_point() and not torch.equal(epochs[0][k], epochs[1][k])
    ]
    assert trained  # the two epochs differ, so the mean is neither of them
    for name in trained:
        torch.testing.assert_close(best["model"][name], (epochs[0][name] + epochs[1][name]) / 2)
    summary = json.loads((text / "best-valid-f1.json").read_text())
    assert summary["averaged_epochs"] == [2, 3] and 0.0 <= summary["dev_punct"]["macro_f1"] <= 1.0
    assert (text / "decode" / "test.jsonl").is_file() and (text / ".done").is_file()
