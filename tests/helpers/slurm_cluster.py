"""A real single-node SLURM cluster for the tests (munge + slurmctld + slurmd on localhost).

Started as root without systemd, configured from ``slurmd -C``, and stopped by the PIDs
it recorded.  Written for Debian's slurm-wlm 22.05; see ../shared/REFERENCE.md for
the settings that matter (DefMemPerCPU, EnforcePartLimits, MinJobAge).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

# The daemons and mungekey live in sbin, which a non-login PATH may lack.
for _sbin in ("/usr/sbin", "/sbin"):
    if _sbin not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + _sbin

SLURM_BINARIES = ("slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "munged")
CONF_DIR = Path("/etc/slurm")
SPOOL_CTLD = Path("/var/spool/slurmctld")
SPOOL_D = Path("/var/spool/slurmd")
LOG_DIR = Path("/var/log/slurm")
CTLD_PID = Path("/run/slurmctld.pid")
SLURMD_PID = Path("/run/slurmd.pid")
MUNGE_PID = Path("/run/munge/munged.pid")


def why_slurm_cannot_run() -> str | None:
    """None when this machine can run the test cluster, else the reason."""
    if os.geteuid() != 0:
        return "SLURM tests need root (to start munged, slurmctld and slurmd)"
    missing = [b for b in SLURM_BINARIES if shutil.which(b) is None and not Path(f"/usr/sbin/{b}").exists()]
    if missing:
        return f"SLURM not installed (missing {', '.join(missing)}); run ./install.sh as root"
    return None


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kwargs)


def _pid_alive(pid_file: Path, name: str) -> int | None:
    try:
        pid = int(pid_file.read_text().strip())
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except (OSError, ValueError):
        return None
    return pid if comm == name else None


def _node_line() -> str:
    line = _run(["slurmd", "-C"]).stdout.splitlines()[0]
    fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
    keep = ["CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "RealMemory"]
    return " ".join(f"{k}={fields[k]}" for k in keep if k in fields)


@dataclass
class SlurmCluster:
    node: str = field(default_factory=lambda: socket.gethostname().split(".")[0])
    started_pids: list[int] = field(default_factory=list)

    def write_config(self) -> None:
        CONF_DIR.mkdir(parents=True, exist_ok=True)
        node_line = _node_line()
        cpus = int(node_line.split("CPUs=")[1].split()[0])
        memory = int(node_line.split("RealMemory=")[1].split()[0])
        (CONF_DIR / "gres.conf").unlink(missing_ok=True)
        (CONF_DIR / "slurm.conf").write_text(
            "\n".join(
                [
                    "# written by punct tests/helpers/slurm_cluster.py: one node, no systemd/cgroups/accounting",
                    "ClusterName=punct-test",
                    f"SlurmctldHost={self.node}(127.0.0.1)",
                    "AuthType=auth/munge",
                    "CredType=cred/munge",
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    f"StateSaveLocation={SPOOL_CTLD}",
                    f"SlurmdSpoolDir={SPOOL_D}",
                    f"SlurmctldPidFile={CTLD_PID}",
                    f"SlurmdPidFile={SLURMD_PID}",
                    f"SlurmctldLogFile={LOG_DIR}/slurmctld.log",
                    f"SlurmdLogFile={LOG_DIR}/slurmd.log",
                    "ProctrackType=proctrack/linuxproc",
                    "TaskPlugin=task/none",
                    "JobAcctGatherType=jobacct_gather/none",
                    "AccountingStorageType=accounting_storage/none",
                    "JobCompType=jobcomp/none",
                    "SelectType=select/cons_tres",
                    "SelectTypeParameters=CR_Core_Memory",
                    # Without a per-CPU default every job asks for the whole node's memory.
                    f"DefMemPerCPU={memory // cpus}",
                    # Impossible requests (e.g. GPUs on a GPU-less node) fail at submit time.
                    "EnforcePartLimits=ALL",
                    "SchedulerType=sched/backfill",
                    "SchedulerParameters=batch_sched_delay=0",
                    "MpiDefault=none",
                    "SwitchType=switch/none",
                    "MailProg=/bin/true",
                    "ReturnToService=2",
                    "InactiveLimit=0",
                    # Finished jobs stay visible to scontrol for this long (slurm.pl reads their state).
                    "MinJobAge=300",
                    "KillWait=5",
                    "GresTypes=gpu",
                    f"NodeName={self.node} NodeAddr=127.0.0.1 {node_line} State=UNKNOWN",
                    "PartitionName=shared Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
                    "PartitionName=gpu Nodes=ALL MaxTime=INFINITE State=UP",
                    "",
                ]
            )
        )

    def start(self, wait_seconds: float = 60.0) -> SlurmCluster:
        self.stop()
        for d in (SPOOL_CTLD, SPOOL_D, LOG_DIR, Path("/run/munge"), Path("/var/log/munge"), Path("/var/lib/munge")):
            d.mkdir(parents=True, exist_ok=True)
        for d in (SPOOL_CTLD, SPOOL_D):  # fresh state: no jobs left from an earlier run
            for child in d.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        _run(["chown", "munge:munge", "/run/munge", "/var/log/munge", "/var/lib/munge"])
        key = Path("/etc/munge/munge.key")
        if not key.exists() or key.stat().st_size == 0:
            _run(["mungekey", "--create", f"--keyfile={key}"])
        _run(["chown", "munge:munge", "/etc/munge", str(key)])
        os.chmod("/etc/munge", 0o700)
        os.chmod(key, 0o400)
        self.write_config()

        _run(["runuser", "-u", "munge", "--", "/usr/sbin/munged"])
        _run(["/usr/sbin/slurmctld"])
        _run(["/usr/sbin/slurmd", "-N", self.node])
        deadline = time.time() + 10
        while time.time() < deadline and not (_pid_alive(CTLD_PID, "slurmctld") and _pid_alive(SLURMD_PID, "slurmd")):
            time.sleep(0.1)
        self.started_pids = [
            p
            for p in (
                _pid_alive(MUNGE_PID, "munged"),
                _pid_alive(CTLD_PID, "slurmctld"),
                _pid_alive(SLURMD_PID, "slurmd"),
            )
            if p
        ]
        self._wait_idle(wait_seconds)
        return self

    def _wait_idle(self, wait_seconds: float) -> None:
        deadline = time.time() + wait_seconds
        state = ""
        while time.time() < deadline:
            out = subprocess.run(["sinfo", "-h", "-n", self.node, "-o", "%T"], capture_output=True, text=True)
            state = out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""
            if state in ("idle", "mixed", "allocated"):
                return
            if state.startswith(("drain", "down", "inval")):
                subprocess.run(["scontrol", "update", f"nodename={self.node}", "state=resume"], capture_output=True)
            time.sleep(0.2)
        logs = "\n".join(
            p.read_text()[-2000:] for p in (LOG_DIR / "slurmctld.log", LOG_DIR / "slurmd.log") if p.exists()
        )
        raise RuntimeError(f"SLURM node not idle after {wait_seconds}s (state '{state}')\n{logs}")

    def stop(self) -> None:
        """Cancels all jobs and stops the daemons this machine's pid files name."""
        if _pid_alive(CTLD_PID, "slurmctld"):
            jobs = subprocess.run(["squeue", "-h", "-o", "%A"], capture_output=True, text=True).stdout.split()
            if jobs:
                subprocess.run(["scancel", *sorted(set(jobs))], capture_output=True)
            subprocess.run(["scontrol", "shutdown"], capture_output=True)
        for pid_file, name in ((SLURMD_PID, "slurmd"), (CTLD_PID, "slurmctld"), (MUNGE_PID, "munged")):
            pid = _pid_alive(pid_file, name)
            if pid is None:
                continue
            os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                if _pid_alive(pid_file, name) is None:
                    break
                time.sleep(0.1)
            else:
                os.kill(pid, signal.SIGKILL)
            pid_file.unlink(missing_ok=True)
