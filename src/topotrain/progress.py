"""One progress display for a whole study, through Snakemake 9's logger-plugin interface
(``snakemake --logger topotrain``; ``make study`` and ``topotrain run`` use it, ``--plain`` or
``make study LOGGER=`` give Snakemake's own output).

What it shows: jobs done of total, the study's ETA, and each running training's step, validation
loss and ETA (read from the tail of its log, the lines ``training.train`` / ``training.ensemble``
write every ``eval_interval`` steps). No job's block: a job is one line when it finishes. The
ETA of the study sums, over the jobs still to run, each rule's mean duration × its threads, divided
by the cores: the durations come from this run's finished jobs, else from the benchmark files
Snakemake wrote in earlier runs beside the job's own (``results/benchmarks/…``, column ``s``), and
the running trainings' own ETAs; rules without either are counted as "+ N untimed".

Where it goes: on a terminal (stdout a TTY) one status line redrawn in place every second, messages
(errors, warnings, Snakemake's notes) printed above it on stderr; elsewhere (CI, a cluster's log,
a pipe) one line per finished job and, when nothing finished for a minute, one line on what is
running. Failures keep Snakemake's own text (its formatter), so ``topotrain run``'s one-line cause
and ``--show-failed-logs`` work as before. A dry run (``-n``) prints the job counts only.

``Study`` holds the state and composes the lines (unit-tested without Snakemake); ``LogHandler``
is the plugin's handler (module ``snakemake_logger_plugin_topotrain`` exports it).
"""

from __future__ import annotations

import logging
import math
import re
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from snakemake_interface_logger_plugins.base import LogHandlerBase

TRAIN_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d+ INFO topotrain\.training\.(?:train|ensemble): "
    r"(?:seed (\d+) )?step (\d+)/(\d+): val loss (\S+?),"
)
TAIL_BYTES = 1 << 15  # a training log's last lines: enough for its latest evaluations
LIVE_S = 1.0  # the status line's refresh on a terminal
QUIET_S = 60.0  # elsewhere: a line on what is running after this long without one
CHATTER = (  # Snakemake's notes the display replaces
    "Select jobs to execute",
    "Execute ",
    "Finished jobid",
    "Assuming unrestricted shared filesystem",
    "Using shell:",
    "Provided cores:",
    "Rules claiming more threads",
    "Conda environments: ignored",
    "Singularity containers: ignored",
    "Building DAG of jobs",
    "Job stats:",
)


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
    jobs: dict[int, Job] = field(default_factory=dict)  # announced, not finished
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
        for jobid in jobids:
            if jobid in self.jobs:
                self.jobs[jobid].started = self.jobs[jobid].started or now
            else:
                self.starts[jobid] = now

    def finish(self, jobid: int, now: float) -> tuple[Job, float | None] | None:
        """The finished job and its duration (None if its start was not seen)."""
        job = self.jobs.pop(jobid, None)
        if job is None:
            return None
        self.done += 1  # PROGRESS, logged next, sets the count exactly
        seconds = now - job.started if job.started is not None else None
        if seconds is not None:
            self.finished.setdefault(job.rule, []).append(seconds)
        return job, seconds

    def running(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.started is not None]

    def mean_seconds(self, rule: str) -> float | None:
        times = self.finished.get(rule) or self.earlier.get(rule)
        return sum(times) / len(times) if times else None

    def eta(self, now: float, trainings: dict[int, Training] | None = None):
        """(seconds, untimed): the CPU-seconds left over the cores — each job still to run at its
        rule's mean duration × threads, each running job at its training's ETA or its rule's mean
        less its time so far — and the number of jobs with no duration to go by."""
        trainings = trainings or {}
        left, untimed = 0.0, 0
        running = {jid: j for jid, j in self.jobs.items() if j.started is not None}
        busy: dict[str, int] = {}
        for jid, job in running.items():
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
            if job.started is None:
                continue
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


