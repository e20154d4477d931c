r"""One-dimensional normal probabilities, Bonferroni tail sums and the certified sweep over region positions.

The building blocks shared by every leakage engine of :mod:`puffgm.gaussian` (Bai, He, Gu, Kifer and
Maeng, Example 6.2: a Gaussian prior truncated to a box, region secrets
:math:`s(r) = \{x_i \in [r, r + \delta]\}`):

* normal interval probabilities in log space (:func:`log_interval_prob`), tail probabilities
  (:func:`tails`, :func:`tail_prob`) and their Bonferroni sums over the other coordinates of a split
  (:class:`ConditionalTails`, :func:`bonferroni_sum`, :func:`max_inf_tail`, :func:`neglog1m`);
* the closed-form integral of a normal density times an exponential (:func:`log_gauss_exp`) and the
  log-concave conditional interval probability of a bivariate normal (:class:`PairLaw`, :func:`log_g`,
  :func:`dlog_g`), from which the pinned engines build certified box probabilities;
* the certified maximum over the continuum of region positions :math:`r \in [lo_i, hi_i - \delta]`
  (:class:`RegionSweep`, :func:`certified_region_max`, :func:`region_pair_bound`), by interval branch
  and bound with a curvature bound instead of a Lipschitz constant;
* the options shared by the pinned engines (:class:`PinnedOptions`).

Nothing here imports another module of :mod:`puffgm.gaussian`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "LOG_SQRT_2PI",
    "ConditionalTails",
    "PairLaw",
    "PinnedOptions",
    "RegionSweep",
    "bonferroni_sum",
    "cell_bounds",
    "certified_region_max",
    "dlog_g",
    "log_g",
    "log_gauss_exp",
    "log_interval_prob",
    "lse_rows",
    "max_inf_tail",
    "neglog1m",
    "partition_max",
    "region_pair_bound",
    "tail_prob",
    "tails",
    "theorem9_sweep",
]

#: log sqrt(2 pi), the normaliser of the standard normal density in log space.
LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


# ------------------------------------------------------------------ normal probabilities
def log_interval_prob(lo, hi, mu, sigma):
    r""":math:`\log P(lo < N(\mu, \sigma^2) < hi)`, elementwise, stable in both tails (-inf when empty)."""
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


def tails(lo, hi, m, tau):
    r"""Row-wise tail probabilities :math:`P(N(m, \tau_k^2) \notin [\mathrm{lo}_k, \mathrm{hi}_k])`.

    Parameters
    ----------
    lo, hi, tau : (k,) arrays
        Bounds and standard deviations of the rows (:math:`\tau_k = 0`: the indicator of :math:`m` outside).
    m : (k, c) array
        Means, one column per cell.
    """
    from scipy.special import ndtr

    lo, hi, tau = lo[:, None], hi[:, None], tau[:, None]
    safe = np.where(tau > 0, tau, 1.0)
    out = ndtr((lo - m) / safe) + ndtr((m - hi) / safe)
    return np.where(tau > 0, out, ((m < lo) | (m > hi)).astype(float))


def tail_prob(lo, hi, m, tau):
    r""":math:`P(N(m, \tau^2) \notin [lo, hi])`, elementwise (:math:`\tau = 0`: the indicator of :math:`m` outside)."""
    from scipy.special import ndtr

    m = np.asarray(m, float)
    if tau <= 0:
        return ((m < lo) | (m > hi)).astype(float)
    return ndtr((lo - m) / tau) + ndtr((m - hi) / tau)


@dataclass(frozen=True, eq=False)
class ConditionalTails:
    r"""The other coordinates :math:`k` of a split, as seen from the secret coordinate :math:`x_i`.

    Given :math:`x_i` (and any conditioning values),
    :math:`x_k \sim N(\mathrm{base}_k + \mathrm{slope}_k (x_i - m_i), \tau_k^2)` with :math:`\mathrm{base}_k`
    anywhere in :math:`[\mathrm{base\_lo}_k, \mathrm{base\_hi}_k]` (the range of the conditioning term over its
    box), and :math:`x_k` must stay in :math:`[lo_k, hi_k]`.  Every field is a (k,) array.
    """

    base_lo: np.ndarray
    base_hi: np.ndarray
    slope: np.ndarray
    tau: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


def bonferroni_sum(ua, ub, m_i, ct: ConditionalTails):
    r"""Bonferroni sum of the largest tails, per cell of :math:`x_i`.

    :math:`\sum_k \max P(x_k \notin [lo_k, hi_k])` over :math:`x_i \in [u_a, u_b]` and
    :math:`\mathrm{base}_k \in [\mathrm{base\_lo}_k, \mathrm{base\_hi}_k]`, the law of :math:`x_k` being that of
    ``ct`` (:class:`ConditionalTails`).  The tail is quasi-convex in the mean, so its maximum is at an end of
    the mean's range.

    Parameters
    ----------
    ua, ub : (c,) arrays
        The cells of :math:`x_i`.
    m_i : float
        The centre of the slopes (the mean of :math:`x_i`, or 0 when the base already holds it).
    ct : ConditionalTails
    """
    e1 = ct.slope[:, None] * (ua[None, :] - m_i)
    e2 = ct.slope[:, None] * (ub[None, :] - m_i)
    mlo = ct.base_lo[:, None] + np.minimum(e1, e2)
    mhi = ct.base_hi[:, None] + np.maximum(e1, e2)
    return np.sum(np.maximum(tails(ct.lo, ct.hi, mlo, ct.tau), tails(ct.lo, ct.hi, mhi, ct.tau)), axis=0)


def max_inf_tail(ua, ub, m_i, base, slope, tau, lo, hi):
    r""":math:`\max_k \inf_{x_i \in [u_a, u_b]}` (cells) of the tail of :math:`x_k`.

    Here :math:`x_k \mid x_i \sim N(\mathrm{base}_k + \mathrm{slope}_k (x_i - m_i), \tau_k^2)`: the tail is
    quasi-convex in the mean, so its inf is at the mean closest to the box's centre."""
    e1 = base[:, None] + slope[:, None] * (ua[None, :] - m_i)
    e2 = base[:, None] + slope[:, None] * (ub[None, :] - m_i)
    mid = ((lo + hi) / 2)[:, None]
    closest = np.clip(mid, np.minimum(e1, e2), np.maximum(e1, e2))
    return np.max(tails(lo, hi, closest, tau), axis=0)


