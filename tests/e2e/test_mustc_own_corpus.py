"""egs/mustc on a corpus of one's own: lhotse manifests (a fake LibriTTS tree prepared by lhotse's own
``prepare_libritts``) and Kaldi data dirs with ``segments``, each through stages 0-8 of a copy of the recipe
(the tiny configs): stage 0-1's manifests and features are checked in detail, stages 2-8 by their results.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from lhotse import load_manifest

from punct.labels import WordLabels
from tests.helpers.fake_corpora import LIBRITTS_PARTS, prepared_libritts, write_kaldi_data_dirs
from tests.helpers.recipe_copy import copy_recipe

SPLITS = ("train", "dev", "test")


def stages_0_8(recipe: Path, *options: str) -> str:
    """``./run.sh OPTIONS`` (every stage, the tiny configs) in ``recipe``; its output, also in run_0_8.log there;
    stage 8's results checked."""
    out = subprocess.run(
        ["./run.sh", "--nj", "2", "--conf-suffix", "_tiny", *options, "--stop-stage", "8"],
        cwd=recipe,
        capture_output=True,
        text=True,
        timeout=900,
    )
    (recipe / "run_0_8.log").write_text(out.stdout + out.stderr)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    check_results(recipe)
    return out.stdout + out.stderr


def check_results(recipe: Path) -> None:
    """Stage 8 scored BERT, the TDNN and the ensemble on the test split's words."""
    results = json.loads((recipe / "exp/results/results.json").read_text())
    test = results["systems"]["test"]
    assert {"BERT only", "TDNN"} <= set(test) and any("chosen on dev" in name for name in test), sorted(test)
    for name, scores in test.items():
        assert scores["num_words"] >= 5 and 0.0 <= scores["overall"]["f1"] <= 1.0, (name, scores["overall"])
    assert 0.0 <= results["chosen_alpha"] <= 1.0


def supervisions(recipe: Path, split: str) -> dict:
    return {s.id: s for s in load_manifest(recipe / f"data/manifests/mustc_supervisions_{split}.jsonl.gz")}


def check_cuts(split: str, sups: dict) -> None:
    """Stage 1 made one cut with features per supervision, from the 16 kHz (resampled) audio (run in the recipe:
    the feature paths are relative to it, as in Kaldi)."""
    cuts = load_manifest(f"data/fbank/mustc_cuts_{split}.jsonl.gz")
    assert {c.supervisions[0].id for c in cuts} == set(sups)
    for cut in cuts:
        assert cut.sampling_rate == 16000 and cut.has_features
        assert abs(cut.num_frames - round(cut.duration * 100)) <= 2
        assert cut.load_features().shape == (cut.num_frames, 40)


def test_lhotse_manifests_of_libritts_through_stages_0_8(repo_root, tmp_path, monkeypatch):
    manifests = prepared_libritts(tmp_path)  # 24 kHz wavs; text = normalized, custom["orig_text"] = original
    recipe = copy_recipe(repo_root, "mustc", tmp_path / "mustc")
    log = stages_0_8(
        recipe,
        "--manifests",
        str(manifests),
        "--train-parts",
        LIBRITTS_PARTS["train"],
        "--dev-part",
        LIBRITTS_PARTS["dev"],
        "--test-part",
        LIBRITTS_PARTS["test"],
        "--text-field",
        "orig_text",
    )
    assert "local/prepare_imported.sh --form manifests" in log
    train = supervisions(recipe, "train")
    first = train["14_208_000000_000000"]
    assert first.text == "Mr. Darcy came in, didn't he?"  # orig_text, not LibriTTS' "Mister Darcy ..."
    labelled = WordLabels.from_supervision(first)
    assert list(labelled.words) == ["mr", "darcy", "came", "in", "didn't", "he"]
    assert list(labelled.punct) == ["NP", "NP", "NP", ",", "NP", "?"]
    dev = WordLabels.from_supervision(supervisions(recipe, "dev")["84_121_000001_000000"])  # "..., Mr. Bingley?"
    assert list(dev.words[-2:]) == ["mr", "bingley"] and list(dev.punct[-3:]) == [",", "NP", "?"]
    monkeypatch.chdir(recipe)
    for split in SPLITS:
        check_cuts(split, supervisions(recipe, split))
    rec = load_manifest(recipe / "data/manifests/mustc_recordings_train.jsonl.gz")[first.recording_id]
    assert rec.sampling_rate == 16000 and rec.transforms  # resampled from LibriTTS' 24 kHz by lhotse


def test_kaldi_data_dirs_with_segments_through_stages_0_8(repo_root, tmp_path, monkeypatch):
    data = write_kaldi_data_dirs(tmp_path / "data")  # data/{train,dev,test}: long talks, segments, utt2spk
    recipe = copy_recipe(repo_root, "mustc", tmp_path / "mustc")
    log = stages_0_8(recipe, "--data-dir", str(data))
    assert "local/prepare_imported.sh --form data-dir" in log
    train = supervisions(recipe, "train")
    sup = train["ben-talk2-000"]  # "Rivers are long, and often wide." in talk2 (22.05 kHz)
    assert (sup.recording_id, sup.speaker, sup.text) == ("talk2", "ben", "Rivers are long, and often wide.")
    assert list(WordLabels.from_supervision(sup).punct) == ["NP", "NP", ",", "NP", "NP", "."]
    assert sup.start == 0.3  # the segments file's time, in its talk
    skipped = json.loads((recipe / "data/manifests/mustc_skipped.json").read_text())
    assert skipped["train"] == {"no_audio": 1, "no_transcript": 1}
    assert "no_transcript 1, no_audio 1" in (recipe / "data/manifests/mustc_summary.txt").read_text()
    monkeypatch.chdir(recipe)
    for split in SPLITS:
        check_cuts(split, supervisions(recipe, split))
    cuts = {c.supervisions[0].id: c for c in load_manifest(recipe / "data/fbank/mustc_cuts_train.jsonl.gz")}
    assert cuts["ben-talk2-001"].start > sup.end  # a cut of the talk at its segment's time
