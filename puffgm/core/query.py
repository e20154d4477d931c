r"""Sum queries :math:`F(X) = \sum_i s_i(X_i)`: the queries that query-specific calibration serves.

A sum query gives every node :math:`X_i` a score :math:`s_i(x)` per state :math:`x`; the answer on a
record is the sum of the scores of the states it takes.  Counts ("how many
nodes are in state :math:`x`") and weighted sums are sum queries.  Query-specific
calibration (:mod:`puffgm.mechanisms.query`; Song, Wang and Chaudhuri,
"Pufferfish Privacy Mechanisms for Correlated Data", SIGMOD 2017,
arXiv:1603.03977, section 3) needs the exact law of :math:`F` given each secret, which
exact inference computes on an integer partial-sum axis.  So scores live on an
integer grid: integers are used as they are, and scores that are all multiples
of one fraction :math:`1/d` (0.5, 0.25, 0.1 ...) are multiplied by the smallest such :math:`d`,
the *unit*; every scale is reported back in the query's own units.  Scores with
no common denominator up to :data:`MAX_UNIT` are refused.

Forms (JSON or Python)::

    {"scores": {"NODE": [s_0, s_1, ...], ...}}   # per node; an absent node scores 0
    {"scores": {"NODE": {"STATE": s, ...}, ...}} # per node, by state name; an unlisted state scores 0
    {"scores": [s_0, s_1, ...]}                  # every node the same scores
    {"count": STATE}                             # count of nodes in STATE
    {"count": STATE, "nodes": ["A", "B"]}        # ... among these nodes

``STATE`` is a state name (nodes without that state are left out, with a
note), a number equal to a numeric state name (``3`` or ``3.0`` for the state
``"3"``), or, at nodes whose state names are not numbers, an integer index (0 is
each node's first state).  At a node whose states are numbers, an integer is
never read as an index: a number that is not one of its states is refused
(:func:`puffgm.core.states.match_state`).  A score mapping names states the same
way, and a name that is no state of its node is refused naming the states.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from puffgm.core.states import match_state, numeric_states
from puffgm.core.validation import did_you_mean
from puffgm.exceptions import ParameterError

__all__ = ["SumQuery", "BoundQuery", "MAX_UNIT", "load_query"]

#: The largest common denominator tried when scores are not integers.
MAX_UNIT = 10**4

_FORMS = ("scores", "count")


def load_query(query) -> SumQuery:
    """A :class:`SumQuery` from a SumQuery, a dict, a JSON text or the path of a JSON file.

    Raises
    ------
    ParameterError
        If the input is none of these, or the JSON is not a sum query.
    """
    if isinstance(query, SumQuery):
        return query
    if isinstance(query, (str, os.PathLike)):
        text = str(query)
        if os.path.isfile(text):
            with open(text, encoding="utf-8") as fh:
                text = fh.read()
        try:
            query = json.loads(text)
        except json.JSONDecodeError:
            raise ParameterError(f"The query {str(query)[:60]!r} is neither a JSON object nor a JSON file.") from None
    if not isinstance(query, Mapping):
        raise ParameterError('A query is an object {"scores": ...} or {"count": ...}; got '
                             f"{type(query).__name__}.")
    return SumQuery(dict(query))


def _number(v, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)):
        raise ParameterError(f"The scores of {where} must be finite numbers; got {v!r}.")
    return float(v)


def _score_list(v, where: str) -> tuple:
    if not isinstance(v, (list, tuple)) or not v:
        raise ParameterError(f"The scores of {where} must be a non-empty list of numbers, one per state.")
    return tuple(_number(x, where) for x in v)


def _node_scores(v, where: str):
    """A node's scores as given: a list (one per state) or a mapping state -> score (kept as a dict)."""
    if isinstance(v, Mapping):
        if not v:
            raise ParameterError(f"The scores of {where} name no state: give at least one state and its score.")
        return {k: _number(x, where) for k, x in v.items()}
    return _score_list(v, where)


def _scores_by_name(node: str, given: Mapping, states) -> tuple:
    """The score list of ``node`` from a mapping state -> score (unlisted states score 0)."""
    out = [0.0] * len(states)
    named: dict = {}
    for key, score in given.items():
        name = match_state(key, states, node)
        if name in named:
            raise ParameterError(f"The query scores the state {name!r} of node {node!r} twice "
                                 f"({named[name]!r} and {key!r}).")
        named[name] = key
        out[tuple(states).index(name)] = score
    return tuple(out)


