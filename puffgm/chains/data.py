"""Data in: traces of states for chain fitting, and real series shipped inside wheels.

:func:`read_traces` turns what a user holds -- a list, a numpy array, a pandas
``Series`` or ``DataFrame`` (wide: one trace per column; long: one trace per
id), or a list of traces -- into :class:`Traces`, the input of
:func:`puffgm.fit_chain`.  Entries are read as *values*: a string is one state
and is never iterated.  ``None``, NaN and pandas' ``NA`` are gaps.

Nothing is downloaded: :func:`load_real_series` reads pmdarima's half-hourly
England and Wales electricity demand (Taylor 2003, 4032 steps, MIT; install
with ``pip install "puffgm[examples]"``) when pmdarima is installed, and
otherwise statsmodels' bundled monthly El Nino sea-surface temperatures
(statsmodels comes with pgmpy).  :func:`discretise` bins a series into k
equal-width states, the preprocessing of Song et al. section 5.3.2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from puffgm.core.frames import is_missing, pandas_type
from puffgm.core.validation import check_positive_int
from puffgm.exceptions import PriorError

__all__ = ["Traces", "read_traces", "load_real_series", "discretise"]

_STRING = ("A string is one state; give a sequence of states (a list, a numpy array or a pandas Series) "
           "or a list of such traces.")


@dataclass(frozen=True)
class Traces:
    """Observed traces of states, gaps marked ``None`` (immutable).

    Attributes
    ----------
    traces : tuple of tuple
        One tuple per trace, in time order; ``None`` marks a gap.  numpy
        scalars are Python values and integral floats are ints (a numeric
        column with gaps is float in pandas).
    source : str
        What the traces were read from, for notes and messages.
    """

    traces: tuple
    source: str

    @property
    def runs(self) -> list:
        """The gap-free runs (lists of states): no transition is counted across a gap."""
        out: list = []
        for t in self.traces:
            cur: list = []
            for v in t:
                if v is None:
                    if cur:
                        out.append(cur)
                    cur = []
                else:
                    cur.append(v)
            if cur:
                out.append(cur)
        return out

    @property
    def span(self) -> int:
        """Length of the longest trace from its first to its last observation, gaps inside included."""
        best = 0
        for t in self.traces:
            seen = [i for i, v in enumerate(t) if v is not None]
            if seen:
                best = max(best, seen[-1] - seen[0] + 1)
        return best


def read_traces(data, *, id_column=None, value_column=None, order_column=None) -> Traces:
    """Read traces of states from a list, an array, a pandas Series or DataFrame, or a list of traces.

    Parameters
    ----------
    data : sequence, numpy array, pandas Series or DataFrame, mapping, or list of traces
        * a list, tuple or 1-D array whose entries are states: one trace;
        * a list whose entries are traces (lists, tuples, arrays, Series), a
          2-D array (one trace per row) or a mapping name -> trace: several traces;
        * a Series: one trace, in index order;
        * a DataFrame: one trace per column (wide format), or with
          ``id_column`` one trace per id (long format).
        A string is one state and is never iterated; a tuple is read as a
        trace (put tuple-valued states inside a list of traces).
    id_column : str, optional
        Long format: the column naming each row's trace; traces keep the order
        of first appearance.
    value_column : str, optional
        The column of states (long format; default: the one column left besides
        the id and order columns).  Without ``id_column``: one trace, this column.
    order_column : str, optional
        Rows are sorted by it (within each trace); default: row order.  Rows are
        consecutive steps: mark a missing step with a row whose state is missing.

    Returns
    -------
    Traces
        The traces as state indices, with the state names in their order.

    Raises
    ------
    PriorError
        One sentence: a bare string, a set, a list mixing traces and states, a
        column that does not exist, or column options without a DataFrame.

    Examples
    --------
    >>> read_traces(["up", "down", None, "up"]).runs
    [['up', 'down'], ['up']]
    >>> import pandas as pd
    >>> long = pd.DataFrame({"id": [1, 1, 2, 2], "t": [2, 1, 1, 2], "s": ["b", "a", "c", "c"]})
    >>> read_traces(long, id_column="id", order_column="t").traces
    (('a', 'b'), ('c', 'c'))
    """
    kind = pandas_type(data)
    if kind == "DataFrame":
        return _read_frame(data, id_column, value_column, order_column)
    if id_column is not None or value_column is not None or order_column is not None:
        raise PriorError("id_column, value_column and order_column name columns of a pandas DataFrame; "
                         f"the data is a {type(data).__name__}.")
    if kind == "Series":
        return Traces((_values(data),), f"a pandas Series of {len(data)} entries")
    if isinstance(data, (str, bytes)):
        raise PriorError(_STRING)
    if isinstance(data, np.ndarray):
        return _read_array(data)
    if isinstance(data, (set, frozenset)):
        raise PriorError("A set has no order: give the states as a sequence in time order.")
    if isinstance(data, Mapping):
        return Traces(tuple(_trace(t, repr(k)) for k, t in data.items()), f"a mapping of {len(data)} trace(s)")
    if not isinstance(data, Iterable):
        raise PriorError(f"Give a sequence of states or a list of traces; got a {type(data).__name__}.")
    items = list(data)
    nested = [_is_trace(v) for v in items]
    if items and all(nested):
        return Traces(tuple(_trace(t, f"trace {j}") for j, t in enumerate(items, start=1)),
                      f"{len(items)} trace(s)")
    if any(nested):
        raise PriorError("The data mixes traces (lists, tuples, arrays, Series) and single states: "
                         "give one trace of states, or a list of traces.")
    return Traces((_values(items),), f"one trace of {len(items)} entries")


def _is_trace(v) -> bool:
    return isinstance(v, (list, tuple, np.ndarray)) or pandas_type(v) == "Series"


def _trace(t, where: str) -> tuple:
    if isinstance(t, (str, bytes)):
        raise PriorError(f"{where[0].upper()}{where[1:]} is a string. " + _STRING)
    if isinstance(t, np.ndarray) and t.ndim != 1:
        raise PriorError(f"{where[0].upper()}{where[1:]} is a {t.ndim}-D array; a trace is one-dimensional.")
    return _values(t)


def _read_array(a: np.ndarray) -> Traces:
    if a.ndim == 1:
        return Traces((_values(a),), f"a numpy array of {a.size} entries")
    if a.ndim == 2:
        return Traces(tuple(_values(row) for row in a), f"a {a.shape[0]} x {a.shape[1]} array (one trace per row)")
    raise PriorError(f"A numpy array of traces has 1 or 2 dimensions (one trace per row); got {a.ndim}.")


def _values(seq) -> tuple:
    """A trace as a tuple of Python values: gaps None, numpy scalars unwrapped, integral floats ints."""
    if pandas_type(seq) == "Series":
        seq = seq.to_numpy() if seq.dtype.kind in "iubf" else seq.to_numpy(dtype=object)
    if isinstance(seq, np.ndarray) and seq.dtype.kind in "iub":  # no gaps: the values as they are, fast
        return tuple(seq.tolist())
    if isinstance(seq, np.ndarray) and seq.dtype.kind == "f":
        return tuple(None if v != v else int(v) if v.is_integer() else v for v in seq.tolist())
    out: list = []
    for v in seq:
        if is_missing(v):
            out.append(None)
            continue
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        out.append(v)
    return tuple(out)


def _read_frame(df, id_column, value_column, order_column) -> Traces:
    for role, col in (("id_column", id_column), ("value_column", value_column), ("order_column", order_column)):
        if col is not None and col not in df.columns:
            raise PriorError(f"The {role} {col!r} is not a column of the data frame; columns: {list(df.columns)}.")
    first_seen = df
    if order_column is not None:
        df = df.sort_values(order_column, kind="mergesort")
    if id_column is None and value_column is None:
        cols = [c for c in df.columns if c != order_column]
        return Traces(tuple(_values(df[c]) for c in cols),
                      f"a data frame of {len(df)} rows, one trace per column ({len(cols)})")
    if id_column is None:
        return Traces((_values(df[value_column]),), f"column {value_column!r} of a data frame of {len(df)} rows")
    if value_column is None:
        rest = [c for c in df.columns if c not in (id_column, order_column)]
        if len(rest) != 1:
            raise PriorError(f"The long-format data frame has the columns {rest} besides the id and order columns: "
                             "name the column of states with value_column=.")
        value_column = rest[0]
    if df[id_column].isna().any():
        raise PriorError(f"The id column {id_column!r} has missing values: every row needs the id of its trace.")
    groups = dict(tuple(df.groupby(id_column, sort=False)[value_column]))
    ids = first_seen[id_column].drop_duplicates()
    return Traces(tuple(_values(groups[i]) for i in ids),
                  f"a long data frame of {len(df)} rows, one trace per {id_column!r} ({len(ids)})")


def load_real_series() -> tuple:
    """(values, description) of a real series shipped inside an installed wheel."""
    try:
        from pmdarima.datasets import load_taylor

        return np.asarray(load_taylor(), dtype=float), "pmdarima Taylor electricity demand (half-hourly)"
    except ImportError:
        import statsmodels.api as sm

        d = sm.datasets.elnino.load_pandas().data
        return d.drop(columns="YEAR").to_numpy(float).ravel(), "statsmodels El Nino sea-surface temperatures (monthly)"


def discretise(x, k: int) -> np.ndarray:
    """States 0..k-1 from k equal-width bins over [min(x), max(x)]; NaN entries stay NaN (gaps).

    Without NaN the result is an int array; with NaN it is a float array whose
    other entries are integral, which :func:`puffgm.fit_chain` reads as the
    states 0..k-1 with gaps.

    Examples
    --------
    >>> discretise([0.0, 0.4, 1.0, float("nan")], 2)
    array([ 0.,  0.,  1., nan])
    """
    k = check_positive_int(k, "k", "discretise")
    x = np.asarray(x, dtype=float)
    gaps = np.isnan(x)
    if gaps.all():
        raise PriorError("Every entry to discretise is NaN.")
    edges = np.linspace(np.nanmin(x), np.nanmax(x), k + 1)
    states = np.clip(np.digitize(np.where(gaps, edges[0], x), edges[1:-1]), 0, k - 1)
    return np.where(gaps, np.nan, states) if gaps.any() else states
