"""The saves rotation (save_total_limit) removed from a Trainer folder, read from the newest
checkpoint's trainer_state.json: fabricated states for each way of saving, and real Trainer runs
whose saves a callback records (the independent count)."""

from __future__ import annotations

import json
import os

import pytest

from topotrain.sources.rotation import (
    CANNOT,
    removed_saves,
    run_rotation_note,
    steps_text,
)
from topotrain.sources.runs import local_checkpoints


def state(
    global_step: int,
    save_steps: float = 500,
    max_steps: int | None = None,
    per_epoch: int = 20,
    log_every: int = 5,
    best: int | None = None,
) -> dict:
    """A trainer_state.json as TrainerState.save_to_json writes it: log_history every
    ``log_every`` steps with the epoch (``per_epoch`` update steps an epoch)."""
    log = [
        {"step": s, "epoch": s / per_epoch, "loss": 3.0 - s / 100}
        for s in range(log_every, global_step + 1, log_every)
    ]
    return {
        "global_step": global_step,
        "max_steps": max_steps or global_step,
        "save_steps": save_steps,
        "epoch": global_step / per_epoch,
        "log_history": log,
        "best_global_step": best,
        "best_model_checkpoint": None if best is None else f"out/checkpoint-{best}",
    }


def test_step_saving_names_the_saves_rotation_removed():
    removed, note = removed_saves(state(60, save_steps=10), [40, 50, 60])
    assert removed == [10, 20, 30]
    assert note == (
        "rotation removed 3 earlier saves (steps 10, 20, 30): trainer_state.json (save_steps 10, "
        "global_step 60) implies 6; the analysis covers steps 40 … 60"
    )


def test_the_final_step_is_a_save_of_its_own():
    removed, note = removed_saves(state(65, save_steps=10), [50, 60, 65])
    assert removed == [10, 20, 30, 40]
    assert "(save_steps 10, global_step 65) implies 7;" in note
    # a run stopped before max_steps saved last at a multiple of save_steps
    removed, _ = removed_saves(state(60, save_steps=10, max_steps=100), [50, 60])
    assert removed == [10, 20, 30, 40]


@pytest.mark.parametrize(
    ("save_steps", "how"),
    [(9, "save_steps 9, global_step 60"), (0.15, "save_steps 0.15 of max_steps 60 = 9")],
)
def test_fractional_save_steps_as_the_state_stores_it_or_as_given(save_steps, how):
    """TrainerState.compute_steps stores ceil(60 × 0.15) = 9; a fraction is resolved alike."""
    removed, note = removed_saves(state(60, save_steps=save_steps), [54, 60])
    assert removed == [9, 18, 27, 36, 45]
    assert note == (
        f"rotation removed 5 earlier saves (steps 9, 18, 27, 36, 45): trainer_state.json ({how}"
        f"{', global_step 60' if save_steps < 1 else ''}) implies 7; the analysis covers steps "
        "54, 60"
    )


def test_epoch_saving_is_read_from_the_whole_epochs_not_the_default_save_steps():
    """save_strategy "epoch" leaves save_steps 500 in the state; the checkpoints sit where the
    epoch is whole (every 20 steps)."""
    removed, note = removed_saves(state(100, per_epoch=20), [80, 100])
    assert removed == [20, 40, 60]
    assert note == (
        "rotation removed 3 earlier saves (steps 20, 40, 60): trainer_state.json (epoch saving, "
        "20 steps an epoch, global_step 100 at epoch 5) implies 5; the analysis covers steps 80, "
        "100"
    )


def test_an_epoch_rounded_to_look_whole_does_not_mislead():
    """Logs that round the epoch to 2 decimals show 1.0 at step 999 of 1000-step epochs."""
    doc = state(3000, per_epoch=1000, log_every=1000)
    doc["log_history"].insert(0, {"step": 999, "epoch": 1.0, "loss": 3.0})
    removed, note = removed_saves(doc, [2000, 3000])
    assert removed == [1000] and "1000 steps an epoch" in note
    assert note.startswith("rotation removed 1 earlier save (step 1000):")


