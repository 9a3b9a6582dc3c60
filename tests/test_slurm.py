"""The tiny study through a real single-node SLURM cluster with profiles/slurm: every job goes
through sbatch, topology jobs are submitted as group jobs, and the feature table equals a local
run's.

Needs root and the Debian packages slurm-wlm and munge (skips otherwise);
run with `make test-slurm`.
"""

from __future__ import annotations

import re

import conftest
import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import ROOT, run_snakemake, tiny_config, write_corpus
from slurm_cluster import SlurmCluster, missing_requirements

pytestmark = pytest.mark.slurm

TARGET = "results/features/weights.csv"
LIMIT_S = 300  # hard limit on the SLURM run (seen: 95-105 s on 2 busy cores)
TOPOLOGY_JOBS = 6  # two models x checkpoints at steps 0, 20, 40
GROUP_SIZE = 3  # --group-components topology=3: two group jobs
# profiles/slurm, adjusted to this node: its partition, its 2 CPUs, small memory requests,
# quick first status check, and SLURM logs kept so the test can read them.
SLURM_OVERRIDES = [
    "--cores",
    "2",
    "--jobs",
    "4",
    "--default-resources",
    "slurm_partition=debug",
    "--set-resources",
    "prepare_corpus:mem_mb=500",
    "train_model:mem_mb=1000",
    "weight_topology:mem_mb=500",
    "aggregate_run:mem_mb=1000",
    "aggregate_features:mem_mb=1000",
    "diagram_series:mem_mb=500",
    "--group-components",
    f"topology={GROUP_SIZE}",
    "--slurm-init-seconds-before-status-checks",
    "2",
    "--slurm-keep-successful-logs",
]


def small_study(workdir):
    """The tiny two-model study with a checkpoint every 20 steps, written to ``workdir``."""
    train, valid = write_corpus(workdir, n_chars=5_000)
    config = tiny_config(train, valid)
    config["train"]["checkpoint_interval"] = 20
    config["topology"]["gradients"]["enabled"] = (
        False  # plain per-checkpoint jobs: the tiny study runs them
    )
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))


@pytest.fixture(scope="module")
def cluster():
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)
    cluster = SlurmCluster(partition="debug").start()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("SLURM_CONF", str(cluster.conf))
            yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def slurm_run(cluster, tmp_path_factory):
    """Run the small study once through SLURM; returns its working directory and output."""
    workdir = tmp_path_factory.mktemp("slurm-study")
    small_study(workdir)
    with pytest.MonkeyPatch.context() as mp:
        # GNU timeout SIGKILLs Snakemake and its process group: a Snakemake waiting on a status
        # command that never reports the job finished ignores SIGTERM.
        hard_limit = ["timeout", "-s", "KILL", str(LIMIT_S)]
        mp.setattr(conftest, "SNAKEMAKE", [*hard_limit, *conftest.SNAKEMAKE])
        profile = str(ROOT / "profiles/slurm")
        args = ["--profile", profile, *SLURM_OVERRIDES, TARGET]
        try:
            proc = run_snakemake(workdir, *args, timeout=LIMIT_S + 30)
        except AssertionError as err:
            raise AssertionError(f"{err}\n{cluster.logs()}") from None
    return workdir, proc.stdout + proc.stderr


def submissions(output):
    """(SLURM job id, SLURM log directory) of every job Snakemake submitted with sbatch."""
    pattern = r"has been submitted with SLURM jobid (\d+) \(log: .*?/slurm_logs/([^/]+)/"
    return re.findall(pattern, output)


def completed_jobs(jobcomp_log):
    """JobId -> {field: value} from SLURM's job completion log (jobcomp/filetxt)."""
    jobs = [dict(re.findall(r"(\w+)=(\S*)", line)) for line in jobcomp_log.read_text().splitlines()]
    return {job["JobId"]: job for job in jobs if "JobId" in job}


def test_every_job_is_submitted_with_sbatch_and_completes(slurm_run, cluster):
    workdir, output = slurm_run
    submitted = [job for job, _ in submissions(output)]
    # prepare_corpus, 2 x train_model, 2 topology group jobs, 2 x diagram_series,
    # 2 x weightwatcher, 2 x aggregate_run (each run's tables), aggregate_features
    assert len(submitted) == 1 + 2 + TOPOLOGY_JOBS // GROUP_SIZE + 2 + 2 + 2 + 1, output
    done = completed_jobs(cluster.jobcomp_log)
    states = {job: done[job]["JobState"] for job in submitted}
    assert set(states.values()) == {"COMPLETED"}, states
    logs = workdir / ".snakemake/slurm_logs"
    for rule in (
        "prepare_corpus",
        "train_model",
        "diagram_series",
        "weightwatcher",
        "aggregate_run",
        "aggregate_features",
    ):
        assert list((logs / f"rule_{rule}").rglob("*.log")), rule
    assert "Falling back to 'sacct'" not in output  # squeue answered every status query


def test_topology_jobs_are_submitted_as_group_jobs(slurm_run, cluster):
    workdir, output = slurm_run
    groups = [job for job, logdir in submissions(output) if logdir.startswith("group_topology")]
    assert len(groups) == TOPOLOGY_JOBS // GROUP_SIZE
    assert len(list((workdir / ".snakemake/slurm_logs").glob("group_topology*/*.log"))) == len(
        groups
    )
    assert not (workdir / ".snakemake/slurm_logs/rule_weight_topology").exists()
    # three 1-CPU jobs per group, capped by --cores 2: each group job asks SLURM for 2 CPUs
    done = completed_jobs(cluster.jobcomp_log)
    assert [done[job]["ProcCnt"] for job in groups] == ["2", "2"]
    records = list((workdir / "results/topology").rglob("step_*.json"))
    assert len(records) == TOPOLOGY_JOBS


def test_features_equal_a_local_run(slurm_run, tmp_path):
    workdir, _ = slurm_run
    small_study(tmp_path)
    run_snakemake(tmp_path, "--profile", str(ROOT / "profiles/local"), "--cores", "2", TARGET)
    remote = pd.read_csv(workdir / TARGET).sort_values(["model", "seed", "step"], ignore_index=True)
    local = pd.read_csv(tmp_path / TARGET).sort_values(["model", "seed", "step"], ignore_index=True)
    assert len(remote) == TOPOLOGY_JOBS and list(remote.columns) == list(local.columns)
    numeric = remote.select_dtypes("number").columns
    pd.testing.assert_frame_equal(remote.drop(columns=numeric), local.drop(columns=numeric))
    np.testing.assert_allclose(remote[numeric].to_numpy(), local[numeric].to_numpy(), rtol=1e-9)
