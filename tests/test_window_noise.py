"""What per-seed validation windows add to the between-seed variance of val_loss
(training.window_noise): the pooled variance and the share against hand computations, and the
two schemes' losses against what training recorded."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import write_random_tokens
from test_train import CFG, MODEL
from torch.nn import functional as F

from topotrain.training.run_state import load_checkpoint
from topotrain.training.train import train_model
from topotrain.training.window_noise import (
    added_share,
    deviation_variance,
    deviations,
    draw_variance,
    perseed_offsets,
    window_study,
    window_variance,
)

SEEDS = (7, 8)


def table(values: dict[int, list[float]], column: str = "val_loss") -> pd.DataFrame:
    """seed → its value at steps 0, 10, 20, … as a long table."""
    rows = [
        {"seed": seed, "step": 10 * i, column: v}
        for seed, series in values.items()
        for i, v in enumerate(series)
    ]
    return pd.DataFrame(rows)


def test_deviation_variance_is_the_pooled_between_seed_variance_by_hand():
    losses = table({1: [1.0, 0.5], 2: [2.0, 0.5], 3: [4.0, 2.0]})
    # step 0: mean 7/3, deviations −4/3, −1/3, 5/3 (squares 42/9); step 10: mean 1, −½, −½, 1 (1.5)
    assert deviations(losses, "val_loss").tolist() == pytest.approx(
        [-4 / 3, -0.5, -1 / 3, -0.5, 5 / 3, 1.0]
    )
    assert deviation_variance(losses, "val_loss") == pytest.approx((42 / 9 + 1.5) / (2 * 2))
    # a shift common to every seed at a step (what common windows add) changes nothing
    shifted = losses.assign(val_loss=losses["val_loss"] + losses["step"] * 0.37)
    assert deviation_variance(shifted, "val_loss") == pytest.approx((42 / 9 + 1.5) / 4)


def test_added_share_by_hand_and_its_errors():
    assert added_share(2.0, 1.5) == pytest.approx(0.25)
    assert added_share(2.0, 2.5) == pytest.approx(-0.25)
    with pytest.raises(ValueError, match=r"var_perseed=0\.0: must be positive"):
        added_share(0.0, 1.0)


def test_deviations_refuse_what_cannot_be_compared():
    with pytest.raises(ValueError, match="steps \\[10\\] lack some of the 2 seeds"):
        deviations(table({1: [1.0, 2.0], 2: [1.5]}), "val_loss")
    with pytest.raises(ValueError, match="1 seed\\(s\\)"):
        deviations(table({1: [1.0, 2.0]}), "val_loss")
    with pytest.raises(ValueError, match="no column 'val_loss_common'"):
        deviations(table({1: [1.0], 2: [2.0]}), "val_loss_common")


def test_window_variance_splits_a_per_seed_window_offset_from_the_seed_deviations():
    """Per-seed windows modelled as a constant offset per seed (−0.1, 0, 0.1) on top of true
    deviations a_t·(1, −2, 1), orthogonal to it: var_perseed = var_common + var_windows exactly,
    and the share is var_windows / var_perseed."""
    a = np.array([0.3, 0.2, 0.05, 0.04])
    offset = {1: -0.1, 2: 0.0, 3: 0.1}
    shape = {1: 1.0, 2: -2.0, 3: 1.0}
    rows = []
    for i, at in enumerate(a):
        for seed in (1, 2, 3):
            common = 2.0 - 0.1 * i + at * shape[seed]
            rows.append(
                {
                    "seed": seed,
                    "step": 10 * i,
                    "val_loss_common": common,
                    "val_loss_perseed": common + offset[seed],
                }
            )
    summary = window_variance(pd.DataFrame(rows))
    var_common = (a**2).sum() * 6 / (4 * 2)  # Σ_t a_t² (1 + 4 + 1) / (n_steps (n_seeds − 1))
    var_windows = 4 * 0.02 / (4 * 2)  # (0.01 + 0 + 0.01) at each of the 4 steps
    assert summary["seeds"] == 3 and summary["steps"] == 4
    assert summary["var_common"] == pytest.approx(var_common)
    assert summary["var_windows"] == pytest.approx(var_windows)
    assert summary["var_perseed"] == pytest.approx(var_common + var_windows)
    assert summary["share"] == pytest.approx(var_windows / (var_common + var_windows))
    assert "var_full" not in summary


def test_perseed_offsets_are_the_old_scheme():
    n, shape = 800, (CFG.eval_batches, CFG.eval_batch_size)
    gen = torch.Generator().manual_seed(CFG.seed + 1)
    assert torch.equal(
        perseed_offsets(n, MODEL.block_size, CFG),
        torch.randint(n - MODEL.block_size, shape, generator=gen),
    )
    other = perseed_offsets(n, MODEL.block_size, replace(CFG, seed=CFG.seed + 1))
    assert not torch.equal(perseed_offsets(n, MODEL.block_size, CFG), other)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[dict[int, Path], Path]:
    """Two seeds of test_train's CFG (full evaluation every 2nd checkpoint); their val.bin."""
    root = tmp_path_factory.mktemp("window_noise")
    corpus = write_random_tokens(root)
    outs = {}
    for seed in SEEDS:
        cfg = replace(CFG, seed=seed, full_eval_every=2)
        train_model(MODEL, cfg, *corpus, root / f"out{seed}", root / "state", progress=False)
        outs[seed] = root / f"out{seed}"
    return outs, corpus[1]


