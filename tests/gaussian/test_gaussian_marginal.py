"""The box-probability bounds of the truncated marginal (puffgm.gaussian.marginal) against brute force.

G(t) = P(x_-i in B_-i | x_i = t) is computed independently by composite tensor Gauss-Legendre
quadrature of the conditional Gaussian density over the box (n = 4: three dimensions), clipped to
mu_k +- 10 conditional standard deviations (the mass outside is below 1e-22); the quadrature error is
checked below 1e-9 against a finer rule (12 panels of 12 nodes per axis).  The numerator bound must be
>= -inf_{cell} log G and the denominator bound >= sup_{cell} log G (the sup found by a bounded scalar search of the concave log G),
each within a stated tolerance.
"""

import functools
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from puffgm.exceptions import ParameterError
from puffgm.gaussian.leakage import GaussianRegionModel, ModelOptions
from puffgm.gaussian.marginal import TruncatedMarginal
from puffgm.gaussian.monotone import CornerOptions, corner_lower_bound


def ou_cov(n, ell):
    idx = np.arange(n)
    return np.exp(-np.abs(idx[:, None] - idx[None, :]) / ell)


def random_model():
    rng = np.random.default_rng(7)
    A = rng.normal(size=(4, 4))
    cov = A @ A.T + 1.5 * np.eye(4)
    mean = np.array([0.4, -0.3, 0.2, 0.5])
    lo = np.array([-2.5, -2.0, -3.0, -2.2])
    hi = np.array([2.0, 2.5, 2.4, 3.0])
    return cov, mean, lo, hi


def box_prob_ref(mu, S, lo, hi, panels=8, nodes=10):
    """P(N(mu, S) in [lo, hi]) by composite tensor Gauss-Legendre (d <= 3)."""
    d = len(mu)
    sd = np.sqrt(np.diag(S))
    a = np.maximum(lo, mu - 10 * sd)
    b = np.minimum(hi, mu + 10 * sd)
    if np.any(b <= a):
        return 0.0
    x, w = np.polynomial.legendre.leggauss(nodes)
    axes, weights = [], []
    for k in range(d):
        e = np.linspace(a[k], b[k], panels + 1)
        h = np.diff(e) / 2
        axes.append(((e[:-1] + e[1:]) / 2)[:, None] + h[:, None] * x[None, :])
        weights.append(h[:, None] * w[None, :])
    grids = np.meshgrid(*[ax.ravel() for ax in axes], indexing="ij")
    W = np.ones_like(grids[0])
    for wk in np.meshgrid(*[wt.ravel() for wt in weights], indexing="ij"):
        W = W * wk
    pts = np.stack([g.ravel() for g in grids], axis=1) - mu
    P = np.linalg.inv(S)
    q = np.einsum("nk,kj,nj->n", pts, P, pts)
    norm = math.sqrt((2 * math.pi) ** d * np.linalg.det(S))
    return float(np.sum(W.ravel() * np.exp(-0.5 * q)) / norm)


class Reference:
    """Brute-force log G(t) and log P(expanded box) for coordinate i of a truncated Gaussian."""

    def __init__(self, cov, mean, lo, hi, i):
        ok = [k for k in range(len(cov)) if k != i]
        self.i, self.ok, self.m_i = i, ok, mean[i]
        self.c = cov[ok, i] / cov[i, i]
        self.S = cov[np.ix_(ok, ok)] - np.outer(cov[ok, i], cov[i, ok]) / cov[i, i]
        self.mu0, self.lo, self.hi = mean[ok], lo[ok], hi[ok]
        self.memo = {}

    def log_g(self, t, **kw):
        return math.log(box_prob_ref(self.mu0 + self.c * (t - self.m_i), self.S, self.lo, self.hi, **kw))

    def inf_sup(self, ua, ub):
        key = (ua, ub)
        if key not in self.memo:
            self.memo[key] = self._inf_sup(ua, ub)
        return self.memo[key]

    def _inf_sup(self, ua, ub):
        ends = [self.log_g(ua), self.log_g(ub)]
        res = minimize_scalar(lambda t: -self.log_g(t), bounds=(ua, ub), method="bounded",
                              options={"xatol": 1e-9})
        return min(ends), max(max(ends), -res.fun)

    def log_expanded(self, ua, ub):
        """log P(x_-i in the box expanded by the drift of the mean over [ua, ub]) at the mean at ua."""
        ch = -self.c * (ub - ua)
        lo = self.lo + np.minimum(0.0, ch)
        hi = self.hi + np.maximum(0.0, ch)
        return math.log(box_prob_ref(self.mu0 + self.c * (ua - self.m_i), self.S, lo, hi))


