"""Linear maps found from the architecture: GPT-2, GPT-NeoX, Llama and OLMo checkpoints written by
save_pretrained, read back by name and orientation; weight files in every accepted form."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from run_fixtures import tiny_model

from topotrain.jobs.runs import run_checkpoint_topology
from topotrain.sources.architectures import (
    ArchitectureError,
    config_weight_maps,
    module_weight_maps,
    oriented_matrices,
    select_maps,
)
from topotrain.sources.runs import layer_map
from topotrain.sources.tensors import LazyTensors
from topotrain.sources.weights import (
    UnsafeCheckpointError,
    lazy_weights,
    read_weights,
    tensor_shapes,
    weight_files,
)
from topotrain.topology.layers import layer_records, shapes_of

LLAMA_LIKE = [  # Llama's and OLMo's block 0: q, k, v, o, then the gated MLP
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.down_proj",
]
# per architecture: the linear maps of block 0, in the module order, as transformers names them
BLOCK0 = {
    "gpt2": ["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"],
    "gpt_neox": [
        "attention.query_key_value",
        "attention.dense",
        "mlp.dense_h_to_4h",
        "mlp.dense_4h_to_h",
    ],
    "llama": LLAMA_LIKE,
    "olmo": LLAMA_LIKE,
    "olmo2": LLAMA_LIKE,
}
PREFIX = {
    "gpt2": "transformer.h",
    "gpt_neox": "gpt_neox.layers",
    "llama": "model.layers",
    "olmo": "model.layers",
    "olmo2": "model.layers",
}


@pytest.fixture(scope="module", params=sorted(BLOCK0))
def saved(request, tmp_path_factory):
    """(model_type, folder, model) of a tiny model of each architecture,
    saved by save_pretrained."""
    folder = tmp_path_factory.mktemp(request.param)
    model = tiny_model(request.param, seed=3)
    model.save_pretrained(folder)
    return request.param, folder, model


def test_linear_maps_are_found_by_architecture_for_every_supported_family(saved):
    model_type, folder, model = saved
    maps, info = config_weight_maps(folder)
    linear = [m.name for m in select_maps(maps)]
    n_blocks = model.config.num_hidden_layers
    expected = [
        f"{PREFIX[model_type]}.{b}.{n}.weight" for b in range(n_blocks) for n in BLOCK0[model_type]
    ]
    assert linear == expected
    assert info["model_type"] == model_type
    assert info["n_params"] == model.num_parameters()
    assert (info["d_model"], info["n_layer"]) == (16, 2)
    shapes = tensor_shapes(weight_files(folder))
    assert all(name in shapes for name in linear)  # the saved names are the file's keys


def test_rows_are_output_neurons_so_gpt2_conv1d_is_transposed(saved):
    model_type, folder, model = saved
    maps, _ = config_weight_maps(folder)
    chosen = select_maps(maps)
    assert all(m.transposed == (model_type == "gpt2") for m in chosen)
    matrices = oriented_matrices(chosen, read_weights(weight_files(folder), "t"), "t")
    modules = dict(model.named_modules())
    for name, W in matrices.items():
        module = modules[name.removesuffix(".weight")]
        out_features = getattr(module, "out_features", None) or module.nf  # Linear / Conv1D
        assert W.shape[0] == out_features
        expected = module.weight.detach().numpy()
        np.testing.assert_array_equal(W, expected.T if model_type == "gpt2" else expected)


def test_embeddings_and_head_only_when_asked(saved):
    model_type, folder, _ = saved
    maps, _ = config_weight_maps(folder)
    roles = {m.name: m.role for m in select_maps(maps, include_embeddings=True, include_head=True)}
    embeddings = [n for n, r in roles.items() if r == "embedding"]
    heads = [n for n, r in roles.items() if r == "head"]
    assert embeddings and all("embed" in n or "wte" in n or "wpe" in n for n in embeddings)
    if model_type == "gpt2":  # the head is tied to wte: stored once, as the embedding
        assert heads == []
    else:
        assert heads == ["embed_out.weight" if model_type == "gpt_neox" else "lm_head.weight"]
        saved = tensor_shapes(weight_files(folder))
        assert heads[0] in saved  # GPT-NeoX saves lm_head as embed_out
    assert not {"embedding", "head"} & {m.role for m in select_maps(maps)}


def test_patterns_pick_any_role_and_the_layer_map_names_its_source(saved, tmp_path):
    model_type, folder, _ = saved
    files = [str(f) for f in weight_files(folder)]
    doc = layer_map(
        {"layers": ["*.0.*"], "transposed": [], "include_embeddings": False, "include_head": False},
        files,
        folder,
        "runs.x",
    )
    assert doc["source"] == "architecture"
    assert [m["name"] for m in doc["layers"]] == [
        f"{PREFIX[model_type]}.0.{n}.weight" for n in BLOCK0[model_type]
    ]


def test_run_checkpoint_topology_equals_the_per_layer_loop_on_oriented_rows(saved):
    model_type, folder, model = saved
    files = [str(f) for f in weight_files(folder)]
    options = {"layers": [], "transposed": [], "include_embeddings": False, "include_head": False}
    doc = layer_map(options, files, folder, "runs.x")
    records = run_checkpoint_topology(files, doc, "runs.x", {"max_points": 30, "seed": 1}).layers
    by_hand = {}
    for name, module in model.named_modules():
        if name.endswith(tuple(BLOCK0[model_type])):
            W = module.weight.detach().numpy().astype(np.float64)
            by_hand[f"{name}.weight"] = W.T if model_type == "gpt2" else W
    expected, _ = layer_records(by_hand, ["*"], max_points=30, seed=1)
    assert [r["layer"] for r in records] == [r["layer"] for r in expected]
    for got, want in zip(records, expected, strict=True):
        assert got["rows"] == want["rows"]
        for key in ("np_total", "h0_total", "h1_total", "l2_norm"):
            assert got[key] == pytest.approx(want[key], rel=1e-6)


def test_without_a_config_the_layers_come_from_patterns_or_the_error_says_how(tmp_path):
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    path = tmp_path / "step_100.safetensors"
    save_file(
        {
            "blocks.0.fc.weight": rng.normal(size=(6, 4)).astype(np.float32),
            "blocks.0.conv.weight": rng.normal(size=(4, 5)).astype(np.float32),
            "embed.weight": rng.normal(size=(10, 4)).astype(np.float32),
        },
        str(path),
    )
    options = {"layers": [], "transposed": [], "include_embeddings": False, "include_head": False}
    with pytest.raises(ValueError, match="no config.json.*give the run a `config:`.*`layers:`"):
        layer_map(options, [str(path)], None, "runs.plain")
    options |= {"layers": ["blocks.*"], "transposed": ["*.conv.weight"]}
    doc = layer_map(options, [str(path)], None, "runs.plain")
    assert doc["source"] == "patterns" and doc["n_params"] == 24 + 20 + 40
    assert {m["name"]: m["transposed"] for m in doc["layers"]} == {
        "blocks.0.conv.weight": True,
        "blocks.0.fc.weight": False,
    }
    records = run_checkpoint_topology([str(path)], doc, "runs.plain", {"max_points": 10}).layers
    assert {r["layer"]: r["rows"] for r in records} == {
        "blocks.0.conv.weight": 5,
        "blocks.0.fc.weight": 6,
    }


def test_read_one_at_a_time_the_oriented_matrices_and_records_are_the_eager_ones(saved):
    model_type, folder, _ = saved
    files, maps = weight_files(folder), select_maps(config_weight_maps(folder)[0])
    names = {m.name for m in maps}
    eager, lazy = read_weights(files, "t", names), lazy_weights(files, "t", names)
    assert isinstance(lazy, LazyTensors) and set(lazy) == set(eager) == names
    assert all(lazy[n].dtype == np.float32 and np.array_equal(lazy[n], eager[n]) for n in names)
    expected, oriented = oriented_matrices(maps, eager, "t"), oriented_matrices(maps, lazy, "t")
    assert isinstance(oriented, LazyTensors)
    assert shapes_of(oriented) == {n: W.shape for n, W in expected.items()}  # nothing read
    assert all(np.array_equal(oriented[n], W) for n, W in expected.items())
    records, diagrams = layer_records(oriented, ["*"], max_points=30, seed=1)
    assert records == layer_records(expected, ["*"], max_points=30, seed=1)[0]


def test_a_checkpoint_lacking_a_layer_of_the_map_names_it(saved, tmp_path):
    from safetensors.numpy import save_file

    model_type, folder, _ = saved
    maps, _ = config_weight_maps(folder)
    tensors = read_weights(weight_files(folder), "t")
    dropped = select_maps(maps)[1].name
    del tensors[dropped]
    save_file(tensors, str(tmp_path / "model.safetensors"))
    with pytest.raises(ArchitectureError, match=rf"ckpt: no tensor \['{dropped}'\]"):
        oriented_matrices(select_maps(maps), tensors, "ckpt")


def test_unknown_architecture_or_custom_code_is_refused_with_the_way_out(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "no-such-model"}))
    with pytest.raises(ArchitectureError, match="does not know model_type 'no-such-model'"):
        config_weight_maps(tmp_path)
    custom = {"model_type": "hf_olmo", "auto_map": {"AutoModelForCausalLM": "x.y"}}
    (tmp_path / "config.json").write_text(json.dumps(custom))
    with pytest.raises(ArchitectureError, match="custom code.*`layers:` patterns"):
        config_weight_maps(tmp_path)


def test_module_tree_of_a_live_model_uses_its_own_state_dict_names():
    model = tiny_model("gpt_neox", seed=0)
    maps = module_weight_maps(model)
    state = model.state_dict()
    assert all(m.name in state for m in maps)
    assert [m.name for m in maps if m.role == "head"] == ["lm_head.weight"]  # not embed_out


# --- weight files: shards, PyTorch pickles, refusals -------------------------------------------


def test_sharded_checkpoint_reads_every_shard_through_its_index(tmp_path):
    model = tiny_model("llama", seed=1)
    model.save_pretrained(tmp_path, max_shard_size="20KB")
    files = weight_files(tmp_path)
    assert len(files) > 1 and all(f.name.startswith("model-") for f in files)
    got = read_weights(files, "sharded")
    for name, tensor in model.state_dict().items():
        if tensor.dim() == 2:
            np.testing.assert_array_equal(got[name], tensor.numpy())
    files[-1].unlink()
    with pytest.raises(FileNotFoundError, match=r"index\.json lists shards that are missing"):
        weight_files(tmp_path)


def test_lazy_weights_read_shards_and_leave_pytorch_files_to_the_unpickler(tmp_path):
    model = tiny_model("llama", seed=1)
    model.save_pretrained(tmp_path / "sharded", max_shard_size="20KB")
    files = weight_files(tmp_path / "sharded")
    lazy, eager = lazy_weights(files, "sharded"), read_weights(files, "sharded")
    assert len(files) > 1 and isinstance(lazy, LazyTensors) and set(lazy) == set(eager)
    assert all(np.array_equal(lazy[n], W) for n, W in eager.items())
    torch.save({"fc.weight": torch.ones(3, 2)}, tmp_path / "flat.bin")
    pickled = lazy_weights([tmp_path / "flat.bin"], "flat")
    assert isinstance(pickled, dict) and pickled["fc.weight"].shape == (3, 2)
    with pytest.raises(FileNotFoundError, match="x: weight file .*nope.safetensors"):
        lazy_weights([tmp_path / "nope.safetensors"], "x")


def test_pytorch_files_load_through_the_restricted_unpickler_nested_or_flat(tmp_path):
    import argparse

    W = torch.arange(6, dtype=torch.float32).reshape(3, 2)
    torch.save({"fc.weight": W, "fc.bias": torch.zeros(3)}, tmp_path / "flat.bin")
    torch.save({"model": {"fc.weight": W}, "iter_num": 5}, tmp_path / "nanogpt.pt")
    for name in ("flat.bin", "nanogpt.pt"):
        np.testing.assert_array_equal(read_weights([tmp_path / name], name)["fc.weight"], W)
    torch.save({"model": {"fc.weight": W}, "args": argparse.Namespace(lr=1)}, tmp_path / "bad.pt")
    with pytest.raises(UnsafeCheckpointError) as err:
        read_weights([tmp_path / "bad.pt"], "runs.x")
    message = str(err.value)
    assert "runs.x: refused" in message and "argparse.Namespace" in message
    assert "weights_only=False" in message and "bad.safetensors" in message
    assert "save_file" in message and "save_pretrained" in message
