r"""Workloads: several sum queries released together, as one vector-valued query.

A workload is an ordered list of sum queries :math:`F_1, \dots, F_k` (:mod:`puffgm.core.query`),
each with a name.  Released together with independent Laplace noise on each
coordinate, the table :math:`(F_1 + Z_1, \dots, F_k + Z_k)` is calibrated from the exact
*joint* law of :math:`(F_1, \dots, F_k)` given each secret (:mod:`puffgm.mechanisms.workload`).

Forms (JSON or Python)::

    [QUERY, QUERY, ...]                               # each a sum query, optionally with "name"
    {"queries": [QUERY, ...]}                         # the same
    {"histogram": {"nodes": ["A", "B", ...]}}         # the count of each state over these nodes
    {"histogram": {}}                                 # ... over every node (they share one state space)

A histogram is one count query per state (``{"count": s, "nodes": [...]}``), named
by the state; its nodes must share one state space (a chain's positions, the people
of a contact network).

The joint law is computed by the exact inference of a single sum query with a grid of :math:`k`
partial-sum axes instead of one (:meth:`puffgm.core.prior.PriorKind.workload_laws`): each node's
state :math:`x` moves the grid by its row of grid scores :math:`(s_1(x), \dots, s_k(x))`
(:meth:`BoundWorkload.node_score_rows`), and the grid of a joint law has :math:`\prod_j (n_j + 1)` cells
(:meth:`BoundWorkload.check_cells` bounds it).

The same joint law is also the law of one integer whose digits are the :math:`k` sums: with each query's
grid sum :math:`G_j \in \{0, \dots, n_j\}` (:class:`~puffgm.core.query.BoundQuery`) and radices :math:`R_1 = 1`,
:math:`R_{j+1} = R_j (n_j + 1)`, the *encoded* score of a node's state :math:`x` is
:math:`e(x) = \sum_j s_j(x) R_j`, and the encoded sum :math:`E = \sum_j G_j R_j` determines every :math:`G_j` (no
digit carries, since :math:`G_j \le n_j`).  So the one-axis inference of a single sum query computes the joint law
of :math:`(G_1, \dots, G_k)` as the law of :math:`E` on :math:`0, \dots, \prod_j (n_j + 1) - 1`
(:meth:`BoundWorkload.encoded`, :meth:`BoundWorkload.decode`): the same
sums, with the exact zeros between the digits convolved as well, so the grid is the road taken
and the encoded sum a second road the tests compare it with.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from puffgm.core.query import BoundQuery, SumQuery
from puffgm.core.validation import did_you_mean
from puffgm.exceptions import ParameterError

__all__ = ["Workload", "BoundWorkload", "load_workload", "is_workload_spec", "DEFAULT_MAX_JOINT_LENGTH"]

#: The largest grid prod_j (n_j + 1) a workload may need (the joint law's number of cells): a 3-state
#: histogram of 63 positions (64^3 cells), a 4-state one of 21, four counts of 20 nodes each.
DEFAULT_MAX_JOINT_LENGTH = 1 << 18

_SUGGEST = "use the Markov Quilt Mechanism (--method exact), whose noise does not depend on the queries"


@dataclass(frozen=True)
class Workload:
    """An ordered list of sum queries with names, as given (before it meets a prior class).

    Attributes
    ----------
    queries : tuple of SumQuery
    names : tuple of str
    histogram : dict or None
        The histogram form as given (its queries are made when the states are known).
    source : object
        The workload as given (JSON-ready).
    """

    queries: tuple
    names: tuple
    histogram: dict | None
    source: object

    @property
    def size(self) -> int | None:
        """k, the number of statistics (None for a histogram until its states are known)."""
        return None if self.histogram is not None else len(self.queries)

    def bind(self, nodes, states: Mapping) -> BoundWorkload:
        """Resolve every query against a class's ``nodes`` and ``states`` (node -> state names).

        Raises
        ------
        ParameterError
            As :meth:`SumQuery.bind`, or when a histogram's nodes do not share one state space.
        """
        queries, names = self.queries, self.names
        if self.histogram is not None:
            queries, names = _histogram_queries(self.histogram, tuple(str(n) for n in nodes), states)
        bound = tuple(q.bind(nodes, states) for q in queries)
        return BoundWorkload(queries=bound, names=tuple(names), source=self.source)


@dataclass(frozen=True)
class BoundWorkload:
    """A workload resolved against a prior class: k bound queries and their joint encoding.

    Attributes
    ----------
    queries : tuple of BoundQuery
    names : tuple of str
    source : object
        The workload as given.
    """

    queries: tuple
    names: tuple
    source: object

    @property
    def k(self) -> int:
        """The number of statistics."""
        return len(self.queries)

    @property
    def dims(self) -> tuple:
        r""":math:`(n_1 + 1, \dots, n_k + 1)`: the length of each query's grid axis."""
        return tuple(q.total + 1 for q in self.queries)

    @property
    def joint_length(self) -> int:
        r""":math:`\prod_j (n_j + 1)`: the cells of the joint law (of its grid, and of the encoded axis)."""
        return math.prod(self.dims)

    @property
    def radices(self) -> tuple:
        r""":math:`R_j = \prod_{i < j} (n_i + 1)`: the weight of query :math:`j`'s digit in the encoded sum."""
        out, r = [], 1
        for d in self.dims:
            out.append(r)
            r *= d
        return tuple(out)

    def node_score_rows(self) -> dict:
        r"""For each scored node, its grid scores as an int array (states, k): row :math:`x` is
        :math:`(s_1(x), \dots, s_k(x))`, each query's shifted grid score (0 where the query does not score the node).

        The step by which the node's state moves the grid of partial sums (one axis per statistic).
        """
        rows: dict = {}
        for j, q in enumerate(self.queries):
            for n, sc in zip(q.nodes, q.scores, strict=True):
                if n not in rows:
                    rows[n] = np.zeros((len(sc), self.k), dtype=np.int64)
                rows[n][:, j] = sc
        return rows

    def node_l1(self) -> dict:
        r"""For each scored node, the largest L1 change of the table when that node alone changes state:
        :math:`\max_{x, x'} \sum_j |s_j(x) - s_j(x')| / u_j` over state pairs, :math:`u_j` the query units."""
        rows: dict = {}
        for q in self.queries:
            for n, s in zip(q.nodes, q.scores, strict=True):
                rows.setdefault(n, []).append(np.asarray(s, dtype=float) / q.unit)
        out = {}
        for n, cols in rows.items():
            m = np.stack(cols, axis=1)  # states x statistics
            out[n] = float(np.abs(m[:, None, :] - m[None, :, :]).sum(axis=2).max())
        return out

    @property
    def lipschitz(self) -> float:
        """The workload's L1 Lipschitz constant in query units: the largest L1 change of the table one node can
        cause (:meth:`node_l1`); a histogram's is 2, one count down and one up."""
        return max(self.node_l1().values(), default=0.0)

    def l1_range(self, group) -> float:
        """How far the table can move in L1 when every node of ``group`` changes: at most the sum of the
        nodes' :meth:`node_l1` (the triangle inequality; equal for counts and histograms)."""
        per_node = self.node_l1()
        return float(sum(per_node.get(str(n), 0.0) for n in group))

    def encoded(self, max_joint_length: int = DEFAULT_MAX_JOINT_LENGTH) -> SumQuery:
        r"""The one sum query whose grid sum encodes every query's grid sum (module docstring).

        Raises
        ------
        ParameterError
            When :math:`\prod_j (n_j + 1)` exceeds ``max_joint_length`` (one sentence naming the limit).
        """
        self.check_cells(max_joint_length)
        scores: dict = {}
        for q, r in zip(self.queries, self.radices, strict=True):
            for n, s in zip(q.nodes, q.scores, strict=True):
                prev = scores.get(n)
                add = [r * int(v) for v in s]
                scores[n] = add if prev is None else [a + b for a, b in zip(prev, add, strict=True)]
        return SumQuery({"scores": scores})

    def check_cells(self, max_joint_length: int = DEFAULT_MAX_JOINT_LENGTH) -> None:
        r"""Refuse a joint law of more than ``max_joint_length`` cells :math:`\prod_j (n_j + 1)`.

        Raises
        ------
        ParameterError
            One sentence naming the cells and the limit.
        """
        if self.joint_length > max_joint_length:
            raise ParameterError(
                f"The joint law of these {self.k} statistics has {self.joint_length} cells "
                f"({' x '.join(map(str, self.dims))}), over the limit of {max_joint_length} (max_joint_length); "
                f"release fewer or coarser statistics, or {_SUGGEST}.")

    def decode(self, encoded_rows: np.ndarray, offset: int) -> np.ndarray:
        """Joint laws from laws of the encoded sum: rows on offset..offset+m-1 -> arrays of shape (rows, *dims).

        ``offset`` is the encoded query's offset after binding (the sum of each node's smallest
        encoded score), where its shifted grid sum starts.
        """
        rows = np.asarray(encoded_rows, dtype=float)
        full = np.full((rows.shape[0], self.joint_length), -np.inf)
        m = min(rows.shape[1], self.joint_length - offset)
        if np.any(np.isfinite(rows[:, m:])):
            raise ParameterError("The encoded workload law reaches past its last cell; this is a bug in puffgm.")
        full[:, offset:offset + m] = rows[:, :m]
        # C order: the last axis varies fastest, and query 1 has radix 1, so reverse the axes
        shaped = full.reshape((rows.shape[0],) + tuple(reversed(self.dims)))
        return np.transpose(shaped, (0,) + tuple(range(self.k, 0, -1)))

    def evaluate(self, record: Mapping) -> tuple:
        r""":math:`(F_1, \dots, F_k)` on one record, in each query's units."""
        return tuple(q.evaluate(record) for q in self.queries)

    def to_dict(self) -> dict:
        """The workload as bound (JSON-ready): names, each query's resolution, the L1 Lipschitz constant."""
        return {"names": list(self.names), "queries": [q.to_dict() for q in self.queries],
                "lipschitz_l1": self.lipschitz, "joint_cells": self.joint_length}


