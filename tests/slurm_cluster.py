"""A throwaway single-node SLURM cluster for tests: munged, slurmctld and slurmd run in the
foreground as children of the test process, with their keys, state and logs in one temporary
directory.

Outside that directory only /etc/slurm/slurm.conf is written (and removed again): the slurm-jobstep
executor inside a job drops SLURM_CONF before it calls srun, so srun must find the config at SLURM's
default path. Munge listens on its own socket and the daemons use free ports. ``stop()`` cancels
the cluster's jobs, ends exactly the processes ``start()`` launched and removes what it wrote.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

CLIENTS = ["sbatch", "squeue", "sinfo", "scontrol", "scancel", "srun"]
DAEMONS = ["munged", "slurmctld", "slurmd"]
SBIN_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
CONF = Path("/etc/slurm/slurm.conf")
MARKER = "# throwaway test cluster of topotrain's tests/slurm_cluster.py"

SLURM_CONF = """\
{marker}
ClusterName=topotrain
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MinJobAge=300
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/jobcomp.log
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName={partition} Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


def missing_requirements() -> str | None:
    """Why a SLURM cluster cannot be started here (None when it can)."""
    if os.geteuid() != 0:
        return "starting SLURM daemons needs root"
    missing = [name for name in CLIENTS + DAEMONS if shutil.which(name, path=SBIN_PATH) is None]
    if missing:
        return (
            f"SLURM/munge not installed (missing {', '.join(missing)}): "
            "apt-get install slurm-wlm munge"
        )
    if CONF.exists() and MARKER not in CONF.read_text(errors="replace"):
        return f"{CONF} belongs to another SLURM installation"
    return None


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports that are free right now."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def memory_mb() -> int:
    """90% of this machine's memory in MB (RealMemory must not exceed what slurmd finds)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(int(line.split()[1]) / 1024 * 0.9)
    raise RuntimeError("MemTotal not found in /proc/meminfo")


@dataclass
class SlurmCluster:
    """One node (``hostname -s``), one partition; ``env`` points clients at it via SLURM_CONF."""

    partition: str = "debug"
    node: str = field(default_factory=lambda: socket.gethostname().split(".")[0])
    root: Path | None = None
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    conf: Path = CONF

    @property
    def jobcomp_log(self) -> Path:
        return self.root / "jobcomp.log"

    @property
    def env(self) -> dict[str, str]:
        return dict(os.environ, SLURM_CONF=str(self.conf), PATH=SBIN_PATH)

    def start(self, timeout: float = 60) -> SlurmCluster:
        """Start munged, slurmctld and slurmd; return once the node is idle.
        Stops all on failure."""
        self.root = Path(tempfile.mkdtemp(prefix="topotrain-slurm-"))
        try:
            self._write_config()
            self._launch("munged", *self._munged_args())
            self._wait(
                lambda: (self.root / "munge/munge.socket").exists(), "munged socket", timeout
            )
            self._launch("slurmctld", "-D", "-f", str(self.conf))
            self._wait(lambda: self._run("scontrol", "ping").returncode == 0, "slurmctld", timeout)
            self._launch("slurmd", "-D", "-f", str(self.conf))
            self._wait(lambda: self.node_state() == "idle", f"node {self.node} idle", timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Cancel every job, end the daemons this object started (newest first),
        remove the state."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            self._run("scancel", f"--partition={self.partition}")
            deadline = time.monotonic() + 20
            while self.active_jobs() and time.monotonic() < deadline:
                time.sleep(0.5)
        for name in reversed(list(self.procs)):
            proc = self.procs.pop(name)
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if self.conf.exists() and MARKER in self.conf.read_text(errors="replace"):
            self.conf.unlink()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def node_state(self) -> str:
        out = self._run("sinfo", "--noheader", f"--nodes={self.node}", "--format=%T").stdout
        return out.strip().rstrip("*")

    def active_jobs(self) -> list[str]:
        """Job ids the controller still lists as pending, running or completing."""
        out = self._run("squeue", "--noheader", "--format=%i", "--states=PD,R,CG").stdout
        return out.split()

    def logs(self) -> str:
        """The end of each daemon's output (the daemons log to it in the foreground), for errors."""
        parts = []
        for path in sorted((self.root / "log").iterdir()) if self.root else []:
            parts.append(f"--- {path.name}\n{path.read_text(errors='replace')[-4000:]}")
        return "\n".join(parts)

    def _write_config(self) -> None:
        self.root.chmod(0o755)  # munged wants its socket directory reachable by every user
        for sub in ("state", "spool", "log", "munge"):
            (self.root / sub).mkdir(mode=0o755 if sub == "munge" else 0o700)
        key = self.root / "munge/munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        if self.conf.exists() and MARKER not in self.conf.read_text(errors="replace"):
            raise RuntimeError(f"{self.conf} belongs to another SLURM installation")
        self.conf.parent.mkdir(parents=True, exist_ok=True)
        ctld_port, slurmd_port = free_ports(2)
        self.conf.write_text(
            SLURM_CONF.format(
                marker=MARKER,
                node=self.node,
                root=self.root,
                ctld_port=ctld_port,
                slurmd_port=slurmd_port,
                munge_socket=self.root / "munge/munge.socket",
                cpus=os.cpu_count(),
                memory_mb=memory_mb(),
                partition=self.partition,
            )
        )

    def _munged_args(self) -> list[str]:
        munge = self.root / "munge"
        return [
            "--foreground",
            f"--socket={munge}/munge.socket",
            f"--key-file={munge}/munge.key",
            f"--pid-file={munge}/munged.pid",
            f"--seed-file={munge}/munged.seed",
            f"--log-file={self.root}/log/munged.log",
        ]

    def _launch(self, name: str, *args: str) -> None:
        exe = shutil.which(name, path=SBIN_PATH)
        with open(self.root / "log" / f"{name}.out", "wb") as out:  # the child keeps its own copy
            self.procs[name] = subprocess.Popen(
                [exe, *args], env=self.env, stdin=subprocess.DEVNULL, stdout=out, stderr=out
            )

    def _wait(self, ready, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [name for name, proc in self.procs.items() if proc.poll() is not None]
            if dead:
                raise RuntimeError(
                    f"{', '.join(dead)} exited while waiting for {what}\n{self.logs()}"
                )
            if ready():
                return
            time.sleep(0.5)
        raise TimeoutError(f"no {what} after {timeout} s\n{self.logs()}")

    def _run(self, *cmd: str) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=30)
