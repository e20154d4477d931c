"""Certified leakage of region secrets under truncated multivariate Gaussian priors.

Prior: x ~ N(m, Sigma) truncated to the box B = prod_k [lo_k, hi_k].  Secret
pairs on coordinate i: s(r) = {x_i in [r, r + delta]} against s(r'), any
r, r' in [lo_i, hi_i - delta] (Bai, He, Gu, Kifer and Maeng, Example 6.2).
For a split of the coordinates into a high-influence set H (i in H,
H' = H minus i) and a conditioning set C (the low-influence set L for a
general split, the Markov quilt X_Q for a quilt split), the leakage through C
(Definition 7) is

    a(C) = max_{r, r'} sup_{x_C in B_C} log P(x_C | s(r)) / P(x_C | s(r'))
         = max_{r, r'} sup_{x_C} [log P(A | x_C) - log P(A' | x_C)] - [log P(A) - log P(A')],

A = s(r), A' = s(r'), every probability under the *truncated* prior.  Given
x_C, the truncated conditional of x_H is N(mu_H|C, Sigma_H|C) restricted to
B_H (for a quilt split this needs X_R independent of X_N given X_Q under the
truncated prior: see :mod:`puffgm.gaussian.networks`), so with N the
untruncated Gaussian given x_C and T = B_H':

    P(A | x_C) / P(A' | x_C) = N(x_i in R, x_H' in T) / N(x_i in R', x_H' in T).

Theorem 9 of the paper drops "x_H' in T" (it integrates x_H' over the whole
space) and uses the untruncated marginal N(m_i, Sigma_ii) for P(A) / P(A').
This module bounds the exact value from above with one-dimensional normal
probabilities only, by three inequalities:

1. Bonferroni on the other high-influence coordinates:
   N(R, T) <= N(R)  and  N(R', T) >= N(R') (1 - E(R')),
   E(R') = sum_{k in H'} sup { P(x_k not in [lo_k, hi_k] | x_i, x_C) : x_i in R', x_C in B_C }.
   Given (x_i, x_C), x_k is Gaussian with mean affine in (x_i, x_C) and fixed
   variance; the tail probability is quasi-convex in the mean, so the sup is at
   an end of the mean's range (an interval computed from the box).
2. The same on the marginal: P(A) / P(A') >= N0(R) (1 - E0(R)) / N0(R') with
   E0(R) = sum_{k != i} sup_{x_i in R} P(x_k not in [lo_k, hi_k] | x_i); where that term is large or
   infinite (option ``marginal``), also the bound of :mod:`puffgm.gaussian.marginal`:
   G(t) = P(x_-i in B_-i | x_i = t) is log-concave, so P(x_-i in B_-i | x_i in R) >= min of G at the
   ends of a cell containing R, and P(x_-i in B_-i | x_i in R') <= the probability of the box expanded
   by the drift of the conditional mean over the cell, both from certified (n - 1)-dimensional box
   probabilities; the smaller bound is used.
3. Theorem 9's one-dimensional sweep for N(R | x_C) / N(R' | x_C): x_i | x_C
   is N(mu, sigma^2) with mu affine in x_C and ranging over [mu_lo, mu_hi];
   by the monotone likelihood ratio of the location family the sup over mu is
   at mu_lo or mu_hi.

A second bound replaces 2. by "a ratio of averages is at least the smallest
ratio": P(A) / P(A') >= inf_{x_C} P(A | x_C) / P(A' | x_C) >=
inf_mu N(R | mu) / N(R' | mu) * (1 - E(R)) (the *range* bound, always finite
when E < 1; for H = {i} it needs no Bonferroni term at all).  A third, the
*mixed-derivative range* bound (:func:`mixed_range_bound`), bounds sup - inf over x_C of the
conditional log ratio through the mixed derivative d^2 log P(x_H' in T | x_i = t, x_C) / dt dx_C, so
the truncation of H' cancels between numerator and denominator instead of being charged to each (the
Bonferroni terms never fall below the tail mass E); a fourth is the precision-Lipschitz bound.  The
value returned is the smallest.

The max over the continuum of region positions r, r' is bounded by
branch-and-bound over cells [r_a, r_b] (r_b - r_a <= delta / 2): on a cell,
[r, r + delta] lies inside the union [r_a, r_b + delta] and contains the
intersection [r_b, r_a + delta], so probabilities are bounded by those of
the two intervals (no Lipschitz constant needed).  Cells are split until the
certified maximum is within ``tol`` of the best value met at a cell centre.

Every term is an upper bound of the exact quantity; special functions are
evaluated in log space (``scipy.special.log_ndtr``, relative error ~1e-15);
the linear algebra (Cholesky solves) is in double precision, and the returned
value is widened by ``(64 eps cond(Sigma_CC) + 1e-12)`` relative plus 1e-12
absolute to cover rounding.  When E >= 1 (the other high-influence
coordinates can be pushed out of their box, "pinned") the Bonferroni terms are
useless and the bound is ``inf`` for that split; curves then keep the value of a
smaller split (they are non-increasing: for nested splits H_b in H_{b+1} the leakage
through L_{b+1} is at most that through L_b by the mixture argument).  Pinned splits
have engines of their own: b = 2 the certified bivariate engine
(:mod:`puffgm.gaussian.bivariate`); b >= 3 a hybrid (one other coordinate p exactly
by the bivariate engine on (x_i, x_p) given x_C, the rest by Bonferroni given x_i,
x_p and x_C, used when that sum stays below 1) and, for b = 3, the certified
trivariate engine (:mod:`puffgm.gaussian.trivariate`); the smallest certified value
is returned.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from puffgm.core.validation import check_nonnegative_finite, check_nonnegative_int, check_positive_finite
from puffgm.exceptions import ParameterError, PriorError
from puffgm.core.results import freeze_record, json_float
from puffgm.gaussian.boxprob import log_trunc_normal

__all__ = ["RegionLeakage", "RegionBonferroni", "log_interval_prob", "tail_prob", "mixed_range_bound", "log_box_hessian_bound", "GaussianRegionModel", "region_leakage"]

EPS = np.finfo(float).eps
_MARGINAL_MODES = ("auto", "bonferroni", "box")
_MARGINAL_AUTO_THRESHOLD = 0.5    # nats: at or below it the Bonferroni terms are kept alone
_MARGINAL_AUTO_MAX_DIM = 24       # "auto" uses box probabilities only for n - 1 <= 24



def certified_region_max(lo_i, hi_i, delta, fun_up, K, corr, tol, atol, *, iters=25, max_cells=20000,
                         return_edges=False, n_init=None):
    """Certified max over r in [lo_i, hi_i - delta] of F(r) + corr(r), by interval branch and bound.

    Needs certified upper values ``fun_up(points)`` of F, a curvature bound F'' >= -K, and a
    correction ``corr(u, v)`` that bounds the correction of every region inside [u, v]
    (``None``: no correction).  On a cell [ra, rb] of width h, F minus its chord has second
    derivative >= -K and vanishes at both ends, so F <= max(F(ra), F(rb)) + K h^2 / 8.  Pruned
    cells keep counting in the certified value.  Returns (certified upper bound, best value met
    at a cell end); the first is ``inf`` when any cell bound is not finite.  With ``return_edges`` a third
    value is returned: the sorted end points of the final partition of [lo_i, hi_i - delta] (pruned cells
    included), on which :func:`partition_max` re-evaluates the bound for other functions.  The initial
    grid has ``n_init`` cells (default max(16, 2 (hi_i - lo_i - delta) / delta))."""
    a0, b0 = lo_i, hi_i - delta
    m = max(16, int(math.ceil(2 * (b0 - a0) / delta))) if n_init is None else max(1, int(n_init))
    edges = np.linspace(a0, b0, m + 1)
    ra, rb = edges[:-1], edges[1:]
    fe = fun_up(edges)
    fa, fb = fe[:-1], fe[1:]
    best, dropped, cert = -math.inf, -math.inf, math.inf
    pruned = [edges]
    for _ in range(iters):
        up = cell_bounds(ra, rb, fa, fb, K, corr, delta)
        if corr is None:
            pt = np.maximum(fa, fb)
        else:
            pt = np.maximum(fa + corr(ra, ra + delta), fb + corr(rb, rb + delta))
        best = max(best, float(np.max(np.where(np.isnan(pt), -np.inf, pt))))
        cert = max(float(np.max(up)), dropped)
        if not math.isfinite(cert):
            break
        slack = max(atol, tol * abs(best))
        if cert - best <= slack:
            break
        keep = up > best + 0.25 * slack
        if not np.all(keep):
            dropped = max(dropped, float(np.max(up[~keep])))
        ra, rb, fa, fb = ra[keep], rb[keep], fa[keep], fb[keep]
        mid = (ra + rb) / 2
        fm = fun_up(mid)  # endpoint values are cached: only the new midpoints are evaluated
        pruned.append(mid)
        ra, rb = np.concatenate([ra, mid]), np.concatenate([mid, rb])
        fa, fb = np.concatenate([fa, fm]), np.concatenate([fm, fb])
        if ra.size > max_cells:
            break
    cert = cert if math.isfinite(cert) else math.inf
    if return_edges:
        return cert, best, np.unique(np.concatenate(pruned))
    return cert, best


def cell_bounds(ra, rb, fa, fb, K, corr, delta):
    """Per cell [ra, rb]: max(fa, fb) + K h^2 / 8 + corr(ra, rb + delta) (``corr=None``: no correction),
    NaN as +inf -- the certified bound of a function with second derivative >= -K on the cell."""
    up = np.maximum(fa, fb) + K * (rb - ra) ** 2 / 8
    if corr is not None:
        up = up + corr(ra, rb + delta)
    return np.where(np.isnan(up), np.inf, up)


def partition_max(edges, f, K, corr, delta):
    """The largest :func:`cell_bounds` over the cells of a partition (end points ``edges``, values f): the
    certified bound of :func:`certified_region_max` on a given partition, for any function with second
    derivative >= -K."""
    return float(np.max(cell_bounds(edges[:-1], edges[1:], f[:-1], f[1:], K, corr, delta)))

def region_pair_bound(lo_i, hi_i, delta, log_box, m0, s0, K1, K2, corr_num, corr_den, tol, atol, *, iters=25,
                      return_edges=False, n_init=None):
    """Certified sup over regions R of [upper log N(R x T) - log N0(R) + corr_num] plus sup over R' of
    [-lower log N(R' x T) + log N0(R') + corr_den], and the values met (the decoupled region sweeps of
    the pinned engines).  ``log_box(r)`` -> certified (lower, upper) arrays for the regions
    [r, r + delta] (memoised: both sweeps share the evaluations at the same points); N0 = N(m0, s0^2);
    K1 and K2 bound minus the second derivatives of the numerator and denominator functions.  With
    ``return_edges`` also the two final partitions (numerator, denominator; :func:`certified_region_max`);
    ``n_init`` is the initial grid of both sweeps."""
    memo = {}

    def box(r):
        key = r.tobytes()
        if key not in memo:
            memo.clear()
            memo[key] = log_box(r)
        return memo[key]

    def f1(r):
        return box(r)[1] - log_interval_prob(r, r + delta, m0, s0)

    def f2(r):
        return -box(r)[0] + log_interval_prob(r, r + delta, m0, s0)

    r1 = certified_region_max(lo_i, hi_i, delta, f1, K1, corr_num, tol, atol, iters=iters, max_cells=20000,
                              return_edges=return_edges, n_init=n_init)
    r2 = certified_region_max(lo_i, hi_i, delta, f2, K2, corr_den, tol, atol, iters=iters, max_cells=20000,
                              return_edges=return_edges, n_init=n_init)
    if return_edges:
        return r1[0] + r2[0], r1[1] + r2[1], (r1[2], r2[2])
    return r1[0] + r2[0], r1[1] + r2[1]


def log_interval_prob(lo, hi, mu, sigma):
    """log P(lo < N(mu, sigma^2) < hi), elementwise, stable in both tails (-inf when empty)."""
    from scipy.special import log_ndtr

    lo = (np.asarray(lo, float) - mu) / sigma
    hi = (np.asarray(hi, float) - mu) / sigma
    lo, hi = np.broadcast_arrays(lo, hi)
    upper = lo > 0
    a = np.where(upper, log_ndtr(-lo), log_ndtr(hi))
    b = np.where(upper, log_ndtr(-hi), log_ndtr(lo))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = a + np.log1p(-np.exp(b - a))
    return np.where(hi > lo, out, -np.inf)


def _dlog_interval(r, delta, mu, sigma):
    """d/dr log P(r < N(mu, sigma^2) < r + delta) (stable; the function is concave in r)."""
    lp = log_interval_prob(r, r + delta, mu, sigma)
    z1 = (np.asarray(r, float) - mu) / sigma
    z2 = z1 + delta / sigma
    c = 0.5 * math.log(2 * math.pi)
    with np.errstate(over="ignore", invalid="ignore"):
        return (np.exp(-0.5 * z2 * z2 - c - lp) - np.exp(-0.5 * z1 * z1 - c - lp)) / sigma


def _tails(lo, hi, m, tau):
    """Row-wise tail probabilities: rows k with bounds lo[k], hi[k] and sd tau[k] (0: indicator)."""
    from scipy.special import ndtr

    lo, hi, tau = lo[:, None], hi[:, None], tau[:, None]
    safe = np.where(tau > 0, tau, 1.0)
    out = ndtr((lo - m) / safe) + ndtr((m - hi) / safe)
    return np.where(tau > 0, out, ((m < lo) | (m > hi)).astype(float))


def tail_prob(lo, hi, m, tau):
    """P(N(m, tau^2) outside [lo, hi]), elementwise (tau = 0: the indicator of m outside)."""
    from scipy.special import ndtr

    m = np.asarray(m, float)
    if tau <= 0:
        return ((m < lo) | (m > hi)).astype(float)
    return ndtr((lo - m) / tau) + ndtr((m - hi) / tau)


def _bonferroni_sum(ua, ub, m_i, base_lo, base_hi, slope, tau, lo, hi):
    """sum_k max over x_i in [ua, ub] (cells) and the base range [base_lo_k, base_hi_k] of the tail of x_k,
    x_k | x_i, ~ N(base + slope_k (x_i - m_i), tau_k^2) (the tail is quasi-convex in the mean: ends)."""
    e1 = slope[:, None] * (ua[None, :] - m_i)
    e2 = slope[:, None] * (ub[None, :] - m_i)
    mlo = base_lo[:, None] + np.minimum(e1, e2)
    mhi = base_hi[:, None] + np.maximum(e1, e2)
    return np.sum(np.maximum(_tails(lo, hi, mlo, tau), _tails(lo, hi, mhi, tau)), axis=0)


def _max_inf_tail(ua, ub, m_i, base, slope, tau, lo, hi):
    """max_k inf over x_i in [ua, ub] (cells) of the tail of x_k, x_k | x_i ~ N(base_k + slope_k (x_i - m_i),
    tau_k^2): the tail is quasi-convex in the mean, so its inf is at the mean closest to the box's centre."""
    e1 = base[:, None] + slope[:, None] * (ua[None, :] - m_i)
    e2 = base[:, None] + slope[:, None] * (ub[None, :] - m_i)
    mid = ((lo + hi) / 2)[:, None]
    closest = np.clip(mid, np.minimum(e1, e2), np.maximum(e1, e2))
    return np.max(_tails(lo, hi, closest, tau), axis=0)


