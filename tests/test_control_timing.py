"""The grokking control's timing rules on hand-made curves."""

from __future__ import annotations

import numpy as np
import pytest

from topotrain.analysis.control.features import grokking_step, lead, onset_step
from topotrain.sources.checkpoint import read_checkpoint

STEPS = np.arange(0, 1100, 100)


def test_grokking_is_the_first_checkpoint_at_or_above_the_threshold():
    acc = [0.1, 0.5, 0.55, 0.6, 0.7, 0.94, 0.95, 0.99, 1.0, 1.0, 1.0]
    assert grokking_step(STEPS, acc) == 600
    assert grokking_step(STEPS, [0.5] * 11) is None  # never groks: None, not an error


def test_onset_is_the_first_checkpoint_past_half_the_total_change_in_either_direction():
    rising = [0, 0, 1, 2, 4, 6, 8, 9, 10, 10, 10]  # half of 10 is first reached at 6
    assert onset_step(STEPS, rising) == 500
    assert onset_step(STEPS, [-v for v in rising]) == 500
    assert onset_step(STEPS, [3.0] * 11) is None  # no change, no onset
    nan = [np.nan, 0, 1, 2, 4, 6, 8, 9, 10, 10, 10]  # v_0 is the first finite value
    assert onset_step(STEPS, nan) == 500


def test_lead_is_grokking_minus_onset_and_undefined_without_either():
    assert lead(600, 500) == 100.0 and lead(500, 600) == -100.0
    assert np.isnan(lead(None, 500)) and np.isnan(lead(600, None))


def write_run(tmp_path, p: int, steps=(0, 50)):
    """A run directory by hand: embed.weight rows on a circle (+ the '=' row), one other tensor."""
    from safetensors.numpy import save_file

    angle = 2 * np.pi * np.arange(p) / p
    emb = np.vstack([np.column_stack([np.cos(angle), np.sin(angle)]) * 3.0, [[9.0, 9.0]]])
    for s in steps:
        save_file(
            {"embed.weight": emb.astype(np.float32), "w": np.full((2, 2), 0.5, np.float32)},
            str(tmp_path / f"step_{s:05d}.safetensors"),
        )
    rows = "\n".join(f"{s},1.0,2.0,0.5,0.1" for s in steps)
    (tmp_path / "metrics.csv").write_text(f"step,train_loss,test_loss,train_acc,test_acc\n{rows}\n")


def test_control_features_read_a_run_against_closed_forms(tmp_path):
    from topotrain.jobs.control import control_features

    p = 23
    write_run(tmp_path, p)
    table, layers = control_features(tmp_path, p, seed=7, read=read_checkpoint)
    assert table["step"].tolist() == [0, 50] and (table["test_acc"] == 0.1).all()
    assert (table["model"] == "control").all() and (table["seed"] == 7).all()
    birth, death = 2 * np.sin(np.pi / p), 2 * np.sin(np.pi * 8 / p)  # ⌈23/3⌉ = 8
    assert table["emb_h1_max"].to_numpy() == pytest.approx([death - birth] * 2, rel=1e-5)
    assert table["emb_row_norm"].to_numpy() == pytest.approx([3.0, 3.0], rel=1e-6)
    assert table["fourier_top5"].to_numpy() == pytest.approx([1.0, 1.0])  # one frequency
    # √(Σ w²): 23 rows of norm 3, the '=' row (9, 9), four 0.5s
    assert table["weight_l2"].iloc[0] == pytest.approx(np.sqrt(23 * 9 + 162 + 4 * 0.25), rel=1e-6)
    assert table["participation_ratio"].iloc[0] == pytest.approx(2.0, rel=1e-6)  # a round circle
    # every 2-D matrix's weight topology: the 2 × 2 constant w has NP 0 and normalised variance 0
    assert sorted(layers["layer"].unique()) == ["embed.weight", "w"]
    w = layers[layers["layer"] == "w"]
    assert (w["np_total"] == 0).all() and (w["np_wvar"] == 0).all()
    assert table["n_layers"].tolist() == [2, 2]
    assert table["np_wvar_mean"].iloc[0] == pytest.approx(layers["np_wvar"].iloc[:2].mean())


def test_control_features_name_a_step_without_metrics(tmp_path):
    from topotrain.jobs.control import control_features

    write_run(tmp_path, 11)
    (tmp_path / "metrics.csv").write_text(
        "step,train_loss,test_loss,train_acc,test_acc\n0,1,2,0.5,0.1\n"
    )
    with pytest.raises(ValueError, match=r"disagree at steps \[50\]"):
        control_features(tmp_path, 11, read=read_checkpoint)
