"""Jobs of workflow/rules/analysis.smk: the analysis tables from the feature table."""

from __future__ import annotations

from topotrain.jobs.analysis_notes import _diagnostics
from topotrain.jobs.common import _tables, comove_design


def correlations_job(table: str, params: dict, out: dict[str, str]) -> None:
    """Spearman ρ of every feature with validation loss, bootstrap CIs, corrections,
    best feature."""
    import pandas as pd

    from topotrain.analysis.inference.numerics import check_seed_numerics
    from topotrain.analysis.inference.stats import (
        BASELINES,
        FEATURES,
        across_seeds,
        best_feature,
        correlation_table,
        gradient_features,
    )

    df = pd.read_parquet(table)
    check_seed_numerics(df)  # ρ across seeds
    features = [*FEATURES, *gradient_features(df), *BASELINES]
    corr = correlation_table(df, features, n_resamples=params["n_resamples"], seed=params["seed"])
    _tables(out, "correlations", corr, "Spearman ρ(feature, validation loss) per model")
    _tables(out, "seeds", across_seeds(corr), "ρ across seeds")
    _tables(out, "best", best_feature(corr), "Feature that tracks loss best, per model")


def run_views_job(
    inputs: dict[str, str], params: dict, out: dict[str, str], threads: int = 1
) -> None:
    """One run's rows of the associations and layer-types tables (RUN_VIEWS), from its feature
    tables (rule aggregate_run), for rules associations and layer_types."""
    import pandas as pd

    from topotrain.analysis.dynamics.model_views import model_run_rows
    from topotrain.analysis.tables.aggregate import table_writers
    from topotrain.io import atomic_write_all

    features, layers = (pd.read_parquet(inputs[k]) for k in ("table", "layers"))
    n, seed = params["n_resamples"], params["seed"]
    assoc, layer_rows = model_run_rows(features, layers, n, seed, threads)
    writers = table_writers(assoc, out["associations"])
    atomic_write_all({**writers, **table_writers(layer_rows, out["layer_types"])})


def _read_run_rows(paths: list[str] | None):
    """The runs' rows (rule run_views) as one frame, or None when not given."""
    import pandas as pd

    if not paths:
        return None
    return pd.concat([pd.read_parquet(path) for path in paths], ignore_index=True)


def associations_job(
    table: str, params: dict, out: dict[str, str], threads: int = 1, runs: list[str] | None = None
) -> None:
    """Raw, detrended and partial (step, L2) associations of every feature with train/val loss;
    ``runs``: the runs' rows (rule run_views), else computed here."""
    import pandas as pd

    from topotrain.analysis.inference.associations import association_summary, association_table
    from topotrain.analysis.inference.numerics import check_seed_numerics

    comove_design(params)
    df = pd.read_parquet(table)
    check_seed_numerics(df)  # the seed contrast compares seeds: one numerics per model
    n, seed = params["n_resamples"], params["seed"]
    rows = _read_run_rows(runs)
    assoc = association_table(df, n_resamples=n, seed=seed, threads=threads, run_rows=rows)
    _tables(out, "associations", assoc, "Associations with loss: raw, detrended, partial")
    _tables(out, "summary", association_summary(assoc), "Which features beat the clock and scale")
    if "diagnostics_csv" in out:
        _diagnostics(df, assoc, params, out)


def scaling_fits_job(table: str, params: dict, out: dict[str, str]) -> None:
    """Power-law fits of final-checkpoint values against parameter count."""
    import pandas as pd

    from topotrain.analysis.prediction.scaling import scaling_table

    fits = scaling_table(pd.read_parquet(table), features=tuple(params["features"]))
    _tables(out, "scaling", fits, "Scaling of final values with model size")


def predict_final_loss_job(table: str, params: dict, out: dict[str, str]) -> None:
    """Final-loss prediction from early training: per-run errors and the MAE summary."""
    import pandas as pd

    from topotrain.analysis.prediction.predict import predict_final_loss
    from topotrain.analysis.prediction.summary import prediction_summary

    pred = predict_final_loss(pd.read_parquet(table), fractions=tuple(params["fractions"]))
    _tables(out, "runs", pred, "Final-loss predictions per run")
    _tables(out, "summary", prediction_summary(pred), "Prediction MAE by method and fraction")


