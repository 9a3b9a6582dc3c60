"""Losses where Trainer leaves them, and loss files with a value that is not a number."""

from __future__ import annotations

import json

import pytest

from topotrain.sources.losses import LossesError, read_losses
from topotrain.sources.runs import Checkpoint, newest_trainer_state


def test_the_newest_checkpoints_trainer_state_is_found(tmp_path):
    checkpoints = {}
    for step in (10, 20, 30):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"")
        if step < 30:  # the newest holds none: the one before it is the newest that does
            history = [{"step": s, "loss": 1.0 / s} for s in range(5, step + 1, 5)]
            (folder / "trainer_state.json").write_text(json.dumps({"log_history": history}))
        checkpoints[step] = Checkpoint(step, folder.name, (str(folder / "model.safetensors"),))
    found = newest_trainer_state(checkpoints)
    assert found == tmp_path / "checkpoint-20" / "trainer_state.json"
    assert read_losses(found)["step"].tolist() == [5, 10, 15, 20]
    assert newest_trainer_state({1: Checkpoint(1, "step1", (), "step1")}) is None  # a hub revision


def test_a_value_that_is_not_a_number_is_refused_with_file_row_and_column(tmp_path):
    path = tmp_path / "losses.csv"
    path.write_text("step,loss,eval_loss\n0,4.1,4.2\n10,3.9,\n20,oops,3.5\n")
    with pytest.raises(LossesError, match=r"losses\.csv: row 3, column 'loss': 'oops' is not a"):
        read_losses(path)
    path.write_text("step,loss\n0,4.1\nten,3.9\n")
    with pytest.raises(LossesError, match=r"row 2, column 'step': 'ten'"):
        read_losses(path)
    path.write_text("step,loss,eval_loss\n0,4.1,4.2\n10,3.9,\n")  # an empty cell is not logged
    assert read_losses(path)["val_loss"].isna().tolist() == [False, True]


def test_an_adapter_folder_gets_a_hint_and_its_lora_factors_by_pattern(tmp_path):
    """A PEFT LoRA adapter (adapter_config.json + lora_A/lora_B tensors, no config.json): the
    error names the patterns that work, and those patterns select the factors as (out, in)."""
    import numpy as np
    from safetensors.numpy import save_file

    from topotrain.sources.runs import RunError, layer_map

    folder = tmp_path / "checkpoint-10"
    folder.mkdir()
    base = "base_model.model.transformer.h.0.attn.c_attn"
    save_file(
        {
            f"{base}.lora_A.weight": np.ones((4, 16), np.float32),
            f"{base}.lora_B.weight": np.ones((48, 4), np.float32),
        },
        str(folder / "adapter_model.safetensors"),
    )
    (folder / "adapter_config.json").write_text('{"peft_type": "LORA", "r": 4}')
    files = [str(folder / "adapter_model.safetensors")]
    options = {"layers": None, "transposed": [], "include_embeddings": False, "include_head": False}
    with pytest.raises(RunError, match=r'LoRA/PEFT adapter: `layers: \["\*lora_B.weight"\]`'):
        layer_map(options, files, None, "runs.adapter")
    chosen = layer_map({**options, "layers": ["*lora_B.weight"]}, files, None, "runs.adapter")
    assert [m["name"] for m in chosen["layers"]] == [f"{base}.lora_B.weight"]
