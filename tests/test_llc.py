"""The local learning coefficient (``baselines.llc``): devinterp's estimator against a model whose
learning coefficient is known (a regular model: λ = d/2), bit-identical reruns, the weights left
as they were, the GPT job's windows and rows, and a clear error when devinterp is missing."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from topotrain.baselines import llc as L
from topotrain.config.checks import llc_problems

devinterp = pytest.importorskip("devinterp", reason="the llc extra (devinterp) is not installed")


def regression(d: int, n: int = 2000, seed: int = 0):
    """Linear regression y = X·w + N(0, 1) with d weights at their least-squares fit: a regular
    model (Fisher information X'X/n of full rank), so λ = d/2; the loss is the per-sample
    negative log-likelihood up to its constant, ½(y − x·w)²."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = x @ torch.randn(d, generator=g) + torch.randn(n, generator=g)
    model = torch.nn.Linear(d, 1, bias=False)
    with torch.no_grad():
        model.weight[:] = torch.linalg.lstsq(x, y[:, None]).solution.T

    def loss_fn(m, ids):
        i = ids[:, 0]
        return 0.5 * (y[i] - m(x[i]).squeeze(-1)).pow(2)[:, None]

    return model, torch.arange(n)[:, None].repeat(1, 2), loss_fn


# nβ = n/log n (Watanabe's β* = 1/log n), ε small enough that the mini-batch gradient noise and
# the discretisation add a few per cent (about (ε/4)·nβ·(1 + nβ/B) ≈ 6 % here), every batch of
# the data once in the loss at w* (init_batches × B = n), 4 × 400 steps
KNOWN = L.LLCSettings(
    lr=3e-4, localization=1.0, nbeta=2000 / math.log(2000), chains=4, draws=400,
    batch_size=100, init_batches=20, seed=1,
)  # fmt: skip


def test_a_regular_model_gets_half_its_parameter_count():
    """λ = d/2 for d = 2 and 8: each estimate within 20 % (measured here: 0.88 and 4.06, the
    chains' spread 0.09 and 0.25), and the ratio of the two near 4."""
    got = {}
    for d in (2, 8):
        model, ids, loss_fn = regression(d)
        got[d] = L.estimate(model, ids, loss_fn, KNOWN)
        assert got[d]["llc"] == pytest.approx(d / 2, rel=0.2)
        assert got[d]["llc_std"] < 0.2 * d / 2
        chains = np.array(got[d]["llc_chains"])
        assert chains.size == 4 and got[d]["llc"] == pytest.approx(chains.mean(), abs=1e-12)
        assert got[d]["llc_half1"] == pytest.approx(chains[:2].mean(), abs=1e-12)
        assert got[d]["llc_half2"] == pytest.approx(chains[2:].mean(), abs=1e-12)
        assert got[d]["trace"].shape == (4, 400)
    assert 3.0 < got[8]["llc"] / got[2]["llc"] < 5.5


def test_the_estimate_is_the_traces_mean_rise_times_nbeta_and_reruns_bit_identical():
    model, ids, loss_fn = regression(3)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    s = L.LLCSettings(lr=3e-4, localization=1.0, nbeta=100.0, chains=2, draws=40, batch_size=100,
                      init_batches=20, seed=7)  # fmt: skip
    a, b = L.estimate(model, ids, loss_fn, s), L.estimate(model, ids, loss_fn, s)
    assert a["llc"] == b["llc"] and np.array_equal(a["trace"], b["trace"])
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])  # the sampler's moves undone
    # devinterp's estimator: nβ × (each chain's mean loss over its steps − the loss at w*),
    # which it sums in float32: up to draws × ε32 × the largest loss apart, times nβ (CPUs
    # differ in the float32 summation order: 5.6e-6 apart on one, 3e-7 on another)
    per_chain = 100.0 * (a["trace"].mean(axis=1) - a["llc_init_loss"])
    float32_sum = 100.0 * 40 * np.finfo(np.float32).eps * np.abs(a["trace"]).max()
    assert a["llc_chains"] == pytest.approx(per_chain.tolist(), abs=float32_sum)
    assert float32_sum < 2e-3 * min(per_chain)  # still checks the estimator to 0.2 %
    assert a["llc_drift"] == pytest.approx(L.drift(a["trace"], 100.0))
    other = L.estimate(model, ids, loss_fn, L.LLCSettings(**{**s.__dict__, "seed": 8}))
    assert other["llc"] != a["llc"]  # the seed draws the noise


def test_drift_compares_the_traces_last_quarter_with_its_second():
    trace = np.array([[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]])  # quarters of 2 steps
    assert L.drift(trace, 10.0) == pytest.approx(10.0 * ((6 + 7) / 2 - (2 + 3) / 2))
    assert math.isnan(L.drift(np.zeros((2, 3)), 1.0))


