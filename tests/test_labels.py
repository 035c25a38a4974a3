"""The first word of a segment (``first_word: include | exclude``, punct.labels): the thesis (5.9) neither
trains nor scores the first word's punctuation and case and copies them from the reference.  Here: the
helpers, the training targets and loss of the text-only / cross-attention models, their written
predictions, the scores (punct.scoring.itn, punct.bin.score_itn) and the egs/parczech configs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from punct.bin import score_itn, train_mm
from punct.labels import CASE, IGNORE_INDEX, PUNCT9, check_first_word, copy_first_word, mask_first_word, scored_mask
from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.data import ItnDataset, collate, read_segments
from punct.models.cross_attention.model import CASE_HEAD, PUNCT_HEAD, build_model
from punct.models.cross_attention.predictions import predict
from punct.models.cross_attention.train import two_head_loss
from punct.models.punct_tdnn.config import TrainTdnnConfig
from punct.scoring import itn
from punct.utils.config import config_from_args, load_config
from tests.helpers.cross_attention import make_encoder, make_tokenizer, tiny_config, write_corpus

REPO = Path(__file__).resolve().parents[1]
P = {c: i for i, c in enumerate(PUNCT9.classes)}
C = {c: i for i, c in enumerate(CASE.classes)}


def test_helpers_mask_copy_and_select_the_first_word():
    assert mask_first_word([3, 0, 2], "exclude").tolist() == [IGNORE_INDEX, 0, 2]
    assert mask_first_word([3, 0, 2], "include").tolist() == [3, 0, 2]
    pairs = np.array([[1, 1], [0, 0]])
    assert mask_first_word(pairs, "exclude").tolist() == [[IGNORE_INDEX, IGNORE_INDEX], [0, 0]]
    assert pairs.tolist() == [[1, 1], [0, 0]]  # a copy
    assert copy_first_word([",", "."], ["?", "blank"], "exclude") == ["?", "."]
    assert copy_first_word([",", "."], ["?", "blank"], "include") == [",", "."]
    assert scored_mask([3, 1, 2], "exclude").tolist() == [False, True, True, False, False, True]
    assert scored_mask([3, 1, 2], "include").all()
    with pytest.raises(ValueError, match="first_word must be one of"):
        check_first_word("first")
    with pytest.raises(ValueError, match="2 predictions for 3"):
        copy_first_word([0, 0], [0, 0, 0], "exclude")


def _batches(tmp_path, tokenizer):
    """The training segments of the synthetic corpus and, per rule, one batch of all of them."""
    segments = read_segments(write_corpus(tmp_path) / "parczech_supervisions_train.jsonl.gz")
    batches = {}
    for rule in ("include", "exclude"):
        dataset = ItnDataset(segments, None, tokenizer, tiny_config(first_word=rule), with_audio=False)
        batches[rule] = collate([dataset[i] for i in range(len(dataset))], pad_id=0)
    return segments, batches


def _logits(segments, wrong_first: bool):
    """Logits right on every word with a margin of 30 (loss ~1e-12), and, with ``wrong_first``, as
    confidently wrong on each segment's first word."""
    n, w = len(segments), max(len(s.words) for s in segments)
    out = {}
    for head, classes in ((PUNCT_HEAD, PUNCT9.classes), (CASE_HEAD, CASE.classes)):
        x = torch.full((n, w, len(classes)), -15.0)
        for r, seg in enumerate(segments):
            for i, label in enumerate(getattr(seg, head)):
                x[r, i, label] = 15.0
            if wrong_first:
                x[r, 0] = -15.0
                x[r, 0, (getattr(seg, head)[0] + 1) % len(classes)] = 15.0
        out[head] = x.requires_grad_(True)
    return out


