"""EfficientPunct on ParCzech segments: the text-only model's dump, the two-head ensemble with each
head's alpha chosen on dev, and the scoring-format predictions (punct.models.punct_tdnn.segment_ensemble,
punct.bin.ensemble_itn, punct.bin.dump_itn_text)."""

from __future__ import annotations

import gzip
import json
import subprocess
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
import torch

from punct.bin import dump_itn_text, ensemble_itn, score_itn
from punct.io.shards import MatrixReader, write_shard
from punct.labels import CASE, PUNCT9
from punct.models.cross_attention.data import load_split, read_segments
from punct.models.cross_attention.dump import load_text_model
from punct.models.cross_attention.model import build_model
from punct.models.cross_attention.predictions import predict
from punct.models.punct_tdnn.config import TrainTdnnConfig
from punct.models.punct_tdnn.segment_ensemble import NUM_COLUMNS, paired_split
from punct.scoring import itn
from tests.helpers.cross_attention import WORDS, make_encoder, make_tokenizer, tiny_config, write_corpus

BLANK, COMMA = 0, 1


def designed_posteriors(seg):
    """(TDNN, text) posteriors with a known best alpha per head.

    Punctuation: the TDNN says the right mark at 0.7, the text model blank at 0.9, so a mark wins from
    alpha 0.7 on; the TDNN alone (1.0) is as good as the best alpha (0.7), so the paired rule (no gain)
    takes it, as the one-standard-error rule does.  Case: the text model is right on cap words (0.8) where
    the TDNN says blank (0.9): right up to alpha 0.4; on each segment's second word the text model says
    cap (0.55) wrongly and the TDNN blank (0.9): right from alpha 0.2.  Both right: alpha 0.2 .. 0.4 -> 0.2
    (ties: smallest), far above either model alone, so the mixture is kept.
    """
    n = len(seg.words)
    tdnn, text = np.zeros((n, NUM_COLUMNS)), np.zeros((n, NUM_COLUMNS))
    for i, (p, c) in enumerate(zip(seg.punct, seg.case)):
        if p == BLANK:
            tdnn[i, [BLANK, COMMA]] = text[i, [BLANK, COMMA]] = 0.9, 0.1
        else:
            tdnn[i, [BLANK, p]] = 0.3, 0.7
            text[i, [BLANK, p]] = 0.9, 0.1
        tdnn[i, 9:] = 0.9, 0.1
        text[i, 9:] = (0.2, 0.8) if c == 1 else ((0.45, 0.55) if i == 1 else (0.9, 0.1))
    return tdnn.astype(np.float32), text.astype(np.float32)


@pytest.fixture
def ensemble_inputs(tmp_path):
    data = write_corpus(tmp_path)
    for split in ("dev", "test"):
        pairs = [
            (seg.id, *designed_posteriors(seg))
            for seg in read_segments(data / f"parczech_supervisions_{split}.jsonl.gz")
        ]
        write_shard(tmp_path / "tdnn" / "post" / split / "post", [(k, a) for k, a, _ in pairs])
        write_shard(tmp_path / "text" / split / "post", [(k, b) for k, _, b in pairs])
    return data


