"""The callback's parts without a Trainer: when it computes (``due``), what it computes (``Meter``
through ``live.module_topology``, the same numbers as ``weight_topology``), what it logs
(``columns``, ``log_line``), where (``Writer``) and the diminishing-returns state it restores."""

from __future__ import annotations

import logging

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from transformers import TrainerControl, TrainerState  # noqa: E402

from topotrain.callbacks import (  # noqa: E402
    FIRED,
    UNBOUND,
    DiminishingReturns,
    Meter,
    TopologyCallback,
    Writer,
    check_every,
    columns,
    due,
    log_line,
)
from topotrain.live import model_maps, module_topology, warm_up, weight_topology  # noqa: E402
from topotrain.topology.layers import layer_records  # noqa: E402
from topotrain.topology.settings import TopologySettings  # noqa: E402

OPTIONS = {"max_points": 200, "seed": 0, "maxdim": 1, "n_threads": 1, "engine": "auto"}
SETTINGS = TopologySettings.from_config(OPTIONS)


def mlp(seed: int = 1) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 40), torch.nn.ReLU(), torch.nn.Linear(40, 3))


def steps_due(hook: str, every: int | None, saves: set[int], last: int = 45) -> list[int]:
    return [s for s in range(1, last + 1) if due(hook, s, every, s in saves)]


def test_due_every_n_steps_at_step_end_only():
    assert steps_due("on_step_end", 10, saves={20, 40}) == [10, 20, 30, 40]
    assert steps_due("on_step_end", 15, saves=set()) == [15, 30, 45]
    assert steps_due("on_epoch_end", 10, saves={20, 40}) == []
    assert steps_due("on_save", 10, saves={20, 40}) == []


def test_due_at_each_save_where_the_trainer_announces_it():
    assert steps_due("on_step_end", None, saves={20, 40}) == [20, 40]
    assert steps_due("on_epoch_end", None, saves={32}) == [32]
    assert steps_due("on_save", None, saves=set(), last=3) == [
        1,
        2,
        3,
    ]  # any save, announced or not
    assert steps_due("on_log", None, saves={20}) == []


def test_check_every_refuses_non_positive_steps():
    check_every(None)
    check_every(1)
    for bad in (0, -5):
        with pytest.raises(ValueError, match="positive number of steps"):
            check_every(bad)
    with pytest.raises(ValueError, match="got 0"):
        TopologyCallback(every=0)


def test_the_callbacks_topology_keywords_are_weight_topologys_and_a_typo_is_named():
    callback = TopologyCallback(max_points=50, seed=3, maxdim=0, n_threads=2, engine="ripser")
    assert callback.meter.settings == TopologySettings(50, 3, 0, "ripser", threads=2)
    assert TopologyCallback().meter.settings == TopologySettings()  # the schema's defaults
    with pytest.raises(TypeError, match=r"\['max_pionts'\].*'max_points'"):
        TopologyCallback(max_pionts=50)


def test_columns_prefix_the_summary_then_the_fired_steps():
    summary = {"np_mean": 1.5, "n_layers": 8}
    assert columns(summary, {"h0_total": 400}) == {
        "topology/np_mean": 1.5,
        "topology/n_layers": 8,
        "topology/diminishing_returns/h0_total": 400,
    }
    assert columns(summary, {}) == {"topology/np_mean": 1.5, "topology/n_layers": 8}


def test_log_line_writes_six_significant_digits():
    metrics = {"topology/np_mean": 1.23456789, "topology/n_layers": 8, FIRED + "np_mean": 400}
    expected = "topology/np_mean=1.23457, topology/n_layers=8, topology/diminishing_returns/"
    assert log_line(metrics) == expected + "np_mean=400"


def test_meter_computes_weight_topology_walking_the_module_once(monkeypatch):
    import topotrain.callbacks as callbacks

    walks = []
    monkeypatch.setattr(callbacks, "model_maps", lambda *a: walks.append(a) or model_maps(*a))
    model = mlp()
    meter = Meter(None, False, False, SETTINGS)
    assert meter.setup_seconds > 0 and meter.seconds == []
    first = meter(model)
    assert first == weight_topology(model, **OPTIONS)
    mats = {f"{i}.weight": model[i].weight.detach().numpy() for i in (0, 2)}  # (out, in)
    records, _ = layer_records(mats, ["*"], max_points=OPTIONS["max_points"], seed=OPTIONS["seed"])
    assert first["np_mean"] == pytest.approx(np.mean([r["np_total"] for r in records]), rel=1e-12)
    with torch.no_grad():
        model[0].weight.mul_(2.0)
    second = meter(model)
    assert second == weight_topology(model, **OPTIONS) and second != first
    assert len(walks) == 1 and len(meter.seconds) == 2


