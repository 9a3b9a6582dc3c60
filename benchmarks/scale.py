"""Benchmark: one checkpoint's weight topology from 3 k to 1 B parameters, and Pythia-12B's
largest matrices on their own: seconds, peak memory and each kernel's share, in fresh processes.

Models, randomly initialised from their shapes (no download; N(0, 0.02) entries): the spine's
family (config.yaml; also its probe-batch gradient topology), GPT-2 small and medium, Pythia-410M's
and -1B's shapes, each written as one float32 safetensors file (with its config.json), one at a
time; and Pythia-12B's two MLP matrices (20480 × 5120, 5120 × 20480) in a file of their own.

- project: the checkpoint read one tensor at a time (``LazyTensors``) through the per-layer loop
  (the spine's job for its models; for the others the runs branch's layer map: rows are output
  neurons), 1 thread, then 2 threads where the layers are spread (``layers.spread_layers``);
- eager (reference, same run): the same loop on the whole state dict loaded first;
- read (reference): reading every analysed tensor once, the floor that loading sets.

Seconds are wall time, with the process's CPU seconds beside (other processes on a shared machine
inflate the first, hardly the second). Peak memory is the process's peak RSS (VmHWM);
``working_mb`` is that less the RSS after imports, set against the largest matrix's float32 size.
The kernel shares (NP, moments, subsample, distances, H0, H1, loading) come from CPU timers around
the loop's functions in the 1-thread project run. ``equal``: the project's records (1 and 2
threads) are the eager path's, diagrams too. ``--cost`` fits the cost model (docs/cost.md).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from benchmarks.scale_models import MODELS, shapes_of_model, write_checkpoint
from benchmarks.study import RESULTS
from topotrain.config import DEFAULTS, GPT_LAYERS

TOPO = {k: DEFAULTS["topology"][k] for k in ("max_points", "seed", "maxdim")}
PROBE = DEFAULTS["topology"]["gradients"]
KERNELS = {  # kernel → the (module, function) pairs of the per-layer loop it is timed around
    "np": [("topotrain.topology.layers", "spanning_pairs")],
    "moments": [
        ("topotrain.topology.layers", "norms"),
        ("topotrain.topology.layers", "normalised_variance"),
    ],
    "subsample": [("topotrain.topology.layers", "subsample_rows")],
    "distances": [("topotrain.topology.vietoris_rips", "pairwise_distances")],
    "h0": [("topotrain.topology.vietoris_rips", "h0_deaths")],
    "h1": [("topotrain.topology.vietoris_rips", "rips_higher")],
    "loading": [("topotrain.sources.tensors", "read_entry")],
}


# --- one measurement in a fresh process -----------------------------------------------------------


def analysed(spec: dict, lazy: bool):
    """(the matrices the path analyses, as a mapping, and the patterns that choose them)."""
    from topotrain.sources.checkpoint import load_tensors, open_checkpoint

    if spec["family"] == "spine":
        return (open_checkpoint if lazy else load_tensors)(spec["file"]), list(GPT_LAYERS)
    if spec["family"] == "matrix":
        return (open_checkpoint if lazy else load_tensors)(spec["file"]), ["*"]
    from topotrain.sources.architectures import WeightMap, oriented_matrices
    from topotrain.sources.weights import lazy_weights, read_weights

    maps = [WeightMap(**m) for m in spec["maps"]]
    read = lazy_weights if lazy else read_weights
    tensors = read([spec["file"]], "scale", names={m.name for m in maps})
    return oriented_matrices(maps, tensors, "scale"), ["*"]


def topology_path(spec: dict, totals: dict) -> tuple[list[dict], dict]:
    """The per-layer loop on the checkpoint: lazy (project) or loaded whole first (eager)."""
    from topotrain.topology.layers import layer_records

    start = time.thread_time()
    matrices, patterns = analysed(spec, lazy=spec["path"] == "project")
    if spec["path"] == "eager":
        totals["loading"] += time.thread_time() - start
    return layer_records(matrices, patterns, **TOPO, n_threads=spec["threads"], source="scale")


def read_path(spec: dict, totals: dict) -> tuple[list[dict], dict]:
    """Every analysed tensor read once (lazily) and dropped: what loading alone costs."""
    from topotrain.topology.layers import select_names

    matrices, patterns = analysed(spec, lazy=True)
    for name in select_names(matrices, patterns):
        totals["bytes"] += matrices[name].nbytes
    return [], {}


def gradients_path(spec: dict, totals: dict) -> tuple[list[dict], dict]:
    """The spine's gradient topology of the checkpoint (probe batch as configured)."""
    from topotrain.training.gradients import gradient_topology

    doc, diagrams = gradient_topology(
        spec["file"], spec["tokens"], GPT_LAYERS, PROBE["batch_size"], PROBE["seed"], TOPO
    )
    return doc["layers"], diagrams


