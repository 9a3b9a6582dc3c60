"""Power of both answers on the verdict rule itself (issue 56, item 5): per question, planted
condition, design and noise, the share of simulated studies (``question_study``) per verdict word.

Each row gives, per claim, the share of studies per verdict word and "shown below Δ" (explained by
the clock or by the norm), with Clopper–Pearson 95 % intervals, and the median over studies of its
clock and norm conditions' family-wise upper bounds (how far a design is from showing Δ).

``python -m topotrain.analysis.calibration.question_power [features.parquet] --draws N``
prints and writes the table (``question_table``).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import zlib

import numpy as np
import pandas as pd

from topotrain.analysis.calibration import persistent as pe
from topotrain.analysis.calibration.pass_rule import clopper_pearson
from topotrain.analysis.calibration.power_design import fit_noise
from topotrain.analysis.calibration.question_study import (  # noqa: F401 (imported from here)
    BINDING,
    CLAIM_SIGNS,
    CONDITIONS,
    DELTAS,
    MODELS,
    START_STEP,
    family_verdicts,
    settings,
    simulate_family,
    strengths,
    study_mats,
)
from topotrain.analysis.calibration.simulator import Noise
from topotrain.analysis.inference.parallel import map_tasks
from topotrain.analysis.inference.primary import QUESTIONS, VIEWS
from topotrain.analysis.inference.verdicts import (
    EXPLAINED_BY_CLOCK,
    EXPLAINED_BY_NORM,
    REPRODUCED,
    UNDECIDED,
)

WORDS = (REPRODUCED, EXPLAINED_BY_CLOCK, EXPLAINED_BY_NORM, UNDECIDED)
BELOW = "shown below Δ"  # explained by the clock or by the norm: the effect shown smaller than Δ

CHUNK = 8  # studies per task: each chunk draws from its own generator (any number of processes)
DRAWS = 1000  # studies per row (analysis.calibration.question_draws)
# The documented fit (docs/study.md), per checkpoint 50 steps apart: the 5 × 101 study on seeds
# 65–69 (φ loss 0.97, features 0.99 / 0.98 / 0.98, the norm's own part 0.95, c −0.81, "white
# shares 0.00–0.03"), each white share as the 3-seed study on seeds 50–52 fitted it per series
# (loss 0.03, features 0.00 / 0.01 / 0.00, norm 0.01): train_loss, rounded to 0.01, the only fit
# the docs give. val_loss was never fitted there: *moves with* takes train_loss's until a feature
# table is given (``question_noise``), and ``VAL_WHITES`` show what a larger white share costs.
DOCUMENTED = Noise(
    loss=0.97,
    features=(0.99, 0.98, 0.98),
    scale=0.95,
    scale_loss=-0.81,
    loss_white=0.03,
    features_white=(0.0, 0.01, 0.0),
    scale_white=0.01,
    spacing=50.0,
)
STUDY_NOISE = {"moves_with": DOCUMENTED, "ranks": DOCUMENTED}
VAL_WHITES = (0.1,)  # sensitivity rows: moves with at these white shares of val_loss
DESIGNS = ((5, 201), (6, 201), (5, 51), (8, 51), (8, 201))  # (seeds, checkpoints): default first
RANKS_SEEDS = (8, 16, 32)  # ranks on the null, 51 checkpoints
COLUMNS = [
    "question",
    "condition",
    "seeds",
    "checkpoints",
    "noise",
    "loss_white",
    "feature",
    "models",
    "strength",
    "beta",
    "sesoi",
    "draws",
    "fw_clock_median",
    "fw_norm_median",
    "verdict",
    "share",
    "mc_low",
    "mc_high",
    "seconds",
]


def question_noise(df: pd.DataFrame) -> dict[str, Noise]:
    """Per question, ``fit_noise`` of a feature table on the question's own loss (its view's:
    val_loss for moves with, train_loss for ranks), white shares and φ unrounded."""
    return {q: fit_noise(df, target=VIEWS[v][0], digits=None) for q, v in QUESTIONS.items()}


def _chunk(task: tuple) -> list[tuple[list[str], list[float], list[float]]]:
    """One chunk's verdicts at Δ, per study the three claims' words (CLAIMS order) and their
    clock and norm conditions' family-wise upper bounds."""
    question, condition, claims, betas, delta, key, n = task
    sim = simulate_family(condition, claims, betas, np.random.default_rng(key), n)
    loss = VIEWS[QUESTIONS[question]][0]
    view, out = QUESTIONS[question], []
    clock, norm = (f"effect_{c}_fw_high" for c in VIEWS[view][1])
    for i in range(n):
        fam = family_verdicts(study_mats(sim, i, loss), question, delta)
        out.append((list(fam[f"verdict_{question}"]), list(fam[clock]), list(fam[norm])))
    return out


