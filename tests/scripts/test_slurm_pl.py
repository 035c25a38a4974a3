"""utils/slurm.pl against a real single-node SLURM (started by the ``slurm_cluster`` fixture)."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slurm


@pytest.fixture
def slurm_pl(repo_root: Path, slurm_cluster) -> str:
    return str(repo_root / "utils/slurm.pl")


def submitted_job_id(stderr: str) -> int:
    match = re.search(r"submitted job array (\d+)", stderr)
    assert match, stderr
    return int(match.group(1))


def show_job_ids(capsys, what: str, job_id: int) -> None:
    with capsys.disabled():
        print(f"\n  [slurm] {what}: job id {job_id}", end="")


def submit_and_show(slurm_pl, args: list, cwd, capsys, what: str) -> str:
    """Runs slurm.pl with ``args`` in ``cwd``; returns the ``scontrol show job -o`` record of its job."""
    out = subprocess.run([slurm_pl, *args], capture_output=True, text=True, timeout=120, cwd=cwd)
    assert out.returncode == 0, out.stderr
    job_id = submitted_job_id(out.stderr)
    show_job_ids(capsys, what, job_id)
    return subprocess.run(["scontrol", "show", "job", "-o", str(job_id)], capture_output=True, text=True).stdout


def task_states(job_id: int) -> dict:
    out = subprocess.run(["scontrol", "show", "job", "-o", str(job_id)], capture_output=True, text=True).stdout
    states = {}
    for record in out.splitlines():
        task = re.search(r"\bArrayTaskId=(\d+)\b", record)
        state = re.search(r"\bJobState=(\S+)", record)
        if task and state:
            states[int(task.group(1))] = state.group(1)
    return states


def test_array_job_runs_every_task_and_writes_logs(slurm_pl, tmp_path, capsys):
    stamps = tmp_path / "stamps"
    stamps.mkdir()
    cmd = f"date +%s.%N > {stamps}/JOB.start; sleep 1; date +%s.%N > {stamps}/JOB.end; echo task JOB on $(hostname)"
    out = subprocess.run(
        [
            slurm_pl,
            "--max-jobs-run",
            "2",
            "--mem",
            "100M",
            "JOB=1:4",
            str(tmp_path / "log/a.JOB.log"),
            "bash",
            "-c",
            cmd,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    job_id = submitted_job_id(out.stderr)
    show_job_ids(capsys, "array of 4, --max-jobs-run 2", job_id)
    assert task_states(job_id) == {1: "COMPLETED", 2: "COMPLETED", 3: "COMPLETED", 4: "COMPLETED"}
    for j in range(1, 5):
        lines = (tmp_path / f"log/a.{j}.log").read_text().splitlines()
        assert lines[0].startswith("# bash -c 'date") and f"/{j}.start" in lines[0]
        assert lines[1].startswith("# Started at ")
        assert lines[2].startswith("# Running on ")
        assert re.fullmatch(rf"# SLURM_JOB_ID=\d+ SLURM_ARRAY_JOB_ID={job_id} SLURM_ARRAY_TASK_ID={j}", lines[3])
        assert any(line.startswith(f"task {j} on ") for line in lines)
        assert re.fullmatch(r"# Accounting: time=\d+ threads=1", lines[-2])
        assert lines[-1].startswith("# Ended (code 0) at ")
    spans = [
        (float((stamps / f"{j}.start").read_text()), float((stamps / f"{j}.end").read_text())) for j in range(1, 5)
    ]
    assert max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans) <= 2
    script = (tmp_path / "log/q/a.sh").read_text()
    assert "SLURM_ARRAY_TASK_ID" in script


def test_failing_task_fails_the_command_with_its_log(slurm_pl, tmp_path, capsys):
    out = subprocess.run(
        [
            slurm_pl,
            "JOB=1:3",
            str(tmp_path / "f.JOB.log"),
            "bash",
            "-c",
            "echo running JOB; exit $(( JOB == 2 ? 7 : 0 ))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    job_id = submitted_job_id(out.stderr)
    show_job_ids(capsys, "array with a failing task", job_id)
    assert out.returncode == 1
    assert f"1 / 3 failed, log is in {tmp_path}/f.2.log" in out.stderr
    assert "state FAILED" in out.stderr and "exit code 7" in out.stderr
    assert task_states(job_id)[2] == "FAILED"


def test_cancelled_task_is_detected_by_its_state(slurm_pl, tmp_path, capsys):
    # The task cancels itself: no exit code is written, and SLURM reports CANCELLED.
    out = subprocess.run(
        [
            slurm_pl,
            str(tmp_path / "c.log"),
            "bash",
            "-c",
            "scancel ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}; sleep 30",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    job_id = submitted_job_id(out.stderr)
    show_job_ids(capsys, "self-cancelled task", job_id)
    assert out.returncode == 1
    assert "1 / 1 failed" in out.stderr and "state CANCELLED" in out.stderr


def test_gpu_request_on_gpu_less_node_is_rejected_at_submit(slurm_pl, tmp_path):
    out = subprocess.run(
        [slurm_pl, "--gpu", "1", str(tmp_path / "g.log"), "true"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 1
    assert "sbatch refused the job" in out.stderr
    assert "--gres=gpu:1" in out.stderr and "--partition=gpu" in out.stderr


def test_odd_file_names_cannot_inject_shell(slurm_pl, tmp_path, capsys):
    marker = tmp_path / "pwned"
    log_dir = tmp_path / "log dir;$(touch x)"
    out = subprocess.run(
        [slurm_pl, "JOB=1:2", str(log_dir / "o.JOB.log"), "echo", f"JOB'; touch {marker}; '", "|", "tr", "a-z", "A-Z"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    show_job_ids(capsys, "odd file names", submitted_job_id(out.stderr))
    assert not marker.exists() and not (tmp_path / "x").exists()
    assert f"2'; TOUCH {str(marker).upper()}; '" in (log_dir / "o.2.log").read_text()


def test_interrupt_cancels_the_job_array(slurm_pl, tmp_path, capsys):
    proc = subprocess.Popen(
        [slurm_pl, "JOB=1:2", str(tmp_path / "i.JOB.log"), "sleep", "120"], stderr=subprocess.PIPE, text=True
    )
    deadline = time.time() + 30
    while not (tmp_path / "i.1.log").exists() and time.time() < deadline:
        time.sleep(0.1)
    assert (tmp_path / "i.1.log").exists(), "the job never started"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    stderr = proc.stderr.read()
    job_id = submitted_job_id(stderr)
    show_job_ids(capsys, "interrupted array", job_id)
    deadline = time.time() + 30
    while subprocess.run(["squeue", "-h", "-j", str(job_id)], capture_output=True, text=True).stdout.strip():
        assert time.time() < deadline, "tasks still queued after scancel"
        time.sleep(0.2)
    assert set(task_states(job_id).values()) == {"CANCELLED"}


def test_partition_option_and_memory_per_cpu_reach_slurm(slurm_pl, tmp_path, capsys):
    # "-p gpu" goes to sbatch after the config's --partition=shared; --mem is per CPU.
    record = submit_and_show(
        slurm_pl,
        ["-p", "gpu", "--mem", "100M", str(tmp_path / "p.log"), "echo", "on the gpu partition"],
        tmp_path,
        capsys,
        "-p gpu --mem 100M",
    )
    assert re.search(r"\bPartition=gpu\b", record), record
    assert re.search(r"\bMinMemoryCPU=100M\b", record), record
    assert "on the gpu partition" in (tmp_path / "p.log").read_text()


def test_recipe_conf_time_limit_and_cpus_reach_slurm(slurm_pl, repo_root, tmp_path, capsys):
    # egs/mustc/conf/slurm.conf gives every job --time=12:00:00; --num-threads 2 becomes 2 CPUs of the task
    record = submit_and_show(
        slurm_pl,
        ["--num-threads", "2", str(tmp_path / "t.log"), "echo", "timed"],
        repo_root / "egs" / "mustc",
        capsys,
        "egs/mustc/conf/slurm.conf, --num-threads 2",
    )
    assert re.search(r"\bTimeLimit=12:00:00\b", record), record
    assert re.search(r"\bNumCPUs=2\b", record), record
