"""The Pythia branch on fabricated hub caches of tiny GPT-NeoX models (no network anywhere)."""

from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import pdist, squareform
from scipy.special import logsumexp

from benchmarks.hub_cache import make_tiny_neox_cache, paragraphs
from topotrain.config import GPT_NEOX_LAYERS
from topotrain.jobs.pythia import revision_topology, weight_record
from topotrain.jobs.topology import checkpoint_topology
from topotrain.sources.identity import IdenticalWeightsError
from topotrain.sources.pythia import (
    PythiaError,
    embed_texts,
    fetch_revision,
    load_model,
    perplexity,
    revision_doc,
    revision_name,
    revision_weight_matrices,
    select_texts,
)
from topotrain.topology.embedding import EMBEDDING_KEYS, embedding_features
from topotrain.topology.layers import layer_rng
from topotrain.topology.neural_persistence import neural_persistence
from topotrain.topology.summaries import feature_count, total_persistence
from topotrain.topology.vietoris_rips import subsample_rows, vr_diagrams

MODEL = "EleutherAI/pythia-tiny"
H = 32  # hidden size of benchmarks.hub_cache.TINY_CONFIG


def snapshot_path(home: Path, commit: str) -> Path:
    return home / "hub" / f"models--{MODEL.replace('/', '--')}" / "snapshots" / commit


