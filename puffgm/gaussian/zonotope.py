r"""Gaussian conditionals of a split and the zonotope of their natural parameters.

For a split with high-influence coordinates :math:`H` and conditioning set :math:`C` of a Gaussian prior,
:math:`x_H \mid x_C` is :math:`N(\mu, S)` with :math:`\mu` affine in :math:`x_C`; with :math:`\eta = S^{-1} \mu`
the law of :math:`x_H` restricted to a box is an exponential family in :math:`\eta`, and over the box of
:math:`x_C`, :math:`\eta` ranges over a zonotope :math:`Z = \text{centre} + G [-1, 1]^{|C|}`.  The
pinned engines of :mod:`puffgm.gaussian` bound the leakage over Z: this module computes the conditional
(:func:`conditional_block`, :func:`pinned_conditional`), the zonotope (:func:`natural_zonotope`), the
hulls of a planar zonotope (:func:`hull_functions`, :func:`hull_max`) and certified maxima of a
coordinate over Z and a box by Lagrangian duality (:func:`zonotope_max_dual`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = [
    "conditional_block",
    "hull_functions",
    "hull_max",
    "natural_zonotope",
    "pinned_conditional",
    "zonotope_max_dual",
]


def conditional_block(cov, H, C):
    r""":math:`(W, S)` of the Gaussian conditional :math:`x_H \mid x_C`.

    Mean :math:`m_H + W (x_C - m_C)`, covariance :math:`S`, with :math:`W = \Sigma_{HC} \Sigma_{CC}^{-1}` and
    :math:`S = \Sigma_{HH} - W \Sigma_{CH}` (symmetrised); :math:`W` has no columns when :math:`C` is empty.
    """
    if C:
        W = np.linalg.solve(cov[np.ix_(C, C)], cov[np.ix_(C, H)]).T
        S = cov[np.ix_(H, H)] - W @ cov[np.ix_(C, H)]
    else:
        W = np.zeros((len(H), 0))
        S = cov[np.ix_(H, H)].copy()
    return W, (S + S.T) / 2


def natural_zonotope(model, H, C, W, S):
    r"""(:math:`S^{-1}`, centre, generators) of the zonotope of natural parameters :math:`\eta = S^{-1} \mu`.

    :math:`\mu = m_H + W (x_C - m_C)` is affine in :math:`x_C`, so over the box of :math:`x_C`, :math:`\eta`
    ranges over centre :math:`+` generators :math:`\cdot [-1, 1]^{|C|}` (the image of the box's centre and half-widths).
    """
    mean = model.mean
    Sinv = np.linalg.inv(S)
    if C:
        xc_mid = (model.lower[C] + model.upper[C]) / 2
        center = Sinv @ (mean[H] + W @ (xc_mid - mean[C]))
        gens = (Sinv @ W) * ((model.upper[C] - model.lower[C]) / 2)[None, :]
    else:
        center = Sinv @ mean[H]
        gens = np.zeros((len(H), 0))
    return Sinv, center, gens


class PinnedBlock(NamedTuple):
    r""":math:`x_H \mid x_C` of a split: its covariance :math:`S`, precision :math:`S^{-1}`, and the zonotope's
    centre and generators."""

    cov: np.ndarray
    precision: np.ndarray
    center: np.ndarray
    gens: np.ndarray


def pinned_conditional(model, H, C) -> PinnedBlock | None:
    r"""(:math:`S`, :math:`S^{-1}`, centre, generators) of :math:`x_H \mid x_C` and its natural-parameter zonotope.

    None when :math:`S` is not (numerically) positive definite (:math:`x_H` determined by :math:`x_C`).
    """
    W, S = conditional_block(model.cov, H, C)
    try:
        np.linalg.cholesky(S)
    except np.linalg.LinAlgError:
        return None
    Sinv, center, gens = natural_zonotope(model, H, C, W, S)
    return PinnedBlock(S, Sinv, center, gens)


def hull_functions(center, gens):
    r"""Upper and lower hull (:math:`Y` as a function of :math:`X`) of a planar zonotope.

    The zonotope is :math:`\text{center} + \sum_j [-1, 1]\, g_j` with :math:`g_j` the columns of ``gens``;
    ``center`` = :math:`(X, Y)`; returns (xs_up, ys_up, xs_lo, ys_lo, xmin, xmax) vertex lists.
    """
    gx, gy = gens[0].astype(float).copy(), gens[1].astype(float).copy()
    flip = (gx < 0) | ((gx == 0) & (gy < 0))
    gx[flip], gy[flip] = -gx[flip], -gy[flip]
    vert = gx == 0
    yv = float(np.sum(np.abs(gy[vert])))
    nx_, ny_ = gx[~vert], gy[~vert]
    xmin = center[0] - float(np.sum(nx_))
    y0 = center[1] - float(np.sum(ny_))
    slope = ny_ / nx_ if nx_.size else np.zeros(0)
    out = []
    for order in (np.argsort(-slope, kind="stable"), np.argsort(slope, kind="stable")):
        xs = np.concatenate([[xmin], xmin + np.cumsum(2 * nx_[order])])
        ys = np.concatenate([[y0], y0 + np.cumsum(2 * ny_[order])])
        out.append((xs, ys))
    (xu, yu), (xl, yl) = out
    return xu, yu + yv, xl, yl - yv, xmin, xmin + 2 * float(np.sum(nx_))


def hull_max(xs, ys, a, b):
    """Max of the piecewise-linear concave function (xs, ys) over :math:`[a, b]` (arrays a, b)."""
    va, vb = np.interp(a, xs, ys), np.interp(b, xs, ys)
    best = np.maximum(va, vb)
    inside = (xs[None, :] >= a[:, None]) & (xs[None, :] <= b[:, None])
    vv = np.where(inside, ys[None, :], -np.inf)
    return np.maximum(best, vv.max(axis=1))


def zonotope_max_dual(center, gens, obj, cons, box_lo, box_hi):
    r"""Certified upper bound of :math:`\max \{ \eta_o : \eta \in Z, \mathrm{lo} \le \eta_k \le \mathrm{hi} \}`.

    :math:`Z = c + G [-1, 1]^m` (``center``, ``gens``), :math:`o` = ``obj``, :math:`k` ranging over
    ``cons`` (their rows :math:`G_{\mathrm{cons}}`), :math:`\mathrm{lo}, \mathrm{hi}` = ``box_lo``, ``box_hi``.
    For any multipliers :math:`\lambda`, the max is at most

    $$
    c_o + \lVert g_o - \lambda \cdot G_{\mathrm{cons}} \rVert_1
    + \sum_k \max(\lambda_k (\mathrm{lo}_k - c_k), \lambda_k (\mathrm{hi}_k - c_k));
    $$

    :math:`\lambda` comes from HiGHS's duals (any :math:`\lambda` is valid; 0 when the solver fails).  Returns
    (bound, u) with u an (approximately) maximising generator weight vector (None when the solver fails).
    """
    from scipy.optimize import linprog

    g = gens[obj]
    Gc = gens[cons]
    cc = center[cons]
    lo_rel, hi_rel = np.asarray(box_lo) - cc, np.asarray(box_hi) - cc
    lam = np.zeros(len(cons))
    u = None
    try:
        res = linprog(-g, A_ub=np.vstack([Gc, -Gc]), b_ub=np.concatenate([hi_rel, -lo_rel]),
                      bounds=[(-1, 1)] * gens.shape[1], method="highs")
        if res.status == 0:
            mg = np.asarray(res.ineqlin.marginals, float)
            k = len(cons)
            lam = -mg[:k] + mg[k:]
            u = res.x
    except (ValueError, AttributeError):
        pass

    def D(mult):
        return float(center[obj] + np.sum(np.abs(g - mult @ Gc)) + np.sum(np.maximum(mult * lo_rel, mult * hi_rel)))

    return min(D(lam), D(np.zeros(len(cons)))), u
