"""The one sign rule every two-view decision shares (analysis.inference.signs): every view's
p < α and every view's ρ of one sign, the claimed one when a sign is claimed; on hand cases, and
the callers (a discovery hit, a diagnostics "beats") read it unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from topotrain.analysis.confirmation.confirm import is_hit
from topotrain.analysis.inference.diagnostics import rejects_in_sign
from topotrain.analysis.inference.signs import common_sign, holds_in_one_sign

NAN = float("nan")


@pytest.mark.parametrize(
    ("ps", "rhos", "sign", "holds"),
    [
        ([0.01, 0.02], [0.39, 0.86], None, True),  # both positive
        ([0.01, 0.02], [-0.39, -0.86], None, True),  # both negative: one sign too
        ([0.00014, 0.00014], [0.39, -0.86], None, False),  # the group: signs disagree
        ([0.01, 0.06], [0.39, 0.86], None, False),  # one view's p ≥ α
        ([0.01, 0.05], [0.39, 0.86], None, False),  # p = α does not reject
        ([0.01, 0.02], [0.39, 0.86], 1.0, True),  # the claimed sign
        ([0.01, 0.02], [0.39, 0.86], -1.0, False),  # claimed negative, both positive
        ([0.01, 0.02], [-0.39, -0.86], -3.0, True),  # a claimed sign is its sign, not its size
        ([0.01, 0.02], [0.39, 0.86], 0.0, False),  # a reference of 0 has no sign
        ([0.01, 0.02], [0.39, 0.86], NAN, False),  # nor has an undefined one
        ([0.01, NAN], [0.39, 0.86], None, False),  # an undefined p
        ([0.01, 0.02], [0.39, NAN], None, False),  # an undefined ρ
        ([0.01, 0.02], [0.39, 0.0], None, False),  # ρ = 0 is of no sign
        ([0.01, 0.02, 0.03], [0.2, 0.3, 0.4], None, True),  # three views (the control)
        ([0.01, 0.02, 0.03], [0.2, 0.3, -0.4], None, False),
        ([0.01], [-0.5], None, True),  # one view
        ([], [], None, False),  # no view: nothing holds
    ],
)
def test_a_claim_holds_when_every_view_rejects_in_one_sign(ps, rhos, sign, holds):
    assert holds_in_one_sign(ps, rhos, 0.05, sign) is holds


def test_the_common_sign_is_the_views_sign_or_0():
    assert common_sign([0.39, 0.86]) == 1.0 and common_sign([-0.1, -2.0]) == -1.0
    assert common_sign([0.39, -0.86]) == 0.0 and common_sign([0.3, NAN]) == 0.0
    assert common_sign([0.39, 0.86], sign=-1) == 0.0 and common_sign([0.4], sign=2.0) == 1.0
    assert common_sign([]) == 0.0


def test_alpha_is_the_callers():
    assert holds_in_one_sign([0.02, 0.03], [0.5, 0.5], alpha=0.05)
    assert not holds_in_one_sign([0.02, 0.03], [0.5, 0.5], alpha=0.025)


@pytest.mark.parametrize("rho", [0.4, -0.4])
def test_a_discovery_hit_and_a_diagnostics_beat_are_the_rule(rho):
    """is_hit: two-sided p < α in every view, one sign (either); rejects_in_sign: one view, in
    the reference's sign; both read off holds_in_one_sign for every case of the grid."""
    for p_scale in (0.01, 0.2, NAN):
        for rho_scale in (rho, -rho, NAN):
            row = {"p_clock": 0.01, "rho_clock": rho, "p_scale": p_scale, "rho_scale": rho_scale}
            want = holds_in_one_sign([0.01, p_scale], [rho, rho_scale], 0.05)
            assert is_hit(row, ["clock", "scale"], 0.05) is want
            same = bool(np.isfinite(p_scale) and p_scale < 0.05 and rho_scale == rho)
            assert want is same  # by hand: both views reject with the same sign
    for reference in (1.0, -0.7, 0.0, NAN):
        got = rejects_in_sign(0.01, rho, reference, 0.05)
        assert got is bool(
            np.isfinite(reference) and reference != 0 and np.sign(reference) == np.sign(rho)
        )
        assert rejects_in_sign(0.2, rho, reference, 0.05) is False