def test_alphas_per_head_and_decode_files(ensemble_inputs, tmp_path):
    data = ensemble_inputs
    ensemble_itn.main(
        [
            "--prefix",
            "parczech",
            "--segments-dir",
            str(data),
            "--text-post-dir",
            str(tmp_path / "text"),
            "--tdnn-dir",
            str(tmp_path / "tdnn"),
            "--out-dir",
            str(tmp_path / "ens"),
            "--first-word",
            "include",
        ]
    )
    summary = json.loads((tmp_path / "ens" / "alpha.json").read_text())
    assert summary["chosen_alpha"] == {"punct": 1.0, "case": 0.2} and summary["first_word"] == "include"
    rule = summary["alpha_rule"]
    sweep_best = max(summary["dev_sweep"]["punct"], key=lambda p: p["macro_f1"])
    assert rule["punct"]["best_alpha"] == sweep_best["alpha"] == 0.7
    assert rule["punct"]["best_score"] == pytest.approx(sweep_best["macro_f1"])  # the same macro F1 from the confusions
    assert rule["punct"]["metric"] == "macro F1 (8 marks)" and rule["case"]["metric"] == "[cap] F1"
    assert rule["case"]["best_alpha"] == 0.2 and rule["case"]["best_score"] == 1.0
    segments = read_segments(data / "parczech_supervisions_test.jsonl.gz")
    ens = itn.read_predictions(tmp_path / "ens" / "decode" / "test.jsonl")
    tdnn = itn.read_predictions(tmp_path / "tdnn" / "decode" / "test.jsonl")
    assert [s.id for s in ens] == [s.id for s in segments] == [s.id for s in tdnn]
    for seg, e, t in zip(segments, ens, tdnn):
        assert e.punct_ref.tolist() == seg.punct and e.case_ref.tolist() == seg.case
        assert np.array_equal(e.punct_hyp, e.punct_ref) and np.array_equal(
            e.case_hyp, e.case_ref
        )  # the ensemble is right
        assert np.array_equal(t.punct_hyp, t.punct_ref) and not t.case_hyp.any()  # the TDNN alone never says cap
    line = json.loads((tmp_path / "ens" / "decode" / "dev.jsonl").read_text().splitlines()[0])
    assert line["words"] == segments[0].words and set(line["punct_hyp"]) <= set(PUNCT9.classes)
    # stage "score": rows named EfficientPunct ... replace the placeholder row
    out = tmp_path / "results"
    score_itn.main(
        [
            "--out-dir",
            str(out),
            "--num-resamples",
            "20",
            f"{tmp_path / 'tdnn'}:EfficientPunct TDNN",
            f"{tmp_path / 'ens'}:EfficientPunct ensemble",
        ]
    )
    results = (out / "RESULTS.md").read_text()
    assert "| EfficientPunct TDNN |" in results and "| EfficientPunct ensemble |" in results
    assert "| EfficientPunct | —" not in results
    ens_scores = json.loads((out / "scores" / "EfficientPunct_ensemble.test.json").read_text())
    tdnn_scores = json.loads((out / "scores" / "EfficientPunct_TDNN.test.json").read_text())
    assert ens_scores["cap_f1"]["value"] == 1.0 and tdnn_scores["cap_f1"]["value"] == 0.0


def test_missing_and_malformed_posteriors(ensemble_inputs, tmp_path):
    segments = read_segments(ensemble_inputs / "parczech_supervisions_dev.jsonl.gz")
    tdnn, text = tmp_path / "tdnn" / "post" / "dev" / "post.scp", tmp_path / "text" / "dev" / "post.scp"
    reader = MatrixReader(tdnn)
    write_shard(tmp_path / "part" / "post", [(s.id, reader[s.id]) for s in segments[1:]])
    data = paired_split(segments, tmp_path / "part" / "post.scp", text)
    assert data.skipped == [segments[0].id] and len(data.segments) == len(segments) - 1
    assert data.p_tdnn.shape == (sum(len(s.words) for s in segments[1:]), 11)
    write_shard(tmp_path / "bad" / "post", [(s.id, reader[s.id][:, :9]) for s in segments])
    with pytest.raises(ValueError, match=f"bad/post.scp: {segments[0].id}: posteriors"):
        paired_split(segments, tmp_path / "bad" / "post.scp", text)


