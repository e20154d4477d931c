"""The certified cell engine (``puffgm.gaussian.multivariate.cell_leakage``) against exact references.

No Monte Carlo.  With zero marginal corrections the engine bounds

    sup_{x_C in box} max_{R, R' disjoint} [log N(R x T | x_C) - log N(R' x T | x_C)] - [log N0(R) - log N0(R')]

(N0 = the untruncated marginal of x_i), and ``details["lower"]`` is a certified lower bound of it.

* Squared-exponential kernel (not sign-balanced, Bonferroni bound infinite), b = 4: the reference is the
  exact value on a grid of regions and of x_C (box corners included), each 4-D box probability bracketed by
  certified bounds (:class:`~puffgm.gaussian.boxprob.BoxProbability` at tol 1e-4, itself audited against
  quadrature in ``tests/test_gaussian_monotone.py``) and cross-checked with the tensor Gauss-Legendre
  reference ``log_box_ref`` at the grid argmax.  Why not ``log_box_ref`` everywhere: in this pinned regime
  it converges slowly (the argmax pair's log ratio is 40.3675 / 40.3793 / 40.3811 at m = k = 8 / 10 / 12,
  1.5 / 5.7 / 20 s per pair, 2-core machine shared with other jobs), far from 1e-6 within the test budget;
  the certified brackets need no convergence argument.
* AR(1) chain (sign-balanced): the exact transfer-kernel reference ``exact_chain_leakage`` and the
  monotone engine.
"""

import json
import math
import os

import numpy as np
import pytest
from gaussian_reference import (
    ar_cov,
    exact_chain_leakage,
    log_box_ref,
    log_std_interval,
)

from puffgm.exceptions import ParameterError
from puffgm.gaussian import multivariate
from puffgm.gaussian.boxprob import BoxProbability
from puffgm.gaussian.closed_forms import gp_covariance
from puffgm.gaussian.leakage import GaussianRegionModel, ModelOptions
from puffgm.gaussian.monotone import balancing_signs, monotone_leakage
from puffgm.gaussian.multivariate import (
    CellOptions,
    _tighten,
    _tilted_face,
    _vertex_axes,
    cell_leakage,
    zonotope_misses_box,
)
from puffgm.gaussian.primitives import PinnedOptions
from puffgm.gaussian.zonotope import conditional_block, pinned_conditional


def _zero(ua, ub):
    return np.zeros_like(np.asarray(ua, float))


# ------------------------------------------------------------ 1. squared-exponential kernel, b = 4, pinned
SE_N, SE_L, SE_GAMMA, SE_DELTA = 6, 5.0, 5.0, 0.1
SE_I, SE_HIGH, SE_C = 2, [1, 3, 4], [0, 5]
SE_NR, SE_NX = 11, 3            # regions (both ends included) and x_C values per coordinate (corners included)
# engine settings that fit the test budget (certified for any settings; see the module docstring)
SE_KW = {"box_tol": 0.1, "max_boxes": 64, "max_cells": 40}


#: Long cross-checks (each 15-30 s on the 2-core machine) run only with PUFFGM_LONG_CHECKS=1; a faster
#: variant of each stays in the suite.
_LONG = pytest.mark.skipif(not os.environ.get("PUFFGM_LONG_CHECKS"),
                           reason="a long cross-check of the cell engine; set PUFFGM_LONG_CHECKS=1 to run it")


@pytest.fixture(scope="module")
def se_case():
    n, delta = SE_N, SE_DELTA
    cov = gp_covariance(n, SE_L)
    lo, hi = np.full(n, -SE_GAMMA), np.full(n, SE_GAMMA)
    model = GaussianRegionModel(cov, lo, hi, delta, tol=1e-3, atol=1e-3)
    H = [SE_I, *SE_HIGH]
    value, info = cell_leakage(model, SE_I, SE_HIGH, SE_C, _zero, _zero, CellOptions(**SE_KW))
    # the same split through the natural-parameter cells (used when the conditioning set is large)
    value_nat, info_nat = cell_leakage(model, SE_I, SE_HIGH, SE_C, _zero, _zero,
                                       CellOptions(**{**SE_KW, "max_cells": 12}, generator_cells=0))
    # reference: certified brackets of log N(R x T | x_C) on the grid
    W, S = conditional_block(cov, H, SE_C)
    box = BoxProbability(np.linalg.inv(S), tol=1e-3, max_boxes=4000)
    rs = np.linspace(lo[SE_I], hi[SE_I] - delta, SE_NR)
    LO, HI = np.tile(lo[H], (SE_NR, 1)), np.tile(hi[H], (SE_NR, 1))
    LO[:, 0], HI[:, 0] = rs, rs + delta
    xs = np.linspace(lo[SE_C[0]], hi[SE_C[0]], SE_NX)
    m0 = log_std_interval(rs, rs + delta)   # untruncated N(0, 1) marginal
    KL, KU = np.empty((SE_NR, SE_NX, SE_NX)), np.empty((SE_NR, SE_NX, SE_NX))
    for a, x0 in enumerate(xs):
        for b, x5 in enumerate(xs):
            L, U, _ = box.bounds_many(W @ [x0, x5], LO, HI)
            KL[:, a, b], KU[:, a, b] = L - m0, U - m0
    disjoint = (np.abs(rs[:, None] - rs[None, :]) >= delta - 1e-12)[:, :, None, None]
    D_lo = np.where(disjoint, KL[:, None] - KU[None, :], -np.inf)   # <= exact value at each grid point
    D_up = np.where(disjoint, KU[:, None] - KL[None, :], -np.inf)   # >= exact value at each grid point
    return {"model": model, "cov": cov, "lo": lo, "hi": hi, "W": W, "S": S, "rs": rs, "xs": xs, "value": value,
            "info": info, "value_nat": value_nat, "info_nat": info_nat, "D_lo": D_lo, "D_up": D_up}


