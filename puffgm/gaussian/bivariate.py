r"""Certified leakage for two high-influence coordinates (:math:`b = 2`) when the other one can be pinned.

Split: secret coordinate :math:`i`, one other high-influence coordinate :math:`k` (truncated to
:math:`[lo_k, hi_k]` and integrated out), conditioning set :math:`C`.  Given :math:`x_C`,
:math:`(x_i, x_k) \sim N(\mu, S)` with :math:`\mu` affine in :math:`x_C`; with :math:`\eta = S^{-1} \mu` the law of
:math:`(x_i, x_k)` restricted to :math:`R \times T_k` is an exponential family in :math:`\eta`, so

$$
\Lambda(\eta) = \log N(R \times T_k) - \log N(R' \times T_k)
$$

has gradient :math:`E_R[x] - E_{R'}[x]` (means under the restrictions):
:math:`\partial / \partial \eta_i \in [r - r' - \delta, r - r' + \delta]` (non-negative when :math:`R` lies above
:math:`R'`) and :math:`|\partial / \partial \eta_k| \le hi_k - lo_k`.  :math:`\eta` ranges over a 2-D zonotope
:math:`Z` (the image of the box of :math:`x_C`).  On a slab :math:`a \le \eta_k \le b` of :math:`Z`:

$$
\Lambda \le \Lambda\big(U(a, b), (a + b) / 2\big) + (hi_k - lo_k) (b - a) / 2, \qquad
U(a, b) = \max_{Z \cap \text{slab}} \eta_i
$$

(min and the lower hull for :math:`R` below :math:`R'`).  :math:`N(R \times T_k) = \int_R \varphi(t) g(t)\, dt` with
:math:`g(t) = P(x_k \in T_k \mid x_i = t)` log-concave: on sub-intervals, :math:`\log g` lies below its tangent
and above its chord, and :math:`\varphi` times an exponential integrates in closed form, giving certified
two-sided bounds.  The continuum of regions uses the cell bound of :mod:`puffgm.gaussian.primitives` with
:math:`(\log N([r, r + \delta] \times T_k))'' \ge -(1 / s_i^2 + c^2 / \tau^2)`.  Slabs are refined by
branch-and-bound.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from puffgm.gaussian.primitives import (
    PairLaw,
    PinnedOptions,
    RegionSweep,
    dlog_g,
    log_g,
    log_gauss_exp,
    log_interval_prob,
    lse_rows,
    region_pair_bound,
)
from puffgm.gaussian.zonotope import conditional_block, hull_functions, hull_max, natural_zonotope

__all__ = ["log_box_bounds", "pinned_pair_leakage"]


def log_box_bounds(r, delta, law: PairLaw, box_k, M=16):
    r"""Certified (lower, upper) of :math:`\log N(x_i \in [r, r + \delta], x_k \in [lo_k, hi_k])` for arrays :math:`r`.

    Parameters
    ----------
    r : array
        Region positions.
    delta : float
        Region width.
    law : PairLaw
        :math:`x_i \sim N(m_1, s_1^2)`, :math:`x_k \mid x_i = t \sim N(m_2 + \mathrm{slope}\,(t - m_1), \tau^2)`
        (scalar means).
    box_k : (float, float)
        The interval :math:`[lo_k, hi_k]` of :math:`x_k`.
    M : int
        Sub-intervals of each region: on each, log g (concave) lies below its tangent at the midpoint and
        above its chord, and the normal density times an exponential integrates in closed form.
    """
    mi, si, mk, c, tau = law.m1, law.s1, law.m2, law.slope, law.tau
    lo_k, hi_k = box_k
    r = np.asarray(r, float)
    u = np.linspace(0.0, 1.0, M + 1)
    A = r[:, None] + delta * u[None, :-1]
    B = r[:, None] + delta * u[None, 1:]
    Mid = (A + B) / 2
    la, lb, lm = (log_g(x, mk, c, mi, tau, lo_k, hi_k) for x in (A, B, Mid))
    dm = dlog_g(Mid, mk, c, mi, tau, lo_k, hi_k)
    dm = np.where(np.isfinite(dm), dm, 0.0)
    up = lm + log_gauss_exp(A, B, mi, si, dm, Mid)           # tangent at the midpoint
    with np.errstate(invalid="ignore"):
        chord = (lb - la) / (B - A)
    chord = np.where(np.isfinite(chord), chord, 0.0)
    lo = la + log_gauss_exp(A, B, mi, si, chord, A)           # chord
    lo = np.where(np.isfinite(la) & np.isfinite(lb), lo, -np.inf)
    return lse_rows(lo), lse_rows(up)


def pinned_pair_leakage(model, i, k, cond, corr_num, corr_den, options: PinnedOptions = PinnedOptions()):
    r"""Certified upper bound of the leakage of region secrets on :math:`x_i` via ``x_cond``, :math:`H = \{i, k\}`.

    Parameters
    ----------
    model : GaussianRegionModel
        The truncated prior and the region width.
    i, k : int
        The secret coordinate and the other high-influence coordinate (truncated, integrated out).
    cond : sequence of int
        The conditioning set :math:`C`.
    corr_num, corr_den : callable
        The marginal corrections of :meth:`~puffgm.gaussian.leakage.GaussianRegionModel.leakage`
        (:math:`-\log(1 - E_0)` for the numerator region, :math:`\log U_0` for the denominator region).
    options : PinnedOptions
        ``tol``, ``atol`` (region sweeps and slab refinement) and ``max_rounds`` (slab refinement rounds).

    Returns
    -------
    tuple
        (value, details); ``details["lower"]`` is a certified lower bound of the exact leakage at
        attained points (:math:`\eta` on the hulls at the slab centres: a box corner :math:`x_C` attains it).
    """
    cov, mean = model.cov, model.mean
    lo_i, hi_i, lo_k, hi_k = model.lower[i], model.upper[i], model.lower[k], model.upper[k]
    delta = model.delta
    H = [i, k]
    C = list(cond)
    W, S = conditional_block(cov, H, C)
    Sinv, center, gens = natural_zonotope(model, H, C, W, S)
    # X = eta_k, Y = eta_i
    xu, yu, xl, yl, xmin, xmax = hull_functions(np.array([center[1], center[0]]), np.array([gens[1], gens[0]]))
    pad = 1e-12 * (1 + float(np.max(np.abs(np.concatenate([yu, yl])))))
    si = math.sqrt(S[0, 0])
    c = S[1, 0] / S[0, 0]
    tau = math.sqrt(max(S[1, 1] - S[1, 0] ** 2 / S[0, 0], 0.0))
    if tau <= 1e-12 * math.sqrt(S[1, 1]):
        return math.inf, {"reason": "x_k determined by x_i and x_cond"}
    m0, s0 = mean[i], math.sqrt(cov[i, i])
    K1 = 1.0 / S[0, 0] + c * c / tau ** 2
    K2 = 1.0 / cov[i, i]
    wk = hi_k - lo_k
    sweep = RegionSweep(lo_i, hi_i, delta, options.tol, options.atol, iters=25)

    def log_box(mu):
        return lambda r: log_box_bounds(r, delta, PairLaw(mu[0], si, mu[1], c, tau), (lo_k, hi_k))

    def pair_bound(eta_i, eta_k):
        mu = S @ np.array([eta_i, eta_k])
        return region_pair_bound(sweep, log_box(mu), m0, s0, K1, K2, corr_num, corr_den)

    def slab(a, b):
        cmid = (a + b) / 2
        U = float(hull_max(xu, yu, np.array([a]), np.array([b]))[0]) + pad
        L = -float(hull_max(xl, -yl, np.array([a]), np.array([b]))[0]) - pad
        bu, eu = pair_bound(U, cmid)
        bd, ed = pair_bound(L, cmid)
        return _SlabValue(max(bu, bd) + wk * (b - a) / 2, max(eu, ed))

    if xmax - xmin <= 0:
        val, est = slab(xmin, xmin)
        return val, {"slabs": 1, "estimate": est}
    cert, best_est, n_slabs, cells = _refine_slabs(slab, xmin, xmax, options)
    # certified lower bound of the exact leakage at attained points: eta on the hulls at the slab
    # centres (a box corner x_C attains it), top region against bottom region and back
    top, bot = np.array([hi_i - delta]), np.array([lo_i])
    lower = -math.inf
    for a, b in cells:
        cm = np.array([(a + b) / 2])
        for ys_x, ys_y in ((xu, yu), (xl, yl)):
            eta_i = float(np.interp(cm, ys_x, ys_y)[0])
            mu = S @ np.array([eta_i, cm[0]])
            top_lo, top_up = log_box(mu)(top)
            bot_lo, bot_up = log_box(mu)(bot)
            m_t = float(log_interval_prob(top, top + delta, m0, s0)[0])
            m_b = float(log_interval_prob(bot, bot + delta, m0, s0)[0])
            up_pair = (top_lo[0] - bot_up[0]) - (m_t - m_b + float(corr_num(bot, bot + delta)[0]))
            dn_pair = (bot_lo[0] - top_up[0]) - (m_b - m_t + float(corr_num(top, top + delta)[0]))
            lower = max(lower, up_pair, dn_pair)
    return cert, {"slabs": n_slabs, "estimate": best_est, "lower": lower}


class _SlabValue(NamedTuple):
    """A slab's certified bound and the value met in it."""

    bound: float
    met: float


