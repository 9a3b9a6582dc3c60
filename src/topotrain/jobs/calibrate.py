"""Jobs of workflow/rules/calibrate.smk: the calibration suite's tables and both answers' power,
on simulated studies."""

from __future__ import annotations

from topotrain.jobs.analysis_notes import _verdict_note
from topotrain.jobs.common import _tables, comove_design


def calibration_job(params: dict, out: dict[str, str], threads: int = 1) -> None:
    """False-positive rates and power of every test the verdicts use, on simulated runs. Draws
    below what a verdict row needs (``pass_rule.verdict_draws``) are logged and noted under
    each table's heading, naming the config key (``_verdict_note``)."""
    from topotrain.analysis.calibration.suite import calibration_table
    from topotrain.config import ALPHA

    comove_design(params)
    knobs = params["calibration"]
    table = calibration_table(
        n_sim=knobs["simulations"],
        n_resamples=params["n_resamples"],
        seeds=tuple(knobs["seeds"]),
        seed=params["seed"],
        threads=threads,
        sesoi=params["sesoi"],
    )
    title = "Calibration: false-positive rates and power"
    sims = ("simulations", knobs["simulations"])
    note = _verdict_note(*sims, ALPHA, "calibration.csv", warn=False)  # calibration_table warned
    _tables(out, "calibration", table, title + note)
    draws = ("view_draws", knobs["view_draws"])
    if "views_csv" in out:
        from topotrain.analysis.calibration.persistent import null_table
        from topotrain.analysis.calibration.sign_rule import sign_rule_rows

        seeds = tuple(knobs["seeds"])
        views = null_table(draws[1], threads, seeds)
        title = "Calibration: level and co-movement views, persistent nulls"
        title += _verdict_note(*draws, ALPHA, "calibration_views.csv")
        _tables(out, "views", views, title)
        signs = sign_rule_rows(draws[1], seeds, params["sesoi"], params["seed"])
        title = "Calibration: the per-model sign rule, mixed signs"
        title += _verdict_note(*draws, ALPHA, "calibration_sign_rule.csv")
        _tables(out, "sign_rule", signs, title)
    if "intervals_csv" in out:
        from topotrain.analysis.calibration.intervals import NOMINAL, interval_table

        miss = interval_table(draws[1], threads, tuple(knobs["seeds"]))
        title = "Calibration: the co-movement effects' interval miss rates"
        title += _verdict_note(*draws, NOMINAL, "calibration_intervals.csv")
        _tables(out, "intervals", miss, title)


def question_power_job(params: dict, out: dict[str, str], threads: int = 1) -> None:
    """The power of both answers on the verdict rule (``calibration.question_power``): per
    question, planted condition and design, the share of simulated studies per verdict word,
    ``params["draws"]`` studies per row over ``threads`` processes, on the documented fitted
    noise."""
    from topotrain.analysis.calibration.question_power import STUDY_NOISE, question_table

    deltas = {"moves_with": params["sesoi_co"], "ranks": params["sesoi"]}
    table = question_table(
        params["draws"], threads, STUDY_NOISE, seed=params["seed"], deltas=deltas
    )
    title = "Power of both answers: verdict shares per question, planted condition and design"
    _tables(out, "question", table, title)


# Each rule's adapter, <rule>_rule(sm): what the rule hands its job, unpacked from the snakemake
# object (workflow/scripts/job.py runs every rule through jobs.run_rule, which calls it).


def calibration_rule(sm) -> None:
    calibration_job(dict(sm.params.items()), dict(sm.output.items()), sm.threads)


def question_power_rule(sm) -> None:
    question_power_job(dict(sm.params.items()), dict(sm.output.items()), sm.threads)
