"""Failed jobs as one line a person reads: Snakemake's output filtered for the ``topotrain``
command.

Snakemake reports a failed job with a ``RuleException`` preamble (the script wrapper's
``CalledProcessError``) and an ``Error in rule NAME:`` block naming the job's log. The filter
passes every other line through as it comes and turns each failure into
``topotrain: <cause> (log: <path>)``, the cause being the last exception line of the job's log
(the traceback stays there), followed by one line naming the rule. Without a log (or an empty
one) the cause is the last line of Snakemake's own error (its preamble, else its block).

A config the workflow refuses (``ConfigError`` while the Snakefile is read: the schema's
problems, the checks') is its message after ``topotrain:`` and one line on where every key is
documented, Snakemake's location and traceback left out. With ``summary`` (``--report``), the
report's line per rule's code and per file added is one line: how many of each.

``CliError`` is a usage error of the command (status 2, its message on stderr). ``CLI_ENV`` tells
a job which command started the workflow, so that its errors name that
command's flags instead of config keys (``sources.runs.unknown_architecture``).
"""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path


class CliError(SystemExit):
    """A usage error of the ``topotrain`` command: exits with status 2 and the message on
    stderr."""

    def __init__(self, message: str) -> None:
        print(f"topotrain: {message}", file=sys.stderr)
        super().__init__(2)


CLI_ENV = "TOPOTRAIN_CLI"  # the workflow's environment: "analyse" when `topotrain analyse` ran it
ERROR = re.compile(r"^Error in rule (\S+):$")
PREAMBLE = "RuleException:"
HEADER = re.compile(r"^(\w+)(?: in rule \S+)? in file .*, line \d+:$")
TIMESTAMP = re.compile(r"^\[\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4}\]$")
SNAKEMAKE = (  # lines of Snakemake's own that end a preamble's message
    "Error in rule ",
    "Exiting because",
    "Shutting down",
    "WorkflowError",
    "Select jobs",
    "Execute ",
    "Complete log",
    "Finished job",
    "Removing output files",
    "Trying to restart",
    "localrule ",
    "rule ",
    PREAMBLE,
)
CONFIG_ERROR = re.compile(r'^ConfigError in file ".*", line \d+:$')  # raised reading the Snakefile
CONFIG_HINT = "  every key, its type and default: docs/config.md; in full: --verbose"
REPORT_LINES = {  # --report's line per rule's code and per file added: counted, not shown
    "code": re.compile(r"^Loading (?:script|wrapper) code for rule \S+$"),
    "files": re.compile(r"^Adding .+ \([^()]*\)\.$"),
}
EXCEPTION = re.compile(r"^((?:[A-Za-z_]\w*\.)*)([A-Za-z_]\w*)(: .*)?$")
LOG_SUFFIX = " (check log file(s) for error details)"
TAIL_BYTES = 1 << 16  # the end of a log is enough for its last exception


