r"""Certified leakage for three high-influence coordinates (:math:`b = 3`) when the other two can be pinned.

Split: secret coordinate :math:`i`, two other high-influence coordinates :math:`p, q` (truncated to
:math:`T_p = [lo_p, hi_p]` and :math:`T_q = [lo_q, hi_q]`, integrated out), conditioning set :math:`C`.  Given
:math:`x_C`, :math:`x_H = (x_i, x_p, x_q)` is :math:`N(\mu, S)` with :math:`\mu` affine in :math:`x_C`.  With
:math:`\eta = S^{-1} \mu` the law of :math:`x_H` restricted to :math:`R \times T_p \times T_q` is an exponential
family in :math:`\eta` (density proportional to :math:`\exp(\eta \cdot x - x^\top S^{-1} x / 2)` on the box), so

$$
\Lambda(\eta) = \log N(R \times T_p \times T_q) - \log N(R' \times T_p \times T_q)
$$

has gradient :math:`E_R[x] - E_{R'}[x]` (means under the two restrictions): its :math:`i`-component is
:math:`\ge 0` when :math:`R` lies above :math:`R'` (:math:`\le 0` below), and
:math:`|\partial \Lambda / \partial \eta_k| \le hi_k - lo_k` for :math:`k \in \{p, q\}`.  :math:`\eta` ranges over
the zonotope :math:`Z = \eta(\text{box of } x_C)` in :math:`\mathbb{R}^3`.  On a cell (box) :math:`c` of
:math:`(\eta_p, \eta_q)` with centre :math:`m` and half-widths :math:`w`:

$$
\Lambda \le \Lambda(U(c), m) + \sum_k (hi_k - lo_k)\, w_k, \qquad
U(c) = \max \{ \eta_i : \eta \in Z, \eta_P \in c \}
$$

(``L(c)`` = the min and the other orientation).  :math:`U(c)` is bounded from above by Lagrangian duality,
for *any* multipliers :math:`\lambda` (HiGHS supplies good ones):

$$
U(c) \le c_i + \lVert g_i - \lambda \cdot G_P \rVert_1 + \sum_k \max(\lambda_k (a_k - c_k), \lambda_k (b_k - c_k)),
$$

with :math:`Z = c + G [-1, 1]^m`, so no solver tolerance enters the bound.  Cells that miss the projection
of :math:`Z` are dropped by the exact hulls of that 2-D zonotope; the rest are refined by branch and bound.

**The trivariate integral.**  :math:`N(R \times T_p \times T_q) = \int_R \varphi(t) G(t)\, dt` with
:math:`G(t) = P(x_P \in T_P \mid x_i = t)` log-concave (Prekopa); :math:`G(t)` is a bivariate box probability,
bounded on both sides by the tangent/chord argument of :mod:`puffgm.gaussian.bivariate` (on Chebyshev-spaced
sub-intervals of :math:`T_p`, denser at the box edges where a pinned coordinate's mass sits).  In :math:`t`,
:math:`\log G` lies below the extensions of its secants from the neighbouring grid intervals and above its
chords, so with certified values at the grid points both integrals are closed forms
(:math:`\varphi` times an exponential of a linear function).

**The continuum of regions.**  :math:`F(r) = \log \int_r^{r + \delta} \varphi(t) G(t)\, dt` has
:math:`F'' = E[\psi''] + \mathrm{Var}[\psi'] \ge \inf \psi''` with :math:`\psi = \log(\varphi G)`, and
:math:`\psi'' \ge -1/S_{ii} - c^\top \Omega^{-1} c = -(S^{-1})_{ii}` (:math:`c, \Omega`: slope and covariance of
:math:`x_P \mid x_i`; the second derivative of :math:`\log G` is
:math:`\mathrm{Var}_T[c^\top \Omega^{-1} y] - c^\top \Omega^{-1} c`); :math:`F` is concave (Prekopa), so the
denominator function :math:`-F + \log N_0` has second derivative :math:`\ge -1 / \Sigma_{ii}`.  The region
maximisation is :func:`puffgm.gaussian.primitives.certified_region_max`.
"""