def use_cache(monkeypatch, home: Path, offline: bool = True) -> None:
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1" if offline else "0")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """(hf_home, {step: commit}) of a cache holding step0, step1, step2."""
    home = tmp_path_factory.mktemp("hf")
    return home, make_tiny_neox_cache(home, MODEL, steps=(0, 1, 2))


@pytest.fixture
def hub(cache, monkeypatch):
    use_cache(monkeypatch, cache[0])
    return cache


@pytest.fixture(scope="module")
def loaded(cache):
    home, commits = cache
    return load_model(snapshot_path(home, commits[0]))


@pytest.fixture(scope="module")
def texts():
    return select_texts(paragraphs(), n_texts=24, seed=1)


def test_revision_names():
    assert revision_name(143000) == "step143000"
    with pytest.raises(ValueError):
        revision_name(-1)


def test_fetch_revision_resolves_each_step_to_its_own_snapshot_and_commit(hub):
    home, commits = hub
    for step, commit in commits.items():
        info = fetch_revision(MODEL, step)
        assert info["revision"] == f"step{step}" and info["commit"] == commit
        assert Path(info["snapshot"]) == snapshot_path(home, commit).resolve()
        assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(info["files"])


def assert_fails_fast_with_hint(step: int, seconds: float = 2.0) -> None:
    start = time.perf_counter()
    with pytest.raises(PythiaError) as info:
        fetch_revision(MODEL, step)
    assert time.perf_counter() - start < seconds
    message = str(info.value)
    assert MODEL in message and f"step{step}" in message
    assert f"huggingface-cli download {MODEL} --revision step{step}" in message
    assert "HF_HUB_OFFLINE" in message and "HF_HOME" in message


def test_missing_revision_raises_fast_naming_model_revision_and_command(hub):
    assert_fails_fast_with_hint(99)


def test_empty_cache_offline_raises_fast(tmp_path, monkeypatch):
    use_cache(monkeypatch, tmp_path)
    assert_fails_fast_with_hint(0)


def test_unreachable_hub_falls_back_to_cache_and_fails_fast_without_it(cache, monkeypatch):
    import huggingface_hub.constants

    use_cache(monkeypatch, cache[0], offline=False)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", "http://127.0.0.1:9")  # refused
    assert fetch_revision(MODEL, 1)["commit"] == cache[1][1]
    assert_fails_fast_with_hint(99)


def test_load_model_sets_a_pad_token_and_eval_mode(loaded):
    model, tokenizer = loaded
    assert tokenizer.pad_token == tokenizer.eos_token == "<|endoftext|>"
    assert not model.training
    assert str(model.dtype) == "torch.float32"  # dtype "auto" on CPU


def test_load_model_by_id_and_step_reads_that_revisions_weights(hub):
    from safetensors.numpy import load_file

    home, commits = hub
    model, _ = load_model(MODEL, 2)
    name = "gpt_neox.layers.1.mlp.dense_4h_to_h.weight"
    expected = load_file(snapshot_path(home, commits[2]) / "model.safetensors")[name]
    np.testing.assert_array_equal(model.state_dict()[name].numpy(), expected)


def test_embed_texts_counts_every_predicted_token_of_each_window(loaded, texts):
    model, tokenizer = loaded
    E, nll_sum, n_tokens = embed_texts(model, tokenizer, texts, max_length=64, batch_size=5)
    lengths = [min(len(tokenizer(t)["input_ids"]), 64) for t in texts]
    assert E.shape == (len(texts), H) and E.dtype == np.float64 and np.isfinite(E).all()
    assert n_tokens == sum(n - 1 for n in lengths)
    assert min(lengths) < 64 == max(lengths)  # both padded and truncated texts were exercised
    assert 1.0 < perplexity(nll_sum, n_tokens) < 2 * len(tokenizer)


def one_text_reference(
    model, tokenizer, text: str, max_length: int
) -> tuple[np.ndarray, float, int]:
    """Mean of the last hidden layer and Σ −log softmax(logits)[next token], unpadded,
    in float64."""
    import torch

    ids = tokenizer(text, truncation=True, max_length=max_length, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = model(input_ids=ids, output_hidden_states=True)
    hidden = out.hidden_states[-1][0].double().numpy()
    logits = out.logits[0, :-1].double().numpy()
    target = ids[0, 1:].numpy()
    nll = (logsumexp(logits, axis=1) - logits[np.arange(target.size), target]).sum()
    return hidden.mean(axis=0), float(nll), int(target.size)


@pytest.mark.parametrize("side", ["right", "left"])
def test_mean_pooling_with_padding_equals_each_text_alone(loaded, texts, side):
    model, tokenizer = loaded
    tokenizer.padding_side = side
    try:
        E, nll_sum, n_tokens = embed_texts(model, tokenizer, texts[:8], max_length=64, batch_size=8)
    finally:
        tokenizer.padding_side = "right"
    refs = [one_text_reference(model, tokenizer, t, 64) for t in texts[:8]]
    np.testing.assert_allclose(E, np.stack([r[0] for r in refs]), atol=1e-5)
    assert nll_sum == pytest.approx(sum(r[1] for r in refs), rel=1e-5)
    assert n_tokens == sum(r[2] for r in refs)


def test_perplexity_equals_exp_of_independent_cross_entropy(loaded, texts):
    model, tokenizer = loaded
    _, nll, n = one_text_reference(model, tokenizer, texts[3], 128)
    _, nll_sum, n_tokens = embed_texts(model, tokenizer, texts[3:4], max_length=128)
    assert n_tokens == n
    assert perplexity(nll_sum, n_tokens) == pytest.approx(math.exp(nll / n), rel=1e-5)


def test_different_revisions_give_different_embeddings(cache, loaded, texts):
    home, commits = cache
    E0, _, _ = embed_texts(*loaded, texts)
    E1, _, _ = embed_texts(*load_model(snapshot_path(home, commits[1])), texts)
    assert np.abs(E0 - E1).max() > 1e-2


def test_embedding_features_has_all_keys_and_finite_values(loaded, texts):
    E, _, _ = embed_texts(*loaded, texts)
    record, dgms = embedding_features(E, pca_dims=10)
    assert tuple(record) == EMBEDDING_KEYS
    assert all(np.isfinite(v) for v in record.values())
    assert record["pca_dims"] == 10 and record["n_points"] == len(texts) and len(dgms) == 2
    assert 0 < record["pca_variance_ratio"] < 1
    assert 1 <= record["effective_rank"] <= min(E.shape) and record["h1_count"] >= 0


def test_full_pca_keeps_h0_equal_to_the_mst_of_the_embeddings(loaded, texts):
    E, _, _ = embed_texts(*loaded, texts)
    record, _ = embedding_features(E, pca_dims=H, maxdim=0)
    mst = minimum_spanning_tree(squareform(pdist(E))).data
    assert record["pca_variance_ratio"] == pytest.approx(1.0)
    assert record["h0_total"] == pytest.approx(mst.sum(), rel=1e-9)
    assert record["h1_count"] is None


def test_embedding_features_subsamples_max_points(loaded, texts):
    E, _, _ = embed_texts(*loaded, texts)
    record, dgms = embedding_features(E, pca_dims=8, max_points=10, seed=3)
    assert record["n_points"] == 10 and feature_count(dgms[0]) == 9


def test_revision_weight_matrices_are_the_four_linear_maps_per_layer(cache, loaded):
    home, commits = cache
    matrices = revision_weight_matrices(snapshot_path(home, commits[0]))
    state = loaded[0].state_dict()
    shapes = {"query_key_value": (3 * H, H), "dense": (H, H)}
    shapes |= {"dense_h_to_4h": (4 * H, H), "dense_4h_to_h": (H, 4 * H)}
    for layer in range(2):
        for pattern in GPT_NEOX_LAYERS:
            name = pattern.replace("*", str(layer))
            assert matrices[name].shape == shapes[name.split(".")[-2]]
            assert matrices[name].dtype == np.float32
            np.testing.assert_array_equal(matrices[name], state[name].numpy())


def test_revision_topology_matches_checkpoint_level_functions(cache):
    from safetensors.numpy import load_file

    home, commits = cache
    snapshot = snapshot_path(home, commits[1])
    records = revision_topology(snapshot, max_points=20, seed=4).layers
    expected = {p.replace("*", str(i)) for p in GPT_NEOX_LAYERS for i in range(2)}
    assert {r["layer"] for r in records} == expected and len(records) == 8
    name = "gpt_neox.layers.1.mlp.dense_h_to_4h.weight"
    record = next(r for r in records if r["layer"] == name)
    W = load_file(snapshot / "model.safetensors")[name].astype(np.float64)
    dgms = vr_diagrams(subsample_rows(W, 20, layer_rng(4, name)))
    assert (record["rows"], record["cols"], record["n_points"]) == (4 * H, H, 20)
    assert record["np_total"] == pytest.approx(neural_persistence(W)["np_total"])
    assert record["h0_total"] == pytest.approx(total_persistence(dgms[0]))
    assert record["h1_count"] == feature_count(dgms[1])
    spine, _ = checkpoint_topology(
        snapshot / "model.safetensors", GPT_NEOX_LAYERS, max_points=20, seed=4
    )
    assert spine == records


def test_revision_records_carry_weightwatcher_on_the_same_matrices_and_the_table_averages_them(
    cache,
):
    """weightwatcher=True adds ww_* fields equal to the package's own on the matrices read
    directly; weights_table's ww_alpha_mean is their mean over the fitted layers."""
    from safetensors.numpy import load_file

    from topotrain.analysis.tables.pythia import weights_table
    from topotrain.baselines.weightwatcher import ww_layers

    home, commits = cache
    snapshot = snapshot_path(home, commits[1])
    plain = revision_topology(snapshot, max_points=20, seed=4).layers
    records = revision_topology(snapshot, max_points=20, seed=4, weightwatcher=True).layers
    tensors = load_file(snapshot / "model.safetensors")
    direct = {r["layer"]: r for r in ww_layers({r["layer"]: tensors[r["layer"]] for r in plain})}
    for base, rec in zip(plain, records, strict=True):
        assert {k: v for k, v in rec.items() if not k.startswith("ww_")} == base
        want = direct[rec["layer"]]
        assert rec["ww_num_evals"] == want["num_evals"] == H  # min(rows, cols)
        assert rec["ww_fit"] == want["fit"] and rec["ww_alpha"] == pytest.approx(want["alpha"])
    doc = {"model": "EleutherAI/pythia-tiny", "step": 7, "layers": records}
    table = weights_table([doc]).iloc[0]
    fitted = [r["alpha"] for r in direct.values() if np.isfinite(r["alpha"])]
    assert table["ww_alpha_mean"] == pytest.approx(np.mean(fitted))
    assert "ww_alpha_mean" not in weights_table([{**doc, "layers": plain}])