def row_name(question: str, condition: str, claims: list[pe.Setting], noise: str) -> str:
    """'question|condition|k=…|n=…|noise': the row's generator is seeded by its CRC-32."""
    s = claims[0]
    return f"{question}|{condition}|k={s.seeds}|n={s.checkpoints}|{noise}"


def verdict_shares(
    question: str,
    condition: str,
    seeds: int,
    checkpoints: int,
    noise: Noise,
    draws: int,
    threads: int = 1,
    label: str = "fitted",
    seed: int = 0,
    delta: float | None = None,
) -> pd.DataFrame:
    """COLUMNS of one (question, condition, design, noise): ``draws`` studies (in chunks of
    CHUNK, each from its own generator: [CRC-32 of ``row_name``, seed, chunk]), per claim the
    share of each verdict word (WORDS) and of BELOW, with Clopper–Pearson 95 % intervals; the
    question's Δ ``delta`` (default DELTAS': analysis.sesoi_co, analysis.sesoi)."""
    start = time.perf_counter()
    delta = DELTAS[question] if delta is None else delta
    claims = settings(noise, seeds, checkpoints)
    betas = strengths(question, condition, claims, delta)
    key = zlib.crc32(row_name(question, condition, claims, label).encode())
    sizes = [min(CHUNK, draws - lo) for lo in range(0, draws, CHUNK)]
    tasks = [
        (question, condition, claims, betas, delta, [key, seed, j], n) for j, n in enumerate(sizes)
    ]
    studies = [s for chunk in map_tasks(_chunk, tasks, threads) for s in chunk]
    words = np.array([w for w, _, _ in studies])
    bounds = np.array([[c, n] for _, c, n in studies], float)  # (draws, 2, claims)
    seconds = time.perf_counter() - start
    view = BINDING[question]
    rows = []
    for j, (feature, signs) in enumerate(CLAIM_SIGNS.items()):
        beta = pe.implied("level", betas[j], claims[j])[view] if condition == "at_delta" else 0.0
        head = {"question": question, "condition": condition, "seeds": seeds}
        head |= {"checkpoints": checkpoints, "noise": label, "loss_white": noise.loss_white}
        head |= {"feature": feature, "models": len(signs), "strength": betas[j], "beta": beta}
        head |= {"sesoi": delta, "draws": len(words), "seconds": seconds}
        fw = np.nanmedian(bounds[:, :, j], axis=0) if len(bounds) else [np.nan] * 2
        head |= {"fw_clock_median": fw[0], "fw_norm_median": fw[1]}
        got = words[:, j] if len(words) else np.array([])
        for word in (*WORDS, BELOW):
            hits = int(
                np.isin(got, [EXPLAINED_BY_CLOCK, EXPLAINED_BY_NORM]).sum()
                if word == BELOW
                else (got == word).sum()
            )
            low, high = clopper_pearson(hits, len(got))
            share = hits / len(got) if len(got) else np.nan
            rows.append(head | {"verdict": word, "share": share, "mc_low": low, "mc_high": high})
    return pd.DataFrame(rows).reindex(columns=COLUMNS)


