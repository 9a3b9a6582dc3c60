"""Report stage: figures (``plots``) and Markdown tables and REPORT.md (``markdown``)."""