def test_window_study_scores_the_recorded_common_windows_and_the_old_ones(runs):
    outs, val_bin = runs
    losses, summary = window_study(outs, val_bin, replace(CFG, full_eval_every=2), full=True)
    assert sorted(losses["step"].unique()) == [0, 10, 20, 30, 40] and len(losses) == 10
    for seed, out in outs.items():
        ours = losses[losses["seed"] == seed].set_index("step")
        evals = pd.read_csv(out / "evals.csv").set_index("step")
        # the common windows are what training recorded, at every checkpoint
        assert ours["val_loss_common"].to_numpy() == pytest.approx(evals["val_loss"].to_numpy())
        measured = evals["val_loss_full"].dropna()
        assert measured.index.tolist() == [0, 20, 40]
        assert ours.loc[measured.index, "val_loss_full"].to_numpy() == pytest.approx(
            measured.to_numpy()
        )
        assert (ours["val_loss_perseed"] - ours["val_loss_common"]).abs().min() > 1e-6
    assert summary["var_perseed"] == pytest.approx(deviation_variance(losses, "val_loss_perseed"))
    assert summary["share"] == pytest.approx(
        (summary["var_perseed"] - summary["var_common"]) / summary["var_perseed"]
    )
    late, _ = window_study(outs, val_bin, CFG, skip_first=True)
    assert sorted(late["step"].unique()) == [10, 20, 30, 40] and "val_loss_full" not in late


def test_window_study_names_missing_checkpoints(runs, tmp_path):
    outs, val_bin = runs
    with pytest.raises(FileNotFoundError, match="5 checkpoint\\(s\\) missing"):
        window_study({7: outs[7], 9: tmp_path / "nothing"}, val_bin, CFG)


def test_draw_variance_is_the_variance_over_independent_window_draws(runs):
    outs, val_bin = runs
    model, _ = load_checkpoint(outs[7] / "step_00040.safetensors")
    tokens = torch.from_numpy(np.fromfile(val_bin, dtype=np.uint8))
    T, shape = MODEL.block_size, (CFG.eval_batches, CFG.eval_batch_size)
    losses = []
    for seed in range(10**6, 10**6 + 5):  # each draw's windows by hand, scored by hand
        gen = torch.Generator().manual_seed(seed + 1)
        starts = torch.randint(800 - T, shape, generator=gen).flatten()
        rows = torch.stack([tokens[i : i + T + 1].long() for i in starts.tolist()])
        with torch.no_grad():
            logits = model(rows[:, :-1])[0]
        losses.append(F.cross_entropy(logits.flatten(0, 1), rows[:, 1:].flatten()).item())
    assert draw_variance(model, tokens, CFG, draws=5) == pytest.approx(np.var(losses, ddof=1))
    with pytest.raises(ValueError, match="draws=1: need at least 2"):
        draw_variance(model, tokens, CFG, draws=1)
