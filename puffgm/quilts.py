"""Markov quilts: finding, for a node X_i, sets X_Q that screen X_i off from far nodes.

Song, Wang and Chaudhuri, Definition 4.2: a Markov quilt of X_i is a partition
(X_N, X_Q, X_R) of the nodes with X_i in X_N and X_R independent of X_i given
X_Q.  Given X_Q, puffgm takes X_R to be *exactly* the set of nodes d-separated
from X_i by X_Q (the largest valid remote set, hence the smallest X_N and the
best score), found in one linear-time Bayes-ball pass (Koller and Friedman,
Algorithm 3.1); X_N is the rest, X_i included.  The trivial quilt
(X_Q = {}, X_N = X, X_R = {}) is always a candidate (Theorem 4.3 needs it).

Candidate families
------------------
*Exhaustive* (networks of at most :data:`EXHAUSTIVE_MAX_NODES` nodes whose
joint state space is at most ``2**24``): every subset of the other nodes is a
candidate quilt, so the calibration is optimal over all quilts.

*Structured* (larger networks).  With M the moral graph and d(i, j) the
distance in M, the family of node X_i is the union of

1. the trivial quilt;
2. *distance layers*: Q_d = {j : d(i, j) = d} for d = 1, 2, ...;
3. *region boundaries*: quilts Q = boundary_M(N) of connected regions N
   containing X_i, grown greedily from {X_i}: each step absorbs into N the
   boundary node with the largest single-node influence e({X_j} | X_i), so the
   strongly dependent nodes become nearby and the weakly dependent ones stay in
   the quilt; every region on the way is a candidate;
4. *minimal separators*: for each region boundary, the subset of it that
   still d-separates the same remote set (a node of the boundary that is
   d-separated from X_i by the rest of the boundary is dropped, which can only
   lower the influence);

each filtered by the bound ``max_quilt_states`` on the joint state space of
X_Q (default :data:`DEFAULT_MAX_QUILT_STATES`).  The nodes that set sigma_max
are then refined (:meth:`puffgm.calibration.QuiltSearch.refine`): X_Q is grown
greedily from the outside in, one nearby node at a time, choosing the
addition with the smallest score; the worst node is refined until the worst
node is one already refined.  Separation in M implies
d-separation, and every candidate's remote set is recomputed exactly by
d-separation, so every candidate is a valid quilt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

from .exceptions import QuiltError

__all__ = [
    "MarkovQuilt",
    "dconnected_nodes",
    "remote_nodes",
    "make_quilt",
    "moral_graph",
    "distance_layers",
    "exhaustive_quilts",
    "use_exhaustive",
    "EXHAUSTIVE_MAX_NODES",
    "DEFAULT_MAX_QUILT_STATES",
]

#: Networks with at most this many nodes are searched exhaustively.
EXHAUSTIVE_MAX_NODES = 12
#: Default bound on the joint state space card(X_Q states) of a candidate quilt.
DEFAULT_MAX_QUILT_STATES = 100_000
_EXHAUSTIVE_MAX_JOINT = 1 << 24


@dataclass(frozen=True)
class MarkovQuilt:
    """A Markov quilt (X_Q, X_N, X_R) of ``node`` (Song et al., Definition 4.2)."""

    node: str
    quilt: frozenset
    nearby: frozenset
    remote: frozenset

    @property
    def is_trivial(self) -> bool:
        return not self.quilt


def dconnected_nodes(dag, source, observed) -> set:
    """Nodes d-connected to ``source`` given ``observed`` (``source`` included; Bayes ball).

    Parameters
    ----------
    dag : networkx.DiGraph
    source : node
    observed : set of nodes (must not contain ``source``)
    """
    observed = set(observed)
    anc = set(observed)
    stack = list(observed)
    while stack:  # ancestors of the observed nodes (colliders there are open)
        v = stack.pop()
        for p in dag.predecessors(v):
            if p not in anc:
                anc.add(p)
                stack.append(p)
    reach = set()
    seen = set()
    todo = [(source, True)]  # (node, arrived from a child i.e. moving up)
    while todo:
        y, up = todo.pop()
        if (y, up) in seen:
            continue
        seen.add((y, up))
        if y not in observed:
            reach.add(y)
        if up and y not in observed:
            todo.extend((p, True) for p in dag.predecessors(y))
            todo.extend((c, False) for c in dag.successors(y))
        elif not up:
            if y not in observed:
                todo.extend((c, False) for c in dag.successors(y))
            if y in anc:
                todo.extend((p, True) for p in dag.predecessors(y))
    return reach


def remote_nodes(dag, node, quilt) -> frozenset:
    """X_R: every node d-separated from ``node`` by ``quilt`` (excluding the quilt)."""
    quilt = set(quilt)
    if node in quilt:
        raise QuiltError(f"A quilt of node {node!r} cannot contain the node itself.")
    for q in quilt:
        if q not in dag:
            raise QuiltError(f"The quilt names {q!r}, which is not a node of the network.")
    near = dconnected_nodes(dag, node, quilt)
    return frozenset(set(dag.nodes) - near - quilt)


def make_quilt(dag, node, quilt) -> MarkovQuilt:
    """The Markov quilt with quilt set ``quilt`` and the largest remote set."""
    if node not in dag:
        raise QuiltError(f"{node!r} is not a node of the network.")
    q = frozenset(quilt)
    r = remote_nodes(dag, node, q)
    n = frozenset(set(dag.nodes) - q - r)
    return MarkovQuilt(node, q, n, r)


def moral_graph(dag):
    """The moral graph of a DAG (parents married, directions dropped)."""
    import networkx as nx

    m = nx.Graph()
    m.add_nodes_from(dag.nodes)
    m.add_edges_from(dag.to_undirected().edges)
    for v in dag.nodes:
        ps = list(dag.predecessors(v))
        m.add_edges_from(combinations(ps, 2))
    return m


def distance_layers(moral, node) -> list:
    """[L_1, L_2, ...]: nodes at moral distance exactly d from ``node``."""
    import networkx as nx

    dist = nx.single_source_shortest_path_length(moral, node)
    layers = {}
    for v, d in dist.items():
        if d > 0:
            layers.setdefault(d, set()).add(v)
    return [frozenset(layers[d]) for d in sorted(layers)]


def use_exhaustive(prior_class) -> bool:
    """Whether the exhaustive search applies (few nodes, small joint state space)."""
    n = len(prior_class.nodes)
    joint = math.prod(len(prior_class.states[v]) for v in prior_class.nodes)
    return n <= EXHAUSTIVE_MAX_NODES and joint <= _EXHAUSTIVE_MAX_JOINT


def exhaustive_quilts(dag, node):
    """Every quilt of ``node``: one per subset of the other nodes (2^(n-1) of them)."""
    others = [v for v in dag.nodes if v != node]
    for r in range(len(others) + 1):
        for q in combinations(others, r):
            yield make_quilt(dag, node, q)
