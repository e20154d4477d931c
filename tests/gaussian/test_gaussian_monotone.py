"""Certified box probabilities (``puffgm.gaussian.boxprob``) and the monotone (MTP2) pinned engine
(``puffgm.gaussian.monotone``) against independent numerical references.

References (no Monte Carlo in any assertion):

* ``scipy.integrate.quad`` (relative to the integrand's maximum) for the one-dimensional closed forms;
* tensor Gauss-Legendre quadrature on panels graded geometrically towards the box faces, with the last
  coordinate integrated in closed form given the others (``scipy.special.log_ndtr``), everything in log
  space; its resolution is checked by a second, finer run in every test (``tests/gaussian_reference.py``);
* for the AR(1) / Ornstein-Uhlenbeck (Markov) chains of the end-to-end audits, the chain structure: products of
  transition kernels on Gauss-Legendre grids (log-sum-exp), which gives the marginal P0 of the truncated
  prior and the conditional box probabilities given x_C; checked against the generic reference above.
"""

import itertools
import math

import numpy as np
import pytest
from gaussian_reference import ar_cov, exact_chain_leakage, log_box_ref, ou_cov
from scipy import integrate, stats

from puffgm.gaussian.boxprob import BoxProbability, log_trunc_normal
from puffgm.gaussian.closed_forms import gp_covariance
from puffgm.gaussian.leakage import GaussianRegionModel
from puffgm.gaussian.monotone import balancing_signs
from puffgm.gaussian.zonotope import conditional_block, natural_zonotope


# ----------------------------------------------------------------------------------------- references
def ref_log_trunc_normal(a, b, theta, K):
    """(log int_a^b exp(theta t - K t^2 / 2) dt, mean) by quad, relative to the integrand's maximum."""
    f = lambda t: theta * t - 0.5 * K * t * t
    x0 = min(max(theta / K, a), b)  # maximiser on [a, b]
    M = f(x0)
    slope = abs(theta - K * x0)
    scale = min(1 / math.sqrt(K), 1 / slope if slope > 0 else math.inf, b - a)
    pts = sorted({x0 + sg * scale * m for m in (1, 10, 100, 1000) for sg in (-1, 1)} | {x0})
    pts = [p for p in pts if a < p < b] or None
    g = lambda t: math.exp(f(t) - M)
    kw = {"points": pts, "epsabs": 0, "epsrel": 1e-13, "limit": 500}
    Z = integrate.quad(g, a, b, **kw)[0]
    J = integrate.quad(lambda t: (t - x0) * g(t), a, b, **kw)[0]
    return M + math.log(Z), x0 + J / Z


def marginal_bonferroni(cov, lo, hi, i, r, delta):
    """-log(1 - E0) for the top region: E0 = sum over k != i of the largest probability that x_k leaves
    its box given x_i in [r, r + delta] (untruncated marginal regression; the tail is quasi-convex in the
    conditional mean, so the sup is at an end).  This is the slack of the marginal side of the bound."""
    E = 0.0
    for kk in range(len(cov)):
        if kk == i:
            continue
        beta = cov[kk, i] / cov[i, i]
        tau = math.sqrt(cov[kk, kk] - cov[kk, i] ** 2 / cov[i, i])
        E += max(stats.norm.sf((hi[kk] - beta * x) / tau) + stats.norm.cdf((lo[kk] - beta * x) / tau)
                 for x in (r, r + delta))
    return -math.log1p(-E)


