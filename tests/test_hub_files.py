"""Hub revisions as files: one weight format per revision, branch listing, sha256 of weight files.

The hub is never reached: ``HfApi.list_repo_files`` / ``list_repo_refs`` and ``snapshot_download``
are stubbed, or the files come from a fabricated cache (benchmarks/hub_cache.py).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from types import SimpleNamespace

import huggingface_hub
import pytest
from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

from benchmarks.hub_cache import make_tiny_neox_cache
from topotrain.sources import hub_files
from topotrain.sources.hub_files import (
    META_PATTERNS,
    HubFetchError,
    fetch_snapshot,
    file_sha256,
    list_revisions,
    revision_files,
    weight_files_to_fetch,
    weight_hashes,
)

MODEL = "EleutherAI/pythia-tiny"
SHARDS = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
BIN_SHARDS = ["pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"]
COMMON = ["config.json", "tokenizer.json", "training_args.bin", "README.md"]


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def repo_dir(home: Path) -> Path:
    return home / "hub" / f"models--{MODEL.replace('/', '--')}"


def hub_error(cls, status: int, message: str):
    """A huggingface_hub HTTP error as the hub raises it: with a response of that status."""
    import httpx2

    request = httpx2.Request("GET", "https://huggingface.co/api/models/x")
    return cls(message, response=httpx2.Response(status, request=request))


@pytest.fixture
def online(tmp_path, monkeypatch):
    """An empty cache in tmp_path, online, with the hub's reachability probe answering."""
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(hub_files, "probe_hub", lambda endpoint: None)
    return tmp_path


@pytest.mark.parametrize(
    ("listing", "expected"),
    [
        (["model.safetensors", "pytorch_model.bin"], ["model.safetensors"]),
        (["pytorch_model.bin"], ["pytorch_model.bin"]),
        ([*SHARDS, "model.safetensors.index.json", *BIN_SHARDS], SHARDS),
        ([*reversed(BIN_SHARDS), "pytorch_model.bin.index.json"], BIN_SHARDS),
        (["onnx/model.safetensors", "pytorch_model.bin"], ["pytorch_model.bin"]),
        ([], []),
    ],
    ids=["both", "bin", "sharded-safetensors", "sharded-bin", "subfolder", "none"],
)
def test_weight_files_are_one_format_and_never_training_args(listing, expected):
    assert weight_files_to_fetch([*COMMON, *listing]) == expected


def stub_hub(monkeypatch, listing: list[str], snapshot: Path) -> dict:
    """Stub the hub's file listing and snapshot_download; returns what they were called with."""
    calls = {}

    def list_repo_files(self, repo_id, revision=None, **kwargs):
        calls["listed"] = (repo_id, revision)
        return listing

    def snapshot_download(repo_id, **kwargs):
        calls["download"] = kwargs
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub.HfApi, "list_repo_files", list_repo_files)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    return calls


def test_a_branch_with_both_formats_downloads_only_safetensors(online, monkeypatch):
    commits = make_tiny_neox_cache(online, MODEL, steps=(3,), weights="both")
    snapshot = repo_dir(online) / "snapshots" / commits[3]
    listing = [*COMMON, "model.safetensors", "pytorch_model.bin", "tokenizer_config.json"]
    calls = stub_hub(monkeypatch, listing, snapshot)
    info = fetch_snapshot(MODEL, "step3")
    assert calls["listed"] == (MODEL, "step3")
    assert calls["download"]["revision"] == "step3" and not calls["download"]["local_files_only"]
    assert calls["download"]["allow_patterns"] == [*META_PATTERNS, "model.safetensors"]
    assert info["weights"] == ["model.safetensors"] and info["commit"] == commits[3]
    assert info["sha256"] == {"model.safetensors": sha256_of(snapshot / "model.safetensors")}
    assert {"pytorch_model.bin", "model.safetensors", "config.json"} <= set(info["files"])