def _refine_slabs(slab, xmin, xmax, options):
    """Branch and bound over slabs [a, b] of [xmin, xmax]: ``slab(a, b)`` -> (certified bound, value met).

    Starts from 16 slabs and halves every slab whose bound is above the best value met plus a quarter of
    the slack max(atol, tol |best|) (the others keep counting in the certified value), for at most
    ``options.max_rounds`` rounds or until more than 256 slabs are live.  Returns (certified value,
    best value met, slabs evaluated, the live slabs)."""
    edges = np.linspace(xmin, xmax, 17)
    cells = [(edges[j], edges[j + 1]) for j in range(16)]
    vals = [slab(a, b) for a, b in cells]
    dropped = -math.inf
    best_est = max(v.met for v in vals)
    n_slabs = len(cells)
    for _ in range(options.max_rounds):
        cert = max(max(v.bound for v in vals), dropped)
        slack = max(options.atol, options.tol * abs(best_est))
        if not math.isfinite(cert) or cert - best_est <= slack:
            break
        new_cells, new_vals = [], []
        for (a, b), v in zip(cells, vals, strict=True):
            if v.bound <= best_est + 0.25 * slack:
                dropped = max(dropped, v.bound)
                continue
            m = (a + b) / 2
            for cc in ((a, m), (m, b)):
                new_cells.append(cc)
                new_vals.append(slab(*cc))
        n_slabs += len(new_cells)
        if not new_cells:
            break
        cells, vals = new_cells, new_vals
        best_est = max(best_est, max(v.met for v in vals))
        if len(cells) > 256:
            break
    cert = max(max(v.bound for v in vals), dropped)
    return cert, best_est, n_slabs, cells
