"""utils/slurm.pl's sbatch command line, checked against a fake sbatch/squeue/scontrol on PATH.

The fake sbatch records its arguments and runs the array tasks one after another (with
SLURM_JOB_ID, SLURM_ARRAY_JOB_ID and SLURM_ARRAY_TASK_ID set as SLURM sets them, and an empty
environment under --export=NONE), so these tests need no cluster; tests/scripts/test_slurm_pl.py
runs the real one.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

FAKE_SBATCH = r"""#!/usr/bin/env bash
# Fake sbatch: records its arguments, then runs the array tasks one after another.
state=@STATE@
printf '%s\n' "$@" > "$state/sbatch.args"
script=${@: -1}
array=1-1 output=/dev/null export=ALL
for a in "$@"; do
  case $a in
    --array=*) array=${a#--array=} ;;
    --output=*) output=${a#--output=} ;;
    --export=*) export=${a#--export=} ;;
  esac
done
job=4242 bash=$(command -v bash)
range=${array%%\%*}
: > "$state/scontrol.out"
for ((t = ${range%-*}; t <= ${range#*-}; t++)); do
  if [ "$export" = NONE ]; then
    env -i HOME="$HOME" SLURM_JOB_ID=$((job + t)) SLURM_ARRAY_JOB_ID=$job SLURM_ARRAY_TASK_ID=$t \
      "$bash" "$script" > "${output//%a/$t}" 2>&1
  else
    SLURM_JOB_ID=$((job + t)) SLURM_ARRAY_JOB_ID=$job SLURM_ARRAY_TASK_ID=$t "$bash" "$script" > "${output//%a/$t}" 2>&1
  fi
  [ $? -eq 0 ] && st=COMPLETED || st=FAILED
  echo "JobId=$((job + t)) ArrayJobId=$job ArrayTaskId=$t JobState=$st" >> "$state/scontrol.out"
done
echo $job
"""

FAKES = {
    "sbatch": FAKE_SBATCH,
    "squeue": "#!/usr/bin/env bash\nexit 0\n",  # nothing queued: the array has finished
    "scontrol": "#!/usr/bin/env bash\ncat @STATE@/scontrol.out\n",
    "scancel": "#!/usr/bin/env bash\nexit 0\n",
}


class FakeSlurm:
    def __init__(self, root: Path, slurm_pl: Path):
        self.state = root / "fake_slurm"
        self.bin = self.state / "bin"
        self.bin.mkdir(parents=True)
        for name, text in FAKES.items():
            path = self.bin / name
            path.write_text(text.replace("@STATE@", str(self.state)))
            path.chmod(0o755)
        self.slurm_pl = str(slurm_pl)

    def replace(self, name: str, text: str) -> None:
        (self.bin / name).write_text(text.replace("@STATE@", str(self.state)))

    def run(self, *args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
        (self.state / "sbatch.args").unlink(missing_ok=True)
        env = dict(os.environ, PATH=f"{self.bin}{os.pathsep}{os.environ['PATH']}", PUNCT_SLURM_POLL="0.01", **env)
        return subprocess.run([self.slurm_pl, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)

    def sbatch_args(self) -> list:
        """The arguments of the last sbatch call, without the ones slurm.pl always adds at the end."""
        args = (self.state / "sbatch.args").read_text().splitlines()
        tail = args.index("--parsable")
        return args[:tail]

    def submitted(self) -> bool:
        return (self.state / "sbatch.args").exists()


BUILTIN = ["--export=ALL", "--ntasks=1", "--partition=shared"]  # the built-in config's command


@pytest.fixture
def fake(repo_root: Path, tmp_path: Path) -> FakeSlurm:
    return FakeSlurm(tmp_path, repo_root / "utils/slurm.pl")


@pytest.fixture
def recipe(tmp_path: Path) -> Path:
    """An empty directory to run from: no conf/, no path.sh."""
    path = tmp_path / "recipe"
    path.mkdir()
    return path


def test_builtin_default_config_and_mem_per_cpu(fake, recipe):
    out = fake.run("--mem", "4G", "JOB=1:2", "log/x.JOB.log", "echo", "task", "JOB", cwd=recipe)
    assert out.returncode == 0, out.stderr
    assert fake.sbatch_args() == BUILTIN + ["--mem-per-cpu=4G", "--cpus-per-task=1"]
    all_args = (fake.state / "sbatch.args").read_text().splitlines()
    assert all_args[-5:] == ["--parsable", "--job-name=x", "--array=1-2", "--output=log/q/x.%a.out", "log/q/x.sh"]
    for j in (1, 2):
        lines = (recipe / f"log/x.{j}.log").read_text().splitlines()
        assert lines[0] == "# echo task JOB".replace("JOB", str(j)) and f"task {j}" in lines
        assert lines[-1].startswith("# Ended (code 0)")


def test_threads_gpus_time_and_throttle(fake, recipe):
    out = fake.run(
        "--gpu",
        "2",
        "--num-threads",
        "3",
        "--time",
        "2:00:00",
        "--max-jobs-run",
        "2",
        "JOB=1:3",
        "g.JOB.log",
        "true",
        cwd=recipe,
    )
    assert out.returncode == 0, out.stderr
    assert fake.sbatch_args() == BUILTIN + ["--partition=gpu", "--gres=gpu:2", "--cpus-per-task=3", "--time=2:00:00"]
    assert "--array=1-3%2" in (fake.state / "sbatch.args").read_text().splitlines()
    out = fake.run("--gpu", "0", "--mem", "0", "g.log", "true", cwd=recipe)
    assert out.returncode == 0, out.stderr
    assert fake.sbatch_args() == BUILTIN + ["--cpus-per-task=1"]


SITE_CONF = """\
# A site's config, with comments after the values.
command sbatch --export=ALL --partition=cpu   # CPU jobs
option mem=* --mem=$0 # total memory here
option mem=0
option num_threads=* --cpus-per-task=$0\t# a tab before this comment
option num_threads=1
option gpu=0   # nothing
option gpu=* --partition=gpuq --gres=gpu:$0 --comment=a#b
default gpu=0
default num_threads=1
"""


def test_recipe_conf_is_read_and_trailing_comments_are_stripped(fake, recipe):
    (recipe / "conf").mkdir()
    (recipe / "conf/slurm.conf").write_text(SITE_CONF)
    out = fake.run("--mem", "3G", "--num-threads", "2", "a.log", "true", cwd=recipe)
    assert out.returncode == 0, out.stderr
    assert fake.sbatch_args() == ["--export=ALL", "--partition=cpu", "--mem=3G", "--cpus-per-task=2"]
    out = fake.run("--gpu", "1", "a.log", "true", cwd=recipe)
    assert out.returncode == 0, out.stderr
    # a '#' inside a word is not a comment
    expected = ["--export=ALL", "--partition=cpu", "--partition=gpuq", "--gres=gpu:1", "--comment=a#b"]
    assert fake.sbatch_args() == expected


def test_config_option_beats_recipe_conf(fake, recipe, tmp_path):
    (recipe / "conf").mkdir()
    (recipe / "conf/slurm.conf").write_text(SITE_CONF)
    other = tmp_path / "other.conf"
    other.write_text("command sbatch --qos=other\noption mem=* --mem=$0\n")
    out = fake.run("--config", str(other), "--mem", "1G", "a.log", "true", cwd=recipe)
    assert out.returncode == 0, out.stderr
    assert fake.sbatch_args() == ["--qos=other", "--mem=1G"]
    out = fake.run("--config", str(tmp_path / "missing.conf"), "a.log", "true", cwd=recipe)
    assert out.returncode == 1 and "cannot read config" in out.stderr and not fake.submitted()
    # an option the config does not map is an error that names the config
    out = fake.run("--config", str(other), "--gpu", "1", "a.log", "true", cwd=recipe)
    assert out.returncode == 1 and f"--gpu=1 has no mapping in {other}" in out.stderr


def test_repository_example_config_is_the_builtin_default(fake, recipe, repo_root):
    example = str(repo_root / "conf/slurm.conf")
    for options in ([], ["--mem", "4G"], ["--mem", "0"], ["--gpu", "2", "--num-threads", "3", "--time", "1:00"]):
        assert fake.run(*options, "a.log", "true", cwd=recipe).returncode == 0
        builtin = fake.sbatch_args()
        assert fake.run("--config", example, *options, "a.log", "true", cwd=recipe).returncode == 0
        assert fake.sbatch_args() == builtin, options


def test_single_dash_options_go_to_sbatch(fake, recipe):
    out = fake.run(
        "-p", "gpu", "-V", "--mem", "1G", "-A", "proj", "-O", "JOB=1:2", "-c2", "p.JOB.log", "echo", "JOB", cwd=recipe
    )
    assert out.returncode == 0, out.stderr
    # after the mapped options, so "-p gpu" overrides the config's partition; -V is --export=ALL
    assert fake.sbatch_args() == BUILTIN + [
        "--mem-per-cpu=1G",
        "--cpus-per-task=1",
        "-p",
        "gpu",
        "--export=ALL",
        "-A",
        "proj",
        "-O",
        "-c2",
    ]
    assert "2" in (recipe / "p.2.log").read_text().splitlines()
    out = fake.run("a.log", "true", "-p", cwd=recipe)  # after the log file it is the command's
    assert out.returncode == 0 and fake.sbatch_args() == BUILTIN + ["--cpus-per-task=1"]
    out = fake.run("-p", cwd=recipe)
    assert out.returncode == 1 and not fake.submitted()


def test_job_script_sources_path_sh_without_exported_environment(fake, recipe):
    (recipe / "conf").mkdir()
    (recipe / "conf/slurm.conf").write_text("command sbatch --export=NONE\n")
    tools = recipe / "tools"
    tools.mkdir()
    (tools / "greet").write_text('#!/bin/sh\necho "hello from greet, $GREETING"\n')
    (tools / "greet").chmod(0o755)
    (recipe / "path.sh").write_text(f'export PATH={tools}:$PATH\nexport GREETING="set by path.sh"\n')
    out = fake.run("JOB=1:2", "log/h.JOB.log", "greet", cwd=recipe)
    assert out.returncode == 0, out.stderr + (recipe / "log/h.1.log").read_text()
    assert fake.sbatch_args() == ["--export=NONE"]
    for j in (1, 2):
        assert "hello from greet, set by path.sh" in (recipe / f"log/h.{j}.log").read_text()
    # a path.sh that fails fails the job, without running the command
    (recipe / "path.sh").write_text("echo broken path.sh; return 3\n")
    out = fake.run("log/b.log", "touch", "ran", cwd=recipe)
    assert out.returncode == 1 and "exit code 3" in out.stderr
    log = (recipe / "log/b.log").read_text()
    assert "broken path.sh" in log and "# Ended (code 3)" in log and not (recipe / "ran").exists()


def test_job_range_needs_job_in_the_log_name(fake, recipe):
    out = fake.run("JOB=1:3", "x.log", "echo", "JOB", cwd=recipe)
    assert out.returncode == 1
    assert "JOB=1:3 runs 3 jobs but the log file x.log does not contain JOB" in out.stderr
    assert not fake.submitted()
    out = fake.run("JOB=2:2", "x.log", "echo", "JOB", cwd=recipe)  # one job: fine
    assert out.returncode == 0, out.stderr
    assert "2" in (recipe / "x.log").read_text().splitlines()


# sbatch that answers at once and starts the task a second later (a queue, or a log that a shared file
# system shows late); squeue that fails its first three calls (a busy slurmctld), then reports an empty queue.
LATE_SBATCH = r"""#!/usr/bin/env bash
printf '%s\n' "$@" > @STATE@/sbatch.args
nohup bash -c "sleep 1; SLURM_ARRAY_TASK_ID=1 bash ${@: -1}" </dev/null >/dev/null 2>&1 &
echo 4242
"""
FLAKY_SQUEUE = r"""#!/usr/bin/env bash
n=$(( $(cat @STATE@/squeue.calls 2>/dev/null || echo 0) + 1 ))
echo $n > @STATE@/squeue.calls
if [ $n -le 3 ]; then echo "slurm_load_jobs error: Socket timed out on send/recv operation" >&2; exit 1; fi
"""


def test_squeue_errors_are_retried_and_a_late_log_is_waited_for(fake, recipe):
    fake.replace("sbatch", LATE_SBATCH)
    fake.replace("squeue", FLAKY_SQUEUE)
    fake.replace("scontrol", "#!/usr/bin/env bash\nexit 0\n")  # no state known
    out = fake.run("log/late.log", "echo", "done late", cwd=recipe)
    assert out.returncode == 0, out.stderr  # judged finished at the first squeue error before
    assert "squeue failed (exit 1: slurm_load_jobs error: Socket timed out" in out.stderr
    assert int((fake.state / "squeue.calls").read_text()) == 4
    assert "done late" in (recipe / "log/late.log").read_text()


def test_a_log_that_never_shows_its_footer_fails_after_the_wait(fake, recipe):
    fake.replace("sbatch", LATE_SBATCH.replace("sleep 1", "sleep 4"))
    fake.replace("squeue", "#!/usr/bin/env bash\nexit 1\n")  # never answers
    fake.replace("scontrol", "#!/usr/bin/env bash\nexit 0\n")
    out = fake.run("log/never.log", "true", cwd=recipe, PUNCT_SLURM_SQUEUE_PATIENCE="1", PUNCT_SLURM_LOG_WAIT="1")
    assert out.returncode == 1
    assert "squeue has failed for 1 s; judging job 4242 by its logs" in out.stderr
    assert "1 / 1 failed" in out.stderr and "no exit code in log" in out.stderr


@pytest.mark.parametrize("name", ["mustc", "parczech"])
def test_recipes_ship_a_slurm_conf_with_a_time_limit(fake, repo_root, tmp_path, name):
    recipe = repo_root / "egs" / name
    out = fake.run("--gpu", "2", "--num-threads", "6", "--mem", "16G", str(tmp_path / "t.log"), "true", cwd=recipe)
    assert out.returncode == 0, out.stderr
    args = fake.sbatch_args()
    assert "--time=12:00:00" in args and "--gres=gpu:2" in args and "--cpus-per-task=6" in args
    assert "conf/slurm.conf" in (tmp_path / "q" / "t.sh").read_text()
    out = fake.run("--time", "0:30:00", str(tmp_path / "t.log"), "true", cwd=recipe)  # a step's --time wins
    assert out.returncode == 0 and "--time=0:30:00" in fake.sbatch_args() and "--gres=gpu:2" not in fake.sbatch_args()


def test_queue_pl_options_become_sbatch_options_and_logs_show_slurm_ids(fake, recipe):
    # -tc 2 / -pe smp 3 / -sync y used to make "2", "smp" or "y" the log file, and "3" or the log the command
    out = fake.run(
        *["-tc", "2", "-pe", "smp", "3", "-sync", "y", "-cwd", "-j", "y", "-V", "JOB=1:3", "log/q.JOB.log"],
        *["echo", "task", "JOB"],
        cwd=recipe,
    )
    assert out.returncode == 0, out.stderr
    assert fake.sbatch_args() == BUILTIN + ["--cpus-per-task=3", "--export=ALL"]
    assert "--array=1-3%2" in (fake.state / "sbatch.args").read_text().splitlines()
    written = sorted(str(p.relative_to(recipe)) for p in recipe.rglob("*") if "/q/" not in f"/{p.relative_to(recipe)}")
    assert written == ["log", "log/q", "log/q.1.log", "log/q.2.log", "log/q.3.log"]
    for j in (1, 2, 3):
        lines = (recipe / f"log/q.{j}.log").read_text().splitlines()
        assert lines[2] == f"# Running on {socket.gethostname()}"
        assert lines[3] == f"# SLURM_JOB_ID={4242 + j} SLURM_ARRAY_JOB_ID=4242 SLURM_ARRAY_TASK_ID={j}"
        assert f"task {j}" in lines and re.fullmatch(r"# Accounting: time=\d+ threads=3", lines[-2])
        assert lines[-1].startswith("# Ended (code 0) at ")


def test_accounting_threads_are_the_cpus_asked_for(fake, recipe):
    out = fake.run("log/one.log", "sleep", "1", cwd=recipe)  # the config's default: one CPU
    assert out.returncode == 0, out.stderr
    lines = (recipe / "log/one.log").read_text().splitlines()
    accounting = re.fullmatch(r"# Accounting: time=(\d+) threads=1", lines[-2])
    assert accounting and int(accounting.group(1)) >= 1, lines
    out = fake.run("--num-threads", "6", "log/six.log", "true", cwd=recipe)
    assert out.returncode == 0 and "--cpus-per-task=6" in fake.sbatch_args()
    assert re.fullmatch(r"# Accounting: time=\d+ threads=6", (recipe / "log/six.log").read_text().splitlines()[-2])


@pytest.mark.parametrize(
    "options, message",
    [
        (["-l", "arch=*64"], "-l arch=*64 is a GridEngine resource request (queue.pl's -l), which sbatch does"),
        (["-sync", "n"], "-sync n: the runners always wait for their jobs"),
        (["-pe", "mpi", "4"], "-pe mpi 4: only the parallel environment smp is understood"),
        (["-tc", "x"], "-tc x: -tc takes a positive integer"),
        (["-hold_jid", "12"], "'12' right after -hold_jid would be the log file"),
    ],
)
def test_unusable_queue_pl_options_are_refused_by_name_before_submitting(fake, recipe, options, message):
    out = fake.run(*options, "x.log", "touch", "ran", cwd=recipe)
    assert out.returncode == 1 and message in out.stderr, out.stderr
    assert not fake.submitted() and list(recipe.iterdir()) == []
