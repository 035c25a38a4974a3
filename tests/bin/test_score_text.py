"""Text-only scores (punct.bin.score_text): overall and macro F1 of the argmax, and what was scored."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from punct.bin.score_text import main
from punct.io.shards import write_shard
from punct.labels import PUNCT4

UTTERANCES = {  # id -> (reference labels, predicted labels)
    "u1": ([",", "NP", ".", "NP", "?"], [",", "NP", ",", "NP", "?"]),
    "u2": ([".", "NP", ","], [".", "NP", "NP"]),
    "u3": (["NP", "."], ["NP", "."]),  # no posteriors: not scored
}


def one_hot(labels):
    post = np.full((len(labels), len(PUNCT4.classes)), 0.1, dtype=np.float32)
    post[np.arange(len(labels)), [PUNCT4.classes.index(x) for x in labels]] = 0.7
    return post


def test_scores_and_coverage(tmp_path):
    sups = tmp_path / "sups.jsonl.gz"
    with gzip.open(sups, "wt") as f:
        for key, (ref, _) in UTTERANCES.items():
            record = {"id": key, "custom": {"words": [f"w{i}" for i in range(len(ref))], "punct": ref}}
            f.write(json.dumps(record) + "\n")
    write_shard(tmp_path / "post", [(key, one_hot(hyp)) for key, (_, hyp) in UTTERANCES.items() if key != "u3"])
    main(
        [
            "--posteriors",
            str(tmp_path / "post.scp"),
            "--supervisions",
            str(sups),
            "--out",
            str(tmp_path / "res"),
            "--title",
            "BERT text-only, test",
        ]
    )
    data = json.loads((tmp_path / "res.json").read_text())
    # u1 + u2: ","  ref 2, hyp 2, TP 1; "." ref 2, hyp 1, TP 1; "?" ref 1, hyp 1, TP 1
    f1 = {",": 0.5, ".": 2 * 1.0 * 0.5 / 1.5, "?": 1.0}
    for mark, value in f1.items():
        assert data["per_class"][mark]["f1"] == pytest.approx(value)
    assert data["macro_f1"] == pytest.approx(sum(f1.values()) / 3)
    assert data["overall"]["f1"] == pytest.approx(2 * (3 / 4) * (3 / 5) / (3 / 4 + 3 / 5))  # TP 3, hyp 4, ref 5
    assert data["coverage"]["utterances"] == 2 and data["coverage"]["words"] == 8
    assert data["coverage"]["dropped_ids"] == {"u3": "without posteriors"}
    md = (tmp_path / "res.md").read_text()
    assert "2 of 3 utterances (8 of 10 words) scored; dropped: 1 without posteriors (2 words)" in md
    assert "| overall (micro) |" in md and f"| macro F1 | | | {100 * sum(f1.values()) / 3:.1f} | |" in md
