"""Closed forms (Bai et al. Theorems 8 and 9) checked against general computations."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from puffgm.api import influence_curve
from puffgm.chains.closed_forms import (
    binary_chain_curve,
    binary_chain_curve_exact,
    closed_form_disagreement,
    stationary_distribution,
    theorem8_curve,
)
from puffgm.exceptions import ParameterError
from puffgm.gaussian.closed_forms import (
    CurveOptions,
    gaussian_network_curve,
    gaussian_region_curve,
    gaussian_region_influence,
    gp_covariance,
    gp_region_curve,
)

# a grid covering the whole open square, corners included
GRID = [1e-6, 1e-3, 0.02, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 0.98, 0.999, 1 - 1e-6]


def chain_model(T, p, q):
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    pi = stationary_distribution(p, q)
    P = np.array([[p, 1 - p], [1 - q, q]])
    names = [f"X{t}" for t in range(T)]
    m = DiscreteBayesianNetwork([(names[t - 1], names[t]) for t in range(1, T)])
    m.add_cpds(TabularCPD(names[0], 2, np.array(pi).reshape(2, 1)))
    for t in range(1, T):
        m.add_cpds(TabularCPD(names[t], 2, P.T, evidence=[names[t - 1]], evidence_card=[2]))
    return m


@pytest.mark.parametrize("p,q", [(0.9, 0.7), (0.2, 0.3), (0.1, 0.85), (0.6, 0.05), (0.5, 0.5), (0.02, 0.02)])
def test_exact_binary_curve_equals_the_quilt_curve_of_the_unrolled_chain(p, q):
    B = 4
    net = influence_curve(chain_model(2 * B + 1, p, q), max_b=B)
    exact, _ = binary_chain_curve_exact(p, q, B)
    np.testing.assert_allclose(net.a, exact, rtol=1e-9, atol=1e-9)


def test_theorem8_over_the_whole_open_square():
    """The appendix form never understates beyond rounding; where it differs it overstates (lambda < 0)."""
    over_lambdas = set()
    for p in GRID:
        for q in GRID:
            d = closed_form_disagreement(p, q, 24)
            exact, _ = binary_chain_curve_exact(p, q, 24)
            # rounding of 1 - lambda^d near the corners only: relative 1e-7 at worst
            assert d["max_under"] <= 1e-7 * max(1.0, float(exact[0])), (p, q, d)
            if d["over_b"]:
                over_lambdas.add(math.copysign(1, p + q - 1))
                assert all(b % 4 != 3 for b in d["over_b"])  # b = 3, 7, ...: balanced even split is optimal
            if p + q > 1 + 1e-9:
                assert d["max_over"] <= 1e-7 * max(1.0, float(exact[0])), (p, q)  # tight when lambda > 0
    assert over_lambdas == {-1.0}


def test_main_text_theorem8_understates_when_lambda_negative():
    """Section 6.3 writes the logs without |.|: a privacy bug for p + q < 1."""
    for p, q in [(0.2, 0.3), (0.1, 0.05), (0.3, 0.6)]:
        d = closed_form_disagreement(p, q, 10, absolute=False)
        assert d["max_under"] > 0.01 and 1 in d["under_b"]
    d = closed_form_disagreement(0.9, 0.7, 10, absolute=False)
    assert d["max_under"] < 1e-12


def test_binary_chain_curve_is_safe_and_explains():
    c = binary_chain_curve(0.3, 0.2, 10)
    exact, _ = binary_chain_curve_exact(0.3, 0.2, 10)
    assert c.a == tuple(exact)
    assert any("overstates" in n for n in c.notes)
    assert np.all(np.asarray(c.details["closed_form"]) >= exact - 1e-12)
    assert theorem8_curve(0.3, 0.2, 5)[1] > c.a[1]  # b = 2: parity mismatch
    with pytest.raises(ParameterError, match="open interval"):
        binary_chain_curve(1.0, 0.5)
    with pytest.raises(ParameterError, match="length"):
        binary_chain_curve(0.3, 0.2, 10, length=5)


@pytest.mark.slow
def test_figure_2b_trend():
    """a(b) grows with the kernel length l (Figure 2b), for l in {0.5, 1, 2, 3, 5}, gamma 5, delta 0.1."""
    curves = [gp_region_curve(15, ell, 5.0, 0.1, max_b=8, center_only=True) for ell in (0.5, 1, 2, 3, 5)]
    for c in curves:
        assert all(x >= y for x, y in zip(c.a, c.a[1:], strict=False))
    A = np.array([c.a for c in curves])
    assert np.all(np.diff(A[:, :4], axis=0) > 0)
    assert np.all(np.diff(A, axis=0) >= -1e-12)
    th9 = [gp_region_curve(15, ell, 5.0, 0.1, max_b=4, center_only=True,
                           options=CurveOptions(value="theorem9")) for ell in (0.5, 2, 5)]
    assert th9[0].a[0] < th9[1].a[0] < th9[2].a[0]


def _exact_b1_leakage(rho, gamma, delta, n_regions, x2s, epsabs):
    """n = 2, b = 1, unit variances, box [-gamma, gamma]^2: the exact leakage of the truncated prior through
    x_2 by numerical integration, max over pairs of ``n_regions`` region positions and x_2 in ``x2s``."""
    s = math.sqrt(1 - rho**2)

    def p_cond(r, x2):
        return stats.norm.cdf((r + delta - rho * x2) / s) - stats.norm.cdf((r - rho * x2) / s)

    def p_marg(r):  # truncated marginal (unnormalised): integral over x2 in the box
        return integrate.quad(lambda x2: stats.norm.pdf(x2) * p_cond(r, x2), -gamma, gamma, epsabs=epsabs)[0]

    rs = np.linspace(-gamma, gamma - delta, n_regions)
    exact = 0.0
    for r in rs:
        for r2 in rs:
            if abs(r - r2) < delta - 1e-12:
                continue
            sup = max(math.log(p_cond(r, x) / p_cond(r2, x)) for x in x2s)
            exact = max(exact, sup - math.log(p_marg(r) / p_marg(r2)))
    return exact


@pytest.mark.slow
def test_range_bound_dominates_exact_truncated_leakage_b1():
    """n = 2, b = 1: exact leakage of the truncated prior by numerical integration <= the 'range' value."""
    rho, gamma, delta = 0.8, 2.0, 0.25
    cov = np.array([[1.0, rho], [rho, 1.0]])
    res = gaussian_region_influence(cov, [-gamma] * 2, [gamma] * 2, delta, 0, [1])
    exact = _exact_b1_leakage(rho, gamma, delta, 9, np.linspace(-gamma, gamma, 41), 1e-13)
    assert exact <= res["range"] + 1e-9
    assert exact >= 0.5 * res["range"]  # and the bound is not vacuous


@pytest.mark.slow
def test_gaussian_network_curve_matches_joint_gaussian():
    from pgmpy.factors.continuous import LinearGaussianCPD
    from pgmpy.models import LinearGaussianBayesianNetwork

    m = LinearGaussianBayesianNetwork([("A", "B"), ("B", "C")])
    m.add_cpds(LinearGaussianCPD("A", [0.0], 1.0), LinearGaussianCPD("B", [0.5, 0.8], 0.5, ["A"]),
               LinearGaussianCPD("C", [-1.0, 0.6], 0.7, ["B"]))
    c = gaussian_network_curve(m, (-6.0, 6.0), 0.2)
    mean, cov = m.to_joint_gaussian()
    ref = gaussian_region_curve(cov, -6.0, 6.0, 0.2, mean=mean, options=CurveOptions(search="exhaustive"))
    assert c.a == ref.a and c.a[-1] == 0.0
    assert all(x >= y for x, y in zip(c.a, c.a[1:], strict=False))
    # chain A - B - C: the secret on A leaks through {C} only via B (w_C = 0 given B in L is irrelevant here);
    # b = 1 for A: L = {B, C}, x_A | x_B, x_C does not depend on C (d-separation)
    r1 = gaussian_region_influence(cov, [-6] * 3, [6] * 3, 0.2, 0, [1, 2], mean=mean)
    r2 = gaussian_region_influence(cov, [-6] * 3, [6] * 3, 0.2, 0, [1], mean=mean)
    assert r1["range"] == pytest.approx(r2["range"], rel=1e-9)
    assert c.witnesses[0].node in ("A", "B", "C")
    with pytest.raises(ParameterError, match="bounds"):
        gaussian_network_curve(m, {"A": (-1, 1)}, 0.2)


def test_gp_covariance_kernel():
    S = gp_covariance(4, 2.0)
    assert S[0, 2] == pytest.approx(math.exp(-4 / 2.0))


@pytest.mark.slow
def test_safe_gaussian_curve_is_the_certified_bound():
    """The safe curve is the certified bound of puffgm.gaussian.leakage (checked against numerical
    integration of the exact truncated leakage in tests/test_gaussian_leakage.py): at b = 1 it is no
    larger than the full-conditioning range (its previous, looser, value), and it decreases."""
    import numpy as np

    from puffgm.gaussian.closed_forms import gaussian_region_curve, gaussian_region_influence, gp_covariance
    from puffgm.gaussian.leakage import GaussianRegionModel

    n = 6
    cov = gp_covariance(n, 1.0)
    lo, hi = -2.0 * np.ones(n), 2.0 * np.ones(n)
    safe = gaussian_region_curve(cov, lo, hi, 0.25, options=CurveOptions(search="farthest"))
    th9 = gaussian_region_curve(cov, lo, hi, 0.25, options=CurveOptions(value="theorem9", search="farthest"))
    rng = max(
        gaussian_region_influence(cov, lo, hi, 0.25, i, [j for j in range(n) if j != i])["range"] for i in range(n)
    )
    model = GaussianRegionModel(cov, lo, hi, 0.25)
    b1 = max(model.leakage(i, [j for j in range(n) if j != i]).value for i in range(n))
    assert safe.a[0] == b1 <= rng
    assert all(x >= y for x, y in zip(safe.a, safe.a[1:], strict=False)) and safe.a[-2] < safe.a[0]
    assert safe.a[n - 1] == 0.0
    assert any("certified" in note for note in safe.notes)
    assert any("not certified" in note or "uncertified" in note for note in th9.notes)


def test_gaussian_curve_tolerances():
    """``atol`` of the safe Gaussian curves: a smaller one lowers the values near its floor, which stay above
    the exact leakage (n = 2, b = 1: numerical integration of the truncated prior); bad tolerances fail."""
    rho, gamma, delta = 0.05, 2.0, 0.25
    cov = np.array([[1.0, rho], [rho, 1.0]])
    # the log-ratio of two regions is monotone in x_2 (Gaussian likelihood ratio): its sup is at an end
    exact = _exact_b1_leakage(rho, gamma, delta, 15, (-gamma, gamma), 1e-14)
    loose = gaussian_region_curve(cov, -gamma, gamma, delta, options=CurveOptions(nodes=[0], search="farthest"))
    tight = gaussian_region_curve(cov, -gamma, gamma, delta,
                                  options=CurveOptions(nodes=[0], search="farthest", atol=1e-9))
    assert exact <= tight.a[0] <= loose.a[0] and tight.a[0] - exact < 1e-3  # 15 regions: 2.7e-4 apart
    assert loose.a[0] - tight.a[0] > 1e-5  # the default's floor, 2 atol, is gone
    assert tight.details["atol"] == 1e-9 and loose.details["atol"] == 1e-4
    assert gp_region_curve(6, 0.5, max_b=2, center_only=True, options=CurveOptions(atol=1e-9)).a[1] <= \
        gp_region_curve(6, 0.5, max_b=2, center_only=True).a[1]
    for kw in ({"atol": 0.0}, {"tol": -1e-3}, {"atol": float("nan")}, {"tol": "1e-5"}):
        with pytest.raises(ParameterError, match=f"'{next(iter(kw))}' parameter of gaussian_region_curve"):
            gaussian_region_curve(cov, -gamma, gamma, delta, options=CurveOptions(**kw))
    from puffgm.gaussian.leakage import GaussianRegionModel

    with pytest.raises(ParameterError, match="'atol' parameter of GaussianRegionModel"):
        GaussianRegionModel(cov, -gamma, gamma, delta, atol=float("inf"))
