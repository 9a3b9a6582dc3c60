"""The progress display's state: the study's jobs as Snakemake announces them, each running
training's latest evaluation read from its log, the ETA, and the lines that show them (no Snakemake
import: unit-tested on its own)."""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

TRAIN_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d+ INFO topotrain\.training\.(?:train|ensemble): "
    r"(?:seed (\d+) )?step (\d+)/(\d+): val loss (\S+?),"
)
TAIL_BYTES = 1 << 15  # a training log's last lines: enough for its latest evaluations


@dataclass
class Training:
    """A running training's latest evaluation (``training_progress``)."""

    step: int
    steps: int
    val_loss: float
    eta_s: float | None  # from the rate between the log's first and last evaluation lines
    members: int = 1  # an ensemble job: its seeds (the slowest one's step is shown)


def training_progress(log: str | Path | None) -> Training | None:
    """The latest evaluation in a training job's log: step of steps, validation loss, ETA from
    the steps per second between the first and the last evaluation line of the tail read; for an
    ensemble's log (lines per seed), the slowest seed's. None without a log or such a line."""
    if not log:
        return None
    try:
        with open(log, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - TAIL_BYTES))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    seen: dict[str | None, list[tuple[float, int, int, float]]] = {}
    for line in text.splitlines():
        match = TRAIN_LINE.match(line.rsplit("\r", 1)[-1])
        if not match:
            continue
        stamp, seed, step, steps, loss = match.groups()
        t = time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S"))
        try:
            value = float(loss)
        except ValueError:
            value = math.nan
        seen.setdefault(seed, []).append((t, int(step), int(steps), value))
    if not seen:
        return None
    slowest = min(seen.values(), key=lambda rows: rows[-1][1])
    (t0, s0, _, _), (t1, s1, steps, loss) = slowest[0], slowest[-1]
    rate = (s1 - s0) / (t1 - t0) if t1 > t0 and s1 > s0 else None
    eta = (steps - s1) / rate if rate else None
    return Training(s1, steps, loss, eta, members=len(seen))


def benchmark_seconds(benchmark: str | None) -> list[float]:
    """Earlier runs' durations of a job's rule: column ``s`` of the benchmark files beside the
    job's own (same folder: for training, the same model), its own first when it exists."""
    if not benchmark:
        return []
    path = Path(benchmark)
    times = []
    for tsv in sorted(path.parent.glob("*.tsv")) if path.parent.is_dir() else []:
        try:
            header, row = tsv.read_text().splitlines()[:2]
            times.append(float(row.split("\t")[header.split("\t").index("s")]))
        except (OSError, ValueError, IndexError):
            continue
    return times


@dataclass
class Job:
    rule: str
    wildcards: dict
    log: str | None = None
    benchmark: str | None = None
    threads: int = 1
    started: float | None = None

    def name(self) -> str:
        said = " ".join(f"{k}={v}" for k, v in self.wildcards.items())
        return f"{self.rule} ({said})" if said else self.rule


