"""Checkpoint series you can trust: identical weight files at two steps, on hand-made hashes."""

from __future__ import annotations

import logging
import random

import pytest

from topotrain.sources.identity import (
    IdenticalWeightsError,
    check_identical_steps,
    identical_groups,
    series_flags,
    step_flags,
)

FINAL = "f" * 64
SHARDS = [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)]


def sha(text: str) -> str:
    return (text * 64)[:64]


# issue 205: step0 and step1000 serve the final checkpoint's model.safetensors byte for byte
ISSUE_205 = {
    0: {"model.safetensors": FINAL},
    1000: {"model.safetensors": FINAL},
    5000: {"model.safetensors": sha("5")},
    143000: {"model.safetensors": FINAL},
}
# issue 206: step50000 and step58000 serve the final checkpoint's first shard; the others differ
ISSUE_206 = {
    step: {name: sha(f"{step}{i}") for i, name in enumerate(SHARDS)}
    for step in (0, 50000, 58000, 143000)
}
for _step in (50000, 58000):
    ISSUE_206[_step][SHARDS[0]] = ISSUE_206[143000][SHARDS[0]]


def test_whole_checkpoints_equal_to_the_final_one_form_one_group():
    assert identical_groups(ISSUE_205) == [
        {"sha256": FINAL, "steps": [0, 1000, 143000], "files": ["model.safetensors"]}
    ]
    flags = step_flags(ISSUE_205)
    assert flags[0] == {"same_weights_as": "1000;143000", "equals_final": True}
    assert flags[5000] == {"same_weights_as": "", "equals_final": False}
    assert flags[143000] == {"same_weights_as": "0;1000", "equals_final": False}


def test_one_shared_shard_is_caught_file_by_file():
    groups = identical_groups(ISSUE_206)
    assert groups == [
        {
            "sha256": ISSUE_206[143000][SHARDS[0]],
            "steps": [50000, 58000, 143000],
            "files": [SHARDS[0]],
        }
    ]
    flags = step_flags(ISSUE_206)
    assert [flags[s]["equals_final"] for s in (0, 50000, 58000, 143000)] == [
        False,
        True,
        True,
        False,
    ]
    assert flags[50000]["same_weights_as"] == "58000;143000"


def test_a_hash_under_another_file_name_still_counts():
    hashes = {0: {"pytorch_model.bin": sha("a")}, 10: {"model.safetensors": sha("a")}}
    assert identical_groups(hashes)[0]["files"] == ["model.safetensors", "pytorch_model.bin"]
    one_step = {0: {"a.safetensors": sha("a"), "b.safetensors": sha("a")}}  # repeats within a step
    assert identical_groups(one_step) == [] and step_flags(one_step)[0]["same_weights_as"] == ""


def brute_force_flags(hashes):
    """Every pair of steps compared directly: which other steps share any sha256 with each."""
    final = max(hashes)
    out = {}
    for step, files in hashes.items():
        others = [
            t for t in sorted(hashes) if t != step and set(files.values()) & set(hashes[t].values())
        ]
        out[step] = {"same_weights_as": ";".join(map(str, others)), "equals_final": final in others}
    return out


@pytest.mark.parametrize("seed", range(20))
def test_step_flags_match_pairwise_comparison_of_random_series(seed):
    rng = random.Random(seed)
    pool = [sha(c) for c in "abcdefgh"]
    steps = rng.sample(range(0, 200, 10), rng.randint(2, 8))
    hashes = {s: {n: rng.choice(pool) for n in SHARDS[: rng.randint(1, 3)]} for s in steps}
    assert step_flags(hashes) == brute_force_flags(hashes)
    shared = {g["sha256"] for g in identical_groups(hashes)}
    counted = {h for h in pool if len({s for s in steps if h in hashes[s].values()}) > 1}
    assert shared == counted


def test_identical_steps_stop_with_steps_files_hash_and_the_way_out():
    with pytest.raises(IdenticalWeightsError) as err:
        check_identical_steps("EleutherAI/pythia-2.8b", ISSUE_205, section="pythia")
    message = str(err.value)
    assert message.startswith("EleutherAI/pythia-2.8b: ")
    assert f"steps 0, 1000, 143000 (final): model.safetensors, sha256 {FINAL}" in message
    assert "Steps 0, 1000 serve weights of the final step 143000" in message
    assert "the end of training" in message
    assert message.rstrip().endswith(
        "set `pythia.allow_identical_steps: true` to keep them "
        "(their rows are then flagged in the columns same_weights_as and equals_final)."
    )
    with pytest.raises(IdenticalWeightsError, match="in that section of the config"):
        check_identical_steps("runs.my-run", ISSUE_206)


def test_allowed_identical_steps_warn_and_return_the_flags(caplog):
    with caplog.at_level(logging.WARNING):
        flags = check_identical_steps("runs.my-run", ISSUE_206, allow=True)
    assert flags == step_flags(ISSUE_206)
    assert "runs.my-run: " in caplog.text and SHARDS[0] in caplog.text and "50000" in caplog.text


def test_distinct_steps_pass_silently(caplog):
    hashes = {s: {"model.safetensors": sha(str(s))} for s in (1, 2, 3)}
    with caplog.at_level(logging.WARNING):
        flags = check_identical_steps("m", hashes)
    assert caplog.text == ""
    assert all(f == {"same_weights_as": "", "equals_final": False} for f in flags.values())


def test_series_flags_check_each_model_and_skip_records_without_hashes(caplog):
    docs = [{"model": "a", "step": s, "weights_sha256": h} for s, h in ISSUE_205.items()]
    docs += [{"model": "b", "step": 0}, {"model": "b", "step": 1, "weights_sha256": {"x": FINAL}}]
    with pytest.raises(IdenticalWeightsError, match="^a: "):
        series_flags(docs)
    with caplog.at_level(logging.WARNING):
        flags = series_flags(docs, allow=True, refetch="refetch with --forcerun fetch_pythia")
    assert flags == {("a", s): f for s, f in step_flags(ISSUE_205).items()}  # b is not checked
    assert "b: the records of steps [0] carry no weights_sha256" in caplog.text
    assert "--forcerun fetch_pythia" in caplog.text
