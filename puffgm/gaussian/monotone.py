"""Certified leakage for any number of pinned high-influence coordinates when the prior is sign-balanced.

Split: secret coordinate i, other high-influence coordinates H' (truncated to their box T and integrated
out), conditioning set C.  Given x_C, x_H ~ N(mu, S) with mu affine in x_C, and with eta = S^-1 mu and
P = S^-1 the law of x_H restricted to R x T is an exponential family in eta:

    Lambda_{R, R'}(eta) = log N(R x T) - log N(R' x T),    grad Lambda = E_R[x_H] - E_R'[x_H].

**Monotonicity (MTP2).**  Suppose the precision P is *sign-balanced*: there are signs s (s_i = +1) with
s_j s_k P_jk <= 0 for j != k (for a kernel that is totally positive, such as the squared-exponential
kernel on ordered points, s_k = (-1)^(k - i): the inverse of a totally positive matrix has a checkerboard
sign pattern, and so has every principal submatrix of the precision).  With y = s x the Gaussian density
has non-positive off-diagonal precision, so it is multivariate totally positive of order 2 (MTP2), and so
is its restriction to the product set R x T (products of MTP2 functions are MTP2).  Given y_i = t, the
law of y_H' is then stochastically increasing in t, so for R above R' (every point of R above every point
of R') E_R[y_k] >= E_R'[y_k] for every k: Lambda is non-decreasing in every coordinate of
eta~ = s eta.  Over the zonotope Z of eta (the image of the box of x_C) therefore

    sup_{x_C} Lambda_{R, R'} <= Lambda_{R, R'}(s eta~max),   eta~max_k = max_Z s_k eta_k  (R above R'),

and the same with eta~min for R below R'.  When the columns of diag(s) times the generators of Z have
consistent signs (true for totally positive kernels), eta~max is attained at a corner of the box of x_C
and the bound is the exact sup; a certified lower bound is computed there too.

The box probabilities N([r, r + delta] x T) in b dimensions are bounded on both sides by
:class:`puffgm.gaussian.boxprob.BoxProbability`; the continuum of regions uses
F'' >= -(S^-1)_ii for F(r) = log N([r, r + delta] x T) (the trivariate engine's argument holds in any
dimension: with x_H' | x_i = t ~ N(a + c t, Omega), (log G)'' = Var_T[c' Omega^-1 y] - c' Omega^-1 c) and
the concavity of F (Prekopa) for the denominator, as in :mod:`puffgm.gaussian.trivariate`.
"""

from __future__ import annotations

import math

import numpy as np

from .bivariate import conditional_block, natural_zonotope
from .boxprob import BoxProbability
from .leakage import certified_region_max, log_interval_prob

__all__ = ["balancing_signs", "monotone_leakage"]


def balancing_signs(P, root=0):
    """Signs s with s[root] = +1 and s_j s_k P_jk <= 0 for every j != k, or None when none exist.

    The signs are propagated along the non-zero off-diagonal entries (a breadth-first search of the
    graph of P); the matrix is sign-balanced exactly when no entry contradicts them."""
    P = np.asarray(P, float)
    n = len(P)
    s = np.zeros(n, int)
    for start in [root] + [k for k in range(n) if k != root]:
        if s[start]:
            continue
        s[start] = 1
        queue = [start]
        while queue:
            j = queue.pop()
            for k in np.flatnonzero(P[j]):
                if k == j:
                    continue
                want = -s[j] if P[j, k] > 0 else s[j]
                if s[k] == 0:
                    s[k] = want
                    queue.append(k)
                elif s[k] != want:
                    return None
    return s.astype(float)


