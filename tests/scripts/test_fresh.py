"""utils/fresh.sh: one skip-if-done-and-fresh rule for the four training steps.

The steps run on small fake inputs with a fake job runner (--cmd) that records each call and writes
what the entry point would (checkpoints, the model, its marker), so that the skip logic is tested
without training anything: a finished run with unchanged options and inputs is skipped with a log
line, a changed config, input or option retrains, an interrupted run never looks done and continues.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# The fake runner: [--opt value ...] LOGFILE python|torchrun ... -m punct.bin.<entry> args...
FAKE_CMD = r"""#!/usr/bin/env python3
import os, sys
from pathlib import Path
args = sys.argv[1:]
while args[0].startswith("--"):
    args = args[2:]
args = args[1:]  # the log file
entry = args[args.index("-m") + 1].rsplit(".", 1)[1]
with open(os.environ["FAKE_CALLS"], "a") as f:
    f.write(entry + " " + " ".join(args) + "\n")
opt = lambda name: args[args.index(name) + 1]
exp = Path(opt("--exp-dir"))
exp.mkdir(parents=True, exist_ok=True)
if entry == "decode_am":
    for split in args[args.index("--splits") + 1:args.index("--prefix")]:
        (exp / f"wer_{split}.txt").write_text("%WER 50.0\n")
    sys.exit(0)
resumed = sorted(exp.glob("epoch-*.pt"))
(exp / "epoch-1.pt").write_text("resumed\n" if resumed else "fresh\n")
if os.environ.get("FAKE_FAIL"):
    sys.exit(1)
if entry == "train_am":
    (exp / "best-valid-loss.pt").write_text("model\n")
elif entry == "train_bert":
    (exp / "best-valid-f1").mkdir(exist_ok=True)
    (exp / ".done").write_text("")
elif entry == "train_mm":
    (exp / "best-valid-f1.pt").write_text("model\n")
    (exp / "decode").mkdir(exist_ok=True)
    (exp / ".done").write_text("")
elif entry == "train_tdnn":
    (exp / "best-valid-f1.pt").write_text("model\n")
    (exp / "best-valid-f1.pt.done").write_text("")
"""


def _touch(path: Path, text: str = "x\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _setup(work: Path, step: str) -> tuple[list, Path, Path]:
    """The step's command line (without the runner), its config file and the marker of its output."""
    if step == "train_am":
        for split in ("train", "dev"):
            _touch(work / f"data/fbank/mustc_cuts_{split}.jsonl.gz")
            _touch(work / f"data/fbank/cmvn_{split}.json")
        conf = _touch(work / "conf/am.yaml", "num_epochs: 1\n")  # read by the dev-WER check
        return (
            [
                "steps/train_am.sh",
                "--prefix",
                "mustc",
                "--am-config",
                "conf/am.yaml",
                "--decode-splits",
                "dev",
                "data/fbank",
                "exp/am",
            ],
            conf,
            work / "exp/am/best-valid-loss.pt.done",
        )
    if step == "train_bert":
        for split in ("train", "dev"):
            _touch(work / f"data/manifests/mustc_supervisions_{split}.jsonl.gz")
        conf = _touch(work / "conf/bert.yaml")
        return (
            [
                "steps/train_bert.sh",
                "--model-config",
                "conf/bert.yaml",
                "data/manifests/mustc_supervisions_train.jsonl.gz",
                "data/manifests/mustc_supervisions_dev.jsonl.gz",
                "exp/bert",
            ],
            conf,
            work / "exp/bert/.done",
        )
    if step == "train_mm":
        for split in ("train", "dev", "test"):
            _touch(work / f"data/segments/parczech_supervisions_{split}.jsonl.gz")
            _touch(work / f"data/segments/parczech_recordings_{split}.jsonl.gz")
        conf = _touch(work / "conf/mm.yaml", "num_epochs: 1\n")
        return (
            ["local/train_mm.sh", "--model", "mm", "--model-config", "conf/mm.yaml", "data/segments", "exp/mm"],
            conf,
            work / "exp/mm/.done",
        )
    assert step == "train_tdnn"
    for split in ("train", "dev"):
        _touch(work / f"data/fbank/mustc_cuts_{split}_ali.jsonl.gz")
        _touch(work / f"exp/emb_am/{split}/emb.scp")
        _touch(work / f"exp/emb_am/{split}/emb.1.scp.done")
        _touch(work / f"exp/emb_bert/{split}/vec.scp")
        _touch(work / f"exp/emb_bert/{split}/vec.1.scp.done")
    conf = _touch(work / "conf/tdnn.yaml")
    return (
        [
            "steps/train_tdnn.sh",
            "--model-config",
            "conf/tdnn.yaml",
            "--cuts-pattern",
            "mustc_cuts_{split}_ali.jsonl.gz",
            "data/fbank",
            "exp/emb_am",
            "exp/emb_bert",
            "exp/tdnn",
        ],
        conf,
        work / "exp/tdnn/best-valid-f1.pt.done",
    )


@pytest.fixture
def work(tmp_path):
    for name in ("steps", "utils", "path.sh"):
        (tmp_path / name).symlink_to(REPO / name)
    (tmp_path / "local").symlink_to(REPO / "egs" / "parczech" / "local")  # train_mm.sh
    fake = _touch(tmp_path / "fake_cmd.py", FAKE_CMD)
    fake.chmod(0o755)
    return tmp_path


