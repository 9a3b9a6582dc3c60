"""End to end: the Snakemake workflow on a tiny two-model study,
and config errors before any job."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import planned_counts, run_snakemake, tiny_config, write_corpus

import topotrain
from topotrain.config import config_hash, fill_defaults, n_params
from topotrain.report.header import provenance_line
from topotrain.topology.vietoris_rips import resolve_engine

ENGINE = resolve_engine()  # what topology.engine: auto means here
OTHER_ENGINE = "ripser" if ENGINE == "giotto-ph" else "giotto-ph"

TOPO_COLUMNS = [
    "np_mean",
    "np_std",
    "np_p2_mean",
    "h0_total",
    "h1_total",
    "h0_count",
    "h1_count",
    "h0_entropy_mean",
    "h1_entropy_mean",
    "h0_max",
    "h1_max",
    "h0_total_scalefree",
    "h1_total_scalefree",
    "h0_entropy_scalefree_mean",
    "h0_max_scalefree",
    "h0_mean_bar",
    "h0_mean_bar_scalefree",
]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """Run the tiny study once for the whole module."""
    workdir = tmp_path_factory.mktemp("tiny-study")
    train, valid = write_corpus(workdir)
    config = tiny_config(train, valid)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    proc = run_snakemake(workdir, "--cores", "2")
    return workdir, config, proc


def test_tiny_study_writes_one_row_per_checkpoint(tiny_run):
    workdir, config, _ = tiny_run
    table = pd.read_parquet(workdir / "results/features/weights.parquet")
    assert len(table) == 2 * 5  # two models × checkpoints at 0, 10, 20, 30, 40
    assert table.equals(pd.read_csv(workdir / "results/features/weights.csv").astype(table.dtypes))
    for name, arch in config["models"].items():
        rows = table[table["model"] == name].sort_values("step")
        assert rows["step"].tolist() == [0, 10, 20, 30, 40]
        assert rows["frac"].tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
        assert (rows["n_params"] == n_params(arch["d_model"], arch["n_layer"], 128, 32)).all()
        assert rows["val_loss"].iloc[-1] < rows["val_loss"].iloc[0] - 0.3  # training learns
        assert rows["train_loss"].iloc[-1] < rows["train_loss"].iloc[0]
        assert rows["val_loss"].iloc[0] == pytest.approx(np.log(128), abs=0.15)
    values = table[["train_loss", "val_loss", "grad_norm", *TOPO_COLUMNS]].to_numpy(float)
    assert np.isfinite(values).all()
    assert set(table["engine"]) == {ENGINE}  # the Rips engine that computed every record
    assert (table["n_layers"] == 4).all() and (table["np_mean"] > 0).all()
    assert (table["h0_count"] > 0).all()


def test_weightwatcher_columns_are_its_metrics_of_each_checkpoint(tiny_run):
    """ww_* columns: WeightWatcher on each checkpoint's analysed matrices, read here from the
    safetensors file (tiny models: 8 and 16 eigenvalues, every fit a small one)."""
    from safetensors.numpy import load_file

    from topotrain.baselines.weightwatcher import ww_layers

    workdir, config, _ = tiny_run
    table = pd.read_parquet(workdir / "results/features/weights.parquet")
    layers = pd.read_parquet(workdir / "results/features/weights_layers.parquet")
    assert set(layers["ww_fit"]) == {"small"} and (table["ww_small_layers"] == 4).all()
    for model in config["models"]:
        row = table[(table["model"] == model) & (table["step"] == 40)].iloc[0]
        path = workdir / f"results/checkpoints/{model}/seed42/step_00040.safetensors"
        tensors = load_file(str(path))
        names = [n for n in layers[layers["model"] == model]["layer"].unique()]
        direct = ww_layers({n: tensors[n] for n in names})
        for metric in ("alpha", "stable_rank", "log_spectral_norm"):
            expected = np.mean([r[metric] for r in direct])
            assert row[f"ww_{metric}_mean"] == pytest.approx(expected, rel=1e-6)


def test_layer_table_matches_the_checkpoint_records(tiny_run):
    workdir, _, _ = tiny_run
    layers = pd.read_parquet(workdir / "results/features/weights_layers.parquet")
    table = pd.read_parquet(workdir / "results/features/weights.parquet")
    assert len(layers) == 10 * 4
    assert set(layers["layer"]) == {
        "transformer.h.0.attn.c_attn.weight",
        "transformer.h.0.attn.c_proj.weight",
        "transformer.h.0.mlp.c_fc.weight",
        "transformer.h.0.mlp.c_proj.weight",
    }
    summed = ["h0_total", "h0_total_scalefree"]
    sums = layers.groupby(["model", "seed", "step"])[summed].sum().reset_index()
    merged = table.merge(sums, on=["model", "seed", "step"], suffixes=("", "_layers"))
    for col in summed:
        np.testing.assert_allclose(merged[col], merged[f"{col}_layers"])
    means = layers.groupby(["model", "seed", "step"])["np_total"].mean().reset_index()
    merged = table.merge(means, on=["model", "seed", "step"])
    np.testing.assert_allclose(merged["np_mean"], merged["np_total"])


def test_checkpoints_diagrams_and_logs_are_written(tiny_run):
    workdir, _, _ = tiny_run
    run = workdir / "results/checkpoints/tiny-a/seed42"
    assert sorted(p.name for p in run.glob("*.safetensors")) == [
        f"step_{s:05d}.safetensors" for s in (0, 10, 20, 30, 40)
    ]
    diagrams = np.load(workdir / "results/topology/tiny-a/seed42/step_00040.npz")
    assert "transformer.h.0.mlp.c_fc.weight/h0" in diagrams.files
    log = (workdir / "results/logs/prepare_corpus.log").read_text()
    assert "non-ASCII replaced" in log


def test_second_run_has_nothing_to_do(tiny_run):
    workdir, _, _ = tiny_run
    proc = run_snakemake(workdir, "-n", "--cores", "2")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_a_knob_given_on_the_command_line_at_its_file_value_reruns_nothing(tiny_run):
    """--config puts its keys first and as strings; coerced and reordered, the rule params equal
    the file's, so Snakemake's params trigger sees no change."""
    workdir, config, _ = tiny_run
    steps, lr = config["train"]["steps"], config["train"]["lr"]
    given = f"train={{lr: {lr}, steps: {steps}}}"
    assert planned_counts(workdir, "--config", given, "seeds=[42]") == {}


@pytest.mark.parametrize(
    "section, key, value, message",
    [
        ("train", "stepz", 10, "Additional properties are not allowed"),
        ("train", "steps", -40, "-40 is less than the minimum"),
        ("models", "tiny-b", {"d_model": 16, "n_layer": 1, "n_head": 3}, "does not divide"),
        ("train", "checkpoint_interval", 15, "does not divide train.steps=40"),
    ],
)
def test_bad_config_fails_before_any_job(tmp_path, section, key, value, message):
    train, valid = write_corpus(tmp_path, n_chars=2_000)
    config = copy.deepcopy(tiny_config(train, valid))
    config[section][key] = value
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    proc = run_snakemake(tmp_path, "--cores", "1", check=False)
    assert proc.returncode != 0
    assert message in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists()


TABLES = [
    "models",
    "correlations",
    "correlations_across_seeds",
    "best_feature",
    "scaling",
    "prediction",
    "prediction_runs",
    "phases",
    "associations",
    "associations_summary",
    "replication",
    "stopping",
    "stopping_summary",
    "velocity",
    "velocity_summary",
    "layer_types",
    "layer_types_summary",
    "primary",
    "power",
]
FIGURES = [
    "overview",
    "loss_curves",
    "np_evolution",
    "homology_evolution",
    "correlation_heatmap",
    "prediction_mae",
    "scaling_fits",
    "stopping",
    "layer_types",
]


def test_analysis_tables_figures_and_report_are_written(tiny_run):
    workdir, config, _ = tiny_run
    results = workdir / "results"
    for name in TABLES:
        table = pd.read_csv(results / "tables" / f"{name}.csv")
        assert len(table) > 0, name
        assert (results / "tables" / f"{name}.md").read_text().count("|") > 4, name
    for name in FIGURES:
        assert (results / "figures" / f"{name}.png").read_bytes()[:4] == b"\x89PNG", name
        assert (results / "figures" / f"{name}.pdf").read_bytes()[:4] == b"%PDF", name
    corr = pd.read_csv(results / "tables" / "correlations.csv")
    assert set(corr["model"]) == set(config["models"])
    report = (results / "REPORT.md").read_text()
    sha = config_hash(fill_defaults(yaml.safe_load((workdir / "config.yaml").read_text())))
    assert report.split("\n\n")[1] == provenance_line(topotrain.__version__, sha, ENGINE).strip()
    assert "## Which feature tracks loss best" in report and "## Scaling with model size" in report
    diagnostics = pd.read_csv(results / "tables" / "diagnostics.csv")
    assert set(diagnostics["kind"]) == {"topological", "weightwatcher", "baseline"}  # grad_norm
    assert "## Topology beside the field's weight diagnostics" in report
    assert "As a training monitor, WeightWatcher's α" in report  # one seed: no contrast
    sections = [line for line in report.splitlines() if line.startswith("## ")]
    assert sections[:3] == ["## Bottom line", "## Replication of the paper's claims", "## Findings"]
    bottom = report.split("## Bottom line")[1].split("## Replication")[0]
    assert "**Does topology improve the prediction of the final loss?**" in bottom
    assert "track training loss" not in bottom  # none of the paper's models: not evaluated
    replication = pd.read_csv(results / "tables" / "replication.csv")
    assert set(replication["verdict"]) <= {
        "reproduced",
        "not reproduced",
        "inconclusive",
        "artefact",
        "not evaluated",
        "explained by the clock",
        "explained by the norm",
        "undecided",
    }
    # the tiny study trains none of the paper's models and has no Pythia branch
    per_model = replication[replication["claim"].str.startswith("ρ(TP0, train loss) ")]
    assert set(per_model["verdict"]) == {"not evaluated"}


def test_the_html_report_opens_in_chromium_with_every_figure_loaded(tiny_run, tmp_path):
    """Snakemake's report.html in headless Chromium (Debian's chromium-headless-shell; skipped
    where absent): it opens on the bottom line's heading and table, whole in a 1280 × 800 window,
    and the forest begun in it, the rule graph behind a click (and no demo banner: the test study
    is no demo); the report's app shows every image result loaded (natural size > 0), the
    answer's figures among them; the bottom line's page has its table of questions and its
    embedded forest loaded. A copy with one figure's bytes corrupted shows that image broken."""
    from browser import check_report, find_browser, first_screen

    browser = find_browser()
    if browser is None:
        pytest.skip("no headless Chromium here (Debian: apt-get install chromium-headless-shell)")
    workdir, _, _ = tiny_run
    run_snakemake(workdir, "--report", "report.html")
    front = first_screen(workdir / "report.html", browser, tmp_path / "profile0")
    width, height = front["viewport"]
    for left, top, right, bottom in (front["heading"], front["table"]):
        assert 0 <= left < right <= width and 0 <= top < bottom <= height, front
    assert front["forest"][4] > 0 and 0 <= front["forest"][1] < height, front
    assert not front["graph_shown"] and front["graph_after_click"] and front["banner"] is None
    seen = check_report(workdir / "report.html", browser, tmp_path / "profile")
    assert seen["app"]
    images = seen["images"]
    assert {f"results/figures/{n}.png" for n in ("effects_forest", "overview")} <= set(images)
    assert any(p.startswith("results/figures/between_seeds_") for p in images)
    broken = {p: v for p, v in images.items() if not (v and v[0] and v[1] > 0 and v[2] > 0)}
    assert not broken, broken
    bottom = seen["html"]["results/bottom_line.html"]
    assert bottom["tables"][0][1] == "QuestionVerdictsClaims"  # the header row's text
    assert bottom["tables"][0][0] >= 2  # the header and at least one question
    assert bottom["images"] and all(v[0] and v[1] > 0 for v in bottom["images"])

    html = (workdir / "report.html").read_text()
    payload = "data:image/png;charset=utf8;filename=effects_forest.png;base64,"
    at = html.index(payload) + len(payload)  # its result's data URI (Snakemake 9's form)
    corrupted = tmp_path / "corrupted.html"
    corrupted.write_text(html[:at] + "AAAA" * 50 + html[at + 200 :])
    seen = check_report(corrupted, browser, tmp_path / "profile2")
    assert sum(not v or v[1] == 0 for v in seen["images"].values()) == 1


