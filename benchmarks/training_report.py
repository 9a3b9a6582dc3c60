"""The training benchmark's tables: per model and thread count on a CPU (``report``), per model on
a GPU (``cuda_report``), each with the time the five models' 5,000-step runs would take."""

from __future__ import annotations

from benchmarks import attention
from benchmarks.training_loops import RUN_STEPS


def report(rows: list[dict]) -> str:
    """The table, and per thread count the time for all five models × 5,000 steps."""
    head = "model       thr  comp  compile_s  project_tok/s  reference_tok/s  speedup  amortised"
    lines = [head + "  gemm_share  bound  loss(project/reference, Δ)"]
    together = [r for r in rows if r["benchmark"] == "training_concurrency"]
    attn = [r for r in rows if r["benchmark"] == "attention"]
    rows = [r for r in rows if r["benchmark"] == "training"]
    if rows and rows[0]["device"] == "cuda":
        return cuda_report(rows)
    lines += [model_line(r) for r in rows]
    for n in sorted({r["threads"] for r in rows}):
        sel = [r for r in rows if r["threads"] == n]
        project = sum(r["project_5000_steps_s"] for r in sel)
        compile_s = sum(r["compile_s"] for r in sel)
        reference = sum(r["reference_5000_steps_s"] for r in sel)
        target = " (target on one GPU: < 60 s)" if sel[0]["device"] == "cuda" else ""
        lines.append(
            f"{len(sel)} models × {RUN_STEPS} steps, {n} thread(s), {sel[0]['device']}: project "
            f"{project:.0f} s (compile {compile_s:.0f} s), reference {reference:.0f} s{target}"
        )
    lines += [attention.line(r) for r in attn]
    for r in together:
        lines.append(
            f"{r['model']}: two 1-thread jobs at once {r['two_jobs_1_thread_tokens_per_s']:,}"
            f" tok/s, one 2-thread job after the other {r['one_job_2_threads_tokens_per_s']:,}"
            f" tok/s ({r['speedup']:.2f}×)"
        )
    return "\n".join(lines)


def model_line(r: dict) -> str:
    """One CPU row of ``report``'s table."""
    loss = f"{r['project_loss']:.4f}/{r['reference_loss']:.4f}"
    return (
        f"{r['model']:<11} {r['threads']:>3}  {'yes' if r['compiled'] else 'no':>4}"
        f"  {r['compile_s']:>9.1f}  {r['project_tokens_per_s']:>13,}"
        f"  {r['reference_tokens_per_s']:>15,}"
        f"  {r['speedup']:>6.2f}×  {r['amortised_speedup']:>8.2f}×"
        f"  {r['gemm_share']:>10.0%}  {r['overhead_bound']:>4.2f}×"
        f"  {loss} ({100 * r['loss_rel_diff']:+.2f}%)"
    )


def cuda_report(rows: list[dict]) -> str:
    """The CUDA table: steps/s of the project's path (CUDA graphs where compiled), the same path
    eager, and the reference; the speed-ups; the GPU busy shares; the five-model totals."""
    lines = [
        "model       comp  compile_s  steps/s: project  eager  reference  tok/s project"
        "  graph×  vs ref×  amortised×  GPU busy (project/eager/ref)  loss Δ vs ref"
    ]
    for r in rows:
        lines.append(
            f"{r['model']:<11} {'yes' if r['compiled'] else 'no':>4}  {r['compile_s']:>9.1f}"
            f"  {r['project_steps_per_s']:>16,.0f}  {r['eager_steps_per_s']:>5,.0f}"
            f"  {r['reference_steps_per_s']:>9,.0f}  {r['project_tokens_per_s']:>13,}"
            f"  {r['graph_speedup']:>5.2f}×  {r['speedup']:>6.2f}×"
            f"  {r['amortised_speedup']:>9.2f}×"
            f"  {r['project_gpu_busy']:>7.0%} / {r['eager_gpu_busy']:>4.0%} /"
            f" {r['reference_gpu_busy']:>4.0%}  {100 * r['loss_rel_diff']:+.2f}%"
        )
    project = sum(r["project_5000_steps_s"] for r in rows)
    compile_s = sum(r["compile_s"] for r in rows)
    eager = sum(r["eager_5000_steps_s"] for r in rows)
    reference = sum(r["reference_5000_steps_s"] for r in rows)
    lines.append(
        f"{len(rows)} models × {RUN_STEPS} steps, one after the other on one GPU: project "
        f"{project:.0f} s (compile {compile_s:.0f} s of it), eager {eager:.0f} s, reference "
        f"{reference:.0f} s; × 3 seeds: {3 * project:.0f} s (target < 30 s)"
    )
    return "\n".join(lines)
