"""One ``runs:`` entry's analyses of its feature table (``tables.runs``): the associations with each
logged loss in the raw and time-aware views (beside the clock ``step`` and the scale
``l2_norm_mean``), and the phases.
"""

from __future__ import annotations

import logging

import pandas as pd

from topotrain.analysis.dynamics.phases import phase_table
from topotrain.analysis.inference.associations import (
    association_summary,
    association_table,
    feature_kinds,
)
from topotrain.analysis.inference.stats import MIN_RUN, TOO_SHORT
from topotrain.config import DEFAULTS, LOSSES

_ANALYSIS = DEFAULTS["analysis"]  # the schema's analysis: defaults

log = logging.getLogger(__name__)

MIN_CHECKPOINTS = 3  # fewer finite values of a loss: no association with it


def logged_targets(table: pd.DataFrame) -> list[str]:
    """The losses with at least MIN_CHECKPOINTS finite values: what associations can target."""
    return [t for t in LOSSES if table[t].notna().sum() >= MIN_CHECKPOINTS]


def run_features(table: pd.DataFrame) -> list[str]:
    """The features to associate: the spine's (``associations.feature_kinds``) that this table
    holds with some finite value, baselines included (``lr``/``grad_norm`` only when logged)."""
    return [f for f, _ in feature_kinds(table) if f in table and table[f].notna().any()]


def run_analysis(
    table: pd.DataFrame,
    n_resamples: int = _ANALYSIS["bootstrap_resamples"],
    seed: int = _ANALYSIS["bootstrap_seed"],
    threshold: float = _ANALYSIS["phase_threshold"],
    n_bkps: int = 2,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[str]]:
    """(associations, their summary, phases, notes) of one run's feature table."""
    notes = []
    if len(table) < MIN_RUN:
        notes.append(
            f"{TOO_SHORT.format(n=len(table))}: every ρ below has an exact permutation "
            "p and no interval, and no verdict rests on it"
        )
    targets = logged_targets(table)
    if targets:
        features = run_features(table)
        assoc = association_table(table, features, n_resamples, seed, targets=targets)
        summary = association_summary(assoc)
    else:
        logged = int(table[list(LOSSES)].notna().any(axis=1).sum())
        why = (
            "give the run `losses:`"
            if not logged
            else f"the losses given match only {logged} of its {len(table)} checkpoints"
        )
        notes.append(
            f"no loss logged at {MIN_CHECKPOINTS} or more checkpoints: associations with loss "
            f"not computed ({why})"
        )
        assoc = summary = pd.DataFrame()
    for target in sorted(set(LOSSES) - set(targets)):
        n = int(table[target].notna().sum())
        if targets and n == 0:
            notes.append(f"{target} was not logged: no associations with it")
        elif targets:
            notes.append(f"{target} logged at only {n} checkpoints: no associations with it")
    phases = phase_table(table, threshold=threshold, n_bkps=n_bkps)
    for note in notes:
        log.info("%s", note)
    return assoc, summary, phases, notes
