"""Certified leakage for any number b - 1 >= 2 of pinned high-influence coordinates: cells in b - 1 dimensions.

Split: secret coordinate i, other high-influence coordinates H' (truncated to their box T, integrated out),
conditioning set C.  As in :mod:`puffgm.gaussian.trivariate`, given x_C the law of x_H on R x T is an
exponential family in eta = S^-1 mu, Lambda(eta) = log N(R x T) - log N(R' x T) is non-decreasing in
eta_i when R lies above R', and eta ranges over the zonotope Z (image of the box of x_C).  On a cell c
(a box of eta_H'):

    sup_{Z n c} Lambda <= Lambda(U(c), m) + sum_{k in H'} L_k(c) w_k,      U(c) = max { eta_i : eta in Z, eta_H' in c }

with m the centre and w the half-widths of c.  **The Lipschitz constants L_k(c)** come from the Gibbs
conditionals: given every other coordinate of H (each anywhere in its box) the law of x_k on R x T is
N(m_k, 1 / P_kk) truncated to [lo_k, hi_k] with m_k = (eta_k - sum_{j != k} P_kj x_j) / P_kk, P = S^-1; the
truncated-normal mean tau(m) is increasing in m, so for every region R and every eta in the cell,
E_R[x_k] lies in [tau(m_k^-), tau(m_k^+)], the ends of m_k over the cell and the boxes; hence
|d Lambda / d eta_k| = |E_R[x_k] - E_R'[x_k]| <= L_k(c) = tau(m_k^+) - tau(m_k^-) <= hi_k - lo_k.  For a
coordinate pinned at a face of the box (m_k far outside it over the whole cell) L_k(c) is tiny, so the
cells can be wide in the directions in which Lambda is flat.  U(c) is bounded by Lagrangian duality for
any multipliers (:func:`puffgm.gaussian.trivariate.zonotope_max_dual`); cells that miss the projection of
Z are dropped only on a verified separating hyperplane (Farkas certificate).  Lambda(U, m) over the
continuum of regions is the pair bound of :mod:`puffgm.gaussian.monotone` (b-dimensional box
probabilities of :mod:`puffgm.gaussian.boxprob`, F'' >= -(S^-1)_ii, Prekopa for the denominator).
"""

from __future__ import annotations

import math

import numpy as np

from .bivariate import conditional_block, natural_zonotope
from .boxprob import BoxProbability, log_trunc_normal
from .trivariate import zonotope_max_dual

__all__ = ["pinned_block_leakage", "zonotope_misses_box"]


def zonotope_misses_box(center, gens, cons, lo, hi):
    """True only when the box lo <= eta_cons <= hi provably misses Z = center + gens [-1, 1]^m.

    A phase-one linear program (HiGHS) proposes multipliers lam; the box is certified to miss Z when
    max_{u in [-1, 1]^m} lam . G_cons u = ||lam G_cons||_1 < min_{eta in box} lam . (eta - center_cons)
    (a separating hyperplane, checked in floating point with a relative margin)."""
    from scipy.optimize import linprog

    Gc = gens[cons]
    lo_rel, hi_rel = np.asarray(lo, float) - center[cons], np.asarray(hi, float) - center[cons]
    k, m = Gc.shape
    # min s  s.t.  Gc u - s <= hi_rel,  -Gc u - s <= -lo_rel,  -1 <= u <= 1,  s >= 0
    c = np.zeros(m + 1)
    c[-1] = 1.0
    A = np.block([[Gc, -np.ones((k, 1))], [-Gc, -np.ones((k, 1))]])
    b = np.concatenate([hi_rel, -lo_rel])
    try:
        res = linprog(c, A_ub=A, b_ub=b, bounds=[(-1, 1)] * m + [(0, None)], method="highs")
    except ValueError:
        return False
    if res.status != 0 or res.fun <= 1e-12 * (1 + float(np.max(np.abs(b)))):
        return False
    mg = np.asarray(res.ineqlin.marginals, float)
    lam = mg[:k] - mg[k:]   # outward normal of the violated box faces (HiGHS marginals are <= 0)
    lhs = float(np.sum(np.abs(lam @ Gc)))
    rhs = float(np.sum(np.minimum(lam * lo_rel, lam * hi_rel)))
    scale = float(np.sum(np.abs(lam) * (np.abs(lo_rel) + np.abs(hi_rel) + np.sum(np.abs(Gc), axis=1))))
    return lhs < rhs - 1e-9 * scale