def test_bin_only_and_sharded_branches_download_every_shard_of_their_format(online, monkeypatch):
    snapshot = online / "snapshot"
    snapshot.mkdir()
    (snapshot / "config.json").write_text("{}")
    for i, name in enumerate(BIN_SHARDS):
        (snapshot / name).write_bytes(bytes([i]) * 100)
    calls = stub_hub(monkeypatch, [*COMMON, *BIN_SHARDS], snapshot)
    info = fetch_snapshot("me/run", "checkpoint-100")
    assert calls["download"]["allow_patterns"] == [*META_PATTERNS, *BIN_SHARDS]
    assert info["sha256"] == {
        n: hashlib.sha256(bytes([i]) * 100).hexdigest() for i, n in enumerate(BIN_SHARDS)
    }
    for name in SHARDS:
        (snapshot / name).write_bytes(name.encode())
    calls = stub_hub(monkeypatch, [*COMMON, *SHARDS, *BIN_SHARDS], snapshot)
    info = fetch_snapshot("me/run", "checkpoint-100")
    assert calls["download"]["allow_patterns"] == [*META_PATTERNS, *SHARDS]
    assert info["sha256"] == {n: hashlib.sha256(n.encode()).hexdigest() for n in SHARDS}


def test_revision_without_weights_or_config_raises_naming_repo_and_revision(online, monkeypatch):
    snapshot = online / "snapshot"
    snapshot.mkdir()
    (snapshot / "config.json").write_text("{}")
    stub_hub(monkeypatch, ["config.json", "training_args.bin"], snapshot)
    with pytest.raises(HubFetchError, match=r"me/run revision step5: .* lacks weights") as err:
        fetch_snapshot("me/run", "step5")
    assert "huggingface-cli download me/run --revision step5" in str(err.value)
    (snapshot / "config.json").unlink()
    (snapshot / "model.safetensors").write_bytes(b"x")
    with pytest.raises(HubFetchError, match="lacks config.json"):
        fetch_snapshot("me/run", "step5")


def test_listing_failure_names_repo_revision_mode_and_the_command(online, monkeypatch):
    def refuse(self, repo_id, revision=None, **kwargs):
        raise hub_error(RevisionNotFoundError, 404, "no such revision")

    monkeypatch.setattr(huggingface_hub.HfApi, "list_repo_files", refuse)
    for call in (revision_files, fetch_snapshot):
        with pytest.raises(HubFetchError) as err:
            call(MODEL, "step7")
        message = str(err.value)
        assert f"cannot resolve {MODEL} revision step7 (online, cache {online / 'hub'})" in message
        assert "RevisionNotFoundError: no such revision" in message
        assert f"huggingface-cli download {MODEL} --revision step7" in message