def live_path(spec: dict, totals: dict) -> tuple[list[dict], dict]:
    """``topotrain.weight_topology(model)`` of the model loaded from the checkpoint's folder: the
    call alone is timed (``totals["call"]``), the model in memory throughout."""
    from transformers import AutoModelForCausalLM

    from topotrain.live import weight_topology

    model = AutoModelForCausalLM.from_pretrained(Path(spec["file"]).parent)
    start = time.perf_counter()
    out = weight_topology(model, per_layer=True, **TOPO)
    totals["call"] += time.perf_counter() - start
    return out["layers"], {}


def weightwatcher_path(spec: dict, totals: dict) -> tuple[list[dict], dict]:
    """WeightWatcher's metrics of the analysed matrices (``topology.weightwatcher``), the package
    imported beforehand (the workflow imports it once per training)."""
    from topotrain.baselines.weightwatcher import ww_layers
    from topotrain.topology.layers import select_names

    matrices, patterns = analysed(spec, lazy=True)
    ww_layers({name: matrices[name] for name in select_names(matrices, patterns)})
    return [], {}


def llc_path(spec: dict, totals: dict) -> tuple[list[dict], dict]:
    """The spine's LLC of the checkpoint (``baselines.llc`` at its defaults: devinterp's sampler,
    4 chains × 200 steps of 32 windows), devinterp imported beforehand."""
    from topotrain.training.llc import training_llc

    training_llc([spec["file"]], spec["tokens"], DEFAULTS["baselines"]["llc"])
    return [], {}


PATHS = {
    "llc": llc_path,
    "project": topology_path,
    "weightwatcher": weightwatcher_path,
    "eager": topology_path,
    "read": read_path,
    "gradients": gradients_path,
    "live": live_path,
}


