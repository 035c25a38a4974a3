"""FusionCorpus / FusedWindowDataset on synthetic shards in the contract's formats."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from lhotse import CutSet

from punct.io.shards import MatrixReader, write_shard
from punct.labels import PUNCT4
from punct.models.punct_tdnn.dataset import FusedWindowDataset, FusionCorpus, open_split
from punct.models.punct_tdnn.infer import utterance_posteriors
from punct.models.punct_tdnn.tdnn import PunctTdnn, TdnnConfig
from tests.helpers.synthetic_splits import make_split


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    root = tmp_path_factory.mktemp("fusion")
    return make_split(root, "dev", num_utts=6, text_dim=4, am_dim=3, seed=7)


def test_corpus_indexes_every_word_with_its_label(split):
    corpus = open_split(split["cuts"], split["acoustic_scp"], split["text_scp"])
    cuts = list(CutSet.from_file(split["cuts"]))
    expected = [PUNCT4.classes.index(p) for c in cuts for p in c.supervisions[0].custom["punct"]]
    assert corpus.labels.tolist() == expected and len(corpus) == len(expected)
    assert (corpus.text_dim, corpus.acoustic_dim, corpus.input_dim) == (4, 3, 7)
    assert corpus.class_counts().sum() == len(expected)


@pytest.mark.parametrize("rule", ["word_end", "transition"])
def test_window_is_centred_on_the_word_end_or_the_transition(split, rule):
    corpus = open_split(split["cuts"], split["acoustic_scp"], split["text_scp"], window_centre=rule)
    cut = next(iter(CutSet.from_file(split["cuts"])))
    acoustic = MatrixReader(split["acoustic_scp"])[cut.id]
    vectors = MatrixReader(split["text_scp"])[cut.id]
    dataset = FusedWindowDataset(corpus, context=150)
    items = cut.supervisions[0].alignment["word"]
    for w, item in enumerate(items):
        last = round((item.start + item.duration - cut.start) * 100) - 1  # on the cut's frame axis
        if rule == "transition":  # the frame before the next word starts (the cut's last frame for the last word)
            last = round((items[w + 1].start - cut.start) * 100) - 1 if w + 1 < len(items) else acoustic.shape[0] - 1
            assert last >= round((item.start + item.duration - cut.start) * 100) - 1
        window, label = dataset[w]
        assert window.shape == (301, 7)
        assert label == PUNCT4.classes.index(cut.supervisions[0].custom["punct"][w])
        assert np.allclose(window[150, 4:].numpy(), acoustic[last], atol=1e-6)  # acoustic part
        assert np.allclose(window[150, :4].numpy(), vectors[w], atol=1e-6)  # the word's own BERT vector
        # left edge: frames before the cut start are zero in both parts
        if last < 150:
            assert not window[: 150 - last].any()
        # frames before the first word carry zeros as text but real acoustics
        first = round((items[0].start - cut.start) * 100)
        if first > 0 and last - first < 150:
            row = 150 - last  # frame 0
            assert not window[row, :4].any() and np.allclose(window[row, 4:].numpy(), acoustic[0], atol=1e-6)


def test_cuts_without_matrices_are_skipped_and_counted(split, tmp_path, caplog):
    reader = MatrixReader(split["text_scp"])
    keys = reader.keys()
    write_shard(tmp_path / "vec", [(k, reader[k]) for k in keys[1:]])  # drop the first cut's vectors
    with caplog.at_level(logging.WARNING):
        corpus = FusionCorpus(split["cuts"], split["acoustic_scp"], tmp_path / "vec.scp")
    assert corpus.skipped == {"no BERT vectors": 1}
    assert len(corpus.utterances) == len(keys) - 1
    assert any("skipped 1 cut(s): no BERT vectors" in r.message for r in caplog.records)


def test_wrong_number_of_vectors_names_the_cut(split, tmp_path):
    reader = MatrixReader(split["text_scp"])
    keys = reader.keys()
    write_shard(tmp_path / "vec", [(k, reader[k][:-1] if i == 0 else reader[k]) for i, k in enumerate(keys)])
    corpus = FusionCorpus(split["cuts"], split["acoustic_scp"], tmp_path / "vec.scp")
    with pytest.raises(ValueError, match=keys[0]):
        FusedWindowDataset(corpus)[0]


def test_missing_input_names_the_file(split, tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.scp"):
        open_split(split["cuts"], tmp_path / "nope.scp", split["text_scp"])


def test_lru_cache_is_bounded(split):
    corpus = FusionCorpus(split["cuts"], split["acoustic_scp"], split["text_scp"], cache_utterances=2)
    for utt in range(len(corpus.utterances)):
        corpus.matrices(utt)
    assert list(corpus._cache) == [len(corpus.utterances) - 2, len(corpus.utterances) - 1]


def test_fully_convolutional_posteriors_match_windows(split):
    corpus = open_split(split["cuts"], split["acoustic_scp"], split["text_scp"])
    torch.manual_seed(0)
    model = PunctTdnn(TdnnConfig(input_dim=7, fusion_dim=8, channels=(8, 8, 6, 6, 5, 5), head_dim=6)).eval()
    dataset = FusedWindowDataset(corpus, context=150)
    start = 0
    for key, post in utterance_posteriors(model, corpus, torch.device("cpu")):
        windows = torch.stack([dataset[i][0] for i in range(start, start + len(post))])
        with torch.no_grad():
            expected = torch.softmax(model(windows), dim=-1).numpy()
        assert np.abs(post - expected).max() < 1e-5, key
        start += len(post)
    assert start == len(corpus)