def _neglog1m(E):
    """-log(1 - E), inf when E >= 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(E < 1, -np.log1p(-np.minimum(E, 1.0)), np.inf)


def _rect_quad_min(a11, a12, a22, u1lo, u1hi, u2lo, u2hi):
    """Elementwise min of a11 u1^2 + 2 a12 u1 u2 + a22 u2^2 (positive definite) over the rectangle
    [u1lo, u1hi] x [u2lo, u2hi]: 0 when the rectangle holds the origin, else the smallest of the four
    edge minima (a convex quadratic restricted to an edge is minimised at its clipped vertex)."""
    def q(u1, u2):
        return a11 * u1 * u1 + 2 * a12 * u1 * u2 + a22 * u2 * u2

    out = np.full(np.shape(a11), np.inf)
    for v in (u1lo, u1hi):
        out = np.minimum(out, q(v, np.clip(-a12 * v / a22, u2lo, u2hi)))
    for v in (u2lo, u2hi):
        out = np.minimum(out, q(np.clip(-a12 * v / a11, u1lo, u1hi), v))
    inside = (u1lo <= 0) & (u1hi >= 0) & (u2lo <= 0) & (u2hi >= 0)
    return np.where(inside, 0.0, out)


def mixed_range_bound(omega, slope, spread, nu_lo, nu_hi, lo, hi, width_i, mu_spread, var_i, delta):
    """The *mixed-derivative range bound* of the leakage of a split (i, C, H') (bound 4).

    Given x_i = t and x_C, x_H' ~ N(nu, Omega) with nu = nu_0 + c t + B x_C; let
    F(t, x_C) = log P_nu(x_H' in T) and Lambda(x_C) = log P(A | x_C) - log P(A' | x_C).  The prior ratio
    P(A) / P(A') is an average of the conditional ratios, so the leakage is at most
    sup Lambda - inf Lambda.  Lambda = Lambda_1 + D with Lambda_1 = log N(R | mu) - log N(R' | mu)
    (x_i | x_C ~ N(mu, sigma^2)) and D the truncation term; for t_0 between R and R', F(t_0, x_C) cancels
    in D, so D(x) - D(x') is at most (hi_i - lo_i) sup |d^2 F / dt dx_C . (x - x')| plus the change
    of the weights of t within R and R' (2 delta |mu - mu'| / sigma^2), and
    |Lambda_1(x) - Lambda_1(x')| <= (hi_i - lo_i) |mu - mu'| / sigma^2.  With H = Hess_nu log P_nu(T),

        d^2 F / dt dx_C . (x - x') = c' H B (x - x'),  |.| <= L = sum_jk |c_j| h_jk r_k,

    r_k = sum_m |B_km| (hi_m - lo_m) the spread of nu_k over the box of x_C, and h_jk >= |H_jk| from
    the face formulas of P = P_nu(T): |dP / dnu_j| <= max_a f_j(a) (f_j the density of y_j at the faces
    a in {lo_j, hi_j}); |d^2 P / dnu_j dnu_k| <= sum_ab f_jk(a, b) (bivariate densities at the four
    corners, j != k); |d^2 P / dnu_j^2| <= (f_j(lo_j) + f_j(hi_j)) sum_k |Omega^-1_jk| w_k (w_k the
    largest |y_k - nu_k| over the box); P >= 1 - E (Bonferroni), and H = P'' / P - P' P'^T / P^2.  Every
    density is maximised over the box hull [nu_lo, nu_hi] of nu (the bivariate one by minimising its
    quadratic form over a rectangle, exactly).  The bound is

        (hi_i - lo_i + 2 delta) (mu_hi - mu_lo) / sigma^2 + (hi_i - lo_i) L,

    small when the truncation is mild (E << 1) and the coordinates near C barely interact with those
    near i: the terms shrink as C moves away from i, where the Bonferroni bounds (which count the
    truncation of the numerator and of the denominator separately) stay at E.

    Returns ``(value, info)``; ``inf`` when E >= 1 or Omega is (numerically) singular.
    """
    k = len(slope)
    base = (width_i + 2 * delta) * mu_spread / var_i
    if k == 0:
        return base, {"L": 0.0, "E": 0.0}
    h, info = log_box_hessian_bound(omega, nu_lo, nu_hi, lo, hi)
    if h is None:
        return math.inf, info
    L = float(np.abs(slope) @ h @ spread)
    return base + width_i * L, {"L": L, "E": info["E"]}


def log_box_hessian_bound(omega, nu_lo, nu_hi, lo, hi):
    """Entrywise bound h >= |Hess_nu log P(y in T)|, y ~ N(nu, Omega), uniformly over nu in the box
    [nu_lo, nu_hi], T = prod_j [lo_j, hi_j] (the face formulas of :func:`mixed_range_bound`).

    Returns ``(h, {"E": E})`` with E the Bonferroni sum of the largest tails (P >= 1 - E), or
    ``(None, info)`` when E >= 1 or Omega is singular or too ill-conditioned for the rounding margin.
    h is widened by 1e3 eps cond(Omega) (1 + max_k (w_k / s_k)^2) relative for rounding (w_k the largest
    |y_k - nu_k| over the box, s_k = Omega_kk^(1/2)).
    """
    omega = (np.asarray(omega, float) + np.asarray(omega, float).T) / 2
    k = omega.shape[0]
    s = np.sqrt(np.maximum(np.diag(omega), 0.0))
    try:
        np.linalg.cholesky(omega)
        oinv = np.linalg.inv(omega)
    except np.linalg.LinAlgError:
        return None, {"reason": "singular conditional covariance"}
    w = np.maximum(hi - nu_lo, nu_hi - lo)
    rel = 1e3 * EPS * float(np.linalg.cond(omega)) * (1 + float(np.max(w / s)) ** 2) if np.all(s > 0) else math.inf
    if not rel < 1e-3:
        return None, {"reason": "ill-conditioned conditional covariance"}
    E = float(np.sum(np.maximum(_tails(lo, hi, nu_lo[:, None], s), _tails(lo, hi, nu_hi[:, None], s))))
    if not E < 1:
        return None, {"E": E}
    P = 1 - E

    def fsup(a):  # sup over nu_j in [nu_lo_j, nu_hi_j] of the density of N(nu_j, s_j^2) at a
        d = np.maximum(0.0, np.maximum(nu_lo - a, a - nu_hi))
        return np.exp(-0.5 * (d / s) ** 2) / (math.sqrt(2 * math.pi) * s)

    f_lo, f_hi = fsup(lo), fsup(hi)
    p1 = np.maximum(f_lo, f_hi)
    h = np.zeros((k, k))
    if k > 1:
        j, l = np.triu_indices(k, 1)
        det = omega[j, j] * omega[l, l] - omega[j, l] ** 2
        a11, a12, a22 = omega[l, l] / det, -omega[j, l] / det, omega[j, j] / det
        p2 = np.zeros(len(j))
        for a_j in (lo[j], hi[j]):
            for a_l in (lo[l], hi[l]):
                qm = _rect_quad_min(a11, a12, a22, a_j - nu_hi[j], a_j - nu_lo[j], a_l - nu_hi[l], a_l - nu_lo[l])
                p2 += np.exp(-0.5 * qm) / (2 * math.pi * np.sqrt(det))
        h[j, l] = h[l, j] = p2 / P + p1[j] * p1[l] / P ** 2
    h[np.diag_indices(k)] = (f_lo + f_hi) * (np.abs(oinv) @ w) / P + p1 ** 2 / P ** 2
    return h * (1 + rel), {"E": E}


class RegionBonferroni:
    """Certified bounds of log P(x_0 in [r, r + delta], x_k in [lo_k, hi_k] for k >= 1), x ~ N(mu, S), that need
    no integral in more than one dimension: condition on x_0 and apply Bonferroni to the other coordinates.

    Given x_0 = t, x_k ~ N(mu_k + beta_k (t - mu_0), tau_k^2), beta_k = S_k0 / S_00,
    tau_k^2 = S_kk - S_k0^2 / S_00, so with R = [r, r + delta] and T the box of x_1 .. x_d,

        log P(R x T) = log P(x_0 in R) + log P(T | x_0 in R),
        1 - eps(R) <= P(T | x_0 in R) <= 1 - max_k inf_{t in R} tail_k(t),
        eps(R) = sum_k sup_{t in R} tail_k(t),

    tail_k(t) = P(x_k outside [lo_k, hi_k] | x_0 = t), quasi-convex in the conditional mean, which is affine
    in t: the sup is at an end of R, the inf at the point of R whose mean is closest to the box's centre.
    When the other coordinates stay inside their box (their conditional means well inside, the usual case
    away from the corners of the conditioning box) the gap -log(1 - eps) is tiny in any dimension, where the
    sub-box bounds of :class:`~puffgm.gaussian.boxprob.BoxProbability` keep a gap of order the mean-field
    error (l = 2, b = 16 of Figure 2b: gap 0.013 against 13.8 after 2000 sub-boxes).

    **Affine minorant.**  With eta = S^-1 mu and F~_A(eta) = log int_A exp(eta' x - x' S^-1 x / 2) dx,
    log P(A; mu) = F~_A(eta) - eta' S eta / 2 + const.  F~_{R x R^d} is convex with gradient
    E[x | x_0 in R] at eta_c, and log P(T | x_0 in R; mu) >= log(1 - eps_F(R)) for every mu of a face F
    (eps_F the sum over k of the sup over the face: the conditional means are affine in eta, so the sup is
    at the face's corners), so on F

        log P(R x T; mu) >= log P(R; mu_c) + eta_c' mu_c / 2 - eta' mu / 2 + E_c[x | x_0 in R] . (eta - eta_c)
                            + log(1 - eps_F(R)),

    affine in eta up to the quadratic term that cancels against the numerator's (the cell engine's vertex
    bound, :mod:`puffgm.gaussian.multivariate`)."""

    def __init__(self, S, lo, hi, delta):
        S = np.asarray(S, float)
        self.S, self.delta = S, float(delta)
        self.lo, self.hi = np.asarray(lo, float)[1:], np.asarray(hi, float)[1:]
        self.s0 = math.sqrt(S[0, 0])
        self.beta = S[1:, 0] / S[0, 0]
        var = np.diag(S)[1:] - S[1:, 0] ** 2 / S[0, 0]
        self.tau = np.where(var <= 1e-13 * np.diag(S)[1:], 0.0, np.sqrt(np.maximum(var, 0.0)))
        # rounding of the affine extension (as in SubBoxes.lower_at): relative to its largest term
        self.round_rel = max(1e-12, 64 * np.finfo(float).eps * float(np.linalg.cond(S)))

    def _base(self, mus):
        """Per mean (rows of mus) the part of the conditional means of x_1 .. x_d that does not depend on t."""
        mus = np.atleast_2d(np.asarray(mus, float))
        return mus[:, 1:] - mus[:, :1] * self.beta[None, :]

    def eps(self, r, mus):
        """eps(R) for R = [r, r + delta]: the Bonferroni sum, each tail at its sup over R and the means ``mus``."""
        base = self._base(mus)
        r = np.asarray(r, float)
        E = _bonferroni_sum(r, r + self.delta, 0.0, np.min(base, axis=0), np.max(base, axis=0), self.beta,
                            self.tau, self.lo, self.hi)
        return np.minimum(E * (1 + 1e-9) + 1e-300, 1.0)   # rounding of the tails, outward

    def log_marginal(self, r, mu):
        """log P(x_0 in [r, r + delta]) under mean mu."""
        r = np.asarray(r, float)
        return log_interval_prob(r, r + self.delta, float(mu[0]), self.s0)

    def bounds(self, r, mu):
        """Certified (lower, upper) of log P(R x T; mu) for the regions R = [r, r + delta]."""
        r = np.asarray(r, float)
        lm = self.log_marginal(r, mu)
        inf_tail = (_max_inf_tail(r, r + self.delta, 0.0, self._base(mu)[0], self.beta, self.tau, self.lo, self.hi)
                    if len(self.lo) else 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            up = lm + np.log1p(-np.minimum(inf_tail * (1 - 1e-9), 1.0))
            low = lm + np.log1p(-self.eps(r, mu))
        pad = 1e-12 * (1 + np.abs(lm))
        return np.where(np.isnan(low), -np.inf, low - pad), np.where(np.isnan(up), np.inf, up + pad)

    def minorant(self, r, eta_c, eps):
        """The affine minorant's data at the centre's natural parameter ``eta_c`` (mean S eta_c) for the
        regions r, given eps_F(R) (``eps``): (constant part, gradient rows E_c[x | x_0 in R], eta_c)."""
        r = np.asarray(r, float)
        eta_c = np.asarray(eta_c, float)
        mu_c = self.S @ eta_c
        K = 1.0 / self.S[0, 0]
        _, t = log_trunc_normal(r, r + self.delta, np.full(len(r), mu_c[0] * K), K)
        grad = mu_c[None, :] + np.outer(t - mu_c[0], self.S[:, 0] / self.S[0, 0])
        with np.errstate(divide="ignore", invalid="ignore"):
            const = self.log_marginal(r, mu_c) + np.log1p(-np.minimum(eps, 1.0)) - grad @ eta_c
        const = np.where(np.isnan(const), -np.inf, const)
        return const, grad, eta_c

    def minorant_at(self, data, eta):
        """The affine minorant of :meth:`minorant` at the natural parameter ``eta`` (mean S eta): certified
        lower bounds of log P(R x T) on the face whose eps_F was given."""
        const, grad, eta_c = data
        eta = np.asarray(eta, float)
        q_c, q = 0.5 * float(eta_c @ self.S @ eta_c), 0.5 * float(eta @ self.S @ eta)
        val = const + q_c - q + grad @ eta
        scale = np.abs(const) + abs(q_c) + abs(q) + np.abs(grad) @ np.abs(eta)
        with np.errstate(invalid="ignore"):
            return val - (self.round_rel * (1 + scale) + 1e-12)


@dataclass(frozen=True)
class RegionLeakage:
    """Certified upper bound of the leakage of region secrets on one coordinate through one set.

    Attributes
    ----------
    value : float
        Certified upper bound of the exact leakage (``inf`` when no finite bound is known).
    theorem9 : float
        Theorem 9's value for the same split (untruncated conditional and marginal,
        grid of 201 region positions): *not* a bound.
    node, conditioning, high : the split (coordinate i, conditioning set, H).
    details : Mapping
        ``bonferroni``, ``range`` (the two bounds), ``E_max`` (largest Bonferroni sum over H'),
        ``mu_interval``, ``sigma``, ``gap`` (certified minus best evaluated value of the bound function),
        ``marginal`` (the model's marginal option).
    """

    value: float
    theorem9: float
    node: int
    conditioning: tuple
    high: tuple
    details: Mapping = field(default_factory=dict)

    def __post_init__(self):
        freeze_record(self)  # details read-only

    def to_dict(self) -> dict:
        return {"value": json_float(self.value), "theorem9": json_float(self.theorem9), "node": self.node,
                "conditioning": list(self.conditioning), "high": list(self.high),
                "details": {k: (json_float(v) if isinstance(v, float) else v) for k, v in self.details.items()
                            if not isinstance(v, tuple)}}

    def explain(self) -> str:
        return (f"leakage of x_{self.node} through {len(self.conditioning)} coordinates (|H| = {len(self.high)}): "
                f"certified <= {self.value:.8g}; Theorem 9 gives {self.theorem9:.8g}")


class GaussianRegionModel:
    """A truncated Gaussian N(mean, cov) on a box with region secrets of width ``delta``.

    Validates once, then answers :meth:`leakage` queries for any (i, C, H).

    Parameters
    ----------
    cov : (n, n) array, symmetric positive definite
    lower, upper : float or (n,) arrays, upper > lower (finite)
    delta : float, > 0, with 2 delta <= upper_i - lower_i for every secret coordinate
    mean : (n,) array, optional (default 0)
    tol, atol : float, > 0
        Branch-and-bound tolerance: each maximisation stops within max(atol, tol |value|) of a
        value met (the returned value is still an upper bound; the tolerance bounds its excess
        over the bound function).  A leakage is a sum of two such maximisations, so the
        branch-and-bound bounds have a floor near 2 ``atol`` (Figure 2b, l = 0.5: 2.09e-4 from b = 7 on
        with the default, 5.26e-5 with ``atol=1e-8``, the rest being the Bonferroni truncation terms);
        the mixed range bound (:func:`mixed_range_bound`) needs no branch and bound and goes below
        it (6.5e-8 there).
    pinned_engines : bool
        Default of :meth:`leakage`'s ``pinned_engines``.
    cell_budget : int
        Cells for the b >= 4 cell engine (:mod:`puffgm.gaussian.multivariate`) on pinned splits whose
        conditional precision is not sign-balanced (0, the default: off; each cell costs two region
        sweeps of b-dimensional box probabilities, 0.1-2 s).
    cell_seconds : float, optional
        Wall-time budget in seconds of the cell engine per split, on top of ``cell_budget`` (None, the
        default: cells only).  The value is certified whenever the engine stops; a time budget makes
        it depend on the machine's speed, so results meant to be reproduced should use cells only.
    cell_target : float, optional
        Stop the cell engine on a split as soon as its certified value is at or below this number (e.g.
        the value of a smaller split, when the question is whether the curve decreases); None (the
        default): no such rule.
    cell_checkpoint_dir : str or path, optional
        Directory where the cell engine keeps each split's branch and bound on disk (one JSON file per
        split, named by a fingerprint of the problem) and resumes it on a later call, in this process or
        another: long certifications can run in pieces (``cell_budget`` then counts the cells of every
        piece; see :func:`puffgm.gaussian.multivariate.cell_leakage`).  None (the default): nothing is
        written.
    cell_bonferroni : bool
        Bracket the cell engine's box probabilities by the Bonferroni sandwich as well (True, the default;
        False: the sub-box bounds alone, the engine before stop 22, and its checkpoints).
    cell_lazy_gap : "auto", None or float
        Sandwich gap above which the cell engine's vertex bound computes sub-boxes for a region ("auto",
        the default: the sub-boxes' own typical gap; None: the box tolerance), see
        :func:`puffgm.gaussian.multivariate.cell_leakage`.
    marginal : {"auto", "bonferroni", "box"}
        Bound of the truncated marginal term (:meth:`marginal_corrections`): ``"bonferroni"`` the
        one-dimensional Bonferroni terms only; ``"box"`` also the (n - 1)-dimensional box-probability
        bounds of :mod:`puffgm.gaussian.marginal` on every region cell; ``"auto"`` (default) the latter
        only on cells whose Bonferroni numerator term exceeds 0.5 nats (or is infinite) and only when
        n - 1 <= 24, so priors on which Bonferroni is good keep their values and cost (on the
        squared-exponential kernel of Figure 2b the term stays below 0.13 nats and the box bounds,
        computed everywhere, changed no value while costing 10 times the time).
    """

    def __init__(self, cov, lower, upper, delta, mean=None, *, tol: float = 1e-5, atol: float = 1e-4,
                 pinned_engines: bool = True, cell_budget: int = 0, marginal: str = "auto",
                 cell_seconds: float | None = None, cell_checkpoint_dir=None, cell_target: float | None = None,
                 cell_bonferroni: bool = True, cell_lazy_gap="auto"):
        cov = np.asarray(cov, float)
        if cov.ndim != 2 or cov.shape[0] != cov.shape[1] or cov.shape[0] < 1 or not np.all(np.isfinite(cov)):
            raise PriorError("The covariance must be a finite square matrix.")
        n = cov.shape[0]
        if not np.allclose(cov, cov.T, rtol=1e-12, atol=1e-12 * float(np.max(np.abs(np.diag(cov))))):
            raise PriorError("The covariance matrix is not symmetric.")
        cov = (cov + cov.T) / 2
        try:
            np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            raise PriorError("The covariance matrix is not positive definite.") from None
        self.n = n
        self.cov = cov
        self.mean = np.zeros(n) if mean is None else np.broadcast_to(np.asarray(mean, float), (n,)).copy()
        self.lower = np.broadcast_to(np.asarray(lower, float), (n,)).copy()
        self.upper = np.broadcast_to(np.asarray(upper, float), (n,)).copy()
        if not (np.all(np.isfinite(self.mean)) and np.all(np.isfinite(self.lower)) and np.all(np.isfinite(self.upper))):
            raise PriorError("The mean and the truncation bounds must be finite numbers (the box must be bounded).")
        if not np.all(self.upper > self.lower):
            raise PriorError("Every truncation interval [lower, upper] must have upper > lower.")
        if not (isinstance(delta, (int, float, np.floating)) and math.isfinite(delta) and delta > 0):
            raise ParameterError(f"The 'delta' parameter must be a finite number > 0. Got {delta!r} instead.")
        self.delta = float(delta)
        self.tol = check_positive_finite(tol, "tol", "GaussianRegionModel")
        self.atol = check_positive_finite(atol, "atol", "GaussianRegionModel")
        self.pinned_engines = bool(pinned_engines)
        self.cell_budget = check_nonnegative_int(cell_budget, "cell_budget", "GaussianRegionModel")
        self.cell_seconds = (None if cell_seconds is None
                             else check_positive_finite(cell_seconds, "cell_seconds", "GaussianRegionModel"))
        if cell_checkpoint_dir is not None and not isinstance(cell_checkpoint_dir, (str, os.PathLike)):
            raise ParameterError(f"The 'cell_checkpoint_dir' parameter must be None or a directory path. "
                                 f"Got {cell_checkpoint_dir!r} instead.")
        self.cell_checkpoint_dir = cell_checkpoint_dir
        self.cell_target = (None if cell_target is None
                            else check_nonnegative_finite(cell_target, "cell_target", "GaussianRegionModel"))
        if not isinstance(cell_bonferroni, (bool, np.bool_)):
            raise ParameterError(f"The 'cell_bonferroni' parameter must be True or False. Got {cell_bonferroni!r} instead.")
        self.cell_bonferroni = bool(cell_bonferroni)
        if not (cell_lazy_gap is None or (isinstance(cell_lazy_gap, str) and cell_lazy_gap == "auto")):
            if isinstance(cell_lazy_gap, str):
                raise ParameterError(f"The 'cell_lazy_gap' parameter must be 'auto', None or a number >= 0. "
                                     f"Got {cell_lazy_gap!r} instead.")
            cell_lazy_gap = check_nonnegative_finite(cell_lazy_gap, "cell_lazy_gap", "GaussianRegionModel")
        self.cell_lazy_gap = cell_lazy_gap
        if not (isinstance(marginal, str) and marginal in _MARGINAL_MODES):
            raise ParameterError(f"The 'marginal' parameter must be one of 'auto', 'bonferroni' or 'box'. "
                                 f"Got {marginal!r} instead.")
        self.marginal = marginal
        self._marginal_box = {}  # i -> TruncatedMarginal (box-probability bounds, cached across queries)
        self.cond = float(np.linalg.cond(cov))
        sd = np.sqrt(np.diag(cov))
        # marginal regressions x_k | x_i (for the marginal Bonferroni term), all pairs at once
        self._beta0 = cov / np.diag(cov)[None, :]          # [k, i] = Sigma_ki / Sigma_ii
        self._tau0 = np.sqrt(np.maximum(np.diag(cov)[:, None] - cov ** 2 / np.diag(cov)[None, :], 0.0))
        self._sd = sd

    # ------------------------------------------------------------ helpers
    def _check_node(self, i):
        if not (0 <= i < self.n):
            raise ParameterError(f"Coordinate {i} is not in 0..{self.n - 1}.")
        if not self.upper[i] - self.lower[i] >= 2 * self.delta:
            raise ParameterError(
                f"Coordinate {i}'s support [{self.lower[i]:g}, {self.upper[i]:g}] is too short for two disjoint "
                f"regions of width {self.delta:g}.")

    def _regress(self, targets, cond):
        """(beta [len(targets), len(cond)], residual variances, cond-number of Sigma_CC)."""
        if len(cond) == 0:
            return np.zeros((len(targets), 0)), np.diag(self.cov)[targets].copy(), 1.0
        S = self.cov[np.ix_(cond, cond)]
        try:
            c = np.linalg.cholesky(S)
        except np.linalg.LinAlgError:
            raise PriorError("The covariance matrix restricted to the conditioning set is not positive definite.") from None
        X = self.cov[np.ix_(cond, targets)]
        Z = np.linalg.solve(c, X)
        beta = np.linalg.solve(c.T, Z).T
        var = np.diag(self.cov)[targets] - np.sum(Z * Z, axis=0)
        return beta, var, float(np.linalg.cond(S))

    def _affine_range(self, beta_row, cond):
        """Range of sum_c beta_c (x_c - m_c) over the box of the conditioning coordinates."""
        if len(cond) == 0:
            return 0.0, 0.0
        d1 = beta_row * (self.lower[cond] - self.mean[cond])
        d2 = beta_row * (self.upper[cond] - self.mean[cond])
        return float(np.minimum(d1, d2).sum()), float(np.maximum(d1, d2).sum())

    # ------------------------------------------------------------ the bound
    def marginal_corrections(self, i: int):
        """(corr_num, corr_den) for the marginal of x_i under the truncated prior.

        Both are callables of region cells [ua, ub] (arrays; each cell covers every region
        [r, r + delta] inside it).  With G(t) = P(x_-i in B_-i | x_i = t) and N0 = N(m_i, Sigma_ii),
        P0(R) = N0(R) P(x_-i in B_-i | x_i in R) / Z, and

        * ``corr_num`` >= -log P(x_-i in B_-i | x_i in R) (so P0(R) >= N0(R) exp(-corr_num) / Z): the
          smaller of -log(1 - E0), E0 the Bonferroni sum of the tails of every other coordinate given
          x_i in [ua, ub] (``inf`` when E0 >= 1), and -min(log G(ua), log G(ub)) (G is log-concave, so
          its infimum over the cell is at an end), with certified lower bounds of log G from
          (n - 1)-dimensional box probabilities;
        * ``corr_den`` >= log P(x_-i in B_-i | x_i in R') (so P0(R') <= N0(R') exp(corr_den) / Z): the
          smallest of log(1 - max_k inf tail_k), 0, and the certified upper bound of the probability of
          the box expanded by the drift of the conditional mean over the cell,
          prod_k [lo_k + min(0, -c_k h), hi_k + max(0, -c_k h)], c = Sigma_-i,i / Sigma_ii, h = ub - ua
          (:mod:`puffgm.gaussian.marginal`).

        Each term is a valid bound, so the minimum is.  The box terms are computed according to the
        model's ``marginal`` option (``"auto"``: on cells whose Bonferroni numerator term exceeds
        0.5 nats; ``"box"``: every cell; ``"bonferroni"``: never) and cached across queries.  Used
        by every engine of :meth:`leakage` and by :func:`puffgm.gaussian.monotone.corner_lower_bound`.
        """
        i = int(i)
        self._check_node(i)
        bonf_num, bonf_den = self._bonferroni_marginal(i)
        mode = self.marginal
        if mode == "bonferroni" or self.n < 2 or (mode == "auto" and self.n - 1 > _MARGINAL_AUTO_MAX_DIM):
            return bonf_num, bonf_den
        if mode == "auto":
            # gate (cost only; any choice is valid): windows of width 2 delta, stride delta / 2, cover
            # every cell the sweeps query; if Bonferroni's term stays at or below the threshold on all of
            # them, the one-dimensional callables are returned as they are
            w0 = np.arange(self.lower[i], self.upper[i] - 2 * self.delta, self.delta / 2)
            w0 = np.append(w0, self.upper[i] - 2 * self.delta)
            if not np.any(~(bonf_num(w0, w0 + 2 * self.delta) <= _MARGINAL_AUTO_THRESHOLD)):
                return bonf_num, bonf_den
        if i not in self._marginal_box:
            from puffgm.gaussian.marginal import TruncatedMarginal

            self._marginal_box[i] = TruncatedMarginal(self.cov, self.mean, self.lower, self.upper, i)
        tm = self._marginal_box[i]
        thr = -np.inf if mode == "box" else _MARGINAL_AUTO_THRESHOLD

        def pick(ua, ub):
            ua, ub = np.broadcast_arrays(np.asarray(ua, float), np.asarray(ub, float))
            b = bonf_num(ua, ub)
            return ua, ub, b, ~(b <= thr)  # NaN or inf: use the box bound as well

        def corr_num(ua, ub):
            ua, ub, b, sel = pick(ua, ub)
            out = np.array(b, float, copy=True)
            if np.any(sel):
                out[sel] = np.fmin(out[sel], tm.corr_num(ua[sel], ub[sel]))
            return out

        def corr_den(ua, ub):
            ua, ub, _, sel = pick(ua, ub)
            out = np.minimum(np.array(bonf_den(ua, ub), float, copy=True), 0.0)
            if np.any(sel):
                out[sel] = np.fmin(out[sel], tm.corr_den(ua[sel], ub[sel]))
            return out

        return corr_num, corr_den

    def _bonferroni_marginal(self, i):
        """The one-dimensional (Bonferroni) marginal corrections (see :meth:`marginal_corrections`)."""
        m_i = self.mean[i]
        ok = np.array([k for k in range(self.n) if k != i], dtype=int)
        if not ok.size:
            def zero(ua, ub):
                return np.zeros_like(ua)
            return zero, zero
        tau0 = self._tau0[ok, i].copy()
        tau0[tau0 <= 1e-13 * self._sd[ok]] = 0.0
        args_m = (self.mean[ok], self.mean[ok], self._beta0[ok, i], tau0, self.lower[ok], self.upper[ok])

        def corr_num(ua, ub):
            return _neglog1m(_bonferroni_sum(ua, ub, m_i, *args_m))

        def corr_den(ua, ub):
            """log of an upper bound of P(x_-i in box | x_i in [ua, ub]): 1 - max_k inf tail_k."""
            inf_tail = _max_inf_tail(ua, ub, m_i, self.mean[ok], self._beta0[ok, i], tau0, self.lower[ok],
                                     self.upper[ok])
            with np.errstate(divide="ignore"):
                return np.log1p(-inf_tail)

        return corr_num, corr_den

    def leakage(self, i: int, cond, high=None, *, theorem9_grid: int = 201,
                pinned_engines: bool | None = None) -> RegionLeakage:
        """Certified upper bound of the leakage of region secrets on ``x_i`` through ``x_cond``.

        Parameters
        ----------
        i : int
            Secret coordinate.
        cond : sequence of int
            Conditioning set C (must not contain i).
        high : sequence of int, optional
            H' = the other high-influence coordinates, truncated to their box and integrated
            out (default: every coordinate outside C and i, the general split of Definition 7).
            Coordinates in neither are integrated out *untruncated*: only valid when they are
            independent of x_H given x_C (a Markov-quilt remote set).
        pinned_engines : bool, optional
            Run the b >= 3 engines for pinned splits (bivariate + Bonferroni hybrid; monotone engine;
            trivariate engine at b = 3; the cell engine at b >= 4 when the model's ``cell_budget`` > 0)
            when the Bonferroni sum is large; default: the model's setting.  Off, such splits
            keep the Bonferroni / range / precision-Lipschitz bound (often ``inf`` or loose).
        """
        i = int(i)
        self._check_node(i)
        cond = sorted(int(c) for c in cond)
        if i in cond:
            raise ParameterError(f"The conditioning set must not contain the secret coordinate {i}.")
        if high is None:
            high = [k for k in range(self.n) if k != i and k not in cond]
        high = sorted(int(k) for k in high if int(k) != i)
        if set(high) & set(cond):
            raise ParameterError("The high-influence and conditioning sets overlap.")
        delta = self.delta
        lo_i, hi_i, m_i, s0 = self.lower[i], self.upper[i], self.mean[i], self._sd[i]
        # x_i | x_C
        beta_i, var_i, cond_a = self._regress([i], cond)
        var_i = float(var_i[0])
        if var_i <= 1e-13 * self.cov[i, i]:
            return RegionLeakage(math.inf, math.inf, i, tuple(cond), tuple([i] + high),
                                 {"reason": "x_i is (numerically) determined by the conditioning set"})
        sig = math.sqrt(var_i)
        a_lo, a_hi = self._affine_range(beta_i[0], cond)
        mu_lo, mu_hi = m_i + a_lo, m_i + a_hi
        # x_k | x_i, x_C for k in H'
        cond_k = [i] + cond
        if high:
            beta_k, var_k, cond_b = self._regress(high, cond_k)
            tau_k = np.sqrt(np.maximum(var_k, 0.0))
            tau_k = np.where(var_k <= 1e-13 * np.diag(self.cov)[high], 0.0, tau_k)
            base_k = np.array([self._affine_range(beta_k[t, 1:], cond) for t in range(len(high))])
            base_k = base_k + self.mean[high][:, None]
            slope_k = beta_k[:, 0]
        else:
            cond_b = 1.0

        def _bonferroni(ua, ub, *args):
            return _bonferroni_sum(ua, ub, m_i, *args)

        if high:
            hk = np.array(high)
            args_c = (base_k[:, 0], base_k[:, 1], slope_k, tau_k, self.lower[hk], self.upper[hk])

            def E_cond(ua, ub):
                return _bonferroni(ua, ub, *args_c)
        corr_num_marg, U_marg = self.marginal_corrections(i)

        def maximise(terms, efun):
            """Certified max over r in [lo_i, hi_i - delta] of
            F(r) + efun(r),  F(r) = sum_t s_t log N([r, r + delta]; mu_t, sig_t),
            efun a correction term (e.g. -log(1 - E) for a Bonferroni sum E, inf when E >= 1).

            k(r) = log N([r, r + delta]; mu, sig) has k'' in [-1 / sig^2, 0] (the variance of a
            truncated normal lies in [0, sig^2]), so F'' >= -C with C = sum_{s_t > 0} s_t / sig_t^2;
            F minus its chord on a cell [ra, rb] of width h then has second derivative >= -C and
            vanishes at both ends, so it is at most C h^2 / 8: F <= max(F(ra), F(rb)) + C h^2 / 8.  The Bonferroni sum is
            bounded on the cell by its value on the union [ra, rb + delta].
            Returns (certified upper bound, best value met at a cell end)."""
            C = sum(s / sg ** 2 for s, _, sg in terms if s > 0)

            def F(r):
                out = np.zeros_like(r)
                for s, mu, sg in terms:
                    out += s * log_interval_prob(r, r + delta, mu, sg)
                return out

            return certified_region_max(lo_i, hi_i, delta, F, C, efun, self.tol, self.atol,
                                        iters=80, max_cells=200000)

        def corr_den(ua, ub):  # denominator region: Bonferroni on H' and the marginal's upper bound
            out = U_marg(ua, ub)
            return out + _neglog1m(E_cond(ua, ub)) if high else out

        def corr_range(ua, ub):
            return _neglog1m(E_cond(ua, ub))

        # bound 1 (Bonferroni on H' and on the marginal)
        e_c = corr_range if high else None
        # (the sup over mu of a pair's log ratio is at mu_lo or mu_hi: max over both orientations)
        bonf, gap = -math.inf, 0.0
        for mu_o in ((mu_hi, mu_lo) if mu_hi > mu_lo else (mu_hi,)):
            u1, v1 = maximise([(1, mu_o, sig), (-1, m_i, s0)], corr_num_marg)
            u2, v2 = maximise([(-1, mu_o, sig), (1, m_i, s0)], corr_den)
            if u1 + u2 > bonf:
                bonf, gap = u1 + u2, (u1 - v1) + (u2 - v2)
        # bound 2 (range over mu; the marginal ratio is at least the smallest conditional ratio)
        if mu_hi > mu_lo:
            u1, v1 = maximise([(1, mu_hi, sig), (-1, mu_lo, sig)], e_c)
            u2, v2 = maximise([(-1, mu_hi, sig), (1, mu_lo, sig)], e_c)
            rng = u1 + u2
        else:
            u1, _ = maximise([], e_c)
            rng = 2 * u1
        # bound 3 (precision-Lipschitz): t -> log P(x_H' in T | x_i = t, x_C) has derivative
        # gamma . (E_T[y] - nu), gamma = S'^-1 beta_i (= -Q_{H', i} for the precision Q of (x_i, x_H', x_C)),
        # E_T[y] in the box T and nu = E[x_H' | x_i = t, x_C] in its range, so it moves by at most
        # L_T |x - x'| between x in R and x' in R' (|x - x'| <= hi_i - lo_i): finite even when x_H' is pinned.
        lip = math.inf
        # (with H' nonempty: Omega = Cov(x_H' | x_i, x_C) and the box hull [nu_lo, nu_hi] of its mean)
        empty = np.zeros(0)
        omega, spread, nu_lo, nu_hi = np.zeros((0, 0)), empty, empty, empty
        if high:
            cp = cond_k
            omega = self.cov[np.ix_(high, high)] - self.cov[np.ix_(high, cp)] @ np.linalg.solve(
                self.cov[np.ix_(cp, cp)], self.cov[np.ix_(cp, high)])
            omega = (omega + omega.T) / 2
            e1, e2 = slope_k * (lo_i - m_i), slope_k * (hi_i - m_i)
            nu_lo = base_k[:, 0] + np.minimum(e1, e2)
            nu_hi = base_k[:, 1] + np.maximum(e1, e2)
            spread = base_k[:, 1] - base_k[:, 0]
            try:
                gamma = np.linalg.solve(omega, slope_k)
                D = np.maximum(self.upper[high] - nu_lo, nu_hi - self.lower[high])
                LT = float(np.sum(np.abs(gamma) * np.maximum(D, 0.0)))
                b3 = -math.inf
                for mu_o in ((mu_hi, mu_lo) if mu_hi > mu_lo else (mu_hi,)):
                    u1, _ = maximise([(1, mu_o, sig), (-1, m_i, s0)], corr_num_marg)
                    u2, _ = maximise([(-1, mu_o, sig), (1, m_i, s0)], U_marg)
                    b3 = max(b3, u1 + u2)
                lip = b3 + LT * (hi_i - lo_i)
            except np.linalg.LinAlgError:
                lip = math.inf
        # bound 4 (mixed-derivative range): sup - inf of the conditional log ratio over x_C, the
        # truncation term through the mixed derivative d^2 log P(x_H' in T) / dt dx_C (mixed_range_bound)
        mixed, _ = mixed_range_bound(omega, slope_k if high else empty, spread, nu_lo, nu_hi,
                                     self.lower[high], self.upper[high], hi_i - lo_i, mu_hi - mu_lo, var_i, delta)
        value = max(0.0, min(bonf, rng, lip, mixed))
        Emax = float(np.max(E_cond(np.array([lo_i]), np.array([hi_i])))) if high else 0.0
        pinned, lower_b2, val3, hybrid, val_m = math.inf, -math.inf, math.inf, math.inf, math.inf
        val_c, info_c = math.inf, {}
        if len(high) == 1 and Emax > 0.2:
            # b = 2 with the other coordinate possibly pinned: certified bivariate computation
            from puffgm.gaussian.bivariate import pinned_pair_leakage

            pinned, pinfo = pinned_pair_leakage(self, i, high[0], cond, corr_num_marg, U_marg,
                                                tol=max(self.tol, 1e-3), atol=max(self.atol, 1e-3))
            lower_b2 = pinfo.get("lower", -math.inf)
            value = max(0.0, min(value, pinned))
        elif (len(high) >= 2 and Emax > 0.2 and cond
              and (self.pinned_engines if pinned_engines is None else pinned_engines)):
            # (an empty conditioning set leaks nothing: the curves set a(n) = 0 themselves)
            # b >= 3 with other coordinates possibly pinned.  (a) one of them, p, by the certified
            # bivariate engine on (x_i, x_p) given x_C (the rest integrated out untruncated), the rest
            # by Bonferroni given x_i, x_p and x_C:  N(R, T_p, T_U) <= N(R, T_p) and
            # N(R', T_p, T_U) >= N(R', T_p) (1 - E_U(R')),  E_U(R') = sum_{k in U} sup of the tail of x_k
            # over x_i in R', x_p in T_p, x_C in the box (quasi-convexity: at an end of the mean's range)
            from puffgm.gaussian.bivariate import pinned_pair_leakage

            grid = np.linspace(lo_i, hi_i - delta, max(16, int(math.ceil(2 * (hi_i - lo_i - delta) / delta))) + 1)
            for p_ in high:
                rest = [k for k in high if k != p_]
                beta_r, var_r, cond_r = self._regress(rest, [i, p_] + cond)
                tau_r = np.where(var_r <= 1e-13 * np.diag(self.cov)[rest], 0.0, np.sqrt(np.maximum(var_r, 0.0)))
                base_r = np.array([self._affine_range(beta_r[t, 1:], [p_] + cond) for t in range(len(rest))])
                base_r = base_r + self.mean[rest][:, None]
                args_r = (base_r[:, 0], base_r[:, 1], beta_r[:, 0], tau_r, self.lower[rest], self.upper[rest])
                if float(np.max(_bonferroni(grid[:-1], grid[1:] + delta, *args_r))) >= 1:
                    continue  # some denominator region has no finite Bonferroni term

                def corr_den_rest(ua, ub, _a=args_r):
                    return U_marg(ua, ub) + _neglog1m(_bonferroni(ua, ub, *_a))

                val_p, info_p = pinned_pair_leakage(self, i, p_, cond, corr_num_marg, corr_den_rest,
                                                    tol=max(self.tol, 1e-3), atol=max(self.atol, 1e-3))
                cond_b = max(cond_b, cond_r)
                hybrid = min(hybrid, val_p)
                if val_p < pinned:
                    pinned = val_p
            # (b) any b >= 3 with a sign-balanced conditional precision (Markov chains, trees):
            # Lambda is monotone in the natural parameters, so the sup over x_C is at one point per
            # orientation, with b-dimensional box probabilities bounded on both sides
            from puffgm.gaussian.monotone import monotone_leakage

            val_m, info_m = monotone_leakage(self, i, high, cond, corr_num_marg, U_marg,
                                             tol=max(self.tol, 1e-3), atol=max(self.atol, 1e-3))
            if math.isfinite(val_m):
                lower_b2 = max(lower_b2, info_m.get("lower", -math.inf))
                pinned = min(pinned, val_m)
            if len(high) == 2 and not math.isfinite(val_m):
                # (c) b = 3: both other coordinates exactly, by the certified trivariate engine
                from puffgm.gaussian.trivariate import pinned_triple_leakage

                val3, info3 = pinned_triple_leakage(self, i, high, cond, corr_num_marg, U_marg,
                                                    tol=max(self.tol, 1e-3), atol=max(self.atol, 1e-3),
                                                    give_up_above=pinned)
                lower_b2 = info3.get("lower", -math.inf)
                pinned = min(pinned, val3)
            if len(high) >= 3 and not math.isfinite(val_m) and self.cell_budget > 0:
                # (d) b >= 4 without the sign condition: cell branch and bound over the natural
                # parameters of x_H' (puffgm.gaussian.multivariate), at most cell_budget cells
                from puffgm.gaussian.multivariate import cell_leakage

                val_c, info_c = cell_leakage(self, i, high, cond, corr_num_marg, U_marg,
                                             atol=max(self.atol, 1e-3), max_cells=self.cell_budget,
                                             max_seconds=self.cell_seconds, target=self.cell_target,
                                             checkpoint_dir=self.cell_checkpoint_dir,
                                             bonferroni=self.cell_bonferroni, lazy_gap=self.cell_lazy_gap)
                lower_b2 = max(lower_b2, info_c.get("lower", -math.inf))
                pinned = min(pinned, val_c)
            value = max(0.0, min(value, pinned))
        if math.isfinite(value):
            rel = 64 * EPS * max(self.cond, cond_a, cond_b) + 1e-12
            value = value * (1 + rel) + 1e-12
        th9 = self.theorem9(i, mu_lo, mu_hi, sig, theorem9_grid)
        return RegionLeakage(value, th9, i, tuple(cond), tuple([i] + high),
                             {"bonferroni": bonf, "range": rng, "precision_lipschitz": lip, "mixed_range": mixed,
                              "bivariate": pinned,
                              "trivariate": val3, "hybrid": hybrid, "monotone": val_m, "cells": val_c,
                              "cell_engine": {k: v for k, v in info_c.items() if k in ("cells", "stopped", "checkpoint",
                                                                                      "seconds")},
                              "bivariate_lower": lower_b2, "E_max": Emax, "mu_interval": (mu_lo, mu_hi), "marginal": self.marginal,
                              "sigma": sig, "gap": gap})

    def theorem9(self, i, mu_lo, mu_hi, sig, grid=201) -> float:
        """Theorem 9 as the paper computes it: sup over mu of the conditional log ratio minus the
        untruncated marginal log ratio, on a grid of region positions (disjoint pairs)."""
        lo_i, hi_i, m_i, s0, delta = self.lower[i], self.upper[i], self.mean[i], self._sd[i], self.delta
        r = np.linspace(lo_i, hi_i - delta, grid)
        marg = log_interval_prob(r, r + delta, m_i, s0)
        disjoint = np.abs(r[:, None] - r[None, :]) >= delta - 1e-12
        best = -math.inf
        for mu in (mu_lo, mu_hi):
            k = log_interval_prob(r, r + delta, mu, sig) - marg
            best = max(best, float(np.max(np.where(disjoint, k[:, None] - k[None, :], -np.inf))))
        return max(best, 0.0)


def region_leakage(cov, lower, upper, delta, i, cond, high=None, *, mean=None, tol=1e-5, atol=1e-4) -> RegionLeakage:
    """One-shot :meth:`GaussianRegionModel.leakage` (see the module docstring)."""
    return GaussianRegionModel(cov, lower, upper, delta, mean, tol=tol, atol=atol).leakage(i, cond, high)
