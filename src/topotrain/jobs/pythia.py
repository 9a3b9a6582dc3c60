"""Jobs of the Pythia branch: texts, fetch, weight and embedding topology, tables, figures."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from topotrain.config import GPT_NEOX_LAYERS
from topotrain.jobs.common import _hub_corpus, _read_json, _release, _write_json, log


def revision_topology(snapshot: str | Path, patterns=GPT_NEOX_LAYERS, settings=None, **overrides):
    """The Record of one revision's matrices matching patterns, through ``jobs.topology.measure``
    with ``TopologySettings.from_config(settings, **overrides)`` (NaN/inf refused), its layers
    with WeightWatcher's ``ww_*`` fields when the settings' ``weightwatcher``; errors name the
    revision and the layer."""
    from topotrain.jobs.topology import measure, with_ww_columns
    from topotrain.sources.pythia import revision_weight_matrices, snapshot_label
    from topotrain.topology.settings import TopologySettings

    settings = TopologySettings.from_config(settings, **overrides)
    matrices, source = revision_weight_matrices(snapshot), snapshot_label(snapshot)
    return with_ww_columns(*measure(matrices, patterns, settings, source))


def weight_record(revision: dict, params: dict) -> dict:
    """The weight-topology record of one fetched revision: per-layer records under "layers", the
    Record's "params" (as every branch's) and the Rips engine that computed them under "engine"."""
    from topotrain.sources.pythia import revision_doc, weights_present

    weights_present(revision)
    rec = revision_topology(revision["snapshot"], params["layers"], params)
    return revision_doc(revision, engine=rec.params["engine"], params=rec.params, layers=rec.layers)


def embedding_record(revision: dict, texts: Sequence[str], params: dict) -> tuple[dict, list]:
    """The embedding record of one fetched revision — features (EMBEDDING_KEYS, perplexity,
    n_tokens), the Rips engine and wall-clock seconds — and the Rips diagrams of its embedding
    cloud."""
    import time

    from topotrain.sources.pythia import (
        embed_texts,
        load_model,
        perplexity,
        revision_doc,
        weights_present,
    )
    from topotrain.topology.embedding import embedding_features
    from topotrain.topology.settings import TopologySettings

    weights_present(revision)
    start = time.perf_counter()
    model, tokenizer = load_model(
        revision["snapshot"], device=params["device"], dtype=params["dtype"]
    )
    E, nll, n_tokens = embed_texts(
        model, tokenizer, texts, params["max_length"], params["batch_size"]
    )
    engine = TopologySettings.from_config({"engine": params.get("engine")}).engine
    features, diagrams = embedding_features(E, params["pca_dims"], params["maxdim"], engine=engine)
    features = {**features, "perplexity": perplexity(nll, n_tokens), "n_tokens": n_tokens}
    seconds = time.perf_counter() - start
    doc = revision_doc(revision, engine=engine, features=features, seconds=seconds)
    return doc, diagrams


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


def release_pythia_weights_job(inputs: dict, out: str) -> None:
    """Remove the weight blobs one revision's fetch downloaded (keep_weights: false); record
    which. Blobs the cache held before, or that another revision links to, stay."""
    _release(inputs, out)


def pythia_weight_topology_job(revision: str, params: dict, out: str) -> None:
    """Neural persistence and VR of one revision's linear maps → JSON record."""
    from topotrain.io import write_record

    write_record(out, None, weight_record(_read_json(revision), params), allow_nan=True)


def pythia_embedding_topology_job(
    revision: str, texts: str, params: dict, out: dict[str, str]
) -> None:
    """Embeddings of the validation texts at one revision → topological + spectral
    features, perplexity."""
    import torch

    from topotrain.io import write_record

    torch.set_num_threads(params["threads"])
    doc, diagrams = embedding_record(_read_json(revision), _read_json(texts)["texts"], params)
    named = {f"h{k}": d for k, d in enumerate(diagrams)}
    write_record(out["record"], out["diagrams"], doc, named, allow_nan=True)
    log.info(
        "%s step %d: perplexity %.2f in %.1f s",
        doc["model"],
        doc["step"],
        doc["features"]["perplexity"],
        doc["seconds"],
    )


