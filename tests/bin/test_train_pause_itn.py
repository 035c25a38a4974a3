"""punct.bin.train_pause_itn on a small synthetic segment dataset: decode jsonl that score_itn scores as a row
beside another model's (bootstrap intervals, the paired difference), under that model's first-word rule."""

from __future__ import annotations

import json

import numpy as np
import pytest
from lhotse import SupervisionSegment, SupervisionSet
from lhotse.supervision import AlignmentItem

from punct.bin import score_itn
from punct.bin.train_pause_itn import main
from punct.labels import CASE, PUNCT9
from punct.scoring.itn import read_predictions

SMALL_GRID = ["--logistic-c", "1", "--tree-depths", "2", "--tree-iterations", "20"]
# the silence after a word (seconds) by mark; the other marks of PUNCT9 never occur
PAUSE_AFTER = {"blank": (0.0, 0.04), ",": (0.15, 0.25), ".": (0.4, 0.6), "?": (0.7, 0.9)}


def segment(sid: str, rng: np.random.Generator, start: float) -> SupervisionSegment:
    """A segment of 6-12 words whose marks the pauses tell, spanning its first word's start to its last word's end
    (as stage 3 builds them); the last word's mark (no pause after it inside the segment) is drawn alike."""
    marks = [str(rng.choice(list(PAUSE_AFTER), p=[0.7, 0.15, 0.1, 0.05])) for _ in range(int(rng.integers(6, 13)))]
    items, t = [], start
    for i, mark in enumerate(marks):
        duration = float(rng.uniform(0.15, 0.5))
        items.append(AlignmentItem(f"w{i}", round(t, 4), round(duration, 4)))
        t += duration + float(rng.uniform(*PAUSE_AFTER[mark]))
    end = items[-1].start + items[-1].duration
    case = ["cap"] + [str(rng.choice(CASE.classes, p=[0.8, 0.2])) for _ in marks[1:]]
    return SupervisionSegment(
        id=sid,
        recording_id=sid.rsplit("_", 1)[0],
        start=items[0].start,
        duration=round(end - items[0].start, 4),
        custom={"words": [f"w{i}" for i in range(len(marks))], "punct": marks, "case": case},
        alignment={"word": items},
    )


def write_segments(root, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    (root / "segments").mkdir(parents=True)
    for split, count in (("train", 60), ("dev", 20), ("test", 20)):
        sups = [segment(f"rec{split}_{i}", rng, float(rng.uniform(0, 50))) for i in range(count)]
        SupervisionSet.from_segments(sups).to_file(root / "segments" / f"parczech_supervisions_{split}.jsonl.gz")


def write_text_model(root, first_word: str = "exclude") -> None:
    """A stand-in for stage 4's text-only model: every punctuation and case label right but one in five marks."""
    from lhotse import load_manifest

    rng = np.random.default_rng(1)
    for split in ("dev", "test"):
        lines = []
        for sup in load_manifest(root / "segments" / f"parczech_supervisions_{split}.jsonl.gz"):
            punct, case = sup.custom["punct"], sup.custom["case"]
            hyp = [p if rng.random() < 0.8 else "blank" for p in punct]
            record = {"id": sup.id, "words": sup.custom["words"], "punct_ref": punct, "punct_hyp": hyp}
            lines.append({**record, "case_ref": case, "case_hyp": case, "first_word": first_word})
        (root / "text" / "decode").mkdir(parents=True, exist_ok=True)
        (root / "text" / "decode" / f"{split}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def train_words(root) -> int:
    from lhotse import load_manifest

    return sum(
        len(s.custom["words"]) for s in load_manifest(root / "segments" / "parczech_supervisions_train.jsonl.gz")
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("pause_itn")
    write_segments(root)
    write_text_model(root)
    main(
        [
            "--prefix",
            "parczech",
            "--segments-dir",
            str(root / "segments"),
            "--rule-from",
            str(root / "text"),
            "--exp-dir",
            str(root / "pause"),
            "--seed",
            "5",
            *SMALL_GRID,
        ]
    )
    return root


def test_decode_in_the_format_of_every_model(root):
    choice = json.loads((root / "pause" / "choice.json").read_text())
    assert (
        choice["first_word"] == "exclude" and choice["metric"] == "macro" and choice["classes"] == list(PUNCT9.classes)
    )
    assert choice["train"]["words"] == train_words(root) - 60  # every segment's first word left out
    for split in ("dev", "test"):
        lines = [json.loads(x) for x in (root / "pause" / "decode" / f"{split}.jsonl").read_text().splitlines()]
        text = {json.loads(x)["id"] for x in (root / "text" / "decode" / f"{split}.jsonl").read_text().splitlines()}
        assert {x["id"] for x in lines} == text
        for x in lines:
            assert x["first_word"] == "exclude" and len(x["punct_hyp"]) == len(x["words"])
            # the first word's labels are the reference's (not scored), the others' case blank
            assert x["punct_hyp"][0] == x["punct_ref"][0] and x["case_hyp"][0] == x["case_ref"][0] == "cap"
            assert set(x["case_hyp"][1:]) == {"blank"}
        segments = read_predictions(root / "pause" / "decode" / f"{split}.jsonl")
        assert len(segments) == 20


def test_scored_as_a_row_beside_the_text_model(root):
    out = root / "results"
    score_itn.main(
        ["--out-dir", str(out), "--num-resamples", "50", f"{root / 'text'}:text-only", f"{root / 'pause'}:pause-only"]
    )
    results = json.loads((out / "results.json").read_text())
    rows = {row["name"]: row for row in results["models"]}
    assert list(rows) == ["text-only", "pause-only"]
    for split in ("dev", "test"):
        pause = rows["pause-only"]["scores"][split]
        # the synthetic pauses tell , . and ? apart: macro F1 over the nine marks is about 3 of 9 marks right
        assert pause["macro_f1"]["value"] > 0.25
        assert pause["macro_f1"]["low"] <= pause["macro_f1"]["value"] <= pause["macro_f1"]["high"]
        assert pause["cap_f1"]["value"] == 0.0  # case is always blank
        assert "macro_f1_vs_baseline" in pause  # the paired difference to text-only
    text = (out / "RESULTS.md").read_text()
    assert "| pause-only |" in text


def test_the_rule_can_be_given_and_auto_needs_a_model(root, tmp_path):
    args = [
        "--prefix",
        "parczech",
        "--segments-dir",
        str(root / "segments"),
        "--exp-dir",
        str(tmp_path / "pause"),
        *SMALL_GRID,
    ]
    with pytest.raises(ValueError, match="--rule-from"):
        main(args)
    main([*args, "--first-word", "include", "--metric", "overall", "--decode-splits", "test"])
    lines = [json.loads(x) for x in (tmp_path / "pause" / "decode" / "test.jsonl").read_text().splitlines()]
    assert {x["first_word"] for x in lines} == {"include"}
    assert not (tmp_path / "pause" / "decode" / "dev.jsonl").exists()
    choice = json.loads((tmp_path / "pause" / "choice.json").read_text())
    assert choice["train"]["words"] == train_words(root) and choice["rule"].startswith("highest dev overall F1")