def test_the_losses_are_the_models_cross_entropy_per_position():
    from topotrain.training.model import GPT, GPTConfig

    torch.manual_seed(0)
    gpt = GPT(GPTConfig(vocab_size=11, block_size=6, n_layer=1, n_head=1, n_embd=8))
    ids = torch.randint(0, 11, (5, 7))
    per = L.token_loss(gpt, ids)
    assert per.shape == (5, 6)
    _, mean = gpt(ids[:, :-1], ids[:, 1:])
    assert per.mean().item() == pytest.approx(mean.item(), rel=1e-6)

    class Answer(torch.nn.Module):  # the control's interface: logits of the answer from (a, b)
        def forward(self, ab):
            return torch.nn.functional.one_hot(ab[:, 0] % 4, 4).float() * 3.0

    rows = torch.tensor([[1, 2, 3], [2, 2, 0]])
    got = L.answer_loss(Answer(), rows)
    want = torch.nn.functional.cross_entropy(Answer()(rows[:, :2]), rows[:, 2], reduction="none")
    assert got.shape == (2, 2) and torch.equal(got[:, 0], want) and torch.equal(got[:, 1], want)


def test_gpt_windows_are_seeded_slices_of_the_training_split():
    tokens = np.arange(100, dtype=np.uint16)
    a, b = L.gpt_windows(tokens, 9, 12, seed=3), L.gpt_windows(tokens, 9, 12, seed=3)
    assert a.shape == (12, 10) and a.dtype == torch.int64 and torch.equal(a, b)
    assert (a[:, 1:] - a[:, :-1] == 1).all()  # consecutive tokens of the split
    assert not torch.equal(a, L.gpt_windows(tokens, 9, 12, seed=4))
    with pytest.raises(ValueError, match="fewer than 10"):
        L.gpt_windows(tokens[:5], 9, 3, seed=0)


def test_training_llc_gives_a_row_and_a_trace_per_checkpoint(tmp_path):
    from topotrain.training.model import GPT, GPTConfig
    from topotrain.training.run_state import save_checkpoint

    torch.manual_seed(1)
    gpt = GPT(GPTConfig(vocab_size=128, block_size=8, n_layer=1, n_head=1, n_embd=8))
    paths = []
    for step in (0, 10):
        paths.append(str(tmp_path / f"step_{step:05d}.safetensors"))
        save_checkpoint(gpt, step, paths[-1])
    np.arange(400, dtype=np.uint16).__mod__(128).astype(np.uint16).tofile(tmp_path / "train.bin")
    cfg = {"lr": 1e-4, "localization": 100.0, "nbeta": None, "chains": 2, "draws": 8,
           "batch_size": 4, "init_batches": 2, "sequences": 16, "seed": 0, "every": 1}  # fmt: skip
    from topotrain.training.llc import training_llc

    rows, traces = training_llc(paths, str(tmp_path / "train.bin"), cfg)
    table = pd.DataFrame(rows)
    assert table["step"].tolist() == [0, 10] and np.isfinite(table["llc"]).all()
    assert table.loc[0, "llc"] == table.loc[1, "llc"]  # the same weights, windows and noise
    assert sorted(traces) == ["trace_0", "trace_10"] and traces["trace_0"].shape == (2, 8)
    assert L.LLCSettings.of(cfg).resolved_nbeta() == pytest.approx(4 / math.log(4))


def test_llc_on_without_devinterp_is_said_before_any_job(monkeypatch):
    import importlib.util

    on = {"baselines": {"llc": {"enabled": True}}}
    assert llc_problems({"baselines": {"llc": {"enabled": False}}}) == []
    assert llc_problems(on) == []  # installed here
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "devinterp" else real(name)
    )
    (problem,) = llc_problems(on)
    assert "baselines.llc.enabled" in problem and "topotrain[llc]" in problem


def test_the_llc_column_is_a_feature_of_kind_llc_in_the_diagnostics():
    from topotrain.analysis.inference.diagnostics import diagnosed
    from topotrain.analysis.inference.stats import feature_kinds, kind

    pairs = feature_kinds(pd.DataFrame({"llc": [1.0], "step": [0]}))
    assert ("llc", "llc") in pairs and kind("llc") == "llc"
    assert ("llc", "llc") not in feature_kinds(pd.DataFrame({"step": [0]}))
    assoc = pd.DataFrame(
        {"kind": ["llc", "baseline", "topological"], "feature": ["llc", "step", "np_mean"]}
    )
    assert diagnosed(assoc).tolist() == [True, False, True]