def test_text_model_dump_matches_its_predictions(tmp_path):
    data = write_corpus(tmp_path)
    bert = tmp_path / "bert"
    make_encoder().save_pretrained(bert)
    make_tokenizer(tmp_path).save_pretrained(bert)
    cfg = tiny_config(bert_model=str(bert))
    torch.manual_seed(0)
    model = build_model("text", cfg)
    with torch.no_grad():  # random heads that do not all say blank
        for p in model.text.heads.parameters():
            p.normal_(0, 2.0)
    torch.save({"kind": "text", "config": asdict(cfg), "model": model.state_dict()}, tmp_path / "best-valid-f1.pt")
    out = tmp_path / "emb_text" / "dev"
    sup = data / "parczech_supervisions_dev.jsonl.gz"
    dump_itn_text.main(
        [
            "--checkpoint",
            str(tmp_path / "best-valid-f1.pt"),
            "--supervisions",
            str(sup),
            "--out-dir",
            str(out),
            "--device",
            "cpu",
        ]
    )
    loaded, loaded_cfg = load_text_model(tmp_path / "best-valid-f1.pt")
    assert loaded_cfg == cfg
    preds = predict(loaded, load_split(sup, None, loaded.text.tokenizer, cfg, False), cfg, torch.device("cpu"), 0)
    vec, post = MatrixReader(out / "vec.1.scp"), MatrixReader(out / "post.1.scp")
    hyps = set()
    for i, seg_id in enumerate(preds.ids):
        p = post[seg_id]
        assert p.shape == (len(preds.words[i]), 11) and vec[seg_id].shape == (len(preds.words[i]), 16)
        assert [PUNCT9.classes[k] for k in p[:, :9].argmax(1)] == preds.punct_hyp[i]
        assert [CASE.classes[k] for k in p[:, 9:].argmax(1)] == preds.case_hyp[i]
        hyps.update(preds.punct_hyp[i])
    assert len(hyps) > 1  # the comparison is not all-blank against all-blank
    torch.save({"kind": "mm", "config": asdict(cfg), "model": {}}, tmp_path / "mm.pt")
    with pytest.raises(ValueError, match="text-only model"):
        load_text_model(tmp_path / "mm.pt")


def _first_words_wrong(root, split):
    """Gives every segment of ``split`` a capital on its third word too (write_corpus capitalises only the
    first), and rewrites both posteriors so that both models are confidently wrong on every segment's first
    word only: '?' instead of its mark (',' for a '?'), the other case class."""
    data = root / "segments"
    path = data / f"parczech_supervisions_{split}.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        sups = [json.loads(line) for line in f]
    for d in sups:
        d["custom"]["case"][2] = "cap"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("".join(json.dumps(d) + "\n" for d in sups))
    pairs = []
    for seg in read_segments(data / f"parczech_supervisions_{split}.jsonl.gz"):
        tdnn, text = designed_posteriors(seg)
        for m in (tdnn, text):
            m[0] = 0.0
            m[0, PUNCT9.classes.index("?") if seg.punct[0] != PUNCT9.classes.index("?") else COMMA] = 1.0
            m[0, 9 + (1 - seg.case[0])] = 1.0
        pairs.append((seg.id, tdnn, text))
    write_shard(root / "tdnn" / "post" / split / "post", [(k, a) for k, a, _ in pairs])
    write_shard(root / "text" / split / "post", [(k, b) for k, _, b in pairs])


def _ensemble(root, out, *opts):
    ensemble_itn.main(
        [
            "--prefix",
            "parczech",
            "--segments-dir",
            str(root / "segments"),
            "--text-post-dir",
            str(root / "text"),
            "--tdnn-dir",
            str(root / "tdnn"),
            "--out-dir",
            str(out),
            *opts,
        ]
    )
    return json.loads((out / "alpha.json").read_text())


