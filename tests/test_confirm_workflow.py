"""The confirmation through the real rules: the confirmation seeds train by the discovery seeds'
rules, the hypotheses read only the discovery side, the confirmation only the hypotheses and the
confirmation side; a change on one side leaves the other side's outputs as they were."""

from __future__ import annotations

import hashlib

import pandas as pd
import pytest
import yaml
from conftest import planned_counts, run_snakemake, tiny_config, write_corpus
from test_confirm import control_table

DISCOVERY, FRESH = "results/features/control.parquet", "results/features/confirm/control.parquet"
HYPOTHESES = "results/tables/control_hypotheses.csv"
CONFIRMATION = "results/tables/control_confirmation.csv"
SIDES = ["hypotheses", "confirmation"]  # the only rules run: the tables are given


def confirm_config(workdir, discovery=(0, 1, 2, 3, 4), fresh=(5, 6, 7, 8, 9)) -> None:
    train, valid = write_corpus(workdir)
    config = tiny_config(train, valid)
    config["spine"] = {"enabled": False}
    config["control"] = {"enabled": True, "seeds": list(discovery), "steps": 100, "interval": 50}
    config["confirm"] = {"control_seeds": list(fresh)}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))


def write(workdir, path: str, df: pd.DataFrame) -> None:
    (workdir / path).parent.mkdir(parents=True, exist_ok=True)
    df.to_parquet(workdir / path, index=False)


def confirm(workdir) -> None:
    run_snakemake(workdir, "--cores", "1", "--allowed-rules", *SIDES, "--", CONFIRMATION)


def test_the_confirmation_seeds_train_by_the_same_rules_and_discovery_never_waits_on_them(
    tmp_path,
):
    confirm_config(tmp_path, discovery=(0, 1), fresh=(2, 3))
    counts = planned_counts(tmp_path)
    assert {k: counts[k] for k in ("train_control", "control_features")} == {
        "train_control": 4,
        "control_features": 4,
    }
    assert counts["control_confirm_features"] == counts["hypotheses"] == 1
    assert counts["confirmation"] == 1
    frozen = planned_counts(tmp_path, HYPOTHESES)  # what the hypotheses need: discovery only
    assert frozen["train_control"] == 2 and "control_confirm_features" not in frozen


@pytest.mark.long  # `make test-long` (.ci/run runs it)
def test_each_side_changes_only_its_own_outputs(tmp_path):
    confirm_config(tmp_path)
    discovery, fresh = control_table(range(5)), control_table(range(5, 10), rng_seed=1)
    write(tmp_path, DISCOVERY, discovery)
    write(tmp_path, FRESH, fresh)
    confirm(tmp_path)
    hyps_path, conf_path = tmp_path / HYPOTHESES, tmp_path / CONFIRMATION
    hyps = pd.read_csv(hyps_path)
    sha = hashlib.sha256((tmp_path / DISCOVERY).read_bytes()).hexdigest()
    assert hyps["feature"].tolist() == ["emb_h0_total"] and (hyps["source"] == "hit").all()
    assert (hyps["discovery_table_sha256"] == sha).all()
    frozen, first = hyps_path.read_bytes(), pd.read_csv(conf_path)
    assert first["verdict"].tolist() == ["reproduced"]

    fresh.loc[fresh["seed"] == 7, "emb_h0_total"] += 0.05  # the confirmation side only
    write(tmp_path, FRESH, fresh)
    confirm(tmp_path)
    assert hyps_path.read_bytes() == frozen  # not rerun, not changed
    second = pd.read_csv(conf_path)
    assert second.loc[0, "rho_clock"] != first.loc[0, "rho_clock"]

    discovery.loc[discovery["seed"] == 2, "emb_h0_total"] += 0.05  # the discovery side only
    write(tmp_path, DISCOVERY, discovery)
    confirm(tmp_path)
    assert hyps_path.read_bytes() != frozen  # its hash and discovery numbers, the same hit
    assert pd.read_csv(hyps_path)["feature"].tolist() == ["emb_h0_total"]
    third = pd.read_csv(conf_path)
    through = [c for c in third if c.startswith("discovery_") or c == "hypotheses_sha256"]
    assert third.drop(columns=through).equals(second.drop(columns=through))
    assert not third[through].equals(second[through])