@pytest.mark.parametrize(
    ("dtype", "weights"),
    [("float16", "safetensors"), ("bfloat16", "safetensors"), ("float32", "bin")],
)
def test_half_precision_and_bin_weights_read_as_float32(tmp_path, dtype, weights):
    import torch

    commits = make_tiny_neox_cache(tmp_path, MODEL, steps=(0,), dtype=dtype, weights=weights)
    snapshot = snapshot_path(tmp_path, commits[0])
    name = "gpt_neox.layers.0.attention.query_key_value.weight"
    matrices = revision_weight_matrices(snapshot)
    model, _ = load_model(snapshot, dtype=dtype)
    assert matrices[name].dtype == np.float32
    assert model.dtype == getattr(torch, dtype)
    np.testing.assert_array_equal(matrices[name], model.state_dict()[name].float().numpy())


def test_corrupted_weights_raise_naming_model_revision_and_file(tmp_path):
    commits = make_tiny_neox_cache(tmp_path, MODEL, steps=(5,))
    snapshot = snapshot_path(tmp_path, commits[5])
    (snapshot / "model.safetensors").unlink()
    (snapshot / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ValueError, match=r"pythia-tiny@step5.*model\.safetensors"):
        revision_weight_matrices(snapshot)
    with pytest.raises(PythiaError, match="pythia-tiny@step5"):
        load_model(snapshot)


