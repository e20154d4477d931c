r"""Exact conditional laws of a sum query on a Markov chain: forward and backward passes over a partial-sum axis.

For a chain :math:`X_1 \to \dots \to X_T` with initial law :math:`q` and transition matrix :math:`P`,
and :math:`F = \sum_t s_t(X_t)` on the integer grid (:mod:`puffgm.core.query`):

* forward: :math:`\alpha_t(x, g) = P(s_1(X_1) + \dots + s_{t-1}(X_{t-1}) = g, X_t = x)`,
  :math:`\alpha_{t+1}(y, g) = \sum_x \alpha_t(x, g - s_t(x)) P(x, y)`;
* backward: :math:`\beta_t(x, g) = P(s_{t+1}(X_{t+1}) + \dots + s_T(X_T) = g \mid X_t = x)`,
  :math:`\beta_t(x, g) = \sum_y P(x, y)\, \beta_{t+1}(y, g - s_{t+1}(y))`;
* given :math:`X_t = x` the past and the future are independent (Markov property), so
  :math:`P(F = g, X_t = x)` is the convolution of :math:`\alpha_t(x, \cdot)` shifted by :math:`s_t(x)`
  with :math:`\beta_t(x, \cdot)`, and :math:`P(F \mid X_t = x)` follows by dividing by :math:`P(X_t = x)`.

Everything is in log space (log-sum-exps of sums of logs, no FFT), so tails of
any size keep their relative precision.  The passes cost :math:`O(T^2 k^2)` and the
convolutions :math:`O(T^3 k)` in all: the exact laws are computed up to
``max_exact_length`` positions.  Beyond it the Wasserstein mechanism uses a
certified upper bound instead: coupling the past and the future independently
(they are conditionally independent given :math:`X_t`) gives

$$
W_\infty(\mu_{t,a}, \mu_{t,b}) \le W_\infty(A_{t,a}, A_{t,b}) + |s_t(a) - s_t(b)| + W_\infty(B_{t,a}, B_{t,b}),
$$

with :math:`A_{t,x}` the law of the past sum given :math:`X_t = x` and :math:`B_{t,x}` that of the
future sum (both from the passes, :math:`O(T^2 k^2)` in all).  Since the loss of
:math:`F + \mathrm{Lap}(b)` is non-increasing in :math:`b` (:mod:`puffgm.mechanisms.query`), Laplace
noise of scale (upper bound) :math:`/ \epsilon` is :math:`\epsilon`-Pufferfish private.
"""

from __future__ import annotations

import math

import numpy as np

from puffgm.chains.budget import ChainClock, check_chain_length, check_memory
from puffgm.chains.priors import node_name
from puffgm.core.kernels import log_convolve, log_convolve_grid, log_sum_exp
from puffgm.core.laws import NodeLaws
from puffgm.core.query import BoundQuery
from puffgm.exceptions import NotApplicableError, ParameterError
from puffgm.mechanisms.query import w_inf_near

__all__ = ["chain_query_laws", "chain_joint_laws", "check_query_budget", "DEFAULT_MAX_EXACT_LENGTH", "QUERY_ADVICE"]

#: Longest chain whose conditional laws are computed exactly at every position (the cost grows as T^3).
DEFAULT_MAX_EXACT_LENGTH = 600
#: Least seconds of one step of a pass (Python and numpy overhead) and of one unit of work (one
#: log-sum-exp of a partial-sum entry, per pair of states); the projections use these low ends.
_STEP_SECONDS, _UNIT_SECONDS = 5e-6, 1e-8
#: Bytes per node held by the bound query, the score grid and the per-position results (per pair).
_NODE_BYTES, _PAIR_BYTES = 400, 200
#: Least seconds to bind the query to one node (its name, its state names and its scores).
_BIND_SECONDS = 2e-6
QUERY_ADVICE = "use the Markov Quilt Mechanism (--method exact), which does not depend on the query, or a shorter chain"


def _scores(query: BoundQuery, T: int, k: int) -> np.ndarray:
    r"""(T, k) grid scores of :math:`X_1, \dots, X_T` (0 for unscored nodes), in one pass over the scored nodes."""
    out = np.zeros((T, k), dtype=np.int64)
    for name, sc in zip(query.nodes, query.scores, strict=True):
        out[int(name[1:]) - 1] = sc  # node_name(t) is "X<t>"
    return out


