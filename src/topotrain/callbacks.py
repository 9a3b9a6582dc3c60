"""A Hugging Face ``Trainer`` callback that logs the weight topology of each checkpoint
as it trains.

    trainer = Trainer(model=model, args=args, train_dataset=train)
    trainer.add_callback(TopologyCallback(trainer))  # bound: logs reach every report_to logger
    trainer.train()

At each step the Trainer will save at (or every ``every`` steps) the callback computes the study's
per-checkpoint columns (``live.weight_topology``: np_mean, h0_total, …) of the model's linear maps
and logs them as ``topology/<column>``. It computes in ``on_step_end``, before the save, so each
checkpoint's trainer_state.json holds its own step's values (with ``save_strategy="best"`` the save
is decided after evaluation: the values then follow in ``on_save`` and reach the next checkpoint).

Diminishing returns: after each computation the causal rule ``analysis.stopping.topology_stop``
runs on the values logged so far of each watched feature; once it fires, every later entry holds
``topology/diminishing_returns/<feature>`` = the step at which it fired. With ``stop_training`` the
run stops once every watched feature has fired.

In parts: when to compute (``due``), what (``Meter``, through ``live``; ``DiminishingReturns``),
what is logged (``columns``) and where (``Writer``); ``TopologyCallback`` wires them to the hooks.

Imports torch and transformers: import this module only for the callback (``topotrain`` exports it
lazily). Under DDP each process computes (the weights are replicated, so stop decisions agree);
sharded weights (FSDP, ZeRO-3) are not supported.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from transformers import TrainerCallback, TrainerControl, TrainerState

from topotrain.analysis.prediction.stopping import DEFAULTS, topology_stop
from topotrain.live import model_maps, module_topology, warm_up
from topotrain.topology.settings import TopologySettings

# the callback's topology keywords, spelled as weight_topology's
TOPOLOGY_KEYWORDS = ("max_points", "seed", "maxdim", "n_threads", "engine")

log = logging.getLogger(__name__)

PREFIX = "topology/"
FIRED = PREFIX + "diminishing_returns/"  # + feature: the step at which the rule fired
UNBOUND = (
    "TopologyCallback is not bound to a Trainer: its columns go to state.log_history "
    "(trainer_state.json) and to Python logging only; pass it the trainer, "
    "TopologyCallback(trainer), or call .bind(trainer), to reach the report_to loggers"
)


def check_every(every: int | None) -> None:
    """Raise unless ``every`` is None (compute at each save) or a positive number of steps."""
    if every is not None and every < 1:
        raise ValueError(f"every must be a positive number of steps, got {every}")


def due(hook: str, step: int, every: int | None, should_save: bool) -> bool:
    """Whether the callback computes in ``hook`` at ``step``: with ``every``, in on_step_end at its
    multiples; else at each save, in the hook that announces it (``should_save`` in on_step_end
    or on_epoch_end) and in on_save (a save not announced before, save_strategy="best")."""
    if every:
        return hook == "on_step_end" and step % every == 0
    return hook == "on_save" or (hook in ("on_step_end", "on_epoch_end") and should_save)


def columns(summary: dict[str, float], fired: dict[str, int]) -> dict[str, float]:
    """The logged entry: ``topology/<column>`` of ``summary``, then
    ``topology/diminishing_returns/<feature>`` = the step of each feature that has fired."""
    return {PREFIX + k: v for k, v in summary.items()} | {FIRED + f: s for f, s in fired.items()}


def log_line(metrics: dict[str, float]) -> str:
    """``key=value, …`` with values to 6 significant digits: the unbound callback's log line."""
    return ", ".join(f"{k}={v:.6g}" for k, v in metrics.items())


@dataclass
class Writer:
    """Where an entry goes: through ``trainer.log`` when bound (log_history and every report_to
    logger, keeping the step's loss log), else into ``state.log_history`` and Python logging,
    with a warning the first time."""

    trainer: object = None
    warned: bool = False

    def __call__(self, metrics: dict, state: TrainerState, control: TrainerControl) -> None:
        if self.trainer is not None:
            should_log = control.should_log  # trainer.log's on_log clears it: keep the loss log
            self.trainer.log(dict(metrics))
            self.trainer.control.should_log = control.should_log = should_log
            return
        if not self.warned:
            log.warning(UNBOUND)
            self.warned = True
        state.log_history.append({**metrics, "epoch": state.epoch, "step": state.global_step})
        log.info("step %d: %s", state.global_step, log_line(metrics))


@dataclass
class Meter:
    """``live.module_topology``'s columns of a module at each call, its maps found once (the
    module walk) and each call timed (``seconds``); the kernels load when it is built
    (``setup_seconds``). ``layers``, ``include_embeddings``, ``include_head``: as for
    ``live.weight_topology``; ``settings``: the record's (``TopologySettings``)."""

    layers: Sequence[str] | None
    include_embeddings: bool
    include_head: bool
    settings: TopologySettings = field(default_factory=TopologySettings)
    maps: list | None = None
    seconds: list[float] = field(default_factory=list)  # wall time of each computation

    def __post_init__(self):
        self.setup_seconds = warm_up(self.settings)

    def find_maps(self, model) -> list:
        """The module's maps to analyse (``live.model_maps``), found at the first call."""
        if self.maps is None:
            self.maps = model_maps(model, self.layers, self.include_embeddings, self.include_head)
        return self.maps

    def __call__(self, model) -> dict[str, float]:
        start = time.perf_counter()
        summary, _ = module_topology(model, self.find_maps(model), self.settings)
        self.seconds.append(time.perf_counter() - start)
        return summary


