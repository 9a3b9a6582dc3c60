"""Every figure of the study, drawn on a demo-like input (two tiny models, one seed, five
checkpoints: fits that do not converge, learned predictors and between-seed views undefined) and on
a three-seed one: as matplotlib draws it, no visible text overlaps another and none is cut off by
what is saved (bbox 'tight'), a panel with nothing to draw says why inside itself, titles and
legends name only what is drawn, and each figure draws what its input holds."""

from __future__ import annotations

import re
from pathlib import Path
from unittest import mock

import matplotlib.text as mtext
import numpy as np
import pytest
from figure_inputs import DEMO, THREE, Study
from figure_inputs import checkpoints as table
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.transforms import Bbox

from topotrain.analysis.inference.seed_points import seed_points
from topotrain.analysis.prediction.stopping import stopping_table
from topotrain.report import plots
from topotrain.report.answer import figure_between_seeds
from topotrain.report.effects import figure_effects_forest, figure_horizon_profile, forest_rows
from topotrain.report.figure_kit import WHY

STUDIES = pytest.mark.parametrize("study", [DEMO, THREE], ids=lambda s: s.name)
TOL = 1.0  # pixels two texts may share (antialiasing, glyph padding)
PAD_INCHES = 0.1  # savefig's padding around the tight bbox


def drawn_texts(fig) -> list[mtext.Text]:
    """The visible, non-empty texts matplotlib draws for ``fig`` (each Text.draw call recorded:
    tick labels outside the view, empty titles and the like are not drawn)."""
    FigureCanvasAgg(fig)  # save_figure closed it: pyplot left a bare canvas
    seen: dict = {}
    original = mtext.Text.draw

    def record(self, renderer):
        seen[self] = None
        return original(self, renderer)

    with mock.patch.object(mtext.Text, "draw", record):
        fig.canvas.draw()
    return [t for t in seen if t.get_visible() and t.get_text().strip()]


def corners(text: mtext.Text, renderer) -> np.ndarray:
    """The 4 corners (display pixels) of a text's rotated box: its unrotated size turned by its
    rotation about the centre of its drawn (axis-aligned) extent."""
    box = text.get_window_extent(renderer)
    angle = text.get_rotation()
    text.set_rotation(0)
    flat = text.get_window_extent(renderer)
    text.set_rotation(angle)
    w, h = flat.width / 2 - TOL / 2, flat.height / 2 - TOL / 2
    c, s = np.cos(np.radians(angle)), np.sin(np.radians(angle))
    local = np.array([[-w, -h], [w, -h], [w, h], [-w, h]])
    return local @ np.array([[c, s], [-s, c]]) + [box.x0 + box.width / 2, box.y0 + box.height / 2]


def overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two convex quadrilaterals overlap (separating axis theorem)."""
    for poly in (a, b):
        for i in range(4):
            edge = poly[(i + 1) % 4] - poly[i]
            axis = np.array([-edge[1], edge[0]])
            pa, pb = a @ axis, b @ axis
            if pa.max() <= pb.min() or pb.max() <= pa.min():
                return False
    return True


def check_layout(fig) -> list[mtext.Text]:
    """Draw ``fig`` and assert no two texts overlap, none leaves what savefig keeps (the tight
    bbox, padded) or its clip box, and each panel's reason stays inside its panel; the texts."""
    texts = drawn_texts(fig)
    renderer = fig.canvas.get_renderer()
    kept = fig.get_tightbbox(renderer).padded(PAD_INCHES).transformed(fig.dpi_scale_trans)
    kept = kept.expanded(1, 1).padded(TOL)
    for t in texts:
        box = t.get_window_extent(renderer)
        assert _inside(box, kept), f"{t.get_text()!r} cut off by the saved area"
        if t.get_clip_on() and t.get_clip_box() is not None:
            assert _inside(box, t.get_clip_box().padded(TOL)), f"{t.get_text()!r} clipped"
        if t.get_gid() == WHY:
            frame = t.axes.get_window_extent(renderer).padded(TOL)
            assert _inside(box, frame), f"{t.get_text()!r} spills out of its panel"
    polys = [corners(t, renderer) for t in texts]
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            said = (texts[i].get_text(), texts[j].get_text())
            assert not overlap(polys[i], polys[j]), f"texts overlap: {said}"
    return texts


