"""Hub revisions as files: which weight files to fetch (one format), fetching them into the HF
cache, listing a repo's branches, and the sha256 of weight files.

The HF cache stores each LFS file once, as ``blobs/<sha256 of its content>``, and links it from
every snapshot that holds it: two revisions that serve the same weights share one blob, and its
name is the hash, so comparing revisions costs no reading.
"""

from __future__ import annotations

import glob
import hashlib
import logging
import re
from collections.abc import Sequence
from fnmatch import fnmatch
from pathlib import Path

from topotrain.hub import (
    WEIGHT_PATTERNS,
    cached_snapshot,
    hub_cache_dir,
    hub_endpoint,
    hub_offline,
    probe_hub,
    repo_cache_folder,
    revision_download_command,
    summarise,
)
from topotrain.sources.hub_cache import downloaded_weights, held_blobs
from topotrain.sources.weights import weight_files
from topotrain.topology.layers import natural_key

log = logging.getLogger(__name__)
META_PATTERNS = ["*.json", "*.txt", "tokenizer*", "*.model"]  # config, tokenizer, shard indices
SHA256 = re.compile(r"[0-9a-f]{64}")
CACHE_REPOS = ("models--", "datasets--", "spaces--")  # hub-cache repo folders hold blobs/


class HubFetchError(RuntimeError):
    """A hub revision cannot be listed, resolved or used; the message says how to fetch it."""


def weight_files_to_fetch(files: Sequence[str]) -> list[str]:
    """The weight files of one format among a revision's top-level files, sorted: those of the
    first ``hub.WEIGHT_PATTERNS`` that matches (every *.safetensors, else pytorch_model*.bin;
    never training_args.bin); [] if none."""
    top = [name for name in files if "/" not in name]
    for pattern in WEIGHT_PATTERNS:
        found = sorted(name for name in top if fnmatch(name, pattern))
        if found:
            return found
    return []


def snapshot_files(snapshot: str | Path) -> list[str]:
    """Relative paths of the files in a snapshot folder (symlinks to blobs count), sorted."""
    root = Path(snapshot)
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def download_hint(repo_id: str, revision: str) -> str:
    """How to pre-fill the cache with one revision, and which variables point at it."""
    return (
        f"pre-download it with `{revision_download_command(repo_id, revision)}` "
        f"(or `hf download ...`) into $HF_HOME/hub (now {hub_cache_dir()}), "
        "then set HF_HUB_OFFLINE=1 to resolve from the cache only"
    )