# ---------------------------------------------------------------------- 1. one-dimensional closed form
def _ltn_cases():
    rng = np.random.default_rng(0)
    cases = []
    for _ in range(40):  # random, vertex inside, above or below, up to 1e6 scale units away
        a = rng.uniform(-5, 5)
        b = a + 10 ** rng.uniform(-4, 1)
        K = 10 ** rng.uniform(-2, 3)
        s = 1 / math.sqrt(K)
        dist = 10 ** rng.uniform(0, 6)
        nu = [rng.uniform(a, b), b + dist * s, a - dist * s][rng.integers(3)]
        cases.append((a, b, nu * K, K))
    # extreme and narrow: both sides, widths 1e-6 .. 10 scale units, vertex 0 .. 1e3 scale units away
    # (results of order 1: see the xfail test below for farther vertices)
    for K in (1.0, 37.0):
        s = 1 / math.sqrt(K)
        for w in (1e-6, 1e-3, 0.1, 1.0, 10.0):
            a, b = 0.0, w * s
            cases.append((a, b, (a + b) / 2 * K, K))
            for dist in (1.0, 10.0, 1e2, 1e3):
                cases += [(a, b, (b + dist * s) * K, K), (a, b, (a - dist * s) * K, K)]
    cases += [(4.9, 4.9125, 1e7, 1.0), (-3.0, -2.9999, -1e7, 100.0), (-1.0, 1.0, 0.0, 1e-8)]
    return cases


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")  # quad's roundoff note at epsrel 1e-13
def test_log_trunc_normal_against_quad():
    """log of the integral to 1e-9 relative (to max(1, |value|)); the mean to 1e-9 of max(b - a, K^-1/2)
    (for intervals much narrower than the scale the mean loses up to ~5e-4 of the width to cancellation,
    i.e. < 5e-10 scale units, measured)."""
    cases = _ltn_cases()
    a, b, th, K = (np.array(c) for c in zip(*cases, strict=True))
    lz, m = log_trunc_normal(a, b, th, K)
    lz_only = log_trunc_normal(a, b, th, K, mean=False)
    assert np.array_equal(lz, lz_only)
    assert np.array_equal(m, log_trunc_normal(a, b, th, K, logz=False))   # the means-only call of the sweeps
    # every branch gives the same bits: each case alone (all tail or all inside), the whole mixed array
    # (mostly tail: tail formulas on every element) and a mostly-inside array
    inside = (a < th / K) & (th / K < b)
    assert 0 < inside.sum() < len(a) / 2, inside.sum()
    for t in range(len(a)):
        lz1, m1 = log_trunc_normal(a[t], b[t], th[t], K[t])
        assert lz1 == lz[t] and m1 == m[t], t
    pick = np.concatenate([np.flatnonzero(inside), np.flatnonzero(~inside)[:2]])
    lz2, m2 = log_trunc_normal(a[pick], b[pick], th[pick], K[pick])
    assert np.array_equal(lz2, lz[pick]) and np.array_equal(m2, m[pick])
    for t, (aa, bb, tt, KK) in enumerate(cases):
        ref, ref_m = ref_log_trunc_normal(aa, bb, tt, KK)
        assert abs(lz[t] - ref) <= 1e-9 * max(1.0, abs(ref)), (aa, bb, tt, KK, lz[t], ref)
        assert abs(m[t] - ref_m) <= 1e-9 * max(bb - aa, 1 / math.sqrt(KK)), (aa, bb, tt, KK, m[t], ref_m)
        assert aa <= m[t] <= bb
    # empty interval
    assert log_trunc_normal(1.0, 1.0, 0.3, 2.0, mean=False) == -math.inf


def test_log_trunc_normal_far_vertex_small_result():
    """Vertex 1e6 scale units away, result of order 1: int_0^1 exp(-1e6 t - t^2 / 2) dt ~ 1e-6."""
    for th in (-1e6, 1e6):
        a, b = (0.0, 1.0) if th < 0 else (-1.0, 0.0)
        ref, _ = ref_log_trunc_normal(a, b, th, 1.0)
        lz = float(log_trunc_normal(a, b, th, 1.0, mean=False))
        assert abs(lz - ref) <= 1e-9 * max(1.0, abs(ref)), (th, lz, ref)


