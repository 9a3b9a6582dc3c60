"""One entry point per workflow rule: plain dicts and paths in, files out.

Every rule runs ``workflow/scripts/job.py``, which calls ``run_rule``: the rule's adapter
``<rule>_rule(sm)`` unpacks the ``snakemake`` object and calls exactly one job, ``<rule>_job``. The
rules of ``workflow/rules/<stage>.smk`` have their jobs and adapters in ``jobs/<stage>.py`` (data,
train, topology, aggregate, analysis, figures, confirm, control, pythia, runs; ``common`` holds
their helpers).
Imports inside the jobs are local so that a job loads only what it needs (the topology job must
never import torch).
"""

from topotrain.jobs.aggregate import (
    aggregate_features_job,
)
from topotrain.jobs.analysis import (
    associations_job,
    calibration_job,
    correlations_job,
    layer_types_job,
    models_table_job,
    phase_transitions_job,
    power_job,
    predict_final_loss_job,
    question_power_job,
    replication_job,
    scaling_fits_job,
    stopping_rules_job,
    velocity_job,
)
from topotrain.jobs.confirm import (
    confirm_features_job,
    confirmation_job,
    control_confirm_features_job,
    hypotheses_job,
)
from topotrain.jobs.control import (
    control_analysis_job,
    control_features_job,
    control_llc_job,
    control_weightwatcher_job,
    train_control_job,
)
from topotrain.jobs.data import (
    prepare_corpus_job,
)
from topotrain.jobs.figures import (
    analysis_figures_job,
    answer_figures_job,
    report_markdown_job,
    training_figures_job,
)
from topotrain.jobs.pythia import (
    fetch_pythia_job,
    pythia_embedding_tables_job,
    pythia_embedding_topology_job,
    pythia_figures_job,
    pythia_texts_job,
    pythia_weight_figure_job,
    pythia_weight_tables_job,
    pythia_weight_topology_job,
    release_pythia_weights_job,
)
from topotrain.jobs.runs import (
    fetch_run_revision_job,
    release_run_weights_job,
    run_analysis_job,
    run_diagram_series_job,
    run_features_job,
    run_group_job,
    run_layers_job,
    run_released_job,
    run_revisions_job,
    run_weight_topology_job,
)
from topotrain.jobs.topology import (
    diagram_series_job,
    gradient_topology_job,
    llc_job,
    training_topology_job,
    weight_topology_job,
    weightwatcher_job,
)
from topotrain.jobs.train import (
    train_model_job,
)

__all__ = [
    "run_group_job",
    "run_diagram_series_job",
    "train_control_job",
    "control_features_job",
    "control_analysis_job",
    "control_weightwatcher_job",
    "control_llc_job",
    "confirm_features_job",
    "control_confirm_features_job",
    "hypotheses_job",
    "confirmation_job",
    "prepare_corpus_job",
    "train_model_job",
    "weight_topology_job",
    "training_topology_job",
    "weightwatcher_job",
    "llc_job",
    "aggregate_features_job",
    "diagram_series_job",
    "gradient_topology_job",
    "correlations_job",
    "associations_job",
    "calibration_job",
    "scaling_fits_job",
    "predict_final_loss_job",
    "power_job",
    "question_power_job",
    "phase_transitions_job",
    "stopping_rules_job",
    "velocity_job",
    "layer_types_job",
    "replication_job",
    "models_table_job",
    "training_figures_job",
    "analysis_figures_job",
    "answer_figures_job",
    "report_markdown_job",
    "pythia_texts_job",
    "fetch_pythia_job",
    "pythia_weight_topology_job",
    "release_pythia_weights_job",
    "release_run_weights_job",
    "run_released_job",
    "pythia_embedding_topology_job",
    "pythia_weight_tables_job",
    "pythia_embedding_tables_job",
    "pythia_weight_figure_job",
    "pythia_figures_job",
    "run_revisions_job",
    "fetch_run_revision_job",
    "run_layers_job",
    "run_weight_topology_job",
    "run_features_job",
    "run_analysis_job",
]


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
    ``sm.log[0]``), then its adapter (``rule_adapter``). A job that reaches the co-movement view
    sets its design from its params (``jobs.common.comove_design``)."""
    from topotrain.logs import setup_logging

    setup_logging(sm.log[0])
    rule_adapter(sm.rule)(sm)
