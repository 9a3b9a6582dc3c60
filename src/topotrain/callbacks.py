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

Imports torch and transformers: import this module only for the callback (``topotrain`` exports it
lazily). Under DDP each process computes (the weights are replicated, so stop decisions agree);
sharded weights (FSDP, ZeRO-3) are not supported.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import numpy as np
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from topotrain.analysis.prediction.stopping import DEFAULTS, topology_stop
from topotrain.config import DEFAULTS as CONFIG_DEFAULTS
from topotrain.live import matrix_topology, model_maps, module_matrices

_TOPOLOGY = CONFIG_DEFAULTS["topology"]  # the schema's topology defaults

log = logging.getLogger(__name__)

PREFIX = "topology/"
FIRED = PREFIX + "diminishing_returns/"  # + feature: the step at which the rule fired
UNBOUND = (
    "TopologyCallback is not bound to a Trainer: its columns go to state.log_history "
    "(trainer_state.json) and to Python logging only; pass it the trainer, "
    "TopologyCallback(trainer), or call .bind(trainer), to reach the report_to loggers"
)


class TopologyCallback(TrainerCallback):
    """Logs ``topology/<column>`` (``live.weight_topology``'s columns) at each save, or every
    ``every`` steps, and ``topology/diminishing_returns/<feature>`` once the causal rule fires.

    ``layers``, ``include_embeddings``, ``include_head``, ``max_points``, ``seed``, ``maxdim``,
    ``n_threads``, ``engine``: as for ``weight_topology``. ``watch``, ``threshold``, ``patience``:
    the features and the parameters of ``topology_stop`` (defaults: the study's,
    ``analysis.stopping.DEFAULTS``).
    """

    def __init__(
        self,
        trainer=None,
        every: int | None = None,
        layers: Sequence[str] | None = None,
        include_embeddings: bool = False,
        include_head: bool = False,
        max_points: int = _TOPOLOGY["max_points"],
        seed: int = _TOPOLOGY["seed"],
        maxdim: int = _TOPOLOGY["maxdim"],
        n_threads: int = 1,
        engine: str = "auto",
        watch: Sequence[str] = tuple(DEFAULTS["topology_features"]),
        threshold: float = DEFAULTS["topology_threshold"],
        patience: int = DEFAULTS["topology_patience"],
        stop_training: bool = False,
    ):
        if every is not None and every < 1:
            raise ValueError(f"every must be a positive number of steps, got {every}")
        topology_stop([0, 1], [0.0, 0.0], threshold, patience)  # checks threshold and patience
        self.trainer = trainer
        self.every = every
        self.select = {
            "layers": layers,
            "include_embeddings": include_embeddings,
            "include_head": include_head,
        }
        self.compute_args = {
            "max_points": max_points,
            "seed": seed,
            "maxdim": maxdim,
            "n_threads": n_threads,
            "engine": engine,
        }
        self.watch, self.threshold, self.patience = list(watch), threshold, patience
        self.stop_training = stop_training
        self.maps = None  # the model's weight maps, found once
        self.steps: list[int] = []  # the steps computed so far
        self.history: dict[str, list[float]] = {f: [] for f in self.watch}
        self.fired: dict[str, int] = {}  # feature → step at which diminishing returns fired
        self.seconds: list[float] = []  # wall time of each computation
        self.warned = False
        start = time.perf_counter()  # load the kernels now, not at the first save
        matrix_topology({"warm-up": np.arange(6.0).reshape(3, 2)}, **self.compute_args)
        self.setup_seconds = time.perf_counter() - start

    def bind(self, trainer) -> TopologyCallback:
        """Log through ``trainer.log`` (every report_to logger and the console); returns self."""
        self.trainer = trainer
        return self

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.restore(state.log_history)
        if model is not None and self.maps is None:
            self.maps = model_maps(model, **self.select)  # the module walk, once, before step 1

    def restore(self, history: list[dict]) -> None:
        """Start the watched features' histories from the topology entries of ``history`` (a
        resumed run's log_history; none in a fresh run), the fired steps as logged there."""
        keys = ["step", PREFIX + "n_layers", *(PREFIX + f for f in self.watch)]
        entries = [e for e in history if all(k in e for k in keys)]
        self.steps = [e["step"] for e in entries]
        self.history = {f: [e[PREFIX + f] for e in entries] for f in self.watch}
        last = entries[-1] if entries else {}
        self.fired = {f: last[FIRED + f] for f in self.watch if FIRED + f in last}

    def on_step_end(self, args, state, control, model=None, **kwargs):
        due = state.global_step % self.every == 0 if self.every else control.should_save
        if due:
            self.record(args, state, control, model)

    def on_epoch_end(self, args, state, control, model=None, **kwargs):
        if not self.every and control.should_save:  # save_strategy="epoch" decides here
            self.record(args, state, control, model)

    def on_save(self, args, state, control, model=None, **kwargs):
        if not self.every:  # a save not announced before it (save_strategy="best")
            self.record(args, state, control, model)

    def record(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        model,
    ) -> dict[str, float] | None:
        """Compute and log the columns of the model at ``state.global_step`` (once per step)."""
        step = state.global_step
        if model is None or (self.steps and self.steps[-1] >= step):
            return None
        metrics = self.compute(model, step)
        self.emit(metrics, state, control)
        if self.stop_training and self.watch and len(self.fired) == len(self.watch):
            log.info("topology: every watched feature has fired by step %d: stopping", step)
            control.should_training_stop = True
        return metrics

    def compute(self, model, step: int) -> dict[str, float]:
        """The prefixed columns of ``model``'s weights at ``step``, with the diminishing-returns
        steps of the features that have fired by now (reads steps ≤ ``step`` only)."""
        start = time.perf_counter()
        if self.maps is None:
            self.maps = model_maps(model, **self.select)
        summary, _ = matrix_topology(module_matrices(model, self.maps), **self.compute_args)
        self.update(step, summary)
        self.seconds.append(time.perf_counter() - start)
        metrics = {PREFIX + k: v for k, v in summary.items()}
        return metrics | {FIRED + f: s for f, s in self.fired.items()}

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
            if f in self.fired:
                continue
            k = topology_stop(self.steps, self.history[f], self.threshold, self.patience)
            if k is not None:
                self.fired[f] = self.steps[k]
                log.info(
                    "topology: diminishing returns of %s at step %d (threshold %g, patience %d)",
                    f,
                    self.steps[k],
                    self.threshold,
                    self.patience,
                )

    def emit(self, metrics: dict[str, float], state: TrainerState, control: TrainerControl) -> None:
        """Log ``metrics``: through the bound trainer (log_history and every logger), else into
        ``state.log_history`` and Python logging, with a one-time warning."""
        if self.trainer is not None:
            should_log = control.should_log  # trainer.log's on_log clears it: keep the loss log
            self.trainer.log(dict(metrics))
            self.trainer.control.should_log = control.should_log = should_log
            return
        if not self.warned:
            log.warning(UNBOUND)
            self.warned = True
        state.log_history.append({**metrics, "epoch": state.epoch, "step": state.global_step})
        log.info(
            "step %d: %s", state.global_step, ", ".join(f"{k}={v:.6g}" for k, v in metrics.items())
        )
