"""keep_weights: false gives the cache back the weight blobs a fetch downloaded — never a blob the
cache already held, never one another revision links to. The hub is never reached: a stubbed
``snapshot_download`` "downloads" a revision by writing it into the fabricated cache."""

from __future__ import annotations

import hashlib
from pathlib import Path

import huggingface_hub
import pytest

from benchmarks.hub_cache import make_tiny_neox_cache
from topotrain.sources import hub_files
from topotrain.sources.hub_cache import held_blobs, release_weights
from topotrain.sources.hub_files import fetch_snapshot
from topotrain.sources.pythia import PythiaError, weights_present

MODEL = "EleutherAI/pythia-tiny"


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A cache holding step0 and step1; fetching step<n> writes it (steps 2 and 3 share step 1's
    weights, byte for byte) into the cache as a download would."""
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(hub_files, "probe_hub", lambda endpoint: None)
    make_tiny_neox_cache(tmp_path, MODEL, steps=(0, 1))
    repo = tmp_path / "hub" / f"models--{MODEL.replace('/', '--')}"

    def download(repo_id, revision, **kwargs):
        step = int(revision.removeprefix("step"))
        commits = make_tiny_neox_cache(tmp_path, MODEL, steps=(step,), same_weights={3: 1})
        return str(repo / "snapshots" / commits[step])

    def listing(self, repo_id, revision=None, **kwargs):
        return ["config.json", "model.safetensors", "tokenizer.json"]

    monkeypatch.setattr(huggingface_hub, "snapshot_download", download)
    monkeypatch.setattr(huggingface_hub.HfApi, "list_repo_files", listing)
    return repo


def blob_of(snapshot: str, name: str) -> Path:
    return (Path(snapshot) / name).resolve()


def test_a_download_is_noted_and_released_and_nothing_held_before_is_touched(hub):
    before = {p: p.read_bytes() for p in (hub / "blobs").iterdir()}
    record = fetch_snapshot(MODEL, "step2")
    assert record["downloaded"] == ["model.safetensors"]
    blob = blob_of(record["snapshot"], "model.safetensors")
    assert blob.name == hashlib.sha256(blob.read_bytes()).hexdigest() and blob.name not in {
        p.name for p in before
    }
    assert release_weights(record) == [str(blob)]
    assert not blob.exists() and not (Path(record["snapshot"]) / "model.safetensors").exists()
    assert (Path(record["snapshot"]) / "config.json").is_file()  # config and tokenizer stay
    assert {p: p.read_bytes() for p in (hub / "blobs").iterdir()} == before
    assert held_blobs(MODEL) == {p.name for p in before}


def test_a_fetch_of_weights_the_cache_held_downloads_nothing_and_releases_nothing(hub):
    record = fetch_snapshot(MODEL, "step3")  # step 3 serves step 1's weights, already held
    assert record["downloaded"] == []
    assert release_weights(record) == []
    assert blob_of(record["snapshot"], "model.safetensors").is_file()


def test_a_downloaded_blob_another_revision_links_to_stays(hub):
    record = fetch_snapshot(MODEL, "step2")
    shared = blob_of(record["snapshot"], "model.safetensors")
    other = hub / "snapshots" / ("f" * 40)
    other.mkdir()
    (other / "model.safetensors").symlink_to(shared)
    assert release_weights(record) == [] and shared.is_file()


def test_a_released_revision_asks_to_be_fetched_again():
    revision = {
        "model": MODEL,
        "revision": "step2",
        "step": 2,
        "snapshot": "/nonexistent",
        "sha256": {"model.safetensors": "0" * 64},
    }
    with pytest.raises(PythiaError, match=r"gone from the cache .*--forcerun fetch_pythia"):
        weights_present(revision)
