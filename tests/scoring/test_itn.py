"""punct.scoring (confusion, intervals, itn): bootstrap intervals, PDP/PDR, short/long quartiles, F1 by length;
the RESULTS.md tables of punct.results.itn_systems."""

from __future__ import annotations

import json

import numpy as np
import pytest

from punct.labels import CASE, PUNCT9
from punct.results import itn_systems as results_itn
from punct.scoring import confusion, intervals, itn
from punct.scoring.punct_scores import score

P = {c: i for i, c in enumerate(PUNCT9.classes)}


def seg(sid, ref, hyp, case_ref=None, case_hyp=None):
    n = len(ref)
    cr = np.array(case_ref if case_ref is not None else [0] * n)
    ch = np.array(case_hyp if case_hyp is not None else [0] * n)
    return itn.SegmentResult(sid, np.array([P[x] for x in ref]), np.array([P[x] for x in hyp]), cr, ch)


def random_segments(n, seed=0, acc=0.8):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        length = int(rng.integers(5, 30))
        ref = rng.choice(len(PUNCT9.classes), size=length, p=[0.75, 0.12, 0.08, 0.01, 0.01, 0.01, 0.01, 0.005, 0.005])
        hyp = np.where(rng.random(length) < acc, ref, rng.integers(0, len(PUNCT9.classes), size=length))
        cref = rng.integers(0, 2, size=length)
        chyp = np.where(rng.random(length) < acc, cref, 1 - cref)
        out.append(itn.SegmentResult(f"s{i:04d}", ref, hyp, cref, chyp))
    return out


def test_pdp_pdr_hand_computed():
    # positives (any mark): ref at 1,2,4; hyp at 0,1,4 -> TP = {1 (, vs .), 4}: PDP = 2/3, PDR = 2/3
    a = seg("a", ["blank", ",", ".", "blank", "?"], [",", ".", "blank", "blank", "?"])
    # ref marks at 0,3; hyp marks at 0 only -> TP 1, PDP 1/1, PDR 1/2
    b = seg("b", [":", "blank", "blank", "-", "blank"], ["!", "blank", "blank", "blank", "blank"])
    cm = itn.segment_confusions([a], "punct").sum(0)
    assert confusion.detection(cm) == pytest.approx([2 / 3, 2 / 3, 2 / 3])
    cm = itn.segment_confusions([a, b], "punct").sum(0)
    p, r = 3 / 4, 3 / 5
    assert confusion.detection(cm) == pytest.approx([p, r, 2 * p * r / (p + r)])
    # nothing predicted, nothing to find: 0 rather than a division error
    none = itn.segment_confusions([seg("c", ["blank"] * 3, ["blank"] * 3)], "punct")
    assert confusion.detection(none.sum(0)) == pytest.approx([0, 0, 0])


def test_short_and_long_quartiles():
    segs = [seg(f"s{i}", ["blank"] * (5 + i) + ["."], ["blank"] * (5 + i) + ["."]) for i in range(8)]
    short, long = itn.short_long(segs)
    assert short == [0, 1] and long == [6, 7]
    s = itn.score_itn(segs, num_resamples=50)
    assert s.detection["short"]["segments"] == 2 and s.detection["short"]["max_words"] == 7
    assert s.detection["long"]["min_words"] == 12


def test_class_f1_matches_metrics_score():
    segs = random_segments(40)
    cm = itn.segment_confusions(segs, "punct").sum(0)
    ref = np.concatenate([s.punct_ref for s in segs])
    hyp = np.concatenate([s.punct_hyp for s in segs])
    ours = confusion.class_f1(cm)
    theirs = score(ref, hyp, PUNCT9.classes)
    assert ours == pytest.approx([theirs.per_class[c]["f1"] for c in PUNCT9.classes])
    assert confusion.macro_f1(cm) == pytest.approx(theirs.macro_f1)
    assert confusion.micro_f1(cm) == pytest.approx(theirs.overall["f1"])
    assert confusion.micro_f1(np.zeros((3, 3))) == 0.0  # nothing to find, nothing predicted


def test_bootstrap_standard_error_of_a_proportion():
    # one word per segment, a comma predicted as comma (right) or full stop (wrong): micro F1 = accuracy,
    # whose standard error over segment resamples is sqrt(p (1 - p) / n)
    n, right = 400, 300
    conf = np.zeros((n, 3, 3))
    conf[:right, 1, 1] = 1
    conf[right:, 1, 2] = 1
    values = intervals.bootstrap_values(conf, confusion.micro_f1, 2000, seed=5)
    assert values.shape == (2000,)
    assert values.std(ddof=1) == pytest.approx(np.sqrt(0.75 * 0.25 / n), rel=0.08)
    # same seed, same segments: the same resamples for another system's confusions (paired)
    flipped = conf[:, :, [0, 2, 1]]  # the wrong ones right and the right ones wrong
    assert intervals.bootstrap_values(flipped, confusion.micro_f1, 2000, seed=5) == pytest.approx(1 - values)


