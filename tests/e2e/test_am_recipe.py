"""Stages 1-4 through the steps/ scripts on the tiny espeak corpus, with the local runner and with SLURM."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from lhotse import load_manifest

from punct.features.compute import feature_frames
from punct.io.shards import MatrixReader
from tests.helpers.espeak_corpus import cached_corpus, espeak_available

pytestmark = pytest.mark.skipif(not espeak_available(), reason="espeak-ng/sox not installed")
REPO = Path(__file__).resolve().parents[2]


def _recipe(tmp_path: Path) -> Path:
    egs = tmp_path / "egs"
    egs.mkdir()
    for name in ("steps", "utils", "path.sh", "cmd.sh"):
        (egs / name).symlink_to(REPO / "egs" / "mustc" / name)
    (egs / "conf").mkdir()
    for name in ("mfcc.yaml", "am_tiny.yaml", "am.yaml"):
        shutil.copy(REPO / "egs" / "mustc" / "conf" / name, egs / "conf" / name)
    (egs / "data").mkdir()
    shutil.copytree(cached_corpus() / "manifests", egs / "data" / "manifests")
    return egs


def _run(egs: Path, cmd: str, *args: str) -> str:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    result = subprocess.run(["bash", *args], cwd=egs, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        logs = "\n".join(f"== {p}\n{p.read_text()[-3000:]}" for p in sorted(egs.rglob("*.log")))
        pytest.fail(f"{' '.join(args)} failed:\n{result.stdout}\n{result.stderr}\n{logs}")
    return result.stdout + result.stderr


def _features(egs: Path, *options: str) -> str:
    """steps/compute_features.sh data/manifests -> data/fbank with ``options`` (the runner: its default or --cmd)."""
    return _run(
        egs,
        "utils/run.pl",
        "steps/compute_features.sh",
        "--prefix",
        "mustc",
        "--nj",
        "2",
        *options,
        "data/manifests",
        "data/fbank",
    )


def _stages_1_to_4(egs: Path, cmd: str) -> None:
    _features(egs, "--cmd", cmd)
    out = _run(
        egs,
        cmd,
        "steps/train_am.sh",
        "--prefix",
        "mustc",
        "--cmd",
        cmd,
        "--am-config",
        "conf/am_tiny.yaml",
        "--device",
        "cpu",
        "--num-threads",
        "1",
        "--train-opts",
        "--num-epochs 2 --max-duration 10",
        "data/fbank",
        "exp/am",
    )
    assert "dev: %WER" in out and "test: %WER" in out
    _run(
        egs,
        cmd,
        "steps/align.sh",
        "--prefix",
        "mustc",
        "--nj",
        "2",
        "--cmd",
        cmd,
        "--device",
        "cpu",
        "--max-fail",
        "1.0",
        "data/fbank",
        "exp/am",
    )
    out = _dump(egs, cmd, 2, "--benchmark-config", "conf/am.yaml")
    assert "throughput of conf/am.yaml" in out


def _dump(egs: Path, cmd: str, nj: int, *options: str) -> str:
    """steps/dump_am_embeddings.sh exp/am -> exp/emb_am with ``nj`` jobs."""
    return _run(
        egs,
        cmd,
        "steps/dump_am_embeddings.sh",
        "--prefix",
        "mustc",
        "--nj",
        str(nj),
        "--cmd",
        cmd,
        "--device",
        "cpu",
        *options,
        "data/fbank",
        "exp/am",
        "exp/emb_am",
    )


def _check_outputs(egs: Path) -> None:
    for split in ("train", "dev", "test"):
        cuts = load_manifest(egs / "data" / "fbank" / f"mustc_cuts_{split}.jsonl.gz")
        sups = load_manifest(egs / "data" / "manifests" / f"mustc_supervisions_{split}.jsonl.gz")
        assert [c.id for c in cuts] == [s.id for s in sups]
        # stage 3: every aligned cut has one AlignmentItem per word, inside the cut, in order
        ali = load_manifest(egs / "data" / "fbank" / f"mustc_cuts_{split}_ali.jsonl.gz")
        failed = (egs / "exp" / "am" / "ali" / f"{split}.failed").read_text().splitlines()
        assert len(ali) + len(failed) == len(cuts)
        ctm = (egs / "exp" / "am" / "ali" / f"{split}.ctm").read_text().splitlines()
        assert len(ctm) == sum(len(c.supervisions[0].custom["words"]) for c in ali)
        for cut in ali:
            items = cut.supervisions[0].alignment["word"]
            assert [i.symbol for i in items] == cut.supervisions[0].custom["words"]
            starts = [i.start for i in items]
            assert starts == sorted(starts) and cut.start - 1e-6 <= starts[0] and items[-1].end <= cut.end + 1e-6
        # stage 4: one matrix per cut id with the feature frame count
        emb = MatrixReader(egs / "exp" / "emb_am" / split / "emb.scp")
        assert emb.keys() == [c.id for c in cuts]
        for cut in cuts:
            assert emb[cut.id].shape == (feature_frames(cut), 64)  # snip_edges frames, not lhotse's
    assert (egs / "exp" / "am" / "wer_dev.txt").read_text().startswith("%WER ")
    assert (egs / "exp" / "am" / "tokens.txt").read_text().startswith("<blk> 0\n")


def _train_on_then_stop(egs: Path) -> None:
    """An AM above max_dev_wer (0 %: any) whose config gives it one extra epoch: stage 2 resumes it once, from its
    epoch-2.pt to epoch 3, averages and decodes again, then stops with the message."""
    from punct.am.checkpoint import trained_epochs

    config = egs / "conf" / "am_tiny_extra.yaml"
    config.write_text((egs / "conf" / "am_tiny.yaml").read_text() + "\nextra_epochs: 1\nmax_epochs: 3\n")
    options = ["--prefix", "mustc", "--am-config", "conf/am_tiny_extra.yaml", "--device", "cpu", "--num-threads", "1"]
    train_opts = ["--train-opts", "--num-epochs 2 --max-duration 10", "--max-dev-wer", "0"]
    step = ["bash", "steps/train_am.sh", *options, *train_opts, "data/fbank", "exp/am_extra"]
    run = subprocess.run(step, cwd=egs, env=dict(os.environ, PYTHONWARNINGS="ignore"), capture_output=True, text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.count("training on to 3 epochs") == 1 and run.stdout.count("dev: %WER") == 2, run.stdout
    assert "stopped: the AM's dev WER is above max_dev_wer" in run.stderr
    am = egs / "exp" / "am_extra"
    assert "resumed from" in (am / "log" / "train_to_3.log").read_text()
    assert trained_epochs(am / "best-valid-loss.pt") == 3 and (am / "epoch-3.pt").is_file()
    assert (am / "wer_dev.txt").stat().st_mtime >= (am / "best-valid-loss.pt").stat().st_mtime


def test_stages_1_to_4_with_the_local_runner(tmp_path, monkeypatch):
    egs = _recipe(tmp_path)
    _stages_1_to_4(egs, "utils/run.pl")
    monkeypatch.chdir(egs)  # manifests and scp files hold paths relative to the recipe folder
    _check_outputs(egs)
    _train_on_then_stop(egs)
    # a second run finds everything done
    out = _features(egs)
    assert "nothing to do" in out
    # another feature config computes every split again (its stamp differs), and a re-run skips them again
    other = egs / "conf" / "mfcc_vars.yaml"
    other.write_text((egs / "conf" / "mfcc.yaml").read_text().replace("norm_vars: true", "norm_vars: false"))
    before = (egs / "data" / "fbank" / "cmvn_dev.json").read_text()
    out = _features(egs, "--feat-config", "conf/mfcc_vars.yaml")
    assert "mustc_cuts_dev.jsonl.gz was made with other options or inputs; computing again" in out
    assert (egs / "data" / "fbank" / "cmvn_dev.json").read_text() != before  # means only now
    out = _features(egs, "--feat-config", "conf/mfcc_vars.yaml")
    assert "nothing to do" in out
    # the layer-12 shards of --nj 2 are kept by a rerun with another --nj; an unfinished set is redone at the new one
    scp = egs / "exp" / "emb_am" / "dev" / "emb.scp"
    merged = scp.read_text()
    out = _dump(egs, "utils/run.pl", 1)
    assert "holds a complete set of shards of --nj 2; keeping them" in out and scp.read_text() == merged
    (egs / "exp" / "emb_am" / "dev" / "emb.2.scp.done").unlink()
    out = _dump(egs, "utils/run.pl", 1)
    assert "holds unfinished shards of --nj 2; redoing them with --nj 1" in out
    assert not (egs / "exp" / "emb_am" / "dev" / "emb.2.scp").exists()
    dev_ids = {c.id for c in load_manifest(egs / "data" / "fbank" / "mustc_cuts_dev.jsonl.gz")}
    assert set(MatrixReader(scp).keys()) == dev_ids and (egs / "exp" / "emb_am" / "num_jobs").read_text() == "1\n"


def test_stages_1_to_4_through_slurm(tmp_path, monkeypatch, slurm_cluster):
    egs = _recipe(tmp_path)
    _stages_1_to_4(egs, "utils/slurm.pl --mem 1G")
    monkeypatch.chdir(egs)
    _check_outputs(egs)
    logs = (egs / "data" / "fbank" / "log" / "compute.1.log").read_text()
    assert "Ended (code 0)" in logs