def neglog1m(E):
    r""":math:`-\log(1 - E)`, inf when :math:`E \ge 1` (the Bonferroni correction of a tail sum :math:`E`)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(E < 1, -np.log1p(-np.minimum(E, 1.0)), np.inf)


# ------------------------------------------------------------------ bivariate normal pieces
def log_gauss_exp(a, b, mu, s, lam, t0):
    r""":math:`\log \int_a^b N(t; \mu, s^2) \exp(\lambda (t - t_0))\, dt`, arrays, without cancellation.

    The exponent :math:`q(t)` is a concave quadratic with vertex :math:`m = \mu + \lambda s^2`; with :math:`t^*`
    the point of :math:`[a, b]` nearest to :math:`m`, the value is
    :math:`q(t^*) + \log \int_a^b \exp(q(t) - q(t^*))\, dt`, and the last integral is a scaled Mills-ratio
    difference (``scipy.special.erfcx``) when :math:`m` lies outside :math:`[a, b]`, a central normal
    probability when it lies inside.  (The textbook closed form
    :math:`\lambda (\mu - t_0) + (\lambda s)^2 / 2 + \log P(a < N(m, s^2) < b)` loses all digits when :math:`m`
    is far away.)"""
    from scipy.special import erfcx

    a, b, mu, lam, t0 = np.broadcast_arrays(*(np.asarray(v, float) for v in (a, b, mu, lam, t0)))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        m = mu + lam * s * s
        ts = np.clip(m, a, b)
        q = -0.5 * ((ts - mu) / s) ** 2 - LOG_SQRT_2PI - math.log(s) + lam * (ts - t0)
        za, zb = (a - m) / s, (b - m) / s
        # m inside [a, b]: q(m) + log(s sqrt(2 pi)) + log P(a < N(m, s^2) < b)
        inside = q + LOG_SQRT_2PI + math.log(s) + log_interval_prob(a, b, m, s)
        # m above b: s sqrt(pi/2) [erfcx(u_b) - exp((zb^2 - za^2)/2) erfcx(u_a)], u = -z / sqrt 2 >= 0
        c0 = 0.5 * math.log(math.pi / 2) + math.log(s)
        ea, eb = erfcx(-za / math.sqrt(2)), erfcx(-zb / math.sqrt(2))
        above = q + c0 + np.log(eb) + np.log1p(-np.exp(0.5 * (zb * zb - za * za)) * ea / eb)
        fa, fb = erfcx(za / math.sqrt(2)), erfcx(zb / math.sqrt(2))
        below = q + c0 + np.log(fa) + np.log1p(-np.exp(0.5 * (za * za - zb * zb)) * fb / fa)
        out = np.where(m > b, above, np.where(m < a, below, inside))
    return np.where(b > a, out, -np.inf)


@dataclass(frozen=True, eq=False)
class PairLaw:
    r"""A bivariate normal written through its first coordinate.

    :math:`x_1 \sim N(m_1, s_1^2)` and :math:`x_2 \mid x_1 = t \sim N(m_2 + \mathrm{slope}\,(t - m_1), \tau^2)`.
    ``m1`` and ``m2`` may be arrays of one shape (one law per element, the other fields shared).
    """

    m1: float | np.ndarray
    s1: float
    m2: float | np.ndarray
    slope: float
    tau: float


def log_g(t, mk, c, mi, tau, lo_k, hi_k):
    r""":math:`\log g(t) = \log P(x_k \in [lo_k, hi_k] \mid x_i = t)`, an interval probability of a normal law.

    Here :math:`x_k \mid x_i = t \sim N(m_k + c (t - m_i), \tau^2)`.  :math:`g` is log-concave in :math:`t` (an
    interval probability of a location family with log-concave density)."""
    return log_interval_prob(lo_k, hi_k, mk + c * (t - mi), tau)


def dlog_g(t, mk, c, mi, tau, lo_k, hi_k):
    r""":math:`\frac{d}{dt} \log g(t)` for the :math:`g` of :func:`log_g` (same parameters)."""
    m = mk + c * (t - mi)
    lp = log_interval_prob(lo_k, hi_k, m, tau)
    z1, z2 = (lo_k - m) / tau, (hi_k - m) / tau
    with np.errstate(over="ignore", invalid="ignore"):
        d = (np.exp(-0.5 * z1 * z1 - LOG_SQRT_2PI - lp) - np.exp(-0.5 * z2 * z2 - LOG_SQRT_2PI - lp)) / tau
    return c * d


def lse_rows(x):
    r"""Row-wise log-sum-exp (rows of :math:`-\infty` give :math:`-\infty`)."""
    m = np.max(x, axis=1)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = safe + np.log(np.sum(np.exp(x - safe[:, None]), axis=1))
    return np.where(np.isfinite(m), out, m)


# ------------------------------------------------------------------ the continuum of regions
@dataclass(frozen=True)
class RegionSweep:
    r"""The regions :math:`[r, r + \delta]`, :math:`r \in [lo, hi - \delta]`, and the branch and bound over them.

    Attributes
    ----------
    lo, hi : float
        The support :math:`[\mathrm{lo}_i, \mathrm{hi}_i]` of the secret coordinate.
    delta : float
        The width of a region.
    tol, atol : float
        A sweep stops once its certified maximum is within :math:`\max(\mathrm{atol}, \mathrm{tol}\,|\mathrm{best}|)` of
        the best value met.
    iters : int
        Rounds of cell splitting at most.
    max_cells : int
        Cells at most (the sweep stops with its certified value when there are more).
    n_init : int, optional
        Cells of the initial grid (default :math:`\max(16, 2 (\mathrm{hi} - \mathrm{lo} - \delta) / \delta)`).
    return_edges : bool
        Also return the final partitions (:func:`certified_region_max`, :func:`region_pair_bound`).
    """

    lo: float
    hi: float
    delta: float
    tol: float
    atol: float
    iters: int = 25
    max_cells: int = 20000
    n_init: int | None = None
    return_edges: bool = False


def certified_region_max(sweep: RegionSweep, fun_up, K, corr):
    r"""Certified max of :math:`F(r) + \mathrm{corr}(r)` on :math:`r \in [lo, hi-\delta]` (interval branch and bound).

    Needs certified upper values ``fun_up(points)`` of :math:`F`, a curvature bound :math:`F'' \ge -K`, and a
    correction ``corr(u, v)`` that bounds the correction of every region inside :math:`[u, v]`
    (``None``: no correction).  On a cell :math:`[r_a, r_b]` of width :math:`h`, :math:`F` minus its chord has
    second derivative :math:`\ge -K` and vanishes at both ends, so
    :math:`F \le \max(F(r_a), F(r_b)) + K h^2 / 8`.  Pruned
    cells keep counting in the certified value.

    Parameters
    ----------
    sweep : RegionSweep
        The region continuum and the stopping rules.
    fun_up : callable
        Certified upper values of :math:`F` at an array of region positions.
    K : float
        Curvature bound, :math:`F'' \ge -K`.
    corr : callable or None
        The correction of the regions inside [u, v], for arrays u, v.

    Returns
    -------
    tuple
        (certified upper bound, best value met at a cell end); the first is ``inf`` when any cell
        bound is not finite.  With ``sweep.return_edges`` a third value: the sorted end points of the
        final partition of :math:`[lo, hi - \delta]` (pruned cells included), on which :func:`partition_max`
        re-evaluates the bound for other functions.
    """
    delta = sweep.delta
    a0, b0 = sweep.lo, sweep.hi - delta
    n_init = sweep.n_init
    m = max(16, int(math.ceil(2 * (b0 - a0) / delta))) if n_init is None else max(1, int(n_init))
    edges = np.linspace(a0, b0, m + 1)
    ra, rb = edges[:-1], edges[1:]
    fe = fun_up(edges)
    fa, fb = fe[:-1], fe[1:]
    best, dropped, cert = -math.inf, -math.inf, math.inf
    pruned = [edges]
    for _ in range(sweep.iters):
        up = cell_bounds(ra, rb, fa, fb, K, corr, delta)
        if corr is None:
            pt = np.maximum(fa, fb)
        else:
            pt = np.maximum(fa + corr(ra, ra + delta), fb + corr(rb, rb + delta))
        best = max(best, float(np.max(np.where(np.isnan(pt), -np.inf, pt))))
        cert = max(float(np.max(up)), dropped)
        if not math.isfinite(cert):
            break
        slack = max(sweep.atol, sweep.tol * abs(best))
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
        if ra.size > sweep.max_cells:
            break
    cert = cert if math.isfinite(cert) else math.inf
    if sweep.return_edges:
        return cert, best, np.unique(np.concatenate(pruned))
    return cert, best


def cell_bounds(ra, rb, fa, fb, K, corr, delta):
    r"""Per cell :math:`[r_a, r_b]`: :math:`\max(f_a, f_b) + K h^2 / 8 + \mathrm{corr}(r_a, r_b + \delta)`, NaN as +inf.

    :math:`h = r_b - r_a`; ``corr=None``: no correction.  This is the certified bound of a function with
    second derivative :math:`\ge -K` on the cell.
    """
    up = np.maximum(fa, fb) + K * (rb - ra) ** 2 / 8
    if corr is not None:
        up = up + corr(ra, rb + delta)
    return np.where(np.isnan(up), np.inf, up)


def partition_max(edges, f, K, corr, delta):
    r"""The largest :func:`cell_bounds` over the cells of a partition (end points ``edges``, values ``f``).

    It is the certified bound of :func:`certified_region_max` on a given partition, for any function with
    second derivative :math:`\ge -K`.
    """
    return float(np.max(cell_bounds(edges[:-1], edges[1:], f[:-1], f[1:], K, corr, delta)))


def region_pair_bound(sweep: RegionSweep, log_box, m0, s0, K1, K2, corr_num, corr_den):
    r"""The decoupled region sweeps of the pinned engines.

    Certified sup over regions :math:`R` of
    :math:`[\mathrm{upper} \log N(R \times T) - \log N_0(R) + \mathrm{corr}_{\mathrm{num}}]` plus sup over
    :math:`R'` of :math:`[-\mathrm{lower} \log N(R' \times T) + \log N_0(R') + \mathrm{corr}_{\mathrm{den}}]`,
    and the values met.

    Parameters
    ----------
    sweep : RegionSweep
        The region continuum and the stopping rules of both sweeps (``n_init`` the initial grid of both).
    log_box : callable
        ``log_box(r)`` -> certified (lower, upper) arrays of :math:`\log N(R \times T)` for the regions
        :math:`[r, r + \delta]` (memoised: both sweeps share the evaluations at the same points).
    m0, s0 : float
        The marginal :math:`N_0 = N(m_0, s_0^2)`.
    K1, K2 : float
        Minus lower bounds of the second derivatives of the numerator and denominator functions.
    corr_num, corr_den : callable
        Marginal corrections of the numerator and denominator regions.

    Returns
    -------
    tuple
        (certified value, value met); with ``sweep.return_edges`` also the two final partitions
        (numerator, denominator; :func:`certified_region_max`).
    """
    memo: dict = {}
    delta = sweep.delta

    def box(r):
        key = r.tobytes()
        if key not in memo:
            memo.clear()
            memo[key] = log_box(r)
        return memo[key]

    def f1(r):
        _, upper = box(r)
        return upper - log_interval_prob(r, r + delta, m0, s0)

    def f2(r):
        lower, _ = box(r)
        return -lower + log_interval_prob(r, r + delta, m0, s0)

    if sweep.return_edges:
        cert1, met1, edges1 = certified_region_max(sweep, f1, K1, corr_num)
        cert2, met2, edges2 = certified_region_max(sweep, f2, K2, corr_den)
        return cert1 + cert2, met1 + met2, (edges1, edges2)
    cert1, met1 = certified_region_max(sweep, f1, K1, corr_num)
    cert2, met2 = certified_region_max(sweep, f2, K2, corr_den)
    return cert1 + cert2, met1 + met2


def theorem9_sweep(support, delta, marginal, mu_range, sig, grid):
    r"""Theorem 9's value as the paper computes it (Bai, He, Gu, Kifer and Maeng, Theorem 9).

    The sup over :math:`\mu` of the conditional log ratio of two disjoint regions minus the untruncated marginal
    log ratio, on a grid of region positions: max over :math:`\mu` in ``mu_range`` (the sup over the location
    family is at an end, by the monotone likelihood ratio) and over disjoint pairs of ``grid`` regions of

    $$
    \left[\log N(R; \mu, \sigma^2) - \log N(R; m_i, s_i^2)\right]
      - \left[\log N(R'; \mu, \sigma^2) - \log N(R'; m_i, s_i^2)\right],
    $$

    at least 0.  Not a certified bound (the grid and the dropped truncation).

    Parameters
    ----------
    support : (float, float)
        :math:`[\mathrm{lo}_i, \mathrm{hi}_i]`, the support of :math:`x_i`.
    delta : float
        Region width.
    marginal : (float, float)
        :math:`(m_i, s_i)`, the untruncated marginal of :math:`x_i`.
    mu_range : (float, float)
        :math:`(\mu_{\mathrm{lo}}, \mu_{\mathrm{hi}})`, the range of the conditional mean of :math:`x_i`.
    sig : float
        The conditional standard deviation :math:`\sigma` of :math:`x_i`.
    grid : int
        Region positions.
    """
    lo_i, hi_i = support
    r = np.linspace(lo_i, hi_i - delta, grid)
    m_i, s_i = marginal
    marg = log_interval_prob(r, r + delta, m_i, s_i)
    disjoint = np.abs(r[:, None] - r[None, :]) >= delta - 1e-12
    best = -math.inf
    for mu in mu_range:
        k = log_interval_prob(r, r + delta, mu, sig) - marg
        best = max(best, float(np.max(np.where(disjoint, k[:, None] - k[None, :], -np.inf))))
    return max(best, 0.0)


# ------------------------------------------------------------------ options of the pinned engines
@dataclass(frozen=True)
class PinnedOptions:
    """Options of the pinned-regime engines (:func:`puffgm.gaussian.bivariate.pinned_pair_leakage`,
    :func:`puffgm.gaussian.monotone.monotone_leakage`, :func:`puffgm.gaussian.trivariate.pinned_triple_leakage`).

    Attributes
    ----------
    tol, atol : float
        Relative and absolute gap of the region sweeps and of each engine's branch and bound.
    max_rounds : int
        Slab-refinement rounds of the bivariate engine.
    box_tol : float, optional
        Gap of the box probabilities of the monotone engine (default max(atol, 1e-2)).
    max_boxes : int
        Sub-boxes per box probability of the monotone engine.
    max_cells : int
        Cells of the trivariate engine's branch and bound.
    n0 : int
        Initial grid of the trivariate engine (n0 x n0 cells).
    give_up_above : float
        The trivariate engine stops early (with its certified value so far, valid but loose) once its
        bound function exceeds this at a cell centre: a bound known elsewhere is then better.
    """

    tol: float = 1e-3
    atol: float = 1e-3
    max_rounds: int = 10
    box_tol: float | None = None
    max_boxes: int = 2000
    max_cells: int = 400
    n0: int = 4
    give_up_above: float = math.inf
