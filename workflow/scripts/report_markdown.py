from topotrain.jobs import report_markdown_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
report_markdown_job(
    dict(sm.input.items()), sm.output.report_md, sm.output.bottom_html, sm.params.provenance
)