class LogHandler(LogHandlerBase):
    """The plugin's handler: Snakemake's records into ``Study``; see the module's docstring."""

    def __post_init__(self) -> None:
        from snakemake.logging import DefaultFormatter

        s = self.common_settings
        self.formatter_ = DefaultFormatter(s.quiet, s.show_failed_logs)
        self.out, self.err = sys.stdout, sys.stderr
        self.live = bool(getattr(self.out, "isatty", lambda: False)())
        self.study = Study()
        self.lock = threading.RLock()
        self.drawn = False
        self.last_line = time.time()
        self.stop = threading.Event()
        self.ticker = None
        if not s.dryrun:
            self.ticker = threading.Thread(target=self._tick, daemon=True)
            self.ticker.start()

    # the interface's declarations
    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return True

    @property
    def has_formatter(self) -> bool:
        return True

    @property
    def needs_rulegraph(self) -> bool:
        return False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            with self.lock:
                for text in self.handle_record(record):
                    self.say(text)
        except Exception:  # a display must never stop the workflow
            self.handleError(record)

    def handle_record(self, record: logging.LogRecord) -> list[str]:
        """The lines one record prints (the state updated)."""
        from snakemake_interface_logger_plugins.common import LogEvent

        event = getattr(record, "event", None)
        now = time.time()
        study = self.study
        if event == LogEvent.RESOURCES_INFO and getattr(record, "cores", None):
            study.cores = int(record.cores)
            return []
        if event == LogEvent.RUN_INFO:
            stats = getattr(record, "stats", None) or {}
            return [record.getMessage() if self.common_settings.dryrun else study.plan(stats)]
        if event == LogEvent.JOB_INFO:
            if not self.common_settings.dryrun:
                job = Job(
                    record.rule_name,
                    dict(record.wildcards or {}),
                    first_path(record.log),
                    str(record.benchmark) if record.benchmark else None,
                    int(record.threads or 1),
                )
                study.announce(int(record.jobid), job, now)
            return []
        if event == LogEvent.JOB_STARTED:
            study.start([int(j) for j in record.jobs], now)
            return []
        if event == LogEvent.JOB_FINISHED:
            return self._finished(int(record.job_id), now)
        if event == LogEvent.PROGRESS:
            study.done, study.total = int(record.done), int(record.total)
            return []
        if event in (LogEvent.JOB_ERROR, LogEvent.GROUP_ERROR):
            study.failed += 1
            study.jobs.pop(getattr(record, "jobid", None), None)
            return [self.formatter_.format(record)]
        if event == LogEvent.SHELLCMD:
            return [self.formatter_.format(record)] if self.common_settings.printshellcmds else []
        if event in (LogEvent.DEBUG_DAG, LogEvent.RULEGRAPH, LogEvent.WORKFLOW_STARTED):
            return []
        if event == LogEvent.GROUP_INFO:
            return []
        if record.levelno < logging.INFO and not self.common_settings.verbose:
            return []
        text = self.formatter_.format(record)
        if record.levelno <= logging.INFO and text.strip().startswith(CHATTER):
            return []
        return [text] if text.strip() else []

    def _finished(self, jobid: int, now: float) -> list[str]:
        job = self.study.jobs.get(jobid)
        training = training_progress(job.log) if job else None
        done = self.study.finish(jobid, now)
        if done is None:
            return []
        line = self.study.finished_line(done[0], done[1], training)
        return [] if self.live else [line]

    def trainings(self) -> dict[int, Training]:
        out = {}
        for jid, job in list(self.study.jobs.items()):
            if job.started is not None and job.log:
                t = training_progress(job.log)
                if t is not None:
                    out[jid] = t
        return out

    def say(self, text: str) -> None:
        """Print ``text`` on stderr above the status line (cleared, then redrawn)."""
        self._clear()
        print(text, file=self.err, flush=True)
        self.last_line = time.time()
        if self.live:
            self._draw()

    def _clear(self) -> None:
        if self.live and self.drawn:
            self.out.write("\r\x1b[K")
            self.out.flush()
            self.drawn = False

    def _draw(self) -> None:
        if not self.study.total:
            return
        width = shutil.get_terminal_size((120, 20)).columns - 1
        line = self.study.status(time.time(), self.trainings())
        if len(line) > width:
            line = line[: width - 1] + "…"
        self.out.write("\r\x1b[K" + line)
        self.out.flush()
        self.drawn = True

    def _tick(self) -> None:
        while not self.stop.wait(LIVE_S):
            with self.lock:
                try:
                    if self.live:
                        self._draw()
                    elif self.study.running() and time.time() - self.last_line >= QUIET_S:
                        self.say("running: " + self.study.status(time.time(), self.trainings()))
                except Exception:  # noqa: BLE001 - the display must never stop the workflow
                    pass

    def close(self) -> None:
        self.stop.set()
        with self.lock:
            if self.live and self.drawn:
                self._draw()
                self.out.write("\n")
                self.out.flush()
                self.drawn = False
        super().close()