def _grid_unit(values) -> int:
    vals = np.array([v for v in values if v != 0.0], dtype=float)
    if vals.size == 0 or np.all(vals == np.round(vals)):
        return 1
    from fractions import Fraction

    den = 1
    for v in vals:
        f = Fraction(float(v)).limit_denominator(MAX_UNIT)
        if abs(float(f) - v) > 1e-9 * max(1.0, abs(v)):
            raise ParameterError(
                f"The scores must be integers, or multiples of one fraction 1/d with d <= {MAX_UNIT}; "
                f"{float(v)!r} is not."
            )
        den = den * f.denominator // math.gcd(den, f.denominator)
        if den > MAX_UNIT:
            raise ParameterError(
                f"The scores must be integers, or multiples of one fraction 1/d with d <= {MAX_UNIT}; "
                "these scores need a larger common denominator."
            )
    return den


@dataclass(frozen=True)
class BoundQuery:
    """A sum query resolved against the nodes and states of a prior class, on the integer grid.

    Attributes
    ----------
    nodes : tuple of str
        The nodes with a non-constant score, in the class's node order.
    scores : tuple of tuple of int
        ``scores[k][x]`` is the score of state x of ``nodes[k]`` in grid units,
        shifted so that each node's smallest score is 0.
    offset : int
        The sum of the smallest scores (grid units): F = (offset + sum of grid scores) / unit.
    unit : int
        Grid units per query unit (1 for integer scores).
    states : tuple of tuple of str
        ``states[k]`` are the state names of ``nodes[k]``.
    notes : tuple of str
        What resolution did (left-out nodes, scaling).
    source : dict
        The query as given.
    """

    nodes: tuple
    scores: tuple
    offset: int
    unit: int
    states: tuple
    notes: tuple
    source: dict

    @property
    def total(self) -> int:
        """The largest value of the shifted grid sum (the partial-sum axis has total + 1 entries)."""
        return int(sum(max(s) for s in self.scores))

    @property
    def lipschitz(self) -> float:
        """The query's L1 Lipschitz constant: the largest change one node can cause, in query units."""
        return max((max(s) for s in self.scores), default=0) / self.unit

    def score_vector(self, node: str) -> np.ndarray:
        """The grid scores of ``node`` (zeros of the right length are not stored: raises KeyError)."""
        return np.asarray(self.scores[self.nodes.index(node)], dtype=np.int64)

    def range_of(self, nodes) -> int:
        """Sum of the score ranges of ``nodes`` (grid units): the group-DP sensitivity of that group."""
        chosen = set(nodes)
        return int(sum(max(s) for n, s in zip(self.nodes, self.scores, strict=True) if n in chosen))

    def evaluate(self, record: Mapping) -> float:
        """F on one record, in query units: the true answer to release.

        Parameters
        ----------
        record : mapping node -> state name (or state index)
            The value of every scored node (other nodes score a constant).

        Raises
        ------
        ParameterError
            When a scored node is missing or has no such state.
        """
        total = self.offset
        for n, states, s in zip(self.nodes, self.states, self.scores, strict=True):
            if n not in record:
                raise ParameterError(f"The record has no value for the scored node {n!r}.")
            total += s[states.index(match_state(record[n], states, n))]
        return total / self.unit

    def to_dict(self) -> dict:
        """The query as given, with what resolution did (JSON-ready)."""
        return {"query": dict(self.source), "scored_nodes": len(self.nodes), "unit": self.unit,
                "min_value": self.offset / self.unit, "max_value": (self.offset + self.total) / self.unit,
                "lipschitz": self.lipschitz, "notes": list(self.notes)}


