r"""Temporal privacy leakage (TPL) of per-step DP releases on a Markov chain.

Cao, Yoshikawa, Xiao and Xiong, "Quantifying Differential Privacy under Temporal
Correlations", ICDE 2017 (arXiv:1610.07543); extended as "Quantifying Differential
Privacy in Continuous Data Release under Temporal Correlations", IEEE TKDE 31(7), 2019
(online 2018).

A user's state :math:`X_t` follows a Markov chain; at every step :math:`t` an :math:`\epsilon_t`-DP mechanism
releases something computed from :math:`X_t` (and from other users' independent data).  The
attacker knows the forward matrix :math:`P^F` (``P^F[i, j]`` :math:`= P(X_{t+1} = j \mid X_t = i)`) and the
backward matrix :math:`P^B` (``P^B[i, j]`` :math:`= P(X_{t-1} = j \mid X_t = i)`).  What the outputs
:math:`r_1, \ldots, r_T` reveal about :math:`X_t` splits at :math:`t` (Markov property) into

* the **backward privacy leakage** :math:`\mathrm{BPL}_t` (outputs :math:`r_1, \ldots, r_t`), with
  :math:`\mathrm{BPL}_1 = \epsilon_1` and :math:`\mathrm{BPL}_t = L_B(\mathrm{BPL}_{t-1}) + \epsilon_t`,
* the **forward privacy leakage** :math:`\mathrm{FPL}_t` (outputs :math:`r_t, \ldots, r_T`), with
  :math:`\mathrm{FPL}_T = \epsilon_T` and :math:`\mathrm{FPL}_t = L_F(\mathrm{FPL}_{t+1}) + \epsilon_t`,
* the **temporal privacy leakage** :math:`\mathrm{TPL}_t = \mathrm{BPL}_t + \mathrm{FPL}_t - \epsilon_t`,

each a bound on :math:`\sup \log P(\text{outputs} \mid X_t = x) / P(\text{outputs} \mid X_t = x')` over the
mechanisms with those budgets, so (:math:`\Theta` = {the chain}, secrets :math:`\{X_t = x\}`)
:math:`\max_t \mathrm{TPL}_t` is a Pufferfish parameter of the whole release.  The leakage function of a
stochastic matrix :math:`M` (:math:`L_B = L_{P^B}`, :math:`L_F = L_{P^F}`) is (Cao et al., Theorem 4 and its corollary)

$$
L_M(a) = \max_{(q, d),\ S} \log \frac{q(S)(e^a - 1) + 1}{d(S)(e^a - 1) + 1} \quad \text{(ordered pairs of rows } (q,
  d) \text{ of } M, \text{ subsets } S \text{ of the states)}.
$$

**Threshold structure.**  For a fixed pair :math:`(q, d)` and :math:`u = e^a - 1 \ge 0` let :math:`\lambda^*` be the
optimal ratio :math:`(1 + u q(S)) / (1 + u d(S))`.  By Dinkelbach's argument :math:`S` is optimal iff it
maximises :math:`1 - \lambda^* + u \sum_{j \in S} (q_j - \lambda^* d_j)`, i.e.
:math:`S = \{j : q_j / d_j > \lambda^*\}`: the optimum is a *prefix* of the states sorted by :math:`q_j / d_j`
decreasing (:math:`d_j = 0 < q_j` first), and since :math:`\lambda^* \ge 1` (:math:`S` empty gives 1) only states
with :math:`q_j > d_j` enter.  So every candidate is a point :math:`(x, y) = (q(S), d(S))` of such a prefix
(:math:`k^3` points over the :math:`k^2` ordered pairs and :math:`k` prefixes), and since the value is increasing
in :math:`x` and decreasing in :math:`y` for every :math:`a`, only the Pareto front (no other point with
:math:`x' \ge x` and :math:`y' \le y`) matters.  :class:`LeakageFunction` computes the front once per matrix;
each :math:`L(a)` is then one pass over it.  Values are computed in log space:
:math:`\mathrm{log1p}(x \mathrm{expm1}(a)) - \mathrm{log1p}(y \mathrm{expm1}(a))` for :math:`a \le 1`,
and :math:`\log(x + q(S^c) e^{-a}) - \log(y + d(S^c) e^{-a})` above (the factor :math:`e^a` cancels;
:math:`q(S^c)` is kept as the exact complementary sum), so :math:`e^a` never overflows.

**Suprema.**  :math:`L` is non-decreasing, 0 at 0, continuous and :math:`L(a) \le a`, so with a constant
budget :math:`\epsilon` the BPL (and FPL) sequence increases to the least fixed point of
:math:`a = L(a) + \epsilon`, or to infinity.  Each candidate's :math:`h(a) = a - \log((1 + x u)/(1 + y u))`
is increasing, tends to infinity when :math:`y > 0` and to :math:`\log(1/x)` when :math:`y = 0`.  Hence
:math:`a - L(a)` increases to the minimum over candidates with :math:`d(S) = 0` of :math:`\log(1/q(S))`, and

$$
\sup_t \mathrm{BPL}_t < \infty \iff \epsilon < \epsilon_{\mathrm{crit}}(P^B) = \log(1 / x_{\max}),
$$

where :math:`x_{\max}` is the largest mass a row :math:`q` puts on the states another row :math:`d` excludes
(:math:`x_{\max}` = max over ordered pairs of rows of :math:`q(\{j : d_j = 0\})`); :math:`\epsilon_{\mathrm{crit}}` is
:math:`+\infty` when every row has the same support, and 0 when two rows have disjoint supports (then
:math:`L(a) = a`: the leakage grows by :math:`\epsilon` at every step).  The supremum is then the unique
root of :math:`a - L(a) = \epsilon` (found by Brent's method to 4 ulps).  With constant
:math:`\epsilon`, the sup over :math:`t` and :math:`T` of :math:`\mathrm{TPL}_t` is
:math:`\sup \mathrm{BPL} + \sup \mathrm{FPL} - \epsilon` (Cao et al., section on the supremum of TPL).

**Budget allocation** (:func:`allocate_budget`).  Given a target :math:`\alpha` and a length :math:`T`:
``"constant"``: the largest :math:`\epsilon` with :math:`\max_t \mathrm{TPL}_t \le \alpha` (TPL increases with
:math:`\epsilon`: bisection to a relative :math:`10^{-6}`, ``rtol``).  ``"ends"``: following the idea of Cao
et al.'s TKDE budget allocation (larger budgets at the two ends): a middle budget
:math:`\epsilon_m` with :math:`\sup \mathrm{BPL} + \sup \mathrm{FPL} - \epsilon_m = \alpha`, and
:math:`\epsilon_1 = \sup \mathrm{BPL}(\epsilon_m)`, :math:`\epsilon_T = \sup \mathrm{FPL}(\epsilon_m)`.  Then
:math:`\mathrm{BPL}_t = \sup \mathrm{BPL}` and :math:`\mathrm{FPL}_t = \sup \mathrm{FPL}` at every :math:`t`
(the sequences start at their fixed points), so :math:`\mathrm{TPL}_t = \alpha` at every :math:`t`: flat, for any
:math:`T \ge 2`.  For a class of several chains :math:`\epsilon_m` makes the worst member reach :math:`\alpha` and
the ends take the smallest member supremum, which keeps every member at or below :math:`\alpha`
(each member's sequences then stay below its fixed points).

**Chains as puffgm knows them.**  A class of several transition matrices
(:class:`~puffgm.chains.priors.ChainPriorClass`) gives the pointwise maximum over its
members of :math:`\mathrm{BPL}_t`, :math:`\mathrm{FPL}_t` and :math:`\mathrm{TPL}_t` (each member is one attacker's
knowledge; the maximum of :math:`\mathrm{TPL}_t` is then a Pufferfish parameter of the class).  :math:`P^B` is the
member's ``backward``
matrix when given (``"backward"`` in the JSON spec, :func:`~puffgm.chains.spec.backward_from_spec`),
else the time reversal of the stationary chain, :math:`P^B[i, j] = \pi_j P^F[j, i] / \pi_i`, with :math:`\pi`
the stationary distribution of :math:`P^F`.  The member's initial distribution is not used: the
time reversal is the exact backward law of the chain started in :math:`\pi`, and for another start
the attacker's backward law varies with :math:`t`, which this analysis does not model.  Parameter
boxes (infinite classes) are refused: their leakage would need a certified supremum over
the box, which is not implemented.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from puffgm.chains.priors import (
    ChainPrior,
    ChainPriorClass,
    InfiniteChainClass,
    check_length,
    check_transition_matrix,
    closed_classes,
    stationary_distribution,
)
from puffgm.chains.spec import backward_from_spec, chain_class_from_spec, read_chain_spec
from puffgm.core.results import json_float
from puffgm.core.validation import check_positive_finite, refuse_unexpected, renamed
from puffgm.exceptions import NotApplicableError, NumericalError, ParameterError, PriorError

__all__ = [
    "LeakageFunction", "leakage_function", "time_reversal", "TemporalCorrelation", "temporal_correlations",
    "TemporalLeakage", "temporal_leakage", "LeakageSupremum", "leakage_supremum", "BudgetAllocation",
    "allocate_budget", "leakage_recursion", "THEOREM",
]

THEOREM = ("Cao-Yoshikawa-Xiao-Xiong, Quantifying Differential Privacy under Temporal Correlations "
           "(ICDE 2017, arXiv:1610.07543; IEEE TKDE 2018): BPL/FPL/TPL recursions, Theorem 4")

#: Above this a, log(1 + x(e^a - 1)) is evaluated as a + log(x + (1 - x) e^{-a}) (LeakageFunction.values).
_LOG_SWITCH = 1.0
#: Fronts up to this size are evaluated in scalar arithmetic.
_SCALAR_FRONT = 32
#: Largest budget or leakage handled (beyond, the recursion would lose all relative precision).
_MAX_LEAKAGE = 1e15


# ------------------------------------------------------------------- the leakage function L_M
def _pareto(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    r"""Indices of the points not dominated by another (:math:`x' \ge x`, :math:`y' \le y`).

    Sorted by :math:`x` decreasing.
    """
    order = np.lexsort((y, -x))
    ys = y[order]
    keep = np.ones(len(ys), dtype=bool)
    if len(ys) > 1:
        keep[1:] = ys[1:] < np.minimum.accumulate(ys)[:-1]
    return order[keep]


def _gain_order(Q: np.ndarray, D: np.ndarray):
    r"""For rows :math:`q` of :math:`Q` against rows :math:`d` of :math:`D`: (order, number of gain states).

    The order is by :math:`q_j/d_j` decreasing.

    Shapes (b, 1, k) and (k', k) broadcast to (b, k', k).  The gain states (:math:`q_j > d_j`) come
    first, :math:`d_j = 0 < q_j` before all others (ratio infinite); states with :math:`q_j \le d_j` come last
    (they are never in an optimal :math:`S`).
    """
    gain = Q > D
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = Q / D
    ratio[~gain] = -1.0
    return np.argsort(ratio, axis=-1, kind="stable")[..., ::-1], gain.sum(axis=-1)


def _dominated_by_bins(x: np.ndarray, y: np.ndarray, bins: int = 4096) -> np.ndarray:
    """A cheap, exact-safe prefilter: True where another point has x' > x and y' < y (found by bins of y).

    With y in [0, 1] cut into ``bins`` equal bins, a point is dominated when some point of a
    lower bin (so y' < y) has a larger x.  Only dominated points are flagged; the exact
    Pareto front of the rest is computed by :func:`_pareto`.
    """
    b = np.minimum((y * bins).astype(np.int64), bins - 1)
    best = np.full(bins, -1.0)
    np.maximum.at(best, b, x)
    below = np.concatenate([[-1.0], np.maximum.accumulate(best)[:-1]])
    return below[b] > x


def _prefix_candidates(M: np.ndarray, rows: np.ndarray):
    r"""The Pareto candidates of the rows :math:`q` = ``M[rows]`` against every row :math:`d`.

    They are the prefixes by :math:`q_j/d_j` decreasing.

    Returns arrays :math:`x = q(S)`, :math:`x_c = q(S^c)`, :math:`y = d(S)`, :math:`y_c = d(S^c)`, and the
    row :math:`i` of :math:`q`, the row :math:`j` of :math:`d` and the size of :math:`S` of each candidate, for the
    prefixes made only of states with :math:`q_j > d_j`.
    The complements are summed from the states outside :math:`S`, so they are exact where they are tiny.
    """
    Q = M[rows][:, None, :]
    order, n_gain = _gain_order(Q, M)
    qs = np.take_along_axis(np.broadcast_to(Q, order.shape), order, axis=-1)
    ds = np.take_along_axis(np.broadcast_to(M, order.shape), order, axis=-1)
    x, y = np.cumsum(qs, axis=-1), np.cumsum(ds, axis=-1)
    bb, jj, mm = np.nonzero(np.arange(M.shape[0]) < n_gain[..., None])
    x, y = x[bb, jj, mm], y[bb, jj, mm]
    live = ~_dominated_by_bins(x, y)
    bb, jj, mm, x, y = bb[live], jj[live], mm[live], x[live], y[live]
    keep = _pareto(x, y)
    bb, jj, mm, x, y = bb[keep], jj[keep], mm[keep], x[keep], y[keep]
    tail = np.arange(M.shape[0])[None, :] > mm[:, None]
    xc = np.where(tail, qs[bb, jj], 0.0).sum(axis=1)
    yc = np.where(tail, ds[bb, jj], 0.0).sum(axis=1)
    return x, xc, y, yc, rows[bb], jj, mm + 1


def _witness_set(M: np.ndarray, i: int, j: int, size: int) -> tuple:
    r"""The set :math:`S` of a candidate: the first ``size`` states of row :math:`i` against row :math:`j`.

    The states are ordered by :math:`q_j/d_j` decreasing.
    """
    order, _ = _gain_order(M[i][None, None, :], M[j][None, :])
    return tuple(int(s) for s in order[0, 0, :size])


@dataclass(frozen=True, eq=False)
class LeakageFunction:
    r"""The leakage function :math:`L_M(a)` of a row-stochastic matrix :math:`M` (Cao et al., Theorem 4).

    :math:`L_M(a)` = max over ordered pairs of rows :math:`(q, d)` and subsets :math:`S` of the states of
    :math:`\log[(q(S)(e^a - 1) + 1) / (d(S)(e^a - 1) + 1)]`, exact, computed over the Pareto front
    of the threshold prefixes (module docstring).  Build with :func:`leakage_function`.

    Attributes
    ----------
    matrix : ndarray, shape (k, k)
        :math:`M` (read-only).
    x, xc, y, yc : ndarray
        :math:`q(S)`, :math:`q(S^c)`, :math:`d(S)`, :math:`d(S^c)` of the front's candidates
        (:math:`x` decreasing).
    witnesses : tuple of (int, int, tuple of int)
        (row of :math:`q`, row of :math:`d`, :math:`S`) of each candidate.
    critical_epsilon : float
        :math:`\epsilon_{\mathrm{crit}} = \log(1 / x_{\max})`: with a constant budget :math:`\epsilon` the
        fixed point of :math:`a = L(a) + \epsilon` exists iff :math:`\epsilon < \epsilon_{\mathrm{crit}}`
        (``inf``: always; 0: never).
    critical_witness : tuple or None
        (row of :math:`q`, row of :math:`d`, :math:`S`) with :math:`d(S) = 0` attaining :math:`x_{\max}`,
        None when :math:`\epsilon_{\mathrm{crit}}` is infinite.
    name : str
    """

    matrix: np.ndarray
    x: np.ndarray
    xc: np.ndarray
    y: np.ndarray
    yc: np.ndarray
    witnesses: tuple
    critical_epsilon: float
    critical_witness: tuple | None
    name: str = "M"
    _logs: tuple = field(default=(), repr=False)

    def __post_init__(self):
        with np.errstate(divide="ignore"):
            log_yc = np.log(self.yc)
        rows = tuple(zip(*(v.tolist() for v in (self.x, self.xc, self.y, self.yc, log_yc)), strict=True))
        object.__setattr__(self, "_logs", (self.y == 0.0, log_yc, rows if len(rows) <= _SCALAR_FRONT else None))

    def values(self, a: float) -> np.ndarray:
        r""":math:`\log[(1 + x u)/(1 + y u)]`, :math:`u = e^a - 1`, for every candidate of the front (:math:`a \ge 0`).

        For :math:`a \le 1`: :math:`\mathrm{log1p}(x u) - \mathrm{log1p}(y u)`.  Above, with
        :math:`x + q(S^c) = 1`, :math:`1 + x u = e^a (x + q(S^c) e^{-a})`, so the value is
        :math:`\log(x + x_c e^{-a}) - \log(y + y_c e^{-a})` (:math:`a` cancels exactly), and
        :math:`a + \log(x + x_c e^{-a}) - \log(y_c)` when :math:`y = 0`: sums of non-negative terms only, so
        no cancellation and no overflow for any :math:`a`.
        """
        if a <= _LOG_SWITCH:
            u = math.expm1(a)
            return np.log1p(self.x * u) - np.log1p(self.y * u)
        ea = math.exp(-a)
        y_zero, log_yc, _ = self._logs
        with np.errstate(divide="ignore"):
            den = np.where(y_zero, log_yc - a, np.log(self.y + self.yc * ea))
        return np.log(self.x + self.xc * ea) - den

    def __call__(self, a: float) -> float:
        r""":math:`L_M(a)` for a finite :math:`a \ge 0` (0 when all rows are equal)."""
        _, _, rows = self._logs
        if rows is not None:  # a small front: the same formulas in scalar arithmetic (no numpy call overhead)
            return self._scalar(a, rows)
        v = float(np.max(self.values(a)))
        return v if v > 0.0 else 0.0

    @staticmethod
    def _scalar(a: float, rows) -> float:
        best = 0.0
        if a <= _LOG_SWITCH:
            u = math.expm1(a)
            for x, _, y, _, _ in rows:
                v = math.log1p(x * u) - math.log1p(y * u)
                best = v if v > best else best
            return best
        ea = math.exp(-a)
        for x, xc, y, yc, log_yc in rows:
            v = math.log(x + xc * ea) - (log_yc - a if y == 0.0 else math.log(y + yc * ea))
            best = v if v > best else best
        return best

    def witness(self, a: float) -> tuple:
        r"""(value, (row of :math:`q`, row of :math:`d`, :math:`S`)) attaining :math:`L_M(a)`.

        (0.0, None) when :math:`L_M(a) = 0`.
        """
        if self.x.size == 0:
            return 0.0, None
        v = self.values(a)
        j = int(np.argmax(v))
        return (float(v[j]), self.witnesses[j]) if v[j] > 0 else (0.0, None)

    def fixed_point(self, *, epsilon: float) -> float:
        r""":math:`\sup_t` of the recursion :math:`a_1 = \epsilon`, :math:`a_t = L_M(a_{t-1}) + \epsilon`.

        It is the root of :math:`a - L_M(a) = \epsilon`; ``inf`` when :math:`\epsilon \ge`
        :attr:`critical_epsilon` (module docstring: :math:`a - L_M(a)` increases to
        :math:`\epsilon_{\mathrm{crit}}`, so the recursion then grows without bound).
        """
        from scipy.optimize import brentq

        eps = check_positive_finite(epsilon, "epsilon", "LeakageFunction.fixed_point")
        if eps >= self.critical_epsilon:
            return math.inf

        def gap(a):
            return a - self(a) - eps

        lo = eps
        if gap(lo) >= 0.0:
            return lo
        hi = 2.0 * eps
        while gap(hi) < 0.0:
            lo, hi = hi, 2.0 * hi
            if hi > _MAX_LEAKAGE:
                raise NumericalError(
                    f"The fixed point of a = L(a) + {eps:g} for {self.name} exceeds {_MAX_LEAKAGE:g} (epsilon is "
                    f"within rounding of the critical budget {self.critical_epsilon:.17g}), so it cannot be computed.")
        return float(brentq(gap, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500))

    def explain_critical(self, states=None) -> str:
        """One sentence: when the fixed point exists, and the pair of rows that decides it."""
        name = (lambda s: str(s)) if states is None else (lambda s: str(states[s]))
        if math.isinf(self.critical_epsilon):
            return (f"every row of {self.name} has the same support, so the supremum of the leakage is finite "
                    "for every budget")
        assert self.critical_witness is not None  # set whenever critical_epsilon is finite
        i, j, S = self.critical_witness
        if self.critical_epsilon == 0.0:
            return (f"rows {name(i)} and {name(j)} of {self.name} have disjoint supports, so L(a) = a and the "
                    "leakage grows by epsilon at every step: its supremum is infinite for every budget")
        return (f"row {name(i)} of {self.name} puts mass x = {float(self.x[-1]):.6g} on the states "
                f"{{{', '.join(name(s) for s in S)}}} that row {name(j)} excludes, so a - L(a) increases to "
                f"log(1/x) and the supremum is finite iff epsilon < {self.critical_epsilon:.6g}")


def leakage_function(matrix, name: str = "M") -> LeakageFunction:
    r"""Build the leakage function :math:`L_M` of a row-stochastic matrix (validated like a transition matrix).

    Parameters
    ----------
    matrix : array_like, shape (k, k)
        Row-stochastic; rows off 1 by more than :math:`10^{-6}` are refused.
    name : str
        Names the matrix in messages.

    Returns
    -------
    LeakageFunction
        Costs :math:`O(k^3 \log k)` time once (the sorted prefixes of all :math:`k^2` ordered pairs of
        rows); each evaluation :math:`L_M(a)` is then :math:`O(\text{size of the Pareto front})`.

    Examples
    --------
    >>> from puffgm.chains.leakage import leakage_function
    >>> L = leakage_function([[0.8, 0.2], [0.1, 0.9]])
    >>> round(L(1.0), 6)
    0.706275
    """
    M, _ = check_transition_matrix(matrix, f"matrix {name}")
    k = M.shape[0]
    block = max(1, int(2_000_000 // (k * k)))  # rows per block: about 2e6 (pair, state) entries at a time
    parts = [_prefix_candidates(M, np.arange(s, min(s + block, k))) for s in range(0, k, block)]
    x, xc, y, yc, ii, jj, size = (np.concatenate([p[n] for p in parts]) for n in range(7))
    keep = _pareto(x, y)
    x, xc, y, yc = (v[keep].copy() for v in (x, xc, y, yc))
    wit = tuple((int(ii[n]), int(jj[n]), _witness_set(M, int(ii[n]), int(jj[n]), int(size[n]))) for n in keep)
    crit, crit_w = math.inf, None
    if y.size and y[-1] == 0.0:  # the front's smallest d(S) is last; d(S) = 0 with the largest q(S)
        crit_w = wit[-1]
        # log(1/x) with 1 - x = q(S^c) kept exact: 0 exactly for disjoint supports
        crit = max(-math.log(x[-1]) if x[-1] < 0.5 else -math.log1p(-xc[-1]), 0.0)
    for v in (x, xc, y, yc):
        v.setflags(write=False)
    return LeakageFunction(M, x, xc, y, yc, wit, float(crit), crit_w, str(name))


# ------------------------------------------------------------------ forward and backward matrices
def time_reversal(forward, stationary=None, *, name: str = "the chain", states=None) -> np.ndarray:
    r"""The backward matrix of the stationary chain: :math:`P^B[i, j] = \pi_j P^F[j, i] / \pi_i`.

    Parameters
    ----------
    forward : array_like, shape (k, k)
        :math:`P^F`, row-stochastic.
    stationary : array_like of shape (k,), optional
        :math:`\pi` with :math:`\pi P^F = \pi` (default: the unique stationary distribution of :math:`P^F`,
        :func:`~puffgm.chains.priors.stationary_distribution`).
    name, states :
        Name the chain and its states in messages.

    Raises
    ------
    PriorError
        If :math:`P^F` has several stationary distributions, or a state has stationary probability 0
        (a transient state: the reversal has no row for it); then give :math:`P^B` explicitly.
    """
    P, _ = check_transition_matrix(forward, f"forward matrix of {name}")
    k = P.shape[0]
    if stationary is None:
        if len(closed_classes(P)) > 1:
            raise PriorError(f"The forward matrix of {name} has several stationary distributions, so its time "
                             "reversal is not defined; give the 'backward' matrix explicitly.")
        pi = stationary_distribution(P)  # exact zeros off the closed class, full relative precision on it
    else:
        pi = np.asarray(stationary, dtype=float)
        if pi.shape != (k,) or not np.all(np.isfinite(pi)) or np.any(pi < 0) or pi.sum() <= 0:
            raise PriorError(f"The stationary distribution given for {name} must be {k} non-negative finite numbers.")
        pi = pi / pi.sum()
    zero = np.flatnonzero(pi <= 0)
    if zero.size:
        s = zero[0] if states is None else states[zero[0]]
        raise PriorError(f"State {s} has stationary probability 0 under {name} (a transient state), so the time "
                         "reversal has no row for it; give the 'backward' matrix explicitly.")
    B = P.T * pi[None, :] / pi[:, None]
    B, _ = check_transition_matrix(B, f"time reversal of {name}")
    return B


@dataclass(frozen=True, eq=False)
class TemporalCorrelation:
    r"""One chain's temporal correlations as Cao et al. model the attacker's knowledge: :math:`L_F` and :math:`L_B`.

    Attributes
    ----------
    name : str
    states : tuple of str
    forward : LeakageFunction
        :math:`L_F`, of :math:`P^F` (rows: state at :math:`t`, columns: state at :math:`t+1`).
    backward : LeakageFunction
        :math:`L_B`, of :math:`P^B` (rows: state at :math:`t`, columns: state at :math:`t-1`).
    backward_source : str
        ``"given"`` (the spec's ``"backward"``) or ``"time reversal"`` (of the stationary chain).
    stationary : ndarray or None
        The stationary distribution used for the time reversal (None when :math:`P^B` is given).
    """

    name: str
    states: tuple
    forward: LeakageFunction
    backward: LeakageFunction
    backward_source: str
    stationary: np.ndarray | None = None

    def describe(self) -> str:
        """Where :math:`P^B` comes from, in one line."""
        if self.backward_source == "given":
            return f"{self.name}: backward matrix given (the spec's 'backward')"
        assert self.stationary is not None  # set whenever the backward matrix is a time reversal
        pi = ", ".join(f"{v:.4g}" for v in self.stationary[:6]) + (", ..." if len(self.stationary) > 6 else "")
        return (f"{self.name}: backward matrix = time reversal of the stationary chain (pi = [{pi}]; "
                "the initial distribution is not used)")


def _correlation(member: ChainPrior, backward=None) -> TemporalCorrelation:
    P = member.transition
    if backward is None:
        pi = None
        try:
            pi = member.stationary
        except PriorError:
            pass
        B = time_reversal(P, pi, name=f"chain {member.name!r}", states=member.states)
        source = "time reversal"
    else:
        B, _ = check_transition_matrix(backward, f"backward matrix of chain {member.name!r}", member.k)
        source, pi = "given", None
    return TemporalCorrelation(member.name, member.states, leakage_function(P, f"P^F of {member.name}"),
                               leakage_function(B, f"P^B of {member.name}"), source, pi)


def temporal_correlations(chain, backward=None) -> tuple:
    r"""The :class:`TemporalCorrelation` of every member of a chain class.

    Parameters
    ----------
    chain : ChainPriorClass, ChainPrior, path of a chain JSON spec, or a k x k matrix
        A spec's ``"backward"`` is used when present.  Parameter boxes are refused.
    backward : array_like or list of array_like, optional
        :math:`P^B` (one matrix per member); default: the spec's, else the time reversal.

    Returns
    -------
    tuple of TemporalCorrelation
        One per member of the class, in the class's order.
    """
    members, _, _ = _resolve(chain, backward)
    return members


def _resolve(chain, backward):
    """(correlations, default length or None, label) of any accepted chain input."""
    if isinstance(chain, (tuple, list)) and chain and all(isinstance(c, TemporalCorrelation) for c in chain):
        if backward is not None:
            raise ParameterError("Temporal correlations already hold their backward matrices; give no 'backward'.")
        return tuple(chain), None, " + ".join(c.name for c in chain)
    label, raw = None, False
    if isinstance(chain, (str, os.PathLike, Mapping)):
        spec, label = read_chain_spec(chain)
        cc = chain_class_from_spec(spec, label)
        if not isinstance(cc, InfiniteChainClass):
            from_spec = backward_from_spec(spec, cc, label)
            if from_spec is not None and backward is not None:
                raise ParameterError(f"The {label} has a 'backward' matrix; give no second one.")
            backward = from_spec if backward is None else backward
        chain = cc
    elif isinstance(chain, (list, np.ndarray)):
        chain, raw = ChainPriorClass.from_matrices(chain, "any", 1), True
    if isinstance(chain, InfiniteChainClass):
        raise NotApplicableError(
            "The temporal privacy leakage of a parameter box needs a certified supremum over its transition "
            "matrices, which puffgm does not implement; give the chains of interest as 'transitions'.")
    if isinstance(chain, ChainPrior):
        chain = ChainPriorClass([chain])
    if not isinstance(chain, ChainPriorClass):
        raise ParameterError("The chain must be a ChainPriorClass, a ChainPrior, a chain spec (JSON path, text or "
                             f"dict) or a k x k transition matrix; got {type(chain).__name__}.")
    length = None if raw else chain.length
    n = len(chain.members)
    if backward is None:
        backward = [None] * n
    elif n == 1 and np.ndim(backward) == 2:
        backward = [backward]
    elif not isinstance(backward, (list, tuple)) or len(backward) != n:
        raise ParameterError(f"Give one backward matrix per member of the class ({n}).")
    members = tuple(_correlation(m, b) for m, b in zip(chain.members, backward, strict=True))
    return members, length, label or " + ".join(m.name for m in members)


# ------------------------------------------------------------------ the recursions
def leakage_recursion(function: LeakageFunction, budgets) -> np.ndarray:
    r""":math:`a_1 = e_1`, :math:`a_t = L(a_{t-1}) + e_t` for :math:`t = 2..T` (the BPL and FPL recursions).

    BPL with :math:`L_B`, FPL (on reversed budgets) with :math:`L_F`.

    Over a run of equal budgets, once :math:`a_t = a_{t-1}` in floating point every later value of
    the run is the same number (the same function of the same argument), and once
    :math:`a_t = a_{t-2}` the run alternates between two numbers (rounding can end the
    convergence in such a 2-cycle, one ulp wide); either way the rest of the run is filled
    at once with exactly the values the loop would compute, so a constant budget costs the
    steps to convergence, not :math:`T`.

    Parameters
    ----------
    function : LeakageFunction
    budgets : 1-D array of positive finite floats

    Returns
    -------
    ndarray of shape (T,)
        :math:`a_1, \dots, a_T`: the leakage after each step.
    """
    e = np.asarray(budgets, dtype=float)
    T = e.size
    out = np.empty(T)
    changes = np.flatnonzero(np.diff(e) != 0.0) + 1  # first index of each new run of equal budgets
    out[0] = e[0]
    run_start, t = 0, 1
    while t < T:
        if e[t] != e[t - 1]:
            run_start = t
        out[t] = function(float(out[t - 1])) + float(e[t])
        period = 1 if out[t] == out[t - 1] else (2 if t - 2 >= run_start and out[t] == out[t - 2] else 0)
        if period and t - period >= run_start:
            pos = np.searchsorted(changes, t, side="right")
            end = int(changes[pos]) if pos < changes.size else T
            pattern = out[t - period + 1: t + 1]  # the last `period` values repeat until the run ends
            n = end - t - 1
            out[t + 1: end] = np.tile(pattern, n // period + 1)[:n]
            t = end
            continue
        t += 1
    return out


def _budgets(epsilon, epsilons, length, default_length, where: str) -> np.ndarray:
    r"""The validated per-step budgets (read-only), from a constant :math:`\epsilon` or a list."""
    if (epsilon is None) == (epsilons is None):
        raise ParameterError(f"Give {where} exactly one of 'epsilon' (a constant per-step budget) or 'epsilons' "
                             "(one budget per step).")
    if epsilons is None:
        eps = check_positive_finite(epsilon, "epsilon", where)
        if length is None and default_length is None:
            raise ParameterError(f"Give {where} the 'length' T: the chain has no length of its own.")
        T = check_length(default_length if length is None else length, where)
        e = np.full(T, eps)
    else:
        try:
            e = np.array(epsilons, dtype=float, ndmin=1)
        except (TypeError, ValueError):
            raise ParameterError(f"The 'epsilons' of {where} must be a list of numbers.") from None
        if e.ndim != 1 or e.size == 0:
            raise ParameterError(f"The 'epsilons' of {where} must be a non-empty flat list of numbers.")
        bad = np.flatnonzero(~(np.isfinite(e) & (e > 0)))
        if bad.size:
            raise ParameterError(f"Budget {bad[0] + 1} of the 'epsilons' of {where} must be a finite number > 0. "
                                 f"Got {float(e[bad[0]])!r} instead.")
        if length is not None and check_length(length, where) != e.size:
            raise ParameterError(f"{where} got {e.size} budgets but length {length}; they must agree.")
    if float(e.sum()) > _MAX_LEAKAGE:
        raise ParameterError(f"The budgets of {where} sum to {float(e.sum()):.3g}, beyond {_MAX_LEAKAGE:g}: the "
                             "leakage would lose all precision.")
    e.setflags(write=False)
    return e


def _frozen(v) -> np.ndarray:
    v = np.array(v, dtype=float)
    v.setflags(write=False)
    return v


# ------------------------------------------------------------------ results
@dataclass(frozen=True, eq=False)
class LeakageSupremum:
    r"""The supremum over :math:`t` and :math:`T` of BPL, FPL and TPL for a constant per-step budget.

    Attributes
    ----------
    epsilon : float
    sup_bpl, sup_fpl, sup_tpl : float
        The fixed points of :math:`a = L_B(a) + \epsilon` and :math:`a = L_F(a) + \epsilon` (max over the
        members), and the max over members of :math:`\sup \mathrm{BPL} + \sup \mathrm{FPL} - \epsilon`;
        ``inf`` when infinite.
    critical_backward, critical_forward : float
        :math:`\epsilon_{\mathrm{crit}}` of :math:`L_B` and :math:`L_F` (min over members): the suprema are
        finite iff :math:`\epsilon < \epsilon_{\mathrm{crit}}`.
    condition : str
        The sentences that decide finiteness (one per member and direction).
    reason : str or None
        Why the supremum is infinite, None when it is finite.
    """

    epsilon: float
    sup_bpl: float
    sup_fpl: float
    sup_tpl: float
    critical_backward: float
    critical_forward: float
    condition: str
    reason: object = None

    @property
    def finite(self) -> bool:
        r"""True when :math:`\sup_t \mathrm{TPL}_t` is finite."""
        return math.isfinite(self.sup_tpl)

    def to_dict(self) -> dict:
        """JSON-ready dict (infinite values as ``None``, with ``reason``)."""
        return {"epsilon": self.epsilon, "sup_bpl": json_float(self.sup_bpl), "sup_fpl": json_float(self.sup_fpl),
                "sup_tpl": json_float(self.sup_tpl), "critical_epsilon_backward": json_float(self.critical_backward),
                "critical_epsilon_forward": json_float(self.critical_forward), "finite": self.finite,
                "reason": self.reason, "condition": self.condition}

    def explain(self) -> str:
        """The suprema and the condition that decides them, one per line."""
        if self.finite:
            head = (f"supremum over t and T (constant epsilon {self.epsilon:g}): BPL {self.sup_bpl:.6g}, "
                    f"FPL {self.sup_fpl:.6g}, TPL {self.sup_tpl:.6g}")
        else:
            head = f"supremum over t and T (constant epsilon {self.epsilon:g}): infinite -- {self.reason}"
        return head + "\ncondition: " + self.condition


def _supremum(members, eps: float) -> LeakageSupremum:
    sb = [m.backward.fixed_point(epsilon=eps) for m in members]
    sf = [m.forward.fixed_point(epsilon=eps) for m in members]
    st = [b + f - eps for b, f in zip(sb, sf, strict=True)]
    cond, reason = [], None
    for m, b, f in zip(members, sb, sf, strict=True):
        for what, fn, val in (("BPL", m.backward, b), ("FPL", m.forward, f)):
            sentence = fn.explain_critical(m.states)
            cond.append(f"{what}: {sentence}")
            if reason is None and math.isinf(val):
                reason = (f"{what} grows without bound since epsilon = {eps:g} >= {fn.critical_epsilon:.6g}: "
                          f"{sentence}")
    return LeakageSupremum(eps, max(sb), max(sf), max(st), min(m.backward.critical_epsilon for m in members),
                           min(m.forward.critical_epsilon for m in members), "; ".join(cond), reason)


@dataclass(frozen=True, eq=False)
class TemporalLeakage:
    r""":math:`\mathrm{BPL}_t`, :math:`\mathrm{FPL}_t`, :math:`\mathrm{TPL}_t` of per-step DP releases on a chain class.

    The recursions of Cao et al. (module docstring).

    Attributes
    ----------
    epsilons : ndarray
        The per-step budgets :math:`\epsilon_1, \dots, \epsilon_T`.
    bpl, fpl, tpl : ndarray
        Pointwise maxima over the members of the class (read-only).
    members : tuple of TemporalCorrelation
    member_max_tpl : tuple of float
        :math:`\max_t \mathrm{TPL}_t` of each member.
    supremum : LeakageSupremum or None
        For a constant budget: the suprema as :math:`T` grows; None for per-step budgets.
    label : str
    theorem : str
    """

    epsilons: np.ndarray
    bpl: np.ndarray
    fpl: np.ndarray
    tpl: np.ndarray
    members: tuple
    member_max_tpl: tuple
    supremum: LeakageSupremum | None
    label: str
    theorem: str = THEOREM

    @property
    def length(self) -> int:
        """:math:`T`."""
        return int(self.epsilons.size)

    @property
    def max_tpl(self) -> float:
        r""":math:`\max_t \mathrm{TPL}_t`: the Pufferfish parameter of the whole release (secrets :math:`X_t = x`)."""
        return float(np.max(self.tpl))

    @property
    def argmax(self) -> int:
        """The step :math:`t` (1-based) of the largest TPL."""
        return int(np.argmax(self.tpl)) + 1

    @property
    def constant_epsilon(self):
        """The budget when every step has the same, else None."""
        e = self.epsilons
        return float(e[0]) if np.all(e == e[0]) else None

    def to_dict(self) -> dict:
        """JSON-ready dict: the ``--json`` output of ``puffgm leakage``."""
        sup = self.supremum
        d = {"bpl": self.bpl.tolist(), "fpl": self.fpl.tolist(), "tpl": self.tpl.tolist(), "max_tpl": self.max_tpl,
             "argmax_t": self.argmax, "length": self.length,
             "sup_tpl": None if sup is None else json_float(sup.sup_tpl),
             "sup_tpl_reason": ("per-step budgets: the supremum over T is defined for a constant budget"
                                if sup is None else sup.reason),
             "supremum": None if sup is None else sup.to_dict()}
        c = self.constant_epsilon
        d["epsilon" if c is not None else "epsilons"] = c if c is not None else self.epsilons.tolist()
        d["members"] = [{"name": m.name, "max_tpl": v, "backward": m.backward_source}
                        for m, v in zip(self.members, self.member_max_tpl, strict=True)]
        d["theorem"] = self.theorem
        return d

    def explain(self, max_rows: int = 12) -> str:
        """The leakage over time (first and last steps), its maximum, the suprema and :math:`P^B`'s source."""
        c = self.constant_epsilon
        bud = f"epsilon {c:g} at every step" if c is not None else (
            f"per-step budgets in [{self.epsilons.min():g}, {self.epsilons.max():g}]")
        lines = [f"temporal privacy leakage of {self.label}: T = {self.length}, {bud}",
                 f"max TPL = {self.max_tpl:.6g} at t = {self.argmax} (the Pufferfish parameter of the release)"]
        lines += [f"backward: {m.describe()}" for m in self.members]
        T, half = self.length, max(1, max_rows // 2)
        steps = list(range(T)) if T <= max_rows else list(range(half)) + [None] + list(range(T - half, T))
        lines.append(f"{'t':>8} {'epsilon':>10} {'BPL':>12} {'FPL':>12} {'TPL':>12}")
        for t in steps:
            lines.append("     ..." if t is None else f"{t + 1:>8} {self.epsilons[t]:>10.4g} {self.bpl[t]:>12.6g} "
                         f"{self.fpl[t]:>12.6g} {self.tpl[t]:>12.6g}")
        if self.supremum is not None:
            lines.append(self.supremum.explain())
        lines.append(f"relies on: {self.theorem}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def _leakage(members, budgets: np.ndarray, label: str, supremum: bool = True) -> TemporalLeakage:
    rows = []
    for m in members:
        b = leakage_recursion(m.backward, budgets)
        f = leakage_recursion(m.forward, budgets[::-1])[::-1]
        rows.append((b, f, b + f - budgets))
    bpl, fpl, tpl = (np.max([r[n] for r in rows], axis=0) for n in range(3))
    if not np.all(np.isfinite(tpl)):
        raise NumericalError(f"The temporal privacy leakage of {label} overflowed; lower the budgets or T.")
    sup = _supremum(members, float(budgets[0])) if supremum and np.all(budgets == budgets[0]) else None
    return TemporalLeakage(budgets, _frozen(bpl), _frozen(fpl), _frozen(tpl), tuple(members),
                           tuple(float(np.max(r[2])) for r in rows), sup, label)


def temporal_leakage(chain, *, epsilon=None, epsilons=None, length=None, backward=None) -> TemporalLeakage:
    r"""BPL, FPL and TPL at every step :math:`t` of per-step DP releases (Cao et al., ICDE 2017).

    :math:`\mathrm{BPL}_1 = \epsilon_1`, :math:`\mathrm{BPL}_t = L_B(\mathrm{BPL}_{t-1}) + \epsilon_t`;
    :math:`\mathrm{FPL}_T = \epsilon_T`, :math:`\mathrm{FPL}_t = L_F(\mathrm{FPL}_{t+1}) + \epsilon_t`;
    :math:`\mathrm{TPL}_t = \mathrm{BPL}_t + \mathrm{FPL}_t - \epsilon_t` (module docstring).

    Parameters
    ----------
    chain : ChainPriorClass, ChainPrior, chain spec (JSON path, text or dict), k x k matrix or TemporalCorrelation tuple
        A class gives the pointwise maximum over its members; boxes are refused.
    epsilon : float, optional
        A constant per-step budget (then the suprema as :math:`T` grows are computed too).
    epsilons : sequence of float, optional
        One budget per step (exactly one of ``epsilon`` and ``epsilons``).
    length : int, optional
        :math:`T` (default: the chain's length, or the number of budgets).
    backward : array_like or list of array_like, optional
        :math:`P^B` per member (default: the spec's ``"backward"``, else the time reversal).

    Returns
    -------
    TemporalLeakage
        BPL, FPL and TPL at every step, their maxima and the supremum of the recursion.

    Examples
    --------
    >>> from puffgm.chains import ChainPriorClass
    >>> from puffgm.chains.leakage import temporal_leakage
    >>> chain = ChainPriorClass.from_matrices([[0.8, 0.2], [0.1, 0.9]], length=10)
    >>> res = temporal_leakage(chain, epsilon=0.1)
    >>> round(res.max_tpl, 4), round(res.supremum.sup_tpl, 4)
    (0.4792, 0.5865)
    """
    members, default_length, label = _resolve(chain, backward)
    budgets = _budgets(epsilon, epsilons, length, default_length, "temporal_leakage")
    return _leakage(members, budgets, label)


def leakage_supremum(chain, *, epsilon, backward=None) -> LeakageSupremum:
    r"""Sup over :math:`t, T` of BPL, FPL and TPL for a constant budget :math:`\epsilon` (``inf`` when unbounded).

    The sup of BPL is the fixed point of :math:`a = L_B(a) + \epsilon`, finite iff
    :math:`\epsilon < \epsilon_{\mathrm{crit}}(P^B) = \log(1/x_{\max})` (module docstring); likewise FPL with
    :math:`P^F`; and :math:`\sup \mathrm{TPL} = \sup \mathrm{BPL} + \sup \mathrm{FPL} - \epsilon` (max over the
    members of a class).

    Examples
    --------
    >>> from puffgm.chains.leakage import leakage_supremum
    >>> cycle = [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]]
    >>> sup = leakage_supremum(cycle, epsilon=0.5)
    >>> sup.finite, round(sup.critical_forward, 6)     # finite iff epsilon < log 2
    (True, 0.693147)
    >>> leakage_supremum(cycle, epsilon=0.7).finite
    False
    """
    members, _, _ = _resolve(chain, backward)
    return _supremum(members, check_positive_finite(epsilon, "epsilon", "leakage_supremum"))


# ------------------------------------------------------------------ budget allocation
@dataclass(frozen=True, eq=False)
class BudgetAllocation:
    r"""Per-step budgets keeping :math:`\max_t \mathrm{TPL}_t` at most a target :math:`\alpha`, with their leakage.

    Attributes
    ----------
    scheme : str
        ``"constant"`` (the largest constant budget) or ``"ends"`` (a middle budget and larger
        budgets at the two ends, TPL flat at :math:`\alpha`).
    target : float
        :math:`\alpha`.
    epsilon_step : float
        The constant budget (``"constant"``) or the middle budget :math:`\epsilon_m` (``"ends"``).
    epsilon_first, epsilon_last : float
        :math:`\epsilon_1` and :math:`\epsilon_T`.
    leakage : TemporalLeakage
        The leakage of the allocated budgets (``max_tpl`` :math:`\le` ``target``).
    infeasible_above : float
        ``"constant"``: a budget whose max TPL exceeds the target, within ``rtol`` of
        ``epsilon_step`` (``inf`` when ``epsilon_step`` = ``target`` is feasible).  ``"ends"``: the
        same for the middle budget.
    rtol : float
    notes : tuple of str
    """

    scheme: str
    target: float
    epsilon_step: float
    epsilon_first: float
    epsilon_last: float
    leakage: TemporalLeakage
    infeasible_above: float
    rtol: float
    notes: tuple = ()

    @property
    def epsilons(self) -> np.ndarray:
        r"""The per-step budgets :math:`\epsilon_1, \dots, \epsilon_T`."""
        return self.leakage.epsilons

    def to_dict(self) -> dict:
        """JSON-ready dict (without the per-step series; see ``leakage.to_dict()``)."""
        return {"scheme": self.scheme, "target": self.target, "length": self.leakage.length,
                "epsilon_step": self.epsilon_step, "epsilon_first": self.epsilon_first,
                "epsilon_last": self.epsilon_last, "max_tpl": self.leakage.max_tpl,
                "infeasible_above": json_float(self.infeasible_above), "rtol": self.rtol, "notes": list(self.notes)}

    def explain(self) -> str:
        """The budgets, the leakage they give and why, one per line."""
        T = self.leakage.length
        if self.scheme == "constant":
            head = (f"largest constant budget with max TPL <= {self.target:g} over T = {T}: "
                    f"epsilon {self.epsilon_step:.7g}")
        else:
            head = (f"budgets with larger ends (TPL flat at {self.target:g}) over T = {T}: epsilon_1 = "
                    f"{self.epsilon_first:.7g}, epsilon_2..epsilon_(T-1) = {self.epsilon_step:.7g}, epsilon_T = "
                    f"{self.epsilon_last:.7g}")
        lines = [head, f"max TPL = {self.leakage.max_tpl:.9g} at t = {self.leakage.argmax}"]
        if math.isfinite(self.infeasible_above):
            lines.append(f"a budget of {self.infeasible_above:.7g} (relative {self.rtol:g} above) exceeds the target")
        lines += [f"note: {n}" for n in self.notes]
        lines.append(f"relies on: {self.leakage.theorem}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def _bisect(feasible, lo: float, hi: float, rtol: float) -> tuple:
    r"""(largest feasible found, smallest infeasible found), by geometric bisection.

    It stops when :math:`\mathrm{hi}/\mathrm{lo} - 1 \le` ``rtol``.
    """
    while hi > lo * (1.0 + rtol):
        mid = math.sqrt(lo * hi)
        if not lo < mid < hi:
            break
        if feasible(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi


def _ends_schedule(members, eps_m: float, T: int):
    r"""The ``"ends"`` budgets (:math:`T \ge 2`) for the middle budget :math:`\epsilon_m`.

    None when a supremum is infinite.
    """
    b = [m.backward.fixed_point(epsilon=eps_m) for m in members]
    f = [m.forward.fixed_point(epsilon=eps_m) for m in members]
    if not all(math.isfinite(v) for v in b + f):
        return None
    e = np.full(T, eps_m)
    e[0], e[-1] = min(b), min(f)
    return e


def _allocate_constant(members, alpha, T, rtol, label):
    def max_tpl(eps):
        return _leakage(members, np.full(T, eps), label, supremum=False).max_tpl

    if max_tpl(alpha) <= alpha:
        lo, hi = alpha, math.inf
    else:
        lo = alpha / T
        for _ in range(200):  # TPL <= T epsilon in exact arithmetic: alpha / T is feasible but for rounding
            if max_tpl(lo) <= alpha:
                break
            lo *= 0.5
        else:
            raise NumericalError(f"No constant budget keeps the leakage of {label} below {alpha:g}.")
        lo, hi = _bisect(lambda e: max_tpl(e) <= alpha, lo, alpha, rtol)
    leak = _leakage(members, _budgets(lo, None, T, None, "allocate_budget"), label)
    return BudgetAllocation("constant", alpha, lo, lo, lo, leak, hi, rtol)


def _allocate_ends(members, alpha, T, rtol, label):
    if T == 1:
        leak = _leakage(members, _budgets(alpha, None, 1, None, "allocate_budget"), label)
        return BudgetAllocation("ends", alpha, alpha, alpha, alpha, leak, math.inf, rtol,
                                ("T = 1: the one budget is the target",))
    crit = min(min(m.backward.critical_epsilon, m.forward.critical_epsilon) for m in members)
    if crit == 0.0:
        worst = next(fn for m in members for fn in (m.backward, m.forward) if fn.critical_epsilon == 0.0)
        raise NotApplicableError("The budget scheme with larger ends needs a finite supremum of the leakage, but "
                                 f"{worst.explain_critical()}.")

    def realised(eps_m):
        e = _ends_schedule(members, eps_m, T)
        return None if e is None else _leakage(members, e, label, supremum=False)

    def feasible(eps_m):
        leak = realised(eps_m)
        return leak is not None and leak.max_tpl <= alpha

    hi = min(alpha, crit)
    lo = hi
    for _ in range(2000):
        lo *= 0.5
        if feasible(lo):
            break
    else:
        raise NumericalError(f"No middle budget keeps the leakage of {label} below {alpha:g}.")
    lo, hi = _bisect(feasible, lo, hi, rtol)
    leak = _leakage(members, _ends_schedule(members, lo, T), label, supremum=False)
    notes = ("epsilon_1 = sup BPL and epsilon_T = sup FPL of the middle budget (min over the members), so BPL and "
             "FPL start at their fixed points; the idea of Cao et al.'s budget allocation with larger ends (TKDE)",)
    return BudgetAllocation("ends", alpha, lo, float(leak.epsilons[0]), float(leak.epsilons[-1]), leak, hi, rtol,
                            notes)


def allocate_budget(chain, *, epsilon=None, length=None, scheme: str = "constant", rtol: float = 1e-6,
                    backward=None, **deprecated) -> BudgetAllocation:
    r"""Per-step budgets with :math:`\max_t \mathrm{TPL}_t \le \epsilon` (Cao et al.'s budget allocation).

    Parameters
    ----------
    chain : as for :func:`temporal_leakage`
    epsilon : float
        :math:`\alpha`, the largest acceptable TPL: the guarantee asked for (``target`` is its
        deprecated name; ``puffgm leakage --target``).
    length : int, optional
        :math:`T` (default: the chain's length).
    scheme : ``"constant"`` or ``"ends"``
        ``"constant"``: the largest constant budget :math:`\epsilon` with
        :math:`\max_t \mathrm{TPL}_t \le \alpha`, by geometric bisection (TPL increases with
        :math:`\epsilon`) until a budget within ``rtol`` above it exceeds :math:`\alpha`.  ``"ends"``: a
        middle budget :math:`\epsilon_m`, the largest (to ``rtol``) with :math:`\max \mathrm{TPL} \le \alpha`
        when :math:`\epsilon_1 = \sup \mathrm{BPL}(\epsilon_m)` and
        :math:`\epsilon_T = \sup \mathrm{FPL}(\epsilon_m)`; TPL is then flat at (almost exactly)
        :math:`\alpha`.  This follows the idea of Cao et al. (TKDE 2018, budget allocation with
        larger budgets at the first and last steps); the exact schedule is puffgm's (module docstring).
    rtol : float
        Relative precision of the budget (default :math:`10^{-6}`).

    Returns
    -------
    BudgetAllocation
        The per-step budgets and the leakage they give at every step.

    Raises
    ------
    NotApplicableError
        ``"ends"`` when the supremum is infinite for every budget (two rows with disjoint supports).

    Examples
    --------
    >>> from puffgm.chains.leakage import allocate_budget
    >>> P = [[0.8, 0.2], [0.1, 0.9]]
    >>> a = allocate_budget(P, epsilon=1.0, length=50)
    >>> a.leakage.max_tpl <= 1.0, round(a.epsilon_step, 4)
    (True, 0.1692)
    """
    epsilon = renamed(deprecated, "target", "epsilon", "allocate_budget", epsilon)
    refuse_unexpected(deprecated, "allocate_budget")
    alpha = check_positive_finite(epsilon, "epsilon", "allocate_budget")
    rtol = check_positive_finite(rtol, "rtol", "allocate_budget")
    if scheme not in ("constant", "ends"):
        raise ParameterError(f"The 'scheme' of allocate_budget must be 'constant' or 'ends'. Got {scheme!r} instead.")
    members, default_length, label = _resolve(chain, backward)
    if length is None and default_length is None:
        raise ParameterError("Give allocate_budget the 'length' T: the chain has no length of its own.")
    T = check_length(default_length if length is None else length, "allocate_budget")
    if scheme == "constant":
        return _allocate_constant(members, alpha, T, min(rtol, 0.5), label)
    return _allocate_ends(members, alpha, T, min(rtol, 0.5), label)