def monotone_leakage(model, i, high, cond, corr_num, corr_den, *, tol=1e-3, atol=1e-3, box_tol=None,
                     max_boxes=2000):
    """Certified upper bound of the leakage of region secrets on x_i through x_cond, H = {i} + high.

    Applies when the conditional precision of x_H given x_cond is sign-balanced (see the module
    docstring); returns (inf, details with a "reason") otherwise.  ``corr_num`` and ``corr_den`` are the
    marginal corrections of :meth:`~puffgm.gaussian.leakage.GaussianRegionModel.leakage`
    (-log(1 - E0) for the numerator region, log U0 for the denominator region).  Returns
    (value, details); ``details["lower"]`` is a certified lower bound of the exact leakage at attained
    box points of x_cond (top region against bottom region, and back)."""
    cov, mean, delta = model.cov, model.mean, model.delta
    H = [int(i)] + [int(k) for k in high]
    C = list(cond)
    lo_i, hi_i = model.lower[i], model.upper[i]
    W, S = conditional_block(cov, H, C)
    try:
        np.linalg.cholesky(S)
    except np.linalg.LinAlgError:
        return math.inf, {"reason": "x_H is (numerically) degenerate given x_cond"}
    Sinv, center, gens = natural_zonotope(model, H, C, W, S)
    Sinv = (Sinv + Sinv.T) / 2
    # entries at rounding level (structural zeros of a sparse precision, e.g. a Markov chain's) are set
    # to 0; the exponent then changes by at most pert / 2 on the box, so each log box probability by at
    # most pert / 2 and Lambda by at most pert (added to the bound, subtracted from the lower bound)
    dg = np.sqrt(np.diag(Sinv))
    tiny = (np.abs(Sinv) <= 1e-9 * np.outer(dg, dg)) & ~np.eye(len(H), dtype=bool)
    Mx = np.maximum(np.abs(model.lower[H]), np.abs(model.upper[H])).astype(float)
    pert = float(np.sum(np.abs(Sinv[tiny]) * np.outer(Mx, Mx)[tiny]))
    Sinv[tiny] = 0.0
    s = balancing_signs(Sinv)
    if s is None:
        return math.inf, {"reason": "the conditional precision of x_H is not sign-balanced"}
    try:
        box = BoxProbability(Sinv, tol=box_tol if box_tol is not None else max(atol, 1e-2), max_boxes=max_boxes)
    except np.linalg.LinAlgError:
        return math.inf, {"reason": "x_H is (numerically) degenerate given x_cond"}
    S = np.linalg.inv(Sinv)
    S = (S + S.T) / 2
    sg = s[:, None] * gens
    reach = np.sum(np.abs(sg), axis=1)
    eta_up = s * (s * center + reach)    # componentwise max of s eta over Z, back in eta
    eta_dn = s * (s * center - reach)
    # attained corners for the lower bound: majority sign of each column of diag(s) gens
    col = np.sign(np.sum(sg, axis=0))
    consistent = bool(np.all((sg * col[None, :] >= 0) | (sg == 0)))
    lo_H, hi_H = model.lower[H].astype(float), model.upper[H].astype(float)
    m0, s0 = mean[i], math.sqrt(cov[i, i])
    K1, K2 = float(Sinv[0, 0]), 1.0 / cov[i, i]
    n_boxes = [0]

    def box_bounds(mu, r):
        r = np.asarray(r, float)
        lo = np.broadcast_to(lo_H, (len(r), len(H))).copy()
        hi = np.broadcast_to(hi_H, (len(r), len(H))).copy()
        lo[:, 0], hi[:, 0] = r, r + delta
        lb, ub, nb = box.bounds_many(mu, lo, hi)
        n_boxes[0] = max(n_boxes[0], int(np.max(nb)))
        return lb, ub

    def pair_bound(eta):
        mu = S @ eta
        memo = {}

        def bb(r):
            key = r.tobytes()
            if key not in memo:
                memo.clear()
                memo[key] = box_bounds(mu, r)
            return memo[key]

        def f1(r):
            return bb(r)[1] - log_interval_prob(r, r + delta, m0, s0)

        def f2(r):
            return -bb(r)[0] + log_interval_prob(r, r + delta, m0, s0)

        u1, v1 = certified_region_max(lo_i, hi_i, delta, f1, K1, corr_num, tol, atol, iters=25, max_cells=20000)
        u2, v2 = certified_region_max(lo_i, hi_i, delta, f2, K2, corr_den, tol, atol, iters=25, max_cells=20000)
        return u1 + u2, v1 + v2

    cert_up, est_up = pair_bound(eta_up)
    cert_dn, est_dn = pair_bound(eta_dn)
    cert = max(cert_up, cert_dn) + pert
    # certified lower bound at attained corners of the box of x_C: top region against bottom region
    top, bot = np.array([hi_i - delta]), np.array([lo_i])
    m_t = float(log_interval_prob(top, top + delta, m0, s0)[0])
    m_b = float(log_interval_prob(bot, bot + delta, m0, s0)[0])
    lower = -math.inf
    for u in (col, -col):
        mu = S @ (center + gens @ u)
        lt, ut = box_bounds(mu, top)
        lb, ub = box_bounds(mu, bot)
        up_pair = (lt[0] - ub[0]) - (m_t - m_b + float(corr_num(bot, bot + delta)[0]))
        dn_pair = (lb[0] - ut[0]) - (m_b - m_t + float(corr_num(top, top + delta)[0]))
        lower = max(lower, up_pair - pert, dn_pair - pert)
    return cert, {"signs": s.astype(int).tolist(), "corner_attained": consistent, "estimate": max(est_up, est_dn),
                  "lower": lower, "max_sub_boxes": n_boxes[0]}
