r"""Blowfish policies: a domain, a discriminative secret graph and public constraints.

He, Machanavajjhala and Ding, "Blowfish Privacy: Tuning Privacy-Utility
Trade-offs using Policies", SIGMOD 2014, section 3 (the extracted text lost
its symbols; the formulas below are reconstructed, see docs/blowfish.md).

* **Domain** :math:`T` (section 2): every individual's tuple takes one value of :math:`T`.
  :class:`Domain` is categorical, ordered (values :math:`0, \ldots, k-1` in rank order) or a
  multi-attribute grid (the cross product of attributes, coordinates are the
  attribute ranks).
* **Discriminative secret graph** :math:`G = (V, E)`, :math:`V = T` (section 3.1): the
  adversary must not distinguish "individual :math:`i` has value :math:`x`" from "individual :math:`i`
  has value :math:`y`" when :math:`(x, y) \in E`.  Builders: :func:`complete_graph` (:math:`G_{\mathrm{full}}`,
  differential privacy), :func:`attribute_graph` (:math:`G_{\mathrm{attr}}`: :math:`x, y` differ in exactly
  one attribute), :func:`partition_graph` (:math:`G_P`: complete within each block),
  :func:`distance_threshold_graph` (:math:`G^{d,\theta}`: :math:`d(x, y) \le \theta` with :math:`d` the :math:`L_1`
  distance of ranks), :func:`line_graph` (:math:`G^{d,1}` on an ordered domain) and
  :func:`graph_from_networkx` (any graph over domain values).
* **Constraints** :math:`Q` (section 3.2): publicly known count-query answers
  (:class:`CountConstraint`: :math:`\#\{i : x_i \in A\} = c`) and marginals
  (:func:`marginal_constraints`).  :math:`I_Q` is the set of databases of :math:`n` tuples
  satisfying every constraint.
* **Policy** :math:`P = (T, G, I_Q)` (Definition 3.1): :class:`Policy`.

The graph distance :math:`d_G(x, y)` (section 4, after Definition 4.2) is given in
closed form for the structured graphs and by networkx shortest paths otherwise.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from puffgm.core.validation import did_you_mean
from puffgm.exceptions import PuffgmError

__all__ = [
    "PolicyError",
    "Domain",
    "SecretGraph",
    "CountConstraint",
    "Policy",
    "complete_graph",
    "attribute_graph",
    "partition_graph",
    "distance_threshold_graph",
    "line_graph",
    "graph_from_networkx",
    "marginal_constraints",
    "grid_partition_blocks",
    "policy_from_dict",
    "l1_diameter",
    "MAX_EXPLICIT_EDGES",
]

#: Largest number of edges materialised as an explicit edge list.
MAX_EXPLICIT_EDGES = 5_000_000


class PolicyError(PuffgmError, ValueError):
    """A Blowfish policy (domain, secret graph, constraints) is malformed or contradictory."""


def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


# --------------------------------------------------------------------------- domains


@dataclass(frozen=True, eq=False)
class Domain:
    """The domain T of one tuple.

    Use :meth:`categorical`, :meth:`ordered` or :meth:`grid`.

    Attributes
    ----------
    kind : str
        ``"categorical"``, ``"ordered"`` or ``"grid"``.
    values : tuple
        The values, in index order (for a grid: tuples of attribute values in
        row-major order).
    attributes : tuple of str
        Attribute names (one for categorical and ordered domains).
    levels : tuple of tuple
        The values of each attribute, in rank order.
    """

    kind: str
    values: tuple
    attributes: tuple
    levels: tuple
    _index: dict = field(repr=False, compare=False, default_factory=dict)

    def __post_init__(self):
        if not self.values:
            raise PolicyError("The domain is empty: give at least one value.")
        index = {}
        for i, v in enumerate(self.values):
            try:
                if v in index:
                    raise PolicyError(f"The domain value {v!r} appears twice.")
            except TypeError:
                raise PolicyError(f"The domain value {v!r} is not hashable.") from None
            index[v] = i
        self._index.update(index)

    # -- constructors ---------------------------------------------------------
    @classmethod
    def categorical(cls, values: Sequence, name: str = "value") -> Domain:
        """An unordered domain; only complete, partition and user graphs apply."""
        vals = cls._values(values, "categorical")
        return cls("categorical", vals, (str(name),), (vals,))

    @classmethod
    def ordered(cls, values, name: str = "value") -> Domain:
        """A totally ordered domain: ``values`` in rank order, or an int k for 0..k-1.

        Distances are L1 distances of ranks, d(x, y) = |rank(x) - rank(y)|.
        """
        if _is_int(values):
            if values < 1:
                raise PolicyError(f"The domain is empty: an ordered domain needs k >= 1 values, got {values}.")
            vals = tuple(range(int(values)))
        else:
            vals = cls._values(values, "ordered")
        return cls("ordered", vals, (str(name),), (vals,))

    @classmethod
    def grid(cls, attributes) -> Domain:
        """A multi-attribute domain: ``{name: values or k}`` or a shape tuple.

        Values are tuples (one entry per attribute), in row-major order;
        coordinates are the attribute ranks, distances are L1 over ranks.
        """
        if isinstance(attributes, Mapping):
            items = list(attributes.items())
        else:
            try:
                items = [(f"a{j}", k) for j, k in enumerate(attributes)]
            except TypeError:
                raise PolicyError(f"A grid domain needs a mapping or a shape; got {attributes!r}.") from None
        if not items:
            raise PolicyError("The domain is empty: a grid needs at least one attribute.")
        levels = []
        for name, k in items:
            if _is_int(k):
                if k < 1:
                    raise PolicyError(f"The domain is empty: attribute {name!r} has {k} values.")
                levels.append(tuple(range(int(k))))
            else:
                levels.append(cls._values(k, f"attribute {name!r}"))
        size = math.prod(len(lv) for lv in levels)
        if size > 2_000_000:
            raise PolicyError(f"The grid domain has {size} values, more than the 2000000 puffgm handles; "
                              "discretise the attributes more coarsely.")
        vals = tuple(itertools.product(*levels))
        return cls("grid", vals, tuple(str(n) for n, _ in items), tuple(levels))

    @staticmethod
    def _values(values, what) -> tuple:
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise PolicyError(f"The {what} domain needs a list of values; got {values!r}.")
        vals = tuple(values)
        if not vals:
            raise PolicyError(f"The domain is empty: the {what} domain has no values.")
        return vals

    # -- queries --------------------------------------------------------------
    @property
    def size(self) -> int:
        return len(self.values)

    @property
    def shape(self) -> tuple:
        return tuple(len(lv) for lv in self.levels)

    @property
    def is_metric(self) -> bool:
        """True for ordered and grid domains (L1 distance on ranks)."""
        return self.kind in ("ordered", "grid")

    def index(self, value) -> int:
        """The index of a domain value; PolicyError if it is not in the domain."""
        try:
            return self._index[value]
        except (KeyError, TypeError):
            pass
        if self.kind == "grid" and isinstance(value, list):
            return self.index(tuple(value))
        raise PolicyError(f"The value {value!r} is not in the domain.")

    def indices(self, values) -> np.ndarray:
        return np.array([self.index(v) for v in values], dtype=np.int64)

    def coords(self) -> np.ndarray:
        """Rank coordinates, shape (size, n_attributes); PolicyError for categorical domains."""
        if not self.is_metric:
            raise PolicyError("A categorical domain has no coordinates; use an ordered or grid domain.")
        if self.kind == "ordered":
            return np.arange(self.size, dtype=float)[:, None]
        grids = np.meshgrid(*[np.arange(len(lv)) for lv in self.levels], indexing="ij")
        return np.stack([g.ravel() for g in grids], axis=1).astype(float)

    def to_dict(self) -> dict:
        if self.kind == "grid":
            levels = {a: list(lv) for a, lv in zip(self.attributes, self.levels, strict=True)}
            return {"kind": "grid", "attributes": levels}
        return {"kind": self.kind, "values": list(self.values)}

    def __repr__(self):
        return f"Domain({self.kind}, size={self.size}, attributes={list(self.attributes)})"


# --------------------------------------------------------------------------- secret graphs


@dataclass(frozen=True, eq=False)
class SecretGraph:
    """A discriminative secret graph G = (T, E) (section 3.1).

    Attributes
    ----------
    domain : Domain
    kind : str
        ``"complete"``, ``"attribute"``, ``"partition"``, ``"distance"``, ``"line"`` or ``"custom"``.
    params : Mapping
        ``theta`` for distance graphs, ``blocks`` (lists of value indices) for partitions.
    edges_explicit : ndarray or None
        For ``"custom"`` graphs, the (m, 2) array of edge index pairs.
    """

    domain: Domain
    kind: str
    params: Mapping = field(default_factory=dict)
    edges_explicit: Any = None

    # -- structure --------------------------------------------------------
    def cliques(self):
        """For complete, partition and attribute graphs: the maximal cliques covering E.

        Returns a list of index arrays (every pair inside one array is an edge and
        every edge lies in one), or None for other graphs.
        """
        n = self.domain.size
        if self.kind == "complete":
            return [np.arange(n)]
        if self.kind == "partition":
            return [np.asarray(b) for b in self.params["blocks"] if len(b) > 1]
        if self.kind == "attribute":
            shape = self.domain.shape
            idx = np.arange(n).reshape(shape)
            out = []
            for ax in range(len(shape)):
                if shape[ax] < 2:
                    continue
                moved = np.moveaxis(idx, ax, -1).reshape(-1, shape[ax])
                out.extend(list(moved))
            return out
        return None

    def offsets(self):
        r"""For distance and line graphs: the rank offsets :math:`\delta` (:math:`x + \delta = y`) of the edges.

        One offset per sign pair; None for other graphs.
        """
        if self.kind not in ("distance", "line"):
            return None
        theta = self.params["theta"]
        dim = len(self.domain.shape)
        t = int(math.floor(theta))
        rng = range(-t, t + 1)
        out = []
        for delta in itertools.product(*[rng] * dim):
            s = sum(abs(d) for d in delta)
            if 0 < s <= theta and next(d for d in delta if d != 0) > 0:
                out.append(delta)
        return np.array(out, dtype=np.int64).reshape(-1, dim)

    def edge_arrays(self, limit: int = MAX_EXPLICIT_EDGES):
        """Every edge once, as index arrays (u, v); PolicyError if there are more than ``limit``."""
        if self.kind == "custom":
            e = self.edges_explicit
            return e[:, 0].copy(), e[:, 1].copy()
        cl = self.cliques()
        if cl is not None:
            total = sum(len(c) * (len(c) - 1) // 2 for c in cl)
            if total > limit:
                raise PolicyError(f"The secret graph has {total} edges, more than the {limit} puffgm lists explicitly.")
            us, vs = [], []
            for c in cl:
                a, b = np.triu_indices(len(c), 1)
                us.append(c[a])
                vs.append(c[b])
            if not us:
                return np.zeros(0, np.int64), np.zeros(0, np.int64)
            return np.concatenate(us), np.concatenate(vs)
        shape = self.domain.shape
        idx = np.arange(self.domain.size).reshape(shape)
        coords = np.stack(np.unravel_index(np.arange(self.domain.size), shape), axis=1)
        us, vs, total = [], [], 0
        for delta in self.offsets():
            tgt = coords + delta
            ok = np.all((tgt >= 0) & (tgt < np.array(shape)), axis=1)
            total += int(ok.sum())
            if total > limit:
                raise PolicyError(f"The secret graph has more than {limit} edges; puffgm does not list them "
                                  "explicitly.")
            us.append(np.flatnonzero(ok))
            vs.append(idx[tuple(tgt[ok].T)])
        if not us:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(us), np.concatenate(vs)

    @property
    def n_edges(self) -> int:
        if self.kind == "custom":
            return int(len(self.edges_explicit))
        cl = self.cliques()
        if cl is not None:
            return int(sum(len(c) * (len(c) - 1) // 2 for c in cl))
        u, _ = self.edge_arrays()
        return int(len(u))

    def has_edge(self, x, y) -> bool:
        """True if the values x and y are joined (an unordered discriminative pair)."""
        i, j = self.domain.index(x), self.domain.index(y)
        return self.has_edge_index(i, j)

    def has_edge_index(self, i: int, j: int) -> bool:
        """True if the values with domain indices i and j are joined (``has_edge`` on indices)."""
        if i == j:
            return False
        if self.kind == "complete":
            return True
        if self.kind == "partition":
            return self.params["_block_of"][i] == self.params["_block_of"][j] >= 0
        if self.kind in ("attribute", "distance", "line"):
            a = np.array(np.unravel_index(i, self.domain.shape))
            b = np.array(np.unravel_index(j, self.domain.shape))
            if self.kind == "attribute":
                return int(np.count_nonzero(a != b)) == 1
            return float(np.abs(a - b).sum()) <= self.params["theta"]
        return (min(i, j), max(i, j)) in self.params["_edge_set"]

    def adjacency(self) -> np.ndarray:
        """Boolean adjacency matrix over domain indices (small domains only)."""
        n = self.domain.size
        if n > 4096:
            raise PolicyError(f"The domain has {n} values; the adjacency matrix is built for at most 4096.")
        a = np.zeros((n, n), dtype=bool)
        u, v = self.edge_arrays()
        a[u, v] = a[v, u] = True
        return a

    def to_networkx(self):
        """The graph as a networkx Graph over domain values (small domains only)."""
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from(self.domain.values)
        u, v = self.edge_arrays()
        vals = self.domain.values
        g.add_edges_from((vals[a], vals[b]) for a, b in zip(u.tolist(), v.tolist(), strict=True))
        return g

    def distance(self, x, y) -> float:
        r""":math:`d_G(x, y)`, the shortest-path distance (inf if disconnected).

        Closed forms (section 4, after Definition 4.2): complete: 1; partition: 1
        within a block, inf across; attribute: the Hamming distance; distance
        threshold: :math:`\lceil \lVert x - y \rVert_1 / \theta \rceil`; line:
        :math:`|\mathrm{rank}(x) - \mathrm{rank}(y)|`.
        Custom graphs: networkx shortest path.
        """
        i, j = self.domain.index(x), self.domain.index(y)
        if i == j:
            return 0.0
        if self.kind == "complete":
            return 1.0
        if self.kind == "partition":
            b = self.params["_block_of"]
            return 1.0 if b[i] == b[j] >= 0 else math.inf
        a = np.array(np.unravel_index(i, self.domain.shape)) if self.domain.is_metric else None
        c = np.array(np.unravel_index(j, self.domain.shape)) if self.domain.is_metric else None
        if self.kind == "attribute":
            return float(np.count_nonzero(a != c))
        if self.kind in ("distance", "line"):
            assert a is not None and c is not None  # distance and line graphs are built on metric domains only
            step = math.floor(self.params["theta"])  # ranks are integers: an edge spans at most floor(theta)
            return math.inf if step < 1 else float(-(-int(np.abs(a - c).sum()) // step))
        import networkx as nx

        try:
            return float(nx.shortest_path_length(self.params["_nx"], i, j))
        except nx.NetworkXNoPath:
            return math.inf

    def max_rank_span(self) -> float:
        """max over edges of ||rank(x) - rank(y)||_1 (0 for an edgeless graph)."""
        if self.kind in ("distance", "line"):
            off = self.offsets()
            if off.size == 0:
                return 0.0
            # an offset is realised only if it fits in the grid
            fits = np.all(np.abs(off) < np.array(self.domain.shape), axis=1)
            return float(np.abs(off[fits]).sum(axis=1).max()) if fits.any() else 0.0
        coords = self.domain.coords()
        cl = self.cliques()
        if cl is not None:
            return max((l1_diameter(coords[c]) for c in cl), default=0.0)
        u, v = self.edge_arrays()
        return float(np.abs(coords[u] - coords[v]).sum(axis=1).max()) if len(u) else 0.0

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"kind": self.kind}
        if self.kind in ("distance", "line"):
            d["theta"] = self.params["theta"]
        if self.kind == "partition":
            d["blocks"] = [[self.domain.values[i] for i in b] for b in self.params["blocks"]]
        if self.kind == "custom":
            d["edges"] = [[self.domain.values[a], self.domain.values[b]] for a, b in self.edges_explicit.tolist()]
        return d


def l1_diameter(points: np.ndarray) -> float:
    r"""The L1 diameter :math:`\max \lVert p - q \rVert_1` over pairs of rows of ``points``, exactly.

    :math:`\lVert p - q \rVert_1 = \max_s s \cdot (p - q)` over sign vectors :math:`s`, so the diameter is the
    largest spread :math:`\max s \cdot p - \min s \cdot p` over the :math:`2^{d-1}` sign vectors with :math:`s_1 = 1`
    (:math:`d` the number of columns): :math:`O(2^{d-1} m)` for :math:`m` points instead of :math:`O(m^2)`.

    Parameters
    ----------
    points : ndarray (m, d)

    Returns
    -------
    float
        0.0 for fewer than two points.
    """
    if len(points) < 2:
        return 0.0
    d = points.shape[1]
    best = 0.0
    for signs in itertools.product((1.0, -1.0), repeat=d - 1):
        s = np.array((1.0,) + signs)
        proj = points @ s
        best = max(best, float(proj.max() - proj.min()))
    return best


def complete_graph(domain: Domain) -> SecretGraph:
    """G_full: every pair of values is discriminative (= differential privacy, section 4.2)."""
    return SecretGraph(domain, "complete")


def attribute_graph(domain: Domain) -> SecretGraph:
    """G_attr: x ~ y iff they differ in exactly one attribute (section 3.1); grid domains only."""
    if domain.kind != "grid":
        raise PolicyError("The attribute graph needs a multi-attribute grid domain.")
    return SecretGraph(domain, "attribute")


def partition_graph(domain: Domain, blocks) -> SecretGraph:
    """:math:`G_P`: complete within each block of the partition :math:`P` (section 3.1).

    Values not listed in any block are singletons (no edges).  PolicyError if a
    block names a value outside the domain or a value lies in two blocks.
    """
    block_of = np.full(domain.size, -1, dtype=np.int64)
    out = []
    for b, block in enumerate(blocks):
        if isinstance(block, (str, bytes)) or not isinstance(block, Iterable):
            raise PolicyError(f"Partition block {block!r} is not a list of domain values.")
        idx = []
        for v in block:
            i = domain.index(v)
            if block_of[i] >= 0:
                raise PolicyError(f"The value {v!r} lies in two blocks of the partition.")
            block_of[i] = b
            idx.append(i)
        if not idx:
            raise PolicyError("A partition block is empty.")
        out.append(np.array(idx, dtype=np.int64))
    return SecretGraph(domain, "partition", {"blocks": tuple(out), "_block_of": block_of})


def grid_partition_blocks(domain: Domain, cell: Sequence[int]) -> list:
    """Blocks of a uniform partition of a grid (or ordered) domain into cells of ``cell`` ranks per attribute."""
    shape = domain.shape
    if len(cell) != len(shape) or any((not _is_int(c)) or c < 1 for c in cell):
        raise PolicyError(f"The partition cell {list(cell)!r} needs one integer >= 1 per attribute {list(shape)!r}.")
    coords = np.stack(np.unravel_index(np.arange(domain.size), shape), axis=1)
    key = coords // np.array(cell)
    _, inv = np.unique(key, axis=0, return_inverse=True)
    inv = inv.ravel()
    order = np.argsort(inv, kind="stable")
    splits = np.flatnonzero(np.diff(inv[order])) + 1
    return [[domain.values[i] for i in grp] for grp in np.split(order, splits)]


def distance_threshold_graph(domain: Domain, theta) -> SecretGraph:
    r"""The distance-threshold graph :math:`G^{d,\theta}` (section 3.1).

    :math:`x \sim y` iff :math:`d(x, y) = \lVert \mathrm{rank}(x) - \mathrm{rank}(y) \rVert_1 \le \theta`.
    Ordered or grid domains; :math:`\theta` a finite number :math:`> 0`.
    """
    if not domain.is_metric:
        raise PolicyError("The distance-threshold graph needs an ordered or grid domain (L1 distance on ranks).")
    if not isinstance(theta, numbers.Real) or isinstance(theta, bool) or not math.isfinite(theta) or theta <= 0:
        raise PolicyError(f"The distance threshold theta must be a finite number > 0; got {theta!r}.")
    return SecretGraph(domain, "distance", {"theta": float(theta)})


def line_graph(domain: Domain) -> SecretGraph:
    """The line graph of an ordered domain: x ~ y iff |rank(x) - rank(y)| = 1 (section 7.1)."""
    if domain.kind != "ordered":
        raise PolicyError("The line graph needs an ordered domain.")
    return SecretGraph(domain, "line", {"theta": 1.0})


def graph_from_networkx(domain: Domain, graph) -> SecretGraph:
    """Any networkx graph whose nodes are domain values (isolated values may be omitted)."""
    import networkx as nx

    if not isinstance(graph, nx.Graph):
        raise PolicyError(f"Expected a networkx Graph; got {type(graph).__name__}.")
    if graph.is_directed():
        graph = graph.to_undirected()
    idx = {}
    for v in graph.nodes:
        try:
            idx[v] = domain.index(v)
        except PolicyError:
            raise PolicyError(f"The secret graph has the node {v!r}, which is not a domain value.") from None
    edges = sorted({(min(idx[a], idx[b]), max(idx[a], idx[b])) for a, b in graph.edges if a != b})
    g = nx.Graph()
    g.add_nodes_from(range(domain.size))
    g.add_edges_from(edges)
    arr = np.array(edges, dtype=np.int64).reshape(-1, 2)
    return SecretGraph(domain, "custom", {"_edge_set": frozenset(edges), "_nx": g}, arr)


# --------------------------------------------------------------------------- constraints


@dataclass(frozen=True)
class CountConstraint:
    r"""A publicly known count-query answer: :math:`\#\{i : x_i \in \text{values}\} = \text{count}` (section 3.2).

    ``values`` are domain values; ``name`` labels reports.
    """

    values: tuple
    count: int
    name: str = ""

    def __post_init__(self):
        if not _is_int(self.count) or self.count < 0:
            raise PolicyError(f"The count of constraint {self.name or list(self.values)!r} must be an integer >= 0; "
                              f"got {self.count!r}.")
        if not self.values:
            raise PolicyError("A count constraint needs at least one domain value.")

    def to_dict(self) -> dict:
        return {"values": [list(v) if isinstance(v, tuple) else v for v in self.values], "count": self.count}


def marginal_constraints(domain: Domain, attributes: Sequence[str], counts: Mapping) -> list:
    """The count constraints of a known marginal (section 3.2).

    ``counts`` maps a tuple of values of ``attributes`` (a scalar for one
    attribute) to the number of tuples with those values; cells not listed
    have count 0.
    """
    if domain.kind != "grid":
        raise PolicyError("Marginal constraints need a multi-attribute grid domain.")
    pos = []
    for a in attributes:
        if a not in domain.attributes:
            raise PolicyError(f"The marginal names the unknown attribute {a!r}; the attributes are "
                              f"{list(domain.attributes)!r}.")
        pos.append(domain.attributes.index(a))
    if len(set(pos)) != len(pos) or not pos:
        raise PolicyError("A marginal needs distinct attributes, at least one.")
    cells: dict = {}
    for v in domain.values:
        cells.setdefault(tuple(v[p] for p in pos), []).append(v)
    norm = {}
    for key, c in counts.items():
        k = tuple(key) if isinstance(key, (tuple, list)) else (key,)
        if k not in cells:
            raise PolicyError(f"The marginal cell {key!r} is not a combination of values of {list(attributes)!r}.")
        norm[k] = c
    return [CountConstraint(tuple(vals), norm.get(k, 0), name=f"{dict(zip(attributes, k, strict=True))}")
            for k, vals in cells.items()]


# --------------------------------------------------------------------------- policy


class Policy:
    r"""A Blowfish policy :math:`P = (T, G, I_Q)` (Definition 3.1).

    Parameters
    ----------
    graph : SecretGraph
        The discriminative secret graph over the domain :math:`T` = ``graph.domain``.
    constraints : sequence of CountConstraint, optional
        Publicly known count-query answers (marginals expand to these).
    n : int, optional
        The number of tuples, known to the adversary (section 2).  Needed to
        enumerate databases and to check constraints for contradictions.

    Raises
    ------
    PolicyError
        If a constraint names a value outside the domain, or the constraints are
        contradictory (no histogram of n tuples satisfies them; decided exactly by
        an integer program over the atoms of the constraint sets, scipy's HiGHS milp).

    Examples
    --------
    >>> from puffgm.blowfish import Domain, Policy, line_graph
    >>> p = Policy(line_graph(Domain.ordered(5)))
    >>> p.graph.distance(0, 3)
    3.0
    >>> p.unconstrained
    True
    """

    def __init__(self, graph: SecretGraph, constraints: Sequence = (), n: int | None = None):
        if not isinstance(graph, SecretGraph):
            raise PolicyError(f"The policy needs a SecretGraph; got {type(graph).__name__}.")
        self.graph = graph
        self.domain = graph.domain
        if n is not None and (not _is_int(n) or n < 1):
            raise PolicyError(f"The number of tuples n must be an integer >= 1; got {n!r}.")
        self.n = None if n is None else int(n)
        cons = []
        for c in constraints:
            if not isinstance(c, CountConstraint):
                raise PolicyError(f"A constraint must be a CountConstraint; got {c!r}.")
            idx = tuple(sorted(set(self.domain.indices(c.values).tolist())))
            if len(idx) != len(c.values):
                raise PolicyError(f"The constraint {c.name or list(c.values)!r} lists a value twice.")
            cons.append((idx, c))
        self.constraints = tuple(c for _, c in cons)
        self._con_idx = tuple(i for i, _ in cons)
        if self.constraints:
            self._check_feasible()

    # -- constraints -------------------------------------------------------
    @property
    def unconstrained(self) -> bool:
        """True when :math:`I_Q = I_n` (no constraint beyond the known cardinality)."""
        return not self.constraints

    def constraint_matrix(self) -> tuple:
        """(A, b): A[c, v] = 1 if value v counts for constraint c, b the counts."""
        a = np.zeros((len(self.constraints), self.domain.size), dtype=np.int64)
        for r, idx in enumerate(self._con_idx):
            a[r, list(idx)] = 1
        b = np.array([c.count for c in self.constraints], dtype=np.int64)
        return a, b

    def _check_feasible(self) -> None:
        from scipy.optimize import LinearConstraint, milp

        a, b = self.constraint_matrix()
        # variables: one count per atom (values with the same membership pattern)
        atoms, inv = np.unique(a.T, axis=0, return_inverse=True)
        inv = inv.ravel()
        rows = [atoms.T.astype(float)]
        lo, hi = [b.astype(float)], [b.astype(float)]
        if self.n is not None:
            if np.any(b > self.n):
                bad = self.constraints[int(np.argmax(b > self.n))]
                raise PolicyError(f"The constraints are contradictory: constraint {bad.name or list(bad.values)!r} "
                                  f"counts {bad.count} tuples but n = {self.n}.")
            rows.append(np.ones((1, len(atoms))))
            lo.append([float(self.n)])
            hi.append([float(self.n)])
        res = milp(np.zeros(len(atoms)),
                   constraints=LinearConstraint(np.vstack(rows), np.concatenate(lo), np.concatenate(hi)),
                   integrality=np.ones(len(atoms)), bounds=(0, np.inf))
        if res.status != 0:
            size = f" and n = {self.n}" if self.n is not None else ""
            raise PolicyError(f"The constraints are contradictory: no database satisfies all {len(b)} count "
                              f"constraints{size}.")

    def satisfies(self, database) -> bool:
        """True if a database (sequence of domain values) is in :math:`I_Q`.

        When :math:`n` is known, the database must also have :math:`n` tuples.
        """
        idx = self.domain.indices(database)
        if self.n is not None and len(idx) != self.n:
            return False
        counts = np.bincount(idx, minlength=self.domain.size)
        return all(int(counts[list(c)].sum()) == con.count
                   for c, con in zip(self._con_idx, self.constraints, strict=True))

    def valid_mask(self, dbs: np.ndarray) -> np.ndarray:
        """Which rows of an (m, n) array of value indices satisfy the constraints."""
        ok = np.ones(len(dbs), dtype=bool)
        for c, con in zip(self._con_idx, self.constraints, strict=True):
            member = np.zeros(self.domain.size, dtype=bool)
            member[list(c)] = True
            ok &= member[dbs].sum(axis=1) == con.count
        return ok

    # -- identity -----------------------------------------------------------
    def to_dict(self) -> dict:
        d: dict[str, Any] = {"domain": self.domain.to_dict(), "graph": self.graph.to_dict()}
        if self.constraints:
            d["constraints"] = [c.to_dict() for c in self.constraints]
        if self.n is not None:
            d["n"] = self.n
        return d

    @property
    def key(self) -> str:
        """A fingerprint of the policy; releases compose only under equal keys."""
        text = json.dumps(self.to_dict(), sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def explain(self) -> str:
        g = self.graph
        extra = f", theta={g.params['theta']:g}" if g.kind in ("distance", "line") else ""
        c = f", {len(self.constraints)} count constraint(s)" if self.constraints else ", no constraints"
        n = f", n={self.n}" if self.n is not None else ""
        return (f"Blowfish policy: {self.domain.kind} domain of {self.domain.size} values, "
                f"{g.kind} secret graph{extra}{c}{n}")

    def __repr__(self):
        return f"<{self.explain()}>"


# --------------------------------------------------------------------------- JSON


def _key(v):
    return tuple(v) if isinstance(v, list) else v


def policy_from_dict(spec) -> Policy:
    """Build a policy from its JSON form (the CLI's input).

    ``{"domain": {"kind": "ordered", "size": 10} | {"kind": "categorical", "values": [...]}
    | {"kind": "grid", "attributes": {"a": 3, "b": ["x", "y"]}},
    "graph": {"kind": "complete" | "attribute" | "line" | "distance", "theta": t
    | "partition", "blocks": [[...], ...] | "edges", "edges": [[x, y], ...]},
    "constraints": [{"values": [...], "count": c}, ...],
    "marginals": [{"attributes": [...], "counts": [[v1, ..., count], ...]}], "n": n}``
    """
    if not isinstance(spec, Mapping):
        raise PolicyError("The policy must be a JSON object with 'domain' and 'graph'.")
    fields = ("constraints", "domain", "graph", "marginals", "n")
    unknown = sorted(set(spec) - set(fields), key=str)
    if unknown:
        raise PolicyError(f"The policy has unknown field(s) {unknown!r}{did_you_mean(unknown[0], fields)}.")
    domain = _domain_from_dict(spec.get("domain"))
    graph = _graph_from_dict(spec.get("graph"), domain)
    return Policy(graph, _constraints_from_dict(spec, domain), n=spec.get("n"))


def _domain_from_dict(dom) -> Domain:
    """The ``"domain"`` object of a policy's JSON form."""
    if not isinstance(dom, Mapping) or "kind" not in dom:
        raise PolicyError("The policy needs a 'domain' object with a 'kind'.")
    kind = dom["kind"]
    if kind == "ordered":
        if "size" in dom:
            if not _is_int(dom["size"]):
                _bad(f"The ordered domain size must be an integer; got {dom['size']!r}.")
            return Domain.ordered(dom["size"])
        return Domain.ordered(dom.get("values", []))
    if kind == "categorical":
        return Domain.categorical(dom.get("values", []))
    if kind == "grid":
        attrs = dom.get("attributes")
        if isinstance(attrs, Mapping):
            return Domain.grid({a: (v if _is_int(v) else [_key(x) for x in v]) for a, v in attrs.items()})
        return Domain.grid(attrs if attrs is not None else [])
    raise PolicyError(f"Unknown domain kind {kind!r}{did_you_mean(kind, ('categorical', 'ordered', 'grid'))}; "
                      "use 'categorical', 'ordered' or 'grid'.")


def _graph_from_dict(g, domain: Domain) -> SecretGraph:
    """The ``"graph"`` object of a policy's JSON form, over ``domain``."""
    if not isinstance(g, Mapping) or "kind" not in g:
        raise PolicyError("The policy needs a 'graph' object with a 'kind'.")
    gk = g["kind"]
    if gk == "complete":
        return complete_graph(domain)
    if gk == "attribute":
        return attribute_graph(domain)
    if gk == "line":
        return line_graph(domain)
    if gk == "distance":
        return distance_threshold_graph(domain, g.get("theta"))
    if gk == "partition":
        blocks = g.get("blocks")
        if blocks is None and "cell" in g:
            blocks = grid_partition_blocks(domain, g["cell"])
        if not isinstance(blocks, list):
            raise PolicyError("A partition graph needs 'blocks' (a list of lists of values) or 'cell'.")
        return partition_graph(domain, [[_key(v) for v in b] if isinstance(b, list) else b for b in blocks])
    if gk == "edges":
        import networkx as nx

        edges = g.get("edges")
        if not isinstance(edges, list) or any(not isinstance(e, list) or len(e) != 2 for e in edges):
            raise PolicyError("An 'edges' graph needs 'edges': a list of [x, y] pairs of domain values.")
        nxg = nx.Graph()
        nxg.add_edges_from((_key(a), _key(b)) for a, b in edges)
        return graph_from_networkx(domain, nxg)
    kinds = ("complete", "attribute", "partition", "distance", "line", "edges")
    raise PolicyError(f"Unknown graph kind {gk!r}{did_you_mean(gk, kinds)}; use {', '.join(kinds[:-1])} or edges.")


def _constraints_from_dict(spec, domain: Domain) -> list:
    """The count constraints of a policy's JSON form: ``"constraints"``, then ``"marginals"``."""
    cons = []
    for c in spec.get("constraints", []) or []:
        if not isinstance(c, Mapping) or "values" not in c or "count" not in c:
            raise PolicyError("A constraint needs 'values' (a list of domain values) and 'count'.")
        if not isinstance(c["values"], list):
            raise PolicyError("The 'values' of a constraint must be a list of domain values.")
        cons.append(CountConstraint(tuple(_key(v) for v in c["values"]), c["count"]))
    for m in spec.get("marginals", []) or []:
        if not isinstance(m, Mapping) or "attributes" not in m or "counts" not in m:
            raise PolicyError("A marginal needs 'attributes' and 'counts' ([[v1, ..., count], ...]).")
        counts = {}
        for row in m["counts"]:
            if not isinstance(row, list) or len(row) != len(m["attributes"]) + 1:
                raise PolicyError(f"A marginal row must list one value per attribute and a count; got {row!r}.")
            counts[tuple(row[:-1])] = row[-1]
        cons.extend(marginal_constraints(domain, m["attributes"], counts))
    return cons


def _bad(msg):
    raise PolicyError(msg)