def _run(work: Path, command: list, *extra: str, fail: bool = False) -> tuple[subprocess.CompletedProcess, list]:
    calls = work / "calls.txt"
    calls.write_text("")
    env = dict(os.environ, FAKE_CALLS=str(calls))
    if fail:
        env["FAKE_FAIL"] = "1"
    out = subprocess.run(
        ["bash", command[0], "--cmd", str(work / "fake_cmd.py"), *extra, *command[1:]],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    trained = [line.split()[0] for line in calls.read_text().splitlines() if line.split()[0].startswith("train_")]
    return out, trained


@pytest.mark.parametrize("step", ["train_am", "train_bert", "train_mm", "train_tdnn"])
def test_training_steps_skip_only_when_done_and_fresh(work, step):
    command, conf, marker = _setup(work, step)
    exp = marker.parent

    # an interrupted run never looks done ...
    out, trained = _run(work, command, fail=True)
    assert out.returncode != 0 and trained == [step] and not marker.exists()
    # ... and the next run of the same options and inputs continues it
    out, trained = _run(work, command)
    assert out.returncode == 0, out.stdout + out.stderr
    assert trained == [step] and marker.is_file() and marker.read_text().startswith("options: ")
    assert "continuing the interrupted run" in out.stdout
    assert (exp / "epoch-1.pt").read_text() == "resumed\n"

    # unchanged: skipped with a log line
    out, trained = _run(work, command)
    assert out.returncode == 0 and trained == [], out.stdout + out.stderr
    assert "is done; skipping" in out.stdout

    # a changed config retrains from scratch (the old checkpoints are removed first)
    later = time.time() + 5
    os.utime(conf, (later, later))
    out, trained = _run(work, command)
    assert out.returncode == 0 and trained == [step], out.stdout + out.stderr
    assert "made with other options or inputs" in out.stdout and str(conf.relative_to(work)) in out.stdout
    assert (exp / "epoch-1.pt").read_text() == "fresh\n"
    out, trained = _run(work, command)
    assert trained == []

    # a changed option (--seed) retrains; --resume true continues from the newest checkpoint instead
    out, trained = _run(work, command, "--seed", "7")
    assert out.returncode == 0 and trained == [step] and (exp / "epoch-1.pt").read_text() == "fresh\n"
    out, trained = _run(work, command, "--seed", "8", "--resume", "true")
    assert out.returncode == 0 and trained == [step] and (exp / "epoch-1.pt").read_text() == "resumed\n"
    out, trained = _run(work, command, "--seed", "8")
    assert trained == []

    # --overwrite true always retrains
    out, trained = _run(work, command, "--seed", "8", "--overwrite", "true")
    assert out.returncode == 0 and trained == [step] and (exp / "epoch-1.pt").read_text() == "fresh\n"


@pytest.mark.parametrize("step", ["train_am", "train_bert", "train_mm", "train_tdnn"])
def test_threads_and_device_placement_are_not_part_of_the_stamp(work, step):
    """A run with other thread counts or an explicit --device cpu is the same training (run.sh --stage 3 after
    a finished run, whose text branch ran with one thread in the background); --seed is not."""
    command, _, _ = _setup(work, step)
    assert _run(work, command, "--num-threads", "1")[1] == [step]
    out, trained = _run(work, command, "--num-threads", "2", "--device", "cpu")
    assert trained == [] and "is done; skipping" in out.stdout, out.stdout + out.stderr
    assert _run(work, command, "--num-threads", "2", "--seed", "7")[1] == [step]


def test_train_opts_are_part_of_the_stamp(work):
    """Options that reach the entry point only through --train-opts (e.g. --num-epochs) count too."""
    command, _, _ = _setup(work, "train_am")
    assert _run(work, command, "--train-opts", "--num-epochs 2")[1] == ["train_am"]
    assert _run(work, command, "--train-opts", "--num-epochs 2")[1] == []
    assert _run(work, command, "--train-opts", "--num-epochs 3")[1] == ["train_am"]


def test_am_wer_is_redone_only_when_missing_or_older_than_the_model(work):
    command, _, _ = _setup(work, "train_am")
    _run(work, command)
    calls = work / "calls.txt"
    out, _ = _run(work, command)
    assert "dev: %WER 50.0" in out.stdout and "decode_am" not in calls.read_text()
    (work / "exp/am/wer_dev.txt").unlink()
    out, _ = _run(work, command)
    assert "dev: %WER 50.0" in out.stdout and "decode_am" in calls.read_text()


def test_helper_reports_what_changed(tmp_path):
    script = f"""
    set -euo pipefail
    . {REPO}/utils/fresh.sh
    echo a > in.txt
    stamp=$(make_stamp "--seed 1" in.txt missing.txt)
    is_done_and_fresh out/.done "$stamp" && exit 3
    begin_stamped out/.done "$stamp" false false out/ckpt
    [ -f out/.started ] && [ ! -f out/.done ]
    finish_stamped out/.done "$stamp"
    [ ! -f out/.started ]
    is_done_and_fresh out/.done "$stamp"
    is_done_and_fresh out/.done "$(make_stamp "--seed 2" in.txt missing.txt)" && exit 4
    echo ok
    """
    out = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.endswith("ok\n"), out.stdout + out.stderr
    assert "out is done; skipping" in out.stdout
    assert "  < options: --seed 1" in out.stdout and "  > options: --seed 2" in out.stdout
    assert "missing.txt missing" in (tmp_path / "out/.done").read_text()


def test_an_unstamped_marker_is_not_fresh(work):
    """The entry point wrote its empty marker but the step was stopped before stamping it (or the run is
    older than utils/fresh.sh): trained again, and stamped this time."""
    command, _, marker = _setup(work, "train_bert")
    assert _run(work, command)[1] == ["train_bert"]
    marker.write_text("")
    (marker.parent / ".started").write_text("options: another run\n")
    out, trained = _run(work, command)
    assert trained == ["train_bert"] and "has no stamp" in out.stdout
    assert _run(work, command)[1] == []