# ----------------------------------------------------------------------- 2. certified box probabilities
def _random_box_cases():
    rng = np.random.default_rng(5)
    cases = []
    for d in (2, 3):
        for _ in range(4):
            A = rng.normal(size=(d, d))
            S = A @ A.T + 0.1 * np.eye(d)
            mu = rng.normal(size=d) * 3  # boxes partly or fully in the tails
            lo = rng.uniform(-3, 1, size=d)
            cases.append((S, mu, lo, lo + rng.uniform(0.2, 3, size=d)))
    S2 = np.array([[1.0, 0.6], [0.6, 0.8]])
    S3 = np.array([[1.0, 0.5, 0.2], [0.5, 1.0, -0.4], [0.2, -0.4, 1.5]])
    # strongly pinned: means 34 to 60 standard deviations outside the box, log P from -934 to -5935
    cases.append((S2, np.array([-34.0, 0.5]), np.array([-1.0, -1.0]), np.array([1.0, 2.0])))
    cases.append((S3, np.array([35.0, -25.0, 0.3]), np.array([-2.0, -1.0, -1.0]), np.array([2.0, 1.0, 1.5])))
    cases.append((S3, np.array([60.0, -45.0, 20.0]), np.array([-2.0, -1.0, -1.0]), np.array([2.0, 1.0, 1.5])))
    return cases


@pytest.mark.parametrize("case", range(11))
def test_box_bounds_bracket_quadrature(case):
    """lower - 1e-9 <= reference <= upper + 1e-9, and upper - lower <= tol = 1e-3 unless the refinement
    hit max_boxes (the reference is converged to 1e-10 by the finer run)."""
    S, mu, lo, hi = _random_box_cases()[case]
    box = BoxProbability(np.linalg.inv(S), tol=1e-3, max_boxes=4000)
    L, U, nb = box.bounds(mu, lo, hi)
    ref = log_box_ref(mu, S, lo, hi, 14, 12)
    assert ref == pytest.approx(log_box_ref(mu, S, lo, hi, 20, 16), abs=1e-10, rel=1e-13), "reference not converged"
    assert L - 1e-9 <= ref <= U + 1e-9, (case, L, ref, U, nb)
    if nb < 4000:
        assert U - L <= 1e-3, (case, L, U, nb)
    if ref < -500:
        assert nb == 1  # pinned: the law on the box is nearly a product of exponentials


def test_bounds_many_equals_bounds_row_by_row():
    rng = np.random.default_rng(7)
    A = rng.normal(size=(3, 3))
    S = A @ A.T + 0.2 * np.eye(3)
    mu = np.array([0.5, -4.0, 2.0])
    LO = rng.uniform(-3, 1, size=(6, 3))
    HI = LO + rng.uniform(0.1, 3, size=(6, 3))
    LO[5], HI[5] = [-1.0, 3.0, 5.0], [1.0, 3.5, 5.2]  # a deep-tail row next to central ones
    box = BoxProbability(np.linalg.inv(S), tol=1e-3)
    L, U, N = box.bounds_many(mu, LO, HI)
    for t in range(len(LO)):
        l1, u1, n1 = box.bounds(mu, LO[t], HI[t])
        assert L[t] == pytest.approx(l1, abs=1e-12) and U[t] == pytest.approx(u1, abs=1e-12) and N[t] == n1
    with pytest.raises(np.linalg.LinAlgError):
        BoxProbability(np.array([[1.0, 2.0], [2.0, 1.0]]))


# ------------------------------------------------------------------------------- 3. balancing signs
def _is_balanced(P, s):
    n = len(P)
    return all(s[j] * s[k] * P[j, k] <= 0 for j in range(n) for k in range(n) if j != k)


def test_balancing_signs_trees():
    rng = np.random.default_rng(3)
    # tridiagonal (a path) with mixed-sign off-diagonals
    n = 7
    P = np.diag(rng.uniform(2, 3, n))
    for j in range(n - 1):
        P[j, j + 1] = P[j + 1, j] = rng.choice([-1, 1]) * rng.uniform(0.2, 0.9)
    for root in (0, 3):
        s = balancing_signs(P, root=root)
        assert s is not None and s[root] == 1 and _is_balanced(P, s)
    # a star with mixed signs, root a leaf
    P = 4 * np.eye(6)
    P[0, 1:] = P[1:, 0] = [0.5, -0.3, 0.7, -0.1, 0.2]
    s = balancing_signs(P, root=2)
    assert s is not None and s[2] == 1 and _is_balanced(P, s)
    # a cycle with an even number of positive entries is balanced, an odd one is not
    C4 = 3 * np.eye(4)
    for (j, k), v in zip([(0, 1), (1, 2), (2, 3), (3, 0)], [0.5, 0.5, -0.5, -0.5], strict=True):
        C4[j, k] = C4[k, j] = v
    s = balancing_signs(C4)
    assert s is not None and _is_balanced(C4, s)
    C4[0, 3] = C4[3, 0] = 0.5
    assert balancing_signs(C4) is None
    # disconnected components get signs too
    s = balancing_signs(np.diag([1.0, 2.0, 3.0]))
    assert s is not None and list(s) == [1.0, 1.0, 1.0]


