r"""Markov quilts: finding, for a node :math:`X_i`, sets :math:`X_Q` that screen :math:`X_i` off from far nodes.

Song, Wang and Chaudhuri, Definition 4.2: a Markov quilt of :math:`X_i` is a partition
:math:`(X_N, X_Q, X_R)` of the nodes with :math:`X_i \in X_N` and :math:`X_R` independent of :math:`X_i` given
:math:`X_Q`.  Given :math:`X_Q`, puffgm takes :math:`X_R` to be *exactly* the set of nodes d-separated
from :math:`X_i` by :math:`X_Q` (the largest valid remote set, hence the smallest :math:`X_N` and the
best score), found in one linear-time Bayes-ball pass (Koller and Friedman,
Algorithm 3.1); :math:`X_N` is the rest, :math:`X_i` included.  The trivial quilt
:math:`(X_Q = \emptyset, X_N = X, X_R = \emptyset)` is always a candidate (Theorem 4.3 needs it).

Candidate families
------------------
*Exhaustive* (networks of at most :data:`EXHAUSTIVE_MAX_NODES` nodes whose
joint state space is at most :math:`2^{24}`): every subset of the other nodes is a
candidate quilt, so the calibration is optimal over all quilts.

*Structured* (larger networks).  With :math:`M` the moral graph and :math:`d(i, j)` the
distance in :math:`M`, the family of node :math:`X_i` is the union of

1. the trivial quilt;
2. *distance layers*: :math:`Q_d = \{j : d(i, j) = d\}` for :math:`d = 1, 2, \ldots`;
3. *region boundaries*: quilts :math:`Q = \partial_M(N)` of connected regions :math:`N`
   containing :math:`X_i`, grown greedily from :math:`\{X_i\}`: each step absorbs into N the
   boundary node with the largest single-node influence :math:`e(\{X_j\} \mid X_i)`, so the
   strongly dependent nodes become nearby and the weakly dependent ones stay in
   the quilt; every region on the way is a candidate;
4. *minimal separators*: for each region boundary, the subset of it that
   still d-separates the same remote set (a node of the boundary that is
   d-separated from :math:`X_i` by the rest of the boundary is dropped, which can only
   lower the influence);

each filtered by the bound ``max_quilt_states`` on the joint state space of
:math:`X_Q` (default :data:`DEFAULT_MAX_QUILT_STATES`).  The nodes that set :math:`\sigma_{\max}`
are then refined (:meth:`puffgm.networks.quilt_scores.QuiltSearch.refine`): :math:`X_Q` is grown
greedily from the outside in, one nearby node at a time, choosing the
addition with the smallest score; the worst node grows one step at a time while
it is the worst, until the worst node's growth is complete (unless a quick branch and bound,
:mod:`puffgm.networks.quilt_search`, has certified the structured quilts optimal).
Separation in :math:`M` implies
d-separation, and every candidate's remote set is recomputed exactly by
d-separation, so every candidate is a valid quilt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from puffgm.exceptions import QuiltError
from puffgm.networks.inference import bit_indices

__all__ = [
    "MarkovQuilt",
    "DSeparationIndex",
    "ancestral_set",
    "dconnected_nodes",
    "remote_nodes",
    "make_quilt",
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
#: Entries of the d-separation memo of a DSeparationIndex.
_DSEP_MEMO_MAX = 1 << 18
#: DAGs with at least this many nodes run the Bayes ball compiled (:func:`puffgm.core.kernels.bayes_ball`)
#: when numba is the backend: the loops of the bitmask search grow with the nodes reached.
_COMPILED_BALL_MIN_NODES = 200


@dataclass(frozen=True)
class MarkovQuilt:
    """A Markov quilt :math:`(X_Q, X_N, X_R)` of ``node`` (Song et al., Definition 4.2)."""

    node: str
    quilt: frozenset
    nearby: frozenset
    remote: frozenset

    @property
    def is_trivial(self) -> bool:
        """True when :math:`X_Q` is empty (the trivial quilt)."""
        return not self.quilt


def ancestral_set(dag, nodes) -> set:
    """The nodes and all their ancestors in ``dag``.

    Parameters
    ----------
    dag : networkx.DiGraph
    nodes : iterable of nodes

    Returns
    -------
    set
        An(nodes), ``nodes`` included.

    Examples
    --------
    >>> import networkx as nx
    >>> sorted(ancestral_set(nx.DiGraph([("a", "b"), ("b", "c"), ("d", "c")]), ["b"]))
    ['a', 'b']
    """
    # kept by measurement (python bench/graph_functions.py; docs/architecture.md, "Graph functions"):
    # the union of nx.ancestors over the nodes is 5-8 times slower on alarm, hailfinder and win95pts
    anc = set(nodes)
    stack = list(anc)
    while stack:
        v = stack.pop()
        for p in dag.predecessors(v):
            if p not in anc:
                anc.add(p)
                stack.append(p)
    return anc


def dconnected_nodes(dag, source, observed) -> set:
    """Nodes d-connected to ``source`` given ``observed`` (``source`` included; Bayes ball).

    Parameters
    ----------
    dag : networkx.DiGraph
    source : node
    observed : set of nodes (must not contain ``source``)
    """
    # pgmpy's DAG.active_trail_nodes is the same Bayes ball (Koller and Friedman, Algorithm 3.1),
    # but 1.2-1.6 times slower on a ready pgmpy DAG (observed is a list there), slower still with the
    # conversion from networkx; networkx has no reachable set, and nx.is_d_separator node by node is
    # 80-450 times slower (python bench/graph_functions.py; docs/architecture.md, "Graph functions")
    observed = set(observed)
    anc = ancestral_set(dag, observed)  # colliders there are open
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


class DSeparationIndex:
    """A DAG compiled for many d-separation queries: node sets as integer bitmasks.

    The Bayes ball of :func:`dconnected_nodes` run breadth-first on bitmasks: each
    (node, direction) is visited at most once, and a visit ORs the precomputed
    parent or child mask into the next frontier, so a query costs a few integer
    operations per reachable node instead of a Python set operation per edge
    (2-6 times faster than :func:`dconnected_nodes`, 5-6 times faster than pgmpy's
    ``DAG.active_trail_nodes``; ``python bench/graph_functions.py``, docs/architecture.md).

    Parameters
    ----------
    dag : networkx.DiGraph

    Examples
    --------
    >>> import networkx as nx
    >>> idx = DSeparationIndex(nx.DiGraph([("a", "b"), ("b", "c")]))
    >>> sorted(idx.names(idx.remote_bits("a", idx.bits(["b"]))))
    ['c']
    """

    __slots__ = ("nodes", "index", "_par", "_ch", "_anc", "all_bits", "desc", "_names8", "_memo", "_kernel",
                 "_csr", "_nbytes")

    def __init__(self, dag):
        import networkx as nx

        self.nodes = tuple(dag.nodes)
        self.index = {v: k for k, v in enumerate(self.nodes)}
        idx = self.index
        self._par = [sum(1 << idx[p] for p in dag.predecessors(v)) for v in self.nodes]
        self._ch = [sum(1 << idx[c] for c in dag.successors(v)) for v in self.nodes]
        anc = [0] * len(self.nodes)
        for v in nx.topological_sort(dag):
            k = idx[v]
            b = 1 << k
            for p in dag.predecessors(v):
                b |= anc[idx[p]]
            anc[k] = b
        self._anc = anc  # ancestors of each node, the node included
        self.all_bits = (1 << len(self.nodes)) - 1
        desc = [0] * len(self.nodes)  # proper descendants of each node
        for k, b in enumerate(anc):
            a = b & ~(1 << k)
            while a:
                low = a & -a
                desc[low.bit_length() - 1] |= 1 << k
                a ^= low
        self.desc = desc
        names8 = []  # names8[b][v]: the names of the nodes 8b + i with bit i of v set
        for start in range(0, len(self.nodes), 8):
            block = self.nodes[start:start + 8]
            t: list[tuple[str, ...]] = [()] * 256
            for v in range(1, 1 << len(block)):
                t[v] = t[v & (v - 1)] + (block[(v & -v).bit_length() - 1],)
            names8.append(t)
        self._names8 = names8
        self._memo = {}  # (source, observed) -> (reach, touched): the searches ask the same sets again
        self._kernel: Any = False  # the compiled ball once looked up (None: run the bitmask search)
        self._csr: tuple = ()
        self._nbytes = (len(self.nodes) + 7) // 8

    def bits(self, nodes) -> int:
        """The bitmask of a set of node names."""
        idx = self.index
        b = 0
        for v in nodes:
            b |= 1 << idx[v]
        return b

    def names(self, bits: int) -> frozenset:
        """The node names of a bitmask."""
        out: list[str] = []
        for table in self._names8:  # one lookup per 8 nodes
            if not bits:
                break
            if bits & 255:
                out += table[bits & 255]
            bits >>= 8
        return frozenset(out)

    def forget(self):
        """Empty the memo of Bayes-ball results."""
        self._memo.clear()

    def dconnected_bits(self, source, observed: int) -> int:
        """Bitmask of the nodes d-connected to ``source`` given ``observed`` (``source`` included)."""
        return self.reach_and_touched(source, observed)[0]

    def reach_and_touched(self, source, observed: int) -> tuple:
        """(d-connected nodes, touched nodes) given ``observed``, as bitmasks.

        A node is *touched* if the ball is passed to it at all (observed nodes
        included).  An observed node v that is not touched is d-separated from
        ``source`` by ``observed - {v}``: an active trail to v given the smaller set
        would be active, up to v, given ``observed`` too.  Results are memoised
        (at most :data:`_DSEP_MEMO_MAX` entries; the memo is emptied when full).
        """
        key = (source, observed)
        hit = self._memo.get(key)
        if hit is None:
            if len(self._memo) >= _DSEP_MEMO_MAX:
                self._memo.clear()
            hit = self._memo[key] = self._ball(source, observed)
        return hit

    def _ball(self, source, observed: int) -> tuple:
        """Bayes-ball from ``source`` given ``observed``: (reach, touched), compiled on large DAGs."""
        if self._kernel is False:
            self._kernel = None
            if len(self.nodes) >= _COMPILED_BALL_MIN_NODES:
                from puffgm.core.kernels import bayes_ball

                self._kernel = bayes_ball()
                self._csr = self._csr_arrays()
        if self._kernel is not None:
            return self._ball_compiled(source, observed)
        return self._ball_bits(source, observed)

    def _csr_arrays(self) -> tuple:
        """(parent pointers, parents, child pointers, children) as int64 arrays (compressed rows)."""
        out = []
        for masks in (self._par, self._ch):
            rows = [bit_indices(m) for m in masks]
            ptr = np.zeros(len(rows) + 1, dtype=np.int64)
            ptr[1:] = np.cumsum([len(r) for r in rows])
            out += [ptr, np.array([k for r in rows for k in r], dtype=np.int64)]
        return tuple(out)

    def _ball_compiled(self, source, observed: int) -> tuple:
        """:meth:`_ball_bits` by the compiled kernel (the same visits; bitmasks in and out)."""
        n, nb = len(self.nodes), self._nbytes
        obs = np.unpackbits(np.frombuffer(observed.to_bytes(nb, "little"), dtype=np.uint8), count=n,
                            bitorder="little")
        reach = np.zeros(n, dtype=np.uint8)
        touched = np.zeros(n, dtype=np.uint8)
        self._kernel(*self._csr, self.index[source], obs, reach, touched)
        return (int.from_bytes(np.packbits(reach, bitorder="little").tobytes(), "little"),
                int.from_bytes(np.packbits(touched, bitorder="little").tobytes(), "little"))

    def _ball_bits(self, source, observed: int) -> tuple:
        """Bayes-ball from ``source`` given ``observed`` on bitmasks: (reach, touched)."""
        par, ch, ancs = self._par, self._ch, self._anc
        anc = 0
        o = observed
        while o:  # colliders in An(observed) are open
            low = o & -o
            anc |= ancs[low.bit_length() - 1]
            o ^= low
        up, down = 1 << self.index[source], 0  # frontiers: arrived from a child / from a parent
        seen_up = seen_down = reach = 0
        free = ~observed
        while up or down:
            seen_up |= up
            seen_down |= down
            nu = nd = 0
            x = up & free  # moving up through an unobserved node: on to parents and children
            y = down & free  # moving down through an unobserved node: on to children
            reach |= x | y
            while x:
                low = x & -x
                k = low.bit_length() - 1
                nu |= par[k]
                nd |= ch[k]
                x ^= low
            while y:
                low = y & -y
                nd |= ch[low.bit_length() - 1]
                y ^= low
            z = down & anc  # a collider with an observed descendant: back up to the parents
            while z:
                low = z & -z
                nu |= par[low.bit_length() - 1]
                z ^= low
            up = nu & ~seen_up
            down = nd & ~seen_down
        return reach, seen_up | seen_down

    def remote_bits(self, node, quilt: int) -> int:
        """Bitmask of :math:`X_R`: the nodes d-separated from ``node`` by ``quilt`` (quilt excluded)."""
        return self.all_bits & ~self.dconnected_bits(node, quilt) & ~quilt

    def make_quilt(self, node, quilt, bits=None) -> MarkovQuilt:
        """:func:`make_quilt` on this DAG (``quilt`` must not contain ``node``; ``bits``: its bitmask,
        when the caller has it)."""
        qb = self.bits(quilt) if bits is None else bits
        r = self.remote_bits(node, qb)
        return MarkovQuilt(node, frozenset(quilt), self.names(self.all_bits & ~qb & ~r), self.names(r))


def remote_nodes(dag, node, quilt) -> frozenset:
    """:math:`X_R`: every node d-separated from ``node`` by ``quilt`` (excluding the quilt)."""
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


def distance_layers(moral, node) -> list:
    r""":math:`[L_1, L_2, \dots]`: nodes at moral distance exactly :math:`d` from ``node``."""
    import networkx as nx

    dist = nx.single_source_shortest_path_length(moral, node)
    layers: dict[int, set] = {}
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
    """Every quilt of ``node``: one per subset of the other nodes (:math:`2^{n-1}` of them)."""
    others = [v for v in dag.nodes if v != node]
    for r in range(len(others) + 1):
        for q in combinations(others, r):
            yield make_quilt(dag, node, q)
