"""Corpus loading and character encoding, from files and from a fabricated Hugging Face cache."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from topotrain.sources.corpus import (
    UNKNOWN_CODE,
    CorpusError,
    decode,
    encode_text,
    load_splits,
    prepare_corpus,
    validation_paragraphs,
)

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "wikitext-2"


def test_ascii_maps_to_its_code_and_others_are_replaced_and_counted():
    text = "Hé said: “ok” ~\n"
    codes, n_replaced = encode_text(text)
    expected = [ord(c) if ord(c) < 128 else UNKNOWN_CODE for c in text]
    assert codes.dtype == np.uint8
    assert codes.tolist() == expected
    assert n_replaced == sum(ord(c) >= 128 for c in text) == 3
    assert decode(encode_text("plain ASCII text\n")[0]) == "plain ASCII text\n"


def test_astral_characters_count_once():
    codes, n = encode_text("a🙂b")
    assert codes.tolist() == [97, UNKNOWN_CODE, 98] and n == 1


def test_files_source_writes_codes_and_manifest_with_sha256(tmp_path):
    train, val = tmp_path / "train.txt", tmp_path / "val.txt"
    train.write_text("hello world\n" * 10, encoding="utf-8")
    val.write_text("café au lait\n", encoding="utf-8")
    splits = load_splits("files", train=str(train), validation=str(val))
    out = tmp_path / "out"
    out.mkdir()
    info = prepare_corpus(splits, out / "t.bin", out / "v.bin", out / "manifest.json")
    assert decode(np.fromfile(out / "t.bin", dtype=np.uint8)) == "hello world\n" * 10
    assert np.fromfile(out / "v.bin", dtype=np.uint8).size == len("café au lait\n")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest == info
    assert manifest["splits"]["train"]["sha256"] == hashlib.sha256(train.read_bytes()).hexdigest()
    assert manifest["splits"]["validation"]["n_replaced"] == 1
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "t.bin", "v.bin"]


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "does not exist"),
        (b"", "is empty"),
        (b"\x00\x01\x02binary", "binary"),
        (b"\xff\xfe\xfa", "UTF-8"),
    ],
)
def test_unusable_corpus_file_names_the_file(tmp_path, content, message):
    bad = tmp_path / "bad.txt"
    if content is not None:
        bad.write_bytes(content)
    good = tmp_path / "good.txt"
    good.write_text("fine\n")
    with pytest.raises(CorpusError, match=message) as err:
        load_splits("files", train=str(bad), validation=str(good))
    assert str(bad) in str(err.value)


def make_hf_dataset_cache(hf_home: Path, splits: dict[str, list[str]]) -> None:
    """Lay out Salesforce/wikitext in the hub's cache format: refs/main → snapshots/<rev>/…"""
    repo = hf_home / "hub" / "datasets--Salesforce--wikitext"
    rev = "0123456789abcdef0123456789abcdef01234567"
    snap = repo / "snapshots" / rev / "wikitext-2-raw-v1"
    snap.mkdir(parents=True)
    for split, lines in splits.items():
        pq.write_table(pa.table({"text": lines}), snap / f"{split}-00000-of-00001.parquet")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(rev)


def test_huggingface_source_reads_offline_cache(tmp_path, monkeypatch):
    lines = {
        "train": [" = Title = \n", " Some text .\n"],
        "validation": [" Other text\n"],
        "test": ["x\n"],
    }
    make_hf_dataset_cache(tmp_path, lines)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    splits = load_splits("huggingface")
    assert decode(splits["train"].codes) == "".join(lines["train"])
    assert decode(splits["validation"].codes) == "".join(lines["validation"])


def test_huggingface_source_without_cache_fails_with_download_hint(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(CorpusError, match="huggingface-cli download Salesforce/wikitext") as err:
        load_splits("huggingface")
    assert "corpus.source: files" in str(err.value)


@pytest.mark.skipif(
    not (SHARED / "valid.txt").exists(), reason="shared WikiText-2 copy not present"
)
def test_shared_wikitext_valid_is_almost_all_ascii():
    splits = load_splits(
        "files", train=str(SHARED / "test.txt"), validation=str(SHARED / "valid.txt")
    )
    val = splits["validation"]
    assert val.sha256 == "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8"
    assert val.codes.size > 1_000_000
    assert 0 < val.n_replaced < 0.01 * val.codes.size


def test_validation_paragraphs_from_files_and_hub_cache(tmp_path, monkeypatch):
    val = tmp_path / "valid.txt"
    val.write_text(" = Head = \n first paragraph .\n second one .\n")
    assert validation_paragraphs("files", validation=str(val)) == [
        " = Head = ",
        " first paragraph .",
        " second one .",
    ]
    lines = {"train": ["t\n"], "validation": [" a\n", " b\n"]}
    make_hf_dataset_cache(tmp_path / "hf", lines)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert validation_paragraphs("huggingface") == [" a\n", " b\n"]