def eligible(lines: list[str], min_chars: int) -> list[str]:
    stripped = [s.strip() for s in lines]
    return [s for s in stripped if len(s) >= min_chars and not (s[0] == "=" and s[-1] == "=")]


def test_select_texts_is_seeded_ordered_and_skips_headings_and_short_lines():
    lines = paragraphs()
    pool = eligible(lines, 100)
    chosen = select_texts(lines, n_texts=50, seed=7)
    assert chosen == select_texts(lines, n_texts=50, seed=7)
    assert chosen != select_texts(lines, n_texts=50, seed=8)
    assert [pool.index(t) for t in chosen] == sorted(pool.index(t) for t in chosen)
    assert select_texts(lines, n_texts=len(pool)) == pool
    assert any(s.strip().startswith("= ") for s in lines) and any(
        len(s.strip()) < 100 for s in lines
    )


def test_select_texts_errors_naming_how_many_qualify():
    lines = [" = Heading that is long enough to pass the length filter " + "x" * 60 + " = "]
    lines += ["short"] * 5 + ["y" * 120] * 3
    with pytest.raises(ValueError, match=r"only 3 of 9 paragraphs.*n_texts=4"):
        select_texts(lines, n_texts=4)


def test_non_finite_pythia_weights_name_revision_and_layer(tmp_path):
    """The spine's finiteness check covers Pythia: a NaN or inf weight stops the revision's
    weight topology with the revision and the layer named, as for a spine checkpoint."""
    from safetensors.numpy import load_file, save_file

    commits = make_tiny_neox_cache(tmp_path, MODEL, steps=(3,))
    snapshot = snapshot_path(tmp_path, commits[3])
    tensors = load_file(snapshot / "model.safetensors")
    name = "gpt_neox.layers.1.attention.dense.weight"
    tensors[name][0, 0], tensors[name][2, 5] = np.nan, np.inf
    (snapshot / "model.safetensors").unlink()  # a symlink into the blob store
    save_file(tensors, snapshot / "model.safetensors")
    with pytest.raises(ValueError, match=rf"pythia-tiny@step3 .*, layer {name}: 2 NaN/inf weights"):
        revision_topology(snapshot, max_points=20)
    other = ["gpt_neox.layers.0.attention.dense.weight"]  # the bad layer not selected: no error
    assert len(revision_topology(snapshot, other, max_points=20).layers) == 1


# ---- checkpoint series you can trust: one weight format, identical weights at two steps ----


def test_fetch_revision_records_the_sha256_of_one_weight_format(tmp_path, monkeypatch):
    use_cache(monkeypatch, tmp_path)
    commits = make_tiny_neox_cache(tmp_path, MODEL, steps=(4,), weights="both")
    info = fetch_revision(MODEL, 4)
    weights = snapshot_path(tmp_path, commits[4]) / "model.safetensors"
    assert {"model.safetensors", "pytorch_model.bin"} <= set(info["files"])
    assert info["sha256"] == {"model.safetensors": hashlib.sha256(weights.read_bytes()).hexdigest()}


