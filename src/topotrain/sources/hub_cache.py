"""Which weight blobs of the Hugging Face cache a fetch brought in, and giving them back.

The cache keeps a repo's files once, in ``blobs/`` (named by hash), and each revision's snapshot
folder links to them. A fetch notes the weight files whose blob was not in the cache before it
ran (``downloaded_weights``); with ``keep_weights: false`` the release job removes those blobs once
the revision's records are written (``release_weights``) — never a blob the cache already held,
and never one another snapshot of the repo still links to.
"""

from __future__ import annotations

import logging
from pathlib import Path

from topotrain.hub import repo_cache_folder

log = logging.getLogger(__name__)


def held_blobs(repo_id: str) -> set[str]:
    """The names of the blobs the cache holds for ``repo_id`` now."""
    blobs = repo_cache_folder(repo_id) / "blobs"
    return {p.name for p in blobs.iterdir()} if blobs.is_dir() else set()


def downloaded_weights(snapshot: str | Path, weights: list[str], held: set[str]) -> list[str]:
    """The weight files of ``snapshot`` whose blob is not among ``held`` (the blobs before the
    fetch): what the fetch downloaded."""
    return [w for w in weights if (Path(snapshot) / w).resolve().name not in held]


def _linked_elsewhere(blob: Path, snapshot: Path) -> bool:
    """Whether a snapshot of the repo other than ``snapshot`` links to ``blob``."""
    for other in snapshot.parent.iterdir():
        if other != snapshot and any(
            f.is_symlink() and f.resolve() == blob for f in other.rglob("*")
        ):
            return True
    return False


def release_weights(record: dict) -> list[str]:
    """Remove the weight blobs a revision's fetch downloaded (``record["downloaded"]``, files of
    ``record["snapshot"]``) and the snapshot's links to them; a blob another snapshot links to
    stays. Returns the removed blobs' paths. The revision's config and tokenizer stay."""
    snapshot, removed = Path(record["snapshot"]), []
    for name in record.get("downloaded", []):  # a record written before this key: none known
        link = snapshot / name
        blob = link.resolve()
        if not blob.is_file():
            continue
        if _linked_elsewhere(blob, snapshot):
            log.info("%s: kept %s (another revision links to it)", record["revision"], name)
            continue
        blob.unlink()
        link.unlink()
        removed.append(str(blob))
    log.info("%s: released %d weight blob(s)", record["revision"], len(removed))
    return removed