def load_workload(spec) -> Workload:
    """A :class:`Workload` from a list of queries, ``{"queries": [...]}``, ``{"histogram": {...}}``,
    a single query (a workload of one), JSON text or a JSON file path.

    Raises
    ------
    ParameterError
        On a malformed workload (one sentence naming the problem).
    """
    if isinstance(spec, Workload):
        return spec
    if isinstance(spec, (SumQuery, BoundQuery)):
        raise ParameterError("Give the workload as query specs (dicts), not bound or loaded queries.")
    if isinstance(spec, str):
        spec = _read_json(spec)
    if isinstance(spec, Mapping) and "histogram" in spec:
        return _histogram_workload(spec)
    if isinstance(spec, Mapping) and "queries" in spec:
        extra = sorted(set(spec) - {"queries", "description"})
        if extra:
            raise ParameterError(f"Unknown key(s) {', '.join(map(repr, extra))} in the workload"
                                 f"{did_you_mean(extra[0], ('queries', 'description'))}; it takes "
                                 '"queries" (a list of sum queries) or "histogram".')
        spec = spec["queries"]
    if isinstance(spec, Mapping):
        hint = _workload_key_hint(spec)
        if hint:
            raise ParameterError(f"Unknown key(s) {', '.join(map(repr, sorted(spec)))} in the workload{hint}; "
                                 'it takes "queries" (a list of sum queries) or "histogram".')
        spec = [spec]
    if not isinstance(spec, Sequence) or isinstance(spec, (str, bytes)) or not spec:
        raise ParameterError("A workload is a non-empty list of sum queries, {\"queries\": [...]} or "
                             "{\"histogram\": {...}}.")
    queries, names = [], []
    for j, q in enumerate(spec):
        if not isinstance(q, Mapping):
            raise ParameterError(f"Query {j + 1} of the workload is not a JSON object; got {type(q).__name__}.")
        names.append(str(q.get("name", f"F{j + 1}")))
        queries.append(SumQuery(q))
    if len(set(names)) != len(names):
        raise ParameterError("The names of the workload's queries must differ.")
    return Workload(queries=tuple(queries), names=tuple(names), histogram=None, source=list(spec))


