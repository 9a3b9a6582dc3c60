"""The preflight: before any job, can the Hugging Face hub or its cache serve the corpus and Pythia?

Unit tests call topotrain.hub on fabricated caches; workflow tests run Snakemake on the tiny config
with an empty HF_HOME and a hub endpoint that refuses connections (port 9: refused at once).
"""

from __future__ import annotations

import http.server
import threading
import time
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, planned_counts, run_snakemake, tiny_config, write_corpus
from test_corpus import make_hf_dataset_cache

from benchmarks.hub_cache import make_tiny_neox_cache
from topotrain import hub
from topotrain.config import fill_defaults
from topotrain.hub import HubUnavailable, check_hub, hub_needs, preflight_problems

REFUSED = "http://127.0.0.1:9"
MODEL = "EleutherAI/pythia-tiny"
DATASET_COMMAND = (
    "huggingface-cli download Salesforce/wikitext --repo-type dataset "
    "--include 'wikitext-2-raw-v1/*'"
)
PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def study_config(tmp_path: Path, source: str = "huggingface", pythia: dict | None = None) -> dict:
    """The tiny study, its corpus from the hub (or files), with a Pythia section (or none)."""
    train, valid = write_corpus(tmp_path, n_chars=2_000)
    config = tiny_config(train, valid)
    if source == "huggingface":
        config["corpus"] = {"source": "huggingface"}
    if pythia is not None:
        config["pythia"] = pythia
    return fill_defaults(config)  # as the workflow does before the preflight


def pythia_section(models: list[str], steps: list[int]) -> dict:
    """config.yaml's Pythia branch, enabled, with these models and steps for both parts."""
    section = yaml.safe_load((ROOT / "config.yaml").read_text())["pythia"]
    for part in ("weights", "embeddings"):
        section[part].update(models=models, steps=steps)
    section["embeddings"]["device"] = "cpu"
    return dict(section, enabled=True)


@pytest.fixture
def no_hub(tmp_path, monkeypatch) -> Path:
    """An empty HF_HOME, online mode (HF_HUB_OFFLINE unset),
    the hub endpoint refusing connections."""
    hf_home = tmp_path / "hf"
    hf_home.mkdir()
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.setenv("HF_ENDPOINT", REFUSED)
    for var in ("HF_HUB_OFFLINE", "HF_HUB_CACHE", *PROXIES):
        monkeypatch.delenv(var, raising=False)
    return hf_home


@pytest.fixture
def probes(monkeypatch) -> list[str]:
    """The endpoints the preflight asks (hub.probe_hub still runs)."""
    asked, probe = [], hub.probe_hub
    monkeypatch.setattr(
        hub, "probe_hub", lambda endpoint: asked.append(endpoint) or probe(endpoint)
    )
    return asked


# ---- unit: topotrain.hub -------------------------------------------------------------------


def test_empty_cache_and_unreachable_hub_name_dataset_revisions_and_fixes(tmp_path, no_hub, probes):
    from topotrain.sources import corpus, pythia

    config = study_config(tmp_path, pythia=pythia_section(["EleutherAI/pythia-70m"], [0, 1000]))
    start = time.perf_counter()
    problems = preflight_problems(config)
    with pytest.raises(HubUnavailable) as err:
        check_hub(config)
    assert time.perf_counter() - start < 10
    assert probes == [REFUSED, REFUSED]  # one request per call
    assert problems[0].startswith(f"the hub {REFUSED} is unreachable (URLError")
    assert "dataset Salesforce/wikitext (wikitext-2-raw-v1)" in problems[1]
    assert problems[2].endswith("EleutherAI/pythia-70m step0, step1000")
    message = str(err.value)
    step1000 = "huggingface-cli download EleutherAI/pythia-70m --revision step1000"
    assert all(p in message for p in problems)
    assert DATASET_COMMAND in message and step1000 in message
    assert "--configfile workflow/configs/local-files.yaml" in message
    assert "--config pythia='{enabled: false}'" in message
    # the commands are those the jobs' own errors print
    assert DATASET_COMMAND in corpus.download_hint("Salesforce/wikitext", "wikitext-2-raw-v1")
    assert step1000 in pythia.download_hint("EleutherAI/pythia-70m", 1000)


