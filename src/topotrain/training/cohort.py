"""The ensemble inside the workflow's per-seed training jobs: one set of outputs per (model, seed),
every unfinished seed of a model trained at once.

Snakemake keeps one job per (model, seed), so that each seed keeps its own outputs and its own
rerun: a job that produced several seeds' files would rerun, and so rerun everything downstream of,
every seed it holds whenever one seed is added. With ``train.ensemble`` each per-seed job
(``train_member``) takes its model's lock (``ensemble.lock`` beside the seeds' state folders), then:

1. if an earlier job of the model trained its seed (the member's files staged in
   ``<state_dir>/staged/`` under this run's fingerprint), it moves them into its outputs: done;
2. else it trains, as one ensemble (``ensemble.train_ensemble``), its own seed and every other
   configured seed of the model that is neither finished (its outputs there, with this run's
   fingerprint in ``.fingerprint``) nor staged; stages each member; then takes its own.

So the first job of a model trains all its seeds and the others only move files; adding a seed to a
finished study runs that seed's job alone, which trains only it (the finished members are neither
retrained nor touched: tests/test_cohort.py). A killed ensemble resumes from its members' states as
``train_ensemble`` resumes. A member that diverges is staged as nothing: its own job trains it again
alone and stops with its own error.

Jobs waiting for the lock hold their slot idle (a GPU share; on CPU a core), so the train rule's
priority starts every model's first seed before any other. The lock is ``fcntl.flock`` on a file:
on a cluster, keep a model's training jobs on one node's local disk, or turn the ensemble off.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from topotrain.io import atomic_write_text
from topotrain.training.ensemble import train_ensemble
from topotrain.training.ensemble_members import Setup, ensemble_setup, member_key
from topotrain.training.model import GPTConfig
from topotrain.training.run_state import published_files
from topotrain.training.train import TrainConfig

log = logging.getLogger(__name__)

LOCK = "ensemble.lock"  # in the folder above the seeds' state folders
STAGED = "staged"  # in a seed's state folder: its member's files, trained by another seed's job
FINGERPRINT = ".fingerprint"  # beside a member's files: the fingerprint they were trained under


@dataclass(frozen=True)
class Seat:
    """One seed of the model: its config and folders (outputs; state, with its staged files)."""

    cfg: TrainConfig
    out_dir: Path
    state_dir: Path

    @property
    def staged(self) -> Path:
        return self.state_dir / STAGED

    def files(self, folder: Path) -> list[Path]:
        """The member's files in ``folder``, as ``publish`` writes them (``published_files``)."""
        files = published_files(folder, self.cfg.checkpoint_steps())
        return [Path(p) for p in [*files["checkpoints"], files["metrics"], files["evals"]]]


def seats(cfg: TrainConfig, out_dir: str | Path, state_dir: str | Path, seeds) -> list[Seat]:
    """One seat per seed of ``seeds`` and ``cfg.seed``, in seed order; each seed's folders are its
    run's folders' siblings named ``seed<N>`` (the train rule's layout)."""
    out_dir, state_dir = Path(out_dir), Path(state_dir)
    for folder in (out_dir, state_dir):
        if folder.name != f"seed{cfg.seed}":
            raise ValueError(f"{folder}: an ensemble member's folder must be named seed{cfg.seed}")
    return [
        Seat(replace(cfg, seed=s), out_dir.parent / f"seed{s}", state_dir.parent / f"seed{s}")
        for s in sorted({int(s) for s in seeds} | {cfg.seed})
    ]


def holds(seat: Seat, folder: Path, key: str) -> bool:
    """Whether ``folder`` holds all of the member's files, trained under ``key``."""
    mark = folder / FINGERPRINT
    return (
        mark.is_file()
        and mark.read_text().strip() == key
        and all(p.is_file() for p in seat.files(folder))
    )


def finished(seat: Seat, key: str) -> bool:
    """Whether the member's files under ``key`` are in its outputs or staged for its job."""
    return holds(seat, seat.out_dir, key) or holds(seat, seat.staged, key)


@contextlib.contextmanager
def model_lock(state_root: Path) -> Iterator[None]:
    """Hold the model's ensemble lock (blocking; released when the job ends, even killed)."""
    state_root.mkdir(parents=True, exist_ok=True)
    with open(state_root / LOCK, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("waiting for %s: another job of this model is training its ensemble", fh.name)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def take(seat: Seat, key: str) -> None:
    """Move the member's staged files into its outputs (same file system: renames), the
    fingerprint last, and drop the staged folder."""
    seat.out_dir.mkdir(parents=True, exist_ok=True)
    for path in seat.files(seat.staged):
        shutil.move(path, seat.out_dir / path.name)  # a rename on one file system
    atomic_write_text(seat.out_dir / FINGERPRINT, key + "\n")
    shutil.rmtree(seat.staged)
    log.info("seed %d: took its member's files from %s", seat.cfg.seed, seat.staged)


def train_member(
    model_cfg: GPTConfig,
    cfg: TrainConfig,
    paths: tuple[str | Path, str | Path, str | Path, str | Path],
    seeds,
    progress: bool = True,
) -> list[int]:
    """Give seed ``cfg.seed`` its outputs: ``paths`` are ``train_model``'s (train_bin, val_bin,
    out_dir, state_dir) of that seed; its files are staged by an earlier job of the model, or
    trained now in one ensemble with every other seed of ``seeds`` not yet finished or staged.
    Returns the seeds trained here ([] when the files were staged)."""
    train_bin, val_bin, out_dir, state_dir = paths
    all_seats = seats(cfg, out_dir, state_dir, seeds)
    own = next(s for s in all_seats if s.cfg.seed == cfg.seed)
    setup = ensemble_setup(model_cfg, cfg)
    data = (train_bin, val_bin)
    keys = {s.cfg.seed: member_key(model_cfg, s.cfg, setup, data) for s in all_seats}
    with model_lock(own.state_dir.parent):
        if not holds(own, own.staged, keys[cfg.seed]):
            pending = [s for s in all_seats if s is own or not finished(s, keys[s.cfg.seed])]
            train_seats(model_cfg, pending, data, keys, setup, own, progress)
        else:
            pending = []
        take(own, keys[cfg.seed])
    return [s.cfg.seed for s in pending]


def train_seats(
    model_cfg: GPTConfig,
    pending: list[Seat],
    data: tuple,
    keys: dict[int, str],
    setup: Setup,
    own: Seat,
    progress: bool,
) -> None:
    """Train ``pending`` as one ensemble, each member published into its staged folder and marked
    with its fingerprint. A stopped member stops this job only if it is ``own``."""
    log.info("seed %d trains the ensemble of seeds %s", own.cfg.seed, [s.cfg.seed for s in pending])
    for seat in pending:
        shutil.rmtree(seat.staged, ignore_errors=True)
    error = None
    try:
        train_ensemble(
            model_cfg,
            [s.cfg for s in pending],
            *data,
            [s.staged for s in pending],
            [s.state_dir for s in pending],
            progress=progress,
            setup=setup,
        )
    except RuntimeError as err:  # stopped members; the others are published
        error = err
    for seat in pending:
        if all(p.is_file() for p in seat.files(seat.staged)):
            atomic_write_text(seat.staged / FINGERPRINT, keys[seat.cfg.seed] + "\n")
    if error is not None:
        if not holds(own, own.staged, keys[own.cfg.seed]):
            raise error
        log.warning("%s (their own jobs will train them again, alone)", error)
