"""How often a flag the report counts (``beats_clock``, ``beats_scale``) fires when nothing is
there: the calibration suite's false-positive rate on its worst null, for the study's seed count.

"k of K features beat the clock" is read beside K × that rate. The rate comes from the run's own
``results/tables/calibration.csv`` (``make calibrate``) when the report job has it, else from
DOCUMENTED, the rates docs/calibration.md reports; the printed label names which.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from topotrain.config import CONFIDENCE

FALSE_POSITIVE = "false-positive rate"  # calibration.csv's ``measures`` on a null scenario
DOCUMENTED_SIMULATIONS = 1000  # simulated studies per scenario behind DOCUMENTED
DOCUMENTED_NULL = "random_walk"  # the worst null of both pooled flags at every seed count
DOCUMENTED_SOURCE = (
    "docs/calibration.md, measured 2026-11-26 with 1,000 simulated studies of 5 models; "
    "`make calibrate` measures this study's own"
)
DOCUMENTED = {  # test -> {seeds per model: false-positive rate on DOCUMENTED_NULL}
    "beats_clock (pooled)": {3: 0.035, 5: 0.045, 8: 0.047},
    "beats_scale (pooled)": {3: 0.038, 5: 0.044, 8: 0.053},
}
COLUMNS = ["seeds", "scenario", "rate", "mc_low", "mc_high"]


@dataclass(frozen=True)
class NullRate:
    """A flag's false-positive rate on its worst null, its 95% Monte Carlo (Clopper–Pearson)
    interval, the seed count it was measured at and where it comes from."""

    rate: float
    mc_low: float
    mc_high: float
    seeds: str  # "5 seeds", or which calibrated counts stand in for an uncalibrated one
    scenario: str  # the worst null
    source: str

    def expected(self, k: int) -> str:
        """'0.9 = 20 × 0.045': the number of K flags expected to fire under the null."""
        return f"{k * self.rate:.1f} = {k} × {self.rate:.3f}"

    def label(self) -> str:
        """What the rate is and where it comes from, for the report's text."""
        return (
            f"the calibrated false-positive rate, {self.seeds}, worst null `{self.scenario}`, "
            f"MC {100 * CONFIDENCE:g}% [{self.mc_low:.3f}, {self.mc_high:.3f}]; {self.source}"
        )


def documented(test: str) -> pd.DataFrame:
    """DOCUMENTED's rates of ``test`` as calibration rows (COLUMNS), with the Clopper–Pearson
    interval of k = rate × DOCUMENTED_SIMULATIONS hits, as the calibration suite computes it."""
    from scipy import stats

    rows = []
    for seeds, rate in DOCUMENTED.get(test, {}).items():
        hits = round(rate * DOCUMENTED_SIMULATIONS)
        ci = stats.binomtest(hits, DOCUMENTED_SIMULATIONS).proportion_ci(CONFIDENCE, method="exact")
        rows.append([str(seeds), DOCUMENTED_NULL, rate, ci.low, ci.high])
    return pd.DataFrame(rows, columns=COLUMNS)


def null_rate(test: str, seeds: int, calibration: pd.DataFrame | None = None) -> NullRate | None:
    """The false-positive rate of ``test`` (calibration.csv's name, e.g. "beats_clock (pooled)")
    at ``seeds`` seeds per model: the largest over the null scenarios of ``calibration`` (the
    rows of calibration.csv) when it measured the test, else of DOCUMENTED. A seed count that
    was not calibrated gets the largest over every calibrated count; None when neither source
    has the test."""
    rows, source = documented(test), DOCUMENTED_SOURCE
    if calibration is not None:
        own = calibration[
            (calibration["test"] == test) & (calibration["measures"] == FALSE_POSITIVE)
        ]
        if not own.empty:
            rows = own.assign(seeds=own["seeds"].astype(str))[COLUMNS]
            source = "this study's results/tables/calibration.csv"
    if rows.empty:
        return None
    exact = rows[rows["seeds"] == str(seeds)]
    counted = f"{seeds} seeds"
    if exact.empty:
        calibrated = ", ".join(sorted(rows["seeds"].unique(), key=int))
        counted = f"{seeds} seeds not calibrated: the largest over {calibrated} seeds"
    worst = (rows if exact.empty else exact).sort_values("rate").iloc[-1]
    return NullRate(
        float(worst["rate"]),
        float(worst["mc_low"]),
        float(worst["mc_high"]),
        counted,
        str(worst["scenario"]),
        source,
    )
