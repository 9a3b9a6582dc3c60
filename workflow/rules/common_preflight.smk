# ---- Preflight: can the hub or the HF cache serve the jobs about to run? -------------------
from snakemake.logging import logger
from topotrain.hub import HubNeeds, HubUnavailable, check_hub, hub_needs, revision_name
from topotrain.topology.vietoris_rips import engine_note

# Runs in `onstart`, not at parse time: Snakemake 9 parses this file before it picks the executor
# (DAGApi.__post_init__ → WorkflowApi._workflow in snakemake/api.py), so while parsing
# `workflow.dryrun` (executor_plugin.common_settings.dryrun_exec) is always False. Workflow.execute
# (snakemake/workflow.py) builds the DAG, returns early if there is nothing to do, and calls
# onstart before the scheduler starts the first job, only `if not self.dryrun and not
# self.execution_settings.no_hooks`. --lint, --report, --unlock and --list-* never call execute; jobs
# that re-run the Snakefile (cluster and group jobs) are spawned with --no-hooks
# (snakemake/spawn_jobs.py). Belt and braces: `workflow.is_main_process` (exec_mode is
# ExecMode.DEFAULT, not SUBPROCESS or REMOTE) and not `workflow.touch` (--touch runs no job).


def get_hub_needs(jobs):
    """What the given jobs read from the hub, from the rules that declare ``hub_reads`` among their
    resources: the corpus dataset if such a job has no revision wildcard, the Pythia revisions of
    those with one (hub_needs(config) narrowed to the jobs), and the revisions their runs: jobs
    fetch (a run's run_revisions job lists branches: it falls back to the cache by itself).
    """
    needs = hub_needs(config)
    readers = [job for job in jobs if job.resources.get("hub_reads", 0)]
    revisions = {
        (model_id(job.wildcards), revision_name(int(job.wildcards.step)))
        for job in readers
        if "slug" in job.wildcards.keys()
    }
    runs = [  # in step order, whatever order the DAG lists its jobs in
        (RUN_ENTRIES[job.wildcards.run]["hub"], get_run_revision(job.wildcards))
        for job in sorted(readers, key=lambda job: int(job.wildcards.get("step", -1)))
        if {"run", "step"} <= set(job.wildcards.keys())
    ]
    corpus = any(not {"slug", "run"} & set(job.wildcards.keys()) for job in readers)
    pythia = [r for r in needs.revisions if r in revisions]
    return HubNeeds(
        dataset=needs.dataset if corpus else None,
        revisions=tuple(dict.fromkeys(pythia + runs)),
    )


onstart:
    if workflow.is_main_process and not workflow.touch:
        logger.info(engine_note(RIPS_ENGINE))
        try:
            check_hub(config, get_hub_needs(list(workflow.dag.needrun_jobs())))
        except HubUnavailable as err:
            # the message alone, without a traceback or a line number
            logger.error(str(err))
            sys.exit(1)
