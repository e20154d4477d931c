"""Certified leakage for two high-influence coordinates (b = 2) when the other one can be pinned.

Split: secret coordinate i, one other high-influence coordinate k (truncated to [lo_k, hi_k] and
integrated out), conditioning set C.  Given x_C, (x_i, x_k) ~ N(mu, S) with mu affine in x_C; with
eta = S^-1 mu the law of (x_i, x_k) restricted to R x T_k is an exponential family in eta, so

    Lambda(eta) = log N(R x T_k) - log N(R' x T_k)

has gradient E_R[x] - E_R'[x] (means under the restrictions): d/d eta_i in [r - r' - delta, r - r' + delta]
(non-negative when R lies above R') and |d/d eta_k| <= hi_k - lo_k.  eta ranges over a 2-D zonotope Z
(the image of the box of x_C).  On a slab a <= eta_k <= b of Z:

    Lambda <= Lambda(U(a, b), (a + b) / 2) + (hi_k - lo_k) (b - a) / 2,    U(a, b) = max eta_i on Z n slab

(min and the lower hull for R below R').  N(R x T_k) = int_R phi(t) g(t) dt with
g(t) = P(x_k in T_k | x_i = t) log-concave: on sub-intervals, log g lies below its tangent and above its
chord, and phi times an exponential integrates in closed form, giving certified two-sided bounds.
The continuum of regions uses the cell bound of :mod:`puffgm.gaussian.leakage` with
(log N([r, r + delta] x T_k))'' >= -(1 / s_i^2 + c^2 / tau^2).  Slabs are refined by branch-and-bound.
"""

from __future__ import annotations

import math

import numpy as np

from puffgm.gaussian.leakage import log_interval_prob, region_pair_bound