PER_RUN = {"aggregate_run": 2, "run_views": 2}  # each run's tables and rows (2 models × 1 seed)
ANALYSIS_JOBS = {
    "models_table": 1,
    "correlations": 1,
    "associations": 1,
    "scaling_fits": 1,
    "predict_final_loss": 1,
    "phase_transitions": 1,
    "training_figures": 1,
    "analysis_figures": 1,
    "answer_figures": 1,
    "primary_family": 1,
    "replication": 1,
    "power": 1,
    "report_markdown": 1,
    "all": 1,
    "stopping_rules": 1,
    "velocity": 1,
    "layer_types": 1,
}


def plan_with_overlay(workdir, text: str) -> dict[str, int]:
    """Jobs per rule ``snakemake -n`` plans after layering ``text`` (YAML) over config.yaml."""
    overlay = workdir / "overlay.yaml"
    overlay.write_text(text)
    return planned_counts(workdir, "--configfile", str(workdir / "config.yaml"), str(overlay))


def test_changing_an_analysis_parameter_reruns_only_analysis(tiny_run):
    workdir, _, _ = tiny_run
    jobs = plan_with_overlay(workdir, "analysis:\n  bootstrap_resamples: 300\n")
    assert jobs == {
        "run_views": 2,  # each run's rows: resampled
        "correlations": 1,
        "associations": 1,
        "layer_types": 1,
        "analysis_figures": 1,
        "answer_figures": 1,
        "replication": 1,
        "report_markdown": 1,
        "all": 1,
    }