class _Work:
    """The clock of the passes with their total work in units of partial-sum entries (see :func:`_work`)."""

    def __init__(self, clock: ChainClock, total: float):
        self.clock, self.total, self.done = clock, max(total, 1.0), 0.0

    def step(self, units: float):
        self.done += units
        self.clock.check(self.done, self.total, f" ({self.done / self.total:.1%} of its passes done)")


def _projected(clock: ChainClock, n_members: int, steps: float, units: float, nbytes: float) -> _Work:
    """The clock of the passes over ``n_members`` chains, refused up front when their projected memory
    or time (``steps``, ``units`` and ``nbytes`` per member) is over the budget."""
    check_memory(nbytes * n_members, clock.what, QUERY_ADVICE)
    clock.project(n_members * (steps * _STEP_SECONDS + units * _UNIT_SECONDS))
    return _Work(clock, n_members * units)


def _work(S: np.ndarray, n_pairs: int, exact: bool) -> tuple:
    r"""(steps, units, bytes) of the passes over one member: forward and backward widths summed.

    The forward width at :math:`t` is 1 + the sum of the largest scores before :math:`t`, the backward one
    1 + the sum after :math:`t`; each step costs :math:`k^2 + 8 \times \text{pairs}` units per width entry (the
    transition and the :math:`W_\infty` searches); the exact road adds the convolutions (:math:`k` times forward
    width times backward width) and holds the backward tables and the laws (:math:`k (\text{total} + 1)` per
    position).
    """
    T, k = S.shape
    smax = S.max(axis=1).astype(float)
    fwd = 1.0 + np.concatenate([[0.0], np.cumsum(smax)[:-1]])
    bwd = 1.0 + (smax.sum() - np.cumsum(smax))
    units = float((fwd + bwd).sum()) * (k * k + 8 * n_pairs)
    nbytes = float(T) * (_NODE_BYTES + 8 * k + _PAIR_BYTES * n_pairs)
    if exact:
        units += float((fwd * bwd).sum()) * k
        nbytes += 8.0 * k * (float(bwd.sum()) + 2.0 * T * (smax.sum() + 1))
    return 2 * T, units, nbytes


def check_query_budget(T: int, k: int, n_members: int, clock: ChainClock) -> None:
    """Refuse, before the query is bound to the T nodes, when T alone puts the work over the budget.

    Binding holds a name and a score row per node; the passes take at least 2 T steps per member.
    """
    n_pairs = k * (k - 1) // 2
    check_memory(float(T) * (_NODE_BYTES + 8 * k + _PAIR_BYTES * n_pairs * n_members), clock.what, QUERY_ADVICE)
    clock.project(float(T) * (2 * n_members * _STEP_SECONDS + _BIND_SECONDS), " (at least)")


def _shift(row: np.ndarray, by: int, length: int) -> np.ndarray:
    out = np.full(length, -np.inf)
    out[by:by + row.shape[-1]] = row
    return out


