"""Exact conditional laws of a sum query on a Markov chain: forward and backward passes over a partial-sum axis.

For a chain X_1 -> ... -> X_T with initial law q and transition matrix P,
and F = sum_t s_t(X_t) on the integer grid (:mod:`puffgm.core.query`):

* forward: ``alpha_t(x, g) = P(s_1(X_1) + ... + s_{t-1}(X_{t-1}) = g, X_t = x)``,
  ``alpha_{t+1}(y, g) = sum_x alpha_t(x, g - s_t(x)) P(x, y)``;
* backward: ``beta_t(x, g) = P(s_{t+1}(X_{t+1}) + ... + s_T(X_T) = g | X_t = x)``,
  ``beta_t(x, g) = sum_y P(x, y) beta_{t+1}(y, g - s_{t+1}(y))``;
* given X_t = x the past and the future are independent (Markov property), so
  ``P(F = g, X_t = x) = (alpha_t(x, .) shifted by s_t(x)) * beta_t(x, .)``
  (a convolution), and P(F | X_t = x) follows by dividing by P(X_t = x).

Everything is in log space (log-sum-exps of sums of logs, no FFT), so tails of
any size keep their relative precision.  The passes cost O(T^2 k^2) and the
convolutions O(T^3 k) in all: the exact laws are computed up to
``max_exact_length`` positions.  Beyond it the Wasserstein mechanism uses a
certified upper bound instead: coupling the past and the future independently
(they are conditionally independent given X_t) gives

    W_inf(mu_{t,a}, mu_{t,b}) <= W_inf(A_{t,a}, A_{t,b}) + |s_t(a) - s_t(b)| + W_inf(B_{t,a}, B_{t,b}),

with A_{t,x} the law of the past sum given X_t = x and B_{t,x} that of the
future sum (both from the passes, O(T^2 k^2) in all).  Since the loss of
F + Lap(b) is non-increasing in b (:mod:`puffgm.mechanisms.query`), Laplace
noise of scale (upper bound) / epsilon is epsilon-Pufferfish private.
"""

from __future__ import annotations

import time

import numpy as np

from puffgm.chains.priors import node_name
from puffgm.core.query import BoundQuery
from puffgm.exceptions import NotApplicableError, TimeLimitError
from puffgm.mechanisms.query import NodeLaws, w_inf_near

__all__ = ["chain_query_laws", "DEFAULT_MAX_EXACT_LENGTH"]

#: Longest chain whose conditional laws are computed exactly at every position (the cost grows as T^3).
DEFAULT_MAX_EXACT_LENGTH = 600


def _scores(query: BoundQuery, T: int, k: int) -> np.ndarray:
    """(T, k) grid scores of X_1..X_T (0 for unscored nodes)."""
    out = np.zeros((T, k), dtype=np.int64)
    for t in range(T):
        name = node_name(t + 1)
        if name in query.nodes:
            out[t] = query.score_vector(name)
    return out


def _shift(row: np.ndarray, by: int, length: int) -> np.ndarray:
    out = np.full(length, -np.inf)
    out[by:by + row.shape[-1]] = row
    return out


