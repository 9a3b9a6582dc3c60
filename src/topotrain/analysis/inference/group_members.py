"""Which runs make a group (``runs.<name>.group``, ``runs.<name>.seed``): their sizes, the
checkpoint steps and recorded training their seeds share, and the losses they can be tested
against; ``groups`` contrasts them.

The group's runs of one size (their parameter count) are one model; sizes pool as the GPT study's
models do. Per size, the contrast uses the checkpoint steps every seed of that size has
(``group_frame``: a seed with steps the others lack is named; a size with one seed is left out,
said). Members must share what is recorded of their training (``check_recorded``: numerics, the
model config, the Trainer's batch size and length; a mismatch names the runs and the key).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pandas as pd

from topotrain.analysis.inference.stats import ALPHA
from topotrain.config import LOSSES, SEEDS_FOR_ALPHA

TARGETS = LOSSES  # the losses a group's features are tested against
MIN_CHECKPOINTS = 3  # a loss logged at fewer shared checkpoints is no target
P_POSSIBLE = SEEDS_FOR_ALPHA  # seeds of one size below which no one-sided p < α exists


class GroupError(ValueError):
    """A group that cannot be contrasted as configured: names the runs and the reason."""


def size_label(n_params: float) -> str:
    """'3.2k', '14.1M', '1.0B' parameters: a size's model name in the group's tables."""
    n = float(n_params)
    for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return f"{n:.0f}"


def group_frame(
    group: str, tables: Mapping[str, pd.DataFrame], seeds: Mapping[str, int]
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """(features, members, notes) of a group: its runs' feature tables (``run_features``, one row
    per checkpoint) stacked with ``model`` = the run's size and ``seed`` = its seed, each size cut
    to the steps all its seeds share; members: one row per run (run, model, seed, n_params, its
    steps, those kept, those only it has). A seed given twice within a size, or a group with fewer
    than two seeds of every size, is a GroupError."""
    frames, rows, notes = {}, [], []
    for run, table in tables.items():
        n_params = table["n_params"].dropna()
        label = f"{group} {size_label(n_params.iloc[0])}" if len(n_params) else group
        frames[run] = table.assign(model=label, seed=int(seeds[run]))
    by_size: dict[str, list[str]] = {}
    for run, frame in frames.items():
        by_size.setdefault(frame["model"].iloc[0], []).append(run)
    kept = []
    for model, runs in by_size.items():
        given = [int(seeds[r]) for r in runs]
        if len(set(given)) < len(given):
            twice = sorted({s for s in given if given.count(s) > 1})
            named = [r for r in runs if int(seeds[r]) in twice]
            raise GroupError(
                f"group {group}: seed {twice[0]} is given to more than one run of size {model} "
                f"({', '.join(named)}): give each run its own seed"
            )
        steps = {r: set(frames[r]["step"].astype(int)) for r in runs}
        shared = set.intersection(*steps.values())
        for run in runs:
            only = sorted(steps[run] - shared)
            rows.append(
                {
                    "run": run,
                    "model": model,
                    "seed": int(seeds[run]),
                    "n_params": frames[run]["n_params"].iloc[0],
                    "steps": len(steps[run]),
                    "shared_steps": len(shared),
                    "only_this_seed": " ".join(map(str, only)),
                }
            )
            if only:
                notes.append(
                    f"{run} (seed {seeds[run]}) has {len(only)} steps the other seeds of {model} "
                    f"lack ({_steps(only)}): left out of the contrast"
                )
        if len(runs) < 2:
            notes.append(f"size {model} has one seed ({runs[0]}): no contrast at that size")
            continue
        if len(shared) < 2:
            notes.append(f"size {model}: its seeds share {len(shared)} steps: no contrast")
            continue
        kept += [frames[r][frames[r]["step"].isin(shared)] for r in runs]
    members = pd.DataFrame(rows)
    if not kept:
        raise GroupError(
            f"group {group}: no size has two seeds sharing two checkpoint steps "
            f"({', '.join(f'{m}: {len(r)} seed(s)' for m, r in by_size.items())}): a between-seed "
            f"contrast needs at least 2 seeds of one size ({P_POSSIBLE} for p < {ALPHA:g})"
        )
    df = pd.concat(kept, ignore_index=True).sort_values(["model", "seed", "step"])
    return df.reset_index(drop=True), members, notes


def _steps(steps: Sequence[int]) -> str:
    shown = ", ".join(map(str, steps[:6]))
    return shown + (f", … {steps[-1]}" if len(steps) > 6 else "")


# What must agree across a group's seeds where it is recorded: key -> where it comes from.
RECORDED = {
    "numerics": "the numerics topotrain trained with (checkpoint metadata)",
    "model_config": "the model's config (config.json or topotrain's checkpoint metadata)",
    "train_batch_size": "trainer_state.json",
    "max_steps": "trainer_state.json",
    "num_train_epochs": "trainer_state.json",
}


def check_recorded(group: str, recorded: Mapping[str, Mapping], sizes: Mapping[str, str]) -> None:
    """GroupError naming the key, the runs and their values when two runs of one size (``sizes``:
    run → model) record different values of a RECORDED key; a key a run does not record is not
    compared for it."""
    for model in dict.fromkeys(sizes.values()):
        runs = [r for r, m in sizes.items() if m == model]
        for key, where in RECORDED.items():
            values = {r: recorded.get(r, {}).get(key) for r in runs}
            values = {r: v for r, v in values.items() if v is not None}
            if len({_canonical(v) for v in values.values()}) > 1:
                shown = "; ".join(f"{r}: {v}" for r, v in values.items())
                raise GroupError(
                    f"group {group}: the seeds of size {model} differ in {key} ({where}): "
                    f"{shown}. Seeds of one recipe must share it: take the odd run out of the "
                    "group, or give it a group of its own"
                )


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def group_targets(df: pd.DataFrame) -> list[str]:
    """The losses every seed logged at MIN_CHECKPOINTS or more of the steps kept."""
    out = []
    for target in TARGETS:
        if target in df:
            counts = df.groupby(["model", "seed"])[target].apply(lambda v: v.notna().sum())
            if len(counts) and counts.min() >= MIN_CHECKPOINTS:
                out.append(target)
    return out
