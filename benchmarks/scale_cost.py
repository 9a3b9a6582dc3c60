"""The cost model fitted to the scale benchmark's rows, and what the full Pythia suite would cost.

Per checkpoint, one thread: seconds ≈ a·Σ(R·C) + b·Σ(n²·C) + c·(#matrices), over its analysed
matrices (R × C, n = min(R, max_points) Rips points): a for the passes over every weight (loading,
moments, NP's first Borůvka round and the stars' Prim), b for the distances, c for H0, H1 and the
rest per matrix. Each is fitted to its own kernels' CPU seconds (one thread: the wall time of an
idle machine), by least relative squares through 0.
Peak memory ≈ the interpreter + k · the largest matrix (float32 bytes).
"""

from __future__ import annotations

import numpy as np

PYTHIA = {  # size → (d_model, layers, vocabulary): the public configs (intermediate 4·d_model)
    "70m": (512, 6, 50304),
    "160m": (768, 12, 50304),
    "410m": (1024, 24, 50304),
    "1b": (2048, 16, 50304),
    "1.4b": (2048, 24, 50304),
    "2.8b": (2560, 32, 50304),
    "6.9b": (4096, 32, 50432),
    "12b": (5120, 36, 50688),
}
REVISIONS = 154  # step0, 1, 2, 4, …, 512, then every 1000 to 143000
KERNELS = {  # coefficient → the benchmark's kernel shares it is fitted to, and its feature
    "per_entry_s": (("np", "moments", "loading"), "entries"),
    "per_point_dim_s": (("distances",), "points_dims"),
    "per_matrix_s": (("h0", "h1", "subsample", "other"), "matrices"),
}


def fit(rows: list[dict]) -> dict[str, float]:
    """The coefficients (seconds per unit of each feature), and the working memory (peak less the
    interpreter) as fixed MB + k · the largest matrix's MB, fitted to the benchmark's rows."""
    coefs = {}
    for coef, (kernels, feature) in KERNELS.items():
        pairs = [
            (r[feature], sum(r[f"share_{k}"] for k in kernels) * r["project_cpu_s"]) for r in rows
        ]
        pairs = [(x, y) for x, y in pairs if x > 0 and y > 0]
        coefs[coef] = sum(x / y for x, y in pairs) / sum((x / y) ** 2 for x, y in pairs)
    sized = [r for r in rows if r["largest_mb"] >= 1]  # below, the fixed buffers are all there is
    slope, fixed = np.polyfit([r["largest_mb"] for r in sized], [r["working_mb"] for r in sized], 1)
    coefs |= {"memory_k": slope, "memory_fixed_mb": fixed}
    coefs["base_mb"] = min(r["base_mb"] for r in rows)
    return coefs


def predict(coefs: dict, entries: float, points_dims: float, matrices: int) -> float:
    """Seconds of one checkpoint at one thread (the process's own start not included)."""
    return (
        coefs["per_entry_s"] * entries
        + coefs["per_point_dim_s"] * points_dims
        + coefs["per_matrix_s"] * matrices
    )


def peak_mb(coefs: dict, largest_mb: float) -> float:
    """Peak RSS of a one-thread job whose largest matrix is ``largest_mb`` (float32)."""
    return coefs["base_mb"] + coefs["memory_fixed_mb"] + coefs["memory_k"] * largest_mb


def checked(coefs: dict, rows: list[dict]) -> list[str]:
    """Markdown rows: each benchmark row's measured CPU seconds and peak against the model's."""
    lines = ["| model | CPU s | model s | peak MB | model MB |", "|---|---|---|---|---|"]
    for r in rows:
        if r["params"] < 1e6:
            continue
        s = predict(coefs, r["entries"], r["points_dims"], r["matrices"])
        lines.append(
            f"| {r['model']} | {r['project_cpu_s']:.2f} | {s:.2f} | {r['peak_mb']:.0f} "
            f"| {peak_mb(coefs, r['largest_mb']):.0f} |"
        )
    return lines