def test_bootstrap_contains_point_narrows_and_is_seeded():
    small = random_segments(30, seed=1)
    large = random_segments(600, seed=1)
    conf_small = itn.segment_confusions(small, "punct")
    conf_large = itn.segment_confusions(large, "punct")
    point, low, high = intervals.bootstrap(conf_small, confusion.macro_f1, 1000, seed=3)
    assert low <= point <= high and low < high
    p2, l2, h2 = intervals.bootstrap(conf_large, confusion.macro_f1, 1000, seed=3)
    assert (h2 - l2) < (high - low) / 2
    again = intervals.bootstrap(conf_small, confusion.macro_f1, 1000, seed=3)
    assert again[1] == low and again[2] == high
    other = intervals.bootstrap(conf_small, confusion.macro_f1, 1000, seed=4)
    assert (other[1], other[2]) != (low, high)
    # vector statistics: every class's interval holds its point estimate
    pt, lo, hi = intervals.bootstrap(conf_large, confusion.class_f1, 300, seed=0)
    assert pt.shape == lo.shape == (len(PUNCT9.classes),) and np.all(lo <= pt + 1e-12) and np.all(pt <= hi + 1e-12)


def test_score_itn_report_and_length_bins():
    segs = random_segments(80, seed=2)
    s = itn.score_itn(segs, num_resamples=200, seed=0, length_edges=(10, 20))
    assert s.num_segments == 80 and s.num_words == sum(x.num_words for x in segs)
    assert [b["min_words"] for b in s.by_length] == [0, 10, 20]  # lengths 5..29
    assert sum(b["segments"] for b in s.by_length) == 80
    ref = np.concatenate([x.case_ref for x in segs])
    hyp = np.concatenate([x.case_hyp for x in segs])
    assert s.cap_f1.value == pytest.approx(score(ref, hyp, CASE.classes).per_class["cap"]["f1"])
    table = results_itn.results_table({"text-only": s, "multimodal": s}, results_itn.class_order(), ["EfficientPunct"])
    rows = table.strip().splitlines()
    assert rows[0].startswith("| Model | [,] | [.] | [-] | [?]") and rows[-1].startswith("| EfficientPunct | —")
    assert len(rows) == 5 and s.macro_f1.fmt() in rows[2]


def test_class_order_by_training_counts():
    assert results_itn.class_order({",": 5, ".": 9, "?": 1})[:3] == [".", ",", "?"]
    assert results_itn.class_order(None) == list(results_itn.THESIS_CLASS_ORDER)


def test_read_predictions_errors_name_file_and_line(tmp_path):
    good = {
        "id": "a",
        "words": ["x", "y"],
        "punct_ref": ["blank", "."],
        "punct_hyp": [",", "."],
        "case_ref": ["cap", "blank"],
        "case_hyp": ["cap", "cap"],
    }
    f = tmp_path / "dev.jsonl"
    f.write_text(json.dumps(good) + "\n" + json.dumps(dict(good, punct_hyp=["blank", "X"])) + "\n")
    with pytest.raises(ValueError, match=r"dev.jsonl:2: .*unknown class 'X'"):
        itn.read_predictions(f)
    f.write_text(json.dumps(good) + "\n")
    (r,) = itn.read_predictions(f)
    assert r.punct_hyp.tolist() == [1, 2] and r.case_hyp.tolist() == [1, 1]


def test_paired_difference_is_narrower_than_the_two_intervals():
    base = random_segments(300, seed=3, acc=0.7)
    rng = np.random.default_rng(5)
    # the model: the baseline's predictions with a tenth of its errors corrected
    better = [
        s._replace(
            punct_hyp=np.where(
                (s.punct_hyp != s.punct_ref) & (rng.random(len(s.punct_ref)) < 0.1), s.punct_ref, s.punct_hyp
            )
        )
        for s in base
    ]
    scores = {"base": itn.score_itn(base), "better": itn.score_itn(better)}
    gain = scores["better"].macro_f1.value - scores["base"].macro_f1.value
    assert gain > 0 and scores["better"].macro_f1.low < scores["base"].macro_f1.high  # the intervals overlap
    # ... the paired one lies above 0; the models' segments in another order change nothing
    skipped = itn.compare_with_baseline({"base": base, "better": better[::-1]}, scores, "base", "include")
    iv = scores["better"].macro_f1_vs_baseline
    assert skipped == [] and scores["base"].macro_f1_vs_baseline is None
    assert iv.value == pytest.approx(gain) and 0 < iv.low < gain < iv.high
    assert iv.high - iv.low < scores["base"].macro_f1.high - scores["base"].macro_f1.low
    assert scores["better"].to_dict()["macro_f1_vs_baseline"]["low"] == iv.low
    assert "| better | " in results_itn.paired_table(scores) and "| yes |" in results_itn.paired_table(scores)
    # other segments than the baseline's: no difference
    scores["fewer"] = itn.score_itn(better[1:])
    assert itn.compare_with_baseline({"base": base, "fewer": better[1:]}, scores, "base", "include") == ["fewer"]
    assert scores["fewer"].macro_f1_vs_baseline is None
    with pytest.raises(ValueError, match="shape"):
        intervals.paired_difference(np.zeros((3, 9, 9)), np.zeros((4, 9, 9)), confusion.macro_f1)
