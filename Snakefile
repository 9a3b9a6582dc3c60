# topotrain: the topology of transformer training. This file is a table of contents;
# the rules live in workflow/rules/<stage>.smk, the logic in src/topotrain/.
import os

from snakemake.utils import min_version

min_version("9.0")


# The working folder's config.yaml when it has one (else --configfile/--config alone); the
# package's config.yaml fills in whatever they leave out (common.smk), so an overlay of just
# `runs:` works from any folder.
if os.path.exists("config.yaml"):

    configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/common_spine.smk"
include: "workflow/rules/common_control.smk"
include: "workflow/rules/common_confirm.smk"
include: "workflow/rules/common_pythia.smk"
include: "workflow/rules/common_runs.smk"
include: "workflow/rules/common_report.smk"
include: "workflow/rules/common_preflight.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/topology.smk"
include: "workflow/rules/control.smk"
include: "workflow/rules/confirm.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/calibrate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/pythia.smk"
include: "workflow/rules/runs.smk"


rule all:
    default_target: True
    input:
        get_final_output(),
