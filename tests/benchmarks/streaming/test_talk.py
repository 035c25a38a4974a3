"""benchmarks.streaming.talk: the prefix of a recipe's manifests, read from the recipe (no corpus named)."""

from __future__ import annotations

import pytest

from benchmarks.streaming.talk import recipe_prefix


def test_the_prefix_is_that_of_the_one_manifest_of_the_split(tmp_path):
    manifests = tmp_path / "data" / "manifests"
    manifests.mkdir(parents=True)
    (manifests / "my_corpus_recordings_dev.jsonl.gz").touch()
    (manifests / "my_corpus_supervisions_dev.jsonl.gz").touch()
    (manifests / "other_recordings_test.jsonl.gz").touch()
    assert recipe_prefix(tmp_path, "dev") == "my_corpus"
    (manifests / "second_recordings_dev.jsonl.gz").touch()
    with pytest.raises(ValueError, match="2 manifests"):
        recipe_prefix(tmp_path, "dev")
    with pytest.raises(ValueError, match="0 manifests"):
        recipe_prefix(tmp_path, "train")