def test_balancing_signs_gp_block_is_unbalanced():
    """Squared-exponential kernel: the conditional precision of x_H given the rest is a principal block of
    the precision, with the checkerboard sign pattern sign(P_jk) = (-1)^(j - k); the triangle (9, 8, 10)
    has signs (-, -, +), which no choice of signs balances."""
    cov = gp_covariance(20, 2.0)
    H = [9, 7, 8, 10]
    _, S = conditional_block(cov, H, [k for k in range(20) if k not in H])
    P = np.linalg.inv(S)
    P = (P + P.T) / 2
    idx = np.array(H)
    assert np.all(np.sign(P) == (-1.0) ** (idx[:, None] - idx[None, :]))  # checkerboard
    assert balancing_signs(P) is None


def test_balancing_signs_ou_precision():
    """The OU precision is tridiagonal with negative off-diagonals; inversion leaves entries at rounding
    level elsewhere (some of the wrong sign), which must be zeroed first."""
    cov = ou_cov(8, 5.0)
    P = np.linalg.inv(cov)
    dg = np.sqrt(np.diag(P))
    tiny = np.abs(P) <= 1e-9 * np.outer(dg, dg)
    assert np.max(np.abs(P[tiny])) < 1e-12
    band = np.abs(np.subtract.outer(np.arange(8), np.arange(8))) == 1
    assert np.all(P[band] < 0) and np.all(tiny == (np.abs(np.subtract.outer(np.arange(8), np.arange(8))) > 1))
    P[tiny] = 0.0
    s = balancing_signs(P)
    assert s is not None and np.all(s == 1) and _is_balanced(P, s)


# ----------------------------------------------------------------------- 4. the MTP2 monotonicity claim
def test_lambda_monotone_in_flipped_natural_parameters():
    """b = 3, P = D_s P0 D_s with P0 tridiagonal with negative off-diagonals and s = (1, -1, 1):
    Lambda(eta) = log N(R x T) - log N(R' x T) (R above R', x ~ N(P^-1 eta, P^-1)) is non-decreasing in
    every s_k eta_k on a 5 x 5 x 5 grid of eta (means from inside to well outside the box), by the
    reference quadrature; and it does decrease in eta_1 itself (so the flip matters)."""
    P0 = np.array([[2.0, -0.8, 0.0], [-0.8, 2.5, -1.1], [0.0, -1.1, 1.8]])
    s = np.array([1.0, -1.0, 1.0])
    P = P0 * np.outer(s, s)
    assert list(balancing_signs(P)) == list(s)
    S = np.linalg.inv(P)
    lo_T, hi_T = np.array([-1.5, -1.0]), np.array([1.5, 2.0])
    R, Rp = (0.5, 1.0), (-1.0, -0.4)
    axes = [np.linspace(-6, 6, 5)] * 3  # values of s_k eta_k
    lam = np.empty((5, 5, 5))
    for idx in itertools.product(range(5), repeat=3):
        eta = s * np.array([axes[k][idx[k]] for k in range(3)])
        mu = S @ eta
        lam[idx] = (log_box_ref(mu, S, [R[0], *lo_T], [R[1], *hi_T], 12, 10)
                    - log_box_ref(mu, S, [Rp[0], *lo_T], [Rp[1], *hi_T], 12, 10))
    # resolution check at one pinned-ish point
    eta = s * np.array([6.0, -6.0, 6.0])
    chk = (log_box_ref(S @ eta, S, [R[0], *lo_T], [R[1], *hi_T], 18, 14)
           - log_box_ref(S @ eta, S, [Rp[0], *lo_T], [Rp[1], *hi_T], 18, 14))
    assert chk == pytest.approx(lam[4, 0, 4], abs=1e-10)
    for k in range(3):
        assert np.min(np.diff(lam, axis=k)) >= -1e-9, k
    assert np.min(np.diff(lam, axis=1)) > 0.01  # strictly increasing in s_1 eta_1 = -eta_1 here