def test_changing_the_probe_batch_reruns_only_gradient_topology_and_downstream(tiny_run):
    workdir, _, _ = tiny_run
    for overlay in ("batch_size: 8", "seed: 3"):
        jobs = plan_with_overlay(
            workdir, f"topology:\n  gradients:\n    enabled: true\n    {overlay}\n"
        )
        assert jobs == {
            "gradient_topology": 2,
            **PER_RUN,
            "aggregate_features": 1,
            **ANALYSIS_JOBS,
        }
    features = pd.read_parquet(workdir / "results" / "features" / "weights.parquet")
    for col in ("grad_np_mean", "grad_h0_total", "grad_h1_total", "grad_l2_norm_mean"):
        assert features[col].notna().all(), col
    layers = pd.read_parquet(workdir / "results" / "features" / "weights_layers.parquet")
    assert layers["grad_np_total"].notna().all()
    assoc = pd.read_csv(workdir / "results" / "tables" / "associations.csv")
    assert "grad_h0_total" in set(assoc["feature"])  # a row in the analyses like any feature
    corr = pd.read_csv(workdir / "results" / "tables" / "correlations.csv")
    assert "grad_np_mean" in set(corr["feature"])


def test_changing_a_series_parameter_reruns_the_series_and_downstream_only(tiny_run):
    workdir, _, _ = tiny_run
    jobs = plan_with_overlay(workdir, "topology:\n  series:\n    n_landscapes: 2\n")
    assert jobs == {"diagram_series": 2, **PER_RUN, "aggregate_features": 1, **ANALYSIS_JOBS}
    features = pd.read_parquet(workdir / "results" / "features" / "weights.parquet")
    for col in (
        "h0_w1_step",
        "h0_bottleneck_step",
        "h0_landscape_l2",
        "h0_image_mass",
        "h0_betti_auc",
        "h1_w1_step",
        "np_rieck_mean",
    ):
        assert col in features, col
    first = features.groupby(["model", "seed"])["step"].transform("min") == features["step"]
    assert features.loc[first, "h0_w1_step"].isna().all()  # no previous checkpoint
    assert features.loc[~first, "h0_w1_step"].notna().all()


