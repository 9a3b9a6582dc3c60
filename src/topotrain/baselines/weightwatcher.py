"""WeightWatcher's spectral metrics of the weight matrices the workflow analyses, computed by the
``weightwatcher`` package itself (CalculatedContent, Apache-2.0; ``WeightWatcher.analyze`` on the
matrices as a state dict), not re-implemented here.

Per matrix W (N × M, M ≤ N): the eigenvalues λ of WᵀW, the squared singular values of W (M of
them), and from them
- ``alpha``: the exponent of the power law fitted to the tail of their density;
- ``alpha_weighted`` (α̂): α · log10 λ_max;
- ``log_spectral_norm``: log10 λ_max; ``log_norm``: log10 Σλ, the squared Frobenius norm;
- ``stable_rank``: Σλ / λ_max;
- ``num_evals`` and WeightWatcher's ``warning`` ("over-trained" for α < 2, "under-trained" for
  α > 6, else empty).

The package's defaults are kept: it fits from 8 eigenvalues up (``min_evals``) and calls a fit
from fewer than 20 small (its ``SMALL_N_CUTOFF``: it prints "SMALL N PL FIT"). Each matrix records
how its α came about, ``fit``:
- ``skipped``: fewer than 8 eigenvalues, no metric at all;
- ``small``: fitted from 8–19 eigenvalues: α is a noisy estimate (the GPT study's tiny-3k and
  small-7k, 8 and 16 eigenvalues per matrix);
- ``warned``: fitted from ≥ 20, with WeightWatcher's warning;
- ``fitted``: fitted from ≥ 20, no warning (med-21k's 24 up to xl-97k's 48: a fit, still short).

Importing weightwatcher loads matplotlib, scikit-learn and powerlaw (about 2.5 s on this
project's 2-core VM): the GPT study and the control call it once per training, not once per
checkpoint. A run's checkpoint and a Pythia revision carry it in their own topology record
(``with_ww``): their matrices are large, so the import is a small share of the job, and a record
kept after rotation or after the weights were given back keeps its metrics.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Mapping

import numpy as np

METRICS = ("alpha", "alpha_weighted", "log_spectral_norm", "log_norm", "stable_rank")
MIN_EVALS = 8  # weightwatcher's DEFAULT_MIN_EVALS: fewer eigenvalues, no fit
SMALL_N = 20  # weightwatcher's SMALL_N_CUTOFF: fewer, and its power-law fit warns
FITS = ("fitted", "warned", "small", "skipped")
COLUMNS = ("layer", "num_evals", *METRICS, "fit", "warning")


def fit_status(num_evals: int, warning: str) -> str:
    """How a matrix's α came about (FITS): by its eigenvalue count and WeightWatcher's warning."""
    if num_evals < MIN_EVALS:
        return "skipped"
    if num_evals < SMALL_N:
        return "small"
    return "warned" if warning else "fitted"


def ww_layers(matrices: Mapping[str, np.ndarray], source: str = "") -> list[dict]:
    """One record (COLUMNS) per matrix of ``matrices`` ({layer: 2-D array}), in their order:
    WeightWatcher's metrics of the layers it fits, NaN metrics for those it skips. Its prints
    and INFO logging are silenced; ValueError (naming ``source`` when given, and the layer) if a
    matrix is not 2-D or not finite."""
    import torch

    state = {}
    for name, W in matrices.items():
        W = np.asarray(W, dtype=np.float32)
        if W.ndim != 2 or not np.isfinite(W).all():
            where = f"{source}: " if source else ""
            raise ValueError(
                f"{where}layer {name}: WeightWatcher needs a finite 2-D matrix, got {W.shape}"
            )
        state[f"{name}.weight"] = torch.from_numpy(W)
    df = analyze(state)
    found = {row["name"]: row for row in df.to_dict("records")} if len(df) else {}
    records = []
    for name, W in matrices.items():
        row = found.get(name)
        evals = int(row["num_evals"]) if row else int(min(np.shape(W)))
        warning = str(row.get("warning") or "") if row else ""
        record = {"layer": name, "num_evals": evals}
        record |= {m: float(row[m]) if row else float("nan") for m in METRICS}
        record |= {"fit": fit_status(evals, warning) if row else "skipped", "warning": warning}
        records.append(record)
    return records


def analyze(state: dict):
    """``WeightWatcher(model=state).analyze()`` with its defaults, quietly (its logger at WARNING,
    its prints to nowhere)."""
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            import weightwatcher
        except ImportError as err:
            raise RuntimeError(
                f"WeightWatcher's metrics need the weightwatcher package ({err}): "
                "pip install weightwatcher, or set topology.weightwatcher: false"
            ) from err

        logger = logging.getLogger("weightwatcher")
        level = logger.level
        logger.setLevel(logging.WARNING)
        try:
            return weightwatcher.WeightWatcher(model=state).analyze()
        finally:
            logger.setLevel(level)


def ww_fields(record: dict) -> dict:
    """One ``ww_layers`` record as the per-layer ``ww_*`` fields of a topology record (the
    columns of ``aggregate.ww_layer_table``); a metric WeightWatcher did not fit (NaN) is None,
    as the records' JSON has no NaN."""
    return {
        f"ww_{k}": None if isinstance(v, float) and not np.isfinite(v) else v
        for k, v in record.items()
        if k != "layer"
    }


def with_ww(records: list[dict], matrices: Mapping[str, np.ndarray]) -> list[dict]:
    """Topology ``records`` (each with its ``layer``) with WeightWatcher's ``ww_*`` fields of
    their matrices (``matrices``: {layer: 2-D array}); a layer missing from ``matrices`` is an
    error naming it."""
    missing = [r["layer"] for r in records if r["layer"] not in matrices]
    if missing:
        raise ValueError(f"WeightWatcher: no matrix for layers {missing}")
    ww = {
        r["layer"]: ww_fields(r)
        for r in ww_layers({r["layer"]: matrices[r["layer"]] for r in records})
    }
    return [{**r, **ww[r["layer"]]} for r in records]