def is_workload_spec(spec) -> bool:
    """True if ``spec`` is a workload form (a list of queries, ``{"queries": ...}`` or ``{"histogram": ...}``)
    rather than one sum query; JSON text and file paths are read to decide (False if they cannot be read)."""
    if isinstance(spec, Workload):
        return True
    if isinstance(spec, str):
        try:
            spec = _read_json(spec)
        except ParameterError:
            return False
    return isinstance(spec, (list, tuple)) or (isinstance(spec, Mapping) and (
        "queries" in spec or "histogram" in spec or bool(_workload_key_hint(spec))))


def _workload_key_hint(spec: Mapping) -> str:
    """The did-you-mean hint of an object that is neither a query nor a workload but has a key close to
    "queries" or "histogram" (a misspelt workload), else ""."""
    if any(k in spec for k in ("scores", "count", "queries", "histogram")):
        return ""
    return next((h for h in (did_you_mean(k, ("queries", "histogram")) for k in spec) if h), "")


def _read_json(text: str):
    """JSON text, or the JSON content of a file path."""
    s = text.strip()
    if s[:1] in "[{":
        try:
            return json.loads(s)
        except json.JSONDecodeError as exc:
            raise ParameterError(f"The workload is not valid JSON: {exc.msg} (line {exc.lineno}).") from None
    if not os.path.isfile(text):
        raise ParameterError(f"There is no workload file {text!r} (give JSON text or a file path).")
    with open(text) as fh:
        try:
            return json.load(fh)
        except json.JSONDecodeError as exc:
            raise ParameterError(f"The workload file {text!r} is not valid JSON: {exc.msg}.") from None


