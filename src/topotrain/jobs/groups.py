"""Job of a group of your runs that are seeds of one recipe (``runs.<name>.group``)."""

from __future__ import annotations

from topotrain.jobs.common import _tables, log


def run_group_job(inputs: dict, params: dict, out: dict[str, str]) -> None:
    """The group's members, between-seed contrasts and REPORT.md section. ``inputs``: the
    members' feature tables (``tables``, in the order of ``params["members"]``) and each member's
    latest checkpoint inputs (``probes``, ``params["members"][run]["probes"]`` of them each),
    read for what they record of the training (``analysis.groups.check_recorded``)."""
    import pandas as pd

    from topotrain.analysis.groups import (
        check_recorded,
        group_contrasts,
        group_frame,
        power_note,
    )
    from topotrain.io import atomic_write_text
    from topotrain.jobs.runs import checkpoint_files
    from topotrain.report.groups import group_section
    from topotrain.sources.recorded import recorded_training

    group, members = params["group"], params["members"]
    runs = list(members)
    tables = {r: pd.read_parquet(p) for r, p in zip(runs, inputs["tables"], strict=True)}
    seeds = {r: members[r]["seed"] for r in runs}
    df, table, notes = group_frame(group, tables, seeds)
    probes, start = {}, 0
    for run in runs:
        n = members[run]["probes"]
        probes[run], start = list(inputs["probes"][start : start + n]), start + n
    recorded = {r: recorded_training(checkpoint_files(probes[r])[0]) for r in runs}
    check_recorded(group, recorded, dict(zip(table["run"], table["model"], strict=True)))
    checked = sorted({k for r in recorded.values() for k in r})
    contrasts = group_contrasts(df, params["primary"], params["sesoi"], params["seed"])
    power = power_note(df)
    for note in [*notes, power]:
        log.info("group %s: %s", group, note)
    _tables(out, "members", table, f"group {group}: its seeds")
    _tables(out, "contrasts", contrasts, f"group {group}: between-seed contrasts")
    text = group_section(group, table, contrasts, notes, power, checked, params["primary"])
    atomic_write_text(out["section"], text)
    log.info(
        "group %s: %d runs, %d sizes, %d contrast rows (%d primary)",
        group,
        len(runs),
        df["model"].nunique(),
        len(contrasts),
        int((contrasts["role"] == "primary").sum()),
    )