def test_loss_ignores_the_first_word_under_exclude(tmp_path, tokenizer):
    segments, batches = _batches(tmp_path, tokenizer)
    batch, every = batches["exclude"], batches["include"]
    for head in (PUNCT_HEAD, CASE_HEAD):
        assert (batch[f"labels_{head}"][:, 0] == IGNORE_INDEX).all()
        assert every[f"labels_{head}"][:, 0].tolist() == [getattr(s, head)[0] for s in segments]
        assert torch.equal(batch[f"labels_{head}"][:, 1:], every[f"labels_{head}"][:, 1:])
    # a model whose only errors are on first words: no loss and no gradient there under exclude
    wrong = _logits(segments, wrong_first=True)
    loss, parts = two_head_loss(wrong, batch)
    loss.backward()
    assert loss.item() < 1e-9 and parts[PUNCT_HEAD] < 1e-9 and parts[CASE_HEAD] < 1e-9
    for head in (PUNCT_HEAD, CASE_HEAD):
        assert torch.count_nonzero(wrong[head].grad[:, 0]) == 0
    right = _logits(segments, wrong_first=False)
    loss_right, _ = two_head_loss(right, batch)
    loss_right.backward()
    assert loss.item() == loss_right.item()  # the first word's logits do not matter
    for head in (PUNCT_HEAD, CASE_HEAD):
        assert torch.equal(wrong[head].grad[:, 1:], right[head].grad[:, 1:])
    # include: the same logits are heavily penalised, with a gradient on the first words
    wrong = _logits(segments, wrong_first=True)
    loss, _ = two_head_loss(wrong, every)
    loss.backward()
    assert loss.item() > 1.0 and torch.count_nonzero(wrong[PUNCT_HEAD].grad[:, 0]) > 0


def test_predictions_copy_the_first_word_and_dev_scores_leave_it_out(tmp_path):
    data = write_corpus(tmp_path)
    bert = tmp_path / "bert"
    make_encoder().save_pretrained(bert)
    make_tokenizer(tmp_path).save_pretrained(bert)
    torch.manual_seed(0)
    model = build_model("text", tiny_config(bert_model=str(bert)))
    with torch.no_grad():  # random heads that do not all say blank
        for p in model.text.heads.parameters():
            p.normal_(0, 2.0)
    segments = read_segments(data / "parczech_supervisions_dev.jsonl.gz")
    preds = {}
    for rule in ("include", "exclude"):
        cfg = tiny_config(bert_model=str(bert), first_word=rule)
        dataset = ItnDataset(segments, None, model.text.tokenizer, cfg, with_audio=False)
        preds[rule] = predict(model, dataset, cfg, torch.device("cpu"), 0)
    inc, exc = preds["include"], preds["exclude"]
    assert exc.first_word == "exclude" and inc.first_word == "include"
    # the model's own first-word outputs differ from the reference somewhere: the copy below is visible
    assert any(h[0] != r[0] for h, r in zip(inc.case_hyp + inc.punct_hyp, inc.case_ref + inc.punct_ref))
    for i in range(len(segments)):
        assert exc.punct_hyp[i][0] == exc.punct_ref[i][0] and exc.case_hyp[i][0] == exc.case_ref[i][0]
        assert exc.punct_hyp[i][1:] == inc.punct_hyp[i][1:] and exc.case_hyp[i][1:] == inc.case_hyp[i][1:]
    # dev scores (model selection) on the words after the first
    ref = [P[x] for seg in exc.punct_ref for x in seg[1:]]
    hyp = [P[x] for seg in exc.punct_hyp for x in seg[1:]]
    assert exc.flat_ids("punct_ref").tolist() == ref and exc.flat_ids("punct_hyp").tolist() == hyp
    assert len(inc.flat_ids("case_hyp")) == sum(len(s.words) for s in segments)
    exc.write(tmp_path / "dev.jsonl")
    lines = [json.loads(x) for x in (tmp_path / "dev.jsonl").read_text().splitlines()]
    assert {line["first_word"] for line in lines} == {"exclude"}
    assert [r.first_word for r in itn.read_predictions(tmp_path / "dev.jsonl")] == ["exclude"] * len(segments)


