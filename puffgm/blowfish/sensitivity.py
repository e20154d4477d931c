r"""Policy-specific global sensitivity :math:`S(f, P)` (He, Machanavajjhala and Ding, Definition 5.1).

$$
S(f, P) = \max_{(D_1, D_2) \in N(P)} \lVert f(D_1) - f(D_2) \rVert_1.
$$

Closed forms for unconstrained policies (sections 5, 6 and 7), where a
neighbour moves one tuple along an edge :math:`(x, y)` of :math:`G`:

* linear sum :math:`f(D) = \sum_i w_i g(x_i)` (:math:`g: T \to \mathbb{R}^m`):
  :math:`S = \max_i |w_i| \cdot \max_{(x,y) \in E} \lVert g(x) - g(y) \rVert_1` (section 5; for
  :math:`G^{d,\theta}` on an ordered domain with :math:`g` the rank, :math:`S = \theta \max_i |w_i|`);
* histogram :math:`h_P` over a partition :math:`P` of :math:`T` (cells may leave values uncounted):
  :math:`S = \max_{(x,y) \in E,\, \mathrm{cell}(x) \ne \mathrm{cell}(y)} ([x \text{ counted}] + [y \text{ counted}])`;
  2 for the full histogram unless every edge stays inside a cell (0 under :math:`G_P` for a coarser :math:`P`);
* cumulative histogram on an ordered domain (Definition 7.1):
  :math:`S = \max_{(x,y) \in E} |\mathrm{rank}(x) - \mathrm{rank}(y)|` (:math:`|T| - 1` under
  :math:`G_{\mathrm{full}}`, 1 on the line graph, :math:`\theta` under :math:`G^{d,\theta}`; section 7).

:func:`enumerate_sensitivity` computes Definition 5.1 by brute force for any
query on small domains, and for constrained policies over the induced
neighbours of Definition 4.1 (:mod:`puffgm.blowfish.neighbours`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from puffgm.blowfish.neighbours import MAX_DATABASES, neighbour_pairs
from puffgm.blowfish.policy import Policy, PolicyError, l1_diameter
from puffgm.core.results import freeze_record
from puffgm.core.witness import Witness

__all__ = [
    "Sensitivity",
    "linear_sum_sensitivity",
    "histogram_sensitivity",
    "cumulative_sensitivity",
    "enumerate_sensitivity",
    "histogram_query",
    "cumulative_query",
    "linear_query",
    "histogram_cells",
    "values_matrix",
    "DEFINITION_5_1",
]

DEFINITION_5_1 = "He, Machanavajjhala and Ding 2014, Definition 5.1 (policy-specific global sensitivity)"


@dataclass(frozen=True)
class Sensitivity:
    """A policy-specific global sensitivity S(f, P) and how it was obtained.

    Attributes
    ----------
    value : float
    query : str
    method : str
        ``"closed form"`` or ``"enumeration"``.
    theorem : str
    witness : Witness or None
        Its ``pair``: an edge (x, y) or a neighbouring pair (D1, D2) attaining the value (None if 0; a
        pair given is kept as the witness's ``pair``).
    policy_key : str
    details : Mapping
    """

    value: float
    query: str
    method: str
    theorem: str
    witness: Witness | None
    policy_key: str
    details: Mapping = field(default_factory=dict)

    def __post_init__(self):
        if self.witness is not None and not isinstance(self.witness, Witness):
            object.__setattr__(self, "witness", Witness(pair=tuple(self.witness)))
        freeze_record(self)  # details read-only

    def explain(self) -> str:
        w = f"; attained at {self.witness.pair!r}" if self.witness is not None else ""
        return f"S({self.query}, P) = {self.value:g} ({self.method}; {self.theorem}){w}"

    def to_dict(self) -> dict:
        return {"sensitivity": float(self.value), "query": self.query, "method": self.method,
                "theorem": self.theorem, "witness": None if self.witness is None else _jsonable(self.witness.pair),
                "policy_key": self.policy_key,
                **{k: _jsonable(v) for k, v in self.details.items()}}

    def __str__(self):
        return self.explain()

    def __float__(self):
        return float(self.value)


def _jsonable(x):
    if isinstance(x, (tuple, list)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    return x


def _need_unconstrained(policy: Policy, what: str):
    if not isinstance(policy, Policy):
        raise PolicyError(f"Expected a Blowfish Policy; got {type(policy).__name__}.")
    if not policy.unconstrained:
        raise PolicyError(
            f"The closed form for {what} holds for policies without constraints; use enumerate_sensitivity "
            "(induced neighbours of Definition 4.1) on a small domain."
        )


def _max_edge(policy: Policy, pair_value: Callable, clique_value: Callable | None = None):
    """max over edges of pair_value(u, v) (vectorised over index arrays); witness edge."""
    g = policy.graph
    cl = g.cliques()
    vals = policy.domain.values
    if cl is not None and clique_value is not None:
        best, wit = 0.0, None
        for c in cl:
            v, w = clique_value(c)
            if v > best:
                best, wit = v, w
        return best, (None if wit is None else (vals[wit[0]], vals[wit[1]]))
    u, v = g.edge_arrays()
    if len(u) == 0:
        return 0.0, None
    s = pair_value(u, v)
    j = int(np.argmax(s))
    best = float(s[j])
    return best, (None if best == 0 else (vals[int(u[j])], vals[int(v[j])]))


def linear_sum_sensitivity(policy: Policy, values=None, weights=None) -> Sensitivity:
    r""":math:`S` of :math:`f(D) = \sum_i w_i\, g(x_i)` under an unconstrained policy (section 5).

    Parameters
    ----------
    values : array (|T|,) or (|T|, m), optional
        g(x) for every domain value (index order); default the rank coordinates
        of an ordered or grid domain.
    weights : sequence of float, optional
        Per-individual weights :math:`w_i` (default all 1).

    Examples
    --------
    >>> from puffgm.blowfish import Domain, Policy, distance_threshold_graph, complete_graph
    >>> d = Domain.ordered(100)
    >>> linear_sum_sensitivity(Policy(distance_threshold_graph(d, 5))).value
    5.0
    >>> linear_sum_sensitivity(Policy(complete_graph(d))).value
    99.0
    """
    _need_unconstrained(policy, "linear sums")
    g = values_matrix(policy, values)
    wmax = 1.0
    if weights is not None:
        w = np.asarray(weights, dtype=float).ravel()
        if w.size == 0 or not np.all(np.isfinite(w)):
            raise PolicyError("The weights of a linear sum must be finite numbers, at least one.")
        wmax = float(np.abs(w).max())

    def pair(u, v):
        return np.abs(g[u] - g[v]).sum(axis=1)

    def clique(c):
        pts = g[c]
        if pts.shape[1] <= 10:
            d = l1_diameter(pts)
            if d == 0:
                return 0.0, None
            # locate a witness pair cheaply: farthest from the first extreme point along the best direction
            dist = np.abs(pts[:, None, :] - pts[None, :, :]).sum(axis=2) if len(c) <= 2000 else None
            if dist is not None:
                a, b = np.unravel_index(int(np.argmax(dist)), dist.shape)
                return d, (int(c[a]), int(c[b]))
            return d, None
        dist = np.abs(pts[:, None, :] - pts[None, :, :]).sum(axis=2)
        a, b = np.unravel_index(int(np.argmax(dist)), dist.shape)
        return float(dist[a, b]), (int(c[a]), int(c[b]))

    best, wit = _max_edge(policy, pair, clique)
    return Sensitivity(wmax * best, "linear sum", "closed form",
                       "He et al. 2014, section 5: S = max|w| * max_{(x,y) in E} ||g(x) - g(y)||_1", wit, policy.key,
                       {"max_abs_weight": wmax, "max_edge_l1": best})


def values_matrix(policy: Policy, values=None) -> np.ndarray:
    """g(x) for every domain value, one row per value (index order), validated.

    Parameters
    ----------
    policy : Policy
    values : array (|T|,) or (|T|, m), optional
        The query's values g(x); default the rank coordinates of an ordered or
        grid domain (``policy.domain.coords()``).

    Returns
    -------
    ndarray of shape (|T|, m)
        Row t is g(t), the value of the m linear statistics at domain value t.
    """
    if values is None:
        return policy.domain.coords()
    try:
        g = np.asarray(values, dtype=float)
    except (TypeError, ValueError):  # ragged rows or non-numbers
        raise PolicyError(f"The query values must be finite numbers, one row of equal length per domain value "
                          f"({policy.domain.size}).") from None
    if g.ndim == 1:
        g = g[:, None]
    if g.ndim != 2 or g.shape[0] != policy.domain.size or not np.all(np.isfinite(g)):
        raise PolicyError(f"The query values must be finite numbers, one row per domain value ({policy.domain.size}).")
    return g


def histogram_cells(policy: Policy, partition=None) -> np.ndarray:
    """The cells of the histogram :math:`h_P`: ``cell[v]`` = index of the cell of value ``v`` (index order).

    -1 where ``v`` is not counted.

    Parameters
    ----------
    policy : Policy
    partition : sequence of sequences of domain values, optional
        The cells, disjoint; values in no cell are not counted.  Default: one cell
        per value.
    """
    k = policy.domain.size
    if partition is None:
        return np.arange(k)
    cell = np.full(k, -1, dtype=np.int64)
    for j, block in enumerate(partition):
        for v in block:
            i = policy.domain.index(v)
            if cell[i] >= 0:
                raise PolicyError(f"The value {v!r} lies in two cells of the histogram's partition.")
            cell[i] = j
    return cell


def histogram_sensitivity(policy: Policy, partition: Sequence | None = None) -> Sensitivity:
    """:math:`S` of the histogram :math:`h_P` (counts of the cells of ``partition``; default one cell per value).

    Examples
    --------
    >>> from puffgm.blowfish import Domain, Policy, partition_graph
    >>> d = Domain.ordered(4)
    >>> p = Policy(partition_graph(d, [[0, 1], [2, 3]]))
    >>> histogram_sensitivity(p).value, histogram_sensitivity(p, [[0, 1], [2, 3]]).value
    (2.0, 0.0)
    """
    _need_unconstrained(policy, "histograms")
    cell = histogram_cells(policy, partition)
    counted = (cell >= 0).astype(float)

    def pair(u, v):
        return np.where(cell[u] != cell[v], counted[u] + counted[v], 0.0)

    def clique(c):
        labels = cell[c]
        distinct = np.unique(labels)
        if distinct.size < 2:
            return 0.0, None
        cnt = distinct[distinct >= 0]
        if cnt.size >= 2:
            a = c[np.flatnonzero(labels == cnt[0])[0]]
            b = c[np.flatnonzero(labels == cnt[1])[0]]
            return 2.0, (int(a), int(b))
        a = c[np.flatnonzero(labels == cnt[0])[0]]
        b = c[np.flatnonzero(labels < 0)[0]]
        return 1.0, (int(a), int(b))

    best, wit = _max_edge(policy, pair, clique)
    return Sensitivity(best, "histogram", "closed form",
                       "He et al. 2014, section 5 / Lemma 6.1: 2 if an edge joins two counted cells", wit, policy.key,
                       {"n_cells": int(cell.max()) + 1 if cell.size else 0})


def cumulative_sensitivity(policy: Policy) -> Sensitivity:
    """S of the cumulative histogram (Definition 7.1) on an ordered domain: max over edges of |rank(x) - rank(y)|.

    Examples
    --------
    >>> from puffgm.blowfish import Domain, Policy, line_graph, complete_graph
    >>> cumulative_sensitivity(Policy(line_graph(Domain.ordered(50)))).value
    1.0
    >>> cumulative_sensitivity(Policy(complete_graph(Domain.ordered(50)))).value
    49.0
    """
    _need_unconstrained(policy, "cumulative histograms")
    if policy.domain.kind != "ordered":
        raise PolicyError("The cumulative histogram needs an ordered domain.")
    rank = np.arange(policy.domain.size, dtype=float)

    def pair(u, v):
        return np.abs(rank[u] - rank[v])

    def clique(c):
        if len(c) < 2:
            return 0.0, None
        a, b = int(c[np.argmin(rank[c])]), int(c[np.argmax(rank[c])])
        return float(rank[b] - rank[a]), (a, b)

    best, wit = _max_edge(policy, pair, clique)
    return Sensitivity(best, "cumulative histogram", "closed form",
                       "He et al. 2014, section 7: S = max_{(x,y) in E} |rank(x) - rank(y)|", wit, policy.key)


# --------------------------------------------------------------------------- brute force


def histogram_query(policy: Policy, partition=None) -> Callable:
    """:math:`f(D) = h_P(D)`, for :func:`enumerate_sensitivity` (:math:`D` a tuple of domain values)."""
    cell = histogram_cells(policy, partition)
    n_cells = int(cell.max()) + 1

    def f(db):
        c = cell[policy.domain.indices(db)]
        return np.bincount(c[c >= 0], minlength=n_cells).astype(float)

    return f


def cumulative_query(policy: Policy) -> Callable:
    r""":math:`f(D) = (c_1, \dots, c_k)`, the cumulative histogram (Definition 7.1)."""
    k = policy.domain.size

    def f(db):
        return np.cumsum(np.bincount(policy.domain.indices(db), minlength=k)).astype(float)

    return f


def linear_query(policy: Policy, values=None, weights=None) -> Callable:
    r""":math:`f(D) = \sum_i w_i\, g(x_i)`."""
    g = values_matrix(policy, values)
    w = None if weights is None else np.asarray(weights, dtype=float)

    def f(db):
        rows = g[policy.domain.indices(db)]
        if w is not None:
            rows = rows * w[: len(rows), None]
        return rows.sum(axis=0)

    return f


def enumerate_sensitivity(policy: Policy, query: Callable, n: int | None = None, *,
                          max_databases: int = MAX_DATABASES, name: str = "query") -> Sensitivity:
    """S(f, P) by enumerating every neighbouring pair of Definition 4.1 (small domains).

    Parameters
    ----------
    query : callable
        ``f(database) -> float or array``; the database is a tuple of domain values.
    n : int, optional
        Number of tuples (default ``policy.n``).

    Raises
    ------
    PolicyError
        If :math:`|T|^n` exceeds ``max_databases`` (the message names the size), or :math:`n` is unknown.

    Examples
    --------
    >>> from puffgm.blowfish import Domain, Policy, line_graph
    >>> p = Policy(line_graph(Domain.ordered(4)))
    >>> enumerate_sensitivity(p, cumulative_query(p), n=2).value
    1.0
    """
    if not isinstance(policy, Policy):
        raise PolicyError(f"Expected a Blowfish Policy; got {type(policy).__name__}.")
    if not callable(query):
        raise PolicyError("The query must be callable: f(database) -> number or vector.")
    dbs, pairs = neighbour_pairs(policy, n, max_databases=max_databases)
    vals = policy.domain.values
    answers = np.array([np.atleast_1d(np.asarray(query(tuple(vals[i] for i in row)), dtype=float))
                        for row in dbs.tolist()])
    if not np.all(np.isfinite(answers)):
        raise PolicyError("The query returned NaN or infinity on some database.")
    if len(pairs) == 0:
        return Sensitivity(0.0, name, "enumeration", DEFINITION_5_1, None, policy.key,
                           {"n_databases": int(len(dbs)), "n_neighbour_pairs": 0})
    diffs = np.abs(answers[pairs[:, 0]] - answers[pairs[:, 1]]).sum(axis=1)
    j = int(np.argmax(diffs))
    best = float(diffs[j])
    wit = None if best == 0 else Witness(pair=(tuple(vals[i] for i in dbs[pairs[j, 0]]),
                                               tuple(vals[i] for i in dbs[pairs[j, 1]])))
    return Sensitivity(best, name, "enumeration", DEFINITION_5_1, wit, policy.key,
                       {"n_databases": int(len(dbs)), "n_neighbour_pairs": int(len(pairs)),
                        "induced_neighbours": not policy.unconstrained})
