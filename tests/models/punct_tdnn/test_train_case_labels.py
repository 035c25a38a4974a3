"""FusionCorpus with ParCzech labels (9 punctuation classes + case from custom["case"]), and a short
training and decoding of the two-head TDNN on it."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
import torch

from punct.labels import CASE, IGNORE_INDEX, PUNCT9
from punct.models.punct_tdnn.checkpoint import load_model
from punct.models.punct_tdnn.config import TrainTdnnConfig, corpus_classes
from punct.models.punct_tdnn.dataset import FusedWindowDataset, UtteranceDataset, collate_utterances, open_split
from punct.models.punct_tdnn.infer import utterance_posteriors
from punct.models.punct_tdnn.tdnn import TdnnConfig
from punct.models.punct_tdnn.train import (
    build_criteria,
    build_model,
    dev_overall_f1,
    make_loader,
    tdnn_loss,
    train_tdnn,
)
from punct.scoring.punct_scores import score
from punct.training.loop import DistInfo
from tests.helpers.synthetic_splits import make_split

ITN_NAMES = {"NP": "blank", ",": ",", ".": ".", "?": "?"}


def to_itn_labels(cuts_path, drop_case_of=None, bad_case_of=None):
    """Rewrites synthetic MuST-C cuts with ParCzech names; case = cap at the start and after . and ?"""
    lines = []
    with gzip.open(cuts_path, "rt", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            custom = d["supervisions"][0]["custom"]
            punct = [ITN_NAMES[p] for p in custom["punct"]]
            case = ["cap" if i == 0 or punct[i - 1] in (".", "?") else "blank" for i in range(len(punct))]
            custom["punct"] = punct
            if d["id"] == bad_case_of:
                case[0] = "upper"
            custom["case"] = case
            if d["id"] == drop_case_of:
                del custom["case"]
            lines.append(json.dumps(d))
    with gzip.open(cuts_path, "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    root = tmp_path_factory.mktemp("itn")
    out = {}
    for i, split in enumerate(("train", "dev")):
        p = make_split(root, split, num_utts=10, text_dim=3, am_dim=2, seed=50 + i)
        to_itn_labels(p["cuts"])
        out[split] = p
    return out


def open_itn(p, case=True, first_word="include"):
    return open_split(
        p["cuts"],
        p["acoustic_scp"],
        p["text_scp"],
        0,
        PUNCT9.classes,
        CASE.classes if case else None,
        first_word=first_word,
    )


def test_corpus_reads_case_labels(splits):
    from lhotse import load_manifest

    corpus = open_itn(splits["train"])
    cuts = load_manifest(splits["train"]["cuts"])
    expected_case = [CASE.classes.index(c) for cut in cuts for c in cut.supervisions[0].custom["case"]]
    expected_punct = [PUNCT9.classes.index(p) for cut in cuts for p in cut.supervisions[0].custom["punct"]]
    assert corpus.case_labels.tolist() == expected_case and corpus.labels.tolist() == expected_punct
    assert 0 < corpus.case_counts()[1] < len(corpus)  # both case classes occur
    window, label = FusedWindowDataset(corpus, context=150)[3]
    assert window.shape == (301, 5) and label.tolist() == [expected_punct[3], expected_case[3]]
    items = [UtteranceDataset(corpus)[u] for u in range(3)]
    assert items[0][2].shape == (len(corpus.utterances[0].labels), 2)
    _, _, _, labels = collate_utterances(items, context=150)
    assert labels[:, 1].tolist() == expected_case[: len(labels)]
    # without case classes the labels are the punctuation ids alone (the MuST-C behaviour)
    plain = open_itn(splits["train"], case=False)
    assert plain.case_labels is None and FusedWindowDataset(plain, 150)[3][1] == expected_punct[3]


def test_missing_or_unknown_case_is_an_error_naming_the_cut(tmp_path):
    p = make_split(tmp_path, "dev", num_utts=3, text_dim=3, am_dim=2, seed=7)
    to_itn_labels(p["cuts"], drop_case_of="ted_dev1_0")
    with pytest.raises(ValueError, match="ted_dev1_0.*'case'"):
        open_itn(p)
    p = make_split(tmp_path / "b", "dev", num_utts=3, text_dim=3, am_dim=2, seed=7)
    to_itn_labels(p["cuts"], bad_case_of="ted_dev2_0")
    with pytest.raises(ValueError, match="ted_dev2_0.*upper"):
        open_itn(p)


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: threads only add overhead on the shared CPUs
    yield
    torch.set_num_threads(before)


def tiny_cfg(unit: str, first_word: str = "include") -> TrainTdnnConfig:
    model = TdnnConfig(fusion_dim=8, channels=(6, 6, 5, 5, 4, 4), head_dim=5, num_classes=9, case_classes=2)
    return TrainTdnnConfig(
        model=model,
        label_set="itn",
        example_unit=unit,
        utterances_per_batch=3,
        optimizer="adam",
        lr=0.01,
        epochs=2,
        loss_reduction="mean",
        num_workers=0,
        log_interval=0,
        dev_metric="macro_f1",
        max_class_weight=10.0,
        batch_size=16,
        epoch_limit=32,
        first_word=first_word,
    )


@pytest.mark.parametrize(
    "unit,first_word",
    [("utterance", "include"), ("window", "include"), ("utterance", "exclude"), ("window", "exclude")],
)
def test_two_head_training_and_decoding(splits, tmp_path, unit, first_word, one_thread):
    cfg = tiny_cfg(unit, first_word)
    assert corpus_classes(cfg) == (tuple(PUNCT9.classes), tuple(CASE.classes))
    train, dev = open_itn(splits["train"], first_word=first_word), open_itn(splits["dev"], first_word=first_word)
    train_tdnn(cfg, train, dev, tmp_path, torch.device("cpu"), seed=3, progress=False)
    state = torch.load(tmp_path / "epoch-2.pt", weights_only=True)["state"]
    assert all("macro_f1" in h and "cap" in h["case_per_class_f1"] for h in state["history"])
    assert state["best_f1"] == max(h["macro_f1"] for h in state["history"])
    best = load_model(tmp_path / "best-valid-f1.pt")
    posts = dict(utterance_posteriors(best, dev, torch.device("cpu")))
    assert set(posts) == {u.key for u in dev.utterances}
    for u in dev.utterances:
        p = posts[u.key]
        assert p.shape == (len(u.labels), 11)
        assert np.allclose(p[:, :9].sum(1), 1, atol=1e-5) and np.allclose(p[:, 9:].sum(1), 1, atol=1e-5)
    # a case-head config on a corpus without case labels is refused
    with pytest.raises(ValueError, match="no case labels"):
        train_tdnn(
            cfg,
            open_itn(splits["train"], case=False, first_word=first_word),
            None,
            tmp_path / "x",
            torch.device("cpu"),
            progress=False,
        )


def test_first_word_is_left_out_of_the_targets_counts_and_windows(splits):
    every, exc = open_itn(splits["train"]), open_itn(splits["train"], first_word="exclude")
    lengths = [len(u.labels) for u in exc.utterances]
    first = np.cumsum([0] + lengths[:-1])
    assert np.flatnonzero(~exc.scored).tolist() == first.tolist() and every.scored.all()
    assert exc.trained_examples().tolist() == sorted(set(range(len(exc))) - set(first.tolist()))
    assert (
        exc.class_counts().tolist() == (every.class_counts() - np.bincount(every.labels[first], minlength=9)).tolist()
    )
    assert (
        exc.case_counts().tolist()
        == (every.case_counts() - np.bincount(every.case_labels[first], minlength=2)).tolist()
    )
    assert exc.case_counts()[1] < every.case_counts()[1]  # every cut starts with a capital
    for u in range(3):
        labels, all_labels = exc.utterance_labels(u), every.utterance_labels(u)
        assert labels[0].tolist() == [IGNORE_INDEX, IGNORE_INDEX] and np.array_equal(labels[1:], all_labels[1:])
    # window mode: the sampler never draws a first word (include: it does)
    for corpus, rule in ((exc, "exclude"), (every, "include")):
        loader, sampler = make_loader(tiny_cfg("window", rule), corpus, torch.device("cpu"), 0, DistInfo())
        sampler.set_epoch(1)
        drawn = {int(loader.dataset.items.examples[i]) for i in sampler.rank_items()}
        assert bool(drawn & set(first.tolist())) == (rule == "include")


def test_loss_and_dev_scores_leave_the_first_word_out(splits, tmp_path, one_thread):
    cfg = tiny_cfg("utterance", "exclude")
    train = open_itn(splits["train"], first_word="exclude")
    items = [UtteranceDataset(train)[u] for u in range(3)]
    _, _, _, labels = collate_utterances(items, context=150)
    right = torch.full((len(labels), 11), -15.0)
    right[torch.arange(len(labels)), labels[:, 0].clamp(min=0)] = 15.0
    right[torch.arange(len(labels)), 9 + labels[:, 1].clamp(min=0)] = 15.0
    wrong = right.clone()
    firsts = (labels[:, 0] == IGNORE_INDEX).nonzero().flatten()
    assert len(firsts) == 3
    wrong[firsts] = -right[firsts]  # confidently wrong on the first words only
    criteria = build_criteria(cfg, train, torch.device("cpu"))
    assert tdnn_loss(wrong, labels, criteria, cfg).item() == tdnn_loss(right, labels, criteria, cfg).item() < 1e-9
    # dev scores of a model: on the words after each cut's first
    dev = open_itn(splits["dev"], first_word="exclude")
    torch.manual_seed(0)
    model = build_model(cfg, dev.input_dim).eval()  # random weights: the scores only have to match
    record = dev_overall_f1(model, dev, torch.device("cpu"))
    posts = np.concatenate([p for _, p in utterance_posteriors(model, dev, torch.device("cpu"))])
    keep = dev.scored
    expected = score(dev.labels[keep], posts[keep, :9].argmax(1), PUNCT9.classes)
    assert record["macro_f1"] == expected.macro_f1 and not keep.all()
    every = score(dev.labels, posts[:, :9].argmax(1), PUNCT9.classes)
    assert every.confusion.sum() - expected.confusion.sum() == len(dev.utterances)
    with pytest.raises(ValueError, match="first_word"):
        train_tdnn(cfg, open_itn(splits["train"]), None, tmp_path, torch.device("cpu"), progress=False)
