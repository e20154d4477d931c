"""One database of a prior class, read from data: a record of named nodes, or a trace in time order.

A query-specific calibration (:mod:`puffgm.mechanisms.query`, :mod:`puffgm.mechanisms.workload`)
covers one database, the outcome X of the prior class: for a Bayesian network one record
(a state for every node), for a Markov chain one trace (the states of X1..XT in time
order).  :class:`RecordLayout` says which of the two a class takes and reads either
into the mapping node -> state name that :meth:`puffgm.core.query.BoundQuery.evaluate`
scores, so the true answer of a release is computed from the data, never typed.

Forms accepted (pandas is recognised without being imported, :mod:`puffgm.core.frames`):

* a record: a mapping node -> state, a pandas Series indexed by node, or a one-row
  DataFrame with one column per node;
* a trace: a list, tuple or 1-D numpy array of states, a pandas Series, or a one-column
  DataFrame (one row per time step).

A value is read as a state name (``str`` of the value: :func:`puffgm.fit_chain` and
:func:`puffgm.fit_network` name states that way, so ``1`` is the state ``"1"``), or as a number
equal to a numeric state name (``3.0`` and the CSV text ``"3.0"`` are the state ``"3"``); at a
node whose state names are not numbers, an integer may name a state by its position (``0`` is
the first), and at a node with numeric states a number that is not one of them is refused
(:func:`puffgm.core.states.match_state`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from puffgm.core.frames import is_missing, pandas_type
from puffgm.core.states import match_state
from puffgm.exceptions import ParameterError

__all__ = ["RecordLayout", "read_state"]

_ONE_DATABASE = "a calibration covers one database, and the noise is calibrated for that database alone"


@dataclass(frozen=True)
class RecordLayout:
    """How one database of a prior class is given: a record of named nodes, or a trace in time order.

    Attributes
    ----------
    nodes : tuple of str
        Every node of the class, in its order (for a chain: X1..XT, position t of a trace is ``nodes[t]``).
    states : tuple of tuple of str
        ``states[k]`` are the state names of ``nodes[k]``.
    trace : bool
        True for a Markov chain (data is one trace), False for a network (data is one record).

    Examples
    --------
    >>> layout = RecordLayout(nodes=("A", "B"), states=(("yes", "no"), ("yes", "no")))
    >>> layout.read({"A": "no", "B": 0})
    {'A': 'no', 'B': 'yes'}
    >>> chain = RecordLayout(nodes=("X1", "X2", "X3"), states=(("0", "1"),) * 3, trace=True)
    >>> chain.read([1, 0, 1])
    {'X1': '1', 'X2': '0', 'X3': '1'}
    """

    nodes: tuple
    states: tuple
    trace: bool = False

    @property
    def form(self) -> str:
        """``"trace"`` or ``"record"``: what one database of the class is."""
        return "trace" if self.trace else "record"

    def read(self, data) -> dict:
        """The database ``data`` as a mapping node -> state name (every node given, checked).

        Raises
        ------
        ParameterError
            One sentence: several records or traces (a calibration covers one database), a form
            that is not a record (or trace), an unknown node, a trace of the wrong length, a gap,
            or a value that is no state of its node.
        """
        return self._read_trace(data) if self.trace else self._read_record(data)

    # ------------------------------------------------------------------ records
    def _read_record(self, data) -> dict:
        kind = pandas_type(data)
        if kind == "DataFrame":
            if len(data) != 1:
                raise ParameterError(
                    f"The data frame has {len(data)} rows, but {_ONE_DATABASE}: give one record of the "
                    "network's nodes (one row), and calibrate each further database on its own.")
            data = data.iloc[0]
            kind = "Series"
        if kind == "Series":
            data = dict(zip(map(str, data.index), data.to_numpy(dtype=object), strict=True))
        if not isinstance(data, Mapping):
            raise ParameterError("The data of a network is one record: a mapping node -> state, a pandas Series "
                                 f"indexed by node or a one-row DataFrame; got {type(data).__name__}.")
        where = {n: k for k, n in enumerate(self.nodes)}
        out = {}
        for node, value in data.items():
            k = where.get(str(node))
            if k is None:
                raise ParameterError(f"The record names {str(node)!r}, which is not a node of the prior.")
            out[self.nodes[k]] = _state(self.nodes[k], self.states[k], value)
        return out

    # ------------------------------------------------------------------ traces
    def _read_trace(self, data) -> dict:
        values = _trace_values(data)
        if len(values) != len(self.nodes):
            raise ParameterError(f"The trace has {len(values)} state(s), but the chain has length T = "
                                 f"{len(self.nodes)}: give the states of X1..X{len(self.nodes)} in time order.")
        return {n: _state(n, s, v) for n, s, v in zip(self.nodes, self.states, values, strict=True)}


def _trace_values(data) -> list:
    """The states of one trace, in time order, from a sequence, an array, a Series or a one-column DataFrame."""
    kind = pandas_type(data)
    if kind == "DataFrame":
        if data.shape[1] != 1:
            raise ParameterError(
                f"The data frame has {data.shape[1]} columns, but {_ONE_DATABASE}: give one trace of the chain "
                "(one column of states in time order).")
        data = data.iloc[:, 0]
        kind = "Series"
    if kind == "Series":
        return list(data.to_numpy(dtype=object))
    if isinstance(data, np.ndarray):
        if data.ndim != 1:
            raise ParameterError(f"The data array has {data.ndim} dimensions, but {_ONE_DATABASE}: give one "
                                 "trace of the chain (a 1-D array of states in time order).")
        return list(data)
    if isinstance(data, (str, bytes)) or isinstance(data, Mapping) or not isinstance(data, Sequence):
        raise ParameterError("The data of a Markov chain is one trace: a list, array or pandas Series of the states "
                             f"of X1..XT in time order, or a one-column DataFrame; got {type(data).__name__}.")
    if any(isinstance(v, (list, tuple, np.ndarray)) for v in data):
        raise ParameterError(f"The data holds several traces, but {_ONE_DATABASE}: give one trace of the chain.")
    return list(data)


def read_state(node: str, states: tuple, value) -> str:
    """The state name ``value`` stands for at ``node`` (its name, then an integer index), as :meth:`RecordLayout.read`
    reads it; ParameterError for a gap or a value that is no state."""
    return _state(node, states, value)


def _state(node: str, states: tuple, value) -> str:
    """The state name ``value`` stands for at ``node`` (:func:`puffgm.core.states.match_state`)."""
    if is_missing(value):
        raise ParameterError(f"The data has no value for node {node!r} (a gap); a release needs one database with "
                             "every node's state.")
    return match_state(value, states, node)
