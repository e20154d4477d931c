r"""Many units: panels of traces and tables of respondents, released as one aggregate or one release per unit.

A data scientist's data set is a collection of units :math:`u = 1, \dots, N`: many people's activity traces
(a Markov chain each), many respondents' answers (a record of a Bayesian network each).
Under a prior class :math:`\Theta` (one class for every unit), when the units are **independent under
every prior** :math:`\theta \in \Theta`, and the secrets are :math:`X_{u,i} = a` vs :math:`X_{u,i} = b` for every
unit, position or node :math:`i` and pair of states:

* **Aggregate by post-processing.**  For :math:`F = \sum_u F_u`, the release :math:`F + Z` is, for a secret of
  unit :math:`u`, the release :math:`F_u + Z` plus :math:`\sum_{v \ne u} F_v`, which is independent of :math:`X_u`
  under :math:`\theta`.  So noise :math:`Z` calibrated for one unit's statistic :math:`F_u` under the unit's class
  (the Markov Quilt Mechanism: :math:`\sigma_{\max}` of the unit's class times the statistic's Lipschitz constant, Song,
  Wang and Chaudhuri, "Pufferfish Privacy Mechanisms for Correlated Data", SIGMOD 2017,
  arXiv:1603.03977, Theorem 4.3; the Wasserstein mechanism and the optimal Laplace scale,
  their section 3, from the unit's exact laws; a workload, from the unit's joint laws) makes
  the whole aggregate :math:`\epsilon`-Pufferfish private.  The noise does not grow with :math:`N`.
* **Parallel composition by independence.**  Releases :math:`M_u(X_u)`, each :math:`\epsilon`-private for unit
  :math:`u`'s secrets, are together :math:`\epsilon`-private: for a secret of unit :math:`u` every other release is
  independent of :math:`X_u`.  Per-unit releases cost the budget once.

Units are independent only under the prior: when they are not (a household, a contact
network), model them jointly as one network.

Units of different lengths (chains): the calibration the caller gives was made for the class
at one length :math:`T`.  Each distinct length :math:`T' \le T` present is calibrated once (the same class,
query, method and options at length :math:`T'`, :mod:`puffgm.api.recipes`); a unit longer than :math:`T` is
refused.  The aggregate's Laplace scale is, per statistic, the largest over the lengths
present: :math:`\mathrm{Lap}(b_2)` is :math:`\mathrm{Lap}(b_1)` plus independent noise for :math:`b_2 \ge b_1`, so
the larger scale is post-processing of each length's valid release.  Per-unit releases use their own length's noise.

Data in (:func:`read_units`): chains from a long data frame (a unit column, an optional time
column ordering the rows, a state column), a wide frame (one row per unit), a list, dict or
2-D array of traces; networks from a frame with one row per unit and one column per node
(optionally a unit column) or a list or dict of records.  The parsing is
:func:`puffgm.chains.data.read_traces` (traces) and :class:`puffgm.core.records.RecordLayout`
(states and records).  A unit's trace runs from its first to its last observation; a gap
inside it is refused, or with ``gaps="split"`` splits the trace into independent units
(Song et al. section 5.3), and the release says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from puffgm.api.recipes import Recipe, recipe_of
from puffgm.chains.data import read_traces
from puffgm.core.frames import pandas_type
from puffgm.core.noise import check_resolves, resolve_noise
from puffgm.core.query import BoundQuery, load_query
from puffgm.core.records import RecordLayout, read_state
from puffgm.core.release import jsonable, make_release, quilt_set_key
from puffgm.core.results import CalibrationResult
from puffgm.core.workload import BoundWorkload, is_workload_spec, load_workload
from puffgm.exceptions import ParameterError
from puffgm.mechanisms.optimal_noise import sample_noise
from puffgm.mechanisms.panel import INDEPENDENCE, THEOREM_PANEL, PanelRelease, panel_record_type
from puffgm.mechanisms.workload import WorkloadCalibration

__all__ = ["Units", "read_units", "release_units", "panel_summary", "comparison_text", "GAPS"]

#: What a gap inside a trace does: refuse the data, or split the trace into independent units.
GAPS = ("refuse", "split")


# ------------------------------------------------------------------ data in
@dataclass(frozen=True)
class Units:
    """The units of a panel, read and checked against the class of one unit (immutable).

    Attributes
    ----------
    ids : tuple of str
        One id per unit (a split trace's parts are ``ID#1``, ``ID#2``, ...).
    data : tuple
        Per unit: a tuple of state names in time order (a trace) or a dict node -> state name (a record).
    trace : bool
    source : str
        What the units were read from.
    notes : tuple of str
        What reading did (gaps split).
    """

    ids: tuple
    data: tuple
    trace: bool
    source: str
    notes: tuple = ()

    @property
    def lengths(self) -> tuple:
        """The length of each unit's trace (chains); the number of nodes of each record (networks)."""
        return tuple(len(d) for d in self.data)


def read_units(data, layout: RecordLayout, *, unit: Any = None, time: str | None = None,
               state: str | None = None, gaps: str = "refuse") -> Units:
    """The units of ``data`` for a class whose one database ``layout`` describes.

    Parameters
    ----------
    data : pandas DataFrame, mapping, list or 2-D array
        Chains (``layout.trace``): a long frame (``unit`` names the unit column; ``time``
        orders the rows; ``state`` is the column of states, default the one column left), a
        wide frame (one row per unit, ids from its index, or from the ``unit`` column),
        a mapping id -> trace, a list of traces or a 2-D array (one trace per row).
        Networks: a frame with one row per unit and one column per node (``unit`` names the
        id column; default the index), a mapping id -> record or a list of records.
    layout : RecordLayout
        One unit's database: its nodes and states.
    unit : str or True
        The unit column of a frame, or True for data that is units already.
    time, state : str, optional
        Long frames of traces: the column ordering each unit's rows, and the column of states.
    gaps : {"refuse", "split"}
        A missing state inside a trace: refused (default), or the trace is split into
        independent units at each gap.

    Returns
    -------
    Units
        The units' ids, their traces or records on the prior's layout, their lengths and notes.

    Raises
    ------
    ParameterError
        One sentence: an unknown column, a unit with an unknown state or node, a gap (unless
        split), a unit with no observation, or no unit at all.
    """
    if gaps not in GAPS:
        raise ParameterError(f"gaps= is 'refuse' or 'split'; got {gaps!r}.")
    if layout.trace:
        ids, traces, source = _raw_traces(data, unit, time, state)
        ids, traces, notes = _gapless(ids, traces, gaps)
        states = layout.states[0]
        cache: dict = {}
        out = tuple(tuple(_name(v, states, cache, u) for v in t) for u, t in zip(ids, traces, strict=True))
        units = Units(ids, out, True, source, notes)
    else:
        if gaps != "refuse":
            raise ParameterError("gaps='split' splits traces of a Markov chain; a record of a network with a missing "
                                 "answer cannot be split, so give every node's state.")
        if time is not None or state is not None:
            raise ParameterError("time= and state= name columns of a long frame of traces; a network's units are "
                                 "records, one row per unit and one column per node.")
        ids, records, source = _raw_records(data, unit)
        units = Units(ids, tuple(_record(layout, u, r) for u, r in zip(ids, records, strict=True)), False, source)
    if not units.ids:
        raise ParameterError("The data holds no unit: give at least one trace or record.")
    return units


def _columns(df, **named) -> None:
    for role, col in named.items():
        if col is not None and col not in df.columns:
            raise ParameterError(f"The {role} column {col!r} is not a column of the data; its columns are "
                                 f"{[str(c) for c in df.columns]}.")


def _raw_traces(data, unit, time_col, state) -> tuple:
    """(ids, traces with None for a gap, source) from any form of traces."""
    if pandas_type(data) == "DataFrame":
        col = None if unit is True else unit
        _columns(data, unit=col, time=time_col, state=state)
        rest = [c for c in data.columns if c not in (col, time_col)]
        long = col is not None and (time_col is not None or state is not None or len(rest) == 1)
        if long:
            if data[col].isna().any():
                raise ParameterError(f"The unit column {col!r} has missing values: every row needs its unit.")
            t = read_traces(data, id_column=col, value_column=state, order_column=time_col)
            return tuple(str(i) for i in data[col].drop_duplicates()), t.traces, t.source
        if time_col is not None or state is not None:
            raise ParameterError("time= and state= name columns of a long frame; give unit= too.")
        wide = data.set_index(col) if col is not None else data
        t = read_traces(wide.T)  # one trace per row of the wide frame
        return tuple(str(i) for i in wide.index), t.traces, f"a wide data frame of {len(wide)} units (one per row)"
    if unit is not True and unit is not None:
        raise ParameterError(f"unit={unit!r} names a column of a pandas DataFrame; the data is a "
                             f"{type(data).__name__} (give unit=True for a list or dict of traces).")
    if isinstance(data, Mapping):
        t = read_traces(data)
        return tuple(str(k) for k in data), t.traces, t.source
    if isinstance(data, np.ndarray) and data.ndim != 2:
        raise ParameterError("An array of units has one trace per row (2-D).")
    items = list(data) if isinstance(data, (list, tuple, np.ndarray)) else None
    if items is None or not all(isinstance(v, (list, tuple, np.ndarray)) or pandas_type(v) == "Series"
                                for v in items):
        raise ParameterError("Units of a Markov chain are a data frame (long or wide), a dict of traces or a list of "
                             "traces; a flat list of states is one trace (release it without unit=).")
    traces = read_traces(items).traces if items else ()
    return tuple(str(j) for j in range(1, len(items) + 1)), traces, f"{len(items)} trace(s)"


def _gapless(ids, traces, gaps) -> tuple:
    """Traces trimmed to their first..last observation, with inner gaps refused or split into units."""
    out_ids, out, notes = [], [], []
    for u, tr in zip(ids, traces, strict=True):
        seen = [i for i, v in enumerate(tr) if v is not None]
        if not seen:
            raise ParameterError(f"Unit {u!r} has no observation (an empty unit); drop it or give its states.")
        tr = tr[seen[0]: seen[-1] + 1]
        if None not in tr:
            out_ids.append(u)
            out.append(tr)
            continue
        if gaps == "refuse":
            raise ParameterError(f"Unit {u!r} has a gap (a missing state at time {tr.index(None) + seen[0] + 1}); "
                                 "give every state, or split traces at gaps into independent units with "
                                 "gaps='split' (--gaps split).")
        runs = _runs(tr)
        out_ids.extend(f"{u}#{j}" for j in range(1, len(runs) + 1))
        out.extend(runs)
        notes.append(f"unit {u!r} split at gaps into {len(runs)} independent units")
    if notes:
        notes = [f"gaps split {len(notes)} trace(s) into independent units (the prior's independence then "
                 "treats the parts of one trace as independent units)", *notes[:5]]
    return tuple(out_ids), tuple(out), tuple(notes)


def _runs(tr) -> list:
    runs: list = []
    cur: list = []
    for v in tr:
        if v is None:
            if cur:
                runs.append(tuple(cur))
            cur = []
        else:
            cur.append(v)
    if cur:
        runs.append(tuple(cur))
    return runs


def _name(v, states: tuple, cache: dict, u) -> str:
    key = (type(v), v)
    if key not in cache:
        try:
            cache[key] = read_state("X", states, v)
        except ParameterError:
            raise ParameterError(f"Unit {u!r} has the state {v!r}, which is no state of the chain; its states are "
                                 f"{list(states)}.") from None
    return cache[key]


def _raw_records(data, unit) -> tuple:
    if pandas_type(data) == "DataFrame":
        col = None if unit is True else unit
        _columns(data, unit=col)
        frame = data.set_index(col) if col is not None else data
        rows = [dict(zip(map(str, frame.columns), r, strict=True)) for r in frame.to_numpy(dtype=object)]
        return tuple(str(i) for i in frame.index), rows, f"a data frame of {len(frame)} records (one per row)"
    if unit is not True and unit is not None:
        raise ParameterError(f"unit={unit!r} names a column of a pandas DataFrame; the data is a "
                             f"{type(data).__name__} (give unit=True for a list or dict of records).")
    if isinstance(data, Mapping) and all(isinstance(r, Mapping) for r in data.values()):
        return tuple(str(k) for k in data), list(data.values()), f"a mapping of {len(data)} records"
    if isinstance(data, (list, tuple)) and all(isinstance(r, Mapping) for r in data):
        return tuple(str(j) for j in range(1, len(data) + 1)), list(data), f"{len(data)} records"
    raise ParameterError("Units of a network are records: a data frame (one row per unit, one column per node), a "
                         "dict id -> record or a list of records (mappings node -> state).")


def _record(layout: RecordLayout, u, rec) -> dict:
    try:
        out = layout.read(rec)
    except ParameterError as exc:
        raise ParameterError(f"Unit {u!r}: {exc}") from None
    missing = [n for n in layout.nodes if n not in out]
    if missing:
        raise ParameterError(f"Unit {u!r} gives no state for node {missing[0]!r}; a record needs every node.")
    return out


# ------------------------------------------------------------------ the plan of one length
@dataclass(frozen=True)
class _Length:
    """What the release needs of one unit length: the statistics, the noise, the baselines."""

    length: int
    calibration: Any
    layout: RecordLayout
    queries: tuple          # BoundQuery per statistic
    names: tuple | None     # the statistics' names (None: one query)
    scales: tuple | None    # Laplace scale per statistic (None: the optimal noise law)
    law: Any                # OptimalNoise, for method "optimal-noise"
    baselines: dict         # name -> scale per statistic (or expected |error|), the side by side
    quilt_key: str | None


def _bind(spec, layout: RecordLayout) -> tuple:
    """(bound queries, names or None) of a query or workload spec on one unit's nodes and states."""
    states = dict(zip(layout.nodes, layout.states, strict=True))
    if is_workload_spec(spec):
        bw = load_workload(spec).bind(layout.nodes, states)
        return bw.queries, bw.names, bw
    q = load_query(spec).bind(layout.nodes, states)
    return (q,), None, BoundWorkload(queries=(q,), names=("value",), source=spec)


def _user_level(bw: BoundWorkload) -> float:
    """The table's L1 range over one unit's whole data: sum over its nodes of the largest L1 change one node causes."""
    return float(sum(bw.node_l1().values()))


def _plan(cal, length: int, query, method: str) -> _Length:
    """The release plan of units of ``length`` from ``cal`` (a calibration at that length)."""
    bw: Any
    if isinstance(cal, CalibrationResult):
        layout = _mqm_layout(recipe_of(cal))
        queries, names, bw = _bind(query, layout)
        lip = bw.lipschitz
        k = len(queries)
        if not cal.applicable or not math.isfinite(cal.sigma_max):
            raise ParameterError(f"The Markov Quilt Mechanism does not apply at unit length {length}, so nothing was "
                                 "released.")
        scale = cal.sigma_max * lip
        base = {"user_level_dp": (_user_level(bw) / cal.epsilon,) * k, "group_dp": (cal.groupdp_sigma * lip,) * k,
                "mqm": (scale,) * k, "query_specific": None}
        return _Length(length, cal, layout, queries, names, (scale,) * k, None, base, quilt_set_key(cal))
    layout = cal.layout
    if cal.bound is None or layout is None:
        raise ParameterError(f"This {type(cal).__name__} does not carry its bound query (it was not made by "
                             "puffgm.calibrate_query or puffgm.calibrate_workload), so the units' statistics cannot "
                             "be computed.")
    if isinstance(cal, WorkloadCalibration):
        bw = cal.bound
        k = cal.k
        base = {"user_level_dp": (_user_level(bw) / cal.epsilon,) * k, "group_dp": (cal.group_dp_scale,) * k,
                "mqm": None if cal.mqm_scale is None else (cal.mqm_scale,) * k, "query_specific": tuple(cal.scales)}
        return _Length(length, cal, layout, tuple(bw.queries), tuple(cal.names), tuple(cal.scales), None, base, None)
    q = cal.bound
    bw = BoundWorkload(queries=(q,), names=("value",), source=q.source)
    qs = cal.optimal_noise.expected_abs_error if cal.method == "optimal-noise" else cal.scale
    base = {"user_level_dp": (_user_level(bw) / cal.epsilon,), "group_dp": (cal.group_dp_scale,),
            "mqm": None if cal.mqm_scale is None else (cal.mqm_scale,), "query_specific": (qs,)}
    if cal.method == "optimal-noise":
        return _Length(length, cal, layout, (q,), None, None, cal.optimal_noise, base, None)
    if not (cal.scale is not None and math.isfinite(cal.scale) and cal.scale > 0):
        raise ParameterError(f"The calibration at unit length {length} has no finite Laplace scale > 0 "
                             f"({cal.scale!r}), so nothing was released.")
    return _Length(length, cal, layout, (q,), None, (cal.scale,), None, base, None)


def _mqm_layout(recipe: Recipe | None) -> RecordLayout:
    from puffgm.api.query import record_layout
    from puffgm.chains.kind import MarkovChainKind

    if recipe is None:
        raise ParameterError("A Markov Quilt Mechanism calibration released on units needs the prior class it was "
                             "made for: calibrate it with puffgm.calibrate in this process (a copied or unpickled "
                             "calibration does not carry it).")
    kind = recipe.kind
    if isinstance(kind, MarkovChainKind):
        cc = kind.prior_class
        return RecordLayout(nodes=cc.nodes, states=(tuple(cc.states),) * cc.length, trace=True)
    return record_layout(kind)


def _own_length(cal) -> int | None:
    """The chain length a calibration was made for (None for a network)."""
    if isinstance(cal, CalibrationResult):
        layout = _mqm_layout(recipe_of(cal))
    else:
        layout = cal.layout
    if layout is None:
        name = type(cal).__name__
        raise ParameterError(f"This {name} does not carry its bound query (it was not made by puffgm), so the units' "
                             "statistics cannot be computed.")
    return len(layout.nodes) if layout.trace else None


def _plans(cal, lengths: set, query, method: str) -> dict:
    """One plan per distinct unit length: the given calibration at its own length, each other length calibrated once."""
    own = _own_length(cal)
    if own is None:
        return {None: _plan(cal, 0, query, method)}
    longest = max(lengths)
    if longest > own:
        raise ParameterError(f"A unit has length {longest}, longer than the class's T = {own}: calibrate the class "
                             f"at the longest unit's length (T = {longest}); shorter units are calibrated at theirs.")
    recipe = recipe_of(cal)
    out = {}
    for T in sorted(lengths):
        if T == own:
            out[T] = _plan(cal, T, query, method)
            continue
        if recipe is None:
            raise ParameterError(f"Units have length {T}, not the calibration's T = {own}, and this calibration does "
                                 "not carry how it was made (copied or unpickled): calibrate it again with puffgm in "
                                 "this process, or give units of length T only.")
        other = recipe.at_length(T)
        out[T] = _plan(other, T, query, method)
    return out


# ------------------------------------------------------------------ statistics
def _values(units: Units, plans: dict) -> np.ndarray:
    """The exact statistics of every unit, shape (N, k), in query units."""
    k = len(next(iter(plans.values())).queries)
    out = np.empty((len(units.ids), k))
    if not units.trace:
        plan = plans[None]
        for j, rec in enumerate(units.data):
            out[j] = [q.evaluate(rec) for q in plan.queries]
        return out
    lengths = np.array(units.lengths)
    for T, plan in plans.items():
        rows = np.flatnonzero(lengths == T)
        states = plan.layout.states[0]
        where = {s: i for i, s in enumerate(states)}
        idx = np.array([[where[s] for s in units.data[r]] for r in rows], dtype=np.int64).reshape(len(rows), T)
        for j, q in enumerate(plan.queries):
            out[rows, j] = _chain_sums(q, plan.layout, idx)
    return out


def _chain_sums(q: BoundQuery, layout: RecordLayout, idx: np.ndarray) -> np.ndarray:
    """F on each trace (rows of state indices) by one score table: (offset + sum_t s_t(x_t)) / unit."""
    T = idx.shape[1]
    table = np.zeros((T, len(layout.states[0])), dtype=np.int64)
    pos = {n: t for t, n in enumerate(layout.nodes)}
    for n, sc, st in zip(q.nodes, q.scores, q.states, strict=True):
        order = [st.index(s) for s in layout.states[pos[n]]]
        table[pos[n]] = np.asarray(sc, dtype=np.int64)[order]
    grid = table[np.arange(T)[None, :], idx].sum(axis=1)
    return (q.offset + grid) / q.unit


def _entries(units: Units, plans: dict) -> np.ndarray:
    """Each unit's public number of entries: the nodes (positions) its statistics read."""
    if not units.trace:
        plan = plans[None]
        return np.full(len(units.ids), len({n for q in plan.queries for n in q.nodes}), dtype=float)
    return np.array(units.lengths, dtype=float)


# ------------------------------------------------------------------ release
def _method(cal) -> str:
    if isinstance(cal, CalibrationResult):
        return "mqm"
    if isinstance(cal, WorkloadCalibration):
        return "workload"
    return str(cal.method)


def _mechanism(method: str) -> str:
    return {"mqm": "Markov Quilt Mechanism per unit (sigma_max x the statistic's Lipschitz constant)",
            "wasserstein": "Wasserstein Mechanism per unit (Song, Wang and Chaudhuri, Algorithm 1)",
            "optimal-laplace": "Laplace mechanism at the unit's optimal query-specific scale",
            "optimal-noise": "optimal additive noise for the unit's query (linear program, exact audit)",
            "workload": "Laplace mechanism on the unit's table at the joint optimal scales"}[method]


def _max_rows(rows: list) -> tuple | None:
    """The coordinatewise max of per-length tuples (None if any length lacks it)."""
    if not rows or any(r is None for r in rows):
        return None
    return tuple(float(max(c)) for c in zip(*rows, strict=True))


def _comparison(plans: dict, names, divide: float) -> dict:
    """The aggregate's expected absolute error per statistic and in total, beside each other."""
    out: dict = {}
    for key in ("user_level_dp", "group_dp", "mqm", "query_specific"):
        row = _max_rows([p.baselines[key] for p in plans.values()])
        if row is None:
            out[key] = None
            continue
        per = [v / divide for v in row]
        out[key] = {"per_statistic": dict(zip(names or ("value",), per, strict=True)), "total": float(sum(per))}
    return out


def release_units(calibration, data, *, accountant=None, random_state=None, label: str | None = None,
                  **options: Any) -> PanelRelease:
    r"""Release a panel's aggregate statistic, or one statistic per unit, under one charge.

    :func:`puffgm.release` calls this when given ``unit=``, ``each=`` or ``relative=``.  The
    guarantee: :math:`\epsilon`-Pufferfish privacy for every secret of every unit, given the prior;
    units are independent only under the prior (model correlated units jointly).

    Parameters
    ----------
    calibration : QueryCalibration, WorkloadCalibration or CalibrationResult
        Made for ONE unit's class (a chain of length :math:`T`: units of length :math:`T' \le T` are
        calibrated at :math:`T'` once per length).  A CalibrationResult (the Markov Quilt Mechanism) takes
        ``query=`` (a sum query or a workload), released with scale :math:`\sigma_{\max}` times its Lipschitz
        constant.
    data : the units (:func:`read_units`)
    accountant, random_state, label
        As :func:`puffgm.release`.
    **options
        ``unit``, ``time``, ``state``, ``gaps`` (:func:`read_units`; ``unit`` default True), and:

        * ``each`` (bool):
          One release per unit (parallel composition) instead of the aggregate.
        * ``relative`` (bool):
          Divide by the public total number of entries (per unit for ``each``): relative frequencies.
        * ``query`` (dict or JSON, optional):
          For a Markov Quilt Mechanism calibration only.

    Returns
    -------
    PanelRelease
        The aggregate (or the per-unit values, ``each``) under one charge, with its side by side.
    """
    read: dict[str, Any] = {k: options.pop(k) for k in ("unit", "time", "state", "gaps") if k in options}
    each, relative, query = options.pop("each", False), options.pop("relative", False), options.pop("query", None)
    if options:
        raise ParameterError(f"A release on units takes no option {sorted(options)[0]!r}.")
    method = _method(calibration)
    if method == "mqm":
        if query is None:
            raise ParameterError("A Markov Quilt Mechanism calibration covers any L-Lipschitz query, so a release on "
                                 "units needs the query whose sum over units to release: give query= (a sum query or "
                                 "a workload).")
    elif query is not None:
        raise ParameterError("query= is for a Markov Quilt Mechanism calibration; a query-specific calibration "
                             "carries its own query.")
    layout = _mqm_layout(recipe_of(calibration)) if method == "mqm" else calibration.layout
    if layout is None:
        _own_length(calibration)  # raises the one-sentence refusal
    units = read_units(data, layout, **({"unit": True} | read))
    lengths = set(units.lengths) if units.trace else {0}
    plans = _plans(calibration, lengths, query, method)
    if method == "optimal-noise" and not each and len(plans) > 1:
        raise ParameterError(f"The optimal noise law is optimal for one unit length, and these units have lengths "
                             f"{sorted(plans)}: release the aggregate with optimal-laplace (its scale is the largest "
                             "over the lengths), give units of one length, or release each unit (each=True).")
    values = _values(units, plans)
    entries = _entries(units, plans)
    return _release(calibration, units, plans, values, entries,
                    _Options(each, relative, method, accountant, random_state, label))


@dataclass(frozen=True)
class _Options:
    each: bool
    relative: bool
    method: str
    accountant: Any
    random_state: Any
    label: str | None


def _release(cal, units: Units, plans: dict, values: np.ndarray, entries: np.ndarray, opt: _Options) -> PanelRelease:
    first = next(iter(plans.values()))
    names = first.names
    k = values.shape[1]
    total = float(entries.sum())
    agg_scales = _max_rows([p.scales for p in plans.values()])
    keys = sorted({p.quilt_key for p in plans.values() if p.quilt_key})
    lengths = {} if not units.trace else {int(T): int(c) for T, c in zip(*np.unique(units.lengths,
                                                                                      return_counts=True),
                                                                         strict=True)}
    divide = total if opt.relative else 1.0
    by_length = _scales_by_length(plans, float(entries[0]), opt)
    details = {
        "lengths": lengths, "entries": total, "relative": opt.relative, "scales_by_length": by_length,
        "comparison": _comparison(plans, names, divide), "notes": list(units.notes), "independence": INDEPENDENCE,
        "source": units.source, "quilt_key": keys[0] if len(keys) == 1 else ("+".join(keys) or None),
        "calibrations": len(plans), "label": opt.label}
    noise = resolve_noise(opt.random_state)
    if opt.each:  # the largest per-unit scale (each unit's own is in scales_by_length)
        scales = _max_rows(list(by_length.values()))
    else:
        scales = None if agg_scales is None else tuple(s / divide for s in agg_scales)
    laws = () if opt.method != "optimal-noise" else tuple(
        (p.law, divide if not opt.each else _per_unit_entries(T, float(entries[0]), opt)) for T, p in plans.items())
    cls = panel_record_type(opt.method)
    planned = cls(noise_laws=laws, value=None, names=names, units=units.ids, each=opt.each, epsilon=cal.epsilon,
                  method=opt.method,
                  mechanism=_mechanism(opt.method) + (f" [{cal.method}]" if opt.method == "mqm" else ""),
                  theorem=f"{THEOREM_PANEL}; per unit: {_theorem(first)}",
                  prior_class=_prior_name(first), scales=scales, secure=noise.secure, noise=noise.description,
                  details=details)
    if opt.each:
        draw = _each_draw(units, plans, values, entries, opt.relative, noise, k)
    else:
        draw = _aggregate_draw(values.sum(axis=0), first, agg_scales, divide, noise, k)
    return make_release(planned, draw, accountant=opt.accountant, label=opt.label)


def _per_unit_entries(T, record_entries: float, opt: _Options) -> float:
    """What one unit's values are divided by in a per-unit release: its entries when relative, else 1."""
    return (record_entries if T is None else T) if opt.relative and opt.each else 1.0


def _scales_by_length(plans: dict, record_entries: float, opt: _Options) -> dict:
    """Each length's Laplace scales (``"record"`` for a network's units), per unit's entries when relative and each."""
    out = {}
    for T, p in plans.items():
        per = _per_unit_entries(T, record_entries, opt)
        out["record" if T is None else str(T)] = None if p.scales is None else [s / per for s in p.scales]
    return out


def _theorem(plan: _Length) -> str:
    return str(getattr(plan.calibration, "theorem", ""))


def _prior_name(plan: _Length) -> str:
    cal = plan.calibration
    return str(getattr(cal, "prior", "") or getattr(cal, "fingerprint", ""))


def _shape(vec, k: int):
    return float(vec[0]) if k == 1 else tuple(float(v) for v in vec)


def _aggregate_draw(sums: np.ndarray, plan: _Length, scales, divide: float, noise, k: int):
    if scales is None:  # optimal noise: one length
        law = plan.law
        grid = sums[0] * law.unit
        if abs(grid - round(grid)) > 1e-9 * max(1.0, abs(grid)):
            raise ParameterError("The aggregate is not a value on the query's grid, so the optimal noise law does not "
                                 "apply to it.")
        return lambda: (round(grid) + sample_noise(law.law, noise.randbelow)) / law.unit / divide
    for v, s in zip(sums, scales, strict=True):
        check_resolves(v, s)
    return lambda: _shape(np.array([float(noise.laplace(v, s)) for v, s in zip(sums, scales, strict=True)]) / divide,
                          k)


def _each_draw(units: Units, plans: dict, values: np.ndarray, entries: np.ndarray, relative: bool, noise, k: int):
    lengths = np.array(units.lengths) if units.trace else np.zeros(len(units.ids), dtype=int)
    groups = []
    for T, plan in plans.items():
        rows = np.flatnonzero(lengths == (T if T is not None else 0))
        if plan.scales is not None:
            for j, s in enumerate(plan.scales):
                check_resolves(values[rows, j], s)
        groups.append((rows, plan))

    def draw():
        out = np.empty_like(values)
        for rows, plan in groups:
            if plan.scales is None:
                law = plan.law
                out[rows, 0] = [(round(v * law.unit) + sample_noise(law.law, noise.randbelow)) / law.unit
                                for v in values[rows, 0]]
                continue
            for j, s in enumerate(plan.scales):
                out[rows, j] = np.asarray(noise.laplace(values[rows, j], s), dtype=float).reshape(-1)
        if relative:
            out = out / entries[:, None]
        return tuple(_shape(r, k) for r in out)

    return draw


def panel_summary(rel: PanelRelease) -> dict:
    """JSON-ready: ``units`` (how many), ``value``/``values`` or ``releases``, ``scale``/``scales``, the comparison."""
    d = rel.details
    out: dict = {"units": len(rel.units), "each": rel.each, "method": rel.method, "epsilon": rel.epsilon}
    if rel.each:
        out["releases"] = rel.releases
    elif rel.names is None:
        out["value"] = rel.value
    else:
        out["values"] = rel.as_dict()
    if rel.scales is not None:
        if rel.names is None:
            out["scale"] = rel.scales[0]
        else:
            out["scales"] = dict(zip(rel.names, rel.scales, strict=True))
    out |= {"relative": d["relative"], "entries": d["entries"], "lengths": d["lengths"],
            "scales_by_length": d["scales_by_length"], "comparison": d["comparison"], "notes": d["notes"],
            "independence": d["independence"]}
    return jsonable(out)


def comparison_text(rel: PanelRelease) -> str:
    """The aggregate's side by side as a small table: expected |error| per statistic and in total."""
    comp = rel.details["comparison"]
    names = list(rel.names or ("value",))
    head = f"{'mechanism (aggregate)':<32}" + "".join(f"{n[:12]:>13}" for n in names) + f"{'total':>13}"
    label = {"user_level_dp": "user-level DP (unit's L1 range)", "group_dp": "group DP",
             "mqm": "MQM per unit", "query_specific": "query-specific per unit"}
    lines = ["expected |error| of the aggregate (Laplace: E|noise| = scale)", head]
    for key, row in comp.items():
        cells = ["n/a"] * (len(names) + 1) if row is None else \
            [f"{row['per_statistic'][n]:.6g}" for n in names] + [f"{row['total']:.6g}"]
        lines.append(f"{label[key]:<32}" + "".join(f"{c:>13}" for c in cells))
    return "\n".join(lines)
