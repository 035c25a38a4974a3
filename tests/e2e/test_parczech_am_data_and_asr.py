"""egs/parczech/run.sh: every option of the configuration section is documented in --help; stage 1 on a Kaldi data
dir of espeak-ng speech (``--am-data``); stages 2-3 with a transformers CTC model (``--asr-model``) on the tiny
corpus (marked slow)."""

import gzip
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers.am_data_dirs import kaldi_dir_per_utterance, kaldi_dir_with_segments, speak_utterances
from tests.helpers.recipe_copy import copy_recipe
from tests.helpers.tiny_wav2vec2 import save_wav2vec2_ctc

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "egs" / "parczech" / "run.sh"


def test_help_lists_every_option():
    text = RUN.read_text()
    section = text.split("# Begin configuration section.")[1].split("# End configuration section.")[0]
    names = re.findall(r"^([a-z_]+)=", section, flags=re.M)
    assert "words_from" in names and "stage" in names
    proc = subprocess.run(["bash", str(RUN), "--help"], cwd=RUN.parent, capture_output=True, text=True)
    help_text = proc.stdout + proc.stderr
    for name in names:
        assert f"--{name.replace('_', '-')}" in help_text, name
    assert "segments" in help_text


def dev_wer_words(output: str) -> int:
    """The number of reference words in steps/train_am.sh's dev WER line."""
    match = re.search(r"train_am\.sh: dev: %WER [0-9.]+ \[ \d+ / (\d+),", output)
    assert match, output[-3000:]
    return int(match.group(1))