from __future__ import annotations

import logging
import math
from typing import NamedTuple

import numpy as np

from puffgm.gaussian.primitives import (
    LOG_SQRT_2PI,
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
from puffgm.gaussian.zonotope import hull_functions, hull_max, pinned_conditional, zonotope_max_dual

__all__ = ["log_box2_bounds", "pinned_triple_leakage"]

_log = logging.getLogger(__name__)

_FINE = np.concatenate([np.linspace(-2.0, 2.0, 33), [-12, -8, -6, -4.5, -3.5, -2.75, 2.75, 3.5, 4.5, 6, 8, 12]])


def _grid(law: PairLaw, box_p, box_q, M):
    """Per-row cut points of [lo_p, hi_p]: M Chebyshev points (dense at the edges) and a fine grid
    around the mode of the integrand on the scale of its curvature.  Any cut points give valid
    bounds; these only make them tight.  ``law`` holds flat arrays of means (one row each)."""
    mp, sp, mq, c, tau = law.m1, law.s1, law.m2, law.slope, law.tau
    lo_p, hi_p = box_p
    lo_q, hi_q = box_q

    def dpsi(u):
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            d = -(u - mp) / sp ** 2 + dlog_g(u, mq, c, mp, tau, lo_q, hi_q)
        return np.where(np.isnan(d), 0.0, d)

    a = np.full(np.shape(mp), float(lo_p))
    b = np.full(np.shape(mp), float(hi_p))
    for _ in range(60):
        m = (a + b) / 2
        pos = dpsi(m) > 0
        a, b = np.where(pos, m, a), np.where(pos, b, m)
    mode = (a + b) / 2
    curv = 1 / sp ** 2 + c * c / tau ** 2
    slope = np.abs(dpsi(mode))
    scale = np.minimum(1 / math.sqrt(curv), np.where(slope > 0, 1 / np.maximum(slope, 1e-300), np.inf))
    scale = np.minimum(np.maximum(scale, 1e-12 * (hi_p - lo_p)), hi_p - lo_p)
    cheb = lo_p + (hi_p - lo_p) * (1 - np.cos(np.pi * np.arange(M + 1) / M)) / 2
    fine = mode[..., None] + scale[..., None] * _FINE
    pts = np.concatenate([np.broadcast_to(cheb, mode.shape + cheb.shape), fine], axis=-1)
    pts = np.sort(np.clip(pts, lo_p, hi_p), axis=-1)
    pts[..., 0], pts[..., -1] = lo_p, hi_p
    return pts


def log_box2_bounds(law: PairLaw, box_p, box_q, M=16):
    r"""Certified (lower, upper) of :math:`\log P(x_p \in [lo_p, hi_p], x_q \in [lo_q, hi_q])`, elementwise.

    Parameters
    ----------
    law : PairLaw
        :math:`x_p \sim N(m_1, s_1^2)` and :math:`x_q \mid x_p = u \sim N(m_2 + \mathrm{slope}\,(u - m_1), \tau^2)`;
        ``m1`` and ``m2`` are arrays of one shape (the result has that shape).
    box_p, box_q : (float, float)
        The intervals :math:`[lo_p, hi_p]` and :math:`[lo_q, hi_q]`.
    M : int
        Chebyshev cut points of :math:`[lo_p, hi_p]`.

    Notes
    -----
    :math:`[lo_p, hi_p]` is cut at :math:`M` Chebyshev points and a fine grid around the mode of the
    integrand; on each piece :math:`\log P(x_q \in T_q \mid u)` (concave in :math:`u`) lies below its tangent
    at the midpoint and above its chord, and the normal density times an exponential of a linear function
    integrates in closed form.
    Any cut points give valid bounds.
    """
    sp, c, tau = law.s1, law.slope, law.tau
    lo_p, hi_p = box_p
    lo_q, hi_q = box_q
    mp = np.asarray(law.m1, float)
    mq = np.asarray(law.m2, float)
    shp = mp.shape
    mp, mq = mp.reshape(-1), mq.reshape(-1)
    u = _grid(PairLaw(mp, sp, mq, c, tau), box_p, box_q, M)
    mp, mq = mp[:, None], mq[:, None]
    A, B = u[:, :-1], u[:, 1:]
    Mid = (A + B) / 2
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        lu = log_g(u, mq, c, mp, tau, lo_q, hi_q)            # at the cut points (shared ends)
        la, lb = lu[:, :-1], lu[:, 1:]
        m = mq + c * (Mid - mp)
        lm = log_interval_prob(lo_q, hi_q, m, tau)
        z1, z2 = (lo_q - m) / tau, (hi_q - m) / tau
        dm = c * (np.exp(-0.5 * z1 * z1 - LOG_SQRT_2PI - lm) - np.exp(-0.5 * z2 * z2 - LOG_SQRT_2PI - lm)) / tau
        dm = np.where(np.isfinite(dm), dm, 0.0)
        up = lm + log_gauss_exp(A, B, mp, sp, dm, Mid)       # tangent at the midpoint
        chord = (lb - la) / (B - A)
        chord = np.where(np.isfinite(chord), chord, 0.0)
        lo = la + log_gauss_exp(A, B, mp, sp, chord, A)      # chord
    empty = B <= A
    lo = np.where(np.isfinite(la) & np.isfinite(lb) & ~empty & ~np.isnan(lo), lo, -np.inf)
    up = np.where(empty, -np.inf, np.where(np.isnan(up), np.inf, up))
    # never above the (exact) probability of x_p's interval
    cap = log_interval_prob(lo_p, hi_p, mp[:, 0], sp)
    lo2, up2 = lse_rows(lo), lse_rows(up)
    return np.minimum(lo2, cap).reshape(shp), np.minimum(up2, cap).reshape(shp)


class _Tri:
    """Precomputed structure of (x_i, x_P) ~ N(mu, S): x_P | x_i = t ~ N(mu_P + c (t - mu_i), Omega)."""

    def __init__(self, S, box_p, box_q, M_in=16, M_out=8):
        S = np.asarray(S, float)
        self.S = S
        self.si = math.sqrt(S[0, 0])
        self.c = S[1:, 0] / S[0, 0]
        Om = S[1:, 1:] - np.outer(S[1:, 0], S[1:, 0]) / S[0, 0]
        self.sp = math.sqrt(Om[0, 0])
        self.cin = Om[1, 0] / Om[0, 0]
        self.tau = math.sqrt(max(Om[1, 1] - Om[1, 0] ** 2 / Om[0, 0], 0.0))
        self.box_p, self.box_q = box_p, box_q
        self.M_in, self.M_out = M_in, M_out
        self.K = float(np.linalg.inv(S)[0, 0])  # (S^-1)_ii = 1 / S_ii + c' Omega^-1 c

    def log_G(self, t, mu):
        """(lower, upper) of log P(x_P in T_P | x_i = t), arrays t."""
        mp = mu[1] + self.c[0] * (t - mu[0])
        mq = mu[2] + self.c[1] * (t - mu[0])
        return log_box2_bounds(PairLaw(mp, self.sp, mq, self.cin, self.tau), self.box_p, self.box_q, M=self.M_in)

    def log_box3(self, r, delta, mu):
        """Certified (lower, upper) of log N(x_i in [r, r + delta], x_P in T_P), arrays r."""
        r = np.asarray(r, float)
        M = self.M_out
        h = delta / M
        # x_{-1} .. x_{M+1}; interior points snapped to a decimal lattice so that the grids of nearby
        # r share points (any points give valid bounds); x_0 = r and x_M = r + delta exactly
        x = np.round(r[:, None] + h * np.arange(-1, M + 2)[None, :], 12)
        x[:, 1], x[:, M + 1] = r, r + delta
        xs, inv = np.unique(x, return_inverse=True)
        Lg, Ug = self.log_G(xs, mu)
        Lg, Ug = Lg[inv].reshape(x.shape), Ug[inv].reshape(x.shape)
        mi, si = mu[0], self.si
        xp, xa, xb, xn = x[:, :-3], x[:, 1:-2], x[:, 2:-1], x[:, 3:]   # pieces [x_j, x_{j+1}], j = 0..M-1
        La, Lb = Lg[:, 1:-2], Lg[:, 2:-1]
        Ua, Ub = Ug[:, 1:-2], Ug[:, 2:-1]
        Lprev, Lnext = Lg[:, :-3], Lg[:, 3:]
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            # upper: log G <= U_j + (U_j - L_{j-1}) (t - x_j) / (x_j - x_{j-1}) on [x_j, x_{j+1}]
            # (concavity: the secant of the previous interval, extended), and the same from the right
            s_left = (Ua - Lprev) / (xa - xp)
            s_right = (Ub - Lnext) / (xn - xb)
            left = Ua + log_gauss_exp(xa, xb, mi, si, s_left, xa)
            right = Ub + log_gauss_exp(xa, xb, mi, si, -s_right, xb)
            left = np.where(np.isfinite(Lprev) & ~np.isnan(left), left, np.inf)
            right = np.where(np.isfinite(Lnext) & ~np.isnan(right), right, np.inf)
            cap = log_interval_prob(xa, xb, mi, si)                # G <= 1
            up = np.minimum(np.minimum(left, right), cap)
            # lower: log G >= chord through the lower values at the piece ends
            ch = (Lb - La) / (xb - xa)
            lo = La + log_gauss_exp(xa, xb, mi, si, np.where(np.isfinite(ch), ch, 0.0), xa)
        lo = np.where(np.isfinite(La) & np.isfinite(Lb) & ~np.isnan(lo), lo, -np.inf)
        return lse_rows(lo), lse_rows(up)


def pinned_triple_leakage(model, i, high, cond, corr_num, corr_den, options: PinnedOptions = PinnedOptions()):
    r"""Certified upper bound of the leakage of region secrets on :math:`x_i` through ``x_cond``.

    The high-influence set is :math:`H = \{i\} \cup` ``high``.

    Parameters
    ----------
    model : GaussianRegionModel
        The truncated prior and the region width.
    i : int
        The secret coordinate.
    high : (int, int)
        :math:`(p, q)`: the two other high-influence coordinates, truncated to their box and integrated out.
    cond : sequence of int
        The conditioning set :math:`C`.
    corr_num, corr_den : callable
        The marginal corrections of :meth:`~puffgm.gaussian.leakage.GaussianRegionModel.leakage`
        (:math:`-\log(1 - E_0)` for the numerator region, :math:`\log U_0` for the denominator region).
    options : PinnedOptions
        ``tol`` and ``atol`` (region sweeps and the cell branch and bound), ``max_cells``, ``n0`` (initial
        :math:`n_0 \times n_0` grid) and ``give_up_above``: the branch and bound stops early (returning its certified
        value so far, valid but loose) once the bound function exceeds it at a cell centre, a bound known
        elsewhere being then better.

    Returns
    -------
    tuple
        (value, details); ``details["lower"]`` is a certified lower bound of the exact leakage at
        attained box points of x_cond (top region against bottom region, and back).
    """
    p, q = int(high[0]), int(high[1])
    block = pinned_conditional(model, [i, p, q], list(cond))
    if block is None:
        return math.inf, {"reason": "x_H is (numerically) degenerate given x_cond"}
    S = block.cov
    box_p, box_q = (model.lower[p], model.upper[p]), (model.lower[q], model.upper[q])
    tri = _Tri(S, box_p, box_q)
    if tri.tau <= 1e-12 * math.sqrt(S[2, 2]) or tri.sp <= 1e-12 * math.sqrt(S[1, 1]):
        return math.inf, {"reason": "x_P determined by x_i and x_cond"}
    search = _TripleSearch(model, i, block, tri, (corr_num, corr_den), options)
    cert, best, n_cells = search.run()
    return cert, {"cells": n_cells, "estimate": best, "lower": search.lower_bound(corr_num)}


class _CellValue(NamedTuple):
    """A cell's certified bound and the value of the bound function at its (U, centre)."""

    bound: float
    met: float


class _TripleSearch:
    """The cell branch and bound of :func:`pinned_triple_leakage` over (eta_p, eta_q) (module docstring)."""

    def __init__(self, model, i, block, tri, corr, options):
        S, _, center, gens = block
        self.S, self.center, self.gens, self.tri, self.options = S, center, gens, tri, options
        self.delta = model.delta
        self.lo_i, self.hi_i = model.lower[i], model.upper[i]
        (p_lo, p_hi), (q_lo, q_hi) = tri.box_p, tri.box_q
        self.wid = np.array([p_hi - p_lo, q_hi - q_lo])
        # projection of Z onto (eta_p, eta_q): exact hulls (X = eta_p, Y = eta_q)
        self.hulls = hull_functions(center[1:], gens[1:])
        xu, yu, xl, yl, xmin, xmax = self.hulls
        scale = 1.0 + float(np.max(np.abs(np.concatenate([yu, yl, [xmin, xmax]]))))
        self.pad = 1e-9 * scale
        self.m0, self.s0 = model.mean[i], math.sqrt(model.cov[i, i])
        self.K1, self.K2 = tri.K, 1.0 / model.cov[i, i]
        self.corr = corr
        self.sweep = RegionSweep(self.lo_i, self.hi_i, self.delta, options.tol, options.atol, iters=25)
        self.witnesses = []

    def pair_bound(self, eta_i, eta_P):
        """The decoupled region sweep at eta = (eta_i, eta_P)."""
        mu = self.S @ np.array([eta_i, eta_P[0], eta_P[1]])
        return region_pair_bound(self.sweep, lambda r: self.tri.log_box3(r, self.delta, mu), self.m0, self.s0,
                                 self.K1, self.K2, *self.corr)

    def feasible(self, a, b):
        """Does the cell [a0, b0] x [a1, b1] meet the projection of Z?  (exact, padded: safe)"""
        xu, yu, xl, yl, xmin, xmax = self.hulls
        pad = self.pad
        if b[0] < xmin - pad or a[0] > xmax + pad:
            return False
        la, lb = np.array([max(a[0], xmin)]), np.array([min(b[0], xmax)])
        top = float(hull_max(xu, yu, la, lb)[0]) + pad
        bot = -float(hull_max(xl, -yl, la, lb)[0]) - pad
        return not (b[1] < bot or a[1] > top)

    def cell(self, a, b):
        """(certified bound over the cell, value of the bound function at the cell's (U, centre)).

        Lambda(eta_i, eta_P) <= Lambda(U, eta_P) <= Lambda(U, centre) + sum_k (hi_k - lo_k) half-width_k.
        The second value is only the branch-and-bound target (it may exceed the exact leakage: the
        point (U, centre) need not be attained); pruned cells keep counting in the certified value."""
        center, gens, pad = self.center, self.gens, self.pad
        ctr = (a + b) / 2
        U, uu = zonotope_max_dual(center, gens, 0, [1, 2], a, b)
        Lneg, ul = zonotope_max_dual(-center, -gens, 0, [1, 2], -b, -a)
        L = -Lneg
        U += pad
        L -= pad
        for w in (uu, ul):
            if w is not None:
                self.witnesses.append(np.clip(w, -1, 1))
        bu, eu = self.pair_bound(U, ctr)
        bd, ed = self.pair_bound(L, ctr)
        return _CellValue(max(bu, bd) + float(np.sum(self.wid * (b - a) / 2)), max(eu, ed))

    def initial_cells(self):
        """The cells of the n0 x n0 grid over the bounding box of the projection of Z that meet it."""
        xu, yu, xl, yl, xmin, xmax = self.hulls
        n0 = self.options.n0
        ymin, ymax = float(np.min(yl)), float(np.max(yu))
        gx = np.linspace(xmin, xmax, n0 + 1) if xmax > xmin else np.array([xmin, xmin])
        gy = np.linspace(ymin, ymax, n0 + 1) if ymax > ymin else np.array([ymin, ymin])
        cells = []
        for j in range(len(gx) - 1):
            for k in range(len(gy) - 1):
                a, b = np.array([gx[j], gy[k]]), np.array([gx[j + 1], gy[k + 1]])
                if self.feasible(a, b):
                    cells.append((a, b))
        return cells

    def run(self):
        """Best-first rounds: split the cells in the upper half of the gap, keep the others for later
        rounds, drop those below the best value met (they keep counting in the certified value).
        Returns (certified value, best value met, cells evaluated)."""
        opt = self.options
        cells = self.initial_cells()
        vals = [self.cell(a, b) for a, b in cells]
        n_cells = len(cells)
        dropped = -math.inf
        best = max(v.met for v in vals)
        while vals:
            cert = max(max(v.bound for v in vals), dropped)
            slack = max(opt.atol, opt.tol * abs(best))
            if (not math.isfinite(cert) or cert - best <= slack or n_cells >= opt.max_cells
                    or best > opt.give_up_above):
                break
            thr = max(best + 0.25 * slack, cert - 0.5 * (cert - best))
            next_cells, next_vals, n_new = [], [], 0
            for (a, b), v in zip(cells, vals, strict=True):
                if v.bound <= best + 0.25 * slack:
                    dropped = max(dropped, v.bound)  # pruned cells keep counting in the certified value
                    continue
                if v.bound < thr:
                    next_cells.append((a, b))
                    next_vals.append(v)
                    continue
                for cc in self.halves(a, b):
                    vv = self.cell(*cc)
                    next_cells.append(cc)
                    next_vals.append(vv)
                    best = max(best, vv.met)
                    n_new += 1
            n_cells += n_new
            _log.debug("round: %d new cells, %d in all, certified %.10g, met %.10g", n_new, n_cells, cert, best)
            cells, vals = next_cells, next_vals
        cert = max([v.bound for v in vals] + [dropped]) if vals else dropped
        return cert, best, n_cells

    def halves(self, a, b):
        """The halves of the cell [a, b] along the coordinate with the larger Lipschitz term that meet the
        projection of Z (exact: a cell missing it holds no attained eta)."""
        k = int(np.argmax(self.wid * (b - a)))
        m = (a[k] + b[k]) / 2
        b1, a2 = b.copy(), a.copy()
        b1[k], a2[k] = m, m
        return [cc for cc in ((a, b1), (a2, b)) if self.feasible(*cc)]

    def lower_bound(self, corr_num):
        """Certified lower bound of the exact leakage at attained points x_C (box points from the LP
        maximisers met by :meth:`cell`): top region against bottom region, and back."""
        delta, m0, s0 = self.delta, self.m0, self.s0
        top, bot = np.array([self.hi_i - delta]), np.array([self.lo_i])
        m_t = float(log_interval_prob(top, top + delta, m0, s0)[0])
        m_b = float(log_interval_prob(bot, bot + delta, m0, s0)[0])
        lower = -math.inf
        seen = set()
        for w in self.witnesses:
            key = tuple(np.round(w, 9))
            if key in seen:
                continue
            seen.add(key)
            eta = self.center + self.gens @ w
            mu = self.S @ eta
            top_lo, top_up = self.tri.log_box3(top, delta, mu)
            bot_lo, bot_up = self.tri.log_box3(bot, delta, mu)
            up_pair = (top_lo[0] - bot_up[0]) - (m_t - m_b + float(corr_num(bot, bot + delta)[0]))
            dn_pair = (bot_lo[0] - top_up[0]) - (m_b - m_t + float(corr_num(top, top + delta)[0]))
            lower = max(lower, up_pair, dn_pair)
        return lower
