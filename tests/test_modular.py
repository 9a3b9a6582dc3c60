"""The grokking control's data, knobs and training run (tiny p, a few hundred steps)."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from topotrain.sources.checkpoint import read_checkpoint
from topotrain.training.modular import (
    METRICS,
    ControlConfig,
    ModularTransformer,
    evaluate,
    split_pairs,
    train_control,
)

TINY = dict(p=23, width=32, heads=4, mlp=64, steps=300, interval=50, lr=1e-2)


def test_the_split_covers_every_pair_once_with_the_right_answers():
    train, test = split_pairs(23, 0.6, seed=1)
    assert len(train) == round(0.6 * 23 * 23) and len(train) + len(test) == 23 * 23
    both = torch.cat([train, test])
    assert {(int(a), int(b)) for a, b, _ in both} == {(a, b) for a in range(23) for b in range(23)}
    assert all(int(c) == (int(a) + int(b)) % 23 for a, b, c in both)
    again, _ = split_pairs(23, 0.6, seed=1)
    assert torch.equal(train, again) and not torch.equal(train, split_pairs(23, 0.6, seed=2)[0])


@pytest.mark.parametrize(
    ("knob", "value"),
    [("p", 4), ("train_frac", 1.0), ("train_frac", 0.0), ("interval", 7), ("width", 30)],
)
def test_bad_knobs_are_named(knob, value):
    with pytest.raises(ValueError, match=rf"control\.{knob}={value!r}: "):
        ControlConfig(**{**TINY, knob: value})


def test_accuracy_and_loss_match_a_direct_computation():
    torch.manual_seed(0)
    cfg = ControlConfig(**TINY)
    model = ModularTransformer(cfg)
    rows = split_pairs(cfg.p, cfg.train_frac, 0)[1]
    loss, acc = evaluate(model, rows)
    with torch.no_grad():  # one pair at a time
        logits = torch.stack([model(r[None, :2])[0] for r in rows])
    expected = torch.nn.functional.cross_entropy(logits, rows[:, 2])
    assert loss == pytest.approx(float(expected), rel=1e-5)
    assert acc == pytest.approx(float((logits.argmax(1) == rows[:, 2]).float().mean()))


@pytest.mark.long  # `make test-long` (.ci/run runs it)
def test_a_tiny_run_memorises_writes_its_checkpoints_and_repeats_bit_for_bit(tmp_path):
    cfg = ControlConfig(**TINY)
    rows = train_control(cfg, tmp_path / "a")
    metrics = pd.read_csv(tmp_path / "a" / "metrics.csv")
    assert list(metrics.columns) == list(METRICS) and metrics["step"].tolist() == list(
        range(0, 301, 50)
    )
    assert metrics["train_acc"].iloc[-1] == 1.0 and metrics["train_loss"].iloc[-1] < 0.2
    assert metrics["train_loss"].iloc[0] == pytest.approx(rows[0][1])
    files = sorted(p.name for p in (tmp_path / "a").glob("step_*.safetensors"))
    assert files == [f"step_{s:05d}.safetensors" for s in range(0, 301, 50)]
    train_control(cfg, tmp_path / "b")
    for name in [*files, "metrics.csv"]:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_a_trained_run_gives_one_feature_row_per_checkpoint(tmp_path):
    from safetensors.torch import load_file

    from topotrain.jobs.control import control_features

    cfg = ControlConfig(**{**TINY, "steps": 100})
    train_control(cfg, tmp_path)
    table, layers = control_features(tmp_path, cfg.p, read=read_checkpoint)
    assert table["step"].tolist() == [0, 50, 100]
    threads = torch.get_num_threads()  # every checkpoint records it; mha: nn.MultiheadAttention
    assert table["numerics"].str.contains(f"^device=cpu; .*; threads={threads}; ").all()
    assert table["numerics"].str.contains("; attention=mha; ").all()
    matrices = {
        "embed.weight",
        "pos",
        "attn.in_proj_weight",
        "attn.out_proj.weight",
        "mlp.0.weight",
        "mlp.2.weight",
        "unembed.weight",
    }
    assert set(layers["layer"]) == matrices and len(layers) == 3 * len(matrices)
    last = load_file(str(tmp_path / "step_00100.safetensors"))
    norm = torch.sqrt(sum((t.double() ** 2).sum() for t in last.values()))
    assert table["weight_l2"].iloc[-1] == pytest.approx(float(norm), rel=1e-9)
    assert (
        table[["emb_h0_total", "emb_h1_total", "fourier_top5", "effective_rank"]]
        .notna()
        .all()
        .all()
    )


@pytest.mark.long  # `make test-long` (.ci/run runs it)
def test_a_killed_run_resumes_to_the_bytes_of_an_uninterrupted_one(tmp_path, monkeypatch):
    from topotrain.training import modular

    cfg = ControlConfig(**TINY)
    real = modular.save_weights

    def crash(model, step, cfg, out):
        if step == 150:
            raise RuntimeError("killed")
        real(model, step, cfg, out)

    monkeypatch.setattr(modular, "save_weights", crash)
    with pytest.raises(RuntimeError, match="killed"):
        train_control(cfg, tmp_path / "killed")
    assert (tmp_path / "killed" / "resume.pt").exists()
    monkeypatch.undo()
    train_control(cfg, tmp_path / "killed")
    train_control(cfg, tmp_path / "fresh")
    names = sorted(p.name for p in (tmp_path / "fresh").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "killed").iterdir())
    assert "resume.pt" not in names
    for name in names:
        assert (tmp_path / "killed" / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes()
    other = ControlConfig(**{**TINY, "seed": 1})
    modular.atomic_torch_save({"config": "x"}, tmp_path / "fresh" / "resume.pt")
    with pytest.raises(ValueError, match="saved by another control config"):
        train_control(other, tmp_path / "fresh")