def _inside(box: Bbox, frame: Bbox) -> bool:
    return frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1


def reasons(fig) -> list[str]:
    """The panels' reasons for drawing nothing, unwrapped."""
    return [" ".join(t.get_text().split()) for t in fig.findobj(mtext.Text) if t.get_gid() == WHY]


def said(text: mtext.Text | str) -> str:
    """A (wrapped) text on one line."""
    return " ".join((text if isinstance(text, str) else text.get_text()).split())


def point_lines(ax) -> list:
    """The axes' lines drawn as markers only (points, not curves or intervals)."""
    return [ln for ln in ax.get_lines() if ln.get_marker() not in ("None", None, "", " ")]


@STUDIES
def test_the_training_figures_draw_a_line_per_model_and_label_the_np_spread(study: Study):
    df, n = table(study), len(study.models)
    fig = plots.figure_overview(df, None, None)
    check_layout(fig)
    a = fig.axes[0]
    assert len(a.get_lines()) == n
    assert [t.get_text() for t in a.get_legend().get_texts()] == [
        f"{m} ({p:,})" for m, p in study.models.items()
    ]
    fig = plots.figure_curves(df, ["np_mean", "np_std"], None, None)
    check_layout(fig)
    titles = [said(ax.get_title()) for ax in fig.axes]
    assert titles == [
        "neural persistence (mean over layers)",
        "neural persistence (SD over layers)",
    ]
    for ax in fig.axes:
        assert len(ax.get_lines()) == n
        assert len(ax.collections) == (n if len(study.seeds) > 1 else 0)  # the seeds' bands
    for features in (["train_loss", "val_loss"], ["h0_total", "h1_total"]):
        check_layout(plots.figure_curves(df, features, None, None))


@STUDIES
def test_the_scaling_fits_draw_a_fit_only_where_it_converged_and_say_why_not(study: Study):
    from figure_inputs import scaling

    fits = scaling(study)
    fig = plots.figure_scaling_fits(table(study), fits, None, None)
    texts = check_layout(fig)
    for ax, fit in zip(fig.axes, fits.to_dict("records"), strict=True):
        assert len(point_lines(ax)) == 1  # the final checkpoints
        assert len(point_lines(ax)[0].get_xdata()) == len(study.models)
        drawn = len(ax.get_lines()) - 1
        assert drawn == int(fit["converged"])
        assert ("did not converge" in said(ax.get_title(loc="left"))) is not fit["converged"]
    ticks = [t.get_text() for t in texts if t in fig.axes[0].get_xticklabels()]
    assert ticks[0] == f"{min(study.models.values()) / 1e3:.3g}k"


@STUDIES
def test_the_correlation_heatmap_marks_stars_and_undefined_cells_only_where_drawn(study: Study):
    from figure_inputs import correlations

    corr = correlations(study)
    fig = plots.figure_correlation_heatmap(corr, None, None)
    check_layout(fig)
    cells = [t.get_text() for t in fig.axes[0].texts]
    n, features = len(study.models), corr["feature"].nunique()
    assert len(cells) == n * features  # one text per cell, n/a included
    assert cells.count("n/a") == n  # the constant H0 count
    stars = sum(c.endswith("*") for c in cells)
    assert stars == (n if len(study.seeds) > 1 else 0)
    title = said(fig.get_suptitle())
    assert ("* = significant" in title) == (stars > 0)
    assert "constant feature: ρ undefined" in said(fig.get_supxlabel())