def _segment(sid, punct_ref, case_ref, rule="include"):
    """A prediction right everywhere but on the first word (another mark, the other case)."""
    punct_hyp = [PUNCT9.classes[(P[punct_ref[0]] + 1) % len(PUNCT9.classes)]] + punct_ref[1:]
    case_hyp = [CASE.classes[1 - C[case_ref[0]]]] + case_ref[1:]
    ids = lambda names, index: np.array([index[x] for x in names])  # noqa: E731
    return itn.SegmentResult(sid, ids(punct_ref, P), ids(punct_hyp, P), ids(case_ref, C), ids(case_hyp, C), rule)


def _wrong_on_first_words():
    return [
        _segment("a", ["blank", ",", "blank", ".", "blank"], ["cap", "blank", "blank", "blank", "cap"]),
        _segment("b", [".", "blank", "?", "blank", "blank", ","], ["blank", "cap", "blank", "cap", "blank", "blank"]),
        _segment("c", ["blank", "blank", ",", "blank", "."], ["blank", "blank", "cap", "blank", "blank"]),
    ]


def test_scores_exclude_the_first_word():
    segments = _wrong_on_first_words()
    exc = itn.score_itn(segments, num_resamples=50, first_word="exclude")
    assert exc.cap_f1.value == 1.0 and exc.punct_scores["overall"]["f1"] == 1.0
    assert exc.detection["all"]["pdp"] == 1.0 and exc.detection["all"]["pdr"] == 1.0
    assert all(exc.punct_f1[c].value == 1.0 for c in (",", ".", "?"))
    assert exc.first_word == "exclude" and exc.num_words == 16 and exc.scored_words == 13
    inc = itn.score_itn(segments, num_resamples=50, first_word="include")
    assert inc.cap_f1.value < 1.0 and inc.punct_scores["overall"]["f1"] < 1.0 and inc.scored_words == 16
    assert itn.score_itn(segments, num_resamples=50).first_word == "include"  # the rule they were written under
    # input lengths count every word, scored or not
    assert sum(b["words"] for b in exc.by_length) == 16 and exc.detection["short"]["max_words"] == 5


def test_scoring_rule_follows_the_predictions_and_refuses_to_score_copies():
    written = [s._replace(first_word="exclude") for s in _wrong_on_first_words()]
    assert itn.scoring_rule(written) == "exclude"
    assert itn.score_itn(written, num_resamples=20).cap_f1.value == 1.0
    with pytest.raises(ValueError, match="cannot be scored"):
        itn.score_itn(written, num_resamples=20, first_word="include")
    mixed = written[:1] + _wrong_on_first_words()[1:]
    with pytest.raises(ValueError, match="both first-word rules"):
        itn.scoring_rule(mixed)
    assert itn.scoring_rule(mixed, "exclude") == "exclude"


def _write_decode(model_dir: Path, segments, rule):
    (model_dir / "decode").mkdir(parents=True)
    for split in ("dev", "test"):
        lines = [
            json.dumps(
                {
                    "id": s.id,
                    "words": ["w"] * s.num_words,
                    "first_word": rule,
                    **{
                        k: [(PUNCT9 if k.startswith("punct") else CASE).classes[i] for i in getattr(s, k)]
                        for k in ("punct_ref", "punct_hyp", "case_ref", "case_hyp")
                    },
                }
            )
            for s in segments
        ]
        (model_dir / "decode" / f"{split}.jsonl").write_text("\n".join(lines) + "\n")