def test_changing_a_stopping_rule_reruns_only_the_stopping_table_and_report(tiny_run):
    workdir, _, _ = tiny_run
    jobs = plan_with_overlay(workdir, "analysis:\n  stopping:\n    topology_patience: 3\n")
    assert jobs == {"stopping_rules": 1, "report_markdown": 1, "all": 1}
    stopping = pd.read_csv(workdir / "results" / "tables" / "stopping.csv")
    features = pd.read_parquet(workdir / "results" / "features" / "weights.parquet")
    runs = features.groupby(["model", "seed"]).ngroups
    assert len(stopping) == runs * stopping["rule"].nunique()  # every run, every rule
    assert stopping["stop_step"].le(stopping["final_step"]).all()


@pytest.mark.parametrize(
    "overlay",
    [
        "topology:\n  max_points: 30\n",
        "topology:\n  layers: ['transformer.h.*.mlp.c_fc.weight']\n",
        "topology:\n  include_embeddings: true\n",
        f"topology:\n  engine: {OTHER_ENGINE}\n",  # the engine auto did not pick
    ],
)
def test_changing_a_topology_parameter_reruns_topology_and_downstream_only(tiny_run, overlay):
    workdir, _, _ = tiny_run
    jobs = plan_with_overlay(workdir, overlay)
    matrices = "layers" in overlay or "embeddings" in overlay  # WeightWatcher's too
    assert jobs == {
        "weight_topology": 2 * 5,
        "gradient_topology": 2,
        "diagram_series": 2,
        **({"weightwatcher": 2} if matrices else {}),
        **PER_RUN,
        "aggregate_features": 1,
        **ANALYSIS_JOBS,
    }