def test_first_word_excluded_from_alpha_choice_and_copied_from_the_reference(ensemble_inputs, tmp_path):
    for split in ("dev", "test"):
        _first_words_wrong(tmp_path, split)
    # auto: the rule of the TDNN's training config
    cfg = TrainTdnnConfig(first_word="exclude")
    torch.save({"config": asdict(cfg), "model": {}}, tmp_path / "tdnn" / "best-valid-f1.pt")
    summary = _ensemble(tmp_path, tmp_path / "ens")
    assert summary["first_word"] == "exclude" and summary["chosen_alpha"] == {"punct": 1.0, "case": 0.2}
    # every word after the first is right at the chosen alphas, so the dev sweep's best scores are perfect
    best = max(summary["dev_sweep"]["case"], key=lambda p: p["per_class_f1"]["cap"])
    assert best["per_class_f1"]["cap"] == 1.0
    ens = itn.read_predictions(tmp_path / "ens" / "decode" / "test.jsonl")
    for e in ens:  # the first word's labels are the reference's, the rest predicted
        assert e.first_word == "exclude" and e.punct_hyp[0] == e.punct_ref[0] and e.case_hyp[0] == e.case_ref[0]
        assert np.array_equal(e.punct_hyp, e.punct_ref) and np.array_equal(e.case_hyp, e.case_ref)
    s = itn.score_itn(ens, num_resamples=20)
    assert s.first_word == "exclude" and s.cap_f1.value == 1.0 and s.scored_words == s.num_words - len(ens)
    # include: the same posteriors, every first word predicted (wrong) and scored
    summary = _ensemble(tmp_path, tmp_path / "ens_all", "--first-word", "include")
    assert summary["first_word"] == "include"
    everything = itn.read_predictions(tmp_path / "ens_all" / "decode" / "test.jsonl")
    assert all(e.punct_hyp[0] != e.punct_ref[0] and e.case_hyp[0] != e.case_ref[0] for e in everything)
    assert itn.score_itn(everything, num_resamples=20).cap_f1.value < 0.9
    # auto without a TDNN checkpoint is an error that says what to pass
    (tmp_path / "tdnn" / "best-valid-f1.pt").unlink()
    with pytest.raises(FileNotFoundError, match="--first-word include"):
        _ensemble(tmp_path, tmp_path / "ens_none")


# The case head where a mixture is a little better than the TDNN alone on every segment.  Each dev segment:
# word 0 capitalised, TDNN sure (cap 0.9), text model not (0.2): right from alpha 0.5 on; word 1 not capitalised,
# the TDNN says cap (0.55) and the text model not (0.1): right up to alpha 0.8; the other words all capitalised,
# right for every alpha in the even segments and wrong for every alpha in the odd ones (both models say 0.9 or 0.1).
# So alpha 0.5-0.8 beats the TDNN alone (the better single model) by one false positive per segment: a small,
# constant gain, while the even/odd difficulty that both share makes the marginal standard error large.
# Punctuation: the TDNN right, the text model not: every alpha from 0.6 is as good as the TDNN alone.
STEADY_SEGMENTS, STEADY_WORDS = 20, 12


def _steady_mixture(root):
    """Writes dev and test supervisions of that design under root/segments and both posteriors; returns the
    segments folder."""
    data = root / "segments"
    data.mkdir(parents=True, exist_ok=True)
    sups, pairs = [], []
    for s in range(STEADY_SEGMENTS):
        n, easy = STEADY_WORDS, s % 2 == 0
        words = [WORDS[(s + i) % len(WORDS)] for i in range(n)]
        punct = ["blank"] * n
        punct[3], punct[-1] = ",", "."
        case = ["cap", "blank"] + ["cap"] * (n - 2)
        items = [{"symbol": w, "start": 0.5 * i, "duration": 0.4} for i, w in enumerate(words)]
        sup = {"id": f"seg_{s}", "recording_id": "rec", "start": 0.0, "duration": 0.5 * n, "channel": 0}
        sup.update(text=" ".join(words), language="Czech", speaker="spk", alignment={"word": items})
        sups.append(dict(sup, custom={"words": words, "punct": punct, "case": case}))
        tdnn, text = np.zeros((n, NUM_COLUMNS)), np.zeros((n, NUM_COLUMNS))
        for i, p in enumerate(punct):
            mark = PUNCT9.classes.index(p)
            tdnn[i, [BLANK, mark]] = (0.9, 0.1) if mark == BLANK else (0.1, 0.9)
            text[i, BLANK], text[i, COMMA if mark == BLANK else mark] = 0.9, 0.1
        cap = [(0.9, 0.2), (0.55, 0.1)] + [(0.9, 0.9) if easy else (0.1, 0.1)] * (n - 2)
        tdnn[:, 9:] = [(1 - t, t) for t, _ in cap]
        text[:, 9:] = [(1 - b, b) for _, b in cap]
        pairs.append((f"seg_{s}", tdnn.astype(np.float32), text.astype(np.float32)))
    for split in ("dev", "test"):
        with gzip.open(data / f"parczech_supervisions_{split}.jsonl.gz", "wt", encoding="utf-8") as f:
            f.write("".join(json.dumps(d) + "\n" for d in sups))
        write_shard(root / "tdnn" / "post" / split / "post", [(k, a) for k, a, _ in pairs])
        write_shard(root / "text" / split / "post", [(k, b) for k, _, b in pairs])
    return data