def log_cause(path: Path) -> str | None:
    """The last exception of a log (``Name: message``, the module path dropped, continuation
    lines joined), else its last non-empty line; None for a missing or empty log."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - TAIL_BYTES))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = [line.rstrip() for line in text.splitlines()]
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call")]
    if starts:
        for i in range(starts[-1] + 1, len(lines)):
            match = EXCEPTION.match(lines[i])
            if match and not lines[i].startswith(" "):
                rest = []
                for more in lines[i + 1 :]:
                    if not more.strip():
                        break
                    rest.append(more.strip())
                return " ".join([match[2] + (match[3] or ""), *rest])
    filled = [line.strip() for line in lines if line.strip()]
    return filled[-1] if filled else None


@dataclass
class Preamble:
    """Snakemake's ``RuleException:`` report of a job: the exception's name, its message lines
    and the lines as printed."""

    name: str = ""
    message: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=lambda: [PREAMBLE])


@dataclass
class Failure:
    """One failed job as Snakemake reported it: its rule, its block's fields, and the preamble
    (exception name and message lines) that came before the block, if any."""

    rule: str
    fields: dict[str, str] = field(default_factory=dict)
    block: list[str] = field(default_factory=list)
    preamble: Preamble | None = None

    def logs(self) -> list[str]:
        text = self.fields.get("log", "")
        text = text[: -len(LOG_SUFFIX)] if text.endswith(LOG_SUFFIX) else text
        return [p.strip() for p in text.split(", ") if p.strip()]

    def snakemake_cause(self) -> str:
        """The last line of Snakemake's error: its preamble's message, else the block's message
        (an executor's), else the block's last line that is not a field (a shell command's)."""
        if self.preamble and self.preamble.message:
            last = self.preamble.message[-1].strip()
            return f"{self.preamble.name}: {last}" if self.preamble.name else last
        if self.fields.get("message", "None") != "None":
            return self.fields["message"]
        fields = [f"    {key}: " for key in self.fields]
        lines = [line.strip() for line in self.block if not line.startswith(tuple(fields))]
        lines = [line for line in lines if line]
        return lines[-1] if lines else f"rule {self.rule} failed"

    def lines(self, workdir: Path) -> list[str]:
        """``topotrain: <cause> (log: <path>)`` and the one line naming the rule."""
        where = f"  rule {self.rule} failed"
        details = [f"{k} {self.fields[k]}" for k in ("jobid", "output") if self.fields.get(k)]
        where += f" ({', '.join(details)})" if details else ""
        logs = self.logs()
        for log in logs:
            cause = log_cause(workdir / log)
            if cause:
                return [f"topotrain: {cause} (log: {log})", where + "; the log has the rest"]
        said = "no log"
        if logs:
            written = (workdir / logs[0]).exists()
            said = f"log: {logs[0]}, {'empty' if written else 'not written'}"
        return [f"topotrain: {self.snakemake_cause()} ({said})", where]


@dataclass
class ConfigProblem:
    """A ``ConfigError`` Snakemake reported while reading the Snakefile: its message lines, and
    whether its traceback (dropped) has begun."""

    message: list[str] = field(default_factory=list)
    traceback: bool = False

    def lines(self) -> list[str]:
        message = [line for line in self.message if line.strip()] or ["invalid configuration"]
        return [f"topotrain: {message[0]}", *message[1:], CONFIG_HINT]


class FailureFilter:
    """Snakemake's output, line by line (``feed``), with each failed job's preamble and error
    block replaced by ``Failure.lines``, a config error by ``ConfigProblem.lines`` and, with
    ``summary``, the report's per-file lines by one count. ``idle`` (no output for a moment)
    and ``close`` (end of output) release what is held. Each call returns the lines to print
    now."""

    def __init__(self, workdir: str | Path = ".", summary: bool = False) -> None:
        self.workdir = Path(workdir)
        self.stamp: str | None = None  # a timestamp line, held: it may open an error block
        self.preambles: list[Preamble] = []  # waiting for their error blocks
        self.reading: Preamble | None = None  # the preamble being read
        self.traceback = False  # inside the indented traceback of a preamble
        self.failure: Failure | None = None  # the error block being read
        self.config: ConfigProblem | None = None  # the config error being read
        self.summary = summary
        self.counts = dict.fromkeys(REPORT_LINES, 0)  # the report's lines not shown yet

    def feed(self, line: str) -> list[str]:
        line = line.rstrip("\n")
        if self.summary:
            kind = next((k for k, p in REPORT_LINES.items() if p.match(line)), None)
            if kind:
                self.counts[kind] += 1
                return []
            out = self._feed(line)
            return [*self._counted(), *out] if out else out
        return self._feed(line)

    def _feed(self, line: str) -> list[str]:
        out = self._config(line)
        if out is None:
            return []
        if self.failure is not None:
            if line.startswith((" ", "\t")):
                self._field(line)
                return []
            out += self._end_failure()
        if self.reading is not None and self._in_preamble(line):
            return out
        match = ERROR.match(line)
        if match:
            self.stamp = None  # the block's own timestamp
            preamble = self.preambles.pop(0) if self.preambles else None
            self.failure = Failure(match[1], preamble=preamble)
            return out
        out += self._release_stamp()
        if line == PREAMBLE:
            self.reading = Preamble()
            return out
        if TIMESTAMP.match(line):
            self.stamp = line
            return out
        if CONFIG_ERROR.match(line) and self.reading is None:
            self.config = ConfigProblem()
            return out
        return [*out, line]

    def idle(self) -> list[str]:
        return [*self._end_config(), *self._end_failure(), *self._release_stamp()]

    def close(self) -> list[str]:
        out = self._end_preamble() + self.idle()
        for preamble in self.preambles:  # no error block came: shown as they were
            out += preamble.raw
        self.preambles = []
        return out + self._counted()

    def _config(self, line: str) -> list[str] | None:
        """Take ``line`` into the config error being read (None), else the lines its end
        releases (a list, maybe empty)."""
        if self.config is None:
            return []
        if line.startswith('  File "'):
            self.config.traceback = True
            return None
        if not self.config.traceback:
            self.config.message.append(line)
            return None
        return self._end_config()

    def _end_config(self) -> list[str]:
        config, self.config = self.config, None
        return config.lines() if config else []

    def _counted(self) -> list[str]:
        """The report's lines held back, as one line (none when there were none)."""
        code, files = self.counts.values()
        self.counts = dict.fromkeys(REPORT_LINES, 0)
        if not code and not files:
            return []
        rules, added = f"{code} rule{'s' * (code != 1)}", f"{files} file{'s' * (files != 1)}"
        return [f"report: the code of {rules} and {added} added (--plain lists each)"]

    def _field(self, line: str) -> None:
        assert self.failure is not None
        self.failure.block.append(line)
        key, sep, value = line.strip().partition(": ")
        if sep and line.startswith("    ") and not line.startswith("     "):
            self.failure.fields.setdefault(key, value)

    def _in_preamble(self, line: str) -> bool:
        """Take ``line`` into the preamble being read when it belongs there."""
        preamble = self.reading
        header = HEADER.match(line)
        indented = line.startswith((" ", "\t"))
        if not preamble.name and not preamble.message and header:
            preamble.name = header[1]
        elif indented and (self.traceback or line.lstrip().startswith("File ")):
            self.traceback = True
        elif self.traceback or TIMESTAMP.match(line) or line.startswith(SNAKEMAKE):
            self._end_preamble()
            return False
        else:
            preamble.message.append(line)
        preamble.raw.append(line)
        return True

    def _end_preamble(self) -> list[str]:
        if self.reading is not None:
            self.preambles.append(self.reading)
        self.reading, self.traceback = None, False
        return []

    def _end_failure(self) -> list[str]:
        failure, self.failure = self.failure, None
        return failure.lines(self.workdir) if failure else []

    def _release_stamp(self) -> list[str]:
        stamp, self.stamp = self.stamp, None
        return [stamp] if stamp else []


def filter_failures(lines, workdir: str | Path = ".", summary: bool = False) -> list[str]:
    """The whole of Snakemake's output ``lines`` as the ``topotrain`` command prints it."""
    errors = FailureFilter(workdir, summary)
    out = []
    for line in lines:
        out += errors.feed(line)
    return out + errors.close()


IDLE_S = 0.5  # no output from Snakemake for this long: a failed job's block is complete


def filtered(
    cmd: list[str], directory: str = ".", env: dict | None = None, summary: bool = False
) -> int:
    """Run ``cmd`` with its stderr (Snakemake's log) through ``FailureFilter`` (``summary``: the
    report's lines counted) as it comes, its stdout untouched; returns its exit status."""
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, errors="replace", env=env)
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    errors = FailureFilter(directory, summary)
    try:
        relay(lines, errors)
    except KeyboardInterrupt:  # Snakemake got it too: its last lines, then its status
        relay(lines, errors)
    return proc.wait()


CLEAR = "\r\x1b[K"  # a terminal's line cleared: the progress display redraws it


def relay(lines: queue.Queue, errors: FailureFilter) -> None:
    """Print the filtered lines until the end of the output (None)."""
    live = sys.stdout.isatty() and sys.stderr.isatty()
    while True:
        try:
            line = lines.get(timeout=IDLE_S)
        except queue.Empty:
            line, out = "", errors.idle()
        else:
            out = errors.close() if line is None else errors.feed(line)
        for text in out:  # above the display's status line on a terminal (cleared first)
            print(CLEAR + text if live else text, file=sys.stderr, flush=True)
        if line is None:
            return