def hub_unreachable(err: BaseException) -> bool:
    """Whether a hub call failed for want of an answer (no connection, timeout, offline mode, a
    5xx), rather than because the hub said no (unknown repo or revision, no access)."""
    from huggingface_hub.errors import (
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(err, RepositoryNotFoundError | RevisionNotFoundError):  # also gated repos
        return False
    if isinstance(err, HfHubHTTPError):
        status = getattr(err.response, "status_code", None)
        return status is None or status >= 500
    transport = any(cls.__name__ == "TransportError" for cls in type(err).__mro__)  # httpx
    return isinstance(err, OSError) or transport


def revision_files(repo_id: str, revision: str) -> list[str]:
    """The file names of one revision: the hub's listing (``HfApi.list_repo_files``), or the cached
    snapshot's files when offline (``fetch_mode``); HubFetchError if neither has it."""
    mode, local = fetch_mode()
    try:
        files = cached_files(repo_id, revision) if local else hub_files(repo_id, revision)
    except Exception as err:
        raise fetch_error(repo_id, revision, mode, err) from err
    if not files:
        raise fetch_error(repo_id, revision, mode, "the HF cache holds no snapshot of it")
    return files


def hub_files(repo_id: str, revision: str) -> list[str]:
    """The hub's list of a revision's files (``HfApi.list_repo_files``), sorted."""
    from huggingface_hub import HfApi

    return sorted(HfApi().list_repo_files(repo_id, revision=revision))


def cached_files(repo_id: str, revision: str) -> list[str]:
    """The files of the cached snapshot of repo_id at revision; [] if it is not cached."""
    snapshot = cached_snapshot(repo_id, revision)
    return [] if snapshot is None else snapshot_files(snapshot)


def fetch_error(repo_id: str, revision: str, mode: str, err: BaseException | str) -> HubFetchError:
    """The error of a revision that cannot be resolved: repo, revision, mode, cache, why, fix."""
    why = err if isinstance(err, str) else f"{type(err).__name__}: {err}"
    return HubFetchError(
        f"cannot resolve {repo_id} revision {revision} ({mode}, cache {hub_cache_dir()}): {why}. "
        f"To fix, {download_hint(repo_id, revision)}."
    )


def fetch_mode() -> tuple[str, bool]:
    """(mode for messages, whether to read the cache only): offline if HF_HUB_OFFLINE is set or
    one probe (``hub.probe_hub``) finds the hub unreachable (listing files would retry ~20 s)."""
    if hub_offline():
        return "offline (HF_HUB_OFFLINE=1)", True
    reason = probe_hub(hub_endpoint())
    if reason is None:
        return "online", False
    log.warning("the hub %s is unreachable (%s): resolving from the cache", hub_endpoint(), reason)
    return f"online, but the hub is unreachable ({reason}), so from the cache only", True


def fetch_snapshot(repo_id: str, revision: str) -> dict:
    """Resolve one revision into the HF cache, downloading only config, tokenizer, json and txt
    files and the weight files of one format (``weight_files_to_fetch``).

    Returns {"repo", "revision", "snapshot", "commit" (the snapshot folder's name), "files",
    "weights", "sha256" ({weight file: sha256}), "downloaded" (the weight files whose blob this
    fetch brought into the cache: what ``keep_weights: false`` may remove)}. Any failure, or a
    snapshot without config.json or weights, raises HubFetchError.
    """
    from huggingface_hub import snapshot_download

    mode, local = fetch_mode()
    held = held_blobs(repo_id)
    try:
        listed = cached_files(repo_id, revision) if local else hub_files(repo_id, revision)
        wanted = [glob.escape(name) for name in weight_files_to_fetch(listed)]
        snapshot = snapshot_download(
            repo_id,
            revision=revision,
            cache_dir=hub_cache_dir(),
            local_files_only=local,
            allow_patterns=META_PATTERNS + wanted,
        )
    except Exception as err:  # RevisionNotFound, LocalEntryNotFound, connection errors, ...
        raise fetch_error(repo_id, revision, mode, err) from err
    record = snapshot_record(repo_id, revision, Path(snapshot))
    return {**record, "downloaded": downloaded_weights(snapshot, record["weights"], held)}


def snapshot_record(repo_id: str, revision: str, snapshot: Path) -> dict:
    """fetch_snapshot's record of a resolved snapshot folder; HubFetchError without config.json
    or weights."""
    files = snapshot_files(snapshot)
    weights = weight_files_to_fetch(files)
    if "config.json" not in files or not weights:
        raise HubFetchError(
            f"{repo_id} revision {revision}: snapshot {snapshot} lacks "
            f"{'config.json' if 'config.json' not in files else 'weights'} (has {files}). "
            f"To fix, {download_hint(repo_id, revision)}."
        )
    return {
        "repo": repo_id,
        "revision": revision,
        "snapshot": str(snapshot),
        "commit": snapshot.name,
        "files": files,
        "weights": weights,
        "sha256": weight_hashes([snapshot / name for name in weights]),
    }


def cached_branches(repo_id: str) -> list[str]:
    """The refs of repo_id in the HF cache (nested ones as 'a/b'), pull requests (refs/pr/) out."""
    refs = repo_cache_folder(repo_id) / "refs"
    names = [p.relative_to(refs).as_posix() for p in refs.rglob("*") if p.is_file()]
    return [name for name in names if not name.startswith("pr/")]


def list_revisions(repo_id: str, pattern: str) -> list[str]:
    """The repo's branches that fully match the regex ``pattern``, in natural order.

    Online: ``HfApi.list_repo_refs``; offline, or when the hub does not answer: the cache's refs
    (with a warning). None matching raises HubFetchError naming what exists.
    """
    branches, where = None, f"the HF cache {hub_cache_dir()}"
    if not hub_offline():
        from huggingface_hub import HfApi

        try:
            branches = [ref.name for ref in HfApi().list_repo_refs(repo_id).branches]
            where = f"the hub {hub_endpoint()}"
        except Exception as err:
            if not hub_unreachable(err):
                raise HubFetchError(f"cannot list the branches of {repo_id}: {err}") from err
            log.warning(
                "cannot list %s's branches on the hub (%s: %s); using %s",
                repo_id,
                type(err).__name__,
                err,
                where,
            )
    if branches is None:
        branches = cached_branches(repo_id)
    branches = sorted(branches, key=natural_key)
    found = [name for name in branches if re.fullmatch(pattern, name)]
    if not found:
        have = summarise(branches) if branches else "none"
        raise HubFetchError(
            f"{repo_id}: no branch matches the regex '{pattern}' "
            f"(looked in {where}; branches: {have})"
        )
    return found


def file_sha256(path: str | Path) -> str:
    """sha256 hex of a file's content. A file that is (or links to) a hub-cache blob named by 64 hex
    characters is an LFS file stored under its sha256: the name is returned, nothing is read."""
    real = Path(path).resolve()
    if not real.is_file():
        raise FileNotFoundError(f"no file {path}")
    repo = real.parent.parent.name
    if real.parent.name == "blobs" and repo.startswith(CACHE_REPOS) and SHA256.fullmatch(real.name):
        return real.name
    digest = hashlib.sha256()
    with open(real, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def weight_hashes(folder_or_paths: str | Path | Sequence[str | Path]) -> dict[str, str]:
    """{file name: sha256} of a checkpoint's weight files: a folder's (``weights.weight_files``, the
    files it is read from), or the given file(s). A folder without weights is FileNotFoundError."""
    if isinstance(folder_or_paths, str | Path) and Path(folder_or_paths).is_dir():
        paths = weight_files(folder_or_paths)
        if not paths:
            raise FileNotFoundError(
                f"{folder_or_paths}: no weight files ({' or '.join(WEIGHT_PATTERNS)})"
            )
    elif isinstance(folder_or_paths, str | Path):
        paths = [Path(folder_or_paths)]
    else:
        paths = [Path(p) for p in folder_or_paths]
    names = [p.name for p in paths]
    if len(set(names)) < len(names):
        raise ValueError(f"weight files with the same name in one checkpoint: {sorted(names)}")
    return {p.name: file_sha256(p) for p in paths}
