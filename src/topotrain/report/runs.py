"""A ``runs:`` entry's figures and its section of REPORT.md.

The workflow reads RUN_FIGURES while parsing, so plotting and tables are imported where used.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from topotrain.config import LOSSES
from topotrain.report import prose
from topotrain.topology import registry

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

RUN_FIGURES = {  # figure name → the feature-table columns it draws over training steps
    "run_losses": list(LOSSES),
    "run_np": registry.columns("np_total"),
    "run_homology": registry.columns("h{k}_total"),
}
RUN_LABELS = {  # the losses as the run logged them; the features' labels: topology.registry
    "train_loss": "train loss (as logged)",
    "val_loss": "validation loss (as logged)",
    **registry.labels(),
}
SUMMARY_COLUMNS = [
    "feature",
    "kind",
    "target",
    "rho_raw",
    "rho_detrended",
    "rho_partial_step",
    "rho_partial_l2",
    "beats_clock",
    "beats_scale",
]
SINGLE_RUN = prose.render("runs/single_run")
PHASE_COLUMNS = [
    "total_steps",
    "checkpoint_frac",
    "peak_step",
    "peak_frac",
    "diminishing_step",
    "diminishing_frac",
    "causal_step",
    "changepoints",
    "note",
]


def figure_run(
    table: pd.DataFrame, features: list[str], png: str | None, pdf: str | None
) -> Figure:
    """One panel per feature over the run's checkpoint steps; a panel says so when the feature was
    not logged (a loss the run did not give). Returns the (saved) Figure."""
    import matplotlib.pyplot as plt

    from topotrain.report.plots import save_figure  # sets the Agg backend

    fig, axes = plt.subplots(1, len(features), figsize=(5.5 * len(features), 4), squeeze=False)
    rows = table.sort_values("step")
    for ax, feature in zip(axes[0], features, strict=True):
        ax.set_title(RUN_LABELS.get(feature, feature))
        ax.set_xlabel("step")
        if feature not in rows or rows[feature].notna().sum() == 0:
            ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes)
            continue
        values = rows[feature]
        ok = values.notna()
        ax.plot(rows.loc[ok, "step"], values[ok], "o-", ms=3, lw=1)
        flagged = rows["equals_final"].astype(bool) & ok if "equals_final" in rows else None
        if flagged is not None and flagged.any():
            ax.plot(rows.loc[flagged, "step"], values[flagged], "rx", ms=8, label="= final weights")
            ax.legend(fontsize=7)
    fig.suptitle(str(table["model"].iloc[0]))
    fig.tight_layout()
    return save_figure(fig, png, pdf)


def _source_line(params: Mapping, table: pd.DataFrame) -> str:
    steps = table["step"].tolist()
    where = (
        f"local folder `{params['path']}` (glob `{params['glob']}`)"
        if params.get("path")
        else f"hub repo `{params['hub']}`"
    )
    gone = table["step"][table["weights_gone"]].tolist() if "weights_gone" in table else []
    kept = (
        f" ({len(gone)} whose weights are gone since their topology was computed — steps "
        f"{gone}: kept, flagged `weights_gone`)"
        if gone
        else ""
    )
    return f"{where}; {len(steps)} checkpoints, steps {steps[0]} … {steps[-1]}{kept}"


def _layers_line(layers: Mapping) -> str:
    n = len(layers["layers"])
    flipped = sum(m["transposed"] for m in layers["layers"])
    turned = f"; {flipped} stored (in, out) and transposed" if flipped else ""
    if layers["source"] == "architecture":
        how = f"found by the architecture `{layers['architecture']}` (`{layers['model_type']}`)"
    else:
        how = "chosen by the run's `layers:` patterns (no config.json)"
    return f"{n} matrices {how}{turned}; {layers['n_params']:,} parameters"


def _identity_line(table: pd.DataFrame) -> str:
    shared = table[table["same_weights_as"].fillna("") != ""]
    if shared.empty:
        return "every checkpoint's weight files differ from every other's (sha256)"
    final = table.loc[table["equals_final"].astype(bool), "step"].tolist()
    pairs = "; ".join(f"{r.step} = {r.same_weights_as}" for r in shared.itertuples())
    return f"**identical weights** (allowed by `allow_identical_steps`): {pairs}" + (
        f"; equal to the final step's: {final}" if final else ""
    )


def expected_flags(n: int, runs: int, calibration: pd.DataFrame | None = None) -> str:
    """How many of n features' per-model flags fire under the null on ``runs`` runs of one
    model: none without a between-seed contrast (one run), else n × each flag's calibrated
    false-positive rate (``null_rates.null_rate``; ``calibration``: calibration.csv's rows)."""
    from topotrain.report.null_rates import null_rate

    if runs < 2:
        return "neither flag can fire without a between-seed contrast: expected under the null 0"
    parts = []
    for flag in ("beats_clock", "beats_scale"):
        rate = null_rate(f"{flag} (model)", runs, calibration)
        parts.append(
            f"`{flag}` ≈ {rate.expected(n)}: {rate.label()}"
            if rate
            else f"`{flag}`: no calibrated false-positive rate for one model's flag on {runs} "
            "runs (docs/calibration.md gives the pooled flags'; `make calibrate` measures it)"
        )
    return "expected under the null: " + "; ".join(parts)


def clock_findings(assoc: pd.DataFrame, calibration: pd.DataFrame | None = None) -> list[str]:
    """Per logged loss, one line: the topological features that beat the clock and the scale
    (the between-seed contrast's flags), beside the number expected under the null, or why that
    cannot be measured."""
    if assoc.empty:
        return []
    contrast = assoc[assoc["view"] == "seed_contrast"]
    defined = "p" in contrast and contrast["p"].notna().any()
    runs = assoc.loc[assoc["view"] == "raw", "seed"].nunique() if defined else 1
    lines = [] if defined else [f"- {SINGLE_RUN}"]
    for target, rows in assoc[assoc["kind"] == "topological"].groupby("target", sort=False):
        partial = rows[rows["view"] == "partial_step"]
        monotone = partial["note"].fillna("").str.contains("target is a monotone function of step")
        if partial["rho"].isna().all() and monotone.any():
            lines.append("- " + prose.render("runs/monotone", target=target))
            continue
        per_feature = rows.drop_duplicates("feature")
        clock = per_feature.loc[per_feature["beats_clock"], "feature"].tolist()
        scale = per_feature.loc[per_feature["beats_scale"], "feature"].tolist()
        expected = expected_flags(len(per_feature), runs, calibration)
        lines.append(
            f"- `{target}`: {len(clock)} of {len(per_feature)} topological features beat the clock"
            f"{': ' + ', '.join(f'`{f}`' for f in clock) if clock else ''}; {len(scale)} beat the "
            f"scale{': ' + ', '.join(f'`{f}`' for f in scale) if scale else ''} ({expected})."
        )
    return lines


def run_section(
    params: Mapping,
    table: pd.DataFrame,
    layers: Mapping,
    assoc: pd.DataFrame,
    summary: pd.DataFrame,
    phases: pd.DataFrame,
    notes: list[str],
    out: Mapping[str, str],
) -> str:
    """The run's REPORT.md section: where its checkpoints came from, what was analysed, how the
    topology moves with its losses beyond the clock and the scale, and its phases."""
    from topotrain.report.markdown import to_markdown

    counts = ", ".join(f"`{c}` at {int(table[c].notna().sum())}" for c in LOSSES)
    losses = f"`{params['losses']}`: {counts} checkpoints" if params.get("losses") else "none given"
    if params.get("losses_found"):
        losses += " (found: the newest checkpoint's trainer_state.json; `losses:` was not given)"
    figures = ", ".join(f"`{Path(out[f'{f}_png']).as_posix()}`" for f in RUN_FIGURES)
    own = summary.loc[summary["model"] != "pooled", SUMMARY_COLUMNS] if not summary.empty else None
    text = prose.render(
        "runs/section",
        name=params["name"],
        checkpoints=_source_line(params, table),
        matrices=_layers_line(layers),
        losses=losses,
        weights=_identity_line(table),
        notes=prose.lines([f"- note: {n}" for n in notes]),
        associations=Path(out["associations_csv"]).as_posix(),
        findings=prose.lines(clock_findings(assoc)),
        summary=prose.render("runs/no_loss") + "\n" if own is None else to_markdown(own),
        phases=to_markdown(phases[PHASE_COLUMNS]),
        figures=figures,
    )
    return text + "\n"