def test_the_best_checkpoint_rotation_keeps_is_not_a_gap():
    """load_best_model_at_end: rotation protects best_model_checkpoint (step 10) beside the newest
    saves; the removed ones are those between."""
    removed, note = removed_saves(state(60, save_steps=10, best=10), [10, 50, 60])
    assert removed == [20, 30, 40]
    assert note == (
        "rotation removed 3 earlier saves (steps 20, 30, 40): trainer_state.json (save_steps 10, "
        "global_step 60) implies 6; step 10 stays as best_model_checkpoint; the analysis covers "
        "steps 10, 50, 60"
    )
    # the best checkpoint among the newest: nothing said of it
    removed, note = removed_saves(state(60, save_steps=10, best=50), [50, 60])
    assert removed == [10, 20, 30, 40] and "best_model_checkpoint" not in note
    # transformers before best_global_step: the step read from the checkpoint's path
    older = state(60, save_steps=10)
    older["best_model_checkpoint"] = "/runs/out/checkpoint-20"
    assert removed_saves(older, [20, 50, 60])[0] == [10, 30, 40]


def test_steps_analysed_from_kept_records_are_named():
    """A save whose weights rotation removed after its topology was computed stays analysed."""
    removed, note = removed_saves(state(60, save_steps=10), [40, 50, 60], [30, 40, 50, 60])
    assert removed == [10, 20, 30]
    assert note.endswith(
        "the analysis covers steps 30 … 60 (step 30 from earlier topology records)"
    )


@pytest.mark.parametrize(
    ("doc", "disk"),
    [
        (state(60, save_steps=10), range(10, 70, 10)),  # every save is on disk
        (state(100, per_epoch=20), [20, 40, 60, 80, 100]),  # every epoch's save is on disk
        (state(60, save_steps=10), []),  # nothing on disk
    ],
)
def test_nothing_removed_gives_no_note(doc, disk):
    assert removed_saves(doc, disk) == ([], None)


@pytest.mark.parametrize(
    ("doc", "disk", "why"),
    [
        (["not", "a", "state"], [60], "trainer_state.json is not a JSON object"),
        ({"save_steps": 10}, [60], "trainer_state.json gives global_step None"),
        ({**state(60, save_steps=10), "global_step": "60"}, [60], "gives global_step '60'"),
        (state(60, save_steps=10), [50, 70], "the newest checkpoint is step 70 but"),
        (state(60, save_steps=7, per_epoch=7.5), [40, 50, 60], "fit neither"),
        ({"global_step": 60}, [40, 50, 60], "fit neither trainer_state.json's save_steps (None)"),
        (state(60, save_steps=10), [10, 30, 60], "are not the newest of the saves"),
        (state(60, per_epoch=10), [60], "fit several readings"),  # final save or 6 epochs?
    ],
)
def test_odd_states_say_they_could_not_be_checked(doc, disk, why):
    removed, note = removed_saves(doc, disk)
    assert removed == [] and note.startswith(CANNOT + ": ") and why in note


def test_hand_deleted_gaps_are_not_blamed_on_rotation():
    _, note = removed_saves(state(60, save_steps=10), [10, 30, 60])
    assert "rotation removed" not in note
    assert "steps 20, 40, 50 are not on disk (deleted by hand, or never saved" in note