@pytest.mark.slow
def test_se_case_is_unbalanced_and_bonferroni_infinite(se_case):
    model, lo, hi = se_case["model"], se_case["lo"], se_case["hi"]
    _, P, _, _ = pinned_conditional(model, [SE_I, *SE_HIGH], SE_C)
    assert balancing_signs((P + P.T) / 2) is None
    res = GaussianRegionModel(se_case["cov"], lo, hi, SE_DELTA).leakage(SE_I, SE_C, pinned_engines=False)
    assert res.details["bonferroni"] == math.inf
    v, info = monotone_leakage(model, SE_I, SE_HIGH, SE_C, _zero, _zero)
    assert v == math.inf and "sign-balanced" in info["reason"]


@pytest.mark.slow
def test_se_cell_engine_is_sound(se_case):
    """certified value >= the grid maximum of certified lower bounds of the exact value (a necessary check:
    every grid value is attained, so below the supremum); the lower bound <= certified value; the lower bound
    (top region against bottom region at corners of the box of x_C) <= the grid's certified upper bound over
    those pairs and corners, where it claims to be attained.  The grid bracket is narrow (measured: the
    argmax box probability hits the 4000 sub-box budget, so the bracket is 0.14 wide, not 2e-3) and the
    tensor quadrature (m = k = 10, within 2e-3 of m = k = 12) lies in it at the argmax.  Measured (l = 5,
    n = 6): grid bracket [35.885, 36.024], quadrature 35.961, at r = -4.01 against r' = 4.9 and the corner
    x_C = (-5, -5): the argmax is *not* the top/bottom pair, unlike the sign-balanced case.  Certified (cells
    over the generator weights, the default for two conditioning coordinates): 37.91 after 39 cells (48.88
    before the Bonferroni sandwich, 58.98 before the symmetry halved the cell space); the natural-parameter
    cells (12 cells): 81.86 (90.91 before the Bonferroni sandwich, 631.3 before the
    cell tightening, 1117.9 before the tilted face; they suit large conditioning sets, not this flat zonotope);
    lower bound 33.28 (corner search with a 41-region grid at the best corner; 31.61 top/bottom only)."""
    value, info, D_lo, D_up = se_case["value"], se_case["info"], se_case["D_lo"], se_case["D_up"]
    rs, xs = se_case["rs"], se_case["xs"]
    grid_lo, grid_up = float(D_lo.max()), float(D_up.max())
    assert grid_up - grid_lo <= 0.2, (grid_lo, grid_up)
    assert info["cell_space"] == "generators" and se_case["info_nat"]["cell_space"] == "natural parameters"
    assert value >= grid_lo - 1e-6, (value, grid_lo)
    assert se_case["value_nat"] >= grid_lo - 1e-6, (se_case["value_nat"], grid_lo)
    assert info["lower"] <= value and se_case["info_nat"]["lower"] <= se_case["value_nat"]
    # the lower bound is attained at a corner of the box of x_C (any pair of regions): below the exact sup,
    # which is at most the certified value; on this grid it is below the grid's certified upper bound at corners
    corners = np.ix_(range(SE_NR), range(SE_NR), [0, SE_NX - 1], [0, SE_NX - 1])
    assert info["lower"] <= grid_up + 1e-9, (info["lower"], grid_up)
    assert info["lower"] >= float(D_lo[corners].max()) - 3.0, (info["lower"], D_lo[corners].max())
    # independent cross-check of the grid argmax by tensor Gauss-Legendre quadrature
    r, rp, a, b = np.unravel_index(np.argmax(D_lo), D_lo.shape)
    lo, hi, delta = se_case["lo"], se_case["hi"], SE_DELTA
    H = [SE_I, *SE_HIGH]
    mu = se_case["W"] @ [xs[a], xs[b]]
    q = [log_box_ref(mu, se_case["S"], [x, *lo[H[1:]]], [x + delta, *hi[H[1:]]], 10, 10) for x in (rs[r], rs[rp])]
    q = q[0] - q[1] - float(log_std_interval(rs[r:r + 1], rs[r:r + 1] + delta)[0]
                            - log_std_interval(rs[rp:rp + 1], rs[rp:rp + 1] + delta)[0])
    assert D_lo[r, rp, a, b] - 5e-3 <= q <= D_up[r, rp, a, b] + 5e-3, (D_lo[r, rp, a, b], q, D_up[r, rp, a, b])


def test_se_cell_engine_tightness_at_budget(se_case):
    """Within the test's budget (39 cells, box gaps 0.1, at most 64 sub-boxes) the certified value is within a
    factor 1.1 of the grid's certified upper bound 36.02 (measured 37.91, factor 1.05; before the Bonferroni
    sandwich 48.88, factor 1.36; before the symmetry 58.98, factor 1.64, and 46.75 after 99 cells).  Before
    the vertex bound and the generator cells the same budget gave 1967.4."""
    assert se_case["value"] <= 1.1 * float(se_case["D_up"].max()), se_case["value"]
    # natural-parameter cells, 12 cells: measured 81.86 (factor 2.27); 90.91 (factor 2.52) before the
    # Bonferroni sandwich, 631.3 (factor 17.5) before the cell tightening, whose box corners lay outside the
    # thin zonotope
    assert se_case["value_nat"] <= 2.35 * float(se_case["D_up"].max()), se_case["value_nat"]


@pytest.mark.slow
@_LONG
def test_se_cell_engine_without_bonferroni(se_case):
    """The sub-box bounds alone (``bonferroni=False``, the engine of earlier versions): still sound and within
    a factor 1.45 of the grid's certified upper bound (measured 48.88 after 39 cells, against 37.91 with the
    sandwich; 16.1 s against 9.7 s on the 2-core machine)."""
    value, info = cell_leakage(se_case["model"], SE_I, SE_HIGH, SE_C, _zero, _zero,
                               CellOptions(**SE_KW, bonferroni=False))
    assert info["cell_space"] == "generators"
    assert float(se_case["D_lo"].max()) - 1e-6 <= value <= 1.45 * float(se_case["D_up"].max()), value
    assert se_case["value"] < value


