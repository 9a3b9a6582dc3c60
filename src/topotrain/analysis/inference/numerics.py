"""One numerics per model: every seed of a model must be trained with the same device, precision,
compile, threads and kernels, or the between-seed analysis would read a shift of numerics (which
moves a seed's features and its loss together) as the seeds' spread.

The trainer records its numerics in every checkpoint (``training.numerics``); the feature tables
carry them as the ``numerics`` column, one string per checkpoint ("field=value; …",
``numerics_label``). Runs without a record (trained before it existed, or a user's own runs) are
let through with a note.
"""

from __future__ import annotations

import logging

import pandas as pd

log = logging.getLogger(__name__)

COLUMN = "numerics"
SEP, EQ = "; ", "="


def numerics_label(fields: dict | None) -> str | None:
    """The recorded numerics as one stable string, "device=cpu; dtype=float32; …" (None: none)."""
    if not fields:
        return None
    return SEP.join(f"{key}{EQ}{value}" for key, value in fields.items())


def numerics_fields(label: str) -> dict[str, str]:
    """The {field: value} of a ``numerics_label`` string."""
    return dict(part.partition(EQ)[::2] for part in label.split(SEP))


def differing_fields(labels: list[str]) -> list[str]:
    """The fields whose value (or presence) is not the same in every label, in first-seen order."""
    fields = [numerics_fields(label) for label in labels]
    keys = dict.fromkeys(key for f in fields for key in f)
    return [key for key in keys if len({f.get(key) for f in fields}) > 1]


def seed_labels(df: pd.DataFrame) -> dict[str, dict[int, list[str]]]:
    """model → seed → the distinct numerics of its checkpoints ([] when unrecorded)."""
    out: dict[str, dict[int, list[str]]] = {}
    for (model, seed), rows in df.groupby(["model", "seed"], sort=True):
        labels = rows[COLUMN].dropna() if COLUMN in rows else pd.Series(dtype=object)
        out.setdefault(model, {})[seed] = sorted(set(labels))
    return out


def mixed_numerics_error(model: str, seeds: dict[int, list[str]]) -> ValueError:
    """The error for a model whose recorded seeds (or one seed's checkpoints) differ: the
    differing fields, each seed's values of them ("a | b" for a seed whose checkpoints differ)
    and the fields all share."""
    labels = sorted({label for found in seeds.values() for label in found})
    differ = differing_fields(labels)

    def values(label: str) -> str:
        fields = numerics_fields(label)
        return ", ".join(f"{key}{EQ}{fields.get(key, '(none)')}" for key in differ)

    per_seed = "; ".join(
        f"seed {seed}: {' | '.join(map(values, found))}" for seed, found in seeds.items()
    )
    shared = SEP.join(
        f"{k}{EQ}{v}" for k, v in numerics_fields(labels[0]).items() if k not in differ
    )
    return ValueError(
        f"model {model}: its seeds were trained with different numerics ({', '.join(differ)} "
        f"differ: {per_seed}; the same in all: {shared or '(nothing)'}). A seed trained "
        "differently shifts its features and its loss together, so the between-seed analysis "
        "stops: retrain the odd seeds with the same train.device, train.threads, train.compile "
        "and train.deterministic, the same torch and the same kind of machine"
    )


def check_seed_numerics(df: pd.DataFrame) -> list[str]:
    """Raise ValueError when a model's seeds were trained with different numerics (or one seed's
    checkpoints were); return (and log) a note per model with unrecorded seeds."""
    notes = []
    for model, seeds in seed_labels(df).items():
        recorded = {seed: found for seed, found in seeds.items() if found}
        if len({label for found in recorded.values() for label in found}) > 1:
            raise mixed_numerics_error(model, recorded)
        if unrecorded := [seed for seed in seeds if seed not in recorded]:
            listed = ", ".join(map(str, unrecorded))
            notes.append(
                f"model {model}: numerics unrecorded for seeds {listed} (trained before topotrain "
                "recorded them, or not by topotrain): one numerics per model is unchecked for them"
            )
    for note in notes:
        log.warning(note)
    return notes