@dataclass
class Study:
    """The study's jobs as Snakemake announces them, and the lines that show them."""

    cores: int = 1
    done: int = 0
    total: int = 0
    planned: dict[str, int] = field(default_factory=dict)  # rule -> jobs to run
    finished: dict[str, list[float]] = field(default_factory=dict)  # rule -> durations here
    earlier: dict[str, list[float]] = field(default_factory=dict)  # rule -> benchmarks' durations
    threads: dict[str, int] = field(default_factory=dict)
    jobs: dict[int, Job] = field(default_factory=dict)  # announced (so running), not finished
    starts: dict[int, float] = field(default_factory=dict)  # started, not yet announced
    failed: int = 0
    began: float = field(default_factory=time.time)

    def plan(self, stats: dict) -> str:
        """RUN_INFO's job counts (rule → count, and "total"): the line announcing the run."""
        self.planned = {k: int(v) for k, v in stats.items() if k != "total"}
        self.total = int(stats.get("total", sum(self.planned.values())))
        counts = ", ".join(f"{rule} {n}" for rule, n in self.planned.items())
        return f"{self.total} jobs to run: {counts}"

    def announce(self, jobid: int, job: Job, now: float | None = None) -> None:
        """A job's JOB_INFO, which Snakemake logs as the job starts (after JOB_STARTED)."""
        job.started = self.starts.pop(jobid, now if now is not None else time.time())
        self.jobs[jobid] = job
        self.threads.setdefault(job.rule, job.threads)
        if job.rule not in self.earlier:
            self.earlier[job.rule] = benchmark_seconds(job.benchmark)

    def start(self, jobids, now: float) -> None:
        """JOB_STARTED: each job's start, kept until its JOB_INFO announces it."""
        for jobid in jobids:
            if jobid not in self.jobs:
                self.starts[jobid] = now

    def finish(self, jobid: int, now: float) -> tuple[Job, float] | None:
        """The finished job and its duration (None for a job never announced)."""
        job = self.jobs.pop(jobid, None)
        if job is None:
            return None
        self.done += 1  # PROGRESS, logged next, sets the count exactly
        seconds = now - job.started
        self.finished.setdefault(job.rule, []).append(seconds)
        return job, seconds

    def mean_seconds(self, rule: str) -> float | None:
        times = self.finished.get(rule) or self.earlier.get(rule)
        return sum(times) / len(times) if times else None

    def eta(self, now: float, trainings: dict[int, Training] | None = None):
        """(seconds, untimed): the CPU-seconds left over the cores — each job still to run at its
        rule's mean duration × threads, each running job at its training's ETA or its rule's mean
        less its time so far — and the number of jobs with no duration to go by."""
        trainings = trainings or {}
        left, untimed = 0.0, 0
        busy: dict[str, int] = {}
        for jid, job in self.jobs.items():
            busy[job.rule] = busy.get(job.rule, 0) + 1
            mean = self.mean_seconds(job.rule)
            t = trainings.get(jid)
            if t is not None and t.eta_s is not None:
                left += t.eta_s * job.threads
            elif mean is not None:
                left += max(mean - (now - job.started), 0.0) * job.threads
            else:
                untimed += 1
        for rule, n in self.planned.items():
            waiting = max(n - len(self.finished.get(rule, [])) - busy.get(rule, 0), 0)
            mean = self.mean_seconds(rule)
            if mean is None:
                untimed += waiting
            else:
                left += waiting * mean * self.threads.get(rule, 1)
        return left / max(self.cores, 1), untimed

    def status(self, now: float, trainings: dict[int, Training] | None = None) -> str:
        """The one status line: jobs done of total, elapsed, the study's ETA, each running
        training's step, loss and ETA, the other running jobs counted by rule."""
        trainings = trainings or {}
        pct = f" ({100 * self.done / self.total:.0f} %)" if self.total else ""
        parts = [f"{self.done}/{self.total} jobs{pct}", f"elapsed {clock(now - self.began)}"]
        left, untimed = self.eta(now, trainings)
        if left > 0 or not untimed:
            more = f" + {untimed} untimed" if untimed else ""
            parts.append(f"ETA {clock(left)}{more}")
        if self.failed:
            parts.append(f"{self.failed} failed")
        others: dict[str, int] = {}
        for jid, job in self.jobs.items():
            t = trainings.get(jid)
            if t is None:
                others[job.rule] = others.get(job.rule, 0) + 1
                continue
            parts.append(training_text(job, t))
        parts += [f"{n} × {rule}" for rule, n in others.items()]
        return " · ".join(parts)

    def finished_line(self, job: Job, seconds: float | None, training: Training | None) -> str:
        took = f" in {clock(seconds)}" if seconds is not None else ""
        loss = (
            f", val loss {training.val_loss:.4g}"
            if training and math.isfinite(training.val_loss)
            else ""
        )
        return f"[{self.done}/{self.total}] done: {job.name()}{took}{loss}"


def training_text(job: Job, t: Training) -> str:
    said = " ".join(str(v) for v in job.wildcards.values())
    members = f" ({t.members} seeds, slowest)" if t.members > 1 else ""
    eta = f", {clock(t.eta_s)} left" if t.eta_s is not None else ""
    return f"{said}{members} step {t.step}/{t.steps} val loss {t.val_loss:.3f}{eta}"


def clock(seconds: float | None) -> str:
    """h:mm:ss (m:ss under an hour)."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    s = int(round(max(seconds, 0)))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def first_path(files) -> str | None:
    """A job's first log (Snakemake's formatted file list: "path" or "path (annotation)")."""
    for f in files or []:
        return str(f).split(" (", 1)[0]
    return None
