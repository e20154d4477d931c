r"""Certified leakage for any number of pinned high-influence coordinates when the prior is sign-balanced.

Split: secret coordinate :math:`i`, other high-influence coordinates :math:`H'` (truncated to their box :math:`T`
and integrated out), conditioning set :math:`C`.  Given :math:`x_C`, :math:`x_H \sim N(\mu, S)` with :math:`\mu`
affine in :math:`x_C`, and with :math:`\eta = S^{-1} \mu` and :math:`P = S^{-1}` the law of :math:`x_H` restricted
to :math:`R \times T` is an exponential family in :math:`\eta`:

$$
\Lambda_{R, R'}(\eta) = \log N(R \times T) - \log N(R' \times T), \qquad
\nabla \Lambda = E_R[x_H] - E_{R'}[x_H].
$$

**Monotonicity (MTP2).**  Suppose the precision :math:`P` is *sign-balanced*: there are signs :math:`s`
(:math:`s_i = +1`) with :math:`s_j s_k P_{jk} \le 0` for :math:`j \ne k`.  This holds whenever the graph of
:math:`P` is a forest (Markov chains such as the Ornstein-Uhlenbeck / AR(1) kernel :math:`\exp(-|j - k| / l)`,
linear-Gaussian networks whose moral graph restricted to :math:`H` is a tree) and for every :math:`b = 2`; it
fails for the squared-exponential kernel, whose precision has a checkerboard sign pattern (a triangle with
signs :math:`(-, -, +)` cannot be balanced), so Figure 2b's prior is not covered.  With :math:`y = s x` the
Gaussian density has non-positive off-diagonal precision, so it is multivariate totally positive of order 2
(MTP2), and so is its restriction to the product set :math:`R \times T` (products of MTP2 functions are MTP2).
Given :math:`y_i = t`, the law of :math:`y_{H'}` is then stochastically increasing in :math:`t`, so for :math:`R`
above :math:`R'` (every point of :math:`R` above every point of :math:`R'`) :math:`E_R[y_k] \ge E_{R'}[y_k]` for
every :math:`k`: :math:`\Lambda` is non-decreasing in every coordinate of :math:`\tilde\eta = s \eta`.  Over the
zonotope :math:`Z` of :math:`\eta` (the image of the box of :math:`x_C`) therefore

$$
\sup_{x_C} \Lambda_{R, R'} \le \Lambda_{R, R'}(s\, \tilde\eta^{\max}), \qquad
\tilde\eta^{\max}_k = \max_Z s_k \eta_k \quad (R \text{ above } R'),
$$

and the same with :math:`\tilde\eta^{\min}` for :math:`R` below :math:`R'`.  When the columns of
:math:`\operatorname{diag}(s)` times the generators of :math:`Z` have consistent signs, :math:`\tilde\eta^{\max}`
is attained at a corner of the box of :math:`x_C` and the bound is the exact sup; a certified lower bound is
computed there too.

The box probabilities :math:`N([r, r + \delta] \times T)` in :math:`b` dimensions are bounded on both sides by
:class:`puffgm.gaussian.boxprob.BoxProbability`; the continuum of regions uses
:math:`F'' \ge -(S^{-1})_{ii}` for :math:`F(r) = \log N([r, r + \delta] \times T)` (the trivariate engine's
argument holds in any dimension: with :math:`x_{H'} \mid x_i = t \sim N(a + c t, \Omega)`,
:math:`(\log G)'' = \mathrm{Var}_T[c^\top \Omega^{-1} y] - c^\top \Omega^{-1} c`) and the concavity of :math:`F`
(Prekopa) for the denominator, as in :mod:`puffgm.gaussian.trivariate`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from puffgm.gaussian.boxprob import BoxProbability, region_boxes
from puffgm.gaussian.primitives import PinnedOptions, RegionSweep, log_interval_prob, region_pair_bound
from puffgm.gaussian.zonotope import pinned_conditional

__all__ = ["CornerOptions", "balancing_signs", "corner_lower_bound", "monotone_leakage"]


@dataclass(frozen=True, eq=False)
class CornerOptions:
    r"""Options of :func:`corner_lower_bound`.

    Attributes
    ----------
    starts : sequence of arrays, optional
        Starting corners (vectors of :math:`\pm 1` over the conditioning set); default the corners that
        maximise and minimise :math:`\eta_i`.
    sweeps : int
        Passes of single-coordinate flips from each start.
    box_tol, max_boxes : float, int
        Tolerance and sub-box budget of the box probabilities when no ``box`` is given.
    n_regions : int
        Region grid (both ends included) whose disjoint pairs are tried at the best corner (:math:`\le 2`: the top
        and bottom regions only).
    """

    starts: Sequence | None = None
    sweeps: int = 2
    box_tol: float = 1e-2
    max_boxes: int = 2000
    n_regions: int = 41


def balancing_signs(P, root=0):
    r"""Signs :math:`s` with :math:`s_j s_k P_{jk} \le 0` for every :math:`j \ne k`, or None when none exist.

    ``s[root]`` is +1.  The signs are propagated along the non-zero off-diagonal entries (a breadth-first search of the
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


def monotone_leakage(model, i, high, cond, corr_num, corr_den, options: PinnedOptions = PinnedOptions()):
    r"""Certified upper bound of the leakage of region secrets on :math:`x_i` through ``x_cond``.

    The high-influence set is :math:`H = \{i\} \cup` ``high``.  Applies when the conditional precision of
    :math:`x_H` given ``x_cond`` is sign-balanced (see the module docstring); returns (inf, details with a
    "reason") otherwise.

    Parameters
    ----------
    model : GaussianRegionModel
        The truncated prior and the region width.
    i : int
        The secret coordinate.
    high : sequence of int
        The other high-influence coordinates (truncated, integrated out).
    cond : sequence of int
        The conditioning set C.
    corr_num, corr_den : callable
        The marginal corrections of :meth:`~puffgm.gaussian.leakage.GaussianRegionModel.leakage`
        (:math:`-\log(1 - E_0)` for the numerator region, :math:`\log U_0` for the denominator region).
    options : PinnedOptions
        ``tol``, ``atol`` (region sweeps), ``box_tol`` (default :math:`\max(\mathrm{atol}, 10^{-2})`) and
        ``max_boxes`` (box probabilities).

    Returns
    -------
    tuple
        (value, details); ``details["lower"]`` is a certified lower bound of the exact leakage at
        attained box points of x_cond (top region against bottom region, and back).
    """
    H = [int(i)] + [int(k) for k in high]
    C = list(cond)
    block = pinned_conditional(model, H, C)
    if block is None:
        return math.inf, {"reason": "x_H is (numerically) degenerate given x_cond"}
    S, Sinv, center, gens = block
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
    box_tol = options.box_tol
    try:
        box = BoxProbability(Sinv, tol=box_tol if box_tol is not None else max(options.atol, 1e-2),
                             max_boxes=options.max_boxes)
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
    n_boxes = [0]
    box_bounds = _box_bounds_factory(model, H, box, n_boxes)
    pair_bound = _pair_bound_factory(model, i, S, box, box_bounds, (corr_num, corr_den), options)

    cert_up, est_up = pair_bound(eta_up)
    cert_dn, est_dn = pair_bound(eta_dn)
    cert = max(cert_up, cert_dn) + pert
    # certified lower bound at the attained corners of the box of x_C
    corner_value = _corner_pair_value(model, i, H, S, center, gens, box, corr_num)
    lower = max(corner_value(col), corner_value(-col)) - pert
    return cert, {"signs": s.astype(int).tolist(), "corner_attained": consistent, "estimate": max(est_up, est_dn),
                  "lower": lower, "max_sub_boxes": n_boxes[0]}


def _box_bounds_factory(model, H, box, n_boxes):
    """box_bounds(mu, r) -> certified (lower, upper) of log N(x_i in [r, r + delta], x_H' in T; mu, P^-1)
    for arrays r (all regions of a sweep refined at once); ``n_boxes[0]`` keeps the largest sub-box count."""
    delta = model.delta
    lo_H, hi_H = model.lower[H].astype(float), model.upper[H].astype(float)

    def box_bounds(mu, r):
        lb, ub, nb = box.bounds_many(mu, *region_boxes(lo_H, hi_H, r, delta))
        n_boxes[0] = max(n_boxes[0], int(np.max(nb)))
        return lb, ub

    return box_bounds


def _pair_bound_factory(model, i, S, box, box_bounds, corr, options):
    """pair_bound(eta) -> (certified sup over regions R of the numerator term plus sup over R' of the
    denominator term, value met): the decoupled region maximisation at one natural parameter eta,
    F'' >= -(S^-1)_ii for the numerator and -1 / Sigma_ii for the denominator (module docstring)."""
    delta = model.delta
    lo_i, hi_i = model.lower[i], model.upper[i]
    m0, s0 = model.mean[i], math.sqrt(model.cov[i, i])
    K1, K2 = float(box.P[0, 0]), 1.0 / model.cov[i, i]
    sweep = RegionSweep(lo_i, hi_i, delta, options.tol, options.atol, iters=40)

    def pair_bound(eta):
        mu = S @ eta
        return region_pair_bound(sweep, lambda r: box_bounds(mu, r), m0, s0, K1, K2, *corr)

    return pair_bound


def corner_lower_bound(model, i, high, cond, corr_num, *, box=None, options: CornerOptions = CornerOptions()):
    r"""Certified lower bound of the exact leakage, by a greedy search over corners of the box of ``x_cond``.

    Any attained :math:`x_C` and any disjoint pair of regions give a lower bound of the leakage (Definition 7
    takes a sup).  At a corner :math:`x_C`, with :math:`R` the top region :math:`[hi_i - \delta, hi_i]` and
    :math:`R'` the bottom one (and back),
    :math:`\log P(R \mid x_C) - \log P(R' \mid x_C) \ge \mathrm{lower}(\log N(R \times T))
    - \mathrm{upper}(\log N(R' \times T))` (:class:`~puffgm.gaussian.boxprob.BoxProbability`), and the
    marginal log ratio of the truncated prior is at most :math:`\log N_0(R) - \log N_0(R') - \log(1 - E_0(R'))`
    (Bonferroni, ``corr_num``).  Starting from the corners that maximise and minimise :math:`\eta_i` (or
    ``options.starts``), single coordinates of :math:`x_C`
    are flipped while the bound improves (``options.sweeps`` passes); at the best corner every disjoint
    pair of a grid of ``options.n_regions`` regions (both ends included) is tried as well.  No sign
    condition is needed.

    Parameters
    ----------
    model : GaussianRegionModel
    i : int
        The secret coordinate.
    high, cond : sequence of int
        The other high-influence coordinates and the conditioning set.
    corr_num : callable
        The numerator marginal correction of :meth:`~puffgm.gaussian.leakage.GaussianRegionModel.leakage`.
    box : BoxProbability, optional
        The box probabilities of :math:`x_H` given ``x_cond`` (default: built with ``options.box_tol`` and
        ``options.max_boxes``).
    options : CornerOptions

    Returns
    -------
    tuple
        (lower bound, the best corner as a vector of :math:`\pm 1` over ``cond``, number of evaluations);
        (-inf, None, 0) when :math:`x_H` is determined by ``x_cond``.
    """
    H = [int(i)] + [int(k) for k in high]
    C = list(cond)
    block = pinned_conditional(model, H, C)
    if block is None:
        return -math.inf, None, 0
    S, Sinv, center, gens = block
    if box is None:
        box = BoxProbability((Sinv + Sinv.T) / 2, tol=options.box_tol, max_boxes=options.max_boxes)
    value = _corner_pair_value(model, i, H, S, center, gens, box, corr_num)
    starts = options.starts
    if starts is None:
        g0 = np.where(gens[0] >= 0, 1.0, -1.0)
        starts = [g0, -g0]
    best, best_u = -math.inf, None
    for u0 in starts:
        u = np.array(u0, float)
        cur = value(u)
        for _ in range(options.sweeps):
            improved = False
            for j in range(len(C)):
                u[j] = -u[j]
                v = value(u)
                if v > cur:
                    cur, improved = v, True
                else:
                    u[j] = -u[j]
            if not improved:
                break
        if cur > best:
            best, best_u = cur, u.copy()
    if best_u is not None and options.n_regions > 2:
        # the best pair need not be the top and bottom regions (it is not on the squared-exponential
        # kernel): every disjoint pair of a region grid at the best corner, also certified
        best = max(best, value.grid(best_u, options.n_regions))
    return best, best_u, value.calls


def _corner_pair_value(model, i, H, S, center, gens, box, corr_num):
    """value(u) -> certified lower bound of the exact leakage at the attained point x_C = corner u of the box
    of x_cond (weights u in [-1, 1] on the generators of the natural-parameter zonotope): top region
    against bottom region and back, log P(R | x_C) - log P(R' | x_C) >= lower(log N(R x T)) -
    upper(log N(R' x T)), minus the marginal log ratio bound log N0(R) - log N0(R') - log(1 - E0(R'))."""
    delta = model.delta
    lo_i, hi_i = model.lower[i], model.upper[i]
    m0, s0 = model.mean[i], math.sqrt(model.cov[i, i])
    top, bot = np.array([hi_i - delta]), np.array([lo_i])
    m_t = float(log_interval_prob(top, top + delta, m0, s0)[0])
    m_b = float(log_interval_prob(bot, bot + delta, m0, s0)[0])
    c_b, c_t = float(corr_num(bot, bot + delta)[0]), float(corr_num(top, top + delta)[0])
    lo_H, hi_H = model.lower[H].astype(float), model.upper[H].astype(float)
    LO, HI = np.vstack([lo_H, lo_H]), np.vstack([hi_H, hi_H])
    LO[0, 0], HI[0, 0], LO[1, 0], HI[1, 0] = top[0], top[0] + delta, bot[0], bot[0] + delta

    def value(u):
        mu = S @ (center + gens @ np.asarray(u, float))
        lb, ub, _ = box.bounds_many(mu, LO, HI)
        value.calls += 1  # type: ignore[attr-defined]  # evaluation counter kept on the function
        return float(max((lb[0] - ub[1]) - (m_t - m_b + c_b), (lb[1] - ub[0]) - (m_b - m_t + c_t)))

    def grid(u, n):
        """max over the disjoint pairs of n regions (ends included) at the corner u, same bound."""
        r = np.linspace(lo_i, hi_i - delta, n)
        mu = S @ (center + gens @ np.asarray(u, float))
        lb, ub, _ = box.bounds_many(mu, *region_boxes(lo_H, hi_H, r, delta))
        m = log_interval_prob(r, r + delta, m0, s0)
        c = corr_num(r, r + delta)
        D = (lb - m)[:, None] - (ub - m + c)[None, :]
        D = np.where(np.abs(r[:, None] - r[None, :]) >= delta * (1 - 1e-12), D, -np.inf)
        return float(np.max(np.where(np.isnan(D), -np.inf, D)))

    value.calls = 0  # type: ignore[attr-defined]  # evaluation counter kept on the function
    value.grid = grid  # type: ignore[attr-defined]  # the region-grid bound, exposed with the value
    return value