@pytest.fixture(scope="module")
def twin_cache(tmp_path_factory):
    """(hf_home, {step: commit}): step0 serves step2's weights byte for byte (issue 205's fault)."""
    home = tmp_path_factory.mktemp("hf-twins")
    return home, make_tiny_neox_cache(home, MODEL, steps=(0, 1, 2), same_weights={0: 2})


@pytest.fixture
def twin_revisions(twin_cache, monkeypatch, tmp_path):
    """The three fetched revisions and the sha256 of step2's weights, computed here by hashlib."""
    home, commits = twin_cache
    use_cache(monkeypatch, home)
    blobs = {
        s: (snapshot_path(home, c) / "model.safetensors").resolve() for s, c in commits.items()
    }
    assert blobs[0] == blobs[2] != blobs[1]  # two revisions, one blob
    return [fetch_revision(MODEL, s) for s in (0, 1, 2)], hashlib.sha256(
        blobs[2].read_bytes()
    ).hexdigest()


def write_docs(tmp_path: Path, docs: list[dict], name: str) -> list[str]:
    paths = []
    for doc in docs:
        paths.append(str(tmp_path / f"{name}{doc['step']}.json"))
        Path(paths[-1]).write_text(json.dumps(doc))
    return paths


def assert_stops_naming_the_twins(job, out: dict, sha: str) -> None:
    with pytest.raises(IdenticalWeightsError) as err:
        job({"allow_identical_steps": False})
    message = str(err.value)
    assert message.startswith(f"{MODEL}: ")
    assert f"steps 0, 2 (final): model.safetensors, sha256 {sha}" in message
    assert "pythia.allow_identical_steps: true" in message
    assert not any(Path(p).exists() for p in out.values())


def test_identical_revisions_stop_the_weight_tables_job_unless_allowed(twin_revisions, tmp_path):
    from topotrain.jobs.pythia import pythia_weight_tables_job

    revisions, sha = twin_revisions
    params = {"layers": list(GPT_NEOX_LAYERS), "max_points": 20, "seed": 0}
    records = write_docs(tmp_path, [weight_record(r, params) for r in revisions], "weights")
    out = {"weights_csv": str(tmp_path / "w.csv"), "weights_md": str(tmp_path / "w.md")}
    assert_stops_naming_the_twins(lambda p: pythia_weight_tables_job(records, p, out), out, sha)
    pythia_weight_tables_job(records, {"allow_identical_steps": True}, out)
    table = pd.read_csv(out["weights_csv"], keep_default_na=False)
    assert table["step"].tolist() == [0, 1, 2]
    assert table["same_weights_as"].astype(str).tolist() == ["2", "", "0"]
    assert table["equals_final"].tolist() == [True, False, False]


def test_identical_revisions_stop_the_embedding_tables_job_unless_allowed(twin_revisions, tmp_path):
    from topotrain.jobs.pythia import pythia_embedding_tables_job

    revisions, sha = twin_revisions
    rng = np.random.default_rng(0)
    docs, diagrams = [], []
    for rev in revisions:
        features = {k: float(rng.uniform(1, 2)) for k in (*EMBEDDING_KEYS, "perplexity")}
        docs.append(revision_doc(rev, features=features, seconds=0.0))
        diagrams.append(str(tmp_path / f"d{rev['step']}.npz"))
        np.savez(diagrams[-1], h0=rng.uniform(size=(3, 2)), h1=rng.uniform(size=(2, 2)))
    inputs = {"records": write_docs(tmp_path, docs, "emb"), "diagrams": diagrams}
    names = ("embeddings", "correlations", "comparison", "kinds")
    out = {f"{n}_{x}": str(tmp_path / f"{n}.{x}") for n in names for x in ("csv", "md")}

    def job(params):
        pythia_embedding_tables_job(inputs, {"n_resamples": 100, **params}, out)

    assert_stops_naming_the_twins(job, out, sha)
    job({"allow_identical_steps": True})
    emb = pd.read_csv(out["embeddings_csv"], keep_default_na=False)
    assert emb["same_weights_as"].astype(str).tolist() == ["2", "", "0"]
    assert emb["equals_final"].tolist() == [True, False, False]
