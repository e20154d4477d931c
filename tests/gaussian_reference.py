"""Independent numerical references for the Gaussian engines' tests (no Monte Carlo).

* ``graded_gl``: Gauss-Legendre nodes on panels graded geometrically towards both ends of an interval;
* ``log_box_ref`` / ``log_box_ref_many``: log P(x in box) for x ~ N(mu, S) by tensor graded Gauss-Legendre
  quadrature with the last coordinate integrated in closed form given the others, in log space
  (``log_box_ref_many``: one grid, many means);
* ``exact_chain_leakage``: the exact leakage of an AR(1) / Ornstein-Uhlenbeck chain by products of
  transition kernels on graded grids (log-sum-exp).

Shared by ``tests/test_gaussian_monotone.py``, ``tests/test_gaussian_cells.py`` and
``tests/test_gaussian_mixed_range.py``.
"""

import itertools
import math

import numpy as np
from numpy.polynomial.legendre import leggauss
from scipy.special import log_ndtr, logsumexp

__all__ = ["ar_cov", "exact_chain_leakage", "graded_gl", "log_box_ref", "log_box_ref_many", "log_std_interval",
           "ou_cov"]


def graded_gl(a, b, m, k):
    """Gauss-Legendre nodes and weights on [a, b], 2 m + 1 panels graded geometrically towards both ends
    (smallest panel 1e-6 of the width), k nodes each."""
    g = np.geomspace(1e-6, 0.5, m)
    e = np.unique(np.concatenate([[0.0], g, 1 - g, [1.0]])) * (b - a) + a
    x, w = leggauss(k)
    X = ((e[:-1, None] + e[1:, None]) / 2 + (e[1:, None] - e[:-1, None]) / 2 * x[None, :]).ravel()
    W = ((e[1:, None] - e[:-1, None]) / 2 * w[None, :]).ravel()
    return X, W


def log_std_interval(a, b):
    """log P(a < Z < b) for a standard normal Z, a < b (arrays), stable in both tails."""
    up = a > 0
    a2, b2 = np.where(up, -b, a), np.where(up, -a, b)
    la, lb = log_ndtr(a2), log_ndtr(b2)
    return lb + np.log1p(-np.exp(la - lb))


def log_box_ref(mu, S, lo, hi, m=14, k=12):
    """log P(x in [lo, hi]) for x ~ N(mu, S): the last coordinate in closed form given the others, the
    others by tensor Gauss-Legendre on graded panels, in log space."""
    mu, lo, hi = (np.asarray(v, float) for v in (mu, lo, hi))
    d = len(mu)
    r = list(range(d - 1))
    Sr = S[np.ix_(r, r)]
    w = np.linalg.solve(Sr, S[r, d - 1])
    tau = math.sqrt(S[d - 1, d - 1] - S[d - 1, r] @ w)
    grids = [graded_gl(a, b, m, k) for a, b in zip(lo[:-1], hi[:-1])]
    X = np.stack(np.meshgrid(*[g[0] for g in grids], indexing="ij"), -1).reshape(-1, d - 1) - mu[:-1]
    lw = sum(np.meshgrid(*[np.log(g[1]) for g in grids], indexing="ij")).ravel()
    lf = -0.5 * np.einsum("ij,jk,ik->i", X, np.linalg.inv(Sr), X) - 0.5 * np.linalg.slogdet(2 * np.pi * Sr)[1]
    cm = mu[-1] + X @ w
    return float(logsumexp(lf + lw + log_std_interval((lo[-1] - cm) / tau, (hi[-1] - cm) / tau)))


def log_box_ref_many(mus, S, lo, hi, m=14, k=12):
    """log_box_ref for each row of ``mus`` (one quadrature grid for all means, in chunks)."""
    mus, lo, hi = (np.asarray(v, float) for v in (mus, lo, hi))
    d = S.shape[0]
    r = list(range(d - 1))
    Sr = S[np.ix_(r, r)]
    w = np.linalg.solve(Sr, S[r, d - 1])
    tau = math.sqrt(S[d - 1, d - 1] - S[d - 1, r] @ w)
    A = np.linalg.inv(Sr)
    grids = [graded_gl(a, b, m, k) for a, b in zip(lo[:-1], hi[:-1])]
    X = np.stack(np.meshgrid(*[g[0] for g in grids], indexing="ij"), -1).reshape(-1, d - 1)
    lw = sum(np.meshgrid(*[np.log(g[1]) for g in grids], indexing="ij")).ravel()
    base = lw - 0.5 * np.einsum("ij,jk,ik->i", X, A, X) - 0.5 * np.linalg.slogdet(2 * np.pi * Sr)[1]
    Xw = X @ w
    out = np.empty(len(mus))
    for t, mu in enumerate(mus):
        Am = A @ mu[:-1]
        lf = base + X @ Am - 0.5 * mu[:-1] @ Am
        cm = mu[-1] - mu[:-1] @ w + Xw
        out[t] = logsumexp(lf + log_std_interval((lo[-1] - cm) / tau, (hi[-1] - cm) / tau))
    return out


