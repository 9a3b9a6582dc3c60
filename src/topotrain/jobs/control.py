"""Jobs of the grokking control: train one seed, its features, the analysis across seeds."""

from __future__ import annotations

from collections.abc import Callable

from topotrain.jobs.common import comove_design, log


def train_control_job(control: dict, seed: int, out: dict, threads: int = 1) -> None:
    """Train one seed of the control (training.modular) into the folder of ``out``."""
    import torch

    from topotrain.jobs.common import out_folder
    from topotrain.training.modular import ControlConfig, train_control
    from topotrain.training.run_state import published_files

    torch.set_num_threads(threads)  # one thread: bit-identical reruns
    cfg = ControlConfig(**control, seed=seed)
    steps = range(0, cfg.steps + 1, cfg.interval)
    out_dir = out_folder(out, lambda folder: published_files(folder, steps, evals=False))
    log.info("control: training seed %d (p = %d, %d steps) → %s", seed, cfg.p, cfg.steps, out_dir)
    rows = train_control(cfg, out_dir)
    log.info("control: seed %d done, final test accuracy %.3f", seed, rows[-1][-1])


def control_features(
    run_dir: str,
    p: int,
    k: int | None = None,
    topology: dict | None = None,
    seed: int = 0,
    *,
    read: Callable | None = None,
):
    """(checkpoints, layers) of a seed's run directory (``sources.records.read_control_run``):
    each checkpoint's ``analysis.control.features.checkpoint_row`` and weight topology, joined
    with metrics.csv (``control_table``) and the numerics the checkpoint was trained with
    (``numerics``); layers: one record per matrix and checkpoint; both name the Rips engine
    (``engine``). ``read``: a checkpoint's path → (tensors, numerics), by default
    ``sources.checkpoint.read_checkpoint``."""
    import pandas as pd

    from topotrain.analysis.control.features import FOURIER_K, MODEL, checkpoint_row, control_table
    from topotrain.analysis.inference.numerics import numerics_label
    from topotrain.sources.checkpoint import read_checkpoint
    from topotrain.sources.records import read_control_run
    from topotrain.topology.settings import TopologySettings

    k, read = FOURIER_K if k is None else k, read or read_checkpoint
    metrics, files = read_control_run(run_dir)
    settings = TopologySettings.from_config(topology)  # the tables name the engine that ran
    rows, layers = [], []
    for step in sorted(files):
        log.info("control features: %s step %d", run_dir, step)
        tensors, trained = read(files[step])
        row, records = checkpoint_row(tensors, files[step], p, k, settings)
        rows.append({"step": step, "numerics": numerics_label(trained), **row})
        keys = {"model": MODEL, "seed": seed, "step": step}
        layers += [{**keys, **r, "engine": settings.engine} for r in records]
    layers = pd.DataFrame(layers)
    return control_table(metrics, rows, layers, seed), layers


def control_features_job(
    run_dir: str, seed: int, p: int, fourier_k: int, topology: dict, out: dict[str, str]
) -> None:
    """One seed's feature table (one row per checkpoint) and per-matrix records, as parquet."""
    from topotrain.io import atomic_write_all

    table, layers = control_features(run_dir, p, fourier_k, topology, seed=seed)
    atomic_write_all(
        {
            out["table"]: lambda fh: table.to_parquet(fh, index=False),
            out["layers"]: lambda fh: layers.to_parquet(fh, index=False),
        }
    )


def control_frame(tables: list[str]):
    """The seeds' feature tables (``control_features_job``) in one frame, every seed trained
    with the same numerics (``check_seed_numerics``)."""
    from topotrain.analysis.inference.numerics import check_seed_numerics
    from topotrain.sources.records import read_control_tables

    df = read_control_tables(tables)
    check_seed_numerics(df)
    return df


def control_weightwatcher_job(checkpoints: list[str], params: dict, out: str) -> None:
    """WeightWatcher's metrics of every 2-D matrix (``params["patterns"]``) of one control seed's
    checkpoints: the GPT study's ``weightwatcher_job`` on the control's files."""
    from topotrain.jobs.topology import weightwatcher_job

    weightwatcher_job(checkpoints, params, out)


def control_llc_features(paths: list[str], seeds: list[int]):
    """Every seed's LLC table (one per seed of ``seeds``) as its LLC_COLUMNS, keyed by model,
    seed and step (NaN at the checkpoints it skips once merged)."""
    from topotrain.analysis.control.features import MODEL
    from topotrain.analysis.tables.aggregate import LLC_COLUMNS
    from topotrain.sources.records import read_run_tables

    runs = [{"model": MODEL, "seed": s} for s in seeds]
    tables = read_run_tables(paths, runs, "control LLC table", "control_llc")
    return tables[["model", "seed", "step", *LLC_COLUMNS]]


def control_ww_features(paths: list[str], seeds: list[int]):
    """The seeds' WeightWatcher tables (``weightwatcher_job``, one per seed in the order of
    ``seeds``) as per-checkpoint ``ww_*_mean`` columns (``aggregate.ww_features``), keyed by
    model, seed, step."""
    from topotrain.analysis.control.features import MODEL
    from topotrain.analysis.tables.aggregate import ww_features, ww_layer_table
    from topotrain.sources.records import read_run_tables

    runs = [{"model": MODEL, "seed": s} for s in seeds]
    tables = read_run_tables(paths, runs, "WeightWatcher table", "control_weightwatcher")
    return ww_features(ww_layer_table(tables))


