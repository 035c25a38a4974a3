"""utils/run.pl: local job arrays with Kaldi's interface and log format, CPU/GPU concurrency limits."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest


@pytest.fixture
def run_pl(repo_root: Path) -> str:
    return str(repo_root / "utils/run.pl")


@pytest.fixture(autouse=True)
def private_gpu_locks(tmp_path, monkeypatch):
    """GPU locks in this test's own folder, and no SLURM job around run.pl (it would take no locks)."""
    monkeypatch.setenv("PUNCT_GPU_LOCK_DIR", str(tmp_path / "gpu-locks"))
    for name in ("SLURM_JOB_ID", "SLURM_JOB_GPUS", "SLURM_STEP_GPUS"):
        monkeypatch.delenv(name, raising=False)


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


def test_logs_end_with_kaldi_accounting_and_name_the_host(run_pl, tmp_path):
    out = subprocess.run(
        [run_pl, "--num-threads", "4", str(tmp_path / "t.log"), "sleep", "1"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    lines = (tmp_path / "t.log").read_text().splitlines()
    assert lines[2] == f"# Running on {socket.gethostname()}"
    accounting = re.fullmatch(r"# Accounting: time=(\d+) threads=4", lines[-2])
    assert accounting and int(accounting.group(1)) >= 1, lines
    assert lines[-1].startswith("# Ended (code 0) at ")
    out = subprocess.run([run_pl, str(tmp_path / "d.log"), "false"], capture_output=True, text=True)
    assert out.returncode == 1
    assert re.fullmatch(r"# Accounting: time=\d+ threads=1", (tmp_path / "d.log").read_text().splitlines()[-2])


def test_queue_pl_options_are_mapped_and_never_taken_for_the_log_file(run_pl, tmp_path):
    # -tc 2, -pe smp 3 and -sync y used to make "2", "smp" or "y" the log file, and "3" or the log the command (127)
    env = dict(os.environ, PUNCT_NPROC="8")
    assert most_overlapping(run_timed_jobs(run_pl, tmp_path, 4, "-tc", "2", env=env, seconds=1.0)) == 2
    work = tmp_path / "work"
    work.mkdir()
    options = ["-pe", "smp", "3", "-sync", "y", "-V", "-l", "arch=*64", "-q", "all.q", "-cwd", "-j", "y"]
    out = subprocess.run(
        [run_pl, *options, "JOB=1:2", "-tc", "1", "log/q.JOB.log", "echo", "task", "JOB"],
        capture_output=True,
        text=True,
        cwd=work,
    )
    assert out.returncode == 0, out.stderr
    assert sorted(str(p.relative_to(work)) for p in work.rglob("*")) == ["log", "log/q.1.log", "log/q.2.log"]
    for j in (1, 2):
        lines = (work / f"log/q.{j}.log").read_text().splitlines()
        assert lines[0] == f"# echo task {j}" and f"task {j}" in lines
        assert re.fullmatch(r"# Accounting: time=\d+ threads=3", lines[-2]) and "(code 0)" in lines[-1]


@pytest.mark.parametrize(
    "options, message",
    [
        (["-sync", "n"], "-sync n: the runners always wait for their jobs; only -sync y is accepted"),
        (["-pe", "mpi", "4"], "-pe mpi 4: only the parallel environment smp is understood"),
        (["-pe", "smp", "two"], "-pe smp two: -pe smp takes a positive integer"),
        (["-tc", "0"], "-tc 0: -tc takes a positive integer"),
        (["-j", "n"], "-j n: a job's output and errors always go to its one log"),
        (["-hold_jid", "12"], "'12' right after -hold_jid would be the log file"),
        (["-v", "PATH"], "'PATH' right after -v would be the log file"),
        (["-cwd", "y"], "'y' right after -cwd would be the log file"),
    ],
)
def test_unusable_queue_pl_options_are_refused_by_name_and_create_nothing(run_pl, tmp_path, options, message):
    out = subprocess.run([run_pl, *options, "x.log", "touch", "ran"], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 1 and message in out.stderr, out.stderr
    assert list(tmp_path.iterdir()) == []


NVIDIA_SMI = """#!/usr/bin/env bash
# Fake nvidia-smi: GPUs with the UUIDs given, answering --query-gpu=index,uuid and -L.
case "$*" in
  *--query-gpu=index,uuid*) @QUERY@ ;;
  -L) @LIST@ ;;
  *) exit 1 ;;
esac
"""


def fake_nvidia_smi(folder: Path, uuids: list, query: bool = True, listing: bool = True) -> Path:
    """A folder holding a fake nvidia-smi; ``query``/``listing`` False: that form fails (an older driver)."""
    folder.mkdir(parents=True)
    rows = " ".join(f"'{i}, {u}'" for i, u in enumerate(uuids))
    lines = " ".join(f"'GPU {i}: NVIDIA H100 80GB HBM3 (UUID: {u})'" for i, u in enumerate(uuids))
    text = NVIDIA_SMI.replace("@QUERY@", f"printf '%s\\n' {rows}" if query else "exit 6")
    text = text.replace("@LIST@", f"printf '%s\\n' {lines}" if listing else "exit 6")
    (folder / "nvidia-smi").write_text(text)
    (folder / "nvidia-smi").chmod(0o755)
    return folder


def _path_with(folder: Path) -> str:
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


def _wait_for(path: Path, seconds: float = 10) -> None:
    deadline = time.time() + seconds
    while not path.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert path.exists(), path


UUID_A = "GPU-0a1b2c3d-0000-1111-2222-333344445555"
UUID_B = "GPU-9f8e7d6c-0000-1111-2222-333344445555"


def test_gpu_locks_are_keyed_by_uuid_not_index(run_pl, tmp_path):
    # Two containers (or cgroups) that each show their own GPU as "GPU 0": different GPUs, so neither waits.
    lock_dir = tmp_path / "gpu-locks"
    env_a = gpu_env(CUDA_VISIBLE_DEVICES="0", PATH=_path_with(fake_nvidia_smi(tmp_path / "smi_a", [UUID_A])))
    env_b = gpu_env(CUDA_VISIBLE_DEVICES="0", PATH=_path_with(fake_nvidia_smi(tmp_path / "smi_b", [UUID_B])))
    first = _start_gpu_job(run_pl, tmp_path, "a", env_a, seconds=3)
    _wait_for(tmp_path / "a.gpus")
    second = _start_gpu_job(run_pl, tmp_path, "b", env_b, seconds=0.2)
    assert first.wait(timeout=30) == 0 and second.wait(timeout=30) == 0
    assert _span(tmp_path, "b")[1] < _span(tmp_path, "a")[1]  # b ran while a held its GPU 0
    assert "waiting for a free GPU" not in second.stderr.read()
    assert sorted(p.name for p in lock_dir.iterdir()) == [f"{UUID_A}.lock", f"{UUID_B}.lock"]
    # the same UUID behind two indices (GPU 0 in one view, GPU 1 in another): one waits for the other
    env_b = gpu_env(CUDA_VISIBLE_DEVICES="1", PATH=_path_with(fake_nvidia_smi(tmp_path / "smi_c", [UUID_B, UUID_A])))
    first = _start_gpu_job(run_pl, tmp_path, "c", env_a, seconds=1.5)
    _wait_for(tmp_path / "c.gpus")
    second = _start_gpu_job(run_pl, tmp_path, "d", env_b, seconds=0.2)
    assert first.wait(timeout=30) == 0 and second.wait(timeout=30) == 0
    assert _span(tmp_path, "d")[0] >= _span(tmp_path, "c")[1]
    assert "waiting for a free GPU" in second.stderr.read()


@pytest.mark.parametrize("query, listing, lock", [(False, True, f"{UUID_A}.lock"), (False, False, "gpu0.lock")])
def test_gpu_lock_uuid_from_nvidia_smi_list_else_the_index(run_pl, tmp_path, query, listing, lock):
    smi = fake_nvidia_smi(tmp_path / "smi", [UUID_A], query=query, listing=listing)
    out = subprocess.run(
        [run_pl, "--gpu", "1", str(tmp_path / "g.log"), "true"],
        capture_output=True,
        text=True,
        env=gpu_env(CUDA_VISIBLE_DEVICES="0", PATH=_path_with(smi)),
    )
    assert out.returncode == 0, out.stderr
    assert [p.name for p in (tmp_path / "gpu-locks").iterdir()] == [lock]


def test_gpus_bound_by_slurm_are_not_locked(run_pl, tmp_path):
    # Two SLURM jobs on one node each see their own GPU as CUDA_VISIBLE_DEVICES=0 (the same UUID view here):
    # SLURM keeps them apart, so the second must not wait for the first.
    smi = fake_nvidia_smi(tmp_path / "smi", [UUID_A])
    env_a = gpu_env(CUDA_VISIBLE_DEVICES="0", SLURM_JOB_ID="101", PATH=_path_with(smi))
    env_b = gpu_env(CUDA_VISIBLE_DEVICES="0", SLURM_JOB_ID="102", SLURM_JOB_GPUS="3", PATH=_path_with(smi))
    first = _start_gpu_job(run_pl, tmp_path, "a", env_a, seconds=3)
    _wait_for(tmp_path / "a.gpus")
    second = _start_gpu_job(run_pl, tmp_path, "b", env_b, seconds=0.2)
    assert first.wait(timeout=30) == 0 and second.wait(timeout=30) == 0
    assert _span(tmp_path, "b")[1] < _span(tmp_path, "a")[1]
    assert (tmp_path / "a.gpus").read_text().strip() == (tmp_path / "b.gpus").read_text().strip() == "0"
    assert not (tmp_path / "gpu-locks").exists()
    # a SLURM job without a GPU binding (PUNCT_GPUS names the devices) still locks them
    out = subprocess.run(
        [run_pl, "--gpu", "1", str(tmp_path / "g.log"), "true"],
        capture_output=True,
        text=True,
        env=gpu_env(PUNCT_GPUS="1", SLURM_JOB_ID="103", PATH=_path_with(smi)),
    )
    assert out.returncode == 0, out.stderr
    assert [p.name for p in (tmp_path / "gpu-locks").iterdir()] == [f"{UUID_A}.lock"]
