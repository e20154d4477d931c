"""Certified leakage for three high-influence coordinates (b = 3) when the other two can be pinned.

Split: secret coordinate i, two other high-influence coordinates p, q (truncated to T_p = [lo_p, hi_p]
and T_q = [lo_q, hi_q], integrated out), conditioning set C.  Given x_C, x_H = (x_i, x_p, x_q) is
N(mu, S) with mu affine in x_C.  With eta = S^-1 mu the law of x_H restricted to R x T_p x T_q is an
exponential family in eta (density proportional to exp(eta . x - x' S^-1 x / 2) on the box), so

    Lambda(eta) = log N(R x T_p x T_q) - log N(R' x T_p x T_q)

has gradient E_R[x] - E_R'[x] (means under the two restrictions): its i-component is >= 0 when R lies
above R' (<= 0 below), and |d Lambda / d eta_k| <= hi_k - lo_k for k in {p, q}.  eta ranges over the
zonotope Z = eta(box of x_C) in R^3.  On a cell (box) c of (eta_p, eta_q) with centre m and
half-widths w:

    Lambda <= Lambda(U(c), m) + sum_k (hi_k - lo_k) w_k,      U(c) = max { eta_i : eta in Z, eta_P in c }

(``L(c)`` = the min and the other orientation).  U(c) is bounded from above by Lagrangian duality,
for *any* multipliers lambda (HiGHS supplies good ones):
U(c) <= c_i + ||g_i - lambda . G_P||_1 + sum_k max(lambda_k (a_k - c_k), lambda_k (b_k - c_k)),
with Z = c + G [-1, 1]^m, so no solver tolerance enters the bound.  Cells that miss the projection
of Z are dropped by the exact hulls of that 2-D zonotope; the rest are refined by branch and bound.

**The trivariate integral.**  N(R x T_p x T_q) = int_R phi(t) G(t) dt with
G(t) = P(x_P in T_P | x_i = t) log-concave (Prekopa); G(t) is a bivariate box probability, bounded
on both sides by the tangent/chord argument of :mod:`puffgm.gaussian.bivariate` (on Chebyshev-spaced
sub-intervals of T_p, denser at the box edges where a pinned coordinate's mass sits).  In t, log G
lies below the extensions of its secants from the neighbouring grid intervals and above its chords,
so with certified values at the grid points both integrals are closed forms
(phi times an exponential of a linear function).

**The continuum of regions.**  F(r) = log int_r^{r + delta} phi(t) G(t) dt has
F'' = E[psi''] + Var[psi'] >= inf psi'' with psi = log(phi G), and
psi'' >= -1/S_ii - c' Omega^-1 c = -(S^-1)_ii (c, Omega: slope and covariance of x_P | x_i; the
second derivative of log G is Var_T[c' Omega^-1 y] - c' Omega^-1 c); F is concave (Prekopa), so the
denominator function -F + log N0 has second derivative >= -1 / Sigma_ii.  The region maximisation is
:func:`puffgm.gaussian.leakage.certified_region_max`.
"""

from __future__ import annotations

import math

import numpy as np

from puffgm.gaussian.bivariate import (_LOG_SQRT_2PI, _dlog_g, _hull_max, _log_g, _log_gauss_exp, _lse, hull_functions, pinned_conditional)
from puffgm.gaussian.leakage import log_interval_prob, region_pair_bound

_DEBUG = False  # print the branch-and-bound rounds (development aid)

__all__ = ["log_box2_bounds", "zonotope_max_dual", "pinned_triple_leakage"]


_FINE = np.concatenate([np.linspace(-2.0, 2.0, 33), [-12, -8, -6, -4.5, -3.5, -2.75, 2.75, 3.5, 4.5, 6, 8, 12]])


def _grid(mp, sp, mq, c, tau, lo_p, hi_p, lo_q, hi_q, M):
    """Per-row cut points of [lo_p, hi_p]: M Chebyshev points (dense at the edges) and a fine grid
    around the mode of the integrand on the scale of its curvature.  Any cut points give valid
    bounds; these only make them tight."""
    def dpsi(u):
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            d = -(u - mp) / sp ** 2 + _dlog_g(u, mq, c, mp, tau, lo_q, hi_q)
        return np.where(np.isnan(d), 0.0, d)

    a = np.full(mp.shape, float(lo_p))
    b = np.full(mp.shape, float(hi_p))
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