def test_module_topology_is_weight_topologys_computation_of_a_module():
    model = mlp(seed=4)
    summary, records = module_topology(model, model_maps(model), SETTINGS)
    assert {**summary, "layers": records} == weight_topology(model, per_layer=True, **OPTIONS)
    assert [r["layer"] for r in records] == ["0.weight", "2.weight"]
    assert warm_up(SETTINGS) > 0


def test_writer_unbound_appends_to_log_history_and_warns_once(caplog):
    state, control = TrainerState(global_step=7, epoch=0.5), TrainerControl()
    writer, metrics = Writer(), {"topology/np_mean": 2.0}
    with caplog.at_level(logging.INFO, logger="topotrain.callbacks"):
        writer(metrics, state, control)
        state.global_step = 8
        writer(metrics, state, control)
    assert state.log_history == [
        {"topology/np_mean": 2.0, "epoch": 0.5, "step": 7},
        {"topology/np_mean": 2.0, "epoch": 0.5, "step": 8},
    ]
    ours = [r for r in caplog.records if r.name == "topotrain.callbacks"]
    assert [r.getMessage() for r in ours if r.levelno == logging.WARNING] == [UNBOUND]
    assert "step 8: topology/np_mean=2" in [r.getMessage() for r in caplog.records]


class FakeTrainer:
    """What ``Writer`` uses of a Trainer: ``log``, which (as the real one's on_log) clears
    ``control.should_log``."""

    def __init__(self):
        self.control, self.logged = TrainerControl(), []

    def log(self, logs: dict) -> None:
        self.logged.append(logs)
        self.control.should_log = False


def test_writer_bound_logs_through_the_trainer_and_keeps_the_loss_log():
    trainer, state, control = FakeTrainer(), TrainerState(global_step=3), TrainerControl()
    control.should_log = True  # the step's loss log, due at this step
    metrics = {"topology/np_mean": 2.0}
    Writer(trainer)(metrics, state, control)
    assert trainer.logged == [metrics] and trainer.logged[0] is not metrics
    assert control.should_log and trainer.control.should_log
    assert state.log_history == []  # trainer.log writes it


def test_restore_takes_the_complete_topology_entries_and_the_last_fired_steps():
    rule = DiminishingReturns(["np_mean", "h0_total"], threshold=0.1, patience=2)
    entry = {"topology/n_layers": 8, "topology/np_mean": 1.0, "topology/h0_total": 5.0}
    history = [
        {"loss": 3.0, "step": 10},
        {**entry, "step": 20},
        {"topology/np_mean": 9.0, "step": 30},  # incomplete: not the callback's entry
        {**entry, "topology/np_mean": 1.1, FIRED + "np_mean": 20, "step": 40},
    ]
    rule.restore(history)
    assert rule.steps == [20, 40]
    assert rule.history == {"np_mean": [1.0, 1.1], "h0_total": [5.0, 5.0]}
    assert rule.fired == {"np_mean": 20}
    assert not rule.should_stop(40)  # stop_training is off


def test_should_stop_once_every_watched_feature_has_fired():
    rule = DiminishingReturns(["np_mean", "h0_total"], 0.1, 2, stop_training=True)
    rule.fired = {"np_mean": 20}
    assert not rule.should_stop(40)
    rule.fired["h0_total"] = 40
    assert rule.should_stop(40)
    assert not DiminishingReturns([], 0.1, 2, stop_training=True).should_stop(40)


def test_callback_hooks_record_the_due_steps_once_each_with_weight_topologys_values():
    model, callback = mlp(), TopologyCallback(every=2, maxdim=0, watch=["np_mean"])
    state, control = TrainerState(), TrainerControl()
    callback.on_train_begin(None, state, control, model=model)
    for step in range(1, 6):
        state.global_step = step
        callback.on_step_end(None, state, control, model=model)
        callback.on_save(None, state, control, model=model)  # not due with every
    callback.on_step_end(None, state, control, model=model)  # step 5 again: not due
    state.global_step = 4
    assert callback.record(None, state, control, model) is None  # step 4 computed already
    assert [e["step"] for e in state.log_history] == [2, 4]
    expected = columns(weight_topology(model, maxdim=0), {})
    assert {k: v for k, v in state.log_history[-1].items() if k.startswith("topology/")} == expected
    assert callback.steps == [2, 4] and len(callback.seconds) == 2