# ------------------------------------------------------------------ 5, 6. end-to-end pinned audits
# AR(1) chains (Markov, cov rho^|j - k|; rho = exp(-1 / l) is the OU kernel exp(-|j - k| / l)): H is a block
# of b coordinates around the secret, C the rest.  With one box [-3, 3] for all coordinates the conditional
# mean of the block ends stays inside their box and the Bonferroni bound is finite (E < 1, measured for
# n = 4, 5, l = 5 .. 20, gamma = 3 .. 5); the conditioning coordinates get the wider box [-6, 6], which
# pushes the conditional mean of a block end past its box (pinned: the Bonferroni bound is infinite).
#
# Stated tolerance (measured, tol = atol = 1e-3, box tolerance 1e-2): the certified value lies 0.53-1.04 %
# above the exact grid maximum and the certified lower bound 0.62-1.23 % below it (certified / exact /
# lower: b = 3, l = 5: n = 4: 35.2300 / 34.8687 / 34.4392; n = 5: 69.8318 / 69.4628 / 69.0331; b = 4, n = 6:
# 54.0177 / 53.4984 / 52.9135; n = 5, l = 3: 39.7573 / 39.5431 / 39.2827; alternating rho = -0.8, n = 5:
# 62.0834 / 61.7525 / 61.3616).  Both gaps come from the marginal side, whose exact truncated probabilities
# the engine replaces by Bonferroni bounds: they stay below -log(1 - E0) (0.42 for l = 5: the top region's
# marginal Bonferroni sum) plus the box tolerances plus the region-continuum tolerance, asserted too.
GAMMA, GAMMA_C, DELTA = 3.0, 6.0, 0.25
REL_TOL = 0.015


def _pinned_chain(n, rho, H):
    cov = ar_cov(n, rho)
    cond = [k for k in range(n) if k not in H]
    lo, hi = np.full(n, -GAMMA), np.full(n, GAMMA)
    lo[cond], hi[cond] = -GAMMA_C, GAMMA_C
    return cov, lo, hi, cond


def _audit(n, rho, i, H, n_x=9):
    cov, lo, hi, cond = _pinned_chain(n, rho, H)
    res = GaussianRegionModel(cov, lo, hi, DELTA, tol=1e-3, atol=1e-3).leakage(i, cond, pinned_engines=True)
    exact, D = exact_chain_leakage(n, rho, lo, hi, DELTA, i, H, 23, n_x)
    fine, _ = exact_chain_leakage(n, rho, lo, hi, DELTA, i, H, 23, n_x, m=14, k=14, mr=6, kr=14)
    assert exact == pytest.approx(fine, abs=1e-7), "reference not converged"
    return res, res.details, exact, D, cov, lo, hi


def _conditional_precision(cov, lo, hi, i, H, cond):
    model = GaussianRegionModel(cov, lo, hi, DELTA)
    Hs = [i] + [k for k in H if k != i]
    W, S = conditional_block(cov, Hs, cond)
    Sinv, _, _ = natural_zonotope(model, Hs, cond, W, S)
    return (Sinv + Sinv.T) / 2


@pytest.mark.slow
@pytest.mark.parametrize("n,rho,i,H", [(4, math.exp(-1 / 5), 1, [0, 1, 2]), (5, math.exp(-1 / 5), 2, [1, 2, 3]),
                                       (6, math.exp(-1 / 5), 2, [1, 2, 3, 4]), (5, -0.8, 2, [1, 2, 3])])
