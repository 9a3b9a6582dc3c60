"""One entry point per workflow rule: plain dicts and paths in, files out.

``workflow/scripts/*.py`` unpack the ``snakemake`` object and call exactly one of these. Imports are
local so that a job loads only what it needs (the topology job must never import torch).
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)


def _read_json(path: str) -> dict:
    import json

    with open(path) as fh:
        return json.load(fh)


def _write_json(path: str, doc: dict) -> None:
    import json

    from topotrain.io import atomic_write_text

    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")


def _hub_corpus(corpus: dict) -> dict:
    """The hub dataset and config of a corpus config as keyword arguments (topotrain.hub defaults)."""
    from topotrain.hub import corpus_dataset

    return dict(zip(("dataset", "config"), corpus_dataset(corpus), strict=True))


def prepare_corpus_job(corpus: dict, out: dict[str, str]) -> None:
    """Load the configured corpus, encode it and write train/validation codes + manifest."""
    from topotrain.sources.corpus import load_splits, prepare_corpus

    splits = load_splits(
        corpus["source"],
        train=corpus.get("train"),
        validation=corpus.get("validation"),
        **_hub_corpus(corpus),
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
    from topotrain.training.model import GPTConfig
    from topotrain.training.train import TrainConfig, train_model

    model_cfg = GPTConfig(
        vocab_size=arch["vocab_size"],
        block_size=arch["context"],
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
    from topotrain.analysis.aggregate import aggregate_weights

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
    from topotrain.report.markdown import write_table

    write_table(df, out[f"{name}_csv"], out[f"{name}_md"], title)


def correlations_job(table: str, params: dict, out: dict[str, str]) -> None:
    """Spearman ρ of every feature with validation loss, bootstrap CIs, corrections, best feature."""
    import pandas as pd

    from topotrain.analysis.stats import across_seeds, best_feature, correlation_table

    df = pd.read_parquet(table)
    corr = correlation_table(df, n_resamples=params["n_resamples"], seed=params["seed"])
    _tables(out, "correlations", corr, "Spearman ρ(feature, validation loss) per model")
    _tables(out, "seeds", across_seeds(corr), "ρ across seeds")
    _tables(out, "best", best_feature(corr), "Feature that tracks loss best, per model")


def associations_job(table: str, params: dict, out: dict[str, str]) -> None:
    """Raw, detrended and partial (step, L2) associations of every feature with train/val loss."""
    import pandas as pd

    from topotrain.analysis.associations import association_summary, association_table

    df = pd.read_parquet(table)
    assoc = association_table(df, n_resamples=params["n_resamples"], seed=params["seed"])
    _tables(out, "associations", assoc, "Associations with loss: raw, detrended, partial")
    _tables(out, "summary", association_summary(assoc), "Which features beat the clock and scale")


def scaling_job(table: str, params: dict, out: dict[str, str]) -> None:
    """Power-law fits of final-checkpoint values against parameter count."""
    import pandas as pd

    from topotrain.analysis.scaling import scaling_table

    fits = scaling_table(pd.read_parquet(table), features=tuple(params["features"]))
    _tables(out, "scaling", fits, "Scaling of final values with model size")


def prediction_job(table: str, params: dict, out: dict[str, str]) -> None:
    """Final-loss prediction from early training: per-run errors and the MAE summary."""
    import pandas as pd

    from topotrain.analysis.predict import predict_final_loss
    from topotrain.analysis.predict_summary import prediction_summary

    pred = predict_final_loss(pd.read_parquet(table), fractions=tuple(params["fractions"]))
    _tables(out, "runs", pred, "Final-loss predictions per run")
    _tables(out, "summary", prediction_summary(pred), "Prediction MAE by method and fraction")


def phases_job(table: str, params: dict, out: dict[str, str]) -> None:
    """Phase transitions of NP (peak |ΔNP|, diminishing returns) and changepoints."""
    import pandas as pd

    from topotrain.analysis.phases import phase_table

    phases = phase_table(
        pd.read_parquet(table), threshold=params["threshold"], n_bkps=params["n_bkps"]
    )
    _tables(out, "phases", phases, "Phase transitions")


def replication_job(inputs: dict[str, str], out: dict[str, str]) -> None:
    """Replication verdicts: every claim of the paper beside our number and its rule."""
    import pandas as pd

    from topotrain.analysis.replication import read_paper_values, replication_table

    tables = {name: pd.read_csv(path) for name, path in inputs.items() if name != "paper"}
    verdicts = replication_table(read_paper_values(inputs["paper"]), tables)
    _tables(out, "replication", verdicts, "Replication of the paper's claims")


def models_job(table: str, out: dict[str, str]) -> None:
    """The models table: architecture, parameters, final losses."""
    import pandas as pd

    from topotrain.report.markdown import models_table

    _tables(out, "models", models_table(pd.read_parquet(table)), "Models")


def training_figures_job(table: str, out: dict[str, str]) -> None:
    """Overview, loss curves, NP evolution and H0/H1 evolution figures."""
    import pandas as pd

    from topotrain.report import plots

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

    from topotrain.report import plots

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
    """Assemble REPORT.md: the replication verdicts first, findings from the CSV tables, then every
    other Markdown table explained."""
    from topotrain.report.markdown import SECTIONS, assemble_report, findings

    preface = findings(tables["best_feature_csv"], tables["prediction_csv"])
    sections = [(SECTIONS[k][0], SECTIONS[k][1], p) for k, p in tables.items() if k in SECTIONS]
    assemble_report(sections, out, preface, lead=int("replication" in tables))


def pythia_texts_job(corpus: dict, params: dict, out: str) -> None:
    """Choose the validation paragraphs the Pythia embeddings are computed on."""
    from topotrain.sources.corpus import validation_paragraphs
    from topotrain.sources.pythia import select_texts

    paragraphs = validation_paragraphs(
        corpus["source"], validation=corpus.get("validation"), **_hub_corpus(corpus)
    )
    texts = select_texts(paragraphs, params["n_texts"], params["min_chars"], params["seed"])
    _write_json(out, {"params": params, "texts": texts})
    log.info("selected %d of %d validation paragraphs", len(texts), len(paragraphs))


def fetch_pythia_job(model: str, step: int, out: str) -> None:
    """Resolve (download, or find in the offline cache) one Pythia revision; record where it is."""
    from topotrain.sources.pythia import fetch_revision

    info = fetch_revision(model, step)
    _write_json(out, info)
    log.info("%s step %d → %s", model, step, info["snapshot"])


def pythia_weights_job(revision: str, params: dict, out: str) -> None:
    """Neural persistence and VR of one revision's linear maps → JSON record."""
    from topotrain.sources.pythia import weight_record

    _write_json(out, weight_record(_read_json(revision), params))


