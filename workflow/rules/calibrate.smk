# Calibration: the tests' false-positive rates and power, and both answers' power, on simulated
# studies (make calibrate; no study data needed).


rule calibration:
    output:
        calibration_csv=report(
            f"{RESULTS}/tables/calibration.csv",
            caption="../report/calibration.rst",
            category="Tables",
        ),
        calibration_md=f"{RESULTS}/tables/calibration.md",
        views_csv=f"{RESULTS}/tables/calibration_views.csv",
        views_md=f"{RESULTS}/tables/calibration_views.md",
        sign_rule_csv=f"{RESULTS}/tables/calibration_sign_rule.csv",
        sign_rule_md=f"{RESULTS}/tables/calibration_sign_rule.md",
        intervals_csv=f"{RESULTS}/tables/calibration_intervals.csv",
        intervals_md=f"{RESULTS}/tables/calibration_intervals.md",
    log:
        f"{RESULTS}/logs/analysis/calibration.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 16  # scenarios run in parallel processes; Snakemake caps it at --cores
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        **COMOVE_PARAMS,
        calibration=config["analysis"]["calibration"],
        n_resamples=config["analysis"]["bootstrap_resamples"],
        seed=config["analysis"]["bootstrap_seed"],
        sesoi=config["analysis"]["sesoi"],
    script:
        "../scripts/job.py"


rule question_power:
    output:
        question_csv=f"{RESULTS}/tables/question_power.csv",
        question_md=f"{RESULTS}/tables/question_power.md",
    log:
        f"{RESULTS}/logs/analysis/question_power.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 16  # simulated studies in parallel processes (the same table); capped at --cores
    resources:
        mem_mb=4000,
        runtime=240,
    params:
        draws=config["analysis"]["calibration"]["question_draws"],
        sesoi=config["analysis"]["sesoi"],
        sesoi_co=config["analysis"]["sesoi_co"],
        seed=config["analysis"]["bootstrap_seed"],
    script:
        "../scripts/job.py"