def test_the_paired_rule_keeps_a_mixture_better_on_every_segment(tmp_path):
    """The default rule (paired-se) keeps the case mixture that the one-standard-error rule drops, and alpha.json
    records per head the rule, the chosen alpha, the dev argmax, the gain over the better single model and the
    standard error; --alpha-rule one-se and argmax stay available (also through local/ensemble_itn.sh)."""
    _steady_mixture(tmp_path)
    paired = _ensemble(tmp_path, tmp_path / "paired", "--first-word", "include", "--num-resamples", "200")
    assert paired["chosen_alpha"] == {"punct": 1.0, "case": 0.5}
    case, punct = paired["alpha_rule"]["case"], paired["alpha_rule"]["punct"]
    assert case["rule"] == punct["rule"] == "paired-se" and case["metric"] == "[cap] F1"
    assert case["alpha"] == case["best_alpha"] == 0.5 and case["single_alpha"] == 1.0
    sweep = {p["alpha"]: p["per_class_f1"]["cap"] for p in paired["dev_sweep"]["case"]}
    assert case["best_score"] == pytest.approx(sweep[0.5]) and case["single_score"] == pytest.approx(sweep[1.0])
    gain = case["best_score"] - case["single_score"]
    # punctuation: the argmax (0.6) ties with the TDNN alone, no gain: the TDNN alone
    assert punct["best_alpha"] == 0.6 and punct["alpha"] == punct["single_alpha"] == 1.0
    assert punct["best_score"] == punct["single_score"]
    one_se = _ensemble(tmp_path, tmp_path / "one_se", "--first-word", "include", "--alpha-rule", "one-se")
    assert one_se["chosen_alpha"] == {"punct": 1.0, "case": 1.0}
    marginal = one_se["alpha_rule"]["case"]
    assert marginal["rule"] == "one-se" and marginal["best_alpha"] == 0.5
    assert 0 < case["standard_error"] < gain / 5 and gain < marginal["standard_error"]
    argmax = _ensemble(tmp_path, tmp_path / "argmax", "--first-word", "include", "--alpha-rule", "argmax")
    assert argmax["chosen_alpha"] == {"punct": 0.6, "case": 0.5} and argmax["alpha_rule"]["case"]["rule"] == "argmax"
    # the kept mixture is right on word 1 of every test segment, where the TDNN alone says cap
    ens = itn.read_predictions(tmp_path / "paired" / "decode" / "test.jsonl")
    tdnn = itn.read_predictions(tmp_path / "one_se" / "decode" / "test.jsonl")
    assert all(e.case_hyp[1] == e.case_ref[1] == 0 and t.case_hyp[1] == 1 for e, t in zip(ens, tdnn))
    # the recipe's script passes --alpha-rule through (one-se, as the recipe chose before)
    recipe = Path(__file__).resolve().parents[3] / "egs" / "parczech"
    out = tmp_path / "sh"
    args = [str(tmp_path / "segments"), str(tmp_path / "text"), str(tmp_path / "tdnn"), str(out)]
    proc = subprocess.run(
        ["local/ensemble_itn.sh", "--alpha-rule", "one-se", "--first-word", "include", *args],
        cwd=recipe,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert json.loads((out / "alpha.json").read_text())["alpha_rule"]["case"]["rule"] == "one-se"