def _checked_steps(docs: list[dict], params: dict) -> dict:
    """{(model, step): flags} after checking each model's revisions for identical weights."""
    from topotrain.sources.identity import series_flags

    allow = params["allow_identical_steps"]
    refetch = "to check, refetch them: snakemake --forcerun fetch_pythia"
    return series_flags(docs, allow, section="pythia", refetch=refetch)


def pythia_weight_tables_job(records: list[str], params: dict, out: dict[str, str]) -> None:
    """The Pythia weight-topology table over revisions, once no two revisions share weights."""
    from topotrain.analysis.tables import pythia as pa
    from topotrain.report.markdown import write_table
    from topotrain.sources.records import read_weight_records

    docs = read_weight_records(records, job="pythia_weight_topology")
    flags = _checked_steps(docs, params)
    table = pa.add_step_flags(pa.weights_table(docs), flags)
    write_table(table, out["weights_csv"], out["weights_md"], "Pythia weight topology")


def pythia_embedding_tables_job(inputs: dict, params: dict, out: dict[str, str]) -> None:
    """Embedding features (once no two revisions share weights), their correlations with
    perplexity, and topological vs spectral."""
    from topotrain.analysis.replication import perplexity
    from topotrain.analysis.tables import pythia as pa
    from topotrain.report.markdown import write_table
    from topotrain.sources.records import read_embedding_records

    docs, h1 = read_embedding_records(inputs["records"], inputs["diagrams"])
    flags = _checked_steps(docs, params)
    emb = pa.add_step_flags(pa.embeddings_table(docs, h1), flags)
    write_table(emb, out["embeddings_csv"], out["embeddings_md"], "Pythia embedding features")
    corr = perplexity.perplexity_correlations(emb, n_resamples=params["n_resamples"])
    write_table(corr, out["correlations_csv"], out["correlations_md"], "ρ with perplexity")
    comparison = perplexity.topological_vs_spectral(corr)
    write_table(comparison, out["comparison_csv"], out["comparison_md"], "Topological vs spectral")
    write_table(perplexity.kind_summary(comparison), out["kinds_csv"], out["kinds_md"], "By kind")


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


# Each rule's adapter, <rule>_rule(sm): what the rule hands its job, unpacked from the snakemake
# object (workflow/scripts/job.py runs every rule through jobs.run_rule, which calls it).


def fetch_pythia_rule(sm) -> None:
    fetch_pythia_job(sm.params.model, sm.params.step, sm.output[0])


def pythia_embedding_tables_rule(sm) -> None:
    inputs = {"records": list(sm.input.records), "diagrams": list(sm.input.diagrams)}
    pythia_embedding_tables_job(inputs, dict(sm.params.items()), dict(sm.output.items()))


def pythia_embedding_topology_rule(sm) -> None:
    params = dict(sm.params.embeddings, threads=sm.threads)
    pythia_embedding_topology_job(
        sm.input.revision, sm.input.texts, params, dict(sm.output.items())
    )


def pythia_figures_rule(sm) -> None:
    pythia_figures_job(dict(sm.input.items()), dict(sm.output.items()))


def pythia_texts_rule(sm) -> None:
    pythia_texts_job(sm.params.corpus, sm.params.texts, sm.output[0])


def pythia_weight_figure_rule(sm) -> None:
    pythia_weight_figure_job(sm.input[0], dict(sm.output.items()))


def pythia_weight_tables_rule(sm) -> None:
    pythia_weight_tables_job(list(sm.input), dict(sm.params.items()), dict(sm.output.items()))


def pythia_weight_topology_rule(sm) -> None:
    pythia_weight_topology_job(sm.input[0], sm.params.weights, sm.output[0])


def release_pythia_weights_rule(sm) -> None:
    release_pythia_weights_job(dict(sm.input.items()), sm.output[0])
