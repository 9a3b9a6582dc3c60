"""The live topology: ``TopologyCallback`` in a real ``Trainer.train()``, ``weight_topology`` on a
module and on a state dict, and the lazy exports that keep ``import topotrain`` light."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")  # what Trainer needs

from safetensors.numpy import load_file  # noqa: E402
from transformers import (  # noqa: E402
    GPT2Config,
    GPT2LMHeadModel,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)

from topotrain.analysis.prediction.stopping import topology_stop  # noqa: E402
from topotrain.callbacks import TopologyCallback  # noqa: E402
from topotrain.live import weight_topology  # noqa: E402
from topotrain.topology.layers import layer_records  # noqa: E402

CONV1D = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")  # GPT-2's (in, out) weights
TRANSPOSED = [f"*.{name}.weight" for name in CONV1D]


def tiny_gpt2(seed: int = 0) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    sizes = dict(n_embd=32, n_layer=2, n_head=2, n_positions=32)
    return GPT2LMHeadModel(GPT2Config(vocab_size=128, bos_token_id=0, eos_token_id=0, **sizes))


class Tokens(torch.utils.data.Dataset):
    """Random token sequences, each its own label (the model shifts them)."""

    def __init__(self, n: int = 256, context: int = 32, seed: int = 0):
        gen = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, 128, (n, context), generator=gen)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class Recorder(TrainerCallback):
    """What the Trainer's logger fan-out (``on_log``) hands every callback: (step, logs)."""

    def __init__(self):
        self.logs = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.logs.append((state.global_step, dict(logs)))


def trainer_for(out, steps: int = 60, save_steps: int | None = 20) -> Trainer:
    saving = {"save_steps": save_steps} if save_steps else {"save_strategy": "no"}
    args = TrainingArguments(
        output_dir=str(out),
        max_steps=steps,
        logging_steps=10,
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
        **saving,
    )
    return Trainer(model=tiny_gpt2(), args=args, train_dataset=Tokens())


def topology_entries(history: list[dict]) -> dict[int, dict]:
    """step → the log entry holding the topology columns (one per step)."""
    entries = [e for e in history if "topology/np_mean" in e]
    assert len({e["step"] for e in entries}) == len(entries)
    return {e["step"]: e for e in entries}