def pythia_revision(size: str, max_points: int = 200) -> dict:
    """Parameters, analysed matrices and features of one revision of a Pythia size (the four
    linear maps per layer: qkv 3d × d, dense d × d, h→4h 4d × d, 4h→h d × 4d)."""
    d, layers, vocab = PYTHIA[size]
    shapes = [(3 * d, d), (d, d), (4 * d, d), (d, 4 * d)] * layers
    n = min(d, max_points)
    return {
        "params": 2 * vocab * d + layers * (12 * d * d + 13 * d) + 2 * d,
        "matrices": len(shapes),
        "entries": sum(r * c for r, c in shapes),
        "points_dims": sum(n * n * c for _, c in shapes),
        "largest_mb": 4 * 4 * d * d / 2**20,
    }


def suite_rows(coefs: dict, start_s: float = 0.2) -> list[dict]:
    """Per Pythia size, all REVISIONS: fp16 bytes to fetch, seconds per revision at one thread
    (``start_s``: a job's interpreter and imports), CPU-hours, peak memory per job."""
    rows = []
    for size in PYTHIA:
        rev = pythia_revision(size)
        seconds = start_s + predict(coefs, rev["entries"], rev["points_dims"], rev["matrices"])
        rows.append(
            {
                "size": size,
                "params": rev["params"],
                "fetch_gb": 2 * rev["params"] * REVISIONS / 1e9,
                "revision_s": seconds,
                "cpu_hours": seconds * REVISIONS / 3600,
                "peak_mb": peak_mb(coefs, rev["largest_mb"]),
            }
        )
    return rows


def wall_hours(rows: list[dict], nodes: int, cores: int, jobs: int = 100) -> float:
    """Hours for every revision's topology job (one thread each) on ``nodes`` nodes of ``cores``
    cores, at most ``jobs`` at once (the SLURM profile's ``jobs``): the CPU-hours over the jobs
    that run at once, and never less than the longest job."""
    at_once = min(jobs, nodes * cores)
    total = sum(r["cpu_hours"] for r in rows)
    return max(total / at_once, max(r["revision_s"] for r in rows) / 3600)


def markdown(measured: list[dict], nodes=(1, 4, 16), cores: int = 32) -> str:
    """The fit, its check against the rows, and the suite estimate as markdown (docs/cost.md)."""
    coefs = fit(measured)
    rows = suite_rows(coefs)
    lines = [
        f"a = {coefs['per_entry_s'] * 1e9:.2f} ns per weight, "
        f"b = {coefs['per_point_dim_s'] * 1e9:.3f} ns per n²·C, "
        f"c = {coefs['per_matrix_s'] * 1e3:.1f} ms per matrix; peak = interpreter "
        f"{coefs['base_mb']:.0f} MB + {coefs['memory_fixed_mb']:.0f} MB "
        f"+ {coefs['memory_k']:.2f} × the largest matrix",
        "",
        *checked(coefs, measured),
        "",
        "| size | parameters | fp16 to fetch (154 revisions) | s per revision | CPU-hours "
        "| peak memory per job |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['size']} | {r['params'] / 1e9:.3g} B | {r['fetch_gb']:,.0f} GB "
            f"| {r['revision_s']:.1f} | {r['cpu_hours']:.2f} | {r['peak_mb']:,.0f} MB |"
        )
    total = sum(r["cpu_hours"] for r in rows)
    fetch = sum(r["fetch_gb"] for r in rows)
    lines.append(f"| all | | {fetch:,.0f} GB | | {total:.1f} | |")
    walls = ", ".join(f"{n} node{'s' * (n > 1)}: {wall_hours(rows, n, cores):.2f} h" for n in nodes)
    lines += ["", f"Wall time of the topology jobs ({cores}-core nodes, ≤ 100 jobs): {walls}"]
    return "\n".join(lines)