def cells(
    designs=DESIGNS, ranks_seeds=RANKS_SEEDS, val_whites=VAL_WHITES
) -> list[tuple[str, str, int, int, str]]:
    """(question, condition, seeds, checkpoints, noise label) of ``question_table``: at the first
    design (the default) both questions × CONDITIONS; moves with on the null and at Δ_co at the
    other ``designs``; ranks on the null at ``ranks_seeds`` × 51 checkpoints (levels gain
    nothing from denser ones); moves with at the default with val_loss's white share at each of
    ``val_whites`` ('w=<v>'), on the null and at Δ_co."""
    (k, n), rest = designs[0], designs[1:]
    out = [(q, c, k, n, "fitted") for q in QUESTIONS for c in CONDITIONS]
    out += [("moves_with", c, *d, "fitted") for d in rest for c in CONDITIONS[:2]]
    out += [("ranks", CONDITIONS[0], seeds, 51, "fitted") for seeds in ranks_seeds]
    out += [("moves_with", c, k, n, f"w={w:g}") for w in val_whites for c in CONDITIONS[:2]]
    return out


def question_table(
    draws: int = DRAWS,
    threads: int = 1,
    noise: dict[str, Noise] | None = None,
    designs=DESIGNS,
    ranks_seeds=RANKS_SEEDS,
    val_whites=VAL_WHITES,
    seed: int = 0,
    deltas: dict[str, float] | None = None,
) -> pd.DataFrame:
    """COLUMNS for every ``cells`` row, ``draws`` studies each, on ``noise`` (question → Noise;
    default STUDY_NOISE, the documented fit), at ``deltas`` (question → Δ; default DELTAS); a
    'w=<v>' row takes the question's noise with the loss's white share v."""
    noise, deltas = noise or STUDY_NOISE, deltas or DELTAS
    parts = []
    for q, c, k, n, label in cells(designs, ranks_seeds, val_whites):
        base = noise[q]
        if label != "fitted":
            base = dataclasses.replace(base, loss_white=float(label.removeprefix("w=")))
        parts.append(verdict_shares(q, c, k, n, base, draws, threads, label, seed, deltas[q]))
    return pd.concat(parts, ignore_index=True)


def main(argv: list[str] | None = None) -> None:
    """Write ``question_table`` as CSV (noise fitted per question to a feature table when one is
    given, else the documented fit) and print its shares, one line per row and claim."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("features", nargs="?", help="a feature table (weights.parquet)")
    parser.add_argument("--draws", type=int, default=DRAWS, help="studies per row")
    parser.add_argument("--threads", type=int, default=1, help="worker processes")
    parser.add_argument("--out", default="question_power.csv", help="CSV to write")
    parser.add_argument(
        "--design",
        nargs=2,
        type=int,
        action="append",
        metavar=("SEEDS", "CHECKPOINTS"),
        help="a design to simulate (repeatable; default: DESIGNS)",
    )
    parser.add_argument("--ranks-seeds", type=int, nargs="*", default=list(RANKS_SEEDS))
    parser.add_argument("--val-whites", type=float, nargs="*", default=list(VAL_WHITES))
    args = parser.parse_args(argv)
    noise = question_noise(pd.read_parquet(args.features)) if args.features else None
    designs = tuple(tuple(d) for d in args.design) if args.design else DESIGNS
    table = question_table(
        args.draws, args.threads, noise, designs, tuple(args.ranks_seeds), tuple(args.val_whites)
    )
    table.to_csv(args.out, index=False)
    print(shares_text(table))


def shares_text(table: pd.DataFrame) -> str:
    """One line per row and claim: each verdict word's share."""
    wide = table.pivot_table(
        index=["question", "condition", "seeds", "checkpoints", "noise", "feature", "draws"],
        columns="verdict",
        values="share",
        sort=False,
    )
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        return wide.to_string(float_format="%.3f")


if __name__ == "__main__":
    main()