def phase_transitions_job(table: str, params: dict, out: dict[str, str]) -> None:
    """Phase transitions of NP (peak |ΔNP|, diminishing returns) and changepoints."""
    import pandas as pd

    from topotrain.analysis.dynamics.phases import phase_table

    phases = phase_table(
        pd.read_parquet(table), threshold=params["threshold"], n_bkps=params["n_bkps"]
    )
    _tables(out, "phases", phases, "Phase transitions")


def stopping_rules_job(table: str, params: dict, out: dict[str, str]) -> None:
    """Causal stopping rules per run: stopping step, compute saved, final-loss penalty, Pareto
    rank; the per-run table, its per-rule summary and the figure."""
    import pandas as pd

    from topotrain.analysis.prediction.stopping import stopping_summary, stopping_table
    from topotrain.report import plots

    table = stopping_table(pd.read_parquet(table), params["stopping"])
    _tables(out, "stopping", table, "Causal stopping rules, per run")
    _tables(out, "stopping_summary", stopping_summary(table), "Causal stopping rules")
    plots.figure_stopping(table, out["stopping_png"], out["stopping_pdf"])


def velocity_job(table: str, out: dict[str, str]) -> None:
    """ρ of each step distance between consecutive diagrams with |Δ validation loss|, per run,
    beside the clock and the weights' scale (analysis.velocity)."""
    import pandas as pd

    from topotrain.analysis.dynamics.velocity import velocity_summary, velocity_table

    table = velocity_table(pd.read_parquet(table))
    _tables(out, "velocity", table, "Topological velocity vs |Δ loss|, per run")
    _tables(out, "velocity_summary", velocity_summary(table), "Topological velocity vs |Δ loss|")


def layer_types_job(
    inputs: dict[str, str], params: dict, out: dict[str, str], threads: int = 1
) -> None:
    """Association views of topology with loss by layer type (attention/MLP) and depth;
    ``inputs["runs"]``: the runs' rows (rule run_views), else computed here."""
    import pandas as pd

    from topotrain.analysis.dynamics.layer_types import layer_type_summary, layer_type_table
    from topotrain.analysis.inference.numerics import check_seed_numerics
    from topotrain.report import plots

    layers, features = (pd.read_parquet(inputs[k]) for k in ("layers", "table"))
    check_seed_numerics(features)
    n, seed, runs = params["n_resamples"], params["seed"], _read_run_rows(inputs.get("runs"))
    table = layer_type_table(layers, features, n, seed, threads, run_rows=runs)
    summary = layer_type_summary(table)
    _tables(out, "layer_types", table, "Associations by layer type and depth, per run")
    _tables(out, "layer_types_summary", summary, "Where the signal lives: layer type and depth")
    plots.figure_layer_types(summary, out["layer_types_png"], out["layer_types_pdf"])


def primary_family_job(inputs: dict[str, str], params: dict, out: dict[str, str]) -> None:
    """The primary family's tests of the paper's claims beyond the clock and scale, from the
    feature table and the paper's values (the answer's figures and the replication read it)."""
    import pandas as pd

    comove_design(params)

    from topotrain.analysis.inference.numerics import check_seed_numerics
    from topotrain.analysis.inference.primary import primary_family
    from topotrain.analysis.replication.claims import read_paper_values

    paper = read_paper_values(inputs["paper"])
    features = pd.read_parquet(inputs["features"])
    check_seed_numerics(features)  # the primary family tests across seeds
    primary = primary_family(
        features,
        paper,
        sesoi=params["sesoi"],
        sesoi_co=params["sesoi_co"],
        question=params["bottom_line_question"],
    )
    _tables(
        out, "primary", primary, "Primary family: the paper's claims beyond the clock and scale"
    )


