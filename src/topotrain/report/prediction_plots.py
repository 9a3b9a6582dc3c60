"""Figures of prediction from early training: the final-loss predictors' MAE (``prediction.csv``)
and the causal stopping rules' compute saved against the loss given up (``stopping.csv``).
Every ``figure_*`` saves its files and returns the Figure."""

from __future__ import annotations

import matplotlib.transforms as mtransforms
import pandas as pd

from topotrain.report.figure_kit import (
    footnote,
    place_labels,
    plt,
    save_figure,
    say_why,
    wrap,
)

NOT_ESTIMATED = "n/a"  # a method with no finite prediction at any fraction


def figure_prediction_mae(summary: pd.DataFrame, png: str | None, pdf: str | None) -> plt.Figure:
    """MAE of final-loss prediction per method (x, in the summary's order), one bar per training
    fraction observed (the legend); a method with no finite prediction (n = 0 at every fraction)
    is marked n/a in its slot and named under the figure."""
    import seaborn as sns  # here, not at import: 1.3 s a job

    methods = list(dict.fromkeys(summary["method"]))
    fig, ax = plt.subplots(figsize=(max(8, 0.75 * len(methods) + 2), 5), layout="constrained")
    data = summary[summary["mae"].notna() & (summary["mae"] > 0)]
    if data.empty:
        say_why(ax, "no final-loss prediction to draw: no method has a finite MAE at any fraction")
        return save_figure(fig, png, pdf)
    percent = (100 * data["fraction"]).round().astype(int).astype(str) + "%"
    data = data.assign(observed=percent)
    sns.barplot(data=data, x="method", y="mae", hue="observed", order=methods, ax=ax)
    ax.legend(fontsize=7, title="training observed", title_fontsize=7)
    ax.set_yscale("log")  # placebos and baselines can be far worse than the predictors
    ax.set_xticks(range(len(methods)), methods, rotation=40, ha="right", fontsize=8)
    ax.set_xlabel("")
    ax.set_ylabel("MAE of predicted final loss (nats/char, log)")
    ax.set_title("Final-loss prediction from early training")
    missing = [m for m in methods if m not in set(data["method"])]
    where = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
    for m in missing:
        ax.text(methods.index(m), 0.03, NOT_ESTIMATED, transform=where, ha="center", fontsize=7)
    if missing:
        footnote(
            fig,
            f"{NOT_ESTIMATED}: no finite prediction at any fraction (n = 0 runs): "
            f"{', '.join(missing)}; each run's reason: prediction_runs.csv's note",
        )
    return save_figure(fig, png, pdf)


def figure_stopping(table: pd.DataFrame, png: str | None, pdf: str | None) -> plt.Figure:
    """Compute saved vs final-loss penalty: each rule's mean over runs (labelled; rules at the
    same point share one label; the Pareto front outlined and joined) over the runs themselves
    (faint), coloured by rule family."""
    import seaborn as sns  # here, not at import: 1.3 s a job

    fig, ax = plt.subplots(figsize=(9, 5.5), layout="constrained")
    if table.empty:
        say_why(ax, "no stopping rule to draw: the feature table has no run")
        return save_figure(fig, png, pdf)
    families = sorted(table["family"].unique())
    colours = dict(zip(families, sns.color_palette("colorblind", len(families)), strict=True))
    for family, rows in table.groupby("family"):
        ax.scatter(rows["compute_saved"], rows["penalty"], s=8, alpha=0.25, color=colours[family])
    means = table.drop_duplicates("rule")
    front = means["pareto_rank"] == 1
    edges = ["black" if f else "none" for f in front]
    ax.scatter(
        means["mean_compute_saved"],
        means["mean_penalty"],
        s=50,
        color=[colours[f] for f in means["family"]],
        edgecolor=edges,
    )
    line = means[front].sort_values("mean_compute_saved")
    ax.plot(line["mean_compute_saved"], line["mean_penalty"], color="black", lw=0.8)
    ax.axhline(0, color="grey", lw=0.5)
    handles = [
        plt.Line2D([], [], marker="o", ls="", color=colours[f], label=f) for f in families
    ] + [plt.Line2D([], [], marker="o", ls="-", lw=0.8, color="black", mfc="white")]
    handles[-1].set_label("Pareto front (outlined, joined)")
    ax.legend(
        handles=handles, fontsize=7, title="rule family", loc="upper left", bbox_to_anchor=(1.01, 1)
    )
    ax.set_xlabel("compute saved (fraction of steps)")
    ax.set_ylabel("validation loss at stop − at the end (nats/char)")
    ax.set_title("Causal stopping rules: each rule's mean over runs (labelled), the runs faint")
    fig.canvas.draw()  # the layout is final before the labels are placed
    fig.set_layout_engine("none")
    place_labels(ax, _rule_labels(means), fontsize=6)
    return save_figure(fig, png, pdf)


def _rule_labels(means: pd.DataFrame) -> list[tuple[str, float, float]]:
    """One (label, x, y) per distinct mean point: its rules, joined and wrapped."""
    at = means.groupby(
        [means["mean_compute_saved"].round(9), means["mean_penalty"].round(9)], sort=False
    )["rule"]
    out = []
    for (x, y), rules in at:
        names = list(rules)
        head = f"{len(names)} rules: " if len(names) > 1 else ""
        out.append((wrap(head + ", ".join(names), 2.6, 6), float(x), float(y)))
    return out
