"""The rules of Study A's replication verdicts, as printed in the replication table's ``rule``
column (the functions that apply them are in ``replication``)."""

from __future__ import annotations

from topotrain.analysis.inference.stats import ALPHA
from topotrain.analysis.inference.verdicts import MIN_MODELS, REPRODUCED_SMALL
from topotrain.analysis.replication.sizes import SIZE_RULES

T2_P = 1e-5  # Table 2's "all p < 1e-5" (the paper's iid p-values)
PRIMARY = (
    "the primary family's test of the claim (pooled exact seed permutation of seed_contrast and "
    "seed_contrast_l2 over the sizes the paper claims, one-sided in its signs, BH over TP0, NP "
    "and TP1; 5 models × 3 seeds: smallest p 1/7 776)"
)
TREND = (
    "the same trend of the clock's |ρ(step, train loss)| and the scale's |ρ(L2 norm, train loss)|"
)
SIGNS = "and every claimed model's between-seed effect estimate has the paper's sign in both views"
SMALL = (
    "the effect is shown small (its upper bound at 1 − α/6 below Δ = analysis.sesoi in the "
    "clock's or the scale's view: an equivalence test, Bonferroni over the family's 3 claims × "
    "2 views)"
)
WORD = (
    "Here 'artefact' means the effect is shown below Δ; t2_monotone, t4, t5–t7 and the "
    "control's verdicts keep the word for a baseline (the clock, the scale, the weight norm or "
    "the Fourier measure) that explains the result as well."
)
A_RULES = {
    "t1": "Spearman ρ of mean final val loss vs N over the paper's models we trained (paper: its "
    "Table 1 by size); reproduced if it falls strictly with N (ρ = −1), else not reproduced; "
    f"levels not compared (other split); not evaluated below {MIN_MODELS} models.",
    "t2": "Raw ρ(TP0, train loss), mean over seeds, Fisher-z interval; reproduced if every seed "
    f"has the paper's sign and {PRIMARY} rejects {SIGNS} ('{REPRODUCED_SMALL}' if its effect is "
    f"also shown small); artefact if every seed has the sign and {SMALL}; inconclusive if neither "
    "(the test does not reject and the effect is not shown small), if it cannot be measured "
    "(one seed) or seeds disagree; not reproduced if no seed has the sign; not evaluated if "
    f"absent. {WORD}",
    "t2_monotone": "Spearman of mean |raw ρ(TP0, train loss)| vs N (paper: same on Table 2); "
    "reproduced if it rises strictly with N, adjacent sizes' across-seed intervals (Fisher z, "
    "t on 2 degrees of freedom with 3 seeds: wide) are "
    f"disjoint and neither of {TREND} rises as strongly; artefact if one does; not reproduced "
    "if an adjacent pair falls with disjoint intervals; inconclusive otherwise; not evaluated "
    f"below {MIN_MODELS} models.",
    "t2_p": "Largest raw p of ρ(TP0, train loss) over the paper's models and our seeds (the "
    "paper's iid method, which calibration shows is not valid for trending series); reproduced "
    f"if < {T2_P:g} and every model's ρ row is reproduced (below Δ if one is); artefact if "
    f"< {T2_P:g} but a model's row is an artefact (t2's: the effect shown below Δ); "
    f"inconclusive if < {T2_P:g} otherwise; not reproduced if ≥ {T2_P:g}; not evaluated if a "
    "model is absent.",
    "t3": f"Models where the paper's ρ(NP, train loss) has p < {ALPHA:g}: ours = how many have a "
    "between-seed effect estimate of its sign in both views (the raw ρ of each seed, which the "
    f"clock drives, does not decide); reproduced if {PRIMARY} rejects {SIGNS} (below Δ if its "
    f"effect is also shown small); artefact if not and {SMALL}; inconclusive otherwise and if "
    "it cannot be measured (a wrong sign of an estimate is no evidence against the claim: "
    f"never not reproduced); not evaluated if one is absent. {WORD}",
    "t4": "Spearman of mean |raw ρ(TP1, train loss)| vs N, exact permutation p (5 sizes: smallest "
    f"1/120); reproduced if ρ < 0 with p < {ALPHA:g}, neither of {TREND} falls as strongly and "
    f"the model the paper finds non-significant has a seed_contrast exact p ≥ {ALPHA:g} (with 3 "
    "seeds that p cannot go below 1/6, so that part always holds and is noted); artefact if a "
    f"baseline falls as strongly; not reproduced if ρ ≥ 0; inconclusive otherwise; not "
    f"evaluated below {MIN_MODELS} models or without that model.",
    **SIZE_RULES,
}