@pytest.mark.xfail(strict=True, reason="the cell engine does not converge to 2 % within the test budget (documented)")
def test_se_cell_engine_is_tight(se_case):
    """Expected of a converged branch and bound: value <= grid max (1 + tol) + box tolerance slack, with
    tol = 0.02 the engine's relative gap and 2 x box_tol = 0.2 for the two box probabilities of a pair.
    The grid maximum is a lower bound of the exact supremum, not the supremum; but a finer grid (11 x 11
    values of x_C, 11 regions, box bounds at tol 1e-3) gave 35.95 too.  Measured: certified 37.91 after 39
    cells (this test's budget; 48.88 before the Bonferroni sandwich, 58.98 before the symmetry, and 46.75
    after 99 cells then); grid bracket [35.885, 36.024]: the gap closes slowly
    (the budget stops the branch and bound, not the gap rule)."""
    grid = float(se_case["D_up"].max())
    assert se_case["value"] <= grid * 1.02 + 2 * SE_KW["box_tol"], (se_case["value"], grid)


# ------------------------------------------------------------------- 2. sign-balanced AR(1) chain, b = 3
# The branch and bound stops once cert - lower <= tol |lower| (tol = 0.02, the default) with lower <= exact
# <= monotone value, so a converged run (fewer cells than the budget) is within a factor 1 + tol of both.
CHAIN_KW = {"box_tol": 0.1, "max_boxes": 64, "max_cells": 60}
CHAIN_TOL = 0.02
@pytest.mark.slow
@pytest.mark.parametrize("generator_cells", [4, 0])
def test_cell_engine_on_markov_chain_brackets_exact(generator_cells):
    """OU chain n = 5, l = 5, H = {1, 2, 3}, box [-3, 3] and [-6, 6] for C, delta = 0.25 (the monotone
    engine's pinned audit): the cell engine's value >= the exact transfer-kernel value and >= its own lower
    bound, which is <= the exact value; compared with the monotone engine (same quantity, certified).
    Both cell spaces (generator weights, natural parameters) must stop on their own gap rule."""
    n, rho, i, H = 5, math.exp(-1 / 5), 2, [1, 2, 3]
    cov = ar_cov(n, rho)
    cond = [k for k in range(n) if k not in H]
    lo, hi = np.full(n, -3.0), np.full(n, 3.0)
    lo[cond], hi[cond] = -6.0, 6.0
    delta = 0.25
    model = GaussianRegionModel(cov, lo, hi, delta, tol=1e-3, atol=1e-3)
    exact, _ = exact_chain_leakage(n, rho, lo, hi, delta, i, H, 23, 9, truncated=False)
    mono, _ = monotone_leakage(model, i, [1, 3], cond, _zero, _zero, PinnedOptions(tol=1e-3, atol=1e-3))
    val, info = cell_leakage(model, i, [1, 3], cond, _zero, _zero,
                             CellOptions(tol=CHAIN_TOL, generator_cells=generator_cells, **CHAIN_KW))
    assert val >= exact - 1e-6 and mono >= exact - 1e-6, (val, mono, exact)
    assert info["lower"] <= exact + 1e-6 <= val + 2e-6, (info["lower"], exact, val)
    assert info["cells"] < CHAIN_KW["max_cells"], info   # stopped by the gap, not the budget
    assert val <= info["lower"] + CHAIN_TOL * abs(info["lower"]) and val <= (1 + CHAIN_TOL) * mono, (val, mono, exact)
    assert info["symmetric"]   # centred prior: half the cell space
    if generator_cells == 0:
        # the tilted face decides cells here (measured: it gives the bound of all 22 cell orientations, 11 of
        # them tied with the flat face), against the exact value
        assert info["tilted_wins"] > 0, info
        # the symmetry only halves the work: the whole cell space gives the same value with more cells
        val_all, info_all = cell_leakage(model, i, [1, 3], cond, _zero, _zero,
                                         CellOptions(tol=CHAIN_TOL, generator_cells=0, symmetry=False, **CHAIN_KW))
        assert abs(val_all - val) <= 1e-9 * abs(val) and info_all["cells"] > info["cells"], (val_all, val, info_all)


# ------------------------------------------------------------------------------ 3. zonotope_misses_box
def test_zonotope_misses_box_never_false_and_detects_far_boxes():
    rng = np.random.default_rng(11)
    for _ in range(25):
        dim, m = rng.integers(2, 5), rng.integers(1, 6)
        center, gens = rng.normal(size=dim) * 3, rng.normal(size=(dim, m)) * rng.uniform(0.1, 5)
        k = int(rng.integers(1, dim + 1))
        cons = sorted(rng.choice(dim, size=k, replace=False).tolist())
        reach = np.sum(np.abs(gens[cons]), axis=1)
        for _ in range(6):
            # a point of Z (interior, or a vertex) and a box around it (possibly degenerate)
            u = rng.uniform(-1, 1, size=m) if rng.random() < 0.5 else rng.choice([-1.0, 1.0], size=m)
            p = center[cons] + gens[cons] @ u
            w = rng.uniform(0, 1, size=k) * rng.choice([0.0, 1e-6, 0.5], size=k)
            assert not zonotope_misses_box(center, gens, cons, p - w, p + w)
        # far away along the first constrained axis: beyond the reach of Z by 10 %
        far = center[cons].copy()
        far[0] += 1.1 * reach[0] + 0.1
        assert zonotope_misses_box(center, gens, cons, far, far + 1.0)
        below = center[cons].copy()
        below[0] -= 1.1 * reach[0] + 0.1
        assert zonotope_misses_box(center, gens, cons, below - 1.0, below)
    # a box off a thin (flat) zonotope in a direction no coordinate axis sees: Z = segment from (-1, -1) to
    # (1, 1); the box [0.4, 1] x [-1, -0.4] lies inside Z's bounding box but misses the segment
    c, G = np.zeros(2), np.array([[1.0], [1.0]])
    assert zonotope_misses_box(c, G, [0, 1], [0.4, -1.0], [1.0, -0.4])
    assert not zonotope_misses_box(c, G, [0, 1], [0.4, 0.3], [1.0, 0.5])