def settings_of(topology: dict) -> TopologySettings:
    """The callback's ``TopologySettings`` from its keywords (``max_points``, ``seed``,
    ``maxdim``, ``n_threads``, ``engine``: as for ``live.weight_topology``); another keyword is
    an error that names it."""
    unknown = sorted(set(topology) - set(TOPOLOGY_KEYWORDS))
    if unknown:
        raise TypeError(
            f"TopologyCallback got unexpected keyword(s) {unknown}; its topology keywords are "
            f"{list(TOPOLOGY_KEYWORDS)} (as for weight_topology)"
        )
    return TopologySettings.from_config(topology)


class DiminishingReturns:
    """The causal rule ``topology_stop`` on each watched feature's values as they come: ``steps``
    computed so far, ``history`` (feature → values at them), ``fired`` (feature → the step at
    which the rule fired). ``stop_training``: stop once every watched feature has fired."""

    def __init__(
        self, watch: Sequence[str], threshold: float, patience: int, stop_training: bool = False
    ):
        topology_stop([0, 1], [0.0, 0.0], threshold, patience)  # checks threshold and patience
        self.watch, self.threshold, self.patience = list(watch), threshold, patience
        self.stop_training = stop_training
        self.steps: list[int] = []
        self.history: dict[str, list[float]] = {f: [] for f in self.watch}
        self.fired: dict[str, int] = {}

    def restore(self, history: list[dict]) -> None:
        """Start the watched features' histories from the topology entries of ``history`` (a
        resumed run's log_history; none in a fresh run), the fired steps as logged there."""
        keys = ["step", PREFIX + "n_layers", *(PREFIX + f for f in self.watch)]
        entries = [e for e in history if all(k in e for k in keys)]
        self.steps = [e["step"] for e in entries]
        self.history = {f: [e[PREFIX + f] for e in entries] for f in self.watch}
        last = entries[-1] if entries else {}
        self.fired = {f: last[FIRED + f] for f in self.watch if FIRED + f in last}

    def update(self, step: int, summary: dict[str, float]) -> None:
        """Append ``summary``'s watched features at ``step`` and run ``topology_stop`` on each
        history of a feature that has not fired yet."""
        if missing := [f for f in self.watch if f not in summary]:
            raise ValueError(
                f"TopologyCallback watches {missing}, not among the columns {sorted(summary)}"
            )
        self.steps.append(step)
        for f in self.watch:
            self.history[f].append(summary[f])
            if f not in self.fired:
                self.run_rule(f)

    def run_rule(self, feature: str) -> None:
        """Record the step at which ``topology_stop`` fires on ``feature``'s history, if it does."""
        k = topology_stop(self.steps, self.history[feature], self.threshold, self.patience)
        if k is not None:
            self.fired[feature] = self.steps[k]
            args = (feature, self.steps[k], self.threshold, self.patience)
            log.info(
                "topology: diminishing returns of %s at step %d (threshold %g, patience %d)", *args
            )

    def should_stop(self, step: int) -> bool:
        """Whether to stop at ``step``: with ``stop_training``, once every watched feature fired."""
        if not (self.stop_training and self.watch and len(self.fired) == len(self.watch)):
            return False
        log.info("topology: every watched feature has fired by step %d: stopping", step)
        return True


class TopologyCallback(TrainerCallback, DiminishingReturns):
    """Logs ``topology/<column>`` (``live.weight_topology``'s columns) at each save, or every
    ``every`` steps, and ``topology/diminishing_returns/<feature>`` once the causal rule fires.

    ``layers``, ``include_embeddings``, ``include_head`` and the keywords ``max_points``,
    ``seed``, ``maxdim``, ``n_threads``, ``engine`` (``**topology``): as for ``weight_topology``.
    ``watch``, ``threshold``, ``patience``, ``stop_training``: as for ``DiminishingReturns``
    (defaults: ``analysis.stopping.DEFAULTS``)."""

    def __init__(
        self,
        trainer=None,
        every: int | None = None,
        layers: Sequence[str] | None = None,
        include_embeddings: bool = False,
        include_head: bool = False,
        watch: Sequence[str] = tuple(DEFAULTS["topology_features"]),
        threshold: float = DEFAULTS["topology_threshold"],
        patience: int = DEFAULTS["topology_patience"],
        stop_training: bool = False,
        **topology,
    ):
        check_every(every)
        settings = settings_of(topology)
        DiminishingReturns.__init__(self, watch, threshold, patience, stop_training)
        self.every, self.writer = every, Writer(trainer)
        self.meter = Meter(layers, include_embeddings, include_head, settings)
        self.seconds = self.meter.seconds  # wall time of each computation (the meter's list)

    def bind(self, trainer) -> TopologyCallback:
        """Log through ``trainer.log`` (every report_to logger and the console); returns self."""
        self.writer.trainer = trainer
        return self

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.restore(state.log_history)
        if model is not None:
            self.meter.find_maps(model)  # the module walk, once, before step 1

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if due("on_step_end", state.global_step, self.every, control.should_save):
            self.record(args, state, control, model)

    def on_epoch_end(self, args, state, control, model=None, **kwargs):
        if due("on_epoch_end", state.global_step, self.every, control.should_save):
            self.record(args, state, control, model)

    def on_save(self, args, state, control, model=None, **kwargs):
        if due("on_save", state.global_step, self.every, control.should_save):
            self.record(args, state, control, model)

    def record(self, args, state, control, model) -> dict[str, float] | None:
        """Compute and log the columns of the model at ``state.global_step`` (once per step)."""
        step = state.global_step
        if model is None or (self.steps and self.steps[-1] >= step):
            return None
        summary = self.meter(model)
        self.update(step, summary)
        metrics = columns(summary, self.fired)
        self.writer(metrics, state, control)
        control.should_training_stop |= self.should_stop(step)
        return metrics
