"""Jobs of the confirmation on fresh seeds: the confirmation seeds' feature tables, the frozen
hypotheses (discovery side only) and their test on the confirmation side only."""

from __future__ import annotations

from topotrain.jobs.common import comove_design, log


def confirm_features_job(
    records: list[str],
    logs: list[str],
    params: dict,
    out: dict[str, str],
    series: list[str] | None = None,
    gradients: list[str] | None = None,
) -> None:
    """The GPT study's confirmation seeds in feature tables of their own, built as the discovery
    seeds' are (``aggregate.records_tables``), in one job."""
    from topotrain.jobs.aggregate import records_tables

    records_tables(records, logs, params, out, series, gradients)


def control_confirm_features_job(
    tables: list[str],
    out: dict[str, str],
    llc: list[str] | None = None,
    seeds: list[int] | None = None,
) -> None:
    """The control's confirmation seeds (one feature table per seed) in one table, with their
    LLC (``llc``: one table per seed of ``seeds``, baselines.llc) merged as the discovery
    seeds' is (``control_analysis_job``)."""
    from topotrain.io import atomic_write
    from topotrain.jobs.control import control_frame, control_llc_features

    df = control_frame(tables)
    if llc:
        df = df.merge(control_llc_features(llc, seeds), on=["model", "seed", "step"], how="left")
    atomic_write(out["table"], lambda fh: df.to_parquet(fh, index=False))
    log.info("confirmation: %d control seeds in %s", df["seed"].nunique(), out["table"])


def hypotheses_job(table: str, params: dict, out: dict[str, str]) -> None:
    """The branch's hits on the discovery seeds' table and its named hypotheses, frozen with the
    table's sha256 (``analysis.confirmation.confirm.hypotheses_table``); reads nothing else."""
    comove_design(params)
    import pandas as pd

    from topotrain.analysis.confirmation.confirm import BRANCHES, hypotheses_table
    from topotrain.analysis.inference.numerics import check_seed_numerics
    from topotrain.io import atomic_write_text
    from topotrain.sources.hub_files import file_sha256

    df = pd.read_parquet(table)
    check_seed_numerics(df)
    sha256 = file_sha256(table)
    branch = BRANCHES[params["branch"]]
    hyps = hypotheses_table(df, branch, params["named"], sha256, seed=params["seed"], source=table)
    atomic_write_text(out["hypotheses"], hyps.to_csv(index=False))
    log.info(
        "hypotheses (%s): %d hits, %d named, discovery table %s sha256 %s",
        branch.name,
        (hyps["source"] == "hit").sum(),
        (hyps["source"] == "named").sum(),
        table,
        sha256,
    )


def confirmation_job(hypotheses: str, table: str, params: dict, out: dict[str, str]) -> None:
    """The frozen hypotheses tested as one family on the confirmation seeds' table
    (``analysis.confirmation.confirm.confirmation_table``); the discovery table is never read."""
    comove_design(params)
    import pandas as pd

    from topotrain.analysis.confirmation.confirm import (
        BRANCHES,
        confirmation_table,
        read_hypotheses,
    )
    from topotrain.analysis.inference.numerics import check_seed_numerics
    from topotrain.io import atomic_write_text
    from topotrain.sources.hub_files import file_sha256

    hyps = read_hypotheses(hypotheses)
    df = pd.read_parquet(table)
    check_seed_numerics(df)
    branch = BRANCHES[params["branch"]]
    try:
        conf = confirmation_table(
            hyps, df, branch, params["sesoi"], file_sha256(hypotheses), seed=params["seed"]
        )
    except ValueError as err:
        raise ValueError(f"{table} against {hypotheses}: {err}") from err
    atomic_write_text(out["confirmation"], conf.to_csv(index=False))
    log.info("confirmation (%s): %s", branch.name, conf["verdict"].value_counts().to_dict())


# Each rule's adapter, <rule>_rule(sm): what the rule hands its job, unpacked from the snakemake
# object (workflow/scripts/job.py runs every rule through jobs.run_rule, which calls it).


def confirm_features_rule(sm) -> None:
    confirm_features_job(
        list(sm.input.records),
        list(sm.input.logs),
        dict(sm.params.items()),
        dict(sm.output.items()),
        list(sm.input.series),
        list(sm.input.gradients),
    )


def confirmation_rule(sm) -> None:
    confirmation_job(
        sm.input.hypotheses, sm.input.table, dict(sm.params.items()), dict(sm.output.items())
    )


def control_confirm_features_rule(sm) -> None:
    control_confirm_features_job(
        list(sm.input.tables), dict(sm.output.items()), list(sm.input.llc), sm.params.seeds
    )


def hypotheses_rule(sm) -> None:
    hypotheses_job(sm.input.table, dict(sm.params.items()), dict(sm.output.items()))