def _random_cells(seed, n, min_dim, min_m):
    """n random zonotopes Z = center + gens [-1, 1]^m, xi = eta_{1:}, each with a cell [lo, hi] of xi around a
    point of Z; yields (rng, center, gens, cons, lo, hi)."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        dim, m = int(rng.integers(min_dim, 6)), int(rng.integers(min_m, 8))
        center, gens = rng.normal(size=dim), rng.normal(size=(dim, m)) * rng.uniform(0.5, 5)
        cons = list(range(1, dim))
        p = center[cons] + gens[cons] @ rng.uniform(-1, 1, size=m)
        half = rng.uniform(0.05, 1.0, size=dim - 1) * np.sum(np.abs(gens[cons]), axis=1)
        lo, hi = p - half * rng.uniform(0, 1, dim - 1), p + half * rng.uniform(0, 1, dim - 1)
        yield rng, center, gens, cons, lo, hi


def _lp_over_cell(c, center, gens, cons, lo, hi):
    """HiGHS's maximiser of c . u over the generator weights u of Z n {lo <= xi <= hi}."""
    from scipy.optimize import linprog

    Gc = gens[cons]
    return linprog(-c, A_ub=np.vstack([Gc, -Gc]), b_ub=np.concatenate([hi - center[cons], center[cons] - lo]),
                   bounds=[(-1, 1)] * gens.shape[1], method="highs")


def _weights_in_cell(rng, center, gens, cons, lo, hi):
    """Generator weights of 4000 random points and their sign vertices whose xi lies in [lo, hi]."""
    U = rng.uniform(-1, 1, size=(4000, gens.shape[1]))
    U = np.vstack([U, np.sign(U)])
    xi = center[cons] + U @ gens[cons].T
    return list(U[np.all((xi >= lo) & (xi <= hi), axis=1)])


# ------------------------------------------------------------------------------------ 4. the tilted face
def test_tilted_face_bounds_eta0_on_the_cell():
    """_tilted_face(center, gens, cons, lo, hi, W) -> (alpha, beta): eta_0 <= alpha + beta . xi for every point
    of Z = center + gens [-1, 1]^m whose xi = eta_cons lies in [lo, hi] (sampled points, vertices and the LP
    maximisers of eta_0 - beta . xi over Z n cell), with beta zero off W; and the plane is not flat when eta_0
    varies with xi."""
    checked = tilted = 0
    for rng, center, gens, cons, lo, hi in _random_cells(5, 30, 3, 3):
        dim = gens.shape[0]
        W = sorted(rng.choice(dim - 1, size=int(rng.integers(1, dim)), replace=False).tolist())
        out = _tilted_face(center, gens, cons, lo, hi, W, 1e-9)
        if out is None:
            continue
        alpha, beta = out
        assert np.all(beta[[j for j in range(dim - 1) if j not in W]] == 0)
        tilted += bool(np.any(beta != 0))
        Gc = gens[cons]
        # LP maximiser of eta_0 - beta . xi over Z n cell, plus random points of Z n cell
        res = _lp_over_cell(gens[0] - beta @ Gc, center, gens, cons, lo, hi)
        pts = ([res.x] if res.status == 0 else []) + _weights_in_cell(rng, center, gens, cons, lo, hi)
        for u in pts:
            eta = center + gens @ u
            assert eta[0] <= alpha + beta @ eta[cons] + 1e-7 * (1 + abs(alpha)), (eta, alpha, beta)
            checked += 1
    assert checked > 1000 and tilted >= 10, (checked, tilted)


# ------------------------------------------------------------------------------- 5. the cell tightening
def test_tighten_keeps_every_point_of_z_in_the_cell():
    """_tighten(center, gens, cons, lo, hi, pad) -> (lo', hi') inside [lo, hi] holding every point of
    Z = center + gens [-1, 1]^m whose xi = eta_cons lies in [lo, hi] (sampled points, vertices and the LP
    extremes of each xi_j over Z n cell); on a thin zonotope it shrinks the box to Z's part of it."""
    checked = shrunk = 0
    for rng, center, gens, cons, lo, hi in _random_cells(17, 30, 2, 2):
        dim = gens.shape[0]
        lo2, hi2 = _tighten(center, gens, cons, lo, hi, 1e-9)
        assert lo2 is not None   # the box holds the point p of Z
        assert np.all(lo2 >= lo) and np.all(hi2 <= hi) and np.all(lo2 <= hi2)
        shrunk += bool(np.any(lo2 > lo + 1e-6) or np.any(hi2 < hi - 1e-6))
        Gc = gens[cons]
        pts = []
        for j in range(dim - 1):
            for sgn in (1, -1):
                res = _lp_over_cell(sgn * Gc[j], center, gens, cons, lo, hi)
                assert res.status == 0
                pts.append(res.x)
        pts += _weights_in_cell(rng, center, gens, cons, lo, hi)
        for u in pts:
            x = center[cons] + Gc @ u
            slack = 1e-7 * (1 + np.abs(x))
            assert np.all(x >= lo2 - slack) and np.all(x <= hi2 + slack), (x, lo2, hi2)
            checked += 1
    assert checked > 1000 and shrunk >= 10, (checked, shrunk)
    # Z = the segment from (-1, -1) to (1, 1): the box [0, 1] x [-1, 1] holds the part from (0, 0) to (1, 1)
    lo2, hi2 = _tighten(np.zeros(2), np.array([[1.0], [1.0]]), [0, 1], np.array([0.0, -1.0]), np.array([1.0, 1.0]),
                        1e-9)
    assert np.allclose(lo2, [0.0, 0.0], atol=1e-6) and np.allclose(hi2, [1.0, 1.0], atol=1e-6), (lo2, hi2)


def test_symmetry_only_for_centred_priors():
    """The cell space is halved only when every prior mean is the centre of its box (point symmetry); a
    shifted mean keeps the whole space.  Both runs are certified (the value bounds the grid lower bound of the
    se_case fixture for the symmetric model; the shifted model is a different prior)."""
    cov = gp_covariance(SE_N, SE_L)
    lo, hi = np.full(SE_N, -SE_GAMMA), np.full(SE_N, SE_GAMMA)
    kw = {"box_tol": 0.1, "max_boxes": 64, "max_cells": 3, "lower": False}
    _, sym = cell_leakage(GaussianRegionModel(cov, lo, hi, SE_DELTA), SE_I, SE_HIGH, SE_C, _zero, _zero,
                          CellOptions(**kw))
    _, off = cell_leakage(GaussianRegionModel(cov, lo, hi, SE_DELTA), SE_I, SE_HIGH, SE_C, _zero, _zero,
                          CellOptions(symmetry=False, **kw))
    _, shifted = cell_leakage(GaussianRegionModel(cov, lo, hi, SE_DELTA, mean=np.full(SE_N, 0.5)), SE_I, SE_HIGH,
                              SE_C, _zero, _zero, CellOptions(**kw))
    assert sym["symmetric"] and not off["symmetric"] and not shifted["symmetric"]