def log_box2_bounds(mp, sp, mq, c, tau, lo_p, hi_p, lo_q, hi_q, M=16):
    """Certified (lower, upper) of log P(x_p in [lo_p, hi_p], x_q in [lo_q, hi_q]), elementwise.

    x_p ~ N(mp, sp^2) and x_q | x_p = u ~ N(mq + c (u - mp), tau^2); ``mp`` and ``mq`` are arrays of
    one shape.  [lo_p, hi_p] is cut at M Chebyshev points and a fine grid around the mode of the
    integrand; on each piece log P(x_q in T_q | u) (concave in u) lies below its tangent at the
    midpoint and above its chord, and the normal density times an exponential of a linear function
    integrates in closed form.  Any cut points give valid bounds."""
    mp = np.asarray(mp, float)
    mq = np.asarray(mq, float)
    shp = mp.shape
    mp, mq = mp.reshape(-1), mq.reshape(-1)
    u = _grid(mp, sp, mq, c, tau, lo_p, hi_p, lo_q, hi_q, M)
    mp, mq = mp[:, None], mq[:, None]
    A, B = u[:, :-1], u[:, 1:]
    Mid = (A + B) / 2
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        lu = _log_g(u, mq, c, mp, tau, lo_q, hi_q)            # at the cut points (shared ends)
        la, lb = lu[:, :-1], lu[:, 1:]
        m = mq + c * (Mid - mp)
        lm = log_interval_prob(lo_q, hi_q, m, tau)
        z1, z2 = (lo_q - m) / tau, (hi_q - m) / tau
        dm = c * (np.exp(-0.5 * z1 * z1 - _LOG_SQRT_2PI - lm) - np.exp(-0.5 * z2 * z2 - _LOG_SQRT_2PI - lm)) / tau
        dm = np.where(np.isfinite(dm), dm, 0.0)
        up = lm + _log_gauss_exp(A, B, mp, sp, dm, Mid)       # tangent at the midpoint
        chord = (lb - la) / (B - A)
        chord = np.where(np.isfinite(chord), chord, 0.0)
        lo = la + _log_gauss_exp(A, B, mp, sp, chord, A)      # chord
    empty = B <= A
    lo = np.where(np.isfinite(la) & np.isfinite(lb) & ~empty & ~np.isnan(lo), lo, -np.inf)
    up = np.where(empty, -np.inf, np.where(np.isnan(up), np.inf, up))
    # never above the (exact) probability of x_p's interval
    cap = log_interval_prob(lo_p, hi_p, mp[:, 0], sp)
    lo2, up2 = _lse(lo), _lse(up)
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
        return log_box2_bounds(mp, self.sp, mq, self.cin, self.tau, *self.box_p, *self.box_q, M=self.M_in)

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
            left = Ua + _log_gauss_exp(xa, xb, mi, si, s_left, xa)
            right = Ub + _log_gauss_exp(xa, xb, mi, si, -s_right, xb)
            left = np.where(np.isfinite(Lprev) & ~np.isnan(left), left, np.inf)
            right = np.where(np.isfinite(Lnext) & ~np.isnan(right), right, np.inf)
            cap = log_interval_prob(xa, xb, mi, si)                # G <= 1
            up = np.minimum(np.minimum(left, right), cap)
            # lower: log G >= chord through the lower values at the piece ends
            ch = (Lb - La) / (xb - xa)
            lo = La + _log_gauss_exp(xa, xb, mi, si, np.where(np.isfinite(ch), ch, 0.0), xa)
        lo = np.where(np.isfinite(La) & np.isfinite(Lb) & ~np.isnan(lo), lo, -np.inf)
        return _lse(lo), _lse(up)