def test_a_run_reads_its_newest_listed_checkpoints_state_without_listing_again(tmp_path):
    for step in (40, 50, 60):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}/model.safetensors").write_bytes(b"")
    listed = {c.step: c for c in local_checkpoints(tmp_path, "checkpoint-*")}
    assert run_rotation_note(listed, [40, 50, 60]) is None
    (tmp_path / "checkpoint-50/trainer_state.json").write_text(json.dumps(state(50, 10)))
    (tmp_path / "checkpoint-60/trainer_state.json").write_text(json.dumps(state(60, 10)))
    (tmp_path / "checkpoint-70").mkdir()  # saved after the listing: not read
    (tmp_path / "checkpoint-70/trainer_state.json").write_text(json.dumps(state(70, 5)))
    note = run_rotation_note(listed, [40, 50, 60])
    assert note.startswith("rotation removed 3 earlier saves (steps 10, 20, 30): ")
    assert "checkpoint-60/trainer_state.json (save_steps 10, global_step 60)" in note
    (tmp_path / "checkpoint-60/trainer_state.json").write_text('{"global_step": 6')
    note = run_rotation_note(listed, [40, 50, 60])
    assert note.startswith(f"{CANNOT}: checkpoint-60/trainer_state.json cannot be read")


def test_long_step_lists_are_shortened():
    assert steps_text([10]) == "step 10"
    assert steps_text([10, 20]) == "steps 10, 20"
    assert steps_text(range(10, 110, 10)) == "steps 10, 20, 30, …, 90, 100 (10 in all)"


# --- against transformers.Trainer: its saves recorded by a callback, rotation its own -------------


def trainer_saves(out, **args) -> tuple[list[int], list[int], dict]:
    """Train a tiny GPT-2 with ``args``: (every step it saved at, the checkpoints its rotation
    left, the newest one's trainer_state.json)."""
    import torch
    from run_fixtures import tiny_model, windows
    from transformers import Trainer, TrainerCallback, TrainingArguments

    rows = torch.from_numpy(windows()[:160])  # 20 steps an epoch at batch size 8

    class Rows(torch.utils.data.Dataset):
        def __len__(self):
            return len(rows)

        def __getitem__(self, i):
            return {"input_ids": rows[i], "labels": rows[i]}

    class Saves(TrainerCallback):
        def __init__(self):
            self.steps = []

        def on_save(self, args, state, control, **kwargs):
            self.steps.append(state.global_step)

    defaults = dict(per_device_train_batch_size=8, learning_rate=3e-3, logging_steps=5)
    args = TrainingArguments(
        output_dir=str(out),
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        save_only_model=True,
        **{**defaults, **args},
    )
    saves = Saves()
    trainer = Trainer(
        tiny_model("gpt2"), args, train_dataset=Rows(), eval_dataset=Rows(), callbacks=[saves]
    )
    trainer.train()
    disk = sorted(int(p.split("-")[1]) for p in os.listdir(out) if p.startswith("checkpoint-"))
    with open(out / f"checkpoint-{disk[-1]}" / "trainer_state.json") as fh:
        return saves.steps, disk, json.load(fh)


TRAINER_RUNS = {  # TrainingArguments of runs whose rotation removes saves
    "steps": dict(max_steps=30, save_steps=5, save_total_limit=3),
    "fraction": dict(max_steps=30, save_steps=0.15, save_total_limit=2),  # ceil(30 × 0.15) = 5
    "epoch": dict(
        num_train_epochs=4,
        per_device_train_batch_size=16,
        save_strategy="epoch",
        save_total_limit=2,
    ),
    "best": dict(
        max_steps=30,
        save_steps=5,
        eval_strategy="steps",
        eval_steps=5,
        save_total_limit=3,
        load_best_model_at_end=True,
        metric_for_best_model="loss",
        greater_is_better=True,
    ),  # the highest eval loss is "best": the first save
}


@pytest.mark.parametrize("kind", TRAINER_RUNS)
def test_removed_saves_are_those_the_trainer_saved_and_its_rotation_deleted(kind, tmp_path):
    saved, disk, doc = trainer_saves(tmp_path / kind, **TRAINER_RUNS[kind])
    removed, note = removed_saves(doc, disk)
    assert len(saved) > len(disk)  # rotation removed some
    assert removed == sorted(set(saved) - set(disk)) and note.startswith("rotation removed")
    if kind == "best":
        assert disk[0] == saved[0] and "stays as best_model_checkpoint" in note