def _shifted(rows: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Row x moved right by scores[x] on a common axis of length rows.shape[1] + max(scores): adding X's score."""
    width = rows.shape[1] + int(scores.max())
    return np.stack([_shift(rows[x], int(scores[x]), width) for x in range(rows.shape[0])])


def _forward(logq, logP, S, work: _Work):
    r""":math:`\alpha_t` for :math:`t = 1, \dots, T` (each (k, 1 + sum of max scores before t)), as a generator."""
    alpha = logq[:, None].copy()
    for t in range(S.shape[0]):
        yield alpha
        if t == S.shape[0] - 1:
            return
        work.step(alpha.shape[1] * work_per_entry(S.shape[1]))
        with np.errstate(invalid="ignore"):
            alpha = np.logaddexp.reduce(_shifted(alpha, S[t])[:, None, :] + logP[:, :, None], axis=0)


def _backward(logP, S, work: _Work):
    r"""(t, :math:`\beta_t`) for :math:`t = T, \dots, 1` (0-based: T-1 down to 0), as a generator.

    Each :math:`\beta_t` has shape (k, 1 + sum of max scores after t).
    """
    T, k = S.shape
    beta = np.zeros((k, 1))
    for t in range(T - 1, -1, -1):
        if t < T - 1:
            work.step(beta.shape[1] * work_per_entry(k))
            with np.errstate(invalid="ignore"):
                beta = np.logaddexp.reduce(logP[:, :, None] + _shifted(beta, S[t + 1])[None, :, :], axis=1)
        yield t, beta


def _convolve_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise log-space convolution of (k, la) and (k, lb) (:func:`puffgm.core.kernels.log_convolve`)."""
    return log_convolve(a, b)


def work_per_entry(k: int) -> int:
    """Units of :func:`_work` per partial-sum entry of a step: :math:`k^2` for the transition, 8 per pair of states."""
    return k * k + 4 * k * (k - 1)


def _normalise(rows: np.ndarray):
    with np.errstate(divide="ignore", invalid="ignore"):
        marg = np.logaddexp.reduce(rows, axis=1)
        cond = np.where(np.isfinite(marg)[:, None], rows - marg[:, None], -np.inf)
    return cond, marg


def _exact_member(m, index: int, S, pairs, work: _Work) -> list:
    logq, logP = _logs(m)
    beta = dict(_backward(logP, S, work))
    total = int(S.max(axis=1).sum())
    out = []
    for t, alpha in enumerate(_forward(logq, logP, S, work)):
        work.step(m.k * alpha.shape[1] * beta[t].shape[1])
        joint = _convolve_rows(_shifted(alpha, S[t]), beta[t])
        joint = np.concatenate([joint, np.full((m.k, total + 1 - joint.shape[1]), -np.inf)], axis=1)
        cond, marg = _normalise(joint)
        out.append(NodeLaws(prior=index, node=node_name(t + 1), states=m.states, log_cond=cond,
                            log_marginal=marg, pairs=pairs))
    return out


def _backward_w(logP, S, pairs, work: _Work) -> list:
    r""":math:`W_\infty` between the future-sum laws :math:`B_{t,a}` and :math:`B_{t,b}` for every :math:`t` and pair.

    :math:`\beta` is not stored.
    """
    out: list = [None] * S.shape[0]
    guess = [0] * len(pairs)
    for t, beta in _backward(logP, S, work):
        guess = [w_inf_near(beta[a], beta[b], g) for (a, b), g in zip(pairs, guess, strict=True)]
        out[t] = guess
    return out


def _bounds_member(m, index: int, S, pairs, work: _Work) -> list:
    """Certified upper bounds on W_inf per position and pair (past and future coupled separately)."""
    logq, logP = _logs(m)
    future = _backward_w(logP, S, pairs, work)
    out = []
    guess = [0] * len(pairs)
    for t, alpha in enumerate(_forward(logq, logP, S, work)):
        past, pmarg = _normalise(alpha)
        for j, (a, b) in enumerate(pairs):
            if not (np.isfinite(pmarg[a]) and np.isfinite(pmarg[b])):
                continue
            guess[j] = w_inf_near(past[a], past[b], guess[j])
            w = guess[j] + abs(int(S[t, a]) - int(S[t, b])) + future[t][j]
            out.append((index, node_name(t + 1), m.states[a], m.states[b], w))
    return out


def _logs(m):
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(m.initial_vector, dtype=float)), np.log(m.transition)


def _known_chain(chain_class, where: str) -> tuple:
    """(T, k) of a class whose members all have a known initial law; NotApplicableError for ``"any"``."""
    for m in chain_class.members:
        if m.initial_kind == "any":
            raise NotApplicableError(
                f"Chain {m.name!r} has the initial law 'any', an infinite class of initial laws; query-specific "
                "calibration needs a known initial law (a vector or 'stationary')."
            )
    return check_chain_length(chain_class.length, where), chain_class.members[0].k


def _state_pairs(k: int) -> tuple:
    """The pairs (a, b), a < b, of the k states: the secret pairs of one X_t."""
    return tuple((a, b) for a in range(k) for b in range(a + 1, k))


def chain_query_laws(chain_class, query: BoundQuery, *, max_exact_length: int = DEFAULT_MAX_EXACT_LENGTH,
                     deadline: float | None = None, clock: ChainClock | None = None) -> tuple:
    r"""The conditional laws of the query given each state of each :math:`X_t`, for every chain of the class.

    Parameters
    ----------
    chain_class : ChainPriorClass
        Members with a known initial law (a vector or ``"stationary"``).
    query : BoundQuery
        Bound to the nodes X1..XT.
    max_exact_length : int
        Longest chain computed exactly; longer chains get certified :math:`W_\infty` bounds.
    deadline : float, optional
        ``time.monotonic()`` value after which TimeLimitError is raised.
    clock : ChainClock, optional
        The budget, given instead of ``deadline`` (it names the computation in refusals).
        The work of the passes (:func:`_work`) is projected before they start and refused
        when over the limit or over the memory budget; every step checks the clock.

    Returns
    -------
    (laws, w_bounds, exact)
        ``laws`` a list of NodeLaws when exact, else ``w_bounds`` a list of
        ``(prior, node, a, b, w)`` upper bounds.

    Raises
    ------
    NotApplicableError
        For a member whose initial law is ``"any"`` (an infinite class of initial laws).
    TimeLimitError, InferenceLimitError
        When the projected time or memory is over the budget (one sentence with the projection).
    """
    T, k = _known_chain(chain_class, "chain_query_laws")
    S = _scores(query, T, k)
    pairs = _state_pairs(k)
    exact = T <= max_exact_length
    if clock is None:
        clock = ChainClock(what=f"Computing the query's laws on the chain (T = {T}, k = {k})", advice=QUERY_ADVICE,
                           deadline=deadline)
    work = _projected(clock, len(chain_class.members), *_work(S, len(pairs), exact))
    laws, bounds = [], []
    for i, m in enumerate(chain_class.members):
        if exact:
            laws.extend(_exact_member(m, i, S, pairs, work))
        else:
            bounds.extend(_bounds_member(m, i, S, pairs, work))
    return laws, bounds, exact


# ------------------------------------------------------------------ a workload: a grid of partial sums


def _grid_scores(workload, T: int, k: int) -> np.ndarray:
    r"""(T, k, d) grid scores of :math:`X_1, \dots, X_T` for the :math:`d` statistics of a bound workload.

    0 for unscored nodes.
    """
    out = np.zeros((T, k, workload.k), dtype=np.int64)
    for name, rows in workload.node_score_rows().items():
        out[int(name[1:]) - 1] = rows  # node_name(t) is "X<t>"
    return out


def _shifted_grid(rows: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Table x (a grid of d axes) moved by the vector scores[x] on a common grid: adding X's scores."""
    grid = rows.shape[1:]
    top = scores.max(axis=0)
    out = np.full((rows.shape[0],) + tuple(int(n + m) for n, m in zip(grid, top, strict=True)), -np.inf)
    for x, sc in enumerate(scores):
        out[(x,) + tuple(slice(int(c), int(c) + n) for c, n in zip(sc, grid, strict=True))] = rows[x]
    return out


def _step_grid(rows: np.ndarray, logP: np.ndarray, axis: int) -> np.ndarray:
    """log sum over the states on ``axis`` of rows times the transition (forward: axis 0, backward: axis 1)."""
    d = rows.ndim - 1
    lp = logP.reshape(logP.shape + (1,) * d)
    with np.errstate(invalid="ignore"):
        if axis == 0:
            return np.logaddexp.reduce(rows[:, None] + lp, axis=0)
        return np.logaddexp.reduce(lp + rows[None, :], axis=1)


def _forward_grid(logq, logP, S, work: _Work):
    r""":math:`\alpha_t` for :math:`t = 1, \dots, T` on the grid, as a generator.

    Each has shape (k, box of the partial sums before t).
    """
    alpha = logq.reshape((-1,) + (1,) * S.shape[2])
    for t in range(S.shape[0]):
        yield alpha
        if t == S.shape[0] - 1:
            return
        work.step(alpha[0].size * work_per_entry(S.shape[1]))
        alpha = _step_grid(_shifted_grid(alpha, S[t]), logP, 0)


def _backward_grid(logP, S, work: _Work):
    r"""(t, :math:`\beta_t`) for :math:`t = T, \dots, 1` on the grid, as a generator.

    Each :math:`\beta_t` has shape (k, box of the partial sums after t).
    """
    T, k, d = S.shape
    beta = np.zeros((k,) + (1,) * d)
    for t in range(T - 1, -1, -1):
        if t < T - 1:
            work.step(beta[0].size * work_per_entry(k))
            beta = _step_grid(_shifted_grid(beta, S[t + 1]), logP, 1)
        yield t, beta


def _grid_work(S: np.ndarray, n_pairs: int, dims: tuple) -> tuple:
    r"""(steps, units, bytes) of the grid passes over one member, as :func:`_work` counts them.

    The passes cost :math:`k^2 + 8 \times \text{pairs}` units per cell of the forward and backward grids (the
    products of the per-axis widths); the convolution at each position is counted at its
    output's cells per state, a lower end (it skips the exact zeros); the memory holds the
    backward grids and the laws (:math:`k \prod_j (n_j + 1)` per position).
    """
    T, k, _ = S.shape
    smax = S.max(axis=1).astype(float)  # (T, d)
    fwd = np.prod(1.0 + np.vstack([np.zeros((1, smax.shape[1])), np.cumsum(smax, axis=0)[:-1]]), axis=1)
    bwd = np.prod(1.0 + (smax.sum(axis=0) - np.cumsum(smax, axis=0)), axis=1)
    cells = float(np.prod(np.asarray(dims, dtype=float)))
    units = float((fwd + bwd).sum()) * work_per_entry(k) + T * k * cells
    nbytes = float(T) * (_NODE_BYTES + 8 * k + _PAIR_BYTES * n_pairs) + 8.0 * k * (float(bwd.sum()) + 2.0 * T * cells)
    return 2 * T, units, nbytes


def _joint_member(m, index: int, S, dims: tuple, pairs, work: _Work) -> list:
    logq, logP = _logs(m)
    beta = dict(_backward_grid(logP, S, work))
    out = []
    for t, alpha in enumerate(_forward_grid(logq, logP, S, work)):
        b = beta.pop(t)
        work.step(m.k * math.prod(dims))
        joint = log_convolve_grid(_shifted_grid(alpha, S[t]), b, S.shape[2])
        if joint.shape[1:] != dims:
            raise ParameterError("The grid of a chain's joint laws does not match the workload; "
                                 "this is a bug in puffgm.")
        flat = joint.reshape(m.k, -1)
        marg = log_sum_exp(flat, 1)  # compiled for large grids
        with np.errstate(invalid="ignore"):
            cond = np.where(np.isfinite(marg)[:, None], flat - marg[:, None], -np.inf)
        out.append(NodeLaws(prior=index, node=node_name(t + 1), states=m.states, log_cond=cond.reshape(joint.shape),
                            log_marginal=marg, pairs=pairs))
    return out


def chain_joint_laws(chain_class, workload, *, max_exact_length: int = DEFAULT_MAX_EXACT_LENGTH,
                     deadline: float | None = None, clock: ChainClock | None = None) -> list:
    r"""The joint laws of a workload's :math:`d` grid sums given each state of each :math:`X_t`, for every chain.

    The forward and backward passes of :func:`chain_query_laws` with a grid of :math:`d` partial sums,
    one axis per statistic, instead of one axis: :math:`\alpha_t(x, g)` and :math:`\beta_t(x, g)` with
    :math:`g` a cell of the grid, :math:`X_t`'s state moving the grid by its row of scores
    :math:`(s_1(x), \dots, s_d(x))`, and :math:`P(G = g, X_t = x)` the grid convolution of the two
    (:func:`puffgm.core.kernels.log_convolve_grid`); in log space, with exact zeros.

    Parameters
    ----------
    chain_class : ChainPriorClass
        Members with a known initial law (a vector or ``"stationary"``).
    workload : BoundWorkload
        Bound to the nodes X1..XT.
    max_exact_length : int
        Longest chain computed (the joint laws are exact at every position or not computed).
    deadline : float, optional
    clock : ChainClock, optional
        As :func:`chain_query_laws`: the work is projected before the passes and checked at every step.

    Returns
    -------
    list of NodeLaws
        ``log_cond`` of shape ``(k,) + workload.dims``.

    Raises
    ------
    NotApplicableError
        For a member whose initial law is ``"any"``.
    ParameterError
        When T exceeds ``max_exact_length``.
    TimeLimitError, InferenceLimitError
        When the projected time or memory is over the budget.
    """
    T, k = _known_chain(chain_class, "chain_joint_laws")
    if T > max_exact_length:
        raise ParameterError(f"A workload needs the exact joint laws at every position, which are computed for "
                             f"chains of length at most max_exact_length = {max_exact_length}; this one has T = {T}: "
                             "use the Markov Quilt Mechanism (--method exact).")
    S = _grid_scores(workload, T, k)
    pairs = _state_pairs(k)
    if clock is None:
        clock = ChainClock(what=f"Computing the workload's joint laws on the chain (T = {T}, k = {k})",
                           advice=QUERY_ADVICE, deadline=deadline)
    work = _projected(clock, len(chain_class.members), *_grid_work(S, len(pairs), workload.dims))
    laws = []
    for i, m in enumerate(chain_class.members):
        laws.extend(_joint_member(m, i, S, tuple(workload.dims), pairs, work))
    return laws
