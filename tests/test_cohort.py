"""The ensemble inside the per-seed training jobs (training.cohort): the first job of a model
trains its unfinished seeds at once, the others take their files; adding a seed trains only it; a
killed ensemble resumes; through Snakemake, adding a seed to a finished study reruns no other."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from conftest import planned_counts, run_snakemake, tiny_config, write_corpus, write_random_tokens
from safetensors import safe_open
from test_ensemble import fail_at
from test_train import CFG, MODEL

from topotrain.training.cohort import FINGERPRINT, STAGED, model_lock, seats, train_member
from topotrain.training.ensemble import train_ensemble

pytest.importorskip("numba")  # the CPU kernel the ensemble folds (as tests/test_ensemble.py)

SEEDS = (7, 8, 9)
ENSEMBLE = replace(CFG, ensemble=True)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, Path]:
    return write_random_tokens(tmp_path_factory.mktemp("corpus"))


def job(root: Path, corpus, seed: int, seeds=SEEDS) -> list[int]:
    """The train rule's job of ``seed``: outputs root/out/seed<N>, state root/state/seed<N>."""
    cfg = replace(ENSEMBLE, seed=seed)
    out, state = root / "out" / f"seed{seed}", root / "state" / f"seed{seed}"
    return train_member(MODEL, cfg, (*corpus, out, state), seeds, progress=False)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, corpus) -> dict[int, Path]:
    """The members of SEEDS trained directly by ``train_ensemble`` (one process, one call)."""
    root = tmp_path_factory.mktemp("reference")
    outs = [root / f"out{s}" for s in SEEDS]
    states = [root / f"state{s}" for s in SEEDS]
    cfgs = [replace(CFG, seed=s) for s in SEEDS]
    train_ensemble(MODEL, cfgs, *corpus, outs, states, progress=False)
    return dict(zip(SEEDS, outs, strict=True))


@pytest.fixture(scope="module")
def study(tmp_path_factory, corpus) -> tuple[Path, list[list[int]]]:
    """The three jobs of SEEDS run one after the other, the middle seed first; what each trained."""
    root = tmp_path_factory.mktemp("cohort")
    return root, [job(root, corpus, seed) for seed in (8, 7, 9)]


def member_files(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name != FINGERPRINT)


def test_the_first_job_trains_every_seed_and_the_others_take_their_files(study, reference):
    root, trained = study
    assert trained == [[7, 8, 9], [], []]
    for seed in SEEDS:
        out = root / "out" / f"seed{seed}"
        assert member_files(out) == sorted(p.name for p in reference[seed].iterdir())
        for name in member_files(out):  # the same count, the same process: the same bits
            assert (out / name).read_bytes() == (reference[seed] / name).read_bytes(), name
        assert not (root / "state" / f"seed{seed}" / STAGED).exists()


def test_members_record_the_ensemble_in_their_numerics(study):
    root, _ = study
    path = root / "out" / "seed9" / "step_00040.safetensors"
    with safe_open(str(path), framework="pt") as fh:
        numerics = json.loads(fh.metadata()["numerics"])
    assert numerics["ensemble"] == "on" and numerics["device"] == "cpu"


def test_adding_a_seed_trains_only_it_and_touches_no_finished_member(
    tmp_path, corpus, study, reference
):
    root, _ = study
    before = {
        p: (p.stat().st_mtime_ns, p.read_bytes()) for p in (root / "out").rglob("*") if p.is_file()
    }
    assert job(root, corpus, 10, seeds=(*SEEDS, 10)) == [10]
    after = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in before}
    assert after == before
    alone = tmp_path / "alone"
    train_ensemble(
        MODEL, [replace(CFG, seed=10)], *corpus, [alone / "out"], [alone / "state"], progress=False
    )
    for name in member_files(root / "out" / "seed10"):
        assert (root / "out" / "seed10" / name).read_bytes() == (alone / "out" / name).read_bytes()


