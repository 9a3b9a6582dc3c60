"""One entry point per workflow rule: plain dicts and paths in, files out.

``workflow/scripts/*.py`` unpack the ``snakemake`` object and call exactly one of these. Imports are
local so that a job loads only what it needs (the topology job must never import torch).
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)


def prepare_corpus_job(corpus: dict, out: dict[str, str]) -> None:
    """Load the configured corpus, encode it and write train/validation codes + manifest."""
    from topotrain.corpus import load_splits, prepare_corpus

    splits = load_splits(
        corpus["source"],
        train=corpus.get("train"),
        validation=corpus.get("validation"),
        dataset=corpus.get("dataset", "Salesforce/wikitext"),
        config=corpus.get("config", "wikitext-2-raw-v1"),
    )
    prepare_corpus(splits, out["train"], out["validation"], out["manifest"])


def train_job(
    model: str,
    arch: dict,
    train: dict,
    train_bin: str,
    val_bin: str,
    out_dir: str,
    state_dir: str,
    threads: int = 1,
) -> None:
    """Train one (model, seed) run; errors are re-raised with the model's name in front."""
    from topotrain.model import GPTConfig
    from topotrain.train import TrainConfig, train_model

    model_cfg = GPTConfig(
        vocab_size=arch.get("vocab_size", 128),
        block_size=arch.get("context", 128),
        n_layer=arch["n_layer"],
        n_head=arch["n_head"],
        n_embd=arch["d_model"],
    )
    cfg = TrainConfig(**{**train, "threads": threads})
    log.info("training %s (seed %d) → %s", model, cfg.seed, out_dir)
    try:
        train_model(model_cfg, cfg, train_bin, val_bin, out_dir, state_dir)
    except (RuntimeError, ValueError) as err:
        raise type(err)(f"model {model}, seed {cfg.seed}: {err}") from err


def topology_job(
    checkpoint: str, record: str, diagrams: str, params: dict, threads: int = 1
) -> None:
    """Weight topology of one checkpoint → JSON record + npz diagrams."""
    from topotrain.topology.checkpoint import write_checkpoint_topology

    write_checkpoint_topology(
        checkpoint,
        record,
        diagrams,
        patterns=params["patterns"],
        max_points=params["max_points"],
        seed=params.get("seed", 0),
        maxdim=params.get("maxdim", 1),
        n_threads=threads,
    )


def aggregate_job(records: list[str], params: dict, out: dict[str, str]) -> None:
    """Join every checkpoint's features with the training logs into the feature tables."""
    from topotrain.aggregate import aggregate_weights

    for path in out.values():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    aggregate_weights(
        records,
        params["record_keys"],
        params["runs"],
        params["total_steps"],
        params["interval"],
        out,
    )


def _tables(out: dict[str, str], name: str, df, title: str) -> None:
    from topotrain.report import write_table

    write_table(df, out[f"{name}_csv"], out[f"{name}_md"], title)


def correlations_job(table: str, params: dict, out: dict[str, str]) -> None:
    """Spearman ρ of every feature with validation loss, bootstrap CIs, corrections, best feature."""
    import pandas as pd

    from topotrain.stats import across_seeds, best_feature, correlation_table

    df = pd.read_parquet(table)
    corr = correlation_table(df, n_resamples=params["n_resamples"], seed=params["seed"])
    _tables(out, "correlations", corr, "Spearman ρ(feature, validation loss) per model")
    _tables(out, "seeds", across_seeds(corr), "ρ across seeds")
    _tables(out, "best", best_feature(corr), "Feature that tracks loss best, per model")


def scaling_job(table: str, params: dict, out: dict[str, str]) -> None:
    """Power-law fits of final-checkpoint values against parameter count."""
    import pandas as pd

    from topotrain.scaling import scaling_table

    fits = scaling_table(pd.read_parquet(table), features=tuple(params["features"]))
    _tables(out, "scaling", fits, "Scaling of final values with model size")


def prediction_job(table: str, params: dict, out: dict[str, str]) -> None:
    """Final-loss prediction from early training: per-run errors and the MAE summary."""
    import pandas as pd

    from topotrain.predict import predict_final_loss, prediction_summary

    pred = predict_final_loss(pd.read_parquet(table), fractions=tuple(params["fractions"]))
    _tables(out, "runs", pred, "Final-loss predictions per run")
    _tables(out, "summary", prediction_summary(pred), "Prediction MAE by method and fraction")


def phases_job(table: str, params: dict, out: dict[str, str]) -> None:
    """Phase transitions of NP (peak |ΔNP|, diminishing returns) and changepoints."""
    import pandas as pd

    from topotrain.phases import phase_table

    phases = phase_table(
        pd.read_parquet(table), threshold=params["threshold"], n_bkps=params["n_bkps"]
    )
    _tables(out, "phases", phases, "Phase transitions")


def models_job(table: str, out: dict[str, str]) -> None:
    """The models table: architecture, parameters, final losses."""
    import pandas as pd

    from topotrain.report import models_table

    _tables(out, "models", models_table(pd.read_parquet(table)), "Models")


def training_figures_job(table: str, out: dict[str, str]) -> None:
    """Overview, loss curves, NP evolution and H0/H1 evolution figures."""
    import pandas as pd

    from topotrain import plots

    df = pd.read_parquet(table)
    plots.figure_overview(df, out["overview_png"], out["overview_pdf"])
    plots.figure_curves(
        df, ["train_loss", "val_loss"], out["loss_curves_png"], out["loss_curves_pdf"]
    )
    plots.figure_curves(df, ["np_mean", "np_std"], out["np_evolution_png"], out["np_evolution_pdf"])
    plots.figure_curves(
        df, ["h0_total", "h1_total"], out["homology_evolution_png"], out["homology_evolution_pdf"]
    )


def analysis_figures_job(inputs: dict[str, str], out: dict[str, str]) -> None:
    """Correlation heatmap, prediction MAE and scaling-fit figures."""
    import pandas as pd

    from topotrain import plots

    corr = pd.read_csv(inputs["correlations"])
    plots.figure_correlation_heatmap(
        corr, out["correlation_heatmap_png"], out["correlation_heatmap_pdf"]
    )
    summary = pd.read_csv(inputs["prediction"])
    plots.figure_prediction_mae(summary, out["prediction_mae_png"], out["prediction_mae_pdf"])
    plots.figure_scaling_fits(
        pd.read_parquet(inputs["table"]),
        pd.read_csv(inputs["scaling"]),
        out["scaling_fits_png"],
        out["scaling_fits_pdf"],
    )


def report_job(tables: dict[str, str], out: str) -> None:
    """Assemble REPORT.md from the Markdown tables, each with its explanation."""
    from topotrain.report import SECTIONS, assemble_report

    assemble_report([(SECTIONS[k][0], SECTIONS[k][1], path) for k, path in tables.items()], out)
