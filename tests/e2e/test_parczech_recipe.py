"""egs/parczech: help text, and the tiny corpus end to end (stages 0-6, marked slow)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "egs" / "parczech"


def test_help_describes_the_stages_and_their_configs_exist():
    proc = subprocess.run(["bash", str(RECIPE / "run.sh"), "--help"], cwd=RECIPE, capture_output=True, text=True)
    text = proc.stdout + proc.stderr
    for output in (
        "exp/am",
        "exp/asr/words",
        "data/segments",
        "exp/{text,mm,mm_pe,mm_pe_random}",
        "exp/efficientpunct{,_tdnn}",
        "exp/results",
        "exp/model",
    ):
        assert output in text
    for model in ("am", "mm", "tdnn"):
        for suffix in ("", "_mini", "_tiny"):
            assert (RECIPE / "conf" / f"{model}{suffix}.yaml").is_file()


@pytest.mark.slow
def test_tiny_corpus_end_to_end(parczech_tiny_recipe):
    """A private copy of the recipe (links to the repository), every stage on the tiny corpus: the session's run
    (tests/conftest.py), then re-runs of stages 4-6 and of stage 2 with the recipe's AM."""
    work = parczech_tiny_recipe
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    for name in ("text", "mm", "mm_pe", "mm_pe_random"):
        assert (work / "exp" / name / ".done").is_file()
        assert (work / "exp" / name / "decode" / "test.jsonl").is_file()
        assert (work / "exp" / name / "curves.png").stat().st_size > 0, name  # punct.training.curves
        assert list((work / "exp" / name / "tensorboard").glob("events.out.tfevents.*")), name
    for name in ("efficientpunct_tdnn", "efficientpunct"):
        assert (work / "exp" / name / "decode" / "test.jsonl").is_file()
    assert (work / "exp" / "pause" / ".done").is_file()  # the pause-only baseline of stage 6
    results = (work / "exp" / "results" / "RESULTS.md").read_text()
    for row in (
        "| text-only |",
        "| multimodal |",
        "| multimodal+PE |",
        "| random-audio |",
        "| EfficientPunct TDNN |",
        "| EfficientPunct ensemble |",
        "| pause-only |",
    ):
        assert row in results
    assert "| EfficientPunct | —" not in results  # the placeholder row is replaced
    # conf/{mm,tdnn}_tiny.yaml exclude each segment's first word (the thesis): every model wrote and was scored so
    assert results.count("First word of each segment: excluded (`first_word: exclude`") == 2  # dev and test
    alpha = json.loads((work / "exp" / "efficientpunct" / "alpha.json").read_text())
    assert alpha["first_word"] == "exclude"
    # each head's alpha by the paired rule (the default), stated in RESULTS.md with the dev argmax
    assert {head: choice["rule"] for head, choice in alpha["alpha_rule"].items()} == {
        "punct": "paired-se",
        "case": "paired-se",
    }
    for head in ("punct", "case"):
        assert f"- EfficientPunct ensemble: {head} alpha chosen on dev (paired rule: dev argmax alpha " in results
    assert any((work / "exp" / "results" / "plots").glob("attention_multimodal+PE_dev_*.png"))
    # a second run of stages 4-6 skips the finished trainings and rewrites the results
    again = subprocess.run(
        ["bash", "./run.sh", "--corpus-size", "tiny", "--stage", "4"],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    output = again.stdout + again.stderr
    assert again.returncode == 0 and "is done; skipping" in output, output[-3000:]
    assert "best-valid-f1.pt is done; skipping" in output  # the TDNN of stage 5 too
    # stage 2 with the recipe's own acoustic model (chunked recognition of the long recordings)
    am = subprocess.run(
        ["bash", "./run.sh", "--corpus-size", "tiny", "--words-from", "am", "--stage", "2", "--stop-stage", "2"],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert am.returncode == 0, am.stdout[-3000:] + am.stderr[-3000:]
    assert (work / "exp" / "asr" / "words").resolve() == (work / "exp" / "asr" / "am_words").resolve()
    recordings = sorted((work / "data" / "corpus_tiny_natural" / "synth").glob("*.words.tsv"))
    assert recordings and all((work / "exp" / "asr" / "am_words" / r.name).is_file() for r in recordings)


@pytest.mark.slow
def test_stage4_am_frames_of_real_and_random_audio(parczech_tiny_recipe):
    """With sound_encoder: am, stage 4's scripts dump the AM's frames once, of the real audio and of the random-audio
    control's seed, and the random-audio model reads its own (local/dump_am_frames.sh, local/train_mm.sh); a model
    of another seed is refused."""
    work = parczech_tiny_recipe
    config = yaml.safe_load((work / "conf" / "mm_tiny.yaml").read_text())
    (work / "conf" / "mm_tiny_am.yaml").write_text(yaml.safe_dump({**config, "sound_encoder": "am"}))

    def run(*command: str) -> subprocess.CompletedProcess:
        return subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=600)

    dump = run("bash", "local/dump_am_frames.sh", "--model-config", "conf/mm_tiny_am.yaml", "--random-audio-seed", "3",
               "data/segments", "exp/am", "exp/am_frames_am")  # fmt: skip
    assert dump.returncode == 0, dump.stdout[-3000:] + dump.stderr[-3000:]
    assert "segments -> exp/am_frames_am/random_audio/test/frames.scp" in dump.stdout
    train = ["bash", "local/train_mm.sh", "--config", "conf/models/mm_pe_random.conf", "--model-config"]
    train += ["conf/mm_tiny_am.yaml", "--am-dir", "exp/am", "--am-frames", "exp/am_frames_am"]
    random = run(*train, "--seed", "3", "data/segments", "exp/random_am")
    assert random.returncode == 0, random.stdout[-3000:] + random.stderr[-3000:]
    log = (work / "exp" / "random_am" / "log" / "train_mm.log").read_text()
    assert "random_audio/train/frames.scp: AM frames of" in log and (work / "exp/random_am/decode/test.jsonl").is_file()
    other_seed = run(*train, "--seed", "4", "data/segments", "exp/random_am_seed4")
    assert other_seed.returncode != 0
    assert (
        "the model reads frames of {'random_audio': True" in (work / "exp/random_am_seed4/log/train_mm.log").read_text()
    )


def test_stage4_models_are_conf_files_of_train_mm_options():
    """conf/models/<name>.conf per stage-4 model: options of local/train_mm.sh and its RESULTS.md row."""
    run_sh = (RECIPE / "run.sh").read_text()
    names = run_sh.split('mm_models="')[1].split('"')[0].split()
    assert names == ["text", "mm", "mm_pe", "mm_pe_random"]
    step = (RECIPE / "local" / "train_mm.sh").read_text()
    section = step.split("# Begin configuration section.")[1].split("# End configuration section.")[0]
    assert ". utils/train_options.sh" in section  # the options every training shares
    section += (REPO / "utils" / "train_options.sh").read_text().split("# Begin configuration section.")[1]
    step_options = {line.split("=")[0] for line in section.splitlines() if "=" in line and not line.startswith("#")}
    rows = set()
    for name in names:
        values = dict(
            line.split("#")[0].strip().split("=", 1)
            for line in (RECIPE / "conf" / "models" / f"{name}.conf").read_text().splitlines()
            if line.strip() and not line.startswith("#")
        )
        assert set(values) - {"results_row"} <= step_options, name
        assert values["model"] in ("text", "mm") and values["results_row"]
        rows.add(values["results_row"])
    assert rows == {"text-only", "multimodal", "multimodal+PE", "random-audio"}


@pytest.mark.slow
def test_stage7_exports_the_models_punctuate_itn_reads(parczech_tiny_recipe, tmp_path):
    """exp/model holds the stage-4 models a user runs (not the random-audio control), its default the best on dev; a
    copy of it labels a recording's words as the default model's own file does, and its card is the scoring's."""
    import shutil

    from lhotse import load_manifest

    from punct.bin import punctuate_itn
    from punct.inference.model_folder import read_model_folder
    from punct.models.cross_attention.data import read_segments

    work = parczech_tiny_recipe
    model = read_model_folder(work / "exp" / "model", kind="itn")
    assert model.info["systems"] == ["mm", "mm_pe", "text"]
    results = json.loads((work / "exp" / "results" / "results.json").read_text())
    dev = {Path(m["dir"]).name: m["scores"]["dev"]["macro_f1"]["value"] for m in results["models"]}
    assert dev[model.info["default_system"]] == max(dev[s] for s in ("text", "mm", "mm_pe"))
    card = (work / "exp" / "model" / "README.md").read_text()
    assert yaml.safe_load(card.split("---")[1])["language"] == "cs" and "| pause-only |" in card

    segments = list(read_segments(work / "data/segments/parczech_supervisions_dev.jsonl.gz"))
    recording = segments[0].recording_id
    ctm = tmp_path / "words.ctm"
    ctm.write_text(
        "".join(
            f"{recording} 1 {seg.start + s:.3f} {e - s:.3f} {w}\n"
            for seg in segments
            if seg.recording_id == recording
            for w, s, e in zip(seg.words, seg.word_starts, seg.word_ends)
        )
    )
    source = load_manifest(work / "data/segments/parczech_recordings_dev.jsonl.gz")[recording].sources[0].source
    wav = (work / source).resolve() if not Path(source).is_absolute() else Path(source)
    copied = shutil.copytree(work / "exp" / "model", tmp_path / "copied" / "model")
    labels = {}
    for name, given in (("file", work / "exp" / model.info["default_system"] / "best-valid-f1.pt"), ("folder", copied)):
        out = tmp_path / f"{name}.jsonl"
        argv = ["--model", str(given), "--wav", str(wav), "--ctm", str(ctm), "--utt-id", recording, "--out", str(out)]
        assert punctuate_itn.main(argv) == 0
        labels[name] = [(w["word"], w["label"], w["case"]) for w in map(json.loads, out.read_text().splitlines())]
    assert labels["folder"] == labels["file"] and labels["file"]