def _shifted(rows: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Row x moved right by scores[x] on a common axis of length rows.shape[1] + max(scores): adding X's score."""
    width = rows.shape[1] + int(scores.max())
    return np.stack([_shift(rows[x], int(scores[x]), width) for x in range(rows.shape[0])])


def _forward(logq, logP, S, deadline):
    """alpha_t for t = 1..T (each (k, 1 + sum of max scores before t)), as a generator."""
    alpha = logq[:, None].copy()
    for t in range(S.shape[0]):
        yield alpha
        if t == S.shape[0] - 1:
            return
        _check(deadline)
        with np.errstate(invalid="ignore"):
            alpha = np.logaddexp.reduce(_shifted(alpha, S[t])[:, None, :] + logP[:, :, None], axis=0)


def _backward(logP, S, deadline):
    """(t, beta_t) for t = T..1 (0-based T-1..0; each (k, 1 + sum of max scores after t)), as a generator."""
    T, k = S.shape
    beta = np.zeros((k, 1))
    for t in range(T - 1, -1, -1):
        if t < T - 1:
            _check(deadline)
            with np.errstate(invalid="ignore"):
                beta = np.logaddexp.reduce(logP[:, :, None] + _shifted(beta, S[t + 1])[None, :, :], axis=1)
        yield t, beta


def _convolve_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise log-space convolution of (k, la) and (k, lb)."""
    if a.shape[1] > b.shape[1]:
        a, b = b, a
    la, lb = a.shape[1], b.shape[1]
    out = np.full((a.shape[0], la + lb - 1), -np.inf)
    with np.errstate(invalid="ignore"):
        for t in range(la):
            seg = out[:, t:t + lb]
            np.logaddexp(seg, a[:, t:t + 1] + b, out=seg)
    return out


def _check(deadline):
    if deadline is not None and time.monotonic() > deadline:
        raise TimeLimitError("The time limit passed while computing the query's laws on the chain; use the "
                             "Markov Quilt Mechanism (--method exact), which does not depend on the query.")


def _normalise(rows: np.ndarray):
    with np.errstate(divide="ignore", invalid="ignore"):
        marg = np.logaddexp.reduce(rows, axis=1)
        cond = np.where(np.isfinite(marg)[:, None], rows - marg[:, None], -np.inf)
    return cond, marg


def _exact_member(m, index: int, S, pairs, deadline) -> list:
    logq, logP = _logs(m)
    beta = dict(_backward(logP, S, deadline))
    total = int(S.max(axis=1).sum())
    out = []
    for t, alpha in enumerate(_forward(logq, logP, S, deadline)):
        _check(deadline)
        joint = _convolve_rows(_shifted(alpha, S[t]), beta[t])
        joint = np.concatenate([joint, np.full((m.k, total + 1 - joint.shape[1]), -np.inf)], axis=1)
        cond, marg = _normalise(joint)
        out.append(NodeLaws(prior=index, node=node_name(t + 1), states=m.states, log_cond=cond,
                            log_marginal=marg, pairs=pairs))
    return out


def _backward_w(logP, S, pairs, deadline) -> list:
    """W_inf between the future-sum laws B_{t,a} and B_{t,b} for every t and pair (beta not stored)."""
    out: list = [None] * S.shape[0]
    guess = [0] * len(pairs)
    for t, beta in _backward(logP, S, deadline):
        guess = [w_inf_near(beta[a], beta[b], g) for (a, b), g in zip(pairs, guess, strict=True)]
        out[t] = guess
    return out


def _bounds_member(m, index: int, S, pairs, deadline) -> list:
    """Certified upper bounds on W_inf per position and pair (past and future coupled separately)."""
    logq, logP = _logs(m)
    future = _backward_w(logP, S, pairs, deadline)
    out = []
    guess = [0] * len(pairs)
    for t, alpha in enumerate(_forward(logq, logP, S, deadline)):
        _check(deadline)
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


def chain_query_laws(chain_class, query: BoundQuery, *, max_exact_length: int = DEFAULT_MAX_EXACT_LENGTH,
                     deadline: float | None = None) -> tuple:
    """The conditional laws of the query given each state of each X_t, for every chain of the class.

    Parameters
    ----------
    chain_class : ChainPriorClass
        Members with a known initial law (a vector or ``"stationary"``).
    query : BoundQuery
        Bound to the nodes X1..XT.
    max_exact_length : int
        Longest chain computed exactly; longer chains get certified W bounds.
    deadline : float, optional
        ``time.monotonic()`` value after which TimeLimitError is raised.

    Returns
    -------
    (laws, w_bounds, exact)
        ``laws`` a list of NodeLaws when exact, else ``w_bounds`` a list of
        ``(prior, node, a, b, w)`` upper bounds.

    Raises
    ------
    NotApplicableError
        For a member whose initial law is ``"any"`` (an infinite class of initial laws).
    """
    for m in chain_class.members:
        if m.initial_kind == "any":
            raise NotApplicableError(
                f"Chain {m.name!r} has the initial law 'any', an infinite class of initial laws; query-specific "
                "calibration needs a known initial law (a vector or 'stationary')."
            )
    T, k = chain_class.length, chain_class.members[0].k
    S = _scores(query, T, k)
    pairs = tuple((a, b) for a in range(k) for b in range(a + 1, k))
    exact = T <= max_exact_length
    laws, bounds = [], []
    for i, m in enumerate(chain_class.members):
        if exact:
            laws.extend(_exact_member(m, i, S, pairs, deadline))
        else:
            bounds.extend(_bounds_member(m, i, S, pairs, deadline))
    return laws, bounds, exact