def test_weightwatcher_off_drops_its_jobs_and_columns_only(tiny_run):
    workdir, _, _ = tiny_run
    jobs = plan_with_overlay(workdir, "topology:\n  weightwatcher: false\n")
    assert jobs == {**PER_RUN, "aggregate_features": 1, **ANALYSIS_JOBS}
    assert "weightwatcher" not in run_snakemake(workdir, "-n", "--cores", "1").stdout


def test_adding_a_model_trains_and_analyses_only_that_model(tiny_run):
    workdir, config, _ = tiny_run
    models = {**config["models"], "tiny-c": {"d_model": 12, "n_layer": 1, "n_head": 2}}
    jobs = plan_with_overlay(workdir, yaml.safe_dump({"models": models}))
    assert jobs == {
        "train_model": 1,
        "weight_topology": 5,
        "gradient_topology": 1,
        "diagram_series": 1,
        "weightwatcher": 1,
        "aggregate_run": 1,  # the new model's run: the others' tables and rows stand
        "run_views": 1,
        "aggregate_features": 1,
        **ANALYSIS_JOBS,
    }
    proc = run_snakemake(
        workdir,
        "-n",
        "--cores",
        "1",
        "--configfile",
        str(workdir / "config.yaml"),
        str(workdir / "overlay.yaml"),
    )
    assert "wildcards: model=tiny-c, seed=42" in proc.stdout
    assert "model=tiny-a" not in proc.stdout and "model=tiny-b" not in proc.stdout


def test_adding_a_seed_trains_only_the_new_runs(tiny_run):
    workdir, _, _ = tiny_run
    jobs = plan_with_overlay(workdir, "seeds: [42, 7]\n")
    assert jobs == {
        "train_model": 2,
        "weight_topology": 2 * 5,
        "gradient_topology": 2,
        "diagram_series": 2,
        "weightwatcher": 2,
        **PER_RUN,
        "aggregate_features": 1,
        **ANALYSIS_JOBS,
    }