def replication_job(inputs: dict[str, str], params: dict, out: dict[str, str]) -> None:
    """Replication verdicts: every claim of the paper beside our number and its rule (the
    primary family's from primary.csv, rule primary_family), and NP against its layers' weight
    variance."""
    import pandas as pd

    from topotrain.analysis.inference.np_variance import np_variance_table
    from topotrain.analysis.replication.claims import read_paper_values, replication_table

    paper = read_paper_values(inputs["paper"])
    tables = {
        name: pd.read_csv(path)
        for name, path in inputs.items()
        if name not in ("paper", "features")
    }
    tables["features"] = pd.read_parquet(inputs["features"]) if "features" in inputs else None
    sesoi = params["sesoi"]
    verdicts = replication_table(
        paper, tables, params["warmup_steps"], params["phase_threshold"], sesoi=sesoi
    )
    _tables(out, "replication", verdicts, "Replication of the paper's claims")
    if "np_variance_csv" in out:
        wvar = np_variance_table(tables["features"])
        _tables(out, "np_variance", wvar, "NP against its layers' normalised weight variance")


def power_job(inputs: dict[str, str], params: dict, out: dict[str, str], threads: int = 1) -> None:
    """Power of each primary claim at Δ and its 80 % minimal detectable effect, for the design
    the feature table holds (models, seeds, checkpoints) and noise fitted to its deviations, from
    the calibration simulator, then every view's power at 3 / 5 / 8 seeds × 51 / 101 / 201
    checkpoints on the same noise (``study_power``; cached by design in ``params["cache"]``; over
    ``threads`` processes)."""
    comove_design(params)
    import pandas as pd

    from topotrain.analysis.calibration.power_design import study_power
    from topotrain.analysis.inference.verdicts import read_paper_values

    table = study_power(
        pd.read_parquet(inputs["features"]),
        read_paper_values(inputs["paper"]),
        sesoi=params["sesoi"],
        n_sim=params["simulations"],
        seed=params["seed"],
        cache=params["cache"],
        threads=threads,
        sesoi_co=params["sesoi_co"],
        view_draws=params["power_draws"],
    )
    _tables(out, "power", table, "Power of the primary claims at Δ, for the design that was run")


def models_table_job(table: str, out: dict[str, str]) -> None:
    """The models table: architecture, parameters, final losses."""
    import pandas as pd

    from topotrain.report.markdown import models_table

    _tables(out, "models", models_table(pd.read_parquet(table)), "Models")


# Each rule's adapter, <rule>_rule(sm): what the rule hands its job, unpacked from the snakemake
# object (workflow/scripts/job.py runs every rule through jobs.run_rule, which calls it).


def associations_rule(sm) -> None:
    associations_job(
        sm.input.table,
        dict(sm.params.items()),
        dict(sm.output.items()),
        sm.threads,
        list(sm.input.runs),
    )


def run_views_rule(sm) -> None:
    run_views_job(
        dict(sm.input.items()), dict(sm.params.items()), dict(sm.output.items()), sm.threads
    )


def correlations_rule(sm) -> None:
    correlations_job(sm.input[0], dict(sm.params.items()), dict(sm.output.items()))


def layer_types_rule(sm) -> None:
    layer_types_job(
        dict(sm.input.items()), dict(sm.params.items()), dict(sm.output.items()), sm.threads
    )


def models_table_rule(sm) -> None:
    models_table_job(sm.input[0], dict(sm.output.items()))


def phase_transitions_rule(sm) -> None:
    phase_transitions_job(sm.input[0], dict(sm.params.items()), dict(sm.output.items()))


def power_rule(sm) -> None:
    power_job(dict(sm.input.items()), dict(sm.params.items()), dict(sm.output.items()), sm.threads)


def predict_final_loss_rule(sm) -> None:
    predict_final_loss_job(sm.input[0], dict(sm.params.items()), dict(sm.output.items()))


def primary_family_rule(sm) -> None:
    primary_family_job(dict(sm.input.items()), dict(sm.params.items()), dict(sm.output.items()))


def replication_rule(sm) -> None:
    replication_job(dict(sm.input.items()), dict(sm.params.items()), dict(sm.output.items()))


def scaling_fits_rule(sm) -> None:
    scaling_fits_job(sm.input[0], dict(sm.params.items()), dict(sm.output.items()))


def stopping_rules_rule(sm) -> None:
    stopping_rules_job(sm.input[0], dict(sm.params.items()), dict(sm.output.items()))


def velocity_rule(sm) -> None:
    velocity_job(sm.input[0], dict(sm.output.items()))