def pinned_block_leakage(model, i, high, cond, corr_num, corr_den, *, tol=1e-3, atol=1e-3, max_cells=3000,
                         n0=2, give_up_above=math.inf, box_tol=1e-2, max_boxes=2000, target=None):
    """Certified upper bound of the leakage of region secrets on x_i through x_cond, H = {i} + high.

    ``corr_num`` and ``corr_den`` are the marginal corrections of
    :meth:`~puffgm.gaussian.leakage.GaussianRegionModel.leakage`.  The branch and bound stops when the
    certified value is within ``tol`` (relative) of the best cell value met, below ``target`` (a bound
    known elsewhere that is good enough), at ``max_cells`` cells, or once a cell value exceeds
    ``give_up_above``; the value returned is certified in every case.  Returns (value, details)."""
    from .monotone import _pair_bound_factory

    cov = model.cov
    H = [int(i)] + [int(k) for k in high]
    C = list(cond)
    d = len(H) - 1
    W, S = conditional_block(cov, H, C)
    try:
        np.linalg.cholesky(S)
    except np.linalg.LinAlgError:
        return math.inf, {"reason": "x_H is (numerically) degenerate given x_cond"}
    P, center, gens = natural_zonotope(model, H, C, W, S)
    P = (P + P.T) / 2
    try:
        box = BoxProbability(P, tol=box_tol, max_boxes=max_boxes)
    except np.linalg.LinAlgError:
        return math.inf, {"reason": "x_H is (numerically) degenerate given x_cond"}
    pair_bound = _pair_bound_factory(model, i, H, S, box, corr_num, corr_den, tol, atol)
    lo_H, hi_H = model.lower[H].astype(float), model.upper[H].astype(float)
    wid = hi_H[1:] - lo_H[1:]
    Pk = np.diag(P)[1:]
    off = P[1:].copy()
    off[np.arange(d), np.arange(1, d + 1)] = 0.0
    # sum_{j != k} P_kj x_j over the boxes: [smin_k, smax_k]
    smin = np.sum(np.minimum(off * lo_H[None, :], off * hi_H[None, :]), axis=1)
    smax = np.sum(np.maximum(off * lo_H[None, :], off * hi_H[None, :]), axis=1)

    def lipschitz(a, b):
        m_lo = (a - smax) / Pk
        m_hi = (b - smin) / Pk
        _, t_lo = log_trunc_normal(lo_H[1:], hi_H[1:], m_lo * Pk, Pk)
        _, t_hi = log_trunc_normal(lo_H[1:], hi_H[1:], m_hi * Pk, Pk)
        L = np.minimum(t_hi - t_lo + 1e-9 * wid, wid)
        return np.where(np.isfinite(L), np.maximum(L, 0.0), wid)

    # cells live in rotated coordinates xi = R (eta_H' - c_H') along the principal axes of the projection
    # of Z (Z is often nearly flat: a few wide directions, the others thin); eta_H' = c_H' + R' xi
    Uv, _, _ = np.linalg.svd(gens[1:], full_matrices=True)
    R = Uv.T
    cen2 = np.concatenate([[center[0]], np.zeros(d)])
    gens2 = np.vstack([gens[:1], R @ gens[1:]])
    cH = center[1:]
    absRT = np.abs(R.T)
    reach = np.sum(np.abs(gens2), axis=1)
    glo, ghi = -reach[1:], reach[1:]
    pad = 1e-9 * (1.0 + float(np.max(np.abs(center))) + float(np.max(reach)))
    cons = list(range(1, d + 1))
    stats = {"cells": 0, "dropped_empty": 0}

    def slopes(a, b):
        """Per rotated axis j, a bound of |d Lambda / d xi_j| = |sum_k R'_kj dLambda/deta_k| on the cell."""
        ctr, hw = (a + b) / 2, (b - a) / 2
        e_mid = cH + R.T @ ctr
        e_half = absRT @ hw + pad
        L = lipschitz(e_mid - e_half, e_mid + e_half)
        return absRT.T @ L

    # eta_i is close to a linear function of xi on Z (least squares over the generators): its spread over
    # a cell, times |d Lambda / d eta_i| <= hi_i - lo_i, also guides the splitting (heuristic only)
    alpha = np.linalg.lstsq(gens2[1:].T, gens2[0], rcond=None)[0]
    wid_i = float(hi_H[0] - lo_H[0])

    def split_axis(a, b):
        return int(np.argmax((slopes(a, b) + np.abs(alpha) * wid_i) * (b - a)))

    def cell(a, b):
        ctr = (a + b) / 2
        U, _ = zonotope_max_dual(cen2, gens2, 0, cons, a, b)
        Lneg, _ = zonotope_max_dual(-cen2, -gens2, 0, cons, -b, -a)
        eta_H = cH + R.T @ ctr
        bu, eu = pair_bound(np.concatenate([[U + pad], eta_H]))
        bd, ed = pair_bound(np.concatenate([[-Lneg - pad], eta_H]))
        slack = float(np.sum(slopes(a, b) * (b - a) / 2))
        stats["cells"] += 1
        return max(bu, bd) + slack, max(eu, ed)

    # initial grid over the bounding box of the projection of Z
    axes = [np.linspace(glo[k], ghi[k], n0 + 1) if ghi[k] > glo[k] else np.array([glo[k], glo[k]]) for k in range(d)]
    cells = []
    for idx in np.ndindex(*([n0] * d)):
        a = np.array([axes[k][idx[k]] for k in range(d)])
        b = np.array([axes[k][idx[k] + 1] for k in range(d)])
        if zonotope_misses_box(cen2, gens2, cons, a - pad, b + pad):
            stats["dropped_empty"] += 1
            continue
        cells.append((a, b))
    vals = [cell(a, b) for a, b in cells]
    dropped = -math.inf
    best = max(v[1] for v in vals) if vals else -math.inf
    target = -math.inf if target is None else target
    while vals:
        cert = max(max(v[0] for v in vals), dropped)
        slack = max(atol, tol * abs(best))
        if (not math.isfinite(cert) or cert - best <= slack or cert <= target or stats["cells"] >= max_cells
                or best > give_up_above):
            break
        thr = max(best + 0.25 * slack, cert - 0.5 * (cert - best))
        next_cells, next_vals = [], []
        for (a, b), v in zip(cells, vals):
            if v[0] <= best + 0.25 * slack:
                dropped = max(dropped, v[0])
                continue
            if v[0] < thr:
                next_cells.append((a, b))
                next_vals.append(v)
                continue
            k = split_axis(a, b)
            m = (a[k] + b[k]) / 2
            b1, a2 = b.copy(), a.copy()
            b1[k], a2[k] = m, m
            for cc in ((a, b1), (a2, b)):
                if zonotope_misses_box(cen2, gens2, cons, cc[0] - pad, cc[1] + pad):
                    stats["dropped_empty"] += 1
                    continue
                vv = cell(*cc)
                next_cells.append(cc)
                next_vals.append(vv)
                best = max(best, vv[1])
        cells, vals = next_cells, next_vals
    cert = max([v[0] for v in vals] + [dropped]) if vals else dropped
    return cert, {"estimate": best, **stats}
