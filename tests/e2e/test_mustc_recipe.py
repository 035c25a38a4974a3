"""egs/mustc end to end on the tiny mini corpus with tiny models: every stage leaves its outputs.

The recipe runs once per test session in a private copy of egs/mustc (a temp directory: the session fixture
``mustc_tiny_recipe`` of tests/conftest.py); the tests below inspect what each stage wrote, re-run a late stage,
and repeat the parallel stages through the real SLURM backend.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.recipe_copy import copy_recipe, run_recipe

pytestmark = pytest.mark.slow
SPLITS = ("train", "dev", "test")


@pytest.fixture
def tiny_recipe(mustc_tiny_recipe):
    return mustc_tiny_recipe


def count_jsonl_gz(path: Path) -> int:
    with gzip.open(path, "rt") as f:
        return sum(1 for _ in f)


def cut_ids(path: Path) -> list:
    with gzip.open(path, "rt") as f:
        return [json.loads(line)["id"] for line in f]


def test_stage0_manifests(tiny_recipe):
    for split in SPLITS:
        for kind in ("recordings", "supervisions"):
            assert count_jsonl_gz(tiny_recipe / f"data/manifests/mustc_{kind}_{split}.jsonl.gz") > 0


def test_stage1_to_3_features_model_alignments(tiny_recipe):
    for split in SPLITS:
        assert count_jsonl_gz(tiny_recipe / f"data/fbank/mustc_cuts_{split}.jsonl.gz") > 0
        assert count_jsonl_gz(tiny_recipe / f"data/fbank/mustc_cuts_{split}_ali.jsonl.gz") > 0
    assert (tiny_recipe / "exp/am/best-valid-loss.pt").exists()
    wer = (tiny_recipe / "exp/am/wer_dev.txt").read_text()
    assert re.search(r"WER", wer)
    ctm = (tiny_recipe / "exp/am/ali/dev.ctm").read_text().splitlines()
    assert ctm and all(len(line.split()) == 5 for line in ctm)


def test_stage4_and_6_shards_match_the_cuts(tiny_recipe, monkeypatch):
    from punct.io.shards import MatrixReader

    monkeypatch.chdir(tiny_recipe)  # scp files hold paths relative to the recipe folder, as in Kaldi
    for split in SPLITS:
        cuts = set(cut_ids(tiny_recipe / f"data/fbank/mustc_cuts_{split}.jsonl.gz"))
        emb = MatrixReader(tiny_recipe / f"exp/emb_am/{split}/emb.scp")
        assert set(emb.keys()) == cuts
        vec = MatrixReader(tiny_recipe / f"exp/emb_bert/{split}/vec.scp")
        post = MatrixReader(tiny_recipe / f"exp/emb_bert/{split}/post.scp")
        key = sorted(cuts)[0]
        assert vec[key].shape[0] == post[key].shape[0] and post[key].shape[1] == 4


def test_stage5_text_only_scores(tiny_recipe):
    for split in ("dev", "test"):
        scores = json.loads((tiny_recipe / f"exp/bert/results-{split}.json").read_text())
        assert "overall" in json.dumps(scores)
    # the mini corpus' extra training text (--bert-extra-text auto) went into BERT's training data
    extra = tiny_recipe / "data/corpus_tiny_natural/text/train_extra.txt"
    log = (tiny_recipe / "exp/bert/log/train_bert.log").read_text()
    match = re.search(r"train_extra\.txt: (\d+) extra pseudo-utterances, (\d+) words", log)
    assert extra.is_file() and match and int(match.group(2)) >= 1500


def test_stage8_results(tiny_recipe):
    results = (tiny_recipe / "exp/results/RESULTS.md").read_text()
    for row in ("BERT", "TDNN", "nsemble"):
        assert re.search(rf"^\|[^\n]*{row}", results, flags=re.M), f"no {row} row in RESULTS.md"
    assert re.search(r"alpha", results, flags=re.I)
    data = json.loads((tiny_recipe / "exp/results/results.json").read_text())
    assert list((tiny_recipe / "exp/results").glob("*.png"))
    for model in ("am", "bert", "tdnn"):  # every training's curves (punct.training.curves)
        assert (tiny_recipe / "exp" / model / "curves.png").stat().st_size > 0, model
        assert list((tiny_recipe / "exp" / model / "tensorboard").glob("events.out.tfevents.*")), model
    # the models learned something: F1 averaged over all four classes (NP included) above what the
    # majority class (NP on every word) gets
    test = data["systems"]["test"]
    # the pause-only baseline (exp/pause) is scored on the same words, and the systems are compared with it
    assert test["Pause only"]["num_words"] == test["TDNN"]["num_words"]
    compared = {(row["system"], row["baseline"]) for row in data["paired"]["splits"]["test"]}
    assert ("TDNN", "Pause only") in compared and ("TDNN", "BERT only") in compared
    confusion = test["TDNN"]["confusion"]
    np_share = sum(confusion[0]) / sum(map(sum, confusion))
    majority = (2 * np_share / (1 + np_share)) / 4  # NP's F1 when every word says NP; the marks' F1s are 0
    for name, scores in test.items():
        if name == "TDNN" or "chosen on dev" in name:
            all_f1 = [scores["per_class"][c]["f1"] for c in data["classes"]]
            assert sum(all_f1) / 4 > majority + 0.04, f"{name}: mean F1 {sum(all_f1) / 4:.3f}, majority {majority:.3f}"
            assert scores["overall"]["f1"] > 0.1, f"{name}: overall F1 {scores['overall']['f1']:.3f}"


def test_rerun_from_stage7_only_touches_tdnn_and_results(tiny_recipe):
    am_model = tiny_recipe / "exp/am/best-valid-loss.pt"
    am_mtime = am_model.stat().st_mtime
    results = tiny_recipe / "exp/results/RESULTS.md"
    results_mtime = results.stat().st_mtime
    out = run_recipe(tiny_recipe, "--stage", "7")
    assert out.returncode == 0, out.stderr[-4000:]
    assert "Stage 7" in out.stderr and "Stage 6" not in out.stderr
    assert am_model.stat().st_mtime == am_mtime
    assert results.stat().st_mtime > results_mtime


def test_rerun_from_stage3_trains_nothing_again(tiny_recipe):
    """`./run.sh --stage 3` after a finished default run: the text branch ran in the background with one
    thread the first time and in the foreground now, which is the same training (utils/fresh.sh)."""
    markers = [tiny_recipe / "exp/bert/.done", tiny_recipe / "exp/tdnn/best-valid-f1.pt.done"]
    before = [m.stat().st_mtime for m in markers]
    out = run_recipe(tiny_recipe, "--stage", "3")
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    assert "exp/bert is done; skipping" in text and "exp/tdnn/best-valid-f1.pt is done; skipping" in text
    assert "training again" not in text and "training from scratch" not in text
    assert [m.stat().st_mtime for m in markers] == before


def test_stage6_word_vectors_of_the_pretrained_encoder(tiny_recipe, tmp_path, monkeypatch):
    """--tdnn-word-vectors pretrained: stage 6 dumps the vectors of the encoder stage 5 started from, with the
    fine-tuned posteriors (the tiny run's default, auto, is fine-tuned); stage 7 then trains the TDNN again from
    scratch rather than skipping or resuming the one trained on the fine-tuned vectors."""
    import numpy as np

    from punct.io.shards import MatrixReader

    copy = copy_recipe(Path(__file__).resolve().parents[2], "mustc", tmp_path / "mustc")
    for name in (
        "data/manifests",
        "data/corpus_tiny_natural",
        "data/fbank",
        "exp/am",
        "exp/bert",
        "exp/emb_am",
        "exp/emb_bert",
        "exp/tdnn",
    ):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-a", str(tiny_recipe / name), str(copy / name)], check=True)
    out = run_recipe(copy, "--stage", "6", "--stop-stage", "6", "--tdnn-word-vectors", "pretrained")
    assert out.returncode == 0, out.stderr[-4000:]
    assert "Stage 6: BERT word vectors (pretrained encoder)" in out.stderr
    assert "Stage 6: BERT word vectors (fine-tuned encoder)" in (tiny_recipe / "exp/log/text_branch.log").read_text()

    def read(recipe: Path, name: str) -> dict:  # the scp files hold paths relative to the recipe
        monkeypatch.chdir(recipe)
        return dict(MatrixReader(f"exp/emb_bert/dev/{name}.scp").items())

    tuned_vec, tuned_post = read(tiny_recipe, "vec"), read(tiny_recipe, "post")
    pre_vec, pre_post = read(copy, "vec"), read(copy, "post")
    assert set(pre_vec) == set(tuned_vec) and tuned_vec
    for key in tuned_vec:
        assert pre_vec[key].shape == tuned_vec[key].shape
        assert not np.allclose(pre_vec[key], tuned_vec[key], atol=1e-3)
        np.testing.assert_allclose(pre_post[key], tuned_post[key], atol=1e-5)

    first_epoch = copy / "exp/tdnn/epoch-1.pt"
    trained_on_tuned = first_epoch.stat().st_mtime
    out = run_recipe(copy, "--stage", "7", "--stop-stage", "7", "--tdnn-word-vectors", "pretrained")
    assert out.returncode == 0, out.stderr[-4000:]
    assert "was made with other options or inputs; training again" in out.stdout + out.stderr
    assert "continuing" not in out.stdout + out.stderr
    log = (copy / "exp/tdnn/log/train_tdnn.log").read_text()
    assert "resumed from" not in log and "epoch 1:" in log
    assert first_epoch.stat().st_mtime > trained_on_tuned

    # punctuate feeds this TDNN the pretrained encoder's vectors too, as stage 8 scored it
    out = run_recipe(copy, "--stage", "8", "--stop-stage", "8", "--tdnn-word-vectors", "pretrained")
    assert out.returncode == 0, out.stderr[-4000:]
    assert_punctuate_reproduces_stage8(copy, tmp_path / "punctuate")


def test_outputs_of_an_older_acoustic_model_are_redone(tiny_recipe):
    """Stages 3-4 skip finished work, but redo alignments and shards older than exp/am's model."""
    am_model = tiny_recipe / "exp/am/best-valid-loss.pt"
    ali_done = tiny_recipe / "data/fbank/mustc_cuts_dev_ali.jsonl.gz.done"
    shard_done = tiny_recipe / "exp/emb_am/dev/emb.1.scp.done"

    out = run_recipe(tiny_recipe, "--stage", "3", "--stop-stage", "4")
    assert out.returncode == 0, out.stderr[-4000:]
    assert "split dev is aligned; skipping" in out.stdout + out.stderr
    assert "older" not in out.stdout + out.stderr

    later = time.time() + 5  # as if the acoustic model had just been retrained
    os.utime(am_model, (later, later))
    before = ali_done.stat().st_mtime, shard_done.stat().st_mtime
    out = run_recipe(tiny_recipe, "--stage", "3", "--stop-stage", "4")
    assert out.returncode == 0, out.stderr[-4000:]
    assert "split dev is aligned; skipping" not in out.stdout + out.stderr
    assert "has shards of an older" in out.stdout + out.stderr
    assert ali_done.stat().st_mtime > before[0] and shard_done.stat().st_mtime > before[1]


def kaldi_data_dir(recipe: Path, split: str, out: Path) -> Path:
    """A Kaldi data dir (wav.scp, segments, text, utt2spk) of the split's stage-0 manifests: the audio,
    written transcripts and speakers a user would hand to steps/punctuate.sh."""
    from lhotse import load_manifest

    recordings = load_manifest(recipe / f"data/manifests/mustc_recordings_{split}.jsonl.gz")
    supervisions = load_manifest(recipe / f"data/manifests/mustc_supervisions_{split}.jsonl.gz")
    out.mkdir(parents=True)
    lines = {"wav.scp": [], "segments": [], "text": [], "utt2spk": []}
    for rec in recordings:
        lines["wav.scp"].append(f"{rec.id} {(recipe / rec.sources[0].source).resolve()}")
    for sup in supervisions:
        lines["segments"].append(f"{sup.id} {sup.recording_id} {sup.start!r} {sup.end!r}")
        lines["text"].append(f"{sup.id} {sup.text}")
        lines["utt2spk"].append(f"{sup.id} {sup.speaker}")
    for name, rows in lines.items():
        (out / name).write_text("".join(row + "\n" for row in rows))
    return out


def assert_punctuate_reproduces_stage8(recipe: Path, out: Path, split: str = "test") -> None:
    """steps/punctuate.sh on the split's own audio and transcripts gives stage 6's BERT posteriors, stage 8's
    TDNN posteriors and ensemble for every word (to 1e-4), fails exactly the cuts that stage 3 could not
    align, and scores the F1 of results.json."""
    from lhotse import load_manifest

    from punct.io.shards import MatrixReader
    from punct.labels import PUNCT4, WordLabels
    from punct.scoring.ensemble import ensemble
    from punct.scoring.punct_scores import score

    data = kaldi_data_dir(recipe, split, out / "data")
    run = subprocess.run(
        ["steps/punctuate.sh", "--nj", "2", str(data), str(out / "punct")],
        cwd=recipe,
        capture_output=True,
        text=True,
        timeout=600,
    )
    results = json.loads((recipe / "exp/results/results.json").read_text())
    alpha = results["chosen_alpha"]
    failed = {line.split()[0] for line in (out / "punct/failed").read_text().splitlines()}
    assert run.returncode == (1 if failed else 0), run.stdout[-3000:] + run.stderr[-3000:]
    aligned = {cut.id: cut for cut in load_manifest(recipe / f"data/fbank/mustc_cuts_{split}_ali.jsonl.gz")}
    outputs = [json.loads(line) for line in (out / "punct/punct.jsonl").read_text().splitlines()]
    assert {o["id"] for o in outputs} == set(aligned) and not failed & set(aligned)
    cwd = os.getcwd()
    os.chdir(recipe)  # the scp files hold paths relative to the recipe
    try:
        tdnn = dict(MatrixReader(f"exp/tdnn/post/{split}/post.scp").items())
        bert = dict(MatrixReader(f"exp/emb_bert/{split}/post.scp").items())
    finally:
        os.chdir(cwd)
    ref, hyp = [], {"BERT only": [], "TDNN": [], "ensemble": []}
    for o in outputs:
        key = o["id"]
        labelled = WordLabels.from_supervision(aligned[key].supervisions[0], PUNCT4)
        assert [w["word"] for w in o["words"]] == list(labelled.words), key
        got = {name: np.array([w[name] for w in o["words"]]) for name in ("bert", "tdnn", "ensemble")}
        np.testing.assert_allclose(got["bert"], bert[key], atol=1e-4, err_msg=f"{key}: BERT posteriors")
        np.testing.assert_allclose(got["tdnn"], tdnn[key], atol=1e-4, err_msg=f"{key}: TDNN posteriors")
        np.testing.assert_allclose(
            got["ensemble"], ensemble(tdnn[key], bert[key], alpha), atol=1e-4, err_msg=f"{key}: ensemble posteriors"
        )
        ref.extend(PUNCT4.encode(labelled.punct))
        hyp["BERT only"].extend(got["bert"].argmax(1))
        hyp["TDNN"].extend(got["tdnn"].argmax(1))
        hyp["ensemble"].extend(PUNCT4.encode([w["label"] for w in o["words"]]))
    systems = results["systems"][split]
    chosen = next(name for name in systems if "chosen on dev" in name)
    for name, stage8 in (("BERT only", "BERT only"), ("TDNN", "TDNN"), ("ensemble", chosen)):
        f1 = score(np.array(ref), np.array(hyp[name]), PUNCT4.classes).overall["f1"]
        assert f1 == pytest.approx(systems[stage8]["overall"]["f1"], abs=1e-9), name
    print(
        f"\n[e2e punctuate] {recipe.name}: {len(outputs)} utterances, {len(ref)} words, {len(failed)} failed "
        f"as in stage 3; F1 equal to stage 8's"
    )


def test_punctuate_reproduces_stage8(tiny_recipe, tmp_path):
    assert_punctuate_reproduces_stage8(tiny_recipe, tmp_path)


def test_stage9_exports_a_folder_that_punctuates_as_the_recipe(tiny_recipe, tmp_path):
    """exp/model, copied to another place, gives punctuate --recipe-dir's posteriors (to 1e-6) on the test split's
    audio, and its card's numbers are stage 8's."""
    import yaml

    from punct.bin.punctuate import main as punctuate

    results = json.loads((tiny_recipe / "exp/results/results.json").read_text())
    card = (tiny_recipe / "exp/model/README.md").read_text()
    header = yaml.safe_load(card.split("---")[1])
    metrics = {m["name"]: m["value"] for m in header["model-index"][0]["results"][0]["metrics"]}
    tdnn_test = results["systems"]["test"]["TDNN"]
    assert metrics["TDNN (speech + text) overall F1 (test)"] == round(100 * tdnn_test["overall"]["f1"], 1)
    comma = f"| TDNN (speech + text) | {100 * tdnn_test['per_class'][',']['f1']:.1f} |"
    assert comma in card and "Pause only (baseline)" in card and "**Synthetic speech.**" in card
    assert re.search(r"real-time factor \*\*0\.\d{4}\*\*", card), "the card lacks the measured speed"

    model = tmp_path / "copied" / "model"
    shutil.copytree(tiny_recipe / "exp/model", model)
    data = kaldi_data_dir(tiny_recipe, "test", tmp_path / "data")
    given = ["--wav-scp", str(data / "wav.scp"), "--segments", str(data / "segments"), "--text", str(data / "text")]
    given += ["--utt2spk", str(data / "utt2spk"), "--allow-failures", "--device", "cpu"]
    assert punctuate(given + ["--recipe-dir", str(tiny_recipe), "--out-dir", str(tmp_path / "recipe")]) == 0
    assert punctuate(given + ["--model", str(model), "--out-dir", str(tmp_path / "model")]) == 0
    read = {
        name: [json.loads(line) for line in (tmp_path / name / "punct.jsonl").read_text().splitlines()]
        for name in ("recipe", "model")
    }
    assert [o["id"] for o in read["model"]] == [o["id"] for o in read["recipe"]] and read["model"]
    for a, b in zip(read["model"], read["recipe"]):
        assert [w["label"] for w in a["words"]] == [w["label"] for w in b["words"]]
        for name in ("bert", "tdnn", "ensemble"):
            got, expected = (np.array([w[name] for w in o["words"]]) for o in (a, b))
            np.testing.assert_allclose(got, expected, atol=1e-6, rtol=0, err_msg=f"{a['id']}: {name}")


@pytest.mark.slurm
def test_parallel_stages_through_slurm_give_the_same_outputs(tiny_recipe, slurm_cluster, tmp_path, monkeypatch):
    """Stage 1 (features) and stage 4 (layer-12 dump) again, as SLURM array jobs, into a fresh copy."""
    import numpy as np

    from punct.io.shards import MatrixReader

    copy = copy_recipe(Path(__file__).resolve().parents[2], "mustc", tmp_path / "mustc")
    for name in ("data/manifests", "data/corpus_tiny_natural", "exp/am"):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-a", str(tiny_recipe / name), str(copy / name)], check=True)
    for stage in ("1", "4"):
        out = run_recipe(copy, "--stage", stage, "--stop-stage", stage, env_extra={"PUNCT_BACKEND": "slurm"})
        assert out.returncode == 0, out.stderr[-4000:]
        assert re.search(r"submitted job array \d+", out.stderr), "no job went through sbatch"
        job_ids = re.findall(r"submitted job array (\d+)", out.stderr)
        print(f"\n[e2e slurm] stage {stage}: job ids {job_ids}")
    for split in SPLITS:
        monkeypatch.chdir(tiny_recipe)
        local = dict(MatrixReader(f"exp/emb_am/{split}/emb.scp").items())
        monkeypatch.chdir(copy)
        remote = dict(MatrixReader(f"exp/emb_am/{split}/emb.scp").items())
        assert set(local) == set(remote)
        for key in local:
            np.testing.assert_allclose(local[key], remote[key], atol=1e-3)
