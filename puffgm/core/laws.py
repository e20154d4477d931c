r"""The exact conditional laws of a sum query given each secret: what every prior kind with query laws hands on.

For a sum query F (:mod:`puffgm.core.query`) and a prior class Theta, a prior kind
(:meth:`puffgm.core.prior.PriorKind.query_laws`) computes
:math:`\log P(G = g \mid X_i = x)` for the grid sum G of F, every prior, every protected node i and
every state x: one :class:`NodeLaws` per (prior, node), gathered in one :class:`QueryLaws`.  The
calibrations that read them (the Wasserstein mechanism, the optimal Laplace scale and noise, the
workloads) live in :mod:`puffgm.mechanisms`; the laws sit here, below every prior kind and every
mechanism, so each kind builds them without importing a mechanism.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from puffgm.core.query import BoundQuery
from puffgm.core.witness import Witness

__all__ = ["NodeLaws", "QueryLaws", "stack_laws"]


@dataclass(frozen=True)
class NodeLaws:
    r"""The laws of the query given each state of one node, under one prior.

    Attributes
    ----------
    prior : int
        Index of the prior in the class.
    node : str
    states : tuple of str
    log_cond : ndarray, shape (n_states, total + 1)
        :math:`\log P(G = g \mid X_{\mathrm{node}} = x)` for the grid sum :math:`G` of the query; rows of
        states of probability 0 are ``-inf``.
    log_marginal : ndarray, shape (n_states,)
        :math:`\log P(X_{\mathrm{node}} = x)`.
    pairs : tuple of (int, int)
        The discriminative pairs of the node (state indices).
    """

    prior: int
    node: str
    states: tuple
    log_cond: np.ndarray
    log_marginal: np.ndarray
    pairs: tuple

    def active_pairs(self) -> list:
        """The pairs whose two states have positive probability (the technical condition)."""
        pos = self.log_marginal > -np.inf
        return [(a, b) for a, b in self.pairs if pos[a] and pos[b]]


@dataclass(frozen=True)
class QueryLaws:
    r"""Everything query-specific calibration needs from a prior class: the conditional laws of F.

    Attributes
    ----------
    query : BoundQuery
    laws : tuple of NodeLaws
        One per (prior, protected node with a pair).
    n_priors : int
    group_sensitivity : int
        Group-DP sensitivity of the query in grid units: the largest sum of
        score ranges over a group of correlated nodes.
    prior_name : str
    secrets : str
        Identifier of the resolved secrets.
    w_bounds : tuple
        For classes whose exact laws are too costly at every position (long
        chains): ``(prior, node, a, b, w)`` with w a certified upper bound on
        :math:`W_\infty` in grid units; then ``laws`` is empty and ``exact`` is False.
    exact : bool
    notes : tuple of str
    seconds : float
        Time spent computing the laws.
    """

    query: BoundQuery
    laws: tuple
    n_priors: int
    group_sensitivity: int
    prior_name: str = ""
    secrets: str = ""
    w_bounds: tuple = ()
    exact: bool = True
    notes: tuple = ()
    seconds: float = 0.0

    def stacked(self):
        """(rows, pairs, labels): every conditional law as a row, and the audited pairs as row indices.

        ``rows`` has shape (n_rows, total + 1); ``pairs`` is an int array (n_pairs, 2);
        ``labels[k]`` is the :class:`~puffgm.core.witness.Witness` (prior, node, pair of states) of pair k.  Built once
        per QueryLaws (W, the losses, the optimal scale and the optimal noise all
        read it); the arrays are read-only.
        """
        return self._stack

    @functools.cached_property
    def _stack(self):
        return stack_laws(self.laws, (self.query.total + 1,))


def stack_laws(laws, row_shape: tuple):
    """(rows, pairs, labels) of :meth:`QueryLaws.stacked` from NodeLaws whose rows have shape ``row_shape``.

    Only the pairs whose two states have positive probability are kept (:meth:`NodeLaws.active_pairs`),
    and only the rows they use; the arrays are read-only.
    """
    rows: list = []
    pairs, labels, base = [], [], 0
    for nl in laws:
        act = nl.active_pairs()
        if not act:
            continue
        used = sorted({s for p in act for s in p})
        where = {s: base + j for j, s in enumerate(used)}
        rows.extend(nl.log_cond[s] for s in used)
        base += len(used)
        for a, b in act:
            pairs.append((where[a], where[b]))
            labels.append(Witness(prior=nl.prior, node=nl.node, pair=(nl.states[a], nl.states[b])))
    mat = np.array(rows, dtype=np.float64).reshape((len(rows),) + tuple(row_shape))
    idx = np.array(pairs, dtype=np.int64).reshape(len(pairs), 2)
    mat.setflags(write=False)
    idx.setflags(write=False)
    return mat, idx, tuple(labels)
