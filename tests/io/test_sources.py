"""punct.io.sources: what dumped matrices were made from, and the checks between splits and checkpoints."""

import dataclasses
import logging

import numpy as np
import pytest

from punct.io.shards import stored_matrix
from punct.io.sources import (
    AcousticSource,
    WordVectorSource,
    check_split_sources,
    read_source,
    split_sources,
    write_source,
)

ACOUSTIC = AcousticSource("exp/am/best-valid-loss.pt", "a" * 64, 12, "two_byte", False)
VECTORS = WordVectorSource("exp/bert/best-valid-f1", "b" * 64, "pretrained")


def dumps(tmp_path, splits=("train", "dev")):
    for split in splits:
        write_source(tmp_path / "emb_am" / split, ACOUSTIC)
        write_source(tmp_path / "emb_bert" / split, VECTORS)
    return tmp_path / "emb_am", tmp_path / "emb_bert"


def test_round_trip_and_the_splits_agree(tmp_path):
    am, text = dumps(tmp_path)
    assert read_source(am / "train", AcousticSource) == ACOUSTIC
    inputs = split_sources(am, text, ["train", "dev"])
    assert inputs == {"acoustic": dataclasses.asdict(ACOUSTIC), "word_vectors": dataclasses.asdict(VECTORS)}
    # the same model under another path spelling is the same input
    write_source(text / "dev", dataclasses.replace(VECTORS, model_dir="./exp/bert/best-valid-f1"))
    assert split_sources(am, text, ["train", "dev"])["word_vectors"] == dataclasses.asdict(VECTORS)


def test_splits_dumped_with_other_vectors_are_refused(tmp_path):
    am, text = dumps(tmp_path)
    write_source(text / "dev", dataclasses.replace(VECTORS, word_vectors="fine-tuned"))
    with pytest.raises(ValueError, match=r"emb_bert/train/source.json and .*emb_bert/dev/source.json differ"):
        split_sources(am, text, ["train", "dev"])


def test_a_split_made_otherwise_than_the_checkpoint_says_is_refused(tmp_path):
    am, text = dumps(tmp_path, ("train", "test"))
    recorded = split_sources(am, text, ["train"])
    check_split_sources(recorded, am, text, "test", "exp/tdnn/best-valid-f1.pt")  # the same: no error
    write_source(am / "test", dataclasses.replace(ACOUSTIC, layer=8))
    with pytest.raises(ValueError, match=r"best-valid-f1.pt was trained on .*emb_am/test/source.json"):
        check_split_sources(recorded, am, text, "test", "exp/tdnn/best-valid-f1.pt")
    check_split_sources(None, am, text, "test", "old.pt")  # a checkpoint without the record is not checked


def test_missing_records_are_none_with_a_warning(tmp_path, caplog):
    am, text = dumps(tmp_path)
    (text / "dev" / "source.json").unlink()
    with caplog.at_level(logging.WARNING):
        inputs = split_sources(am, text, ["train", "dev"])
    assert inputs["word_vectors"] is None and inputs["acoustic"] is not None
    assert "no source.json" in caplog.text


def test_stored_matrix_is_what_a_shard_reads_back(tmp_path):
    from punct.io.shards import MatrixReader, write_shard

    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(50, 16)).astype(np.float32)
    for compression in ("none", "two_byte"):
        write_shard(tmp_path / compression, [("u", matrix)], compression)
        stored = MatrixReader(tmp_path / f"{compression}.scp")["u"]
        assert np.array_equal(stored_matrix(matrix, compression), stored)
    assert not np.array_equal(stored_matrix(matrix, "two_byte"), matrix)