__all__ = ["hull_functions", "log_box_bounds", "pinned_conditional", "pinned_pair_leakage"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def hull_functions(center, gens):
    """Upper and lower hull (Y as a function of X) of the zonotope center + sum_j [-1, 1] gens[:, j].

    ``center`` = (X, Y); returns (xs_up, ys_up, xs_lo, ys_lo, xmin, xmax) vertex lists."""
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


def _hull_max(xs, ys, a, b):
    """max of the piecewise-linear concave function (xs, ys) over [a, b] (arrays a, b)."""
    va, vb = np.interp(a, xs, ys), np.interp(b, xs, ys)
    best = np.maximum(va, vb)
    inside = (xs[None, :] >= a[:, None]) & (xs[None, :] <= b[:, None])
    vv = np.where(inside, ys[None, :], -np.inf)
    return np.maximum(best, vv.max(axis=1))


def _log_gauss_exp(a, b, mu, s, lam, t0):
    """log int_a^b N(t; mu, s^2) exp(lam (t - t0)) dt, arrays, without cancellation.

    The exponent q(t) is a concave quadratic with vertex m = mu + lam s^2; with t* the point of
    [a, b] nearest to m, the value is q(t*) + log int_a^b exp(q(t) - q(t*)) dt, and the last
    integral is a scaled Mills-ratio difference (``scipy.special.erfcx``) when m lies outside
    [a, b], a central normal probability when it lies inside.  (The textbook closed form
    lam (mu - t0) + (lam s)^2 / 2 + log P(a < N(m, s^2) < b) loses all digits when m is far away.)"""
    from scipy.special import erfcx

    a, b, mu, lam, t0 = np.broadcast_arrays(*(np.asarray(v, float) for v in (a, b, mu, lam, t0)))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        m = mu + lam * s * s
        ts = np.clip(m, a, b)
        q = -0.5 * ((ts - mu) / s) ** 2 - _LOG_SQRT_2PI - math.log(s) + lam * (ts - t0)
        za, zb = (a - m) / s, (b - m) / s
        # m inside [a, b]: q(m) + log(s sqrt(2 pi)) + log P(a < N(m, s^2) < b)
        inside = q + _LOG_SQRT_2PI + math.log(s) + log_interval_prob(a, b, m, s)
        # m above b: s sqrt(pi/2) [erfcx(u_b) - exp((zb^2 - za^2)/2) erfcx(u_a)], u = -z / sqrt 2 >= 0
        c0 = 0.5 * math.log(math.pi / 2) + math.log(s)
        ea, eb = erfcx(-za / math.sqrt(2)), erfcx(-zb / math.sqrt(2))
        above = q + c0 + np.log(eb) + np.log1p(-np.exp(0.5 * (zb * zb - za * za)) * ea / eb)
        fa, fb = erfcx(za / math.sqrt(2)), erfcx(zb / math.sqrt(2))
        below = q + c0 + np.log(fa) + np.log1p(-np.exp(0.5 * (za * za - zb * zb)) * fb / fa)
        out = np.where(m > b, above, np.where(m < a, below, inside))
    return np.where(b > a, out, -np.inf)


def _log_g(t, mk, c, mi, tau, lo_k, hi_k):
    return log_interval_prob(lo_k, hi_k, mk + c * (t - mi), tau)


def _dlog_g(t, mk, c, mi, tau, lo_k, hi_k):
    m = mk + c * (t - mi)
    lp = log_interval_prob(lo_k, hi_k, m, tau)
    z1, z2 = (lo_k - m) / tau, (hi_k - m) / tau
    with np.errstate(over="ignore", invalid="ignore"):
        d = (np.exp(-0.5 * z1 * z1 - _LOG_SQRT_2PI - lp) - np.exp(-0.5 * z2 * z2 - _LOG_SQRT_2PI - lp)) / tau
    return c * d


def log_box_bounds(r, delta, mi, si, mk, c, tau, lo_k, hi_k, M=16):
    """Certified (lower, upper) of log N(x_i in [r, r + delta], x_k in [lo_k, hi_k]) for arrays r.

    x_i ~ N(mi, si^2), x_k | x_i = t ~ N(mk + c (t - mi), tau^2)."""
    r = np.asarray(r, float)
    u = np.linspace(0.0, 1.0, M + 1)
    A = r[:, None] + delta * u[None, :-1]
    B = r[:, None] + delta * u[None, 1:]
    Mid = (A + B) / 2
    la, lb, lm = (_log_g(x, mk, c, mi, tau, lo_k, hi_k) for x in (A, B, Mid))
    dm = _dlog_g(Mid, mk, c, mi, tau, lo_k, hi_k)
    dm = np.where(np.isfinite(dm), dm, 0.0)
    up = lm + _log_gauss_exp(A, B, mi, si, dm, Mid)           # tangent at the midpoint
    with np.errstate(invalid="ignore"):
        chord = (lb - la) / (B - A)
    chord = np.where(np.isfinite(chord), chord, 0.0)
    lo = la + _log_gauss_exp(A, B, mi, si, chord, A)           # chord
    lo = np.where(np.isfinite(la) & np.isfinite(lb), lo, -np.inf)
    return _lse(lo), _lse(up)


def _lse(x):
    """Row-wise log-sum-exp (rows of -inf give -inf)."""
    m = np.max(x, axis=1)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = safe + np.log(np.sum(np.exp(x - safe[:, None]), axis=1))
    return np.where(np.isfinite(m), out, m)


def conditional_block(cov, H, C):
    """(W, S) of the Gaussian conditional x_H | x_C: mean m_H + W (x_C - m_C), covariance S.

    W = Sigma_HC Sigma_CC^-1 and S = Sigma_HH - W Sigma_CH (symmetrised); W has no
    columns when C is empty.
    """
    if C:
        W = np.linalg.solve(cov[np.ix_(C, C)], cov[np.ix_(C, H)]).T
        S = cov[np.ix_(H, H)] - W @ cov[np.ix_(C, H)]
    else:
        W = np.zeros((len(H), 0))
        S = cov[np.ix_(H, H)].copy()
    return W, (S + S.T) / 2


def natural_zonotope(model, H, C, W, S):
    """(S^-1, centre, generators) of the zonotope of natural parameters eta = S^-1 mu.

    mu = m_H + W (x_C - m_C) is affine in x_C, so over the box of x_C, eta ranges over
    centre + generators @ [-1, 1]^|C| (the image of the box's centre and half-widths).
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


def pinned_conditional(model, H, C):
    """(S, S^-1, centre, generators) of x_H | x_C and its natural-parameter zonotope, or None when S is
    not (numerically) positive definite (x_H determined by x_C)."""
    W, S = conditional_block(model.cov, H, C)
    try:
        np.linalg.cholesky(S)
    except np.linalg.LinAlgError:
        return None
    Sinv, center, gens = natural_zonotope(model, H, C, W, S)
    return S, Sinv, center, gens


def pinned_pair_leakage(model, i, k, cond, corr_num, corr_den, *, tol=1e-3, atol=1e-3, max_rounds=10):
    """Certified upper bound of the leakage of region secrets on x_i through x_cond with H = {i, k}.

    ``corr_num(ua, ub)`` and ``corr_den(ua, ub)`` are the marginal corrections of
    :meth:`GaussianRegionModel.leakage` (-log(1 - E0) for the numerator region, log U0 for the
    denominator region).  Returns (value, details)."""
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

    def pair_bound(eta_i, eta_k):
        mu = S @ np.array([eta_i, eta_k])
        return region_pair_bound(lo_i, hi_i, delta,
                                 lambda r: log_box_bounds(r, delta, mu[0], si, mu[1], c, tau, lo_k, hi_k),
                                 m0, s0, K1, K2, corr_num, corr_den, tol, atol, iters=25)

    def slab(a, b):
        cmid = (a + b) / 2
        U = float(_hull_max(xu, yu, np.array([a]), np.array([b]))[0]) + pad
        L = -float(_hull_max(xl, -yl, np.array([a]), np.array([b]))[0]) - pad
        bu, eu = pair_bound(U, cmid)
        bd, ed = pair_bound(L, cmid)
        return max(bu, bd) + wk * (b - a) / 2, max(eu, ed)

    if xmax - xmin <= 0:
        val, est = slab(xmin, xmin)
        return val, {"slabs": 1, "estimate": est}
    edges = np.linspace(xmin, xmax, 17)
    cells = [(edges[j], edges[j + 1]) for j in range(16)]
    vals = [slab(a, b) for a, b in cells]
    dropped = -math.inf
    best_est = max(v[1] for v in vals)
    n_slabs = len(cells)
    for _ in range(max_rounds):
        cert = max(max(v[0] for v in vals), dropped)
        slack = max(atol, tol * abs(best_est))
        if not math.isfinite(cert) or cert - best_est <= slack:
            break
        new_cells, new_vals = [], []
        for (a, b), v in zip(cells, vals):
            if v[0] <= best_est + 0.25 * slack:
                dropped = max(dropped, v[0])
                continue
            m = (a + b) / 2
            for cc in ((a, m), (m, b)):
                new_cells.append(cc)
                new_vals.append(slab(*cc))
        n_slabs += len(new_cells)
        if not new_cells:
            break
        cells, vals = new_cells, new_vals
        best_est = max(best_est, max(v[1] for v in vals))
        if len(cells) > 256:
            break
    cert = max(max(v[0] for v in vals), dropped)
    # certified lower bound of the exact leakage at attained points: eta on the hulls at the slab
    # centres (a box corner x_C attains it), top region against bottom region and back
    top, bot = np.array([hi_i - delta]), np.array([lo_i])
    lower = -math.inf
    for a, b in cells:
        cm = np.array([(a + b) / 2])
        for ys_x, ys_y in ((xu, yu), (xl, yl)):
            eta_i = float(np.interp(cm, ys_x, ys_y)[0])
            mu = S @ np.array([eta_i, cm[0]])
            lt = log_box_bounds(top, delta, mu[0], si, mu[1], c, tau, lo_k, hi_k)
            lb_ = log_box_bounds(bot, delta, mu[0], si, mu[1], c, tau, lo_k, hi_k)
            m_t = float(log_interval_prob(top, top + delta, m0, s0)[0])
            m_b = float(log_interval_prob(bot, bot + delta, m0, s0)[0])
            up_pair = (lt[0][0] - lb_[1][0]) - (m_t - m_b + float(corr_num(bot, bot + delta)[0]))
            dn_pair = (lb_[0][0] - lt[1][0]) - (m_b - m_t + float(corr_num(top, top + delta)[0]))
            lower = max(lower, up_pair, dn_pair)
    return cert, {"slabs": n_slabs, "estimate": best_est, "lower": lower}
