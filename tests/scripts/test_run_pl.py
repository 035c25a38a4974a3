"""utils/run.pl: local job arrays with Kaldi's interface and log format, CPU/GPU concurrency limits."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest


@pytest.fixture
def run_pl(repo_root: Path) -> str:
    return str(repo_root / "utils/run.pl")


def test_job_array_substitutes_job_and_writes_kaldi_logs(run_pl, tmp_path):
    log = tmp_path / "log" / "echo.JOB.log"
    out = subprocess.run([run_pl, "JOB=1:3", str(log), "echo", "job", "JOB", "of", "3"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for j in (1, 2, 3):
        text = (tmp_path / "log" / f"echo.{j}.log").read_text().splitlines()
        assert text[0] == f"# echo job {j} of 3"
        assert text[1].startswith("# Started at ")
        assert f"job {j} of 3" in text
        assert re.match(r"# Ended \(code 0\) at .*, elapsed time \d+ seconds", text[-1])


def test_failure_reports_count_and_first_failing_log(run_pl, tmp_path):
    log = tmp_path / "f.JOB.log"
    out = subprocess.run(
        [run_pl, "JOB=1:4", str(log), "bash", "-c", "exit $(( JOB % 2 == 0 ? 3 : 0 ))"], capture_output=True, text=True
    )
    assert out.returncode == 1
    assert f"2 / 4 failed, log is in {tmp_path}/f.2.log" in out.stderr
    assert "# Ended (code 3)" in (tmp_path / "f.2.log").read_text()
    assert "# Ended (code 0)" in (tmp_path / "f.1.log").read_text()


def test_arguments_are_quoted_but_pipes_still_work(run_pl, tmp_path):
    marker = tmp_path / "pwned"
    log = tmp_path / "dir with space" / "q.log"
    out = subprocess.run(
        [run_pl, str(log), "echo", f"a; touch {marker}", "$(touch x)", "|", "tr", "a-z", "A-Z"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert not marker.exists() and not (tmp_path / "x").exists()
    assert f"A; TOUCH {str(marker).upper()} $(TOUCH X)" in log.read_text()


def run_timed_jobs(run_pl, tmp_path, nj, *options, env=None, seconds=0.6):
    """Runs JOB=1:nj jobs that record start, end and CUDA_VISIBLE_DEVICES; returns them per job."""
    stamps = tmp_path / "stamps"
    stamps.mkdir(exist_ok=True)
    for old in stamps.iterdir():
        old.unlink()
    cmd = (
        f"date +%s.%N > {stamps}/JOB.start; echo ${{CUDA_VISIBLE_DEVICES-unset}} > {stamps}/JOB.gpus; "
        f"sleep {seconds}; date +%s.%N > {stamps}/JOB.end"
    )
    out = subprocess.run(
        [run_pl, *options, f"JOB=1:{nj}", str(tmp_path / "s.JOB.log"), "bash", "-c", cmd],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    return [
        (
            float((stamps / f"{j}.start").read_text()),
            float((stamps / f"{j}.end").read_text()),
            (stamps / f"{j}.gpus").read_text().strip(),
        )
        for j in range(1, nj + 1)
    ]


def most_overlapping(jobs) -> int:
    return max(sum(1 for s, e, _ in jobs if s <= t < e) for t, _, _ in jobs)


def test_max_jobs_run_limits_concurrency(run_pl, tmp_path):
    # Each job records its start and end; at most two may overlap.
    assert most_overlapping(run_timed_jobs(run_pl, tmp_path, 5, "--max-jobs-run", "2")) == 2


def test_default_limit_is_the_number_of_cpus(run_pl, tmp_path):
    env = dict(os.environ, PUNCT_NPROC="3")
    assert most_overlapping(run_timed_jobs(run_pl, tmp_path, 4, env=env, seconds=1.0)) == 3
    env["PUNCT_NPROC"] = "1"
    assert most_overlapping(run_timed_jobs(run_pl, tmp_path, 3, env=env, seconds=0.3)) == 1
    # without PUNCT_NPROC: what nproc says (a fake one here), not the OpenMP thread count it honours
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "nproc").write_text('#!/bin/sh\n[ -n "$OMP_NUM_THREADS" ] && echo "$OMP_NUM_THREADS" || echo 1\n')
    (fake_bin / "nproc").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "PUNCT_NPROC"}
    env.update(PATH=f"{fake_bin}{os.pathsep}{os.environ['PATH']}", OMP_NUM_THREADS="4")
    assert most_overlapping(run_timed_jobs(run_pl, tmp_path, 3, env=env, seconds=0.3)) == 1
    # --max-jobs-run overrides the CPU count
    assert most_overlapping(run_timed_jobs(run_pl, tmp_path, 3, "--max-jobs-run", "3", env=env, seconds=1.0)) == 3
    env = dict(os.environ, PUNCT_NPROC="0")
    out = subprocess.run([run_pl, "x.log", "true"], capture_output=True, text=True, env=env)
    assert out.returncode == 1 and "PUNCT_NPROC must be a positive integer" in out.stderr


def gpu_env(**values):
    env = {k: v for k, v in os.environ.items() if k not in ("PUNCT_GPUS", "CUDA_VISIBLE_DEVICES")}
    env.update(values, PUNCT_NPROC="8")
    return env


def test_gpu_jobs_each_get_their_own_devices(run_pl, tmp_path):
    jobs = run_timed_jobs(run_pl, tmp_path, 6, "--gpu", "1", env=gpu_env(PUNCT_GPUS="4"), seconds=1.0)
    assert most_overlapping(jobs) == 4  # four GPUs, one per job
    assert sorted(g for _, _, g in jobs[:4]) == ["0", "1", "2", "3"]
    assert {g for _, _, g in jobs} <= {"0", "1", "2", "3"}
    for s1, e1, g1 in jobs:  # jobs that run at the same time never share a GPU
        for s2, e2, g2 in jobs:
            if (s1, e1) != (s2, e2) and s1 < e2 and s2 < e1:
                assert g1 != g2

    # --gpu 2 out of the devices CUDA_VISIBLE_DEVICES lists: two jobs at a time, two GPUs each
    jobs = run_timed_jobs(run_pl, tmp_path, 4, "--gpu", "2", env=gpu_env(CUDA_VISIBLE_DEVICES="4,5,6,7"))
    assert most_overlapping(jobs) == 2
    assert sorted(g for _, _, g in jobs[:2]) == ["4,5", "6,7"] and {g for _, _, g in jobs} == {"4,5", "6,7"}

    # --max-jobs-run beyond the GPU count: GPUs are shared, evenly
    jobs = run_timed_jobs(
        run_pl, tmp_path, 4, "--gpu", "1", "--max-jobs-run", "4", env=gpu_env(PUNCT_GPUS="2"), seconds=1.0
    )
    assert most_overlapping(jobs) == 4 and sorted(g for _, _, g in jobs) == ["0", "0", "1", "1"]


def test_gpu_jobs_without_a_visible_gpu_run_one_at_a_time(run_pl, tmp_path):
    jobs = run_timed_jobs(run_pl, tmp_path, 3, "--gpu", "1", env=gpu_env(CUDA_VISIBLE_DEVICES=""), seconds=0.3)
    assert most_overlapping(jobs) == 1 and {g for _, _, g in jobs} == {""}


def test_more_gpus_than_visible_are_refused(run_pl, tmp_path):
    # --gpu 8 with 4 GPUs used to hand over the 4, and torchrun then failed on cuda:4
    marker = tmp_path / "ran"
    out = subprocess.run(
        [run_pl, "--gpu", "8", str(tmp_path / "x.log"), "touch", str(marker)],
        capture_output=True,
        text=True,
        env=gpu_env(PUNCT_GPUS="4"),
    )
    assert out.returncode == 1 and not marker.exists()
    assert "--gpu 8 asks for more GPUs than the 4 visible here (0,1,2,3)" in out.stderr


def _start_gpu_job(run_pl, tmp_path, name: str, env: dict, seconds: float = 1.5) -> subprocess.Popen:
    """A run.pl --gpu 1 job that records its CUDA_VISIBLE_DEVICES and start/end times in <name>.*"""
    cmd = (
        f"date +%s.%N > {tmp_path}/{name}.start; echo $CUDA_VISIBLE_DEVICES > {tmp_path}/{name}.gpus; "
        f"sleep {seconds}; date +%s.%N > {tmp_path}/{name}.end"
    )
    return subprocess.Popen(
        [run_pl, "--gpu", "1", str(tmp_path / f"{name}.log"), "bash", "-c", cmd],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )


def _span(tmp_path, name: str) -> tuple:
    return float((tmp_path / f"{name}.start").read_text()), float((tmp_path / f"{name}.end").read_text())


def test_concurrent_run_pl_processes_get_disjoint_gpus(run_pl, tmp_path):
    # Two trainings started at once (parczech stage 4, mustc's background text branch): each run.pl
    # used to keep its own GPU table, and both jobs got GPU 0.
    env = gpu_env(PUNCT_GPUS="4")
    procs = [_start_gpu_job(run_pl, tmp_path, name, env) for name in ("a", "b")]
    assert [p.wait(timeout=30) for p in procs] == [0, 0], [p.stderr.read() for p in procs]
    (a_start, a_end), (b_start, b_end) = _span(tmp_path, "a"), _span(tmp_path, "b")
    assert a_start < b_end and b_start < a_end  # they did run at the same time
    assert sorted((tmp_path / f"{n}.gpus").read_text().strip() for n in "ab") == ["0", "1"]


def test_a_job_waits_while_other_run_pl_processes_hold_every_gpu(run_pl, tmp_path):
    env = gpu_env(PUNCT_GPUS="1")
    first = _start_gpu_job(run_pl, tmp_path, "a", env)
    deadline = time.time() + 10
    while not (tmp_path / "a.gpus").exists() and time.time() < deadline:
        time.sleep(0.05)
    second = _start_gpu_job(run_pl, tmp_path, "b", env, seconds=0.2)
    assert first.wait(timeout=30) == 0 and second.wait(timeout=30) == 0
    assert _span(tmp_path, "b")[0] >= _span(tmp_path, "a")[1]  # b started once a gave GPU 0 back
    assert "waiting for a free GPU" in second.stderr.read()
    assert (tmp_path / "b.gpus").read_text().strip() == "0"


def test_a_job_passes_its_gpus_to_an_inner_run_pl(run_pl, tmp_path):
    # The outer job holds GPUs 2,3: the inner jobs share out those two (no deadlock on the outer's locks).
    inner = (
        f"{run_pl} --gpu 1 JOB=1:2 {tmp_path}/inner.JOB.log bash -c 'echo $CUDA_VISIBLE_DEVICES > {tmp_path}/JOB.gpus'"
    )
    out = subprocess.run(
        [run_pl, "--gpu", "2", str(tmp_path / "outer.log"), "bash", "-c", inner],
        capture_output=True,
        text=True,
        env=gpu_env(CUDA_VISIBLE_DEVICES="2,3,4,5"),
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert sorted((tmp_path / f"{j}.gpus").read_text().strip() for j in (1, 2)) == ["2", "3"]


def test_job_range_needs_job_in_the_log_name(run_pl, tmp_path):
    marker = tmp_path / "ran"
    out = subprocess.run(
        [run_pl, "JOB=1:3", str(tmp_path / "x.log"), "touch", str(marker)], capture_output=True, text=True
    )
    assert out.returncode == 1
    assert f"JOB=1:3 runs 3 jobs but the log file {tmp_path}/x.log does not contain JOB" in out.stderr
    assert not marker.exists() and not (tmp_path / "x.log").exists()
    out = subprocess.run([run_pl, "JOB=2:2", str(tmp_path / "x.log"), "echo", "JOB"], capture_output=True, text=True)
    assert out.returncode == 0 and "2" in (tmp_path / "x.log").read_text().splitlines()


def test_slurm_options_are_accepted_and_ignored(run_pl, tmp_path):
    out = subprocess.run(
        [
            run_pl,
            "-p",
            "gpu",
            "-V",
            "--mem",
            "2G",
            "JOB=1:2",
            "-c4",
            "--time",
            "1:00",
            str(tmp_path / "o.JOB.log"),
            "echo",
            "JOB",
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "2" in (tmp_path / "o.2.log").read_text().splitlines()


def test_bad_options_and_usage(run_pl, tmp_path):
    out = subprocess.run([run_pl, "--bogus", "1", "x.log", "true"], capture_output=True, text=True)
    assert out.returncode == 1 and "unknown option --bogus" in out.stderr
    out = subprocess.run([run_pl, "JOB=3:1", "x.log", "true"], capture_output=True, text=True)
    assert out.returncode == 1 and "bad job range" in out.stderr
    out = subprocess.run([run_pl, "only-a-log"], capture_output=True, text=True)
    assert out.returncode == 1 and "Usage:" in out.stderr


def test_interrupt_stops_running_jobs(run_pl, tmp_path):
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    proc = subprocess.Popen(
        [
            run_pl,
            "--max-jobs-run",
            "2",
            "JOB=1:2",
            str(tmp_path / "i.JOB.log"),
            "bash",
            "-c",
            f"echo $$ > {pid_dir}/JOB; exec sleep 60",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 10
    while len(list(pid_dir.iterdir())) < 2 and time.time() < deadline:
        time.sleep(0.05)
    pids = [int(p.read_text()) for p in pid_dir.iterdir()]
    assert len(pids) == 2
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=10) == 130
    assert "interrupted" in proc.stderr.read()
    deadline = time.time() + 5
    while any(_running(pid) for pid in pids) and time.time() < deadline:
        time.sleep(0.05)
    assert not any(_running(pid) for pid in pids)


def _running(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