def by_hand(tensors: dict[str, np.ndarray]) -> dict:
    """A few per-checkpoint columns from GPT-2's block weights, transposed to (out, in) here."""
    blocks = {
        n: W for n, W in tensors.items() if ".h." in n and n.endswith(".weight") and W.ndim == 2
    }
    mats = {
        n: W.T if n.split(".", 3)[-1].removesuffix(".weight") in CONV1D else W
        for n, W in blocks.items()
    }
    records, _ = layer_records(mats, ["*"])
    col = {k: np.array([r[k] for r in records], dtype=float) for k in records[0] if k != "layer"}
    return {
        "n_layers": len(records),
        "np_mean": col["np_total"].mean(),
        "np_std": col["np_total"].std(),
        "h0_total": col["h0_total"].sum(),
        "h1_total": col["h1_total"].sum(),
        "h0_max": col["h0_max"].max(),
        "l2_norm_mean": col["l2_norm"].mean(),
        "h0_mean_bar": col["h0_total"].sum() / col["h0_count"].sum(),
    }


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A bound callback in a 60-step run that saves every 20 steps."""
    out = tmp_path_factory.mktemp("run")
    trainer, recorder = trainer_for(out), Recorder()
    callback = TopologyCallback(trainer)
    trainer.add_callback(callback)
    trainer.add_callback(recorder)
    trainer.train()
    return trainer, recorder, callback, out


@pytest.mark.long  # `make test-long` (.ci/run runs it)
def test_callback_logs_topology_columns_at_each_save_step(trained):
    trainer, recorder, callback, _ = trained
    entries = topology_entries(trainer.state.log_history)
    assert sorted(entries) == [20, 40, 60]
    fanned = {step: logs for step, logs in recorder.logs if "topology/np_mean" in logs}
    assert sorted(fanned) == [20, 40, 60]
    for step, entry in entries.items():
        assert {k: v for k, v in fanned[step].items() if k.startswith("topology/")} == {
            k: v for k, v in entry.items() if k.startswith("topology/")
        }
    loss_steps = [e["step"] for e in trainer.state.log_history if "loss" in e]
    assert loss_steps == [10, 20, 30, 40, 50, 60]  # the callback's log keeps the loss logs
    assert len(callback.seconds) == 3


@pytest.mark.long  # `make test-long` (.ci/run runs it)
def test_callback_values_equal_the_saved_checkpoints_topology(trained):
    trainer, _, _, out = trained
    entries = topology_entries(trainer.state.log_history)
    for step in (20, 40, 60):
        expected = by_hand(load_file(out / f"checkpoint-{step}" / "model.safetensors"))
        got = {k: entries[step][f"topology/{k}"] for k in expected}
        assert got == pytest.approx(expected, rel=1e-9)
        assert entries[step]["topology/n_layers"] == 8


@pytest.mark.long  # `make test-long` (.ci/run runs it)
def test_checkpoint_trainer_state_holds_its_own_steps_values(trained):
    trainer, _, _, out = trained
    entries = topology_entries(trainer.state.log_history)
    for step in (20, 40):
        saved = json.loads((out / f"checkpoint-{step}" / "trainer_state.json").read_text())
        in_file = topology_entries(saved["log_history"])
        assert max(in_file) == step
        assert in_file[step] == pytest.approx(entries[step])


@pytest.mark.long  # `make test-long` (.ci/run runs it)
def test_resumed_run_continues_the_watched_history_from_the_checkpoint(trained, tmp_path):
    trainer, _, _, out = trained
    resumed = trainer_for(tmp_path)
    callback = TopologyCallback(resumed)
    resumed.add_callback(callback)
    resumed.train(resume_from_checkpoint=str(out / "checkpoint-20"))
    assert callback.steps == [20, 40, 60]
    first = topology_entries(trainer.state.log_history)[20]
    assert callback.history["np_mean"][0] == first["topology/np_mean"]
    assert sorted(topology_entries(resumed.state.log_history)) == [20, 40, 60]


@pytest.mark.long  # `make test-long` (.ci/run runs it)
def test_unbound_callback_every_n_steps_writes_log_history_and_warns_once(tmp_path, caplog):
    trainer = trainer_for(tmp_path, steps=30, save_steps=None)
    trainer.add_callback(TopologyCallback(every=10, maxdim=0))
    with caplog.at_level(logging.INFO, logger="topotrain.callbacks"):
        trainer.train()
    entries = topology_entries(trainer.state.log_history)
    assert sorted(entries) == [10, 20, 30]
    assert not any(k.startswith("topology/h1_") for k in entries[10])  # maxdim 0: no H1 columns
    assert not list(tmp_path.glob("checkpoint-*"))
    ours = [r for r in caplog.records if r.name == "topotrain.callbacks"]  # not transformers'
    warnings = [r for r in ours if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "trainer" in warnings[0].getMessage()
    assert sum("topology/np_mean=" in r.getMessage() for r in caplog.records) == 3


def drop_lr_after(step: int):
    """AdamW at 1e-2 for ``step`` updates, then at 1e-6: the weights all but stop moving."""

    def make(model):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: 1.0 if t < step else 1e-4)
        return optimizer, schedule

    return make


@pytest.mark.long  # `make test-long` (.ci/run runs it)
def test_diminishing_returns_fires_as_topology_stop_on_the_logged_series(tmp_path):
    trainer = trainer_for(tmp_path, steps=60, save_steps=None)
    trainer.optimizer, trainer.lr_scheduler = drop_lr_after(15)(trainer.model)
    callback = TopologyCallback(trainer, every=5, stop_training=True)
    trainer.add_callback(callback)
    trainer.train()
    entries = topology_entries(trainer.state.log_history)
    steps = sorted(entries)
    fired = {}
    for feature in ("np_mean", "h0_total"):
        k = topology_stop(steps, [entries[s][f"topology/{feature}"] for s in steps], 0.1, 2)
        assert k is not None, f"{feature} never levels off after the learning rate drops"
        fired[feature] = steps[k]
        key = f"topology/diminishing_returns/{feature}"
        assert [s for s in steps if key in entries[s]] == steps[
            k:
        ]  # from its step on, never before
        assert {entries[s][key] for s in steps[k:]} == {steps[k]}
    assert 15 < max(fired.values()) < 60  # after the drop, and it stopped the run there
    assert trainer.state.global_step == steps[-1] == max(fired.values())
    assert callback.fired == fired


def test_diminishing_returns_update_is_causal_on_a_synthetic_series():
    callback = TopologyCallback(watch=["np_mean"], threshold=0.2, patience=2)
    values = [1.0, 2.0, 2.5, 2.6, 2.62, 2.7, 3.5, 3.51]
    steps = [100 * i for i in range(len(values))]
    k = topology_stop(steps, values, 0.2, 2)
    for i, (step, value) in enumerate(zip(steps, values, strict=True)):
        callback.update(step, {"np_mean": value})
        assert callback.fired == ({"np_mean": steps[k]} if i >= k else {})
    assert steps[k] == 400  # |Δ| = 0.1, 0.02 after the peak 1.0: below 0.2 × 1.0 twice


def test_weight_topology_agrees_on_module_state_dict_and_by_hand():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(6, 40), torch.nn.ReLU(), torch.nn.Linear(40, 3))
    from_module = weight_topology(model, per_layer=True)
    from_state = weight_topology(model.state_dict(), per_layer=True)
    mats = {f"{i}.weight": model[i].weight.detach().numpy() for i in (0, 2)}  # (out, in) already
    records, _ = layer_records(mats, ["*"])
    assert from_module["layers"] == from_state["layers"] == records
    assert from_module == from_state
    np_total = [r["np_total"] for r in records]
    assert from_module["np_mean"] == pytest.approx(np.mean(np_total), rel=1e-12)
    assert from_module["h0_total"] == pytest.approx(sum(r["h0_total"] for r in records), rel=1e-12)
    assert type(from_module["h0_count"]) is int and type(from_module["np_mean"]) is float


def test_weight_topology_of_gpt2_module_equals_state_dict_with_transposed_patterns():
    model = tiny_gpt2(seed=2)
    from_module = weight_topology(model)
    state = model.state_dict()
    from_state = weight_topology(state, layers=["*.h.*.weight"], transposed=TRANSPOSED)
    assert from_module == from_state
    tensors = {k: v.numpy() for k, v in state.items()}
    expected = by_hand(tensors)
    assert {k: from_module[k] for k in expected} == pytest.approx(expected, rel=1e-12)
    everything = weight_topology(state, transposed=TRANSPOSED, maxdim=0)
    assert everything["n_layers"] == 11  # + wte, wpe and the (tied) lm_head
    with pytest.raises(ValueError, match="transposed"):
        weight_topology(model, transposed=TRANSPOSED)
    with pytest.raises(ValueError, match="no 2-D floating tensor"):
        weight_topology(state, layers=["nothing.*"])


def test_import_topotrain_stays_light_and_exports_lazily():
    code = """