@functools.cache
def reference(name):
    return Reference(*CASES[name][:5])


CASES = {
    "ou_l20": (ou_cov(4, 20.0), np.zeros(4), -5.0 * np.ones(4), 5.0 * np.ones(4), 1,
               [(4.75, 5.0), (4.9, 5.0), (-5.0, -4.8), (-0.1, 0.15)]),
    "random": random_model() + (2, [(-3.0, -2.85), (2.2, 2.4), (-0.2, 0.1), (0.9, 1.3)]),
}


def test_reference_quadrature_converged():
    ref = Reference(*CASES["ou_l20"][:5])
    for t in (5.0, -4.8):
        assert abs(ref.log_g(t) - ref.log_g(t, panels=12, nodes=12)) < 1e-9
    ref = Reference(*CASES["random"][:5])
    assert abs(ref.log_g(2.4) - ref.log_g(2.4, panels=12, nodes=12)) < 1e-9


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_marginal_bounds_against_brute_force(name):
    cov, mean, lo, hi, i, cells = CASES[name]
    tm = TruncatedMarginal(cov, mean, lo, hi, i, tol=1e-4, max_boxes=512)
    ref = reference(name)
    ua = np.array([c[0] for c in cells])
    ub = np.array([c[1] for c in cells])
    num = tm.corr_num(ua, ub)
    den = tm.corr_den(ua, ub)
    for k, (a, b) in enumerate(cells):
        g_inf, g_sup = ref.inf_sup(a, b)
        # safe side: corr_num >= -log P(B | x_i in R) for every R in the cell, which is <= -inf log G
        assert num[k] >= -g_inf - 1e-12
        # tightness of the numerator: the Gibbs lower bound at the cell's ends (at 512 sub-boxes its gap
        # is below 0.06 nats on these strongly coupled 3-D boxes, below 0.01 on the random model)
        assert num[k] <= -g_inf + 0.06
        # safe side of the denominator: >= the sup of log G over the cell (the expansion direction)
        assert den[k] >= g_sup - 1e-12
        # and it is the expanded-box probability up to the box bounds' gap
        exp_box = ref.log_expanded(a, b)
        assert exp_box >= g_sup - 1e-9
        assert exp_box - 1e-9 <= den[k] <= min(0.0, exp_box) + 0.06


@pytest.mark.parametrize("name, cell", [("ou_l20", (-5.0, -4.8)), ("random", (-3.0, -2.85))])
def test_expansion_direction_matters(name, cell):
    # the expansion of the module docstring, [lo_k + min(0, -c_k h), hi_k + max(0, -c_k h)], covers the sup
    # of G over the cell; the opposite sign (+c_k h) does not on these cells, so the safe-side check of
    # test_marginal_bounds_against_brute_force would catch a sign slip
    ref = reference(name)
    a, b = cell
    _, g_sup = ref.inf_sup(a, b)
    ch = ref.c * (b - a)
    wrong = math.log(box_prob_ref(ref.mu0 + ref.c * (a - ref.m_i), ref.S,
                                  ref.lo + np.minimum(0.0, ch), ref.hi + np.maximum(0.0, ch)))
    assert wrong < g_sup - 1e-3
    assert ref.log_expanded(a, b) >= g_sup - 1e-9


