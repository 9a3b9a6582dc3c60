"""Jobs of the spine: corpus, training, per-checkpoint topology, per-run series, aggregate."""

from __future__ import annotations

from pathlib import Path

from topotrain.jobs.common import _hub_corpus, log


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


def train_model_job(
    model: str,
    arch: dict,
    train: dict,
    train_bin: str,
    val_bin: str,
    out: dict,
    state_dir: str,
    threads: int = 1,
) -> None:
    """Train one (model, seed) into the folder of ``out`` (checkpoints, metrics, evals); errors
    are re-raised with the model's name in front."""
    from topotrain.config import checkpoint_steps
    from topotrain.jobs.common import out_folder
    from topotrain.training.model import GPTConfig
    from topotrain.training.run_state import published_files
    from topotrain.training.train import TrainConfig, train_model

    out_dir = out_folder(out, lambda folder: published_files(folder, checkpoint_steps(train)))

    model_cfg = GPTConfig.from_study(arch, arch["context"], arch["vocab_size"])
    cfg = TrainConfig(**{**train, "threads": threads})
    log.info("training %s (seed %d) → %s", model, cfg.seed, out_dir)
    try:
        train_model(model_cfg, cfg, train_bin, val_bin, out_dir, state_dir)
    except (RuntimeError, ValueError) as err:
        raise type(err)(f"model {model}, seed {cfg.seed}: {err}") from err


def weight_topology_job(
    checkpoint: str, params: dict, out: dict[str, str], threads: int = 1
) -> None:
    """Weight topology of one checkpoint → JSON record + npz diagrams (``out``)."""
    from topotrain.topology.checkpoint import write_checkpoint_topology

    write_checkpoint_topology(
        checkpoint,
        out["record"],
        out["diagrams"],
        patterns=params["patterns"],
        max_points=params["max_points"],
        seed=params["seed"],
        maxdim=params["maxdim"],
        n_threads=threads,
        engine=params["engine"],
    )


def aggregate_features_job(
    records: list[str],
    logs: list[str],
    params: dict,
    out: dict[str, str],
    series: list[str] | None = None,
    gradients: list[str] | None = None,
) -> None:
    """Join every checkpoint's features (each training's diagram series, the gradient records
    when given: one per record, same order) with the training logs (metrics.csv, evals.csv of
    each of ``params["trainings"]``, in its order) into the feature tables."""
    from topotrain.analysis.aggregate import aggregate_weights

    for path in out.values():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    pairs = zip(params["trainings"], logs[::2], logs[1::2], strict=True)
    trainings = [dict(t, metrics=metrics, evals=evals) for t, metrics, evals in pairs]
    aggregate_weights(
        records,
        params["record_keys"],
        trainings,
        params["total_steps"],
        params["interval"],
        out,
        series,
        gradients,
    )


def diagram_series_job(diagrams: list[str], params: dict, out: dict[str, str]) -> None:
    """One run's diagram series: step distances and vectorised diagrams (topology.series)."""
    from topotrain.jobs.common import with_kept
    from topotrain.topology.series import write_run_series

    diagrams = with_kept(diagrams, params["steps"], params.get("kept"), ".npz")
    write_run_series(diagrams, params["steps"], params["series"], out)


def gradient_topology_job(
    checkpoints: list[str], tokens: str, params: dict, out: dict[str, list[str]], threads: int = 1
) -> None:
    """Topology of the probe-batch gradients of each checkpoint of one training → a JSON record
    and npz diagrams per checkpoint (one process for the training's checkpoints)."""
    from topotrain.training.gradients import write_training_gradients

    topo = params["topology"]
    write_training_gradients(
        list(zip(out["records"], out["diagrams"], strict=True)),
        checkpoints,
        tokens,
        topo["patterns"],
        params["batch_size"],
        params["seed"],
        {k: topo[k] for k in ("max_points", "seed", "maxdim", "engine")},
        n_threads=threads,
    )
