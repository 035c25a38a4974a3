"""utils/run.pl: local job arrays with Kaldi's interface and log format."""

from __future__ import annotations

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


def test_max_jobs_run_limits_concurrency(run_pl, tmp_path):
    # Each job records its start and end; at most two may overlap.
    stamps = tmp_path / "stamps"
    stamps.mkdir()
    cmd = f"date +%s.%N > {stamps}/JOB.start; sleep 0.6; date +%s.%N > {stamps}/JOB.end"
    out = subprocess.run(
        [run_pl, "--max-jobs-run", "2", "JOB=1:5", str(tmp_path / "s.JOB.log"), "bash", "-c", cmd],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    spans = [(float((stamps / f"{j}.start").read_text()), float((stamps / f"{j}.end").read_text())) for j in range(1, 6)]
    most = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert most == 2


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
        [run_pl, "JOB=1:2", str(tmp_path / "i.JOB.log"), "bash", "-c", f"echo $$ > {pid_dir}/JOB; exec sleep 60"],
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
