r"""Query-specific calibration from exact conditional laws: the Wasserstein mechanism and the optimal Laplace scale.

For a sum query :math:`F` (:mod:`puffgm.core.query`) and a prior class :math:`\Theta`, let
:math:`\mu_{i,a,\theta}` be the law of :math:`F` given :math:`X_i = a` under :math:`\theta`.  Two calibrations
use these laws (every prior kind that can compute them provides a
:class:`QueryLaws`):

* **Wasserstein mechanism** (Song, Wang and Chaudhuri, "Pufferfish Privacy
  Mechanisms for Correlated Data", SIGMOD 2017, arXiv:1603.03977, section 3,
  Algorithm 1 and Theorem 3.2):

  $$
  W = \max_{\theta,\ i,\ (a, b) \,:\, P(X_i = a), P(X_i = b) > 0} W_\infty(\mu_{i,a,\theta}, \mu_{i,b,\theta}),
  $$

  and :math:`F + \mathrm{Lap}(W / \epsilon)` is :math:`\epsilon`-Pufferfish private.
* **Optimal Laplace scale**: the smallest :math:`b` with

  $$
  \mathrm{loss}(b) = \max_{\theta,\ i,\ (a, a')} \sup_w \left| \log \frac{f_{i,a}(w)}{f_{i,a'}(w)} \right| \le \epsilon,
  $$

  where :math:`f_{i,a} = \mu_{i,a,\theta} * \mathrm{Lap}(b)` is the output density.  :math:`\mathrm{Laplace}(b_2)`
  is :math:`\mathrm{Laplace}(b_1)` convolved with a probability law for :math:`b_2 > b_1` (its
  characteristic function ratio :math:`(1 + b_1^2 t^2) / (1 + b_2^2 t^2)` is that of the
  mixture :math:`\frac{b_1^2}{b_2^2} \delta_0 + (1 - \frac{b_1^2}{b_2^2}) \mathrm{Lap}(b_2)`), so the loss is
  non-increasing in :math:`b` and bisection finds the threshold.  As the loss is a max
  over priors, the threshold of the class is the max over priors of each
  prior's own threshold.

Both work on the integer grid of the query (the laws are log-probabilities on
0..total), in log space throughout:

* :math:`W_\infty` of laws on the integers is the least :math:`w` with :math:`F_a(s) \le F_b(s + w)` and
  :math:`F_b(s) \le F_a(s + w)` for all :math:`s` (the quantile coupling); each inequality is
  compared on log-CDFs where the smaller side is at most 1/2 and on log
  survival functions otherwise, so an atom of :math:`10^{-300}` or :math:`10^{-3000}` (a log-mass)
  counts like any other (an essential supremum ignores only null sets).
* The loss: on each interval between grid points :math:`f_{i,a}/f_{i,a'}` is a Moebius
  function of :math:`e^{2w/b}`, so the supremum is attained at a grid point or in the
  limits :math:`w \to \pm\infty` (Song et al. section 3; the same argument as
  :func:`puffgm.framework.audit.audit_laplace`).  The mixture at every grid
  point comes from two one-sided log-space recursions (left sums
  ``l(s) = logaddexp(l(s-1) - 1/b, log mu(s))`` and the mirror), so every tail
  keeps its relative precision; the limits are the ends of those recursions.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from puffgm.core.accuracy import laplace_rows
from puffgm.core.laws import QueryLaws
from puffgm.core.noise import check_resolves, resolve_noise
from puffgm.core.prior import QUERY_METHODS
from puffgm.core.query import BoundQuery
from puffgm.core.records import RecordLayout
from puffgm.core.release import CalibratedRelease, jsonable, make_release, wrong_calibration
from puffgm.core.witness import Witness
from puffgm.exceptions import AuditError, NumericalError, ParameterError, PuffgmError, TimeLimitError, first_line

__all__ = [
    "w_inf_lattice", "w_inf_near", "log_cdf_sf", "coupled_within", "laplace_log_density",
    "laplace_losses", "ExactLoss", "LeastScale",
    "wasserstein_of", "laplace_loss_of", "optimal_laplace_of", "loss_resolution", "check_resolvable",
    "RESOLUTION_FACTOR", "QueryCalibration", "QueryRelease",
    "release_query", "answer_in_range", "least_passing", "mqm_scale", "QUERY_METHODS", "W_RTOL", "THEOREM_WASSERSTEIN",
    "THEOREM_OPTIMAL_LAPLACE",
]

#: Relative tolerance of the W_inf comparisons, on log-probabilities: inequalities between cumulative
#: masses that agree to 1e-10 relative are rounding of equalities (conditional laws of symmetric
#: nodes coincide in exact arithmetic); a genuine gap of any absolute size is never ignored.
W_RTOL = 1e-10

THEOREM_WASSERSTEIN = "Song, Wang and Chaudhuri 2017, Algorithm 1 and Theorem 3.2 (Wasserstein mechanism)"
THEOREM_OPTIMAL_LAPLACE = ("exact Pufferfish loss of F + Lap(b) from the conditional laws of F "
                           "(Kifer and Machanavajjhala, Definition 3.1), minimised over b")

_HALF = math.log(0.5)

#: The exact loss decides epsilon only from RESOLUTION_FACTOR times its rounding error up
#: (:func:`check_resolvable`): the rounding is then at most 0.1% of epsilon, and the optimal scale
#: keeps that rounding as a margin below epsilon.
RESOLUTION_FACTOR = 1e3


# ------------------------------------------------------------------ W_inf


def log_cdf_sf(rows: np.ndarray):
    r""":math:`\log P(G \le s)` and :math:`\log P(G > s)` of every row, both accumulated from their own side."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lc = np.logaddexp.accumulate(rows, axis=-1)
        tail = np.logaddexp.accumulate(rows[..., ::-1], axis=-1)[..., ::-1]
    ls = np.full_like(rows, -np.inf)
    ls[..., :-1] = tail[..., 1:]
    return lc, ls


