"""Hugging Face hub settings read at call time (huggingface_hub reads them once, at import), the
download commands the error messages print, and the preflight that checks, before any job runs,
whether the hub or the cache can serve what a run reads from the hub.

No heavy imports here: the workflow imports this module while parsing the Snakefile.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TRUE = {"1", "true", "yes", "on"}
SPLIT_FILES = {"train": "train-*.parquet", "validation": "validation-*.parquet"}  # per corpus split
# a snapshot's weights are the files of the first pattern that matches: one format, never both
WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin")
PROBE_TIMEOUT_S = 3.0  # the preflight's one request to the hub
LOCAL_FILES = "workflow/configs/local-files.yaml"


class HubUnavailable(RuntimeError):
    """Neither the hub nor the HF cache can serve what a run needs;
    the message says how to fix it."""


def hub_cache_dir() -> Path:
    """The hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface"
    return Path(home) / "hub"


def hub_offline() -> bool:
    """Whether HF_HUB_OFFLINE asks to resolve from the cache only."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in TRUE


def hub_endpoint() -> str:
    """The hub's base URL: $HF_ENDPOINT, else huggingface_hub's endpoint (https://huggingface.co)."""
    from huggingface_hub import constants

    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def revision_name(step: int) -> str:
    """The hub revision (branch) of Pythia's checkpoint after ``step`` optimiser
    steps: 'step{n}'."""
    if isinstance(step, bool) or int(step) != step or step < 0:
        raise ValueError(f"a Pythia step is an integer >= 0, got {step!r}")
    return f"step{int(step)}"


def dataset_download_command(dataset: str, config: str) -> str:
    """The shell command that fills the HF cache with one configuration of a hub dataset."""
    return f"huggingface-cli download {dataset} --repo-type dataset --include '{config}/*'"


def revision_download_command(model_id: str, revision: str) -> str:
    """The shell command that fills the HF cache with one revision of a hub model."""
    return f"huggingface-cli download {model_id} --revision {revision}"


@dataclass(frozen=True)
class HubNeeds:
    """What a run reads from the hub: the corpus (dataset id, configuration) and model revisions
    (repo id, revision name): Pythia's step{n} and the hub runs' (runs:)."""

    dataset: tuple[str, str] | None = None
    revisions: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return self.dataset is not None or bool(self.revisions)


def snapshot_complete(snapshot: str | Path) -> bool:
    """Whether a model snapshot folder holds config.json and weights (files of a WEIGHT_PATTERNS
    pattern; the first that matches is the one format fetched and read)."""
    root = Path(snapshot)
    return (root / "config.json").is_file() and any(
        any(root.glob(pattern)) for pattern in WEIGHT_PATTERNS
    )


def hub_needs(config: dict) -> HubNeeds:
    """The corpus dataset if ``corpus.source: huggingface``; every (model, step{n}) of
    ``pythia.weights`` and ``pythia.embeddings`` if ``pythia.enabled`` (each pair once, in config
    order). The hub runs' revisions are listed by the workflow (it resolves their patterns)."""
    corpus = config["corpus"]
    huggingface = corpus["source"] == "huggingface"
    dataset = (corpus["dataset"], corpus["config"]) if huggingface else None
    pythia = config["pythia"]
    revisions: list[tuple[str, str]] = []
    if pythia["enabled"]:
        for part in ("weights", "embeddings"):
            section = pythia[part]
            pairs = [
                (m, revision_name(int(s))) for m in section["models"] for s in section["steps"]
            ]
            revisions += [p for p in pairs if p not in revisions]
    return HubNeeds(dataset, tuple(revisions))


def repo_cache_folder(repo_id: str, repo_type: str = "model") -> Path:
    """The cache's folder of a repo (models--org--name: refs/, snapshots/, blobs/)."""
    from huggingface_hub.file_download import repo_folder_name

    return hub_cache_dir() / repo_folder_name(repo_id=repo_id, repo_type=repo_type)


def cached_snapshot(repo_id: str, revision: str, repo_type: str = "model") -> Path | None:
    """The cache's snapshot folder of repo_id at revision (refs/<revision> → snapshots/<commit>),
    or None."""
    repo = repo_cache_folder(repo_id, repo_type)
    ref = repo / "refs" / revision
    if not ref.is_file():
        return None
    snapshot = repo / "snapshots" / ref.read_text().strip()
    return snapshot if snapshot.is_dir() else None


def dataset_cached(dataset: str, config: str) -> bool:
    """Whether the cache's main snapshot of the dataset holds ``config``'s train and validation
    parquet files (those ``sources.corpus.hf_split_files`` reads)."""
    snapshot = cached_snapshot(dataset, "main", repo_type="dataset")
    return snapshot is not None and all(
        any((snapshot / config).glob(pattern)) for pattern in SPLIT_FILES.values()
    )


def revision_cached(model_id: str, revision: str | int) -> bool:
    """Whether the cache holds a revision (a name, or a Pythia step for step{n}), complete as
    ``sources.hub_files.fetch_snapshot`` requires (``snapshot_complete``)."""
    name = revision if isinstance(revision, str) else revision_name(revision)
    snapshot = cached_snapshot(model_id, name)
    return snapshot is not None and snapshot_complete(snapshot)


def missing_from_cache(needs: HubNeeds) -> HubNeeds:
    """The part of ``needs`` the HF cache cannot serve (reads the cache only, no network)."""
    dataset = needs.dataset if needs.dataset and not dataset_cached(*needs.dataset) else None
    revisions = tuple(r for r in needs.revisions if not revision_cached(*r))
    return HubNeeds(dataset, revisions)


def probe_hub(endpoint: str, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """One HEAD request to the hub: None if any HTTP answer came within ``timeout`` seconds,
    else why not."""
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout)
    except urllib.error.HTTPError:
        return None  # a server answered, even if with an error status: the hub is reachable
    except (OSError, ValueError) as err:  # URLError (refused, DNS), timeout, malformed URL
        return f"{type(err).__name__}: {getattr(err, 'reason', err)}"
    return None


def preflight_problems(config: dict, needs: HubNeeds | None = None) -> list[str]:
    """What stops the run from getting its hub inputs (empty = OK): why the hub cannot be asked,
    then each missing item. ``needs`` defaults to ``hub_needs(config)``. Asks the hub (one request)
    only if something is not cached and HF_HUB_OFFLINE is not set."""
    return _preflight(config, needs)[0]


def _preflight(config: dict, needs: HubNeeds | None) -> tuple[list[str], HubNeeds]:
    """(preflight_problems, the part of the needs the cache cannot serve); reads the cache once."""
    needs = hub_needs(config) if needs is None else needs
    if not needs:
        return [], needs  # nothing comes from the hub: nothing to check
    missing = missing_from_cache(needs)
    if not missing:
        return [], missing
    if hub_offline():
        problems = ["HF_HUB_OFFLINE is set, so the hub is not asked"]
    else:
        endpoint = hub_endpoint()
        reason = probe_hub(endpoint)
        if reason is None:
            return [], missing  # the jobs download what is missing
        problems = [f"the hub {endpoint} is unreachable ({reason})"]
    where = f"not in the HF cache {hub_cache_dir()}"
    if missing.dataset:
        problems.append(f"{where}: dataset {missing.dataset[0]} ({missing.dataset[1]})")
    for model, names in revisions_by_model(missing.revisions).items():
        problems.append(f"{where}: {model} {summarise(names)}")
    return problems, missing


def revisions_by_model(revisions: tuple[tuple[str, str], ...]) -> dict[str, list[str]]:
    """{model: [revision names]} of (model, revision) pairs, in order."""
    out: dict[str, list[str]] = {}
    for model, revision in revisions:
        out.setdefault(model, []).append(revision)
    return out


def summarise(names: list[str], first: int = 4) -> str:
    """'a, b, c' or, for more than ``first`` + 1 names, 'a, b, c, d, … z (26 revisions)'."""
    if len(names) <= first + 1:
        return ", ".join(names)
    return f"{', '.join(names[:first])}, … {names[-1]} ({len(names)} revisions)"


def download_commands(missing: HubNeeds, loop_from: int = 3) -> list[str]:
    """Commands that pre-download what is missing: one per item, or a shell loop per model once
    ``loop_from`` or more of its revisions are missing."""
    commands = [dataset_download_command(*missing.dataset)] if missing.dataset else []
    for model, names in revisions_by_model(missing.revisions).items():
        if len(names) < loop_from:
            commands += [revision_download_command(model, n) for n in names]
        else:
            loop = f"for rev in {' '.join(names)}; do"
            commands.append(f"{loop} {revision_download_command(model, '$rev')}; done")
    return commands


def preflight_message(problems: list[str], missing: HubNeeds) -> str:
    """The error a run stops with: the problems, then the three ways out
    (download, files, no Pythia)."""
    lines = [
        "Preflight: the Hugging Face hub and its cache cannot serve this run; no job was started."
    ]
    lines += [f"  - {p}" for p in problems]
    lines += [
        "Fix it in one of these ways, then run again:",
        "  1. pre-download on a machine with network into the same cache (HF_HOME or HF_HUB_CACHE;",
        "     with huggingface_hub >= 1.0 the command is `hf download`, same arguments):",
        *[f"       {c}" for c in download_commands(missing)],
        "     and set HF_HUB_OFFLINE=1 where the run has no network.",
        "  2. train on the plain-text WikiText-2 copies, without Pythia: --configfile "
        f"{LOCAL_FILES}",
        f'     (make study SNAKEMAKE_ARGS="--configfile {LOCAL_FILES}")',
    ]
    if missing.revisions:
        lines.append(
            "  3. skip only the Pythia branch: --config pythia='{enabled: false}' (a hub run of "
            "runs: needs its revisions cached: remove it from runs:)"
        )
    return "\n".join(lines)


def check_hub(config: dict, needs: HubNeeds | None = None) -> None:
    """Raise HubUnavailable with ``preflight_message`` if ``preflight_problems`` finds any."""
    problems, missing = _preflight(config, needs)
    if problems:
        raise HubUnavailable(preflight_message(problems, missing))