def test_without_lower_bound_only_the_budget_stops():
    """lower=False: no lower bound, so the gap rule cannot stop the branch and bound; the budget does (a
    -inf lower bound once made the gap rule true at the first cell)."""
    cov = gp_covariance(SE_N, SE_L)
    model = GaussianRegionModel(cov, np.full(SE_N, -SE_GAMMA), np.full(SE_N, SE_GAMMA), SE_DELTA)
    v, info = cell_leakage(model, SE_I, SE_HIGH, SE_C, _zero, _zero,
                           CellOptions(box_tol=0.1, max_boxes=64, max_cells=5, lower=False))
    assert "lower" not in info and info["cells"] >= 3 and math.isfinite(v), info


@pytest.mark.slow
@pytest.mark.parametrize("generator_cells", [4, 0])
def test_time_budget_stops_with_a_certified_value(se_case, generator_cells):
    """max_seconds stops the branch and bound (both cell spaces) once the clock passes it, with the cells
    budget far away; the value then is the largest bound of the leaves, still certified (>= the grid's
    certified lower bound of the exact value); the stop rule is reported, here and through the model's
    cell_seconds, which is validated."""
    grid_lo = float(se_case["D_lo"].max())
    v, info = cell_leakage(se_case["model"], SE_I, SE_HIGH, SE_C, _zero, _zero,
                           CellOptions(box_tol=0.1, max_boxes=64, max_cells=10_000, lower=False, max_seconds=1e-6,
                                       generator_cells=generator_cells))
    assert info["stopped"] == "seconds" and info["cells"] == 1 and v >= grid_lo - 1e-6, (v, info)
    _, done = cell_leakage(se_case["model"], SE_I, SE_HIGH, SE_C, _zero, _zero,
                           CellOptions(box_tol=0.1, max_boxes=64, max_cells=3, lower=False, max_seconds=1e6,
                                       generator_cells=generator_cells))
    assert done["stopped"] == "cells", done
    cov, lo, hi = se_case["cov"], se_case["lo"], se_case["hi"]
    res = GaussianRegionModel(cov, lo, hi, SE_DELTA,
                              options=ModelOptions(cell_budget=50, cell_seconds=1e-6)).leakage(SE_I, SE_C)
    eng = res.details["cell_engine"]
    assert (eng["cells"], eng["stopped"]) == (1, "seconds") and 0 < eng["seconds"] < 60, eng
    assert res.value >= grid_lo - 1e-6
    for bad in (0, -1.0, math.inf, math.nan, True, "5"):
        with pytest.raises(ParameterError, match="cell_seconds"):
            GaussianRegionModel(cov, lo, hi, SE_DELTA, options=ModelOptions(cell_seconds=bad))


@pytest.mark.slow
@pytest.mark.parametrize("generator_cells", [4, pytest.param(0, marks=_LONG)])
def test_target_stops_at_the_first_value_below_it(se_case, generator_cells):
    """target stops the branch and bound as soon as the certified value is at or below it: with the value
    of a longer run as target, the run stops there with that value (the certified value never increases),
    no later; a target above the first cell's bound stops after it; the rule is reported, here and through
    the model's cell_target, which is validated."""
    kw = {**_CK_KW, "generator_cells": generator_cells}
    v, info = cell_leakage(se_case["model"], SE_I, SE_HIGH, SE_C, _zero, _zero, CellOptions(max_cells=11, **kw))
    assert info["stopped"] == "cells"
    vt, it = cell_leakage(se_case["model"], SE_I, SE_HIGH, SE_C, _zero, _zero,
                          CellOptions(max_cells=10_000, target=v, **kw))
    assert (vt, it["stopped"]) == (v, "target") and it["cells"] <= info["cells"], (vt, it, v, info)
    v1, i1 = cell_leakage(se_case["model"], SE_I, SE_HIGH, SE_C, _zero, _zero,
                          CellOptions(max_cells=10_000, target=1e9, **kw))
    assert (i1["cells"], i1["stopped"]) == (1, "target") and v1 <= 1e9
    cov, lo, hi = se_case["cov"], se_case["lo"], se_case["hi"]
    res = GaussianRegionModel(cov, lo, hi, SE_DELTA,
                              options=ModelOptions(cell_budget=50, cell_target=1e9)).leakage(SE_I, SE_C)
    assert (res.details["cell_engine"]["cells"], res.details["cell_engine"]["stopped"]) == (1, "target")
    for bad in (-1.0, math.inf, math.nan, True, "5"):
        with pytest.raises(ParameterError, match="cell_target"):
            GaussianRegionModel(cov, lo, hi, SE_DELTA, options=ModelOptions(cell_target=bad))
        with pytest.raises(ParameterError, match="target"):
            cell_leakage(se_case["model"], SE_I, SE_HIGH, SE_C, _zero, _zero, CellOptions(target=bad, **kw))


# ----------------------------------------------------------------------------------- 6. face pruning
_CK_KW = {"box_tol": 0.1, "max_boxes": 64, "lower": False}


@pytest.mark.slow
def test_face_pruning_gives_the_same_bits(se_case, monkeypatch):
    """Evaluating a face only while it can change the cell's bound (tilted face first, the flat face from
    its worst corner, each stopped once it cannot win; none when the other orientation is higher) gives the
    same bits as evaluating every corner of both faces, in both cell spaces; the pruned run evaluates fewer
    corners."""
    import puffgm.gaussian.multivariate as mv

    calls = {"n": 0}
    orig = mv.partition_max

    def counting(*args, **kw):
        calls["n"] += 1
        return orig(*args, **kw)

    monkeypatch.setattr(mv, "partition_max", counting)
    for generator_cells in (4, 0):
        runs = []
        for prune in (True, False):
            monkeypatch.setattr(mv, "_PRUNE_FACES", prune)
            calls["n"] = 0
            v, info = cell_leakage(se_case["model"], SE_I, SE_HIGH, SE_C, _zero, _zero,
                                   CellOptions(max_cells=8, generator_cells=generator_cells, **_CK_KW))
            runs.append((v.hex(), info["estimate"].hex(), info["cells"], calls["n"]))
        assert runs[0][:3] == runs[1][:3], runs
        if generator_cells == 0:
            assert runs[0][3] < runs[1][3], runs