def _cdf_leq(lc_x, ls_x, lc_y, ls_y, rtol: float) -> np.ndarray:
    """Elementwise F_x <= F_y (to ``rtol`` relative), compared on the side where it is accurate."""
    by_cdf = (lc_x <= _HALF) | (lc_y <= _HALF)
    with np.errstate(invalid="ignore"):
        cdf_ok = lc_x <= lc_y + rtol
        sf_ok = ls_x >= ls_y - rtol
    return np.where(by_cdf, cdf_ok, sf_ok)


def coupled_within(cs_a, cs_b, w: int, rtol: float) -> Any:  # a bool array (a numpy bool for one pair)
    """For each pair of rows: is there a coupling moving no mass farther than w grid steps?"""
    lca, lsa = cs_a
    lcb, lsb = cs_b
    n = lca.shape[-1]
    if w >= n - 1:
        return np.ones(lca.shape[:-1], dtype=bool)
    m = n - w
    ok = _cdf_leq(lca[..., :m], lsa[..., :m], lcb[..., w:], lsb[..., w:], rtol)
    ok &= _cdf_leq(lcb[..., :m], lsb[..., :m], lca[..., w:], lsa[..., w:], rtol)
    return ok.all(axis=-1)


def w_inf_lattice(log_a, log_b, *, rtol: float = W_RTOL) -> np.ndarray:
    r"""Infinity-Wasserstein distance between laws on the integers :math:`0, \dots, n-1`, from their log-probabilities.

    :math:`W_\infty(\mu, \nu) = \operatorname{ess\,sup}_u |F_\mu^{-1}(u) - F_\nu^{-1}(u)|` (Song et al.,
    Definition 3.1) is the least integer :math:`w` with :math:`F_\mu(s) \le F_\nu(s + w)` and
    :math:`F_\nu(s) \le F_\mu(s + w)` for every :math:`s`.

    Parameters
    ----------
    log_a, log_b : array_like, shape (..., n)
        Log-probabilities (``-inf`` for 0); each row sums to 1.  Leading axes
        are pairs, compared row by row.
    rtol : float
        Relative tolerance of each comparison of cumulative masses (see :data:`W_RTOL`).

    Returns
    -------
    ndarray of int
        :math:`W_\infty` of each pair of rows, in grid steps.

    Examples
    --------
    The flu example of Song et al. section 3:

    >>> import numpy as np
    >>> with np.errstate(divide="ignore"):
    ...     a = np.log([0.2, 0.225, 0.5, 0.075, 0.0]); b = np.log([0.0, 0.075, 0.5, 0.225, 0.2])
    >>> int(w_inf_lattice(a, b))
    2
    >>> with np.errstate(divide="ignore"):   # an atom of 1e-320 (log-mass -737) still counts
    ...     int(w_inf_lattice(np.array([0.0, -np.inf, -np.inf]), np.array([0.0, -np.inf, -737.0])))
    2
    """
    la, lb = np.broadcast_arrays(np.asarray(log_a, dtype=float), np.asarray(log_b, dtype=float))
    cs_a, cs_b = log_cdf_sf(la), log_cdf_sf(lb)
    n = la.shape[-1]
    lo = np.zeros(la.shape[:-1], dtype=np.int64)
    hi = np.full(la.shape[:-1], n - 1, dtype=np.int64)
    while np.any(lo < hi):  # least w that holds, by bisection on each row (the condition is monotone in w)
        mid = (lo + hi) // 2
        ok = np.empty(mid.shape, dtype=bool)
        for w in np.unique(mid):
            sel = mid == w
            ok[sel] = coupled_within((cs_a[0][sel], cs_a[1][sel]), (cs_b[0][sel], cs_b[1][sel]), int(w), rtol)
        hi = np.where(ok & (lo < hi), mid, hi)
        lo = np.where(~ok & (lo < hi), mid + 1, lo)
    return lo


