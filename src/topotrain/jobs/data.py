"""Jobs of workflow/rules/data.smk: the corpus."""

from __future__ import annotations

from topotrain.jobs.common import _hub_corpus


def prepare_corpus_job(corpus: dict, out: dict[str, str]) -> None:
    """Load the configured corpus, encode it and write train/validation codes + manifest."""
    from topotrain.sources.corpus import load_splits, prepare_corpus

    splits = load_splits(
        corpus["source"],
        train=corpus.get("train"),
        validation=corpus.get("validation"),
        **_hub_corpus(corpus),
    )
    prepare_corpus(splits, out["train"], out["validation"], out["manifest"])


# Each rule's adapter, <rule>_rule(sm): what the rule hands its job, unpacked from the snakemake
# object (workflow/scripts/job.py runs every rule through jobs.run_rule, which calls it).


def prepare_corpus_rule(sm) -> None:
    prepare_corpus_job(sm.params.corpus, dict(sm.output.items()))
