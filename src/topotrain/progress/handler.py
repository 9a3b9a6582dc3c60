"""The logger plugin's handler: Snakemake's records into ``state.Study``, printed as the module
``topotrain.progress`` describes."""

from __future__ import annotations

import logging
import shutil
import sys
import threading
import time

from snakemake_interface_logger_plugins.base import LogHandlerBase

from topotrain.progress.state import Job, Study, Training, first_path, training_progress

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

    # the interface's declarations: class attributes answer its abstract properties
    writes_to_stream = True
    writes_to_file = False
    has_filter = True
    has_formatter = True
    needs_rulegraph = False

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
        if event == LogEvent.GROUP_INFO:  # its jobs' JOB_INFO announce them
            return []
        if record.levelno < logging.INFO and not self.common_settings.verbose:
            return []
        text = self.formatter_.format(record)
        if record.levelno <= logging.INFO and text.strip().startswith(CHATTER):
            return []
        return [text] if text.strip() else []

    def _finished(self, jobid: int, now: float) -> list[str]:
        """A finished job's line (elsewhere than a terminal), its training's last loss in it."""
        done = self.study.finish(jobid, now)
        if done is None or self.live:
            return []
        job, seconds = done
        return [self.study.finished_line(job, seconds, training_progress(job.log))]

    def trainings(self) -> dict[int, Training]:
        out = {}
        for jid, job in list(self.study.jobs.items()):
            if job.log:
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
                    elif self.study.jobs and time.time() - self.last_line >= QUIET_S:
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