def test_monotone_engine_against_exact_leakage(n, rho, i, H):
    """The certified value is >= the exact grid maximum (a valid necessary check: the grid maximum is
    below the true supremum), the certified lower bound (top region against bottom region at attained
    corners, which the grid contains) is <= it, both within REL_TOL; the Bonferroni bound is infinite.
    For rho < 0 the balancing signs flip the neighbours of the secret."""
    res, d, exact, D, cov, lo, hi = _audit(n, rho, i, H)
    if rho < 0:
        P = _conditional_precision(cov, lo, hi, i, H, [k for k in range(n) if k not in H])
        dg = np.sqrt(np.diag(P))
        P[np.abs(P) <= 1e-9 * np.outer(dg, dg)] = 0.0
        assert list(balancing_signs(P)) == [1.0, -1.0, -1.0]
    mono, lower = d["monotone"], d["bivariate_lower"]
    assert d["bonferroni"] == math.inf
    assert math.isfinite(mono) and res.value <= mono * (1 + 1e-9) + 1e-9
    # the exact maximum is at the top / bottom regions and a corner of the box of x_C
    r, rp, xl, xr = np.unravel_index(np.argmax(D), D.shape)
    assert {r, rp} == {0, D.shape[0] - 1} and xl in (0, D.shape[2] - 1) and xr in (0, D.shape[3] - 1)
    assert mono >= exact - 1e-6 and res.value >= exact - 1e-6
    assert lower <= exact + 1e-6
    assert mono <= exact * (1 + REL_TOL) and lower >= exact * (1 - REL_TOL), (mono, exact, lower)
    slack = marginal_bonferroni(cov, lo, hi, i, hi[i] - DELTA, DELTA) + 0.05 + 2e-3 * exact
    assert mono - exact <= slack and exact - lower <= slack, (mono, exact, lower, slack)


@pytest.mark.slow
@pytest.mark.parametrize("n,rho,i,H", [(5, math.exp(-1 / 5), 2, [1, 2, 3]), (6, math.exp(-1 / 5), 2, [1, 2, 3, 4]),
                                       (5, -0.8, 2, [1, 2, 3])])
def test_monotone_engine_conditional_part_is_tight(n, rho, i, H):
    """monotone_leakage alone, with zero marginal corrections: it then bounds
    sup_{x_C} max_{R, R'} [log N(R x T | x_C) - log N(R' x T | x_C)] - [log N0(R) - log N0(R')] with the
    untruncated marginal N0 = N(0, 1), without any Bonferroni slack.  Certified value >= the exact grid
    maximum >= certified lower bound, and the bracket is within the engine's tolerances (region continuum
    1e-3 relative, box probabilities 1e-2): measured brackets (lower / exact / certified) 69.4541 / 69.4628 /
    69.4826 (n = 5), 53.4827 / 53.4984 / 53.5187 (b = 4, n = 6), 61.7433 / 61.7525 / 61.7708 (rho = -0.8),
    i.e. widths 0.028, 0.036, 0.028 (at most 7e-4 relative)."""
    from puffgm.gaussian.monotone import monotone_leakage
    from puffgm.gaussian.primitives import PinnedOptions

    cov, lo, hi, cond = _pinned_chain(n, rho, H)
    model = GaussianRegionModel(cov, lo, hi, DELTA, tol=1e-3, atol=1e-3)
    zero = lambda ua, ub: np.zeros_like(np.asarray(ua, float))
    val, info = monotone_leakage(model, i, [k for k in H if k != i], cond, zero, zero,
                                 PinnedOptions(tol=1e-3, atol=1e-3))
    exact, _ = exact_chain_leakage(n, rho, lo, hi, DELTA, i, H, 23, 9, truncated=False)
    fine, _ = exact_chain_leakage(n, rho, lo, hi, DELTA, i, H, 23, 9, m=14, k=14, mr=6, kr=14, truncated=False)
    assert exact == pytest.approx(fine, abs=1e-7), "reference not converged"
    assert info["lower"] - 1e-6 <= exact <= val + 1e-6, (info["lower"], exact, val)
    assert val - info["lower"] <= 1e-3 * exact + 0.02, (val, info["lower"], exact)


