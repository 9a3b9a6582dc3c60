"""Every rule's script: its log set up, then its job, from the snakemake object
(topotrain.jobs.run_rule: the adapter <rule>_rule in jobs/<stage>.py)."""

from topotrain.jobs import run_rule

run_rule(snakemake)  # noqa: F821 - injected by Snakemake