@STUDIES
def test_the_prediction_figure_has_a_legend_of_fractions_and_names_what_is_missing(study: Study):
    from figure_inputs import prediction

    summary = prediction(study)
    fig = plots.figure_prediction_mae(summary, None, None)
    check_layout(fig)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["30%", "50%"]
    bars = [p for p in ax.patches if np.isfinite(p.get_height()) and p.get_height() > 0]
    assert len(bars) == summary["mae"].notna().sum()
    missing = summary.groupby("method", sort=False)["mae"].count().loc[lambda c: c == 0].index
    assert [t.get_text() for t in ax.texts].count("n/a") == len(missing)
    for method in missing:
        assert method in said(fig.get_supxlabel())
    assert len(missing) == (5 if len(study.models) < 3 else 0)


@STUDIES
def test_the_stopping_figure_labels_every_rule_once_without_overprinting(study: Study):
    rules = stopping_table(table(study))
    fig = plots.figure_stopping(rules, None, None)
    check_layout(fig)
    ax = fig.axes[0]
    named = []
    for t in ax.texts:
        text = re.sub(r"^\d+ rules: ", "", said(t))
        named += text.split(", ")
    assert sorted(named) == sorted(rules["rule"].unique())
    means = ax.collections[-1]
    assert len(means.get_offsets()) == rules["rule"].nunique()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [*sorted(rules["family"].unique()), "Pareto front (outlined, joined)"]


@STUDIES
def test_the_layer_types_heatmap_draws_each_cell_or_says_why_it_is_empty(study: Study):
    from figure_inputs import layer_types_summary

    fig = plots.figure_layer_types(layer_types_summary(study), None, None)
    check_layout(fig)
    if len(study.seeds) < 2:
        (why,) = reasons(fig)
        assert "undefined" in why and "two seeds per model" in why
        assert not fig.axes[0].collections  # no heatmap drawn
    else:
        assert not reasons(fig)
        assert len(fig.axes[0].texts) == (len(study.models) + 1) * 4 * 3  # pooled; groups × feats


@STUDIES
def test_the_between_seed_figure_draws_every_seed_or_says_none_has_two(study: Study):
    df = table(study)
    points = seed_points(df, "h0_total")
    design = {"seeds": len(study.seeds), "sesoi": 0.1, "sesoi_co": 0.1}
    design |= {"models": list(study.models), "claimed": {m: "−" for m in study.models}}
    fig = figure_between_seeds(points, "h0_total", design, None)
    check_layout(fig)
    if len(study.seeds) < 2:
        (why,) = reasons(fig)
        assert "no model has two seeds" in why
        return
    cells = points.groupby(["view", "condition"]).ngroups
    assert cells == 4
    scatters = [c for ax in fig.axes for c in ax.collections]
    assert len(scatters) == len(study.models) * cells  # one per panel, a colour per seed
    assert sum(len(dots.get_offsets()) for dots in scatters) == len(points)  # every point
    for dots in scatters:
        assert len({tuple(c) for c in dots.get_facecolors()}) == len(study.seeds)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == [f"seed {s}" for s in study.seeds]


@STUDIES
def test_the_forest_draws_each_estimated_effect_and_names_only_the_groups_drawn(study: Study):
    from figure_inputs import diagnostics, power, primary

    rows = forest_rows(primary(study), diagnostics(study), power(study))
    fig = figure_effects_forest(rows, None, None)
    texts = check_layout(fig)
    assert not any("nan" in said(t).split() for t in texts)
    if len(study.seeds) < 2:
        (why,) = reasons(fig)
        assert "no effect was estimated" in why and "at least 2 seeds per model" in why
        assert not fig.axes[0].get_lines() and not fig.axes[0].collections  # no band, no point
        return
    ax = fig.axes[0]
    assert len(point_lines(ax)) == np.isfinite(rows["effect"].astype(float)).sum()
    title = said(fig.get_suptitle())
    assert "primary claims (blue)" in title and "(hollow)" in title and "(green)" in title
    alone = forest_rows(primary(study), None, power(study))  # the claims' effects only
    fig = figure_effects_forest(alone, None, None)
    check_layout(fig)
    title = said(fig.get_suptitle())
    assert "primary claims (blue)" in title and "hollow" not in title and "green" not in title