def control_llc_job(checkpoints: list[str], params: dict, seed: int, out: dict[str, str]) -> None:
    """The LLC (``baselines.llc``, its settings ``params["llc"]``) of one control seed's
    checkpoints (every ``every``-th and the last) over its training pairs (``params["control"]``)
    → a parquet table and the traces (``topology.write_llc``)."""
    from topotrain.jobs.common import log
    from topotrain.jobs.topology import write_llc
    from topotrain.training.llc import control_llc

    llc = control_llc(checkpoints, params["control"], seed, params["llc"], log.info)
    write_llc(*llc, out)


def control_analysis_job(inputs: dict[str, list[str]], params: dict, out: dict[str, str]) -> None:
    """Every seed's features (``inputs["tables"]``; with WeightWatcher's metrics ``inputs["ww"]``
    and the LLC ``inputs["llc"]``, one table per seed of ``params["seeds"]``, when given) → the
    features table, the per-feature, per-seed, verdict (at Δ = ``params["sesoi"]``,
    ``analysis.sesoi``; the schema's default when None) and diagnostics tables and the per-seed
    curves figure; the co-movement view at the params' H (``comove_design``)."""
    from topotrain.analysis.control.claims import verdicts
    from topotrain.analysis.control.diagnostics import WW, control_diagnostics
    from topotrain.analysis.control.grokking import FEATURES, SESOI, feature_table, seed_table
    from topotrain.analysis.inference.stats import LLC_FEATURES
    from topotrain.io import atomic_write_all
    from topotrain.report.control import control_curves

    comove_design(params)
    tables, ww, llc = inputs["tables"], inputs.get("ww"), inputs.get("llc")
    seeds = params["seeds"]
    sesoi = SESOI if params["sesoi"] is None else params["sesoi"]
    df = control_frame(tables)
    if ww:
        df = df.merge(control_ww_features(ww, seeds), on=["model", "seed", "step"], how="left")
    if llc:
        df = df.merge(control_llc_features(llc, seeds), on=["model", "seed", "step"], how="left")
    features = [f for f in (*FEATURES, *WW, *LLC_FEATURES) if f in df]
    seeds_table = seed_table(df, features)
    table = feature_table(df, seeds_table, features)
    csvs = {
        "control": table,
        "control_seeds": seeds_table,
        "control_verdicts": verdicts(table, sesoi=sesoi),
        "control_diagnostics": control_diagnostics(df),
    }
    writers = {
        out[f"{n}_csv"]: lambda fh, f=f: fh.write(f.to_csv(index=False).encode())
        for n, f in csvs.items()
    }
    atomic_write_all({**writers, out["features"]: lambda fh: df.to_parquet(fh, index=False)})
    control_curves(df, seeds_table, out["control_curves_png"], out["control_curves_pdf"])
    control_between_seeds(df, sesoi, out)
    log.info(
        "control: %d seeds, %d grokked",
        df["seed"].nunique(),
        seeds_table.drop_duplicates("seed")["grokking_step"].notna().sum(),
    )


def control_between_seeds(df, sesoi: float, out: dict[str, str]) -> None:
    """The control's between-seed picture: its primary feature and the known progress measure
    (the Fourier one), each seed's deviation against its test-loss deviation at the same step,
    beyond the clock and beyond the weight norm (``seed_points.labelled_points``)."""
    from topotrain.analysis.control.grokking import FOURIER, NORM, PRIMARY, TARGET
    from topotrain.analysis.inference.seed_points import control_views, labelled_points
    from topotrain.report.answer import figure_between_seeds
    from topotrain.report.plots import _label

    features = {f: _label(f) for f in (PRIMARY, FOURIER)}
    points = labelled_points(df, features, control_views(TARGET, NORM))
    design = {"seeds": int(df["seed"].nunique()), "sesoi": sesoi, "sesoi_co": sesoi}
    design |= {"models": list(features.values()), "unclaimed": f"vs {TARGET}"}
    figure_between_seeds(
        points,
        PRIMARY,
        design,
        out["control_between_seeds_png"],
        out["control_between_seeds_pdf"],
        title="The grokking control (test loss; the Fourier measure is the known progress measure)",
    )


# Each rule's adapter, <rule>_rule(sm): what the rule hands its job, unpacked from the snakemake
# object (workflow/scripts/job.py runs every rule through jobs.run_rule, which calls it).


def control_analysis_rule(sm) -> None:
    control_analysis_job(dict(sm.input.items()), dict(sm.params.items()), dict(sm.output.items()))


def control_features_rule(sm) -> None:
    run_dir = sm.input.metrics.rsplit("/", 1)[0]
    control_features_job(
        run_dir,
        int(sm.wildcards.seed),
        sm.params.p,
        sm.params.fourier_k,
        sm.params.topology,
        dict(sm.output.items()),
    )


def control_llc_rule(sm) -> None:
    seed = int(sm.wildcards.seed)
    control_llc_job(list(sm.input), dict(sm.params.items()), seed, dict(sm.output.items()))


def control_weightwatcher_rule(sm) -> None:
    control_weightwatcher_job(list(sm.input), sm.params.ww, sm.output[0])


def train_control_rule(sm) -> None:
    train_control_job(
        sm.params.control, int(sm.wildcards.seed), dict(sm.output.items()), sm.threads
    )
