r"""Certified leakage of region secrets under truncated multivariate Gaussian priors.

Prior: :math:`x \sim N(m, \Sigma)` truncated to the box :math:`B = \prod_k [lo_k, hi_k]`.  Secret
pairs on coordinate :math:`i`: :math:`s(r) = \{x_i \in [r, r + \delta]\}` against :math:`s(r')`, any
:math:`r, r' \in [lo_i, hi_i - \delta]` (Bai, He, Gu, Kifer and Maeng, Example 6.2).
For a split of the coordinates into a high-influence set :math:`H` (:math:`i \in H`,
:math:`H' = H \smallsetminus \{i\}`) and a conditioning set :math:`C` (the low-influence set :math:`L` for a
general split, the Markov quilt :math:`X_Q` for a quilt split), the leakage through :math:`C`
(Definition 7) is

$$
\begin{array}{rl}
a(C) &= \max_{r, r'} \sup_{x_C \in B_C} \log P(x_C \mid s(r)) / P(x_C \mid s(r')) \\
     &= \max_{r, r'} \sup_{x_C} [\log P(A \mid x_C) - \log P(A' \mid x_C)] - [\log P(A) - \log P(A')],
\end{array}
$$

:math:`A = s(r)`, :math:`A' = s(r')`, every probability under the *truncated* prior.  Given
:math:`x_C`, the truncated conditional of :math:`x_H` is :math:`N(\mu_{H|C}, \Sigma_{H|C})` restricted to
:math:`B_H` (for a quilt split this needs :math:`X_R` independent of :math:`X_N` given :math:`X_Q` under the
truncated prior: see :mod:`puffgm.gaussian.networks`), so with :math:`N` the
untruncated Gaussian given :math:`x_C` and :math:`T = B_{H'}`:

$$
P(A \mid x_C) / P(A' \mid x_C) = N(x_i \in R, x_{H'} \in T) / N(x_i \in R', x_{H'} \in T).
$$

Theorem 9 of the paper drops ":math:`x_{H'} \in T`" (it integrates :math:`x_{H'}` over the whole
space) and uses the untruncated marginal :math:`N(m_i, \Sigma_{ii})` for :math:`P(A) / P(A')`.
This module bounds the exact value from above with one-dimensional normal
probabilities only, by three inequalities:

1. Bonferroni on the other high-influence coordinates:
   :math:`N(R, T) \le N(R)` and :math:`N(R', T) \ge N(R') (1 - E(R'))`,
   :math:`E(R') = \sum_{k \in H'} \sup \{ P(x_k \notin [lo_k, hi_k] \mid x_i, x_C) : x_i \in R', x_C \in B_C \}`.
   Given :math:`(x_i, x_C)`, :math:`x_k` is Gaussian with mean affine in :math:`(x_i, x_C)` and fixed
   variance; the tail probability is quasi-convex in the mean, so the sup is at
   an end of the mean's range (an interval computed from the box).
2. The same on the marginal: :math:`P(A) / P(A') \ge N_0(R) (1 - E_0(R)) / N_0(R')` with
   :math:`E_0(R) = \sum_{k \ne i} \sup_{x_i \in R} P(x_k \notin [lo_k, hi_k] \mid x_i)`; where that term is
   large or infinite (option ``marginal``), also the bound of :mod:`puffgm.gaussian.marginal`:
   :math:`G(t) = P(x_{-i} \in B_{-i} \mid x_i = t)` is log-concave, so
   :math:`P(x_{-i} \in B_{-i} \mid x_i \in R) \ge` the min of :math:`G` at the ends of a cell containing
   :math:`R`, and :math:`P(x_{-i} \in B_{-i} \mid x_i \in R') \le` the probability of the box expanded
   by the drift of the conditional mean over the cell, both from certified :math:`(n - 1)`-dimensional box
   probabilities; the smaller bound is used.
3. Theorem 9's one-dimensional sweep for :math:`N(R \mid x_C) / N(R' \mid x_C)`: :math:`x_i \mid x_C`
   is :math:`N(\mu, \sigma^2)` with :math:`\mu` affine in :math:`x_C` and ranging over
   :math:`[\mu_{lo}, \mu_{hi}]`; by the monotone likelihood ratio of the location family the sup over
   :math:`\mu` is at :math:`\mu_{lo}` or :math:`\mu_{hi}`.

A second bound replaces 2. by "a ratio of averages is at least the smallest
ratio": :math:`P(A) / P(A') \ge \inf_{x_C} P(A \mid x_C) / P(A' \mid x_C)`
:math:`\ge \inf_\mu N(R \mid \mu) / N(R' \mid \mu) \cdot (1 - E(R))` (the *range* bound, always finite
when :math:`E < 1`; for :math:`H = \{i\}` it needs no Bonferroni term at all).  A third, the
*mixed-derivative range* bound (:func:`mixed_range_bound`), bounds :math:`\sup - \inf` over :math:`x_C` of
the conditional log ratio through the mixed derivative
:math:`\partial^2 \log P(x_{H'} \in T \mid x_i = t, x_C) / \partial t\, \partial x_C`, so
the truncation of :math:`H'` cancels between numerator and denominator instead of being charged to each (the
Bonferroni terms never fall below the tail mass :math:`E`); a fourth is the precision-Lipschitz bound.  The
value returned is the smallest.

The max over the continuum of region positions :math:`r, r'` is bounded by
branch-and-bound over cells :math:`[r_a, r_b]` (:math:`r_b - r_a \le \delta / 2`): on a cell,
:math:`[r, r + \delta]` lies inside the union :math:`[r_a, r_b + \delta]` and contains the
intersection :math:`[r_b, r_a + \delta]`, so probabilities are bounded by those of
the two intervals (no Lipschitz constant needed).  Cells are split until the
certified maximum is within ``tol`` of the best value met at a cell centre
(:func:`puffgm.gaussian.primitives.certified_region_max`).

Every term is an upper bound of the exact quantity; special functions are
evaluated in log space (``scipy.special.log_ndtr``, relative error about :math:`10^{-15}`);
the linear algebra (Cholesky solves) is in double precision, and the returned
value is widened by :math:`64\, \epsilon_{\mathrm{mach}} \operatorname{cond}(\Sigma_{CC}) + 10^{-12}` relative
plus :math:`10^{-12}` absolute to cover rounding.  When :math:`E \ge 1` (the other high-influence
coordinates can be pushed out of their box, "pinned") the Bonferroni terms are
useless and the bound is ``inf`` for that split; curves then keep the value of a
smaller split (they are non-increasing: for nested splits :math:`H_b \subset H_{b+1}` the leakage
through :math:`L_{b+1}` is at most that through :math:`L_b` by the mixture argument).  Pinned splits
have engines of their own: :math:`b = 2` the certified bivariate engine
(:mod:`puffgm.gaussian.bivariate`); :math:`b \ge 3` a hybrid (one other coordinate :math:`p` exactly
by the bivariate engine on :math:`(x_i, x_p)` given :math:`x_C`, the rest by Bonferroni given :math:`x_i`,
:math:`x_p` and :math:`x_C`, used when that sum stays below 1), the monotone engine for sign-balanced
conditional precisions (:mod:`puffgm.gaussian.monotone`), for :math:`b = 3` the certified
trivariate engine (:mod:`puffgm.gaussian.trivariate`) and for :math:`b \ge 4` the cell engine
(:mod:`puffgm.gaussian.multivariate`); the smallest certified value is returned.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from puffgm.core.results import freeze_record, json_float
from puffgm.core.validation import check_nonnegative_finite, check_nonnegative_int, check_positive_finite
from puffgm.exceptions import ParameterError, PriorError
from puffgm.gaussian.bivariate import pinned_pair_leakage
from puffgm.gaussian.marginal import TruncatedMarginal
from puffgm.gaussian.monotone import monotone_leakage
from puffgm.gaussian.multivariate import CellOptions, cell_leakage
from puffgm.gaussian.primitives import (
    ConditionalTails,
    PinnedOptions,
    RegionSweep,
    bonferroni_sum,
    certified_region_max,
    log_interval_prob,
    max_inf_tail,
    neglog1m,
    tails,
    theorem9_sweep,
)
from puffgm.gaussian.trivariate import pinned_triple_leakage

__all__ = [
    "GaussianRegionModel",
    "ModelOptions",
    "RegionLeakage",
    "TruncatedBlock",
    "log_box_hessian_bound",
    "mixed_range_bound",
    "region_leakage",
]

EPS = np.finfo(float).eps
_MARGINAL_MODES = ("auto", "bonferroni", "box")
_MARGINAL_AUTO_THRESHOLD = 0.5    # nats: at or below it the Bonferroni terms are kept alone
_MARGINAL_AUTO_MAX_DIM = 24       # "auto" uses box probabilities only for n - 1 <= 24


@dataclass(frozen=True)
class ModelOptions:
    r"""Engine options of a :class:`GaussianRegionModel` (validated by the model).

    Attributes
    ----------
    pinned_engines : bool
        Default of :meth:`GaussianRegionModel.leakage`'s ``pinned_engines``.
    marginal : {"auto", "bonferroni", "box"}
        Bound of the truncated marginal term (:meth:`GaussianRegionModel.marginal_corrections`):
        ``"bonferroni"`` the one-dimensional Bonferroni terms only; ``"box"`` also the :math:`(n - 1)`-dimensional
        box-probability bounds of :mod:`puffgm.gaussian.marginal` on every region cell; ``"auto"`` (default)
        the latter only on cells whose Bonferroni numerator term exceeds 0.5 nats (or is infinite) and only
        when :math:`n - 1 \le 24`, so priors on which Bonferroni is good keep its values and cost.
    cell_budget : int
        Cells for the :math:`b \ge 4` cell engine (:mod:`puffgm.gaussian.multivariate`) on pinned splits whose
        conditional precision is not sign-balanced (0, the default: off; each cell costs two region
        sweeps of :math:`b`-dimensional box probabilities).
    cell_seconds : float, optional
        Wall-time budget in seconds of the cell engine per split, on top of ``cell_budget`` (None, the
        default: cells only).  The value is certified whenever the engine stops; a time budget makes
        it depend on the machine's speed, so results meant to be reproduced should use cells only.
    cell_target : float, optional
        Stop the cell engine on a split as soon as its certified value is at or below this number (e.g.
        the value of a smaller split, when the question is whether the curve decreases); None (the
        default): no such rule.
    cell_checkpoint_dir : str or path, optional
        Directory where the cell engine keeps each split's branch and bound on disk (one JSON file per
        split, named by a fingerprint of the problem) and resumes it on a later call, in this process or
        another: long certifications can run in pieces (``cell_budget`` then counts the cells of every
        piece; see :func:`puffgm.gaussian.multivariate.cell_leakage`).  None (the default): nothing is
        written.
    cell_bonferroni : bool
        Bracket the cell engine's box probabilities by the Bonferroni sandwich as well (True, the default;
        False: the sub-box bounds alone).
    cell_lazy_gap : "auto", None or float
        Sandwich gap above which the cell engine's vertex bound computes sub-boxes for a region ("auto",
        the default: the sub-boxes' own typical gap; None: the box tolerance), see
        :class:`puffgm.gaussian.multivariate.CellOptions`.
    """

    pinned_engines: bool = True
    marginal: str = "auto"
    cell_budget: int = 0
    cell_seconds: float | None = None
    cell_target: float | None = None
    cell_checkpoint_dir: object = None
    cell_bonferroni: bool = True
    cell_lazy_gap: object = "auto"


def _rect_quad_min(a11, a12, a22, u1lo, u1hi, u2lo, u2hi):
    """Elementwise min of a11 u1^2 + 2 a12 u1 u2 + a22 u2^2 (positive definite) over the rectangle
    [u1lo, u1hi] x [u2lo, u2hi]: 0 when the rectangle holds the origin, else the smallest of the four
    edge minima (a convex quadratic restricted to an edge is minimised at its clipped vertex)."""
    def q(u1, u2):
        return a11 * u1 * u1 + 2 * a12 * u1 * u2 + a22 * u2 * u2

    out = np.full(np.shape(a11), np.inf)
    for v in (u1lo, u1hi):
        out = np.minimum(out, q(v, np.clip(-a12 * v / a22, u2lo, u2hi)))
    for v in (u2lo, u2hi):
        out = np.minimum(out, q(np.clip(-a12 * v / a11, u1lo, u1hi), v))
    inside = (u1lo <= 0) & (u1hi >= 0) & (u2lo <= 0) & (u2hi >= 0)
    return np.where(inside, 0.0, out)


@dataclass(frozen=True, eq=False)
class TruncatedBlock:
    r"""The other high-influence coordinates :math:`x_{H'}` of a split given :math:`x_i` and :math:`x_C`.

    :math:`x_{H'} \sim N(\nu, \Omega)` with :math:`\nu` anywhere in the box hull :math:`[\nu_{lo}, \nu_{hi}]`
    (over :math:`x_i` in its support and :math:`x_C` in its box), truncated to :math:`T = \prod_k [lo_k, hi_k]`.
    ``omega`` is a (k, k) array, the others (k,) arrays.
    """

    omega: np.ndarray
    nu_lo: np.ndarray
    nu_hi: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


def mixed_range_bound(block: TruncatedBlock, slope, spread, width_i, mu_spread, var_i, delta):
    r"""The *mixed-derivative range bound* of the leakage of a split :math:`(i, C, H')` (bound 4).

    Given :math:`x_i = t` and :math:`x_C`, :math:`x_{H'} \sim N(\nu, \Omega)` with
    :math:`\nu = \nu_0 + c t + B x_C`; let
    :math:`F(t, x_C) = \log P_\nu(x_{H'} \in T)` and
    :math:`\Lambda(x_C) = \log P(A \mid x_C) - \log P(A' \mid x_C)`.  The prior ratio
    :math:`P(A) / P(A')` is an average of the conditional ratios, so the leakage is at most
    :math:`\sup \Lambda - \inf \Lambda`.  :math:`\Lambda = \Lambda_1 + D` with
    :math:`\Lambda_1 = \log N(R \mid \mu) - \log N(R' \mid \mu)` (:math:`x_i \mid x_C \sim N(\mu, \sigma^2)`) and
    :math:`D` the truncation term; for :math:`t_0` between :math:`R` and :math:`R'`, :math:`F(t_0, x_C)` cancels
    in :math:`D`, so :math:`D(x) - D(x')` is at most
    :math:`(hi_i - lo_i) \sup |\partial^2 F / \partial t\, \partial x_C \cdot (x - x')|` plus the change
    of the weights of :math:`t` within :math:`R` and :math:`R'` (:math:`2 \delta |\mu - \mu'| / \sigma^2`), and
    :math:`|\Lambda_1(x) - \Lambda_1(x')| \le (hi_i - lo_i) |\mu - \mu'| / \sigma^2`.  With
    :math:`H = \mathrm{Hess}_\nu \log P_\nu(T)`,

    $$
    \frac{\partial^2 F}{\partial t\, \partial x_C} \cdot (x - x') = c^\top H B (x - x'), \qquad
      |\cdot| \le L = \sum_{jk} |c_j|\, h_{jk}\, r_k,
    $$

    :math:`r_k = \sum_m |B_{km}| (hi_m - lo_m)` the spread of :math:`\nu_k` over the box of :math:`x_C`, and
    :math:`h_{jk} \ge |H_{jk}|` from the face formulas of :math:`P = P_\nu(T)`:
    :math:`|\partial P / \partial \nu_j| \le \max_a f_j(a)` (:math:`f_j` the density of :math:`y_j` at the faces
    :math:`a \in \{lo_j, hi_j\}`); :math:`|\partial^2 P / \partial \nu_j \partial \nu_k| \le \sum_{ab} f_{jk}(a, b)`
    (bivariate densities at the four corners, :math:`j \ne k`);
    :math:`|\partial^2 P / \partial \nu_j^2| \le (f_j(lo_j) + f_j(hi_j)) \sum_k |(\Omega^{-1})_{jk}|\, w_k`
    (:math:`w_k` the largest :math:`|y_k - \nu_k|` over the box); :math:`P \ge 1 - E` (Bonferroni), and
    :math:`H = P'' / P - P' P'^\top / P^2`.  Every density is maximised over the box hull
    :math:`[\nu_{lo}, \nu_{hi}]` of :math:`\nu` (the bivariate one by minimising its quadratic form over a
    rectangle, exactly).  The bound is

    $$
    (hi_i - lo_i + 2 \delta) (\mu_{hi} - \mu_{lo}) / \sigma^2 + (hi_i - lo_i) L,
    $$

    small when the truncation is mild (:math:`E \ll 1`) and the coordinates near :math:`C` barely interact
    with those near :math:`i`: the terms shrink as :math:`C` moves away from :math:`i`, where the Bonferroni
    bounds (which count the truncation of the numerator and of the denominator separately) stay at :math:`E`.

    Parameters
    ----------
    block : TruncatedBlock
        :math:`\Omega`, the box hull :math:`[\nu_{lo}, \nu_{hi}]` of :math:`\nu` and the box :math:`T` of
        :math:`x_{H'}`.
    slope : (k,) array
        :math:`c`, the slope of :math:`\nu` in :math:`t`.
    spread : (k,) array
        :math:`r`, the spread of :math:`\nu` over the box of :math:`x_C`.
    width_i : float
        :math:`hi_i - lo_i`.
    mu_spread : float
        :math:`\mu_{hi} - \mu_{lo}`, the spread of the conditional mean of :math:`x_i` over the box of :math:`x_C`.
    var_i : float
        :math:`\sigma^2`, the conditional variance of :math:`x_i` given :math:`x_C`.
    delta : float
        The region width.

    Returns
    -------
    tuple
        ``(value, info)``; ``inf`` when :math:`E \ge 1` or :math:`\Omega` is (numerically) singular.
    """
    k = len(slope)
    base = (width_i + 2 * delta) * mu_spread / var_i
    if k == 0:
        return base, {"L": 0.0, "E": 0.0}
    h, info = log_box_hessian_bound(block.omega, block.nu_lo, block.nu_hi, block.lo, block.hi)
    if h is None:
        return math.inf, info
    L = float(np.abs(slope) @ h @ spread)
    return base + width_i * L, {"L": L, "E": info["E"]}


def log_box_hessian_bound(omega, nu_lo, nu_hi, lo, hi):
    r"""Entrywise :math:`h \ge |\nabla^2_\nu \log P(y \in T)|`, :math:`y \sim N(\nu, \Omega)`, uniformly in :math:`\nu`.

    The box is :math:`[\nu_{lo}, \nu_{hi}]` and :math:`T = \prod_j [lo_j, hi_j]` (the face formulas of
    :func:`mixed_range_bound`).

    Returns ``(h, {"E": E})`` with :math:`E` the Bonferroni sum of the largest tails (:math:`P \ge 1 - E`), or
    ``(None, info)`` when :math:`E \ge 1` or :math:`\Omega` is singular or too ill-conditioned for the rounding
    margin.  :math:`h` is widened by
    :math:`10^3 \epsilon_{\mathrm{mach}} \operatorname{cond}(\Omega) (1 + \max_k (w_k / s_k)^2)` relative for
    rounding (:math:`w_k` the largest :math:`|y_k - \nu_k|` over the box, :math:`s_k = \Omega_{kk}^{1/2}`).
    """
    omega = (np.asarray(omega, float) + np.asarray(omega, float).T) / 2
    k = omega.shape[0]
    s = np.sqrt(np.maximum(np.diag(omega), 0.0))
    try:
        np.linalg.cholesky(omega)
        oinv = np.linalg.inv(omega)
    except np.linalg.LinAlgError:
        return None, {"reason": "singular conditional covariance"}
    w = np.maximum(hi - nu_lo, nu_hi - lo)
    rel = 1e3 * EPS * float(np.linalg.cond(omega)) * (1 + float(np.max(w / s)) ** 2) if np.all(s > 0) else math.inf
    if not rel < 1e-3:
        return None, {"reason": "ill-conditioned conditional covariance"}
    E = float(np.sum(np.maximum(tails(lo, hi, nu_lo[:, None], s), tails(lo, hi, nu_hi[:, None], s))))
    if not E < 1:
        return None, {"E": E}
    P = 1 - E

    def fsup(a):  # sup over nu_j in [nu_lo_j, nu_hi_j] of the density of N(nu_j, s_j^2) at a
        d = np.maximum(0.0, np.maximum(nu_lo - a, a - nu_hi))
        return np.exp(-0.5 * (d / s) ** 2) / (math.sqrt(2 * math.pi) * s)

    f_lo, f_hi = fsup(lo), fsup(hi)
    p1 = np.maximum(f_lo, f_hi)
    h = np.zeros((k, k))
    if k > 1:
        j, m = np.triu_indices(k, 1)
        det = omega[j, j] * omega[m, m] - omega[j, m] ** 2
        a11, a12, a22 = omega[m, m] / det, -omega[j, m] / det, omega[j, j] / det
        p2 = np.zeros(len(j))
        for a_j in (lo[j], hi[j]):
            for a_m in (lo[m], hi[m]):
                qm = _rect_quad_min(a11, a12, a22, a_j - nu_hi[j], a_j - nu_lo[j], a_m - nu_hi[m], a_m - nu_lo[m])
                p2 += np.exp(-0.5 * qm) / (2 * math.pi * np.sqrt(det))
        h[j, m] = h[m, j] = p2 / P + p1[j] * p1[m] / P ** 2
    h[np.diag_indices(k)] = (f_lo + f_hi) * (np.abs(oinv) @ w) / P + p1 ** 2 / P ** 2
    return h * (1 + rel), {"E": E}


@dataclass(frozen=True)
class RegionLeakage:
    """Certified upper bound of the leakage of region secrets on one coordinate through one set.

    Attributes
    ----------
    value : float
        Certified upper bound of the exact leakage (``inf`` when no finite bound is known).
    theorem9 : float
        Theorem 9's value for the same split (untruncated conditional and marginal,
        grid of 201 region positions): *not* a bound.
    node, conditioning, high : the split (coordinate i, conditioning set, H).
    details : Mapping
        ``bonferroni``, ``range`` (the two bounds), ``E_max`` (largest Bonferroni sum over H'),
        ``mu_interval``, ``sigma``, ``gap`` (certified minus best evaluated value of the bound function),
        ``marginal`` (the model's marginal option).
    """

    value: float
    theorem9: float
    node: int
    conditioning: tuple
    high: tuple
    details: Mapping = field(default_factory=dict)

    def __post_init__(self):
        freeze_record(self)  # details read-only

    def to_dict(self) -> dict:
        return {"value": json_float(self.value), "theorem9": json_float(self.theorem9), "node": self.node,
                "conditioning": list(self.conditioning), "high": list(self.high),
                "details": {k: (json_float(v) if isinstance(v, float) else v) for k, v in self.details.items()
                            if not isinstance(v, tuple)}}

    def explain(self) -> str:
        return (f"leakage of x_{self.node} through {len(self.conditioning)} coordinates (|H| = {len(self.high)}): "
                f"certified <= {self.value:.8g}; Theorem 9 gives {self.theorem9:.8g}")


class GaussianRegionModel:
    r"""A truncated Gaussian :math:`N(\mathrm{mean}, \mathrm{cov})` on a box with region secrets of width ``delta``.

    Validates once, then answers :meth:`leakage` queries for any :math:`(i, C, H)`.

    Parameters
    ----------
    cov : (n, n) array, symmetric positive definite
    lower, upper : float or (n,) arrays, upper > lower (finite)
    delta : float
        The region width :math:`\delta > 0`, with :math:`2 \delta \le \mathrm{upper}_i - \mathrm{lower}_i` for
        every secret coordinate :math:`i`.
    mean : (n,) array, optional (default 0)
    tol, atol : float, > 0
        Branch-and-bound tolerance: each maximisation stops within
        :math:`\max(\mathrm{atol}, \mathrm{tol}\,|\mathrm{value}|)` of a value met (the returned value is
        still an upper bound; the tolerance bounds its excess over the bound function).  A leakage is a
        sum of two such maximisations, so the branch-and-bound bounds have a floor near 2 ``atol``; the
        mixed range bound (:func:`mixed_range_bound`) needs no branch and bound and can go below it.
    options : ModelOptions, optional
        The pinned engines, the marginal bound and the cell engine's budget (:class:`ModelOptions`;
        default ``ModelOptions()``).  The resolved settings are also attributes of the model
        (``pinned_engines``, ``marginal``, ``cell_budget``, ``cell_seconds``, ``cell_target``,
        ``cell_checkpoint_dir``, ``cell_bonferroni``, ``cell_lazy_gap``), and so are ``sd``, the
        untruncated marginal standard deviations, and the regressions :meth:`regress` and
        :meth:`affine_range` that the leakage bounds read.
    """

    def __init__(self, cov, lower, upper, delta, mean=None, *, tol: float = 1e-5, atol: float = 1e-4,
                 options: ModelOptions | None = None):
        cov = np.asarray(cov, float)
        if cov.ndim != 2 or cov.shape[0] != cov.shape[1] or cov.shape[0] < 1 or not np.all(np.isfinite(cov)):
            raise PriorError("The covariance must be a finite square matrix.")
        n = cov.shape[0]
        if not np.allclose(cov, cov.T, rtol=1e-12, atol=1e-12 * float(np.max(np.abs(np.diag(cov))))):
            raise PriorError("The covariance matrix is not symmetric.")
        cov = (cov + cov.T) / 2
        try:
            np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            raise PriorError("The covariance matrix is not positive definite.") from None
        self.n = n
        self.cov = cov
        self.mean = np.zeros(n) if mean is None else np.broadcast_to(np.asarray(mean, float), (n,)).copy()
        self.lower = np.broadcast_to(np.asarray(lower, float), (n,)).copy()
        self.upper = np.broadcast_to(np.asarray(upper, float), (n,)).copy()
        if not (np.all(np.isfinite(self.mean)) and np.all(np.isfinite(self.lower)) and np.all(np.isfinite(self.upper))):
            raise PriorError("The mean and the truncation bounds must be finite numbers (the box must be bounded).")
        if not np.all(self.upper > self.lower):
            raise PriorError("Every truncation interval [lower, upper] must have upper > lower.")
        if not (isinstance(delta, (int, float, np.floating)) and math.isfinite(delta) and delta > 0):
            raise ParameterError(f"The 'delta' parameter must be a finite number > 0. Got {delta!r} instead.")
        self.delta = float(delta)
        self.tol = check_positive_finite(tol, "tol", "GaussianRegionModel")
        self.atol = check_positive_finite(atol, "atol", "GaussianRegionModel")
        if options is None:
            options = ModelOptions()
        if not isinstance(options, ModelOptions):
            raise ParameterError(f"The 'options' parameter of GaussianRegionModel must be a ModelOptions. "
                                 f"Got {type(options).__name__} instead.")
        self._set_options(options)
        self._marginal_box: dict = {}  # i -> TruncatedMarginal (box-probability bounds, cached across queries)
        self.cond = float(np.linalg.cond(cov))
        sd = np.sqrt(np.diag(cov))
        # marginal regressions x_k | x_i (for the marginal Bonferroni term), all pairs at once
        self._beta0 = cov / np.diag(cov)[None, :]          # [k, i] = Sigma_ki / Sigma_ii
        self._tau0 = np.sqrt(np.maximum(np.diag(cov)[:, None] - cov ** 2 / np.diag(cov)[None, :], 0.0))
        self.sd = sd  # the untruncated marginal standard deviations sqrt(Sigma_ii)

    def _set_options(self, options):
        """Validate the :class:`ModelOptions` and keep them as attributes."""
        self.options = options
        self.pinned_engines = bool(options.pinned_engines)
        self.cell_budget = check_nonnegative_int(options.cell_budget, "cell_budget", "GaussianRegionModel")
        cell_seconds = options.cell_seconds
        self.cell_seconds = (None if cell_seconds is None
                             else check_positive_finite(cell_seconds, "cell_seconds", "GaussianRegionModel"))
        cell_checkpoint_dir = options.cell_checkpoint_dir
        if cell_checkpoint_dir is not None and not isinstance(cell_checkpoint_dir, (str, os.PathLike)):
            raise ParameterError(f"The 'cell_checkpoint_dir' parameter must be None or a directory path. "
                                 f"Got {cell_checkpoint_dir!r} instead.")
        self.cell_checkpoint_dir = cell_checkpoint_dir
        cell_target = options.cell_target
        self.cell_target = (None if cell_target is None
                            else check_nonnegative_finite(cell_target, "cell_target", "GaussianRegionModel"))
        cell_bonferroni = options.cell_bonferroni
        if not isinstance(cell_bonferroni, (bool, np.bool_)):
            raise ParameterError(f"The 'cell_bonferroni' parameter must be True or False. Got {cell_bonferroni!r} "
                                 "instead.")
        self.cell_bonferroni = bool(cell_bonferroni)
        cell_lazy_gap = options.cell_lazy_gap
        if not (cell_lazy_gap is None or (isinstance(cell_lazy_gap, str) and cell_lazy_gap == "auto")):
            if isinstance(cell_lazy_gap, str):
                raise ParameterError(f"The 'cell_lazy_gap' parameter must be 'auto', None or a number >= 0. "
                                     f"Got {cell_lazy_gap!r} instead.")
            cell_lazy_gap = check_nonnegative_finite(cell_lazy_gap, "cell_lazy_gap", "GaussianRegionModel")
        self.cell_lazy_gap = cell_lazy_gap
        marginal = options.marginal
        if not (isinstance(marginal, str) and marginal in _MARGINAL_MODES):
            raise ParameterError(f"The 'marginal' parameter must be one of 'auto', 'bonferroni' or 'box'. "
                                 f"Got {marginal!r} instead.")
        self.marginal = marginal

    # ------------------------------------------------------------ helpers
    def _check_node(self, i):
        if not (0 <= i < self.n):
            raise ParameterError(f"Coordinate {i} is not in 0..{self.n - 1}.")
        if not self.upper[i] - self.lower[i] >= 2 * self.delta:
            raise ParameterError(
                f"Coordinate {i}'s support [{self.lower[i]:g}, {self.upper[i]:g}] is too short for two disjoint "
                f"regions of width {self.delta:g}.")

    def regress(self, targets, cond):
        r"""(:math:`\beta` [len(targets), len(cond)], residual variances, condition number of :math:`\Sigma_{CC}`)."""
        if len(cond) == 0:
            return np.zeros((len(targets), 0)), np.diag(self.cov)[targets].copy(), 1.0
        S = self.cov[np.ix_(cond, cond)]
        try:
            c = np.linalg.cholesky(S)
        except np.linalg.LinAlgError:
            raise PriorError("The covariance matrix restricted to the conditioning set is not positive "
                             "definite.") from None
        X = self.cov[np.ix_(cond, targets)]
        Z = np.linalg.solve(c, X)
        beta = np.linalg.solve(c.T, Z).T
        var = np.diag(self.cov)[targets] - np.sum(Z * Z, axis=0)
        return beta, var, float(np.linalg.cond(S))

    def affine_range(self, beta_row, cond):
        r"""Range of :math:`\sum_c \beta_c (x_c - m_c)` over the box of the conditioning coordinates."""
        if len(cond) == 0:
            return 0.0, 0.0
        d1 = beta_row * (self.lower[cond] - self.mean[cond])
        d2 = beta_row * (self.upper[cond] - self.mean[cond])
        return float(np.minimum(d1, d2).sum()), float(np.maximum(d1, d2).sum())

    # ------------------------------------------------------------ the bound
    def marginal_corrections(self, i: int):
        r"""(corr_num, corr_den) for the marginal of :math:`x_i` under the truncated prior.

        Both are callables of region cells :math:`[u_a, u_b]` (arrays; each cell covers every region
        :math:`[r, r + \delta]` inside it).  With :math:`G(t) = P(x_{-i} \in B_{-i} \mid x_i = t)` and
        :math:`N_0 = N(m_i, \Sigma_{ii})`, :math:`P_0(R) = N_0(R)\, P(x_{-i} \in B_{-i} \mid x_i \in R) / Z`, and

        * ``corr_num`` :math:`\ge -\log P(x_{-i} \in B_{-i} \mid x_i \in R)` (so
          :math:`P_0(R) \ge N_0(R) \exp(-\mathrm{corr\_num}) / Z`): the smaller of :math:`-\log(1 - E_0)`,
          :math:`E_0` the Bonferroni sum of the tails of every other coordinate given
          :math:`x_i \in [u_a, u_b]` (``inf`` when :math:`E_0 \ge 1`), and :math:`-\min(\log G(u_a), \log G(u_b))`
          (:math:`G` is log-concave, so its infimum over the cell is at an end), with certified lower bounds
          of :math:`\log G` from :math:`(n - 1)`-dimensional box probabilities;
        * ``corr_den`` :math:`\ge \log P(x_{-i} \in B_{-i} \mid x_i \in R')` (so
          :math:`P_0(R') \le N_0(R') \exp(\mathrm{corr\_den}) / Z`): the smallest of
          :math:`\log(1 - \max_k \inf \mathrm{tail}_k)`, 0, and the certified upper bound of the probability of
          the box expanded by the drift of the conditional mean over the cell,
          :math:`\prod_k [lo_k + \min(0, -c_k h), hi_k + \max(0, -c_k h)]`,
          :math:`c = \Sigma_{-i,i} / \Sigma_{ii}`, :math:`h = u_b - u_a` (:mod:`puffgm.gaussian.marginal`).

        Each term is a valid bound, so the minimum is.  The box terms are computed according to the
        model's ``marginal`` option (``"auto"``: on cells whose Bonferroni numerator term exceeds
        0.5 nats; ``"box"``: every cell; ``"bonferroni"``: never) and cached across queries.  Used
        by every engine of :meth:`leakage` and by :func:`puffgm.gaussian.monotone.corner_lower_bound`.
        """
        i = int(i)
        self._check_node(i)
        bonf_num, bonf_den = self._bonferroni_marginal(i)
        mode = self.marginal
        if mode == "bonferroni" or self.n < 2 or (mode == "auto" and self.n - 1 > _MARGINAL_AUTO_MAX_DIM):
            return bonf_num, bonf_den
        if mode == "auto":
            # gate (cost only; any choice is valid): windows of width 2 delta, stride delta / 2, cover
            # every cell the sweeps query; if Bonferroni's term stays at or below the threshold on all of
            # them, the one-dimensional callables are returned as they are
            w0 = np.arange(self.lower[i], self.upper[i] - 2 * self.delta, self.delta / 2)
            w0 = np.append(w0, self.upper[i] - 2 * self.delta)
            if not np.any(~(bonf_num(w0, w0 + 2 * self.delta) <= _MARGINAL_AUTO_THRESHOLD)):
                return bonf_num, bonf_den
        if i not in self._marginal_box:
            self._marginal_box[i] = TruncatedMarginal(self.cov, self.mean, self.lower, self.upper, i)
        tm = self._marginal_box[i]
        thr = -np.inf if mode == "box" else _MARGINAL_AUTO_THRESHOLD

        def pick(ua, ub):
            ua, ub = np.broadcast_arrays(np.asarray(ua, float), np.asarray(ub, float))
            b = bonf_num(ua, ub)
            return ua, ub, b, ~(b <= thr)  # NaN or inf: use the box bound as well

        def corr_num(ua, ub):
            ua, ub, b, sel = pick(ua, ub)
            out = np.array(b, float, copy=True)
            if np.any(sel):
                out[sel] = np.fmin(out[sel], tm.corr_num(ua[sel], ub[sel]))
            return out

        def corr_den(ua, ub):
            ua, ub, _, sel = pick(ua, ub)
            out = np.minimum(np.array(bonf_den(ua, ub), float, copy=True), 0.0)
            if np.any(sel):
                out[sel] = np.fmin(out[sel], tm.corr_den(ua[sel], ub[sel]))
            return out

        return corr_num, corr_den

    def _bonferroni_marginal(self, i):
        """The one-dimensional (Bonferroni) marginal corrections (see :meth:`marginal_corrections`)."""
        m_i = self.mean[i]
        ok = np.array([k for k in range(self.n) if k != i], dtype=int)
        if not ok.size:
            def zero(ua, ub):
                return np.zeros_like(ua)
            return zero, zero
        tau0 = self._tau0[ok, i].copy()
        tau0[tau0 <= 1e-13 * self.sd[ok]] = 0.0
        tails_m = ConditionalTails(self.mean[ok], self.mean[ok], self._beta0[ok, i], tau0, self.lower[ok],
                                   self.upper[ok])

        def corr_num(ua, ub):
            return neglog1m(bonferroni_sum(ua, ub, m_i, tails_m))

        def corr_den(ua, ub):
            """log of an upper bound of P(x_-i in box | x_i in [ua, ub]): 1 - max_k inf tail_k."""
            inf_tail = max_inf_tail(ua, ub, m_i, self.mean[ok], self._beta0[ok, i], tau0, self.lower[ok],
                                     self.upper[ok])
            with np.errstate(divide="ignore"):
                return np.log1p(-inf_tail)

        return corr_num, corr_den

    def leakage(self, i: int, cond, high=None, *, theorem9_grid: int = 201,
                pinned_engines: bool | None = None) -> RegionLeakage:
        r"""Certified upper bound of the leakage of region secrets on ``x_i`` through ``x_cond``.

        Parameters
        ----------
        i : int
            Secret coordinate.
        cond : sequence of int
            Conditioning set :math:`C` (must not contain :math:`i`).
        high : sequence of int, optional
            :math:`H'` = the other high-influence coordinates, truncated to their box and integrated
            out (default: every coordinate outside :math:`C` and :math:`i`, the general split of Definition 7).
            Coordinates in neither are integrated out *untruncated*: only valid when they are
            independent of :math:`x_H` given :math:`x_C` (a Markov-quilt remote set).
        theorem9_grid : int
            Region positions of the Theorem 9 value reported alongside (:meth:`theorem9`).
        pinned_engines : bool, optional
            Run the :math:`b \ge 3` engines for pinned splits (bivariate + Bonferroni hybrid; monotone engine;
            trivariate engine at :math:`b = 3`; the cell engine at :math:`b \ge 4` when the model's ``cell_budget`` > 0)
            when the Bonferroni sum is large; default: the model's setting.  Off, such splits
            keep the Bonferroni / range / precision-Lipschitz bound (often ``inf`` or loose).

        Returns
        -------
        RegionLeakage
            The smallest of the certified bounds (module docstring), widened for rounding.
        """
        i, cond, high = self._split_sets(i, cond, high)
        sp = _Split(self, i, cond, high)
        if sp.degenerate:
            return RegionLeakage(math.inf, math.inf, i, tuple(cond), tuple([i] + high),
                                 {"reason": "x_i is (numerically) determined by the conditioning set"})
        bonf, gap = sp.bonferroni_bound()
        rng = sp.range_bound()
        trunc = sp.truncated_block()
        lip = sp.lipschitz_bound(trunc)
        mixed = sp.mixed_bound(trunc)
        value = max(0.0, min(bonf, rng, lip, mixed))
        Emax = sp.e_max()
        eng = sp.pinned(Emax, self.pinned_engines if pinned_engines is None else pinned_engines)
        if eng["ran"]:
            value = max(0.0, min(value, eng["pinned"]))
        if math.isfinite(value):
            rel = 64 * EPS * max(self.cond, sp.cond_a, sp.cond_b) + 1e-12
            value = value * (1 + rel) + 1e-12
        th9 = self.theorem9(i, sp.mu_lo, sp.mu_hi, sp.sig, theorem9_grid)
        info_c = eng["info_c"]
        return RegionLeakage(value, th9, i, tuple(cond), tuple([i] + high),
                             {"bonferroni": bonf, "range": rng, "precision_lipschitz": lip, "mixed_range": mixed,
                              "bivariate": eng["pinned"],
                              "trivariate": eng["val3"], "hybrid": eng["hybrid"], "monotone": eng["val_m"],
                              "cells": eng["val_c"],
                              "cell_engine": {k: v for k, v in info_c.items() if k in ("cells", "stopped", "checkpoint",
                                                                                      "seconds")},
                              "bivariate_lower": eng["lower_b2"], "E_max": Emax, "mu_interval": (sp.mu_lo, sp.mu_hi),
                              "marginal": self.marginal, "sigma": sp.sig, "gap": gap})

    def _split_sets(self, i, cond, high):
        """(i, sorted C, sorted H') of a query, checked (see :meth:`leakage`)."""
        i = int(i)
        self._check_node(i)
        cond = sorted(int(c) for c in cond)
        if i in cond:
            raise ParameterError(f"The conditioning set must not contain the secret coordinate {i}.")
        if high is None:
            high = [k for k in range(self.n) if k != i and k not in cond]
        high = sorted(int(k) for k in high if int(k) != i)
        if set(high) & set(cond):
            raise ParameterError("The high-influence and conditioning sets overlap.")
        return i, cond, high

    def theorem9(self, i, mu_lo, mu_hi, sig, grid=201) -> float:
        r"""Theorem 9 as the paper computes it: sup over :math:`\mu \in [\mu_{lo}, \mu_{hi}]` of the conditional
        log ratio (:math:`x_i \mid x_C \sim N(\mu, \sigma^2)`) minus the untruncated marginal log ratio, on a grid
        of ``grid`` region positions (disjoint pairs; :func:`puffgm.gaussian.primitives.theorem9_sweep`)."""
        return theorem9_sweep((self.lower[i], self.upper[i]), self.delta, (self.mean[i], self.sd[i]), (mu_lo, mu_hi),
                              sig, grid)


class _Split:
    """One query (i, C, H') of :meth:`GaussianRegionModel.leakage`: the regressions of x_i on x_C and of
    x_H' on (x_i, x_C), the marginal corrections, and the bounds of the module docstring as steps."""

    def __init__(self, model, i, cond, high):
        self.model, self.i, self.cond, self.high = model, i, cond, high
        self.delta = model.delta
        self.lo_i, self.hi_i, self.m_i, self.s0 = model.lower[i], model.upper[i], model.mean[i], model.sd[i]
        # x_i | x_C
        beta_i, var_i, self.cond_a = model.regress([i], cond)
        self.var_i = float(var_i[0])
        self.degenerate = self.var_i <= 1e-13 * model.cov[i, i]
        if self.degenerate:
            return
        self.sig = math.sqrt(self.var_i)
        a_lo, a_hi = model.affine_range(beta_i[0], cond)
        self.mu_lo, self.mu_hi = self.m_i + a_lo, self.m_i + a_hi
        # x_k | x_i, x_C for k in H'
        if high:
            beta_k, var_k, self.cond_b = model.regress(high, [i] + cond)
            tau_k = np.sqrt(np.maximum(var_k, 0.0))
            tau_k = np.where(var_k <= 1e-13 * np.diag(model.cov)[high], 0.0, tau_k)
            base_k = np.array([model.affine_range(beta_k[t, 1:], cond) for t in range(len(high))])
            base_k = base_k + model.mean[high][:, None]
            self.base_k, self.slope_k = base_k, beta_k[:, 0]
            hk = np.array(high)
            self.tails_c = ConditionalTails(base_k[:, 0], base_k[:, 1], self.slope_k, tau_k, model.lower[hk],
                                            model.upper[hk])
        else:
            self.cond_b = 1.0
        self.corr_num, self.marg_den = model.marginal_corrections(i)

    # ------------------------------------------------------------ corrections of a region cell [ua, ub]
    def e_cond(self, ua, ub):
        """The Bonferroni sum E of H' given x_i in [ua, ub] and any x_C."""
        return bonferroni_sum(ua, ub, self.m_i, self.tails_c)

    def corr_den(self, ua, ub):
        """Denominator region: Bonferroni on H' and the marginal's upper bound."""
        out = self.marg_den(ua, ub)
        return out + neglog1m(self.e_cond(ua, ub)) if self.high else out

    def corr_range(self, ua, ub):
        return neglog1m(self.e_cond(ua, ub))

    def e_max(self):
        """The largest Bonferroni sum of H' over the support of x_i (0 without H')."""
        return float(np.max(self.e_cond(np.array([self.lo_i]), np.array([self.hi_i])))) if self.high else 0.0

    def maximise(self, terms, efun):
        """Certified max over r in [lo_i, hi_i - delta] of
        F(r) + efun(r),  F(r) = sum_t s_t log N([r, r + delta]; mu_t, sig_t),
        efun a correction term (e.g. -log(1 - E) for a Bonferroni sum E, inf when E >= 1).

        k(r) = log N([r, r + delta]; mu, sig) has k'' in [-1 / sig^2, 0] (the variance of a
        truncated normal lies in [0, sig^2]), so F'' >= -C with C = sum_{s_t > 0} s_t / sig_t^2;
        F minus its chord on a cell [ra, rb] of width h then has second derivative >= -C and
        vanishes at both ends, so it is at most C h^2 / 8: F <= max(F(ra), F(rb)) + C h^2 / 8.  The Bonferroni sum is
        bounded on the cell by its value on the union [ra, rb + delta].
        Returns (certified upper bound, best value met at a cell end)."""
        delta = self.delta
        C = sum(s / sg ** 2 for s, _, sg in terms if s > 0)

        def F(r):
            out = np.zeros_like(r)
            for s, mu, sg in terms:
                out += s * log_interval_prob(r, r + delta, mu, sg)
            return out

        sweep = RegionSweep(self.lo_i, self.hi_i, delta, self.model.tol, self.model.atol, iters=80, max_cells=200000)
        return certified_region_max(sweep, F, C, efun)

    def _orientations(self):
        """The ends of the range of the conditional mean of x_i where the sup over mu is attained."""
        return (self.mu_hi, self.mu_lo) if self.mu_hi > self.mu_lo else (self.mu_hi,)

    # ------------------------------------------------------------ the bounds
    def bonferroni_bound(self):
        """Bound 1 (Bonferroni on H' and on the marginal): (value, gap to the values met).  The sup over mu
        of a pair's log ratio is at mu_lo or mu_hi: max over both orientations."""
        sig, m_i, s0 = self.sig, self.m_i, self.s0
        bonf, gap = -math.inf, 0.0
        for mu_o in self._orientations():
            u1, v1 = self.maximise([(1, mu_o, sig), (-1, m_i, s0)], self.corr_num)
            u2, v2 = self.maximise([(-1, mu_o, sig), (1, m_i, s0)], self.corr_den)
            if u1 + u2 > bonf:
                bonf, gap = u1 + u2, (u1 - v1) + (u2 - v2)
        return bonf, gap

    def range_bound(self):
        """Bound 2 (range over mu; the marginal ratio is at least the smallest conditional ratio)."""
        sig, mu_lo, mu_hi = self.sig, self.mu_lo, self.mu_hi
        e_c = self.corr_range if self.high else None
        if mu_hi > mu_lo:
            u1, v1 = self.maximise([(1, mu_hi, sig), (-1, mu_lo, sig)], e_c)
            u2, v2 = self.maximise([(-1, mu_hi, sig), (1, mu_lo, sig)], e_c)
            return u1 + u2
        u1, _ = self.maximise([], e_c)
        return 2 * u1

    def truncated_block(self):
        """(TruncatedBlock of x_H' given (x_i, x_C), spread of its mean over the box of x_C): Omega =
        Cov(x_H' | x_i, x_C) and the box hull [nu_lo, nu_hi] of its mean (empty without H')."""
        model, high = self.model, self.high
        empty = np.zeros(0)
        omega, spread, nu_lo, nu_hi = np.zeros((0, 0)), empty, empty, empty
        if high:
            cp = [self.i] + self.cond
            omega = model.cov[np.ix_(high, high)] - model.cov[np.ix_(high, cp)] @ np.linalg.solve(
                model.cov[np.ix_(cp, cp)], model.cov[np.ix_(cp, high)])
            omega = (omega + omega.T) / 2
            slope_k, base_k = self.slope_k, self.base_k
            e1, e2 = slope_k * (self.lo_i - self.m_i), slope_k * (self.hi_i - self.m_i)
            nu_lo = base_k[:, 0] + np.minimum(e1, e2)
            nu_hi = base_k[:, 1] + np.maximum(e1, e2)
            spread = base_k[:, 1] - base_k[:, 0]
        return TruncatedBlock(omega, nu_lo, nu_hi, model.lower[high], model.upper[high]), spread

    def lipschitz_bound(self, trunc):
        """Bound 3 (precision-Lipschitz): t -> log P(x_H' in T | x_i = t, x_C) has derivative
        gamma . (E_T[y] - nu), gamma = S'^-1 beta_i (= -Q_{H', i} for the precision Q of (x_i, x_H', x_C)),
        E_T[y] in the box T and nu = E[x_H' | x_i = t, x_C] in its range, so it moves by at most
        L_T |x - x'| between x in R and x' in R' (|x - x'| <= hi_i - lo_i): finite even when x_H' is pinned."""
        if not self.high:
            return math.inf
        block, _ = trunc
        sig, m_i, s0 = self.sig, self.m_i, self.s0
        upper, lower = self.model.upper[self.high], self.model.lower[self.high]
        try:
            gamma = np.linalg.solve(block.omega, self.slope_k)
            D = np.maximum(upper - block.nu_lo, block.nu_hi - lower)
            LT = float(np.sum(np.abs(gamma) * np.maximum(D, 0.0)))
            b3 = -math.inf
            for mu_o in self._orientations():
                u1, _ = self.maximise([(1, mu_o, sig), (-1, m_i, s0)], self.corr_num)
                u2, _ = self.maximise([(-1, mu_o, sig), (1, m_i, s0)], self.marg_den)
                b3 = max(b3, u1 + u2)
            return b3 + LT * (self.hi_i - self.lo_i)
        except np.linalg.LinAlgError:
            return math.inf

    def mixed_bound(self, trunc):
        """Bound 4 (mixed-derivative range): sup - inf of the conditional log ratio over x_C, the
        truncation term through the mixed derivative d^2 log P(x_H' in T) / dt dx_C (mixed_range_bound)."""
        block, spread = trunc
        slope = self.slope_k if self.high else np.zeros(0)
        mixed, _ = mixed_range_bound(block, slope, spread, self.hi_i - self.lo_i, self.mu_hi - self.mu_lo,
                                     self.var_i, self.delta)
        return mixed

    # ------------------------------------------------------------ the pinned engines
    def pinned(self, Emax, run_engines):
        """The engines for pinned splits (module docstring): b = 2 the bivariate engine when E > 0.2; b >= 3
        (with ``run_engines``, a nonempty C: an empty conditioning set leaks nothing, the curves set
        a(n) = 0 themselves) the hybrid, the monotone engine, the trivariate engine at b = 3 and the cell
        engine at b >= 4.  Returns their values, ``pinned`` the smallest and ``ran`` whether any ran."""
        model, high = self.model, self.high
        eng = {"ran": False, "pinned": math.inf, "lower_b2": -math.inf, "val3": math.inf, "hybrid": math.inf,
               "val_m": math.inf, "val_c": math.inf, "info_c": {}}
        opts = PinnedOptions(tol=max(model.tol, 1e-3), atol=max(model.atol, 1e-3))
        if len(high) == 1 and Emax > 0.2:
            # b = 2 with the other coordinate possibly pinned: certified bivariate computation
            pinned, pinfo = pinned_pair_leakage(model, self.i, high[0], self.cond, self.corr_num, self.marg_den,
                                                opts)
            eng.update(ran=True, pinned=pinned, lower_b2=pinfo.get("lower", -math.inf))
        elif len(high) >= 2 and Emax > 0.2 and self.cond and run_engines:
            eng["ran"] = True
            self._hybrid(eng, opts)
            self._engines_b3(eng, opts)
        return eng

    def _hybrid(self, eng, opts):
        """b >= 3, (a): one other coordinate p by the certified bivariate engine on (x_i, x_p) given x_C (the
        rest integrated out untruncated), the rest by Bonferroni given x_i, x_p and x_C:
        N(R, T_p, T_U) <= N(R, T_p) and N(R', T_p, T_U) >= N(R', T_p) (1 - E_U(R')),
        E_U(R') = sum_{k in U} sup of the tail of x_k over x_i in R', x_p in T_p, x_C in the box
        (quasi-convexity: at an end of the mean's range)."""
        model, i, cond, high, delta = self.model, self.i, self.cond, self.high, self.delta
        lo_i, hi_i = self.lo_i, self.hi_i
        grid = np.linspace(lo_i, hi_i - delta, max(16, int(math.ceil(2 * (hi_i - lo_i - delta) / delta))) + 1)
        for p_ in high:
            rest = [k for k in high if k != p_]
            beta_r, var_r, cond_r = model.regress(rest, [i, p_] + cond)
            tau_r = np.where(var_r <= 1e-13 * np.diag(model.cov)[rest], 0.0, np.sqrt(np.maximum(var_r, 0.0)))
            base_r = np.array([model.affine_range(beta_r[t, 1:], [p_] + cond) for t in range(len(rest))])
            base_r = base_r + model.mean[rest][:, None]
            tails_r = ConditionalTails(base_r[:, 0], base_r[:, 1], beta_r[:, 0], tau_r, model.lower[rest],
                                       model.upper[rest])
            if float(np.max(bonferroni_sum(grid[:-1], grid[1:] + delta, self.m_i, tails_r))) >= 1:
                continue  # some denominator region has no finite Bonferroni term

            def corr_den_rest(ua, ub, _t=tails_r):
                return self.marg_den(ua, ub) + neglog1m(bonferroni_sum(ua, ub, self.m_i, _t))

            val_p, _ = pinned_pair_leakage(model, i, p_, cond, self.corr_num, corr_den_rest, opts)
            self.cond_b = max(self.cond_b, cond_r)
            eng["hybrid"] = min(eng["hybrid"], val_p)
            if val_p < eng["pinned"]:
                eng["pinned"] = val_p

    def _engines_b3(self, eng, opts):
        """b >= 3, (b) the monotone engine (a sign-balanced conditional precision: Markov chains, trees;
        Lambda is monotone in the natural parameters, so the sup over x_C is at one point per orientation);
        without it, (c) at b = 3 the certified trivariate engine and (d) at b >= 4 the cell branch and bound
        over the natural parameters of x_H' (at most the model's ``cell_budget`` cells)."""
        model, i, cond, high = self.model, self.i, self.cond, self.high
        val_m, info_m = monotone_leakage(model, i, high, cond, self.corr_num, self.marg_den, opts)
        eng["val_m"] = val_m
        if math.isfinite(val_m):
            eng["lower_b2"] = max(eng["lower_b2"], info_m.get("lower", -math.inf))
            eng["pinned"] = min(eng["pinned"], val_m)
        if len(high) == 2 and not math.isfinite(val_m):
            val3, info3 = pinned_triple_leakage(model, i, high, cond, self.corr_num, self.marg_den,
                                                replace(opts, give_up_above=eng["pinned"]))
            eng["val3"] = val3
            eng["lower_b2"] = info3.get("lower", -math.inf)
            eng["pinned"] = min(eng["pinned"], val3)
        if len(high) >= 3 and not math.isfinite(val_m) and model.cell_budget > 0:
            cells = CellOptions(atol=max(model.atol, 1e-3), max_cells=model.cell_budget,
                                max_seconds=model.cell_seconds, target=model.cell_target,
                                checkpoint_dir=model.cell_checkpoint_dir, bonferroni=model.cell_bonferroni,
                                lazy_gap=model.cell_lazy_gap)
            val_c, info_c = cell_leakage(model, i, high, cond, self.corr_num, self.marg_den, cells)
            eng["val_c"], eng["info_c"] = val_c, info_c
            eng["lower_b2"] = max(eng["lower_b2"], info_c.get("lower", -math.inf))
            eng["pinned"] = min(eng["pinned"], val_c)


def region_leakage(cov, lower, upper, delta, i, cond, high=None, **model_options) -> RegionLeakage:
    """One-shot :meth:`GaussianRegionModel.leakage` (see the module docstring).

    ``model_options`` are the keywords of :class:`GaussianRegionModel` (``mean``, ``tol``, ``atol``,
    ``options``)."""
    return GaussianRegionModel(cov, lower, upper, delta, **model_options).leakage(i, cond, high)