@STUDIES
def test_the_horizon_profile_draws_each_estimated_horizon_or_says_why_not(study: Study):
    from figure_inputs import horizon_profile

    profile = horizon_profile(study)
    fig = figure_horizon_profile(profile, 0.1, 100, None)
    check_layout(fig)
    if profile.empty:
        (why,) = reasons(fig)
        assert why.startswith("no co-movement to profile")
        return
    for ax, (_, rows) in zip(fig.axes, profile.groupby("feature", sort=False), strict=True):
        shown = sum(len(ln.get_xdata()) for ln in point_lines(ax))
        assert shown == rows["effect"].notna().sum()
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["beyond the clock", "beyond the norm"]


@STUDIES
def test_the_pythia_figures_draw_each_model(study: Study):
    from figure_inputs import pythia

    emb, corr = pythia(study)
    n = len(study.models)
    fig = plots.figure_pythia_weights(emb, None, None)
    check_layout(fig)
    assert len(fig.axes[0].get_lines()) == n
    for draw in (
        plots.figure_pythia_perplexity,
        plots.figure_pythia_features,
        plots.figure_pythia_scatter,
        plots.figure_pythia_wasserstein,
    ):
        fig = draw(emb, None, None)
        check_layout(fig)
        assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == list(study.models)
    fig = plots.figure_pythia_rho(corr, None, None)
    check_layout(fig)
    assert len([p for p in fig.axes[0].patches if p.get_height() > 0]) == len(corr)


@STUDIES
def test_the_control_and_run_figures_draw_a_panel_each(study: Study):
    from figure_inputs import control

    from topotrain.report.control import control_curves
    from topotrain.report.runs import figure_run

    df, seeds = control(study)
    fig = control_curves(df, seeds, None, None)
    check_layout(fig)
    assert len([ax for ax in fig.axes if ax.get_lines()]) == len(study.seeds)
    run = table(study).query(f"seed == {study.seeds[0]}").drop(columns="train_loss")
    run = run[run["model"] == run["model"].iloc[0]]
    fig = figure_run(run, ["train_loss", "val_loss", "np_mean"], None, None)
    check_layout(fig)
    assert [said(t) for t in fig.axes[0].texts] == ["not logged"]
    assert len(fig.axes[1].get_lines()) == 1


def test_the_answers_pictures_are_the_same_bytes_drawn_on_one_process_or_two(tmp_path):
    """answer_figures_job draws its pictures over its processes (the claims' between-seed
    pictures, the forest, the horizon profile): the PNGs and the profile's CSV are byte for byte
    those of one process."""
    from figure_inputs import diagnostics, power, primary

    from topotrain.jobs.figures import answer_figures_job

    features = tmp_path / "features.parquet"
    table(THREE).to_parquet(features)
    inputs = {"table": str(features)}
    for name, frame in (("primary", primary), ("diagnostics", diagnostics), ("power", power)):
        inputs[name] = str(tmp_path / f"{name}.csv")
        frame(THREE).to_csv(inputs[name], index=False)
    params = {"claims": ["h0_total", "np_mean", "h1_total"], "sesoi": 0.1, "sesoi_co": 0.1}
    params |= {"horizon": 100, "comove_from": 0, "warmup_steps": 0}
    made = {}
    for threads in (1, 2):
        folder = tmp_path / f"t{threads}"
        names = ["effects_forest", "horizon_profile"]
        names += [f"between_seeds_{c}" for c in params["claims"]]
        out = {f"{n}_{ext}": str(folder / f"{n}.{ext}") for n in names for ext in ("png", "pdf")}
        out["horizon_profile_csv"] = str(folder / "horizon_profile.csv")
        folder.mkdir()
        answer_figures_job(inputs, params, out, threads)
        made[threads] = {
            k: Path(v).read_bytes() for k, v in out.items() if k.endswith(("_png", "_csv"))
        }
    assert made[1] == made[2] and len(made[1]) == 6