def test_offline_with_empty_cache_fails_without_a_network_attempt(tmp_path, no_hub, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the preflight asked the hub although HF_HUB_OFFLINE=1")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub, "probe_hub", no_network)
    monkeypatch.setattr("urllib.request.urlopen", no_network)
    config = study_config(tmp_path, pythia=pythia_section([MODEL], [0, 1]))
    problems = preflight_problems(config)
    assert problems == [
        "HF_HUB_OFFLINE is set, so the hub is not asked",
        f"not in the HF cache {no_hub / 'hub'}: dataset Salesforce/wikitext (wikitext-2-raw-v1)",
        f"not in the HF cache {no_hub / 'hub'}: {MODEL} step0, step1",
    ]
    with pytest.raises(HubUnavailable, match="--revision step1"):
        check_hub(config)


def test_cache_holding_what_the_config_asks_for_needs_no_network(tmp_path, no_hub, probes):
    make_tiny_neox_cache(no_hub, model_id=MODEL, steps=(0, 1))
    make_hf_dataset_cache(no_hub, {"train": [" a\n"], "validation": [" b\n"]})
    config = study_config(tmp_path, pythia=pythia_section([MODEL], [0, 1]))
    assert preflight_problems(config) == [] and probes == []
    check_hub(config)  # the hub at REFUSED would fail it, had it been asked


def test_cache_check_agrees_with_the_jobs_resolvers(tmp_path, no_hub, monkeypatch):
    from topotrain.sources.corpus import CorpusError, hf_split_files
    from topotrain.sources.pythia import PythiaError, fetch_revision

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    make_tiny_neox_cache(no_hub, model_id=MODEL, steps=(0,))
    assert hub.revision_cached(MODEL, 0) and fetch_revision(MODEL, 0)["revision"] == "step0"
    assert not hub.revision_cached(MODEL, 1)
    with pytest.raises(PythiaError):
        fetch_revision(MODEL, 1)
    assert not hub.dataset_cached("Salesforce/wikitext", "wikitext-2-raw-v1")
    with pytest.raises(CorpusError):
        hf_split_files()
    make_hf_dataset_cache(no_hub, {"train": [" a\n"]})  # the validation split is missing
    assert not hub.dataset_cached("Salesforce/wikitext", "wikitext-2-raw-v1")
    with pytest.raises(CorpusError, match="no parquet files for split"):
        hf_split_files()


def test_many_missing_revisions_give_one_loop_per_model(tmp_path, no_hub):
    steps = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000]
    models = ["EleutherAI/pythia-70m", "EleutherAI/pythia-160m"]
    config = study_config(tmp_path, source="files", pythia=pythia_section(models, steps))
    with pytest.raises(HubUnavailable) as err:
        check_hub(config)
    commands = [line for line in str(err.value).splitlines() if "huggingface-cli download" in line]
    assert len(commands) == len(models)
    assert commands[0].strip() == (
        f"for rev in {' '.join(f'step{s}' for s in steps)}; do "
        "huggingface-cli download EleutherAI/pythia-70m --revision $rev; done"
    )
    assert "EleutherAI/pythia-160m step0, step1, step2, step4, … step1000 (12 revisions)" in str(
        err.value
    )


def test_files_corpus_without_pythia_checks_nothing(tmp_path, no_hub, monkeypatch):
    def untouched(*args, **kwargs):
        raise AssertionError("the preflight looked at the cache or the hub")

    monkeypatch.setattr(hub, "missing_from_cache", untouched)
    monkeypatch.setattr(hub, "probe_hub", untouched)
    no_steps = pythia_section([MODEL], [])
    for pythia in (None, dict(pythia_section([MODEL], [0]), enabled=False), no_steps):
        config = study_config(tmp_path, source="files", pythia=pythia)
        assert not hub_needs(config)
        assert preflight_problems(config) == []
        check_hub(config)


def test_a_hub_that_answers_lets_the_jobs_download(tmp_path, no_hub, monkeypatch, probes):
    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):  # any HTTP answer counts as reachable
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_port}"
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        config = study_config(tmp_path, pythia=pythia_section([MODEL], [0]))
        assert preflight_problems(config) == [] and probes == [endpoint]
    finally:
        server.shutdown()


# ---- workflow: Snakemake runs the preflight in the main process of a real run only ---------


def write_config(workdir: Path, config: dict) -> None:
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))


def newcomer_config(tmp_path: Path) -> dict:
    """The tiny study with config.yaml's corpus (from the hub) and Pythia branch (64 revisions)."""
    defaults = yaml.safe_load((ROOT / "config.yaml").read_text())
    config = study_config(tmp_path, pythia=dict(defaults["pythia"]))
    config["corpus"] = defaults["corpus"]
    config["pythia"]["embeddings"]["device"] = "cpu"
    return config


def test_real_run_without_hub_or_cache_stops_before_any_job(tmp_path, no_hub):
    write_config(tmp_path, newcomer_config(tmp_path))
    start = time.perf_counter()
    proc = run_snakemake(tmp_path, "--cores", "1", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert time.perf_counter() - start < 60
    assert "Preflight: the Hugging Face hub and its cache cannot serve this run" in out
    assert f"the hub {REFUSED} is unreachable" in out
    assert DATASET_COMMAND in out
    assert "do huggingface-cli download EleutherAI/pythia-70m --revision $rev; done" in out
    assert "--configfile workflow/configs/local-files.yaml" in out
    assert "--config pythia='{enabled: false}'" in out
    assert not (tmp_path / "results").exists()
    assert "rule prepare_corpus" not in out and "Error in rule" not in out
    assert "Traceback" not in out


def test_dry_run_plans_without_the_preflight(tmp_path, no_hub):
    write_config(tmp_path, newcomer_config(tmp_path))
    jobs = planned_counts(tmp_path)
    assert jobs["prepare_corpus"] == 1 and jobs["fetch_pythia"] == 64
    assert not (tmp_path / "results").exists()


def test_preflight_checks_only_what_the_requested_jobs_read(tmp_path, no_hub):
    """Files corpus, Pythia on but nothing cached: the corpus job alone needs no hub, and runs."""
    write_config(tmp_path, study_config(tmp_path, "files", pythia_section([MODEL], [0])))
    proc = run_snakemake(tmp_path, "--cores", "1", "results/corpus/manifest.json", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Preflight" not in proc.stdout + proc.stderr
    proc = run_snakemake(tmp_path, "--cores", "1", check=False)
    assert proc.returncode != 0 and f"{MODEL} step0" in proc.stdout + proc.stderr
    assert not (tmp_path / "results" / "pythia").exists()


def test_files_corpus_study_is_unaffected(tiny_workdir, no_hub):
    jobs = planned_counts(tiny_workdir)
    assert jobs["prepare_corpus"] == 1 and "fetch_pythia" not in jobs
    proc = run_snakemake(tiny_workdir, "--cores", "1", "results/corpus/manifest.json")
    assert "Preflight" not in proc.stdout + proc.stderr