def zonotope_max_dual(center, gens, obj, cons, box_lo, box_hi):
    """Certified upper bound of max { eta_obj : eta in Z, box_lo <= eta_cons <= box_hi }.

    Z = center + gens [-1, 1]^m.  For any multipliers lam, the max is at most
    center_obj + ||g_obj - lam . G_cons||_1 + sum_k max(lam_k (box_lo_k - center_k), lam_k (box_hi_k - center_k));
    lam comes from HiGHS's duals (any lam is valid; 0 when the solver fails).  Returns (bound, u) with
    u an (approximately) maximising generator weight vector (None when the solver fails)."""
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

    def D(l):
        return float(center[obj] + np.sum(np.abs(g - l @ Gc)) + np.sum(np.maximum(l * lo_rel, l * hi_rel)))

    return min(D(lam), D(np.zeros(len(cons)))), u


def pinned_triple_leakage(model, i, high, cond, corr_num, corr_den, *, tol=1e-3, atol=1e-3,
                          max_cells=400, n0=4, give_up_above=math.inf):
    """Certified upper bound of the leakage of region secrets on x_i through x_cond with H = {i} + high.

    ``high`` = (p, q): the two other high-influence coordinates, truncated to their box and integrated
    out.  ``corr_num(ua, ub)`` and ``corr_den(ua, ub)`` are the marginal corrections of
    :meth:`~puffgm.gaussian.leakage.GaussianRegionModel.leakage` (-log(1 - E0) for the numerator
    region, log U0 for the denominator region).  Returns (value, details); ``details["lower"]`` is a
    certified lower bound of the exact leakage at attained box points of x_cond (top region against
    bottom region).  The branch and bound stops early (returning its certified value so far, valid
    but loose) once the bound function exceeds ``give_up_above`` at a cell centre: a bound known
    elsewhere is then better."""
    cov, mean = model.cov, model.mean
    p, q = int(high[0]), int(high[1])
    lo_i, hi_i = model.lower[i], model.upper[i]
    box_p, box_q = (model.lower[p], model.upper[p]), (model.lower[q], model.upper[q])
    wid = np.array([box_p[1] - box_p[0], box_q[1] - box_q[0]])
    delta = model.delta
    H = [i, p, q]
    C = list(cond)
    block = pinned_conditional(model, H, C)
    if block is None:
        return math.inf, {"reason": "x_H is (numerically) degenerate given x_cond"}
    S, Sinv, center, gens = block
    tri = _Tri(S, box_p, box_q)
    if tri.tau <= 1e-12 * math.sqrt(S[2, 2]) or tri.sp <= 1e-12 * math.sqrt(S[1, 1]):
        return math.inf, {"reason": "x_P determined by x_i and x_cond"}
    # projection of Z onto (eta_p, eta_q): exact hulls (X = eta_p, Y = eta_q)
    xu, yu, xl, yl, xmin, xmax = hull_functions(center[1:], gens[1:])
    scale = 1.0 + float(np.max(np.abs(np.concatenate([yu, yl, [xmin, xmax]]))))
    pad = 1e-9 * scale
    ymin, ymax = float(np.min(yl)), float(np.max(yu))
    m0, s0 = mean[i], math.sqrt(cov[i, i])
    K1, K2 = tri.K, 1.0 / cov[i, i]

    def pair_bound(eta_i, eta_P):
        mu = S @ np.array([eta_i, eta_P[0], eta_P[1]])
        return region_pair_bound(lo_i, hi_i, delta, lambda r: tri.log_box3(r, delta, mu), m0, s0, K1, K2,
                                 corr_num, corr_den, tol, atol, iters=25)

    def feasible(a, b):
        """Does the cell [a0, b0] x [a1, b1] meet the projection of Z?  (exact, padded: safe)"""
        if b[0] < xmin - pad or a[0] > xmax + pad:
            return False
        la, lb = np.array([max(a[0], xmin)]), np.array([min(b[0], xmax)])
        top = float(_hull_max(xu, yu, la, lb)[0]) + pad
        bot = -float(_hull_max(xl, -yl, la, lb)[0]) - pad
        return not (b[1] < bot or a[1] > top)

    witnesses = []

    def cell(a, b):
        """(certified bound over the cell, value of the bound function at the cell's (U, centre)).

        Lambda(eta_i, eta_P) <= Lambda(U, eta_P) <= Lambda(U, centre) + sum_k (hi_k - lo_k) half-width_k.
        The second value is only the branch-and-bound target (it may exceed the exact leakage: the
        point (U, centre) need not be attained); pruned cells keep counting in the certified value."""
        ctr = (a + b) / 2
        U, uu = zonotope_max_dual(center, gens, 0, [1, 2], a, b)
        Lneg, ul = zonotope_max_dual(-center, -gens, 0, [1, 2], -b, -a)
        L = -Lneg
        U += pad
        L -= pad
        for w in (uu, ul):
            if w is not None:
                witnesses.append(np.clip(w, -1, 1))
        bu, eu = pair_bound(U, ctr)
        bd, ed = pair_bound(L, ctr)
        return max(bu, bd) + float(np.sum(wid * (b - a) / 2)), max(eu, ed)

    # initial grid
    gx = np.linspace(xmin, xmax, n0 + 1) if xmax > xmin else np.array([xmin, xmin])
    gy = np.linspace(ymin, ymax, n0 + 1) if ymax > ymin else np.array([ymin, ymin])
    cells = []
    for j in range(len(gx) - 1):
        for k in range(len(gy) - 1):
            a, b = np.array([gx[j], gy[k]]), np.array([gx[j + 1], gy[k + 1]])
            if feasible(a, b):
                cells.append((a, b))
    vals = [cell(a, b) for a, b in cells]
    n_cells = len(cells)
    dropped = -math.inf
    best = max(v[1] for v in vals)
    while vals:
        cert = max(max(v[0] for v in vals), dropped)
        slack = max(atol, tol * abs(best))
        if not math.isfinite(cert) or cert - best <= slack or n_cells >= max_cells or best > give_up_above:
            break
        # best first: split the cells in the upper half of the gap, keep the others for later rounds
        thr = max(best + 0.25 * slack, cert - 0.5 * (cert - best))
        next_cells, next_vals, n_new = [], [], 0
        for (a, b), v in zip(cells, vals):
            if v[0] <= best + 0.25 * slack:
                dropped = max(dropped, v[0])  # pruned cells keep counting in the certified value
                continue
            if v[0] < thr:
                next_cells.append((a, b))
                next_vals.append(v)
                continue
            # split along the coordinate with the larger Lipschitz term
            k = int(np.argmax(wid * (b - a)))
            m = (a[k] + b[k]) / 2
            b1, a2 = b.copy(), a.copy()
            b1[k], a2[k] = m, m
            for cc in ((a, b1), (a2, b)):
                if feasible(*cc):  # exact: a cell missing the projection of Z holds no attained eta
                    vv = cell(*cc)
                    next_cells.append(cc)
                    next_vals.append(vv)
                    best = max(best, vv[1])
                    n_new += 1
        n_cells += n_new
        if _DEBUG:
            print("round", n_new, n_cells, cert, best, flush=True)
        cells, vals = next_cells, next_vals
    cert = max([v[0] for v in vals] + [dropped]) if vals else dropped
    # certified lower bound of the exact leakage at attained points x_C (box points from the LP
    # maximisers): top region against bottom region, and back
    top, bot = np.array([hi_i - delta]), np.array([lo_i])
    m_t = float(log_interval_prob(top, top + delta, m0, s0)[0])
    m_b = float(log_interval_prob(bot, bot + delta, m0, s0)[0])
    lower = -math.inf
    seen = set()
    for w in witnesses:
        key = tuple(np.round(w, 9))
        if key in seen:
            continue
        seen.add(key)
        eta = center + gens @ w
        mu = S @ eta
        lt = tri.log_box3(top, delta, mu)
        lb_ = tri.log_box3(bot, delta, mu)
        up_pair = (lt[0][0] - lb_[1][0]) - (m_t - m_b + float(corr_num(bot, bot + delta)[0]))
        dn_pair = (lb_[0][0] - lt[1][0]) - (m_b - m_t + float(corr_num(top, top + delta)[0]))
        lower = max(lower, up_pair, dn_pair)
    return cert, {"cells": n_cells, "estimate": best, "lower": lower}