def test_beyond_the_llc_is_the_split_half_partial_on_two_halves_of_its_chains():
    """The same test as beyond α (``split_rows``, calibrated on a latent measured twice with
    independent errors), on the LLC of two disjoint halves of its chains: a feature tracking the
    loss only through what the LLC measures is not beyond it, one with the loss's own part is;
    its rows equal split_cell's on llc_half1/2 pooled; the LLC's own row is undefined, noted;
    the diagnostics table carries them as rho_llc, p_llc, beats_llc, split_r_llc."""
    from test_associations import latent_table, pooled_split_p

    from topotrain.analysis.inference.diagnostics import (
        LLC_HALVES,
        diagnostics_table,
        partial_contrasts,
    )

    df, _ = latent_table(5, LLC_HALVES)
    df["llc"] = (df[LLC_HALVES[0]] + df[LLC_HALVES[1]]) / 2
    table = partial_contrasts(df, ["np_mean", "h0_count", "llc"], seed=0)
    table = table.set_index(["feature", "beyond"])
    assert set(table.index.get_level_values("beyond")) == {"wvar", "grad", "llc"}  # no α halves
    through = table.loc[("h0_count", "llc")]
    assert through["split_r"] > 0.5 and through["p"] > 0.05
    assert table.loc[("np_mean", "llc"), "p"] < 0.01
    assert np.isnan(table.loc[("llc", "llc"), "p"]) and "llc" in table.loc[("llc", "llc"), "note"]
    assert through["p"] == pooled_split_p(df, "h0_count", LLC_HALVES)
    assoc = pd.DataFrame(
        [{"model": "pooled", "feature": f, "kind": k, "target": "val_loss", "view": v, "rho": 0.5,
          "p": 0.01, "effect": 0.2, "effect_ci_low": 0.1, "effect_ci_high": 0.3,
          "beats_clock": True, "beats_scale": True}
         for f, k in (("np_mean", "topological"), ("h0_count", "topological"))
         for v in ("raw", "seed_contrast", "seed_contrast_l2")]
    )  # fmt: skip
    diag = diagnostics_table(assoc, 0.1, partials=table.reset_index()).set_index("feature")
    assert diag.loc["np_mean", "beats_llc"] and not diag.loc["h0_count", "beats_llc"]
    assert diag.loc["h0_count", "split_r_llc"] == pytest.approx(through["split_r"])
    assert diag.loc["h0_count", "p_llc"] == through["p"] and np.isnan(
        diag.loc["np_mean", "split_r"]
    )


def test_control_llc_measures_each_checkpoint_on_the_seeds_training_pairs(tmp_path):
    from topotrain.training.llc import control_llc
    from topotrain.training.modular import (
        ControlConfig,
        ModularTransformer,
        save_weights,
        split_pairs,
    )

    knobs = {"p": 7, "train_frac": 0.5, "width": 8, "heads": 1, "mlp": 16, "steps": 10,
             "interval": 5, "lr": 1e-3, "weight_decay": 1.0, "beta2": 0.98}  # fmt: skip
    cfg = ControlConfig(**knobs, seed=3)
    torch.manual_seed(0)
    model = ModularTransformer(cfg)
    save_weights(model, 5, cfg, tmp_path)
    (path,) = [str(p) for p in tmp_path.glob("*.safetensors")]
    s = {"lr": 1e-4, "localization": 100.0, "nbeta": None, "chains": 2, "draws": 6,
         "batch_size": 8, "init_batches": 2, "seed": 0}  # fmt: skip
    rows, traces = control_llc([path], knobs, 3, s)
    assert [r["step"] for r in rows] == [5] and traces["trace_5"].shape == (2, 6)
    train, _ = split_pairs(7, 0.5, 3)  # the same rows, loss and weights directly
    direct = L.estimate(model, train.to(torch.int64), L.answer_loss, L.LLCSettings.of(s))
    assert rows[0]["llc"] == direct["llc"]


def test_the_controls_llc_sentences_carry_their_numbers():
    from topotrain.report.control import llc_sentences

    base = {"contrast_rho": 0.8, "contrast_p": 0.01, "effect": 0.5, "effect_ci_low": 0.2,
            "effect_ci_high": 0.7, "rho_norm": 0.6, "p_norm": 0.02, "beats_norm": True,
            "rho_fourier": 0.1, "p_fourier": 0.6, "beats_fourier": False}  # fmt: skip
    emb = {"feature": "emb_h1_total", "rho_llc": 0.55, "p_llc": 0.004, "beats_llc": True,
           "split_r_llc": 0.81}  # fmt: skip
    table = pd.DataFrame([{"feature": "llc", **base}, {**base, **emb}])
    text = llc_sentences(table, "emb_h1_total")
    assert "tracks each seed's test loss" in text and "ρ 0.80" in text
    assert "beyond the weight norm ρ 0.60 (p 0.02)" in text
    assert "beyond the Fourier measure ρ 0.10 (p 0.6)" in text
    assert "does not move with the test loss beyond both" in text
    assert "ρ 0.55, exact p 0.004 (halves agree r = 0.81): it goes beyond the LLC" in text
    table.loc[1, ["p_llc", "split_r_llc"]] = [np.nan, 0.3]
    assert "r = 0.30 < 0.5" in llc_sentences(table, "emb_h1_total")
    assert llc_sentences(table[table["feature"] != "llc"], "emb_h1_total") == ""


def test_llc_steps_are_every_every_th_checkpoint_and_the_last():
    from topotrain.config import llc_steps

    assert llc_steps([0, 10, 20, 30, 40], 2) == [0, 20, 40]
    assert llc_steps([0, 10, 20, 30, 40], 3) == [0, 30, 40]  # the last, off the grid
    assert llc_steps([0, 10], 20) == [0, 10] and llc_steps([], 5) == []