def memory_mb(field: str) -> float:
    """A memory figure of this process from /proc/self/status, MB: "VmRSS" (resident now) or
    "VmHWM" (its peak; unlike ``ru_maxrss``, not inherited from the parent across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


PRELOAD = {  # modules a path imports, loaded before the memory baseline
    "live": ("torch", "transformers", "topotrain.live"),
    "gradients": ("torch", "topotrain.training.gradients"),
    "weightwatcher": ("torch", "weightwatcher", "topotrain.baselines.weightwatcher"),
    "llc": ("torch", "devinterp.slt.llc", "datasets", "topotrain.training.llc"),
}
TOPOLOGY_MODULES = (
    "topotrain.jobs.topology",
    "topotrain.sources.checkpoint",
    "topotrain.sources.weights",
)


def install_timers(totals: dict) -> None:
    """Wrap KERNELS' functions so each call adds its CPU seconds (its thread's: a count that
    other processes on the machine do not inflate) to ``totals[kernel]``."""
    lock = threading.Lock()

    def timed(fn, kernel):
        def wrapper(*args, **kwargs):
            start = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                with lock:
                    totals[kernel] += time.thread_time() - start

        return wrapper

    for kernel, targets in KERNELS.items():
        for module, name in targets:
            module = importlib.import_module(module)
            setattr(module, name, timed(getattr(module, name), kernel))


def child(spec_json: str) -> None:
    """Run one measurement (``spec["path"]``) and print its result as a line "RESULT {json}"."""
    import collections

    from topotrain.io import write_record

    spec = json.loads(spec_json)
    for module in PRELOAD.get(spec["path"], TOPOLOGY_MODULES):
        importlib.import_module(module)
    importlib.import_module("topotrain.topology.vietoris_rips").gph_kernel()  # giotto-ph's module
    totals = collections.defaultdict(float)
    if spec.get("timers"):
        install_timers(totals)
    base = memory_mb("VmRSS")
    load, start, cpu = os.getloadavg()[0], time.perf_counter(), time.process_time()
    records, diagrams = PATHS[spec["path"]](spec, totals)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = memory_mb("VmHWM")
    if spec.get("out"):
        doc = {"layers": records}
        write_record(spec["out"] + ".json", spec["out"] + ".npz", doc, diagrams)
    result = {"seconds": seconds, "cpu_s": cpu, "load": load, "peak_mb": peak, "base_mb": base}
    result |= totals
    print("RESULT " + json.dumps(result), flush=True)


# --- the parent: one row per model ------------------------------------------------------------


def spawn(spec: dict) -> dict:
    """``child(spec)`` in a fresh interpreter, BLAS at one thread (each worker single-threaded)."""
    code = "import sys; from benchmarks.scale import child; child(sys.argv[1])"
    env = {**os.environ, **{v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}}
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(spec)], capture_output=True, text=True, env=env
    )
    if done.returncode:
        raise RuntimeError(f"{spec['path']} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1].removeprefix("RESULT "))


def same_output(a: str, b: str) -> bool:
    """Whether two runs wrote the same records (JSON) and diagrams (npz, bit for bit)."""
    if json.loads(Path(a + ".json").read_text()) != json.loads(Path(b + ".json").read_text()):
        return False
    with np.load(a + ".npz") as x, np.load(b + ".npz") as y:
        return x.files == y.files and all(np.array_equal(x[k], y[k]) for k in x.files)


def analysed_shapes(name: str, spec: dict) -> list[tuple[int, int]]:
    """(rows, cols) of each matrix the path analyses."""
    shapes = shapes_of_model(name)
    if spec["family"] == "hf":
        return [shapes[m["name"]] for m in spec["maps"]]
    if spec["family"] == "spine":
        import fnmatch

        return [s for n, s in shapes.items() if any(fnmatch.fnmatch(n, p) for p in GPT_LAYERS)]
    return list(shapes.values())


def measure(name: str, spec: dict, threads: int, progress) -> dict:
    """The row of one model: project (1 and ``threads`` threads), eager, read, and the spine's
    gradients or GPT-2 small's live call where they apply."""
    from topotrain.topology.layers import spread_layers

    out = str(Path(spec["file"]).parent / "out")
    project = spawn({**spec, "path": "project", "threads": 1, "timers": True, "out": out + "1"})
    progress(f"scale {name}: project {project['seconds']:.2f} s, peak {project['peak_mb']:.0f} MB")
    eager = spawn({**spec, "path": "eager", "threads": 1, "out": out + "e"})
    progress(f"scale {name}: eager {eager['seconds']:.2f} s, peak {eager['peak_mb']:.0f} MB")
    read = spawn({**spec, "path": "read"})
    shapes = analysed_shapes(name, spec)
    row = {
        "project": project,
        "eager": eager,
        "read": read,
        "equal": same_output(out + "1", out + "e"),
    }
    if spread_layers(shapes, threads) > 1:
        row["spread"] = spawn({**spec, "path": "project", "threads": threads, "out": out + "t"})
        row["equal"] = row["equal"] and same_output(out + "1", out + "t")
        progress(f"scale {name}: {threads} threads {row['spread']['seconds']:.2f} s")
    row["weightwatcher"] = spawn({**spec, "path": "weightwatcher"})
    progress(f"scale {name}: WeightWatcher {row['weightwatcher']['seconds']:.2f} s")
    if spec["family"] == "spine":
        row["gradients"] = spawn({**spec, "path": "gradients"})
        if importlib.util.find_spec("devinterp"):  # the llc extra
            row["llc"] = spawn({**spec, "path": "llc"})
            progress(f"scale {name}: LLC {row['llc']['seconds']:.2f} s")
    if name == "gpt2-small":
        row["live"] = spawn({**spec, "path": "live"})
        progress(f"scale {name}: weight_topology(model) {row['live']['call']:.2f} s")
    return summary(name, shapes, threads, row)