def test_a_finished_member_of_another_configuration_is_trained_again(tmp_path, corpus):
    for seed in SEEDS:
        job(tmp_path, corpus, seed)
    out = tmp_path / "out"
    assert len((out / "seed9" / FINGERPRINT).read_text().strip()) == 64
    (out / "seed9" / FINGERPRINT).write_text("0" * 64 + "\n")  # trained under another config
    for p in (out / "seed7").iterdir():  # seed 7 reruns: Snakemake removed its outputs
        p.unlink()
    assert job(tmp_path, corpus, 7) == [7, 9]
    assert not (tmp_path / "state" / "seed8" / STAGED).exists()  # seed 8 left alone


def test_a_killed_ensemble_resumes_to_the_same_files(tmp_path, corpus, reference):
    with pytest.MonkeyPatch.context() as mp:
        fail_at(mp, 25)
        with pytest.raises(RuntimeError, match="simulated crash"):
            job(tmp_path, corpus, 7)
    assert not (tmp_path / "out" / "seed7").exists()
    assert job(tmp_path, corpus, 9) == [7, 8, 9]  # any seed's job resumes the whole ensemble
    for seed in (7, 8):
        assert job(tmp_path, corpus, seed) == []
    for seed in SEEDS:
        out = tmp_path / "out" / f"seed{seed}"
        for name in member_files(out):
            assert (out / name).read_bytes() == (reference[seed] / name).read_bytes(), name


def test_a_job_waits_for_the_job_training_its_member(tmp_path, corpus, study):
    root, _ = study
    state = tmp_path / "state"
    (state / "seed8" / STAGED).mkdir(parents=True)
    for p in (root / "out" / "seed8").iterdir():  # seed 8 staged, as a first job leaves it
        (state / "seed8" / STAGED / p.name).write_bytes(p.read_bytes())
    done = []
    with model_lock(state):
        worker = threading.Thread(target=lambda: done.append(job(tmp_path, corpus, 8)))
        worker.start()
        time.sleep(1.0)
        assert worker.is_alive() and not (tmp_path / "out" / "seed8").exists()
    worker.join(timeout=60)
    assert done == [[]]
    assert member_files(tmp_path / "out" / "seed8") == member_files(root / "out" / "seed8")


def test_a_members_folders_must_be_named_by_its_seed(tmp_path):
    with pytest.raises(ValueError, match="must be named seed7"):
        seats(replace(ENSEMBLE, seed=7), tmp_path / "out", tmp_path / "seed7", SEEDS)
    cfg = replace(ENSEMBLE, seed=7)
    layout = seats(cfg, tmp_path / "o" / "seed7", tmp_path / "s" / "seed7", [9])
    assert [(s.cfg.seed, s.out_dir.name, s.state_dir.name) for s in layout] == [
        (7, "seed7", "seed7"),
        (9, "seed9", "seed9"),
    ]


# --- through Snakemake: adding a seed to a finished ensemble study --------------------------------


def targets(seeds) -> list[str]:
    return [f"results/checkpoints/tiny-a/seed{s}/metrics.csv" for s in seeds]


@pytest.mark.long  # `make test-long` (.ci/run runs it)
def test_adding_a_seed_to_an_ensemble_study_reruns_only_that_seed(tmp_path):
    train, valid = write_corpus(tmp_path)
    config = tiny_config(train, valid)
    config["train"]["ensemble"] = True
    config["seeds"] = [42, 43]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(tmp_path, "--cores", "2", *targets([42, 43]))
    logs = tmp_path / "results" / "logs" / "train" / "tiny-a"
    texts = [(logs / f"seed{s}.log").read_text() for s in (42, 43)]  # either job may lead
    assert sum("trains the ensemble of seeds [42, 43]" in t for t in texts) == 1
    assert all("took its member's files" in t for t in texts)
    ckpts = sorted((tmp_path / "results" / "checkpoints" / "tiny-a").rglob("*.safetensors"))
    stamps = {p: p.stat().st_mtime_ns for p in ckpts}

    config["seeds"] = [42, 43, 44]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    assert planned_counts(tmp_path, *targets([42, 43, 44])) == {"train_model": 1}
    run_snakemake(tmp_path, "--cores", "2", *targets([42, 43, 44]))
    assert "trains the ensemble of seeds [44]" in (logs / "seed44.log").read_text()
    assert {p: p.stat().st_mtime_ns for p in ckpts} == stamps
    assert planned_counts(tmp_path, *targets([42, 43, 44])) == {}