import sys
import topotrain
heavy = [m for m in ("torch", "transformers", "pandas") if m in sys.modules]
import topotrain.jobs
from topotrain.jobs.topology import write_checkpoint_topology
heavy += [m for m in ("torch", "transformers") if m in sys.modules]
print(heavy)
callback, function = topotrain.TopologyCallback, topotrain.weight_topology  # imports them now
import topotrain.callbacks, topotrain.live
print(callback is topotrain.callbacks.TopologyCallback, function is topotrain.live.weight_topology,
      "transformers" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "True True True"]


def test_one_answer_per_model_from_module_state_dict_with_config_and_the_workflow(tmp_path):
    """weight_topology(model), weight_topology(state_dict, config=model.config) and the runs:
    branch's per-checkpoint records of the saved model are the same numbers; a state dict
    without config warns, naming the matrices it chose."""
    import warnings

    from topotrain.jobs.runs import run_checkpoint_topology
    from topotrain.sources.runs import config_source, layer_map

    model = tiny_gpt2(seed=3)
    from_module = weight_topology(model, per_layer=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # with config: no warning
        from_state = weight_topology(model.state_dict(), config=model.config, per_layer=True)
    assert from_state == from_module
    model.save_pretrained(tmp_path / "checkpoint-1")
    files = [str(tmp_path / "checkpoint-1" / "model.safetensors")]
    options = {"layers": None, "include_embeddings": False, "include_head": False}
    layers = layer_map(options, files, config_source({}, files), "ckpt")
    records = run_checkpoint_topology(files, layers, "ckpt", {"max_points": 200, "seed": 0}).layers
    assert records == from_module["layers"]
    with pytest.warns(UserWarning, match=r"without config: 11 matrices .*transformer\.h\.0"):
        plain = weight_topology(model.state_dict(), maxdim=0)
    assert plain["n_layers"] == 11
    with pytest.raises(ValueError, match="config orients"):
        weight_topology(model.state_dict(), config=model.config, transposed=TRANSPOSED)