# ------------------------------------------------------------------------------------ 7. checkpoints
@pytest.mark.slow
@pytest.mark.parametrize("generator_cells", [4, 0])
def test_checkpoint_resumes_exactly(se_case, tmp_path, generator_cells, monkeypatch):
    """A run cut in two pieces through a checkpoint ends with the same bits as one uninterrupted run (value,
    largest value met, cells, leaves), both cell spaces; the value stays >= the grid's certified lower bound;
    the file holds the certified value and the leaves, and the seconds of both pieces add up.  The files
    written on the way say "stopped": null (a run still going, or interrupted), the last one the rule."""
    model, grid_lo = se_case["model"], float(se_case["D_lo"].max())
    kw = {**_CK_KW, "generator_cells": generator_cells}
    v, info = cell_leakage(model, SE_I, SE_HIGH, SE_C, _zero, _zero, CellOptions(max_cells=9, **kw))
    assert "checkpoint" not in info and info["stopped"] == "cells"
    seen, save = [], multivariate._Checkpoint.save

    def spy(self, heap, counter, best, stats):
        save(self, heap, counter, best, stats)
        with open(self.path) as fh:
            seen.append(json.load(fh)["stopped"])
    monkeypatch.setattr(multivariate._Checkpoint, "save", spy)
    v1, i1 = cell_leakage(model, SE_I, SE_HIGH, SE_C, _zero, _zero,
                          CellOptions(max_cells=5, checkpoint_dir=tmp_path, checkpoint_seconds=0.0, **kw))
    assert len(seen) >= 2 and seen[-1] == "cells" and all(x is None for x in seen[:-1]), seen
    monkeypatch.undo()
    assert i1["cells"] < info["cells"] and v1 >= v
    with open(i1["checkpoint"]) as fh:
        rec = json.load(fh)
    assert float.fromhex(rec["value"]) == v1 and rec["stats"]["cells"] == i1["cells"]
    assert max(float.fromhex(e["bound"]) for e in rec["leaves"]) == v1
    v2, i2 = cell_leakage(model, SE_I, SE_HIGH, SE_C, _zero, _zero,
                          CellOptions(max_cells=9, checkpoint_dir=tmp_path, **kw))
    assert (v2, i2["estimate"], i2["cells"]) == (v, info["estimate"], info["cells"]), (v2, i2, v, info)
    assert v2 >= grid_lo - 1e-6 and i2["checkpoint"] == i1["checkpoint"]
    assert i2["seconds"] > i1["seconds"] and len(os.listdir(tmp_path)) == 1
    with open(i2["checkpoint"]) as fh:
        rec2 = json.load(fh)
    assert float.fromhex(rec2["value"]) == v and rec2["stopped"] == "cells"
    # a finished run read back: nothing more is evaluated
    v3, i3 = cell_leakage(model, SE_I, SE_HIGH, SE_C, _zero, _zero,
                          CellOptions(max_cells=9, checkpoint_dir=tmp_path, **kw))
    assert (v3, i3["cells"]) == (v, info["cells"])


def test_checkpoint_files_are_per_problem_and_checked(se_case, tmp_path):
    """Another split, other corrections or other bound options get their own file; a file that is not a
    checkpoint of the problem (corrupt, or another fingerprint inside) fails with one sentence; bad
    parameters fail with one sentence."""
    model = se_case["model"]
    run = lambda **kw: cell_leakage(model, SE_I, SE_HIGH, SE_C, _zero, _zero,
                                    CellOptions(max_cells=3, checkpoint_dir=tmp_path, **{**_CK_KW, **kw}))
    _, info = run()
    path = info["checkpoint"]
    run(n_vertex_axes=2)
    cell_leakage(model, SE_I, SE_HIGH, SE_C, lambda a, b: _zero(a, b) + 0.25, _zero,
                 CellOptions(max_cells=3, checkpoint_dir=tmp_path, **_CK_KW))
    cell_leakage(model, SE_I, [1, 3], [0, 4, 5], _zero, _zero,
                 CellOptions(max_cells=3, checkpoint_dir=tmp_path, **_CK_KW))
    assert len([f for f in os.listdir(tmp_path) if f.endswith(".json")]) == 4
    with open(path) as fh:
        rec = json.load(fh)
    rec["fingerprint"] = "0" * 64
    with open(path, "w") as fh:
        json.dump(rec, fh)
    with pytest.raises(ParameterError, match="not a cell-engine checkpoint of this problem"):
        run()
    with open(path, "w") as fh:
        fh.write("{not json")
    with pytest.raises(ParameterError, match="not a cell-engine checkpoint"):
        run()
    with pytest.raises(ParameterError, match="checkpoint_dir"):
        cell_leakage(model, SE_I, SE_HIGH, SE_C, _zero, _zero, CellOptions(max_cells=3, checkpoint_dir=5, **_CK_KW))
    for bad in (-1.0, math.nan, True, "60"):
        with pytest.raises(ParameterError, match="checkpoint_seconds"):
            run(checkpoint_seconds=bad)


@pytest.mark.slow
@pytest.mark.parametrize("generator_cells, last", [(4, 15), pytest.param(0, 33, marks=_LONG)])
def test_certified_value_never_increases(se_case, tmp_path, generator_cells, last):
    """A half keeps the smaller of its own bound and its parent's, so the certified value is non-increasing
    in the cells (one run resumed through a checkpoint, budget by budget) and stays >= the grid's certified
    lower bound of the exact value.  (Before, the natural-parameter cells went from 63.02 after 27 cells to
    64.76 after 29.)"""
    grid_lo = float(se_case["D_lo"].max())
    values = []
    for budget in range(3, last + 1, 2):
        v, info = cell_leakage(se_case["model"], SE_I, SE_HIGH, SE_C, _zero, _zero,
                               CellOptions(max_cells=budget, checkpoint_dir=tmp_path, generator_cells=generator_cells,
                                           **_CK_KW))
        values.append((info["cells"], v))
    assert all(v2 <= v1 for (_, v1), (_, v2) in zip(values, values[1:], strict=False)), values
    assert values[-1][1] >= grid_lo - 1e-6 and values[-1][0] > values[0][0], values