def summary(name: str, shapes: list, threads: int, runs: dict) -> dict:
    """The flat row of ``measure``'s runs: seconds, memory, ratios and kernel shares."""
    project, eager = runs["project"], runs["eager"]
    largest = 4 * max(r * c for r, c in shapes) / 2**20  # MB, float32
    row = {
        "benchmark": "scale",
        "model": name,
        "params": sum(math.prod(s) for s in shapes_of_model(name).values()),
        "matrices": len(shapes),
        "entries": sum(r * c for r, c in shapes),
        "points_dims": sum(min(r, TOPO["max_points"]) ** 2 * c for r, c in shapes),  # Σ n²·C
        "largest_mb": largest,
        "project_s": project["seconds"],
        "project_cpu_s": project["cpu_s"],
        "load_avg": project["load"],  # other processes on the machine at the start
        "eager_s": eager["seconds"],
        "read_s": runs["read"]["seconds"],
        "peak_mb": project["peak_mb"],
        "eager_peak_mb": eager["peak_mb"],
        "base_mb": project["base_mb"],
        "working_mb": project["peak_mb"] - project["base_mb"],
        "working_over_largest": (project["peak_mb"] - project["base_mb"]) / largest,
        "equal": runs["equal"],
    }
    kernels = {k: project.get(k, 0.0) / project["cpu_s"] for k in KERNELS}
    row |= {f"share_{k}": v for k, v in kernels.items()}
    row["share_other"] = 1.0 - sum(kernels.values())
    if "spread" in runs:
        row |= {"threads": threads, "threads_s": runs["spread"]["seconds"]}
        row["thread_speedup"] = project["seconds"] / runs["spread"]["seconds"]
        row["threads_cores_used"] = runs["spread"]["cpu_s"] / runs["spread"]["seconds"]
    ww = runs["weightwatcher"]
    row |= {"ww_s": ww["seconds"], "ww_peak_mb": ww["peak_mb"], "ww_over_project": ww["seconds"]}
    row["ww_over_project"] /= project["seconds"]
    if "gradients" in runs:
        row |= {"gradients_s": runs["gradients"]["seconds"]}
        row["gradients_peak_mb"] = runs["gradients"]["peak_mb"]
    if "llc" in runs:  # one checkpoint's LLC against its topology, same run
        row |= {"llc_s": runs["llc"]["seconds"], "llc_cpu_s": runs["llc"]["cpu_s"]}
        row["llc_over_project"] = runs["llc"]["seconds"] / project["seconds"]
    if "live" in runs:
        row |= {"live_s": runs["live"]["call"], "live_peak_mb": runs["live"]["peak_mb"]}
    return row


def chosen(models: list[str] | None, max_params: float | None) -> list[str]:
    """MODELS to run: those named (default all) with at most ``max_params`` parameters."""
    names = models or list(MODELS)
    limit = math.inf if max_params is None else max_params
    return [n for n in names if sum(map(math.prod, shapes_of_model(n).values())) <= limit]


def run(models=None, max_params: float | None = None, threads: int = 2, progress=print) -> list:
    """One row per model, each checkpoint written, measured and deleted before the next."""
    rows = []
    for name in chosen(models, max_params):
        with tempfile.TemporaryDirectory(prefix="scale-") as tmp:
            start = time.perf_counter()
            spec = write_checkpoint(name, Path(tmp))
            progress(f"scale {name}: written in {time.perf_counter() - start:.1f} s")
            rows.append(measure(name, spec, threads, progress))
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks scale [--models …] [--max-params N] [--threads T]``: the rows,
    written to benchmarks/results/scale.json; exit status 1 where a path's records differ."""
    from benchmarks.suite import environment, format_row, say

    parser = argparse.ArgumentParser(prog="python -m benchmarks scale", description=__doc__)
    parser.add_argument("--models", nargs="+", choices=list(MODELS))
    parser.add_argument("--max-params", type=float, help="skip larger models, e.g. 2e8")
    parser.add_argument("--threads", type=int, default=2, help="threads of the spread run")
    parser.add_argument(
        "--cost", action="store_true", help="only the cost model fitted to scale.json's rows"
    )
    args = parser.parse_args(argv)
    if args.cost:
        from benchmarks.scale_cost import markdown

        print(markdown(json.loads((RESULTS / "scale.json").read_text())["rows"]))
        return 0
    start = time.perf_counter()
    rows = run(args.models, args.max_params, args.threads, progress=say)
    doc = {"environment": environment(), "seconds": time.perf_counter() - start, "rows": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "scale.json").write_text(json.dumps(doc, indent=1) + "\n")
    for row in rows:
        print(format_row(row))
    return 0 if all(row["equal"] for row in rows) else 1