def ou_cov(n, l):
    idx = np.arange(n)
    return np.exp(-np.abs(idx[:, None] - idx[None, :]) / l)


def ar_cov(n, rho):
    """Stationary unit-variance AR(1) chain: cov rho^|j - k| (rho = exp(-1 / l) is the OU chain; rho < 0
    alternates the signs of the correlations and of the precision's off-diagonal entries)."""
    idx = np.arange(n)
    return rho ** np.abs(idx[:, None] - idx[None, :])


def _ou_log_trans(x, y, rho):
    """log density of x_{k+1} = y given x_k = x for the stationary unit-variance AR(1) chain."""
    v = 1 - rho * rho
    return -0.5 * (y - rho * x) ** 2 / v - 0.5 * math.log(2 * math.pi * v)


def _chain_logmass(rho, grids, left, right):
    """log int left(x_a) prod_k p(x_{k+1} | x_k) right(x_b) over the block x_a .. x_b (grids[k] = nodes,
    weights); left [nl, N_a] and right [nr, N_b] carry a batch axis; returns [nl, nr]."""
    cur = left + np.log(grids[0][1])[None, :]
    for (Xp, _), (X, W) in itertools.pairwise(grids):
        T = _ou_log_trans(Xp[:, None], X[None, :], rho) + np.log(W)[None, :]
        cur = logsumexp(cur[:, :, None] + T[None, :, :], axis=1)
    return logsumexp(cur[:, None, :] + right[None, :, :], axis=2)


def exact_chain_leakage(n, rho, lo, hi, delta, i, H, n_r, n_x, m=10, k=10, mr=4, kr=10, truncated=True):
    """Exact leakage a(C) of Definition 7 for the AR(1) chain (cov rho^|j - k|) truncated to [lo, hi],
    H a contiguous block containing i, C = the rest (the Markov property makes only the coordinates next
    to the block matter), maximised over a grid of n_r region positions (both ends included) and n_x
    values per adjacent conditioning coordinate (box corners included).  Returns (max, i.e. a value never
    above the true supremum, and the array [r, r', x_left, x_right] of log ratios).  With
    truncated=False the marginal term is that of the untruncated N(0, 1) marginal instead."""
    rs = np.linspace(lo[i], hi[i] - delta, n_r)

    def grid(j, r):
        return graded_gl(r, r + delta, mr, kr) if j == i else graded_gl(lo[j], hi[j], m, k)

    def stat(x):
        return -0.5 * x * x - 0.5 * math.log(2 * math.pi)

    # log P0(x_i in R) under the truncated prior, up to its normaliser
    if truncated:
        marg = np.array([_chain_logmass(rho, gs, stat(gs[0][0])[None, :], np.zeros((1, len(gs[-1][0]))))[0, 0]
                         for gs in ([grid(j, r) for j in range(n)] for r in rs)])
    else:
        marg = log_std_interval(rs, rs + delta)
    a, b = min(H), max(H)
    xl = np.linspace(lo[a - 1], hi[a - 1], n_x) if a > 0 else None
    xr = np.linspace(lo[b + 1], hi[b + 1], n_x) if b < n - 1 else None
    K = []
    for r in rs:  # log N(R x T | x_C) + a constant in x_C
        gs = [grid(j, r) for j in range(a, b + 1)]
        Xa, Xb = gs[0][0], gs[-1][0]
        left = _ou_log_trans(xl[:, None], Xa[None, :], rho) if xl is not None else stat(Xa)[None, :]
        right = _ou_log_trans(Xb[None, :], xr[:, None], rho) if xr is not None else np.zeros((1, len(Xb)))
        K.append(_chain_logmass(rho, gs, left, right))
    K = np.array(K) - marg[:, None, None]
    disjoint = np.abs(rs[:, None] - rs[None, :]) >= delta - 1e-12
    D = np.where(disjoint[:, :, None, None], K[:, None] - K[None, :], -np.inf)
    return float(D.max()), D