def test_vertex_axes_rule():
    """The n_min axes of largest positive slack always, then further axes by decreasing slack while their
    slack exceeds the threshold, at most n_max in all."""
    sl = np.array([5.0, 0.0, 40.0, 3.0, 20.0, 0.5])
    assert _vertex_axes(sl, 3, 3, 0.0) == [2, 4, 0]
    assert _vertex_axes(sl, 3, 6, 1.0) == [2, 4, 0, 3]          # 0.5 <= 1: stops there
    assert _vertex_axes(sl, 3, 6, 0.0) == [2, 4, 0, 3, 5]       # a zero slack is never a vertex axis
    assert _vertex_axes(sl, 2, 4, 4.0) == [2, 4, 0]
    assert _vertex_axes(sl, 1, 6, 100.0) == [2]
    assert _vertex_axes(sl, 3, 1, 0.0) == [2, 4, 0]             # n_max below n_min: n_min
    assert _vertex_axes(np.zeros(3), 3, 6, 0.0) == []


@pytest.mark.slow
@pytest.mark.parametrize("generator_cells", [4, pytest.param(0, marks=_LONG)])
def test_adaptive_vertex_axes(se_case, tmp_path, generator_cells):
    """The adaptive vertex axes: with threshold 0 every axis of positive slack joins, so n_vertex_axes = 1 and
    max_vertex_axes = 3 gives the same bits as three fixed vertex axes; with a threshold no slack reaches it
    gives the bits of one fixed axis; in between the value is certified (>= the grid's certified lower bound
    of the exact value).  Runs that cannot add an axis keep the fingerprint of the fixed rule (also when the
    cell space has no axis beyond the n_vertex_axes), the others get their own checkpoint file; bad
    parameters fail with one sentence."""
    model, grid_lo = se_case["model"], float(se_case["D_lo"].max())

    def run(**kw):
        v, info = cell_leakage(model, SE_I, SE_HIGH, SE_C, _zero, _zero,
                               CellOptions(**{**_CK_KW, "max_cells": 7, "generator_cells": generator_cells, **kw}))
        return v, info["estimate"], info["cells"], info.get("checkpoint")

    fixed3 = run(n_vertex_axes=3, max_vertex_axes=3)
    assert run(n_vertex_axes=1, max_vertex_axes=3, vertex_slack=0.0)[:3] == fixed3[:3]
    fixed1 = run(n_vertex_axes=1, max_vertex_axes=1)
    assert run(n_vertex_axes=1, max_vertex_axes=3, vertex_slack=1e9)[:3] == fixed1[:3]
    assert fixed1[0] != fixed3[0]
    mid = run(n_vertex_axes=1, max_vertex_axes=3, vertex_slack=0.01)
    assert min(mid[0], fixed1[0], fixed3[0]) >= grid_lo - 1e-6, (mid, fixed1, fixed3, grid_lo)

    def name(n_min, n_max):
        path = run(n_vertex_axes=n_min, max_vertex_axes=n_max, checkpoint_dir=tmp_path / f"{n_min}_{n_max}",
                   max_cells=1)[3]
        return os.path.basename(path)
    # no axis can join (max_vertex_axes <= n_vertex_axes, or no axis beyond them: 2 or 3 axes here): the
    # fixed rule's file; an axis can join: another file
    assert name(3, 0) == name(3, 3) == name(3, 6)
    assert name(1, 0) == name(1, 1) != name(1, 3)
    for param, bad in (("n_vertex_axes", -1), ("max_vertex_axes", 2.5), ("vertex_slack", math.nan),
                       ("vertex_slack", -0.1)):
        with pytest.raises(ParameterError, match=param):
            run(**{param: bad})


# ------------------------------------------------------------------------------------ 8. input checks
def test_cell_leakage_empty_condition_set():
    cov = gp_covariance(4, 2.0)
    model = GaussianRegionModel(cov, np.full(4, -3.0), np.full(4, 3.0), 0.1)
    val, info = cell_leakage(model, 1, [0, 2], [], _zero, _zero)
    assert val == math.inf and "reason" in info


@pytest.mark.slow
def test_cell_engine_through_region_model(tmp_path):
    """GaussianRegionModel(cell_budget=N).leakage runs the cell engine on pinned b >= 4 splits that are not
    sign-balanced: its value is reported in details["cells"] and bounds the returned value; cell_budget = 0
    (the default) leaves it out; with cell_checkpoint_dir the split is kept on disk and a later model resumes
    it (budget 2 cells, then 4: the second call continues from the first one's leaves, and its value is the
    one in the file; exact resumption: test_checkpoint_resumes_exactly); bad parameters fail with one
    sentence."""
    cov = gp_covariance(SE_N, SE_L)
    lo, hi = np.full(SE_N, -SE_GAMMA), np.full(SE_N, SE_GAMMA)
    off = GaussianRegionModel(cov, lo, hi, SE_DELTA).leakage(SE_I, SE_C)
    assert off.details["cells"] == math.inf
    on = GaussianRegionModel(cov, lo, hi, SE_DELTA,
                             options=ModelOptions(cell_budget=2, cell_checkpoint_dir=tmp_path)).leakage(SE_I, SE_C)
    assert math.isfinite(on.details["cells"]) and on.value <= on.details["cells"] * (1 + 1e-9) + 1e-9
    assert on.value <= off.value
    path = on.details["cell_engine"]["checkpoint"]
    again = GaussianRegionModel(cov, lo, hi, SE_DELTA, options=ModelOptions(
        cell_budget=4, cell_checkpoint_dir=str(tmp_path))).leakage(SE_I, SE_C)
    assert again.details["cell_engine"]["checkpoint"] == path and os.listdir(tmp_path) == [os.path.basename(path)]
    assert again.details["cell_engine"]["cells"] > on.details["cell_engine"]["cells"]
    assert again.details["cells"] <= on.details["cells"]   # halves keep their parent's bound
    with open(path) as fh:
        rec = json.load(fh)
    assert float.fromhex(rec["value"]) == again.details["cells"]
    assert rec["stats"]["cells"] == again.details["cell_engine"]["cells"]
    with pytest.raises(ParameterError, match="cell_budget"):
        GaussianRegionModel(cov, lo, hi, SE_DELTA, options=ModelOptions(cell_budget=-1))
    for bad in (5, ["dir"]):
        with pytest.raises(ParameterError, match="cell_checkpoint_dir"):
            GaussianRegionModel(cov, lo, hi, SE_DELTA, options=ModelOptions(cell_checkpoint_dir=bad))