def test_score_itn_states_the_rule_in_results(tmp_path):
    segments = _wrong_on_first_words()
    _write_decode(tmp_path / "a", segments, "exclude")
    _write_decode(tmp_path / "b", segments, "exclude")
    out = tmp_path / "results"
    score_itn.main(
        [
            "--out-dir",
            str(out),
            "--num-resamples",
            "20",
            "--splits",
            "test",
            f"{tmp_path / 'a'}:A",
            f"{tmp_path / 'b'}:B",
        ]
    )
    results = (out / "RESULTS.md").read_text()
    assert itn.FIRST_WORD_NOTES["exclude"] in results and "16 words, 13 scored" in results
    scores = json.loads((out / "scores" / "A.test.json").read_text())
    assert scores["first_word"] == "exclude" and scores["cap_f1"]["value"] == 1.0
    with pytest.raises(ValueError, match="cannot be scored"):
        score_itn.main(
            [
                "--out-dir",
                str(out),
                "--num-resamples",
                "20",
                "--splits",
                "test",
                "--first-word",
                "include",
                f"{tmp_path / 'a'}:A",
            ]
        )
    _write_decode(tmp_path / "c", segments, "include")
    with pytest.raises(ValueError, match=r"test: .*both first-word rules.*'C': \['include'\]"):
        score_itn.main(
            [
                "--out-dir",
                str(out),
                "--num-resamples",
                "20",
                "--splits",
                "test",
                f"{tmp_path / 'a'}:A",
                f"{tmp_path / 'c'}:C",
            ]
        )
    score_itn.main(["--out-dir", str(out), "--num-resamples", "20", "--splits", "test", f"{tmp_path / 'c'}:C"])
    results = (out / "RESULTS.md").read_text()
    assert itn.FIRST_WORD_NOTES["include"] in results and "16 words, 16 scored" in results


@pytest.mark.parametrize("suffix", ["", "_mini", "_small", "_tiny"])
def test_parczech_configs_exclude_the_first_word(suffix):
    conf = REPO / "egs" / "parczech" / "conf"
    assert load_config(MmConfig, conf / f"mm{suffix}.yaml").first_word == "exclude"
    assert load_config(TrainTdnnConfig, conf / f"tdnn{suffix}.yaml").first_word == "exclude"
    # egs/mustc does not set it: every word, as before
    mustc = REPO / "egs" / "mustc" / "conf" / f"tdnn{suffix}.yaml"
    if mustc.is_file():
        assert load_config(TrainTdnnConfig, mustc).first_word == "include"


def test_switch_from_flags_and_bad_values(tmp_path):
    parser = train_mm.get_parser()
    args = parser.parse_args(
        ["--model", "text", "--data-dir", "d", "--prefix", "parczech", "--exp-dir", "e", "--first-word", "include"]
    )
    assert config_from_args(MmConfig, args, REPO / "egs" / "parczech" / "conf" / "mm_tiny.yaml").first_word == "include"
    assert MmConfig().first_word == "include" and TrainTdnnConfig().first_word == "include"
    (tmp_path / "bad.yaml").write_text("first_word: first\n")
    for config_type in (MmConfig, TrainTdnnConfig):
        with pytest.raises(ValueError, match="first_word must be one of"):
            load_config(config_type, tmp_path / "bad.yaml")


def test_words_file_round_trip_and_bad_lines(tmp_path):
    from punct.labels import TimedWord, read_recognised_words, write_recognised_words

    path = tmp_path / "rec.words.tsv"
    write_recognised_words(path, [TimedWord("ahoj", 0.25, 0.5), TimedWord("světe", 0.5, 1.0, score=-2.0)])
    assert path.read_text(encoding="utf-8") == "ahoj\t0.250\t0.500\nsvěte\t0.500\t1.000\n"
    assert read_recognised_words(path) == [TimedWord("ahoj", 0.25, 0.5), TimedWord("světe", 0.5, 1.0)]
    path.write_text("a\t1.0\t0.5\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"rec.words.tsv:1: end 0.5 before start 1.0"):
        read_recognised_words(path)
    path.write_text("\na\t1.0\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"rec.words.tsv:2: expected word<TAB>start<TAB>end"):
        read_recognised_words(path)