def _histogram_workload(spec: Mapping) -> Workload:
    h = spec["histogram"]
    if not isinstance(h, Mapping):
        raise ParameterError('"histogram" takes an object: {"nodes": [...]} (optional) and "states" (optional).')
    extra = sorted(set(h) - {"nodes", "states"})
    if extra:
        raise ParameterError(f"Unknown key(s) {', '.join(map(repr, extra))} in the histogram"
                             f"{did_you_mean(extra[0], ('nodes', 'states'))}; it takes "
                             '"nodes" and "states".')
    for key in ("nodes", "states"):
        if key in h and (not isinstance(h[key], (list, tuple)) or not h[key]):
            raise ParameterError(f'The histogram\'s "{key}" must be a non-empty list.')
    return Workload(queries=(), names=(), histogram=dict(h), source=dict(spec))


def _histogram_queries(h: Mapping, nodes: tuple, states: Mapping) -> tuple:
    """One count query per state over the histogram's nodes, named by the state."""
    chosen = tuple(str(n) for n in h.get("nodes", nodes))
    unknown = [n for n in chosen if n not in nodes]
    if unknown:
        raise ParameterError(f"The histogram names {unknown[0]!r}, which is not a node of the prior"
                             f"{did_you_mean(unknown[0], nodes)}.")
    spaces = {tuple(map(str, states[n])) for n in chosen}
    if len(spaces) != 1:
        raise ParameterError("The histogram's nodes must share one state space; give \"nodes\" that do.")
    space = spaces.pop()
    wanted = [str(s) for s in h.get("states", space)]
    missing = [s for s in wanted if s not in space]
    if missing:
        raise ParameterError(f"The histogram counts state {missing[0]!r}, which its nodes do not have"
                             f"{did_you_mean(missing[0], space)} "
                             f"(their states: {', '.join(space)}).")
    queries = tuple(SumQuery({"count": s, "nodes": list(chosen)}) for s in wanted)
    return queries, tuple(wanted)