@pytest.mark.slow
def test_monotone_engine_with_rounding_level_wrong_signs():
    """n = 5, l = 3: the conditional precision of x_H (H = {1, 2, 3}) given x_0, x_4 has its structural
    zero (1, 3) at +8.6e-17, which breaks the sign balance as computed; the engine zeroes such entries
    (and adds the perturbation they cause to the bound) and still applies, at or above the exact value."""
    n, rho, i, H = 5, math.exp(-1 / 3), 2, [1, 2, 3]
    cov, lo, hi, cond = _pinned_chain(n, rho, H)
    Sinv = _conditional_precision(cov, lo, hi, i, H, cond)
    assert 0 < Sinv[1, 2] < 1e-14 and balancing_signs(Sinv) is None
    _, d, exact, _, cov, lo, hi = _audit(n, rho, i, H)
    assert math.isfinite(d["monotone"]) and d["bonferroni"] == math.inf
    assert d["monotone"] >= exact - 1e-6 and d["bivariate_lower"] <= exact + 1e-6
    assert d["monotone"] <= exact * (1 + REL_TOL)


@pytest.mark.slow
def test_chain_reference_matches_generic_quadrature():
    """The chain reference against the generic conditional-Gaussian reference (n = 4, H = {0, 1, 2},
    C = {3}): the log ratios of Definition 7 (conditional and truncated-marginal terms) agree to 1e-8."""
    n, rho, H = 4, math.exp(-1 / 5), [0, 1, 2]
    cov, lo, hi, cond = _pinned_chain(n, rho, H)
    # regions -3, -0.125, 2.75; x_3 = -6, 0, 6
    _, D = exact_chain_leakage(n, rho, lo, hi, DELTA, 1, H, 3, 3, m=14, k=14, mr=6, kr=14)
    rs = np.linspace(lo[1], hi[1] - DELTA, 3)
    W, S = conditional_block(cov, H, cond)
    P0 = np.array([_chain_logmass_marginal(cov, lo, hi, 1, r) for r in rs])
    for t, x3 in enumerate(np.linspace(lo[3], hi[3], 3)):
        k = np.array([log_box_ref(W @ [x3], S, [lo[0], r, lo[2]], [hi[0], r + DELTA, hi[2]]) for r in rs]) - P0
        for r, rp in ((0, 2), (2, 0), (1, 2), (1, 0)):
            assert D[r, rp, 0, t] == pytest.approx(k[r] - k[rp], abs=1e-8), (r, rp, x3)


def _chain_logmass_marginal(cov, lo, hi, i, r):
    """log P(x_i in [r, r + delta], x_-i in the box) for n = 4 by the generic reference (x_i first)."""
    order = [i] + [k for k in range(len(cov)) if k != i]
    S = cov[np.ix_(order, order)]
    a = np.array([r] + [lo[k] for k in order[1:]])
    b = np.array([r + DELTA] + [hi[k] for k in order[1:]])
    return log_box_ref(np.zeros(len(cov)), S, a, b, 8, 10)


def test_box_bounds_ordered_on_ill_conditioned_precision():
    """cond(P) ~ 4e8 and log P ~ -1.3e8: without the rounding margin the upper bound came out 0.36 below
    the lower bound; with it (64 eps cond(P) (1 + |value|)) the pair is ordered."""
    rho = 1 - 1.695129270284923e-08
    sd = np.array([0.18794327387928086, 0.6622785496541326])
    S = np.outer(sd, sd) * np.array([[1, rho], [rho, 1]])
    P = np.linalg.inv(S)
    mu = np.array([-0.6122679026436624, 0.08003067515853064])
    lo = np.array([0.0045114621267243775, 0.2505636224269191])
    hi = np.array([0.007040792184034567, 0.31017391099928515])
    low, up, _ = BoxProbability(P, tol=1e-3).bounds(mu, lo, hi)
    assert low <= up
