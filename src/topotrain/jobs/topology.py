"""Jobs of workflow/rules/topology.smk: per-checkpoint weight topology, per-run diagram
series, the gradients' topology."""

from __future__ import annotations


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