@pytest.mark.parametrize("name", sorted(CASES))
def test_model_corrections_are_safe_in_every_mode(name):
    cov, mean, lo, hi, i, cells = CASES[name]
    ref = reference(name)
    ua = np.array([c[0] for c in cells])
    ub = np.array([c[1] for c in cells])
    vals = {}
    for mode in ("bonferroni", "auto", "box"):
        model = GaussianRegionModel(cov, lo, hi, 0.1, mean, options=ModelOptions(marginal=mode))
        vals[mode] = model.marginal_corrections(i)[0](ua, ub), model.marginal_corrections(i)[1](ua, ub)
    for k, (a, b) in enumerate(cells):
        g_inf, g_sup = ref.inf_sup(a, b)
        for mode, (num, den) in vals.items():
            assert num[k] >= -g_inf - 1e-12, mode
            assert den[k] >= g_sup - 1e-12, mode
        # "box" is the minimum of both bounds: never above Bonferroni
        assert vals["box"][0][k] <= vals["bonferroni"][0][k]
        assert vals["box"][1][k] <= vals["bonferroni"][1][k]


def test_auto_keeps_small_bonferroni_terms():
    # squared-exponential kernel, l = 2: every Bonferroni term is below 0.5 nats, so "auto" is Bonferroni
    idx = np.arange(6)
    cov = np.exp(-((idx[:, None] - idx[None, :]) ** 2) / 2.0)
    r = np.linspace(-5.0, 4.9, 100)
    a = GaussianRegionModel(cov, -5.0, 5.0, 0.1).marginal_corrections(2)
    b = GaussianRegionModel(cov, -5.0, 5.0, 0.1, options=ModelOptions(marginal="bonferroni")).marginal_corrections(2)
    assert np.max(b[0](r, r + 0.1)) > 1e-3  # the terms are not zero
    assert np.array_equal(a[0](r, r + 0.1), b[0](r, r + 0.1))
    assert np.array_equal(a[1](r, r + 0.1), b[1](r, r + 0.1))


@pytest.mark.slow
def test_markov_l20_marginal_finite_and_leakage_unstuck():
    # the Markov prior of bench/gaussian_markov_curve.py: OU kernel, l = 20, n = 10, box [-5, 5]^10
    cov = ou_cov(10, 20.0)
    i = 4
    bonf = GaussianRegionModel(cov, -5.0, 5.0, 0.1, options=ModelOptions(marginal="bonferroni"))
    auto = GaussianRegionModel(cov, -5.0, 5.0, 0.1)
    edge_a, edge_b = np.array([-5.0, 4.9]), np.array([-4.9, 5.0])
    assert np.all(np.isinf(bonf.marginal_corrections(i)[0](edge_a, edge_b)))
    num = auto.marginal_corrections(i)[0](edge_a, edge_b)
    assert np.all(np.isfinite(num)) and np.all(num > 0)
    H = [3, 4, 5]
    L = [k for k in range(10) if k not in H]
    old = bonf.leakage(i, L, pinned_engines=False).value
    new = auto.leakage(i, L, pinned_engines=False).value
    assert math.isfinite(old) and math.isfinite(new)
    assert new < 0.6 * old  # the Bonferroni marginal kept 990.6 (the range bound)
    low, _, _ = corner_lower_bound(auto, i, [3, 5], L, auto.marginal_corrections(i)[0],
                                   options=CornerOptions(sweeps=1, n_regions=2))
    low_bonf, _, _ = corner_lower_bound(bonf, i, [3, 5], L, bonf.marginal_corrections(i)[0],
                                        options=CornerOptions(sweeps=1, n_regions=2))
    assert math.isfinite(low) and low > 0
    assert not math.isfinite(low_bonf)  # the Bonferroni marginal makes the lower bound useless here
    assert low <= new


@pytest.mark.parametrize("bad", ["exact", "", 1, None, "BOX"])
def test_bad_marginal_option(bad):
    with pytest.raises(ParameterError, match="'marginal' parameter must be one of"):
        GaussianRegionModel(np.eye(2), -1.0, 1.0, 0.1, options=ModelOptions(marginal=bad))