def pythia_embeddings_job(revision: str, texts: str, params: dict, out: dict[str, str]) -> None:
    """Embeddings of the validation texts at one revision → topological + spectral features, perplexity."""
    import json

    import numpy as np
    import torch

    from topotrain.io import atomic_write_all
    from topotrain.sources.pythia import embedding_record

    torch.set_num_threads(params.get("threads", 1))
    doc, diagrams = embedding_record(_read_json(revision), _read_json(texts)["texts"], params)
    text = json.dumps(doc, indent=1) + "\n"
    atomic_write_all(
        {
            out["diagrams"]: lambda fh: np.savez(
                fh, **{f"h{k}": d for k, d in enumerate(diagrams)}
            ),
            out["record"]: lambda fh: fh.write(text.encode()),
        }
    )
    log.info("%s step %d: perplexity %.2f in %.1f s", doc["model"], doc["step"],
             doc["features"]["perplexity"], doc["seconds"])  # fmt: skip


def pythia_weight_tables_job(records: list[str], out: dict[str, str]) -> None:
    """The Pythia weight-topology table over revisions."""
    from topotrain.analysis import pythia as pa
    from topotrain.report.markdown import write_table

    table = pa.weights_table(pa.read_records(records))
    write_table(table, out["weights_csv"], out["weights_md"], "Pythia weight topology")


def pythia_embedding_tables_job(inputs: dict, params: dict, out: dict[str, str]) -> None:
    """Embedding features, their correlations with perplexity, and topological vs spectral."""
    from topotrain.analysis import pythia as pa
    from topotrain.report.markdown import write_table

    emb = pa.embeddings_table(pa.read_records(inputs["records"]), inputs["diagrams"])
    write_table(emb, out["embeddings_csv"], out["embeddings_md"], "Pythia embedding features")
    corr = pa.perplexity_correlations(emb, n_resamples=params["n_resamples"])
    write_table(corr, out["correlations_csv"], out["correlations_md"], "ρ with perplexity")
    comparison = pa.topological_vs_spectral(corr)
    write_table(comparison, out["comparison_csv"], out["comparison_md"], "Topological vs spectral")
    write_table(pa.kind_summary(comparison), out["kinds_csv"], out["kinds_md"], "By kind")


def pythia_weight_figure_job(table: str, out: dict[str, str]) -> None:
    """NP and H0 total of Pythia's weights over training steps."""
    import pandas as pd

    from topotrain.report import plots

    plots.figure_pythia_weights(
        pd.read_csv(table), out["pythia_weights_png"], out["pythia_weights_pdf"]
    )


def pythia_figures_job(inputs: dict[str, str], out: dict[str, str]) -> None:
    """Perplexity curves, features over log-step, scatter, |ρ| bars, Wasserstein rate of change."""
    import pandas as pd

    from topotrain.report import plots

    emb = pd.read_csv(inputs["embeddings"])
    corr = pd.read_csv(inputs["correlations"])
    plots.figure_pythia_perplexity(emb, out["pythia_perplexity_png"], out["pythia_perplexity_pdf"])
    plots.figure_pythia_features(emb, out["pythia_features_png"], out["pythia_features_pdf"])
    plots.figure_pythia_scatter(emb, out["pythia_scatter_png"], out["pythia_scatter_pdf"])
    plots.figure_pythia_wasserstein(
        emb, out["pythia_wasserstein_png"], out["pythia_wasserstein_pdf"]
    )
    plots.figure_pythia_rho(corr, out["pythia_rho_png"], out["pythia_rho_pdf"])
