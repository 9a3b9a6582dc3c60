"""One entry point per workflow rule: plain dicts and paths in, files out.

Every rule runs ``workflow/scripts/job.py``, which calls ``run_rule``: the rule's adapter
``<rule>_rule(sm)`` unpacks the ``snakemake`` object and calls exactly one job, ``<rule>_job``,
defined beside it (import a job from its module: ``topotrain.jobs.<stage>.<rule>_job``). The
rules of ``workflow/rules/<stage>.smk`` have their jobs and adapters in ``jobs/<stage>.py`` (data,
train, topology, aggregate, analysis, calibrate, figures, confirm, control, pythia, runs;
``common`` holds their helpers).
Imports inside the jobs are local so that a job loads only what it needs (the topology job must
never import torch).
"""

__all__ = ["rule_adapter", "run_rule"]

# jobs whose freed memory is kept (heap.py)
HEAP_STAGES = ("aggregate", "analysis", "calibrate", "figures")


def rule_adapter(rule: str):
    """``<rule>_rule`` of the jobs file that defines it (every module of this package is looked
    at); LookupError naming the rule when none does."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if callable(adapter := getattr(module, f"{rule}_rule", None)):
            return adapter
    raise LookupError(f"rule {rule}: no {rule}_rule in any topotrain.jobs module")


def run_rule(sm) -> None:
    """Run rule ``sm.rule``'s job from its snakemake object: the log set up first (everything to
    ``sm.log[0]``), then its adapter (``rule_adapter``); an analysis job keeps the memory it
    frees (``heap.keep_freed_memory``, HEAP_STAGES). A job that reaches the co-movement view
    sets its design from its params (``jobs.common.comove_design``)."""
    from topotrain.logs import setup_logging

    setup_logging(sm.log[0])
    adapter = rule_adapter(sm.rule)
    if adapter.__module__.rsplit(".", 1)[-1] in HEAP_STAGES:
        from topotrain.heap import keep_freed_memory

        keep_freed_memory()
    adapter(sm)