def test_stage_1_trains_the_am_on_a_kaldi_data_dir(tmp_path):
    """``--am-data``: a Kaldi data dir (segments into two long wavs) -> data/am_manifests_import -> features ->
    the tiny AM in exp/am with its dev WER; a re-run skips the finished import, features and training; other
    dev data (``--am-data-dev``) imports, computes features and trains again, from scratch."""
    spoken = speak_utterances()
    data = tmp_path / "kaldi"
    times = kaldi_dir_with_segments(data, spoken)
    kaldi_dir_per_utterance(tmp_path / "kaldi_dev", spoken[:4], prefix="dev-")
    work = copy_recipe(REPO, "parczech", tmp_path / "parczech")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [
        "bash",
        "./run.sh",
        "--corpus-size",
        "tiny",
        "--nj",
        "2",
        "--stage",
        "1",
        "--stop-stage",
        "1",
        "--am-data",
        str(data),
    ]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, env=env, timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    assert f"Stage 1: acoustic model for recognition and EfficientPunct (conf/am_tiny.yaml): {data} ->" in output
    assert (work / "exp" / "am" / "best-valid-loss.pt").is_file() and (work / "exp" / "am" / "mfcc.yaml").is_file()
    manifests = work / "data" / "am_manifests_import"
    stats = json.loads((manifests / "import_stats.json").read_text())
    assert stats["train"]["utterances"] + stats["dev"]["utterances"] == len(times) == 12
    with gzip.open(manifests / "parczech_supervisions_dev.jsonl.gz", "rt") as f:
        dev = [json.loads(line) for line in f]
    assert all(s["speaker"] == s["recording_id"] for s in dev)  # per-recording CMVN groups
    assert dev_wer_words(output) == sum(len(s["custom"]["words"]) for s in dev)  # the WER is over the dev split
    assert not (work / "data" / "am_manifests").exists()  # the mini corpus' utterances are not made
    again = subprocess.run(cmd, cwd=work, capture_output=True, text=True, env=env, timeout=600)
    output = again.stdout + again.stderr
    assert again.returncode == 0, output[-3000:]
    for skipped in (
        "import_am_data.sh: data/am_manifests_import is done; skipping",
        "parczech_cuts_train.jsonl.gz is done; skipping",
        "exp/am/best-valid-loss.pt is done; skipping",
    ):
        assert skipped in output, skipped
    other = subprocess.run(
        cmd + ["--am-data-dev", str(tmp_path / "kaldi_dev")],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    output = other.stdout + other.stderr
    assert other.returncode == 0, output[-3000:]
    for redone in (
        "parczech_cuts_train.jsonl.gz was made with other options or inputs; computing again",
        "exp/am was trained on other data, config or init; training again from scratch",
    ):
        assert redone in output, redone
    assert (
        "continuing from the newest checkpoint" in output
        and "resumed from" not in (work / "exp" / "am" / "log" / "train.log").read_text()
    )
    assert dev_wer_words(output) == 4 + 7 + 6 + 7  # the given dev data: spoken[:4]


def test_am_data_option_errors():
    for args, message in (
        (["--am-data-dev", "x"], "--am-data-dev is the dev part of --am-data"),
        (["--am-data", "x", "--am-dir", "y"], "--am-dir gives a trained AM"),
    ):
        proc = subprocess.run(["bash", str(RUN), *args], cwd=RUN.parent, capture_output=True, text=True)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr


@pytest.mark.slow
def test_stages_2_3_with_a_transformers_ctc_model(tmp_path):
    """Stage 0 builds the tiny corpus; stages 2-3 recognise it with ``--asr-model`` (a random wav2vec2 folder).
    Its words are garbage, so stage 3 finds (almost) no exact words: it must still write the segment manifests
    and count what its filters removed, then stop, saying that the dataset is too small (min_*_segments)."""
    work = copy_recipe(REPO, "parczech", tmp_path / "parczech")
    model = save_wav2vec2_ctc(tmp_path / "wav2vec2")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    base = ["bash", "./run.sh", "--corpus-size", "tiny", "--nj", "2"]
    built = subprocess.run(base + ["--stop-stage", "0"], cwd=work, capture_output=True, text=True, env=env, timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    proc = subprocess.run(
        base + ["--stage", "2", "--stop-stage", "3", "--asr-model", str(model)],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "too few segments to train or score a model" in output, output[-3000:]
    assert not (work / "data" / "segments" / ".done").exists()
    assert (
        f"Stage 2: recognised words with times (am: transformers CTC model {model}, beam search with a 3-gram LM "
        "(conf/decode_tiny.yaml))"
    ) in output
    assert "recognise_long.sh: decoded by beam search (beam 4," in output
    assert f"recognise_long.sh: recognised with {model.resolve()}" in output
    assert "long-recording %WER" in output  # against the synthesizer's words of the mini corpus
    words_dir = work / "exp" / "asr" / "words"
    assert words_dir.resolve() == (work / "exp" / "asr" / "asr_model_words").resolve()
    with gzip.open(work / "data" / "manifests" / "parczech_recordings_all.jsonl.gz", "rt") as f:
        recordings = [json.loads(line)["id"] for line in f]
    assert len(recordings) == 3
    recognised = 0
    for rec_id in recordings:
        stats = json.loads((words_dir / f"{rec_id}.stats.json").read_text())
        assert stats["model"] == str(model.resolve()) and stats["chunks"] >= 3  # the tiny sittings last > 55 s
        recognised += len((words_dir / f"{rec_id}.words.tsv").read_text(encoding="utf-8").splitlines())
    assert "TDNN" not in (work / "exp" / "asr" / "log" / "recognise.1.log").read_text()
    segments = work / "data" / "segments"
    stats = json.loads((segments / "stats.json").read_text())
    assert stats["totals"]["recordings"] == 3 and stats["totals"]["recognised_words"] == recognised > 0
    assert stats["totals"]["official_words"] > stats["totals"]["exact_words"]
    kept = 0
    for split in ("train", "dev", "test"):
        with gzip.open(segments / f"parczech_supervisions_{split}.jsonl.gz", "rt") as f:
            kept += sum(1 for line in f if line.strip())
    assert kept == stats["filters"]["kept"]
    assert "| kept |" in (segments / "stats.md").read_text()


def test_every_corpus_size_is_in_help_and_has_its_configs():
    """--corpus-size SIZE picks conf/{am,decode,segments,mm,tdnn}_SIZE.yaml: each size of the builder needs all five."""
    from punct.corpora.mini_czech import SIZES

    proc = subprocess.run(["bash", str(RUN), "--help"], cwd=RUN.parent, capture_output=True, text=True)
    line = next(ln for ln in (proc.stdout + proc.stderr).splitlines() if "--corpus-size" in ln)
    assert "small" in SIZES
    for size in SIZES:
        assert size in line, size
        for model in ("am", "decode", "segments", "mm", "tdnn"):
            assert (RUN.parent / "conf" / f"{model}_{size}.yaml").is_file(), (model, size)


def test_am_training_step_leaves_mixed_precision_to_the_config(tmp_path):
    """local/train_am.sh passes --amp only when given: conf/am_small.yaml's ``amp: fastest`` must reach
    the trainer (a default of none overrode it); the job's threads count every DDP process'."""
    repo = RUN.parents[2]
    (tmp_path / "steps").mkdir()
    (tmp_path / "steps" / "train_am.sh").write_text('#!/usr/bin/env bash\necho "ARGS: $*"\n')
    (tmp_path / "steps" / "train_am.sh").chmod(0o755)
    for name in ("utils", "path.sh"):
        (tmp_path / name).symlink_to(repo / name)
    (tmp_path / "local").symlink_to(RUN.parent / "local")
    fbank = tmp_path / "fbank"
    fbank.mkdir()
    for f in ("parczech_cuts_train.jsonl.gz", "parczech_cuts_dev.jsonl.gz"):
        (fbank / f).write_text("")
    (tmp_path / "am.yaml").write_text("amp: auto\n")
    (tmp_path / "mfcc.yaml").write_text("")

    def run(*opts):
        proc = subprocess.run(
            [
                "bash",
                "local/train_am.sh",
                "--am-config",
                "am.yaml",
                "--feat-config",
                "mfcc.yaml",
                *opts,
                "fbank",
                "exp/am",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return next(ln for ln in proc.stdout.splitlines() if ln.startswith("ARGS: "))

    # empty: steps/train_am.sh uses the config's; --hint: the recipe's remedies for an AM that learned nothing
    assert re.search(r"--amp\s+--max-dev-wer\s+--hint more hours: .+ fbank exp/am$", run())
    assert re.search(r"--amp bf16\s+--max-dev-wer\s+--hint .+ fbank exp/am$", run("--amp", "bf16"))
    # run.sh --am-cpu-ranks 2: two one-thread DDP processes, and the job asks for both processes' threads
    ranks = run("--nproc", "2", "--num-threads", "1")
    assert "--cmd utils/run.pl --num-threads 2 " in ranks and re.search(r"--num-threads 1 .*--nproc 2 ", ranks)
    assert "--cmd utils/run.pl --num-threads 2 " in run()  # one process of 2 threads