def test_offline_fetch_chooses_the_format_from_the_cached_snapshot(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    commits = make_tiny_neox_cache(tmp_path, MODEL, steps=(0,), weights="both")
    snapshot = repo_dir(tmp_path) / "snapshots" / commits[0]
    assert "pytorch_model.bin" in revision_files(MODEL, "step0")
    info = fetch_snapshot(MODEL, "step0")
    assert info["weights"] == ["model.safetensors"]
    assert info["sha256"] == {"model.safetensors": sha256_of(snapshot / "model.safetensors")}
    with pytest.raises(HubFetchError, match=r"step9 \(offline \(HF_HUB_OFFLINE=1\)"):
        revision_files(MODEL, "step9")


def branches(*names):
    return SimpleNamespace(branches=[SimpleNamespace(name=n) for n in names])


def test_list_revisions_matches_whole_names_in_natural_order(online, monkeypatch):
    names = ["main", "step1000", "step10", "step2", "step2-old", "stage1/step3", "xstep5"]
    monkeypatch.setattr(
        huggingface_hub.HfApi, "list_repo_refs", lambda self, r, **k: branches(*names)
    )
    assert list_revisions(MODEL, r"step\d+") == ["step2", "step10", "step1000"]
    assert list_revisions(MODEL, r"(stage1/)?step\d+") == [
        "stage1/step3",
        "step2",
        "step10",
        "step1000",
    ]
    with pytest.raises(HubFetchError) as err:
        list_revisions(MODEL, r"checkpoint-\d+")
    message = str(err.value)
    assert MODEL in message and r"the regex 'checkpoint-\d+'" in message and "the hub" in message
    assert "branches: main, stage1/step3, step2, step2-old, … xstep5 (7 revisions)" in message


def fabricated_refs(home: Path) -> None:
    """A cache with step0/1/2/10, a nested ref stage1/step3 and a pull request's ref."""
    commits = make_tiny_neox_cache(home, MODEL, steps=(0, 1, 2, 10))
    refs = repo_dir(home) / "refs"
    (refs / "stage1").mkdir()
    (refs / "stage1" / "step3").write_text(commits[0])
    (refs / "pr").mkdir()
    (refs / "pr" / "1").write_text(commits[1])


def test_list_revisions_offline_reads_the_cache_refs_without_asking_the_hub(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    fabricated_refs(tmp_path)

    def never(self, *args, **kwargs):
        raise AssertionError("the hub was asked")

    monkeypatch.setattr(huggingface_hub.HfApi, "list_repo_refs", never)
    assert list_revisions(MODEL, r"step\d+") == ["step0", "step1", "step2", "step10"]
    assert list_revisions(MODEL, r".*") == ["stage1/step3", "step0", "step1", "step2", "step10"]
    with pytest.raises(HubFetchError, match="the HF cache"):
        list_revisions("EleutherAI/not-cached", r"step\d+")


def test_list_revisions_falls_back_to_the_cache_when_the_hub_does_not_answer(
    online, monkeypatch, caplog
):
    fabricated_refs(online)

    def refused(self, *args, **kwargs):
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(huggingface_hub.HfApi, "list_repo_refs", refused)
    with caplog.at_level(logging.WARNING):
        assert list_revisions(MODEL, r"step\d") == ["step0", "step1", "step2"]
    assert "Connection refused" in caplog.text and "using the HF cache" in caplog.text

    def not_found(self, *args, **kwargs):
        raise hub_error(RepositoryNotFoundError, 404, "no such repo")

    monkeypatch.setattr(huggingface_hub.HfApi, "list_repo_refs", not_found)
    with pytest.raises(HubFetchError, match="cannot list the branches of EleutherAI/pythia-tiny"):
        list_revisions(MODEL, r"step\d")  # the hub said no: the cache does not overrule it


def test_blob_sha256_is_the_blob_name_and_equals_hashlib_of_the_content(tmp_path):
    commits = make_tiny_neox_cache(tmp_path, MODEL, steps=(0,))
    link = repo_dir(tmp_path) / "snapshots" / commits[0] / "model.safetensors"
    assert link.is_symlink() and file_sha256(link) == link.resolve().name == sha256_of(link)
    plain = tmp_path / "weights.bin"
    plain.write_bytes(b"\x00\x01" * 70_000)
    assert file_sha256(plain) == hashlib.sha256(b"\x00\x01" * 70_000).hexdigest()


def test_blob_name_is_trusted_without_reading_but_only_in_a_cache_blobs_folder(tmp_path):
    name = "ab" * 32
    blob = tmp_path / "models--o--m" / "blobs" / name
    blob.parent.mkdir(parents=True)
    blob.write_bytes(b"other content")
    assert file_sha256(blob) == name  # the name is the hash: nothing was read
    elsewhere = tmp_path / "blobs" / name
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(b"other content")
    assert file_sha256(elsewhere) == hashlib.sha256(b"other content").hexdigest()
    with pytest.raises(FileNotFoundError):
        file_sha256(tmp_path / "missing.safetensors")


def test_weight_hashes_of_a_folder_are_those_of_the_files_it_is_read_from(tmp_path):
    commits = make_tiny_neox_cache(tmp_path, MODEL, steps=(0,), weights="both")
    snapshot = repo_dir(tmp_path) / "snapshots" / commits[0]
    expected = {"model.safetensors": sha256_of(snapshot / "model.safetensors")}
    assert weight_hashes(snapshot) == expected
    bins = [snapshot / "pytorch_model.bin", snapshot / "model.safetensors"]
    assert weight_hashes(bins) == {p.name: sha256_of(p) for p in bins}
    assert weight_hashes(str(bins[0])) == {"pytorch_model.bin": sha256_of(bins[0])}
    with pytest.raises(FileNotFoundError, match="no weight files"):
        weight_hashes(tmp_path)