@pytest.mark.slow
def test_bonferroni_options(se_case, tmp_path):
    """The sandwich's options: ``lazy_gap`` None (the box tolerance), "auto" and a number give sound values
    (above the grid's certified lower bound of the exact value), each its own checkpoint file, and
    ``bonferroni=False`` another one; GaussianRegionModel passes them through; bad values fail with one
    sentence naming the parameter."""
    grid_lo = float(se_case["D_lo"].max())
    kw = {**SE_KW, "max_cells": 2, "checkpoint_dir": tmp_path}
    vals = {}
    for opts in ({"lazy_gap": None}, {"lazy_gap": "auto"}, {"lazy_gap": 0.5}, {"bonferroni": False}):
        v, info = cell_leakage(se_case["model"], SE_I, SE_HIGH, SE_C, _zero, _zero, CellOptions(**kw, **opts))
        assert grid_lo - 1e-6 <= v < math.inf, (opts, v)
        vals[str(opts)] = (v, info["checkpoint"])
    assert len({p for _, p in vals.values()}) == 4
    for bad in ("never", -1.0, float("nan"), [1.0], True):
        with pytest.raises(ParameterError, match="lazy_gap"):
            cell_leakage(se_case["model"], SE_I, SE_HIGH, SE_C, _zero, _zero, CellOptions(**SE_KW, lazy_gap=bad))
    cov, lo, hi = se_case["cov"], se_case["lo"], se_case["hi"]
    paths = set()
    for opts in ({}, {"cell_bonferroni": False}, {"cell_lazy_gap": None}):
        res = GaussianRegionModel(cov, lo, hi, SE_DELTA,
                                  options=ModelOptions(cell_budget=1, cell_checkpoint_dir=tmp_path / "m",
                                                       **opts)).leakage(SE_I, SE_C)
        assert math.isfinite(res.details["cells"]) and res.value <= res.details["cells"] * (1 + 1e-9) + 1e-9
        paths.add(res.details["cell_engine"]["checkpoint"])
    assert len(paths) == 3
    with pytest.raises(ParameterError, match="cell_bonferroni"):
        GaussianRegionModel(cov, lo, hi, SE_DELTA, options=ModelOptions(cell_bonferroni="yes"))
    for bad in ("never", -1.0, math.inf):
        with pytest.raises(ParameterError, match="cell_lazy_gap"):
            GaussianRegionModel(cov, lo, hi, SE_DELTA, options=ModelOptions(cell_lazy_gap=bad))


@pytest.mark.slow
def test_face_minorants_hold_at_every_corner_they_serve(se_case, monkeypatch):
    """The denominator's Bonferroni affine minorant is fixed for a whole face, with eps taken over the face's
    corners.  At every corner where the engine evaluates it (recorded from short runs of both cell spaces):
    the eps it was built with is at least the eps of that corner's mean (wiring eps to the centre's mean
    alone fails here), and the minorant is at most the certified upper bound of log N(R x T) there (box
    probabilities with their own error bound; the largest minorants of 12 sampled calls)."""
    import puffgm.gaussian.multivariate as mv

    seen, calls = {}, []
    orig_min, orig_at = mv.RegionBonferroni.minorant, mv.RegionBonferroni.minorant_at

    def minorant(self, r, eta_c, eps):
        data = orig_min(self, r, eta_c, eps)
        seen[id(data)] = (self, np.array(r, float), np.array(eps, float), data)
        return data

    def minorant_at(self, data, eta):
        low = orig_at(self, data, eta)
        calls.append((id(data), np.array(eta, float), low))
        return low

    monkeypatch.setattr(mv.RegionBonferroni, "minorant", minorant)
    monkeypatch.setattr(mv.RegionBonferroni, "minorant_at", minorant_at)
    for generator_cells in (4, 0):
        cell_leakage(se_case["model"], SE_I, SE_HIGH, SE_C, _zero, _zero,
                     CellOptions(max_cells=3, generator_cells=generator_cells, **_CK_KW))
    assert len(calls) >= 8
    S, lo, hi = se_case["S"], se_case["lo"], se_case["hi"]
    strict = 0
    for key, eta, _ in calls:
        bonf, r, eps, _ = seen[key]
        assert np.allclose(bonf.S, S)
        at_corner = bonf.eps(r, np.atleast_2d(S @ eta))
        assert np.all(eps >= at_corner), (eps, at_corner)
        strict += int(np.any(eps > at_corner * (1 + 1e-6)))
    assert strict > 0   # the faces are wide enough for the corners' eps to differ
    H = [SE_I, *SE_HIGH]
    box = BoxProbability(np.linalg.inv(S), tol=1e-3, max_boxes=4000)
    rng = np.random.default_rng(0)
    checked = 0
    for key, eta, low in [calls[k] for k in rng.choice(len(calls), size=min(len(calls), 12), replace=False)]:
        _, r, _, _ = seen[key]
        finite = np.flatnonzero(np.isfinite(low))
        pick = finite[np.argsort(low[finite])[-6:]]
        LO, HI = np.tile(lo[H], (len(pick), 1)), np.tile(hi[H], (len(pick), 1))
        LO[:, 0], HI[:, 0] = r[pick], r[pick] + SE_DELTA
        _, U, _ = box.bounds_many(S @ eta, LO, HI)
        assert np.all(low[pick] <= U), (low[pick], U)
        checked += len(pick)
    assert checked >= 24