def w_inf_near(log_a: np.ndarray, log_b: np.ndarray, guess: int, *, rtol: float = W_RTOL) -> int:
    r""":math:`W_\infty` of one pair of laws (as :func:`w_inf_lattice`), searched outward from ``guess``.

    Useful along a chain, where :math:`W_\infty` changes little from one position to the
    next: the search tests ``guess``, then walks (by doubling steps, then
    bisection) to the least w for which a coupling exists; the answer does not
    depend on the guess.
    """
    cs_a, cs_b = log_cdf_sf(log_a[None]), log_cdf_sf(log_b[None])
    n = log_a.shape[-1]

    def holds(w):
        (ok,) = coupled_within(cs_a, cs_b, int(w), rtol)  # one pair
        return bool(ok)

    g = min(max(int(guess), 0), n - 1)
    if holds(g):  # gallop down: lo fails (or is -1), hi holds
        hi, step, lo = g, 1, g - 1
        while lo >= 0 and holds(lo):
            hi, step = lo, step * 2
            lo = hi - step
        lo = max(lo, -1)
    else:  # gallop up; w = n - 1 always holds
        lo, step, hi = g, 1, min(g + 1, n - 1)
        while not holds(hi):
            lo, step = hi, step * 2
            hi = min(hi + step, n - 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid
    return hi


# ------------------------------------------------------------------ Laplace loss


def laplace_log_density(rows: np.ndarray, scale: float):
    r""":math:`\log \sum_g \mu(g) \exp(-|w - g| / b)` at every grid point :math:`w`, and the two limits.

    Here :math:`b` is ``scale`` and :math:`\mu` the law of a row.

    With :math:`l(s) = \log \sum_{g \le s} \mu(g)\, e^{-(s-g)/b}` and
    :math:`r(s) = \log \sum_{g \ge s} \mu(g)\, e^{-(g-s)/b}` (one-sided log-space
    recursions), the mixture at :math:`s` is ``logaddexp(l(s), r(s+1) - 1/scale)``.

    Parameters
    ----------
    rows : ndarray (n_rows, n)
        Log-probabilities of laws on 0..n-1.
    scale : float
        Laplace scale in grid units (> 0).

    Returns
    -------
    dens : ndarray (n_rows, n)
        The log mixture (without the common factor :math:`1/(2b)`) at :math:`w = 0, \dots, n-1`.
    up, down : ndarray (n_rows,)
        ``l(n-1)`` and ``r(0)``: the mixture times :math:`e^{(w-(n-1))/b}` as :math:`w \to +\infty`
        and times :math:`e^{-w/b}` as :math:`w \to -\infty`; their differences between two laws are
        the limits of the log ratio.
    """
    step = -1.0 / scale
    n = rows.shape[1]
    left = np.empty_like(rows)
    right = np.empty_like(rows)
    left[:, 0] = rows[:, 0]
    right[:, n - 1] = rows[:, n - 1]
    for s in range(1, n):
        left[:, s] = np.logaddexp(left[:, s - 1] + step, rows[:, s])
        right[:, n - 1 - s] = np.logaddexp(right[:, n - s] + step, rows[:, n - 1 - s])
    dens = left.copy()
    dens[:, : n - 1] = np.logaddexp(left[:, : n - 1], right[:, 1:] + step)
    return dens, left[:, n - 1], right[:, 0]


def _abs_diff(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        d = np.abs(x - y)
    return np.where(np.isnan(d), np.inf, d)


def laplace_losses(rows: np.ndarray, pairs: np.ndarray, scale: float):
    r"""Exact Pufferfish loss of F + Lap(scale) for each pair of rows, and where it is attained.

    Parameters
    ----------
    rows : ndarray (n_rows, n)
        Log-probabilities of the conditional laws on the grid 0..n-1.
    pairs : ndarray of int (n_pairs, 2)
        Row indices of the two laws of each pair.
    scale : float
        Laplace scale in grid units.

    Returns
    -------
    loss : ndarray (n_pairs,)
        max over grid points and the limits :math:`w \to \pm\infty` of :math:`|\log f_a(w) / f_b(w)|`,
        which is the supremum over all outputs (the ratio is monotone between grid points).
    where : ndarray (n_pairs,)
        The maximising output: a grid point, or +-inf.
    """
    dens, up, down = laplace_log_density(rows, scale)
    a, b = pairs[:, 0], pairs[:, 1]
    all_d = np.concatenate([_abs_diff(dens[a], dens[b]), _abs_diff(up[a], up[b])[:, None],
                            _abs_diff(down[a], down[b])[:, None]], axis=1)
    k = np.argmax(all_d, axis=1)
    n = rows.shape[1]
    where = np.where(k < n, k.astype(float), np.where(k == n, np.inf, -np.inf))
    return all_d[np.arange(len(k)), k], where


def wasserstein_of(laws: QueryLaws):
    """W in grid units, with its witness and the maximum per prior (Song et al., Algorithm 1)."""
    per_prior = [0] * laws.n_priors
    if not laws.exact:
        best, witness = 0, None
        for t, node, a, b, w in laws.w_bounds:
            per_prior[t] = max(per_prior[t], int(w))
            if witness is None or w > best:
                best, witness = int(w), Witness(prior=t, node=node, pair=(a, b))
        return best, witness, tuple(per_prior)
    rows, pairs, labels = laws.stacked()
    if not len(pairs):
        return 0, None, tuple(per_prior)
    w = w_inf_lattice(rows[pairs[:, 0]], rows[pairs[:, 1]])
    for lab, v in zip(labels, w, strict=True):
        per_prior[lab.prior] = max(per_prior[lab.prior], int(v))
    k = int(np.argmax(w))
    return int(w[k]), labels[k], tuple(per_prior)


class ExactLoss(NamedTuple):
    """The exact Pufferfish loss of a release over the class, with where it is reached.

    Attributes
    ----------
    loss : float
        The largest loss over every prior, node and pair of secrets.
    witness : Witness or None
        Where ``loss`` is reached (prior, node, pair, output in grid units, may be +-inf); None with no pair.
    per_prior : tuple
        The largest loss of each prior.
    """

    loss: float
    witness: Witness | None
    per_prior: tuple


class LeastScale(NamedTuple):
    """The least noise scale whose exact loss passes, from a bisection (:func:`least_passing`).

    Attributes
    ----------
    scale : float
        The scale found (grid units, or the workload's common factor).
    loss : float
        Its exact loss.
    witness : Witness or None
        Where ``loss`` is reached.
    per_prior : tuple
        The loss of each prior at ``scale``.
    evaluations : int
        How many exact losses the search computed.
    """

    scale: float
    loss: float
    witness: Witness | None
    per_prior: tuple
    evaluations: int


def _loss_at(rows, pairs, labels, n_priors: int, scale: float):
    """The :class:`ExactLoss` of F + Lap(scale) on stacked laws; scale 0 is the exact answer."""
    if scale > 0:
        loss, where = laplace_losses(rows, pairs, scale)
    else:
        d = _abs_diff(rows[pairs[:, 0]], rows[pairs[:, 1]])
        both_zero = ~np.isfinite(rows[pairs[:, 0]]) & ~np.isfinite(rows[pairs[:, 1]])
        d = np.where(both_zero, 0.0, d)
        k = np.argmax(d, axis=1)
        loss, where = d[np.arange(len(k)), k], k.astype(float)
    return worst_loss(labels, loss, where, n_priors)


def worst_loss(labels, loss, where, n_priors: int) -> ExactLoss:
    """The :class:`ExactLoss` of per-pair losses: the largest, its witness at its output, and each prior's largest."""
    per_prior = [0.0] * n_priors
    for lab, v in zip(labels, loss, strict=True):
        per_prior[lab.prior] = max(per_prior[lab.prior], float(v))
    k = int(np.argmax(loss))
    return ExactLoss(float(loss[k]), replace(labels[k], output=float(where[k])), tuple(per_prior))


def exact_stacked(laws: QueryLaws):
    """``laws.stacked()`` for an exact loss, refused when the laws are not exact."""
    if not laws.exact:
        raise ParameterError("The exact loss needs the exact conditional laws, which were not computed.")
    return laws.stacked()


def laplace_loss_of(laws: QueryLaws, scale: float):
    """Exact loss of F + Lap(scale) over the class (scale in grid units; 0 releases F exactly).

    Returns
    -------
    ExactLoss
        (loss, witness, per_prior); witness is a :class:`~puffgm.core.witness.Witness` (prior, node, pair, output in
        grid units, may be +-inf).
    """
    rows, pairs, labels = exact_stacked(laws)
    if not len(pairs):
        return ExactLoss(0.0, None, (0.0,) * laws.n_priors)
    return _loss_at(rows, pairs, labels, laws.n_priors, float(scale))


def loss_resolution(laws: QueryLaws, *, epsilon: float = 0.0) -> float:
    r"""An upper estimate of the rounding error of the computed exact loss near ``epsilon``.

    The loss is a difference of two log-densities, each the end of an n-step log-space
    recursion (:func:`laplace_log_density`) over values no larger in magnitude than the
    largest finite |log-probability| of the laws plus the loss itself; each step rounds by
    an ulp or two.  The laws' total masses also differ from 1 by rounding.  Estimate:

    $$
    4 n\, 2^{-52} \left(1 + \max |\log p| + \epsilon\right) + \max_{\text{rows}} \left|\log \textstyle\sum p\right|.
    $$

    Parameters
    ----------
    laws : QueryLaws
        Exact laws.
    epsilon : float
        The loss level at which the error is wanted (the error grows with the loss).

    Returns
    -------
    float
        The estimate, in nats.
    """
    rows, _, _ = laws.stacked()
    finite = rows[np.isfinite(rows)]
    if not finite.size:
        return 0.0
    mass = np.abs(np.logaddexp.reduce(rows, axis=1))
    return float(4 * rows.shape[1] * 2.0**-52 * (1.0 + np.abs(finite).max() + epsilon) + mass.max())


def check_resolvable(laws: QueryLaws, *, epsilon: float, scale_per_epsilon: float) -> float:
    r"""The resolution of the exact loss (:func:`loss_resolution`), or NumericalError if :math:`\epsilon` is below it.

    ``scale_per_epsilon`` (:math:`W` in grid units) only makes the message name the Laplace scale that
    :math:`\epsilon` would need.  Double precision cannot decide :math:`\mathrm{loss} \le \epsilon` when
    :math:`\epsilon` is within RESOLUTION_FACTOR of the rounding of the loss, however large the scale.
    """
    res = loss_resolution(laws)
    if epsilon < RESOLUTION_FACTOR * res:
        need = (f"the Laplace scale would be about {scale_per_epsilon / epsilon:.3g} grid units; "
                if scale_per_epsilon > 0 else "")
        raise NumericalError(
            f"epsilon = {epsilon:g} is below what the exact loss of this query can resolve in double precision "
            f"(about {res:.1e}, so epsilon must be at least {RESOLUTION_FACTOR * res:.1e}): {need}"
            "MQM (--method exact) takes any epsilon.")
    return loss_resolution(laws, epsilon=epsilon)


def optimal_laplace_of(laws: QueryLaws, *, epsilon: float, upper: float, rtol: float = 1e-6,
                       deadline: float | None = None):
    r"""The smallest Laplace scale (grid units) whose exact loss is at most :math:`\epsilon`, to ``rtol`` relative.

    Bisection on [0, upper] (the loss is non-increasing in the scale): the
    returned scale always has a computed loss :math:`\le \epsilon - r`, with :math:`r` the loss's
    rounding error (:func:`check_resolvable`, which refuses an :math:`\epsilon` too small to
    decide), and scale :math:`\times (1 - \mathrm{rtol})` has a loss above that (or the scale is 0: the
    exact answer is already :math:`\epsilon`-Pufferfish private).

    Parameters
    ----------
    laws : QueryLaws
    epsilon : float
    upper : float
        A scale known to pass (:math:`W / \epsilon`); doubled until it passes if rounding says otherwise.
    rtol : float
    deadline : float, optional
        ``time.monotonic()`` value after which a TimeLimitError is raised.

    Returns
    -------
    LeastScale
        (scale, loss, witness, per_prior, evaluations).
    """
    rows, pairs, labels = laws.stacked()
    if not len(pairs):
        return LeastScale(0.0, 0.0, None, (0.0,) * laws.n_priors, 0)

    def at(b):
        if deadline is not None and time.monotonic() > deadline:
            raise TimeLimitError("The time limit passed while searching the optimal Laplace scale; "
                                 "use the Wasserstein scale or MQM (--method exact).")
        return _loss_at(rows, pairs, labels, laws.n_priors, b)

    evals = 1
    best = at(0.0)
    if best.loss == 0.0:  # equal laws: the exact answer is private at every epsilon
        return LeastScale(0.0, best.loss, best.witness, best.per_prior, evals)
    target = epsilon - check_resolvable(laws, epsilon=epsilon, scale_per_epsilon=float(upper) * epsilon)
    if best.loss <= target:
        return LeastScale(0.0, best.loss, best.witness, best.per_prior, evals)
    hi, best, more = least_passing(at, threshold=target, start=upper, rtol=rtol,
                                   refusal="No Laplace scale reaches the privacy target (the loss does not fall "
                                           "to epsilon).")
    return LeastScale(hi, best.loss, best.witness, best.per_prior, evals + more)


def least_passing(at, *, threshold: float, start: float, rtol: float, refusal: str):
    r"""The least scale :math:`s \in (0, \infty)` with ``at(s).loss <= threshold``, to ``rtol`` relative, for a loss
    non-increasing in :math:`s`: ``start`` doubled until it passes, then bisection on [0, that].

    ``at(s)`` returns an :class:`ExactLoss` (only its ``loss`` is read).

    Returns
    -------
    tuple
        (s, at(s), evaluations).

    Raises
    ------
    AuditError
        With ``refusal`` when no scale up to 1e300 passes.
    """
    hi = max(float(start), 1e-12)
    best, evals = at(hi), 1
    while best.loss > threshold:
        hi *= 2.0
        if hi > 1e300:
            raise AuditError(refusal)
        best, evals = at(hi), evals + 1
    lo = 0.0
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        cand, evals = at(mid), evals + 1
        if cand.loss <= threshold:
            hi, best = mid, cand
        else:
            lo = mid
    return hi, best, evals


def mqm_scale(kind, *, epsilon: float, lipschitz: float, options: Mapping, deadline: float | None = None):
    r"""The Markov Quilt Mechanism's Laplace scale :math:`L \sigma_{\max}` beside a query-specific calibration.

    Song, Wang and Chaudhuri, "Pufferfish Privacy Mechanisms for Correlated Data", SIGMOD 2017,
    arXiv:1603.03977, Algorithm 2: the scale of an :math:`L`-Lipschitz query, here the Lipschitz
    constant of one query or the L1 constant of a workload.

    Parameters
    ----------
    kind : PriorKind
        The prior class; its MQM calibration (method ``"exact"``) gets the query options that also
        apply to it (:meth:`~puffgm.core.prior.PriorKind.mqm_options`).
    epsilon : float
    lipschitz : float
        The query's (or workload's) Lipschitz constant in its own units (0 is taken as 1e-300).
    options : mapping
        The query-specific options given.
    deadline : float, optional
        ``time.monotonic()`` value; the calibration gets the time left (at least 1 s) when the kind
        takes a time limit.

    Returns
    -------
    tuple
        ``(scale, None)``, or ``(None, reason)`` when MQM does not apply, has no finite scale, or fails
        (the reason is one line, for the result's notes).
    """
    opts = kind.mqm_options(options)
    if deadline is not None and "time_limit" in kind.methods.get("exact", ()):
        opts["time_limit"] = max(deadline - time.monotonic(), 1.0)
    try:
        res = kind.calibrate(epsilon=epsilon, lipschitz=max(lipschitz, 1e-300), method="exact", **opts)
    except PuffgmError as exc:
        return None, f"MQM not computed: {first_line(exc)}"
    if not res.applicable or not math.isfinite(res.scale):
        return None, "MQM does not apply to this class"
    return res.scale, None


# ------------------------------------------------------------------ results


def _gain(base, x):
    if base is None or x is None or not (isinstance(x, float) and math.isfinite(x)):
        return None
    if x == 0:
        return math.inf if base > 0 else 1.0
    return base / x


@dataclass(frozen=True)
class QueryCalibration:
    r"""The noise of one query under a prior class, side by side with the query-agnostic baselines.

    All scales are Laplace scales in the query's own units.

    Attributes
    ----------
    method : str
        ``"wasserstein"`` or ``"optimal-laplace"``: which scale :attr:`scale` is.
    epsilon : float
    scale : float or None
        The Laplace scale of the chosen method (None for ``"optimal-noise"``).
    loss : float or None
        The exact Pufferfish loss of :math:`F + \mathrm{Lap}(b)` at scale :math:`b` (None when the laws are not exact).
    wasserstein : float
        :math:`W` of the Wasserstein mechanism (query units; an upper bound when ``exact`` is False).
    wasserstein_scale : float
        :math:`W / \epsilon`.
    optimal_laplace_scale : float or None
        The smallest Laplace scale with exact loss :math:`\le \epsilon` (None when not computable).
    group_dp_scale : float
        The group-DP sensitivity divided by :math:`\epsilon`.
    mqm_scale : float or None
        The Markov Quilt Mechanism's scale for this query: :math:`\sigma_{\max}` times its
        Lipschitz constant (None, with a note, when MQM does not apply).
    witness : Witness or None
        Where the chosen scale is decided: prior, node, pair (and output for the loss, in the query's units).
    per_prior : tuple
        W per prior (query units).
    query : dict
        The query as bound to the class (:meth:`BoundQuery.to_dict`).
    exact : bool
        Whether the conditional laws were computed exactly at every position.
    prior : str
    secrets : str
    n_pairs : int
    seconds : dict
        Time of each stage.
    notes : tuple of str
    theorem : str
    optimal_noise : OptimalNoise or None
        The optimal noise law (method ``"optimal-noise"``).
    wasserstein_loss, optimal_laplace_loss : float or None
        The exact loss of Laplace noise at :math:`W / \epsilon` and at the optimal scale.
    bound : BoundQuery or None
        The query as bound to the class: :func:`puffgm.release` computes the true answer with it
        from one database (not in :meth:`to_dict`; None for a calibration made by hand).
    layout : RecordLayout or None
        How one database of the class is given (a record of the network's nodes, or a chain's
        trace; :class:`puffgm.core.records.RecordLayout`).
    """

    method: str
    epsilon: float
    scale: float | None  # None for the optimal-noise method (its noise is not Laplace)
    loss: float | None
    wasserstein: float
    wasserstein_scale: float
    optimal_laplace_scale: float | None
    group_dp_scale: float
    mqm_scale: float | None
    witness: Witness | None
    per_prior: tuple
    query: dict
    exact: bool
    prior: str
    secrets: str
    n_pairs: int
    seconds: dict = field(default_factory=dict)
    notes: tuple = ()
    theorem: str = THEOREM_WASSERSTEIN
    optimal_noise: Any = None
    wasserstein_loss: float | None = None
    optimal_laplace_loss: float | None = None
    bound: BoundQuery | None = field(default=None, repr=False, compare=False)
    layout: RecordLayout | None = field(default=None, repr=False, compare=False)

    def comparison(self) -> dict:
        r"""Every mechanism's expected absolute error, with its gain over group DP (> 1 is less noise).

        For Laplace noise the expected absolute error is the scale (:math:`\mathbb{E}|\mathrm{Lap}(b)| = b`),
        so the Laplace rows also carry ``scale``; the optimal noise
        (:mod:`puffgm.mechanisms.optimal_noise`) is no Laplace law and has only
        its expected absolute error.
        """
        g = self.group_dp_scale
        rows = {"group_dp": g, "mqm": self.mqm_scale, "wasserstein": self.wasserstein_scale,
                "optimal_laplace": self.optimal_laplace_scale}
        out = {k: {"scale": v, "expected_abs_error": v, "gain_over_group_dp": _gain(g, v)} for k, v in rows.items()}
        if self.optimal_noise is not None:
            e = float(self.optimal_noise.expected_abs_error)
            out["optimal_noise"] = {"scale": None, "expected_abs_error": e, "gain_over_group_dp": _gain(g, e)}
        return out

    def accuracy(self, alpha: float = 0.05) -> tuple:
        r"""The released answer's noise: Laplace scale and :math:`(1-\alpha)` half-width, or the optimal noise law's.

        See :mod:`puffgm.core.accuracy`; method ``"optimal-noise"`` gives the exact half-width of
        its law (:meth:`puffgm.mechanisms.optimal_noise.OptimalNoise.accuracy`).
        """
        if self.optimal_noise is not None:
            return self.optimal_noise.accuracy(alpha)
        return laplace_rows(("value",), (math.inf if self.scale is None else self.scale,), alpha)

    def to_dict(self) -> dict:
        """JSON-ready: ``method``, ``epsilon``, ``scale``, ``loss``, ``wasserstein``, the comparison, the rest.

        With method ``"optimal-noise"`` also ``expected_abs_error``, ``noise``
        (``values``, ``probabilities``, ``tail_ratio``) and ``optimal_noise`` (the
        program's full record); ``scale`` is then None (the noise is not Laplace).
        """
        extra = {}
        if self.optimal_noise is not None:
            extra = {"expected_abs_error": self.optimal_noise.expected_abs_error,
                     "noise": self.optimal_noise.noise | {"unit": self.optimal_noise.unit},
                     "optimal_noise": self.optimal_noise.to_dict()}
        return jsonable(extra | {
            "method": self.method, "epsilon": self.epsilon, "scale": self.scale, "loss": self.loss,
            "wasserstein": self.wasserstein, "comparison": self.comparison(), "witness": self.witness,
            "per_prior_wasserstein": list(self.per_prior), "wasserstein_loss": self.wasserstein_loss,
            "optimal_laplace_loss": self.optimal_laplace_loss, "query": self.query, "exact": self.exact,
            "prior": self.prior, "secrets": self.secrets, "n_pairs": self.n_pairs, "seconds": self.seconds,
            "theorem": self.theorem, "notes": list(self.notes),
        } | extra)

    def explain(self) -> str:
        """The scales side by side, as a small table, then the guarantee."""
        q = self.query
        lines = [f"{q.get('scored_nodes')} scored node(s), values {q.get('min_value'):g}..{q.get('max_value'):g}, "
                 f"Lipschitz {q.get('lipschitz'):g}; prior {self.prior}; epsilon {self.epsilon:g}",
                 f"{'mechanism':<22}{'E|noise|':>12}{'gain over group DP':>21}   (Laplace: E|noise| = scale)"]
        names = {"group_dp": "group DP", "mqm": "MQM (sigma_max x L)", "wasserstein": "Wasserstein",
                 "optimal_laplace": "optimal Laplace", "optimal_noise": "optimal noise (LP)"}
        for key, row in self.comparison().items():
            v, gain = row["expected_abs_error"], row["gain_over_group_dp"]
            vs = "n/a" if v is None else f"{v:.6g}"
            gs = "" if gain is None else f"x{gain:.3g}"
            lines.append(f"{names[key]:<22}{vs:>12}{gs:>21}")
        loss = "" if self.loss is None else f", exact loss {self.loss:.10g} <= epsilon"
        if self.method == "optimal-noise":
            lines.append(self.optimal_noise.explain())
        else:
            chosen = "Wasserstein mechanism" if self.method == "wasserstein" else "optimal Laplace scale"
            lines.append(f"{chosen}: Laplace scale {self.scale:.10g}{loss}")
        if self.witness and self.method != "optimal-noise":
            lines.append(f"decided at {self.witness}")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


@dataclass(frozen=True)
class QueryRelease(CalibratedRelease):
    """A noisy answer F(D) + Lap(scale) calibrated for this one query (fields of
    :class:`~puffgm.core.release.CalibratedRelease`).

    No composition theorem covers query-specific releases: their composition is
    :class:`~puffgm.core.composition.HeldAlone` (the accountant takes one alone on its
    units and refuses to compose it with any other release).  The Wasserstein mechanism
    of :mod:`puffgm.framework.wasserstein` releases this record too.  The record keeps the
    noisy value only, never the exact answer.
    """

    @property
    def mechanism(self) -> str:
        """The mechanism's name."""
        if self.calibration.method == "wasserstein":
            return "Wasserstein Mechanism (Song, Wang and Chaudhuri, Algorithm 1)"
        return "Laplace mechanism at the optimal query-specific scale"

    def explain(self) -> str:
        r"""One line: mechanism, :math:`\epsilon`, scale, noise source."""
        return self._tagged(f"{self.mechanism}: epsilon {self.epsilon:g}, Laplace scale "
                            f"{self.calibration.scale:.6g}; noise: {self.noise}")


def release_query(answer, calibration: QueryCalibration, *, random_state=None, accountant=None,
                  label: str | None = None) -> QueryRelease:
    """Release ``F(D) + Lap(scale)`` for a query-specific calibration (OpenDP's secure sampler by default).

    :func:`puffgm.release` computes ``answer`` from the data and calls this.

    Parameters
    ----------
    answer : float
        The exact answer F(D) on the data, in the query's units.
    calibration : QueryCalibration
    random_state : int or numpy Generator, optional
        Seeded numpy noise, for tests only (not for production).
    accountant : PrivacyAccountant, optional
        Checked before any noise is drawn: it holds a query-specific release only alone.
    label : str, optional
        The release's name in the accountant's ledger.

    Returns
    -------
    QueryRelease
        The noisy answer with its calibration and noise source.
    """
    if not isinstance(calibration, QueryCalibration):
        raise ParameterError(wrong_calibration("release_query", calibration,
                                               "a QueryCalibration (from puffgm.calibrate_query)"))
    if calibration.method == "optimal-noise" or calibration.scale is None:
        raise ParameterError("This calibration's noise is the optimal noise law, not Laplace: release it with "
                             "puffgm.mechanisms.optimal_noise.release_optimal_noise("
                             "answer, calibration.optimal_noise).")
    v = answer_in_range(answer, calibration.query)
    scale = calibration.scale
    if not (math.isfinite(scale) and scale > 0):
        raise ParameterError(f"A query-specific Laplace release needs a finite scale > 0; this calibration's is "
                             f"{scale!r}, so nothing was released.")
    check_resolves(v, scale)
    noise = resolve_noise(random_state)
    planned = QueryRelease(value=None, calibration=calibration, secure=noise.secure, noise=noise.description)
    return make_release(planned, lambda: float(noise.laplace(v, scale)), accountant=accountant, label=label)


def answer_in_range(answer, query: Mapping) -> float:
    """The exact answer as a float, if it is finite and within the query's range ``[min_value, max_value]``.

    A value outside the range is no answer of the calibrated query on any data set, so the
    calibration says nothing about it; the check allows rounding (1e-9 of the range's width).

    Raises
    ------
    ParameterError
        If the answer is not a finite number or lies outside the range (one sentence naming both).
    """
    try:
        v = float(answer)
    except (TypeError, ValueError):
        raise ParameterError(f"The query answer must be a number; got {type(answer).__name__}.") from None
    if not math.isfinite(v):
        raise ParameterError("The query answer must be finite.")
    lo, hi = query.get("min_value"), query.get("max_value")
    if lo is not None and hi is not None:
        slack = 1e-9 * max(1.0, float(hi) - float(lo))
        if not float(lo) - slack <= v <= float(hi) + slack:
            raise ParameterError(f"The answer {v:g} is outside the calibrated query's range [{lo:g}, {hi:g}], so it "
                                 "is not an answer of that query on any data set; nothing was released.")
    return v