class SumQuery:
    r"""A sum query :math:`F(X) = \sum_i s_i(X_i)` as given (before it meets a prior class).

    Parameters
    ----------
    spec : dict
        One of the forms of :mod:`puffgm.core.query`.

    Examples
    --------
    >>> q = SumQuery({"count": 0})
    >>> b = q.bind(["A", "B"], {"A": ("yes", "no"), "B": ("yes", "no")})
    >>> b.total, b.lipschitz
    (2, 1.0)
    """

    __slots__ = ("spec",)
    spec: dict

    def __init__(self, spec: Mapping):
        spec = dict(spec)
        forms = [k for k in _FORMS if k in spec]
        if len(forms) != 1:
            hint = next((h for h in (did_you_mean(k, _FORMS) for k in spec if k not in _FORMS) if h), "")
            raise ParameterError(f'A query has exactly one of the keys "scores" and "count"{hint}.')
        allowed = {"scores"} if forms[0] == "scores" else {"count", "nodes"}
        extra = sorted(set(spec) - allowed - {"description", "name"})
        if extra:
            raise ParameterError(f"Unknown key(s) {', '.join(map(repr, extra))} in the query"
                                 f"{did_you_mean(extra[0], allowed | {'description', 'name'})}; "
                                 f"a {forms[0]} query takes {', '.join(sorted(allowed))}.")
        if forms[0] == "scores":
            s = spec["scores"]
            if isinstance(s, Mapping):
                if not s:
                    raise ParameterError("The query's scores are empty: give at least one node.")
                spec["scores"] = {str(n): _node_scores(v, f"node {n!r}") for n, v in s.items()}
            else:
                spec["scores"] = _score_list(s, "the query")
        else:
            c = spec["count"]
            if isinstance(c, bool) or not isinstance(c, (str, numbers.Integral)) or (
                    not isinstance(c, str) and int(c) < 0):
                raise ParameterError(f"A count query names a state (its name, or its index >= 0); got {c!r}.")
            if "nodes" in spec and (not isinstance(spec["nodes"], (list, tuple)) or not spec["nodes"]):
                raise ParameterError('The "nodes" of a count query must be a non-empty list of node names.')
        object.__setattr__(self, "spec", spec)

    def __setattr__(self, key, value):
        raise AttributeError("SumQuery is immutable")

    def __repr__(self):
        return f"SumQuery({self.spec!r})"

    def bind(self, nodes, states: Mapping) -> BoundQuery:
        """Resolve the query against a class's ``nodes`` and ``states`` (node -> state names).

        Raises
        ------
        ParameterError
            On an unknown node, a score list whose length is not the node's number
            of states, or a counted state no node has.
        """
        nodes = tuple(str(n) for n in nodes)
        raw, notes = self._raw_scores(nodes, states)
        unit = _grid_unit([v for s in raw.values() for v in s])
        if unit != 1:
            notes.append(f"scores multiplied by {unit} to put them on an integer grid")
        kept, scores, offset = [], [], 0
        for n in nodes:
            if n not in raw:
                continue
            grid = [int(round(v * unit)) for v in raw[n]]
            low = min(grid)
            offset += low
            if max(grid) > low:
                kept.append(n)
                scores.append(tuple(g - low for g in grid))
        return BoundQuery(nodes=tuple(kept), scores=tuple(scores), offset=int(offset), unit=int(unit),
                          states=tuple(tuple(map(str, states[n])) for n in kept), notes=tuple(notes),
                          source=dict(self.spec))

    def _raw_scores(self, nodes, states) -> tuple:
        spec, notes = self.spec, list[str]()
        if "count" in spec:
            return self._count_scores(nodes, states, notes), notes
        s = spec["scores"]
        if isinstance(s, Mapping):
            unknown = sorted(set(s) - set(nodes))
            if unknown:
                what = "which is not a node" if len(unknown) == 1 else "which are not nodes"
                raise ParameterError(f"The query scores {', '.join(map(repr, unknown[:5]))}, {what} of the prior"
                                     f"{did_you_mean(unknown[0], nodes)}.")
            items = s
        else:
            items = {n: s for n in nodes}
        items = {n: _scores_by_name(n, v, tuple(map(str, states[n]))) if isinstance(v, Mapping) else v
                 for n, v in items.items()}
        for n, v in items.items():
            if len(v) != len(states[n]):
                raise ParameterError(f"The query gives {len(v)} score(s) for node {n!r}, which has "
                                     f"{len(states[n])} states ({', '.join(map(str, states[n]))}).")
        return dict(items), notes

    def _count_scores(self, nodes, states, notes) -> dict:
        c = self.spec["count"]
        chosen = nodes
        if "nodes" in self.spec:
            want = [str(n) for n in self.spec["nodes"]]
            unknown = [n for n in want if n not in nodes]
            if unknown:
                raise ParameterError(f"The count query names {unknown[0]!r}, which is not a node of the prior"
                                     f"{did_you_mean(unknown[0], nodes)}.")
            chosen = tuple(n for n in nodes if n in set(want))
        out = {}
        for n in chosen:
            st = tuple(map(str, states[n]))
            counted = _counted_state(c, st, n)
            if counted is not None:
                out[n] = tuple(1.0 if s == counted else 0.0 for s in st)
        if not out:
            known = dict.fromkeys(str(s) for n in chosen for s in states[n])
            raise ParameterError(f"No node of the prior has the counted state {c!r}{did_you_mean(c, known)}.")
        left = len(chosen) - len(out)
        if left:
            notes.append(f"{left} node(s) have no state {c!r} and are not counted")
        return out


def _counted_state(c, states: tuple, node: str):
    """The state of ``node`` a count query counts, or None (a name the node does not have: left out).

    A name, or a number equal to a numeric state name; an integer is an index only at a node whose
    states are not numbers, and at a node with numeric states a number that is not one of them is refused.
    """
    try:
        return match_state(c, states, node)
    except ParameterError:
        if isinstance(c, str):
            return None
        if numeric_states(states):
            raise ParameterError(f"The count query counts {c!r}, which is not a state of node {node!r} (its states "
                                 f"are the numbers {', '.join(states)}); an integer is read as a state name, never "
                                 "as an index, at a node with numeric states.") from None
        raise ParameterError(f"The count query counts state index {int(c)}, but node {node!r} has "
                             f"{len(states)} states.") from None


