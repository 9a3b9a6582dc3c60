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
