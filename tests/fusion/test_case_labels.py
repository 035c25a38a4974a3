"""FusionCorpus with ParCzech labels (9 punctuation classes + case from custom["case"]), and a short
training and decoding of the two-head TDNN on it."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
import torch

from punct.models.punct_tdnn.dataset import FusedWindowDataset, UtteranceDataset, collate_utterances, open_split
from punct.models.punct_tdnn.infer import utterance_posteriors
from punct.models.punct_tdnn.tdnn import TdnnConfig
from punct.models.punct_tdnn.train import TrainTdnnConfig, corpus_classes, load_model, train_tdnn
from punct.labels import CASE, PUNCT9
from tests.fusion.synthetic import make_split

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


def open_itn(p, case=True):
    return open_split(p["cuts"], p["acoustic_scp"], p["text_scp"], 0, PUNCT9.classes, CASE.classes if case else None)


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


@pytest.mark.parametrize("unit", ["utterance", "window"])
def test_two_head_training_and_decoding(splits, tmp_path, unit, one_thread):
    model = TdnnConfig(fusion_dim=8, channels=(6, 6, 5, 5, 4, 4), head_dim=5, num_classes=9, case_classes=2)
    cfg = TrainTdnnConfig(model=model, label_set="itn", example_unit=unit, utterances_per_batch=3, optimizer="adam",
                          lr=0.01, epochs=2, loss_reduction="mean", num_workers=0, log_interval=0, dev_metric="macro_f1",
                          max_class_weight=10.0, batch_size=16, epoch_limit=32)
    assert corpus_classes(cfg) == (tuple(PUNCT9.classes), tuple(CASE.classes))
    train, dev = open_itn(splits["train"]), open_itn(splits["dev"])
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
        train_tdnn(cfg, open_itn(splits["train"], case=False), None, tmp_path / "x", torch.device("cpu"), progress=False)
