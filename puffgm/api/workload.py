r"""Calibration of a table of statistics (a workload) released together, for any prior kind with query laws.

One call computes the exact joint laws of the workload given each secret (one exact
inference of the encoded sum, :mod:`puffgm.core.workload`), the least Laplace scales
whose exact joint loss is at most :math:`\epsilon` (:mod:`puffgm.mechanisms.workload`), and the
alternatives side by side:

* group DP: the table's L1 sensitivity over a group of correlated nodes, :math:`/ \epsilon`, on
  every statistic;
* the Markov Quilt Mechanism: :math:`\sigma_{\max}` times the workload's L1 Lipschitz constant (the
  largest total score change one node causes across the queries), on every statistic
  (Song, Wang and Chaudhuri, "Pufferfish Privacy Mechanisms for Correlated Data",
  SIGMOD 2017, arXiv:1603.03977, Algorithm 2);
* each statistic's own optimal Laplace scale, calibrated alone: for reference only (not a
  valid release of the table);
* the joint release: :math:`\mathrm{Lap}(t\, w_j)` on statistic :math:`j` with the least such :math:`t`.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from puffgm.api.query import query_calibration, record_layout
from puffgm.core.progress import Stages, stages
from puffgm.core.validation import check_positive_finite, check_time_limit
from puffgm.core.workload import DEFAULT_MAX_JOINT_LENGTH, BoundWorkload, load_workload
from puffgm.exceptions import NotApplicableError, ParameterError
from puffgm.mechanisms.query import mqm_scale
from puffgm.mechanisms.workload import WorkloadCalibration, WorkloadLaws, optimal_weights, optimal_workload_scale

__all__ = ["workload_calibration", "workload_laws"]


def workload_calibration(kind, workload, *, epsilon, weights=None, time_limit=None, baselines: bool = True,
                         max_joint_length: int = DEFAULT_MAX_JOINT_LENGTH, **options) -> WorkloadCalibration:
    r"""Calibrate independent Laplace noise for a table of sum queries by their exact joint laws.

    Parameters
    ----------
    kind : PriorKind
        The prior class (:func:`puffgm.api.as_prior`): Bayesian networks and Markov-chain classes.
    workload : list of sum queries, dict, JSON text or JSON file path
        :func:`puffgm.core.workload.load_workload`; a single query is a workload of one.
    epsilon : float
        Pufferfish privacy parameter, finite and > 0.
    weights : sequence of float or "optimal", optional
        :math:`w_j > 0`: statistic :math:`j` gets :math:`\mathrm{Lap}(t\, w_j)` (default 1 each); ``"optimal"``
        searches the weights that
        lower the summed expected absolute error (:func:`puffgm.mechanisms.workload.optimal_weights`).
    time_limit : float, optional
        Seconds the computation may take (TimeLimitError beyond); None or 0: no limit.
    baselines : bool
        Also compute each statistic's own optimal scale and the MQM scale for the comparison.
    max_joint_length : int
        The largest joint law, in cells (:math:`\prod_j (n_j + 1)`), the calibration may build.
    **options
        ``progress`` (bool or None): a tqdm bar of the stages (joint laws, each statistic alone,
        weights, joint scale, MQM) on stderr, shown once the calibration has run for 2 seconds;
        None (default) shows it when stderr is a terminal, False never
        (:mod:`puffgm.core.progress`).  The rest are the kind's query options (``protected``,
        ``secrets``, ``max_table_entries`` for networks; ``max_exact_length`` for chains).

    Returns
    -------
    WorkloadCalibration
        One Laplace scale per statistic, with the exact joint loss and the alternatives beside them.

    Examples
    --------
    >>> from puffgm.api import as_prior
    >>> halves = [{"count": 0, "nodes": ["asia", "tub", "smoke", "lung"], "name": "first"},
    ...           {"count": 0, "nodes": ["bronc", "either", "xray", "dysp"], "name": "second"}]
    >>> cal = workload_calibration(as_prior("example:asia"), halves, epsilon=1.0)
    >>> cal.loss <= 1.0, len(cal.scales)
    (True, 2)
    """
    epsilon = check_positive_finite(epsilon, "epsilon", "puffgm.calibrate_workload")
    time_limit = check_time_limit(time_limit, "calibrate_workload")
    bound = _bind(kind, workload)
    search = isinstance(weights, str) and weights == "optimal"
    progress = options.pop("progress", None)
    n_stages = 1 + (bound.k if baselines or search else 0) + search + 1 + bool(baselines)
    with stages(progress, n_stages, f"calibrate {bound.k} statistics", unit="stage") as bar:
        bar.show("joint laws")
        ask = _Ask(epsilon, weights, time_limit, baselines, max_joint_length)
        return _workload_calibration(kind, bound, ask, bar, options)


class _Ask(NamedTuple):
    """What :func:`workload_calibration` was asked, checked."""

    epsilon: float
    weights: Any
    time_limit: float | None
    baselines: bool
    max_joint_length: int


def _workload_calibration(kind, bound: BoundWorkload, ask: _Ask, bar: Stages, options: dict) -> WorkloadCalibration:
    """The body of :func:`workload_calibration`, its arguments checked, advancing ``bar`` after each stage."""
    epsilon, weights, time_limit, baselines, max_joint_length = ask
    start = time.monotonic()
    deadline = None if time_limit is None else start + time_limit
    search = isinstance(weights, str) and weights == "optimal"
    w = [1.0] * bound.k if search else _weights(weights, bound.k)
    notes: list = []
    single: tuple | None = None
    if bound.k == 1 and (baselines or search):
        single = _single_scales(kind, bound, epsilon, deadline, options, bar)
        return _workload_of_one(kind, bound, epsilon, w, single, deadline, options, start)
    t0 = time.monotonic()  # the joint laws first: a table past a limit is refused before any single-query work
    laws = workload_laws(kind, bound, deadline=deadline, max_joint_length=max_joint_length, **options)
    seconds = {"laws": round(time.monotonic() - t0, 6)}
    bar.advance()
    t0 = time.monotonic()
    single = _single_scales(kind, bound, epsilon, deadline, options, bar) if baselines or search else None
    if single is not None:
        seconds["single"] = round(time.monotonic() - t0, 6)
    if search:
        t0 = time.monotonic()
        w = optimal_weights(laws, epsilon=epsilon, start=[s or 1.0 for s in single or w], deadline=deadline)
        seconds["weights"] = round(time.monotonic() - t0, 6)
        bar.advance()
        notes.append("weights chosen by a search that lowers the summed expected |error| (not a certified optimum)")
    t0 = time.monotonic()
    bar.show("joint scale")
    guess = max((s / wj for s, wj in zip(single or (), w, strict=False) if s), default=1.0)
    t, loss, witness, per_prior, evals = optimal_workload_scale(laws, epsilon=epsilon, weights=w, start=guess,
                                                                deadline=deadline)
    seconds["joint_scale"] = round(time.monotonic() - t0, 6)
    bar.advance("MQM baseline" if baselines else None)
    if t == 0:
        notes.append("the exact table is already epsilon-Pufferfish private: no noise is needed")
    mqm, why = (mqm_scale(kind, epsilon=epsilon, lipschitz=bound.lipschitz, options=options, deadline=deadline)
                if baselines else (None, None))
    if why:
        notes.append(why)
    seconds["total"] = round(time.monotonic() - start, 6)
    enc = laws.source
    _, pairs, _ = laws.stacked()
    return WorkloadCalibration(
        epsilon=epsilon, names=bound.names, weights=tuple(w), t=t, scales=tuple(t * x for x in w), loss=loss,
        witness=None if witness is None else witness.in_units(bound.queries), per_prior=per_prior,
        single_scales=single,
        group_dp_scale=laws.group_l1 / epsilon, mqm_scale=mqm, workload=bound.to_dict(), prior=enc.prior_name,
        secrets=enc.secrets, n_pairs=len(pairs), evaluations=evals, seconds=seconds,
        notes=tuple(dict.fromkeys(list(enc.notes) + notes)), bound=bound, layout=record_layout(kind))


def _weights(weights, k: int) -> list:
    if weights is None:
        return [1.0] * k
    w = list(weights) if not isinstance(weights, (str, bytes)) else None
    if w is None or len(w) != k:
        raise ParameterError(f"The workload has {k} statistic(s), so it needs {k} weights; got {weights!r}.")
    return [check_positive_finite(x, "weights", "calibrate_workload") for x in w]


def workload_laws(kind, workload, *, deadline=None, max_joint_length: int = DEFAULT_MAX_JOINT_LENGTH,
                  **options) -> WorkloadLaws:
    r"""The exact joint laws of a workload given each secret, by one exact inference on the grid of its sums.

    Parameters
    ----------
    kind : PriorKind
        Bayesian networks or Markov-chain classes (:func:`puffgm.api.as_prior`).
    workload : BoundWorkload, or anything :func:`puffgm.core.workload.load_workload` accepts
    deadline : float, optional
        ``time.monotonic()`` value after which a TimeLimitError is raised.
    max_joint_length : int
        The largest joint law, in cells of the grid (:math:`\prod_j (n_j + 1)`).
    **options
        The kind's query options.

    Returns
    -------
    WorkloadLaws
        ``stacked()`` gives every joint law as an array over the statistics' grid values.
    """
    bound = workload if isinstance(workload, BoundWorkload) else _bind(kind, workload)
    bound.check_cells(max_joint_length)
    joint = kind.workload_laws(bound, deadline=deadline, **options)
    group = max((bound.l1_range(g) for g in kind.node_groups()), default=0.0)
    return WorkloadLaws(workload=bound, joint=joint, group_l1=group, seconds=joint.seconds)


def _bind(kind, workload) -> BoundWorkload:
    """The workload bound to the kind's nodes and states (NotApplicableError for kinds without query laws)."""
    domain = kind.query_domain()
    if domain is None:
        raise NotApplicableError(f"Workloads are not available for {kind.kind}; they need the exact joint laws of "
                                 "the queries, which puffgm computes for Bayesian networks and Markov-chain classes.")
    return load_workload(workload).bind(*domain)


def _single_scales(kind, bound: BoundWorkload, epsilon: float, deadline, options: dict,
                   bar: Stages | None = None) -> tuple:
    """Each statistic's own optimal Laplace scale (query units), calibrated alone (one stage of ``bar`` each)."""
    out = []
    for name, q in zip(bound.names, bound.queries, strict=True):
        if bar is not None:
            bar.show(f"{name} alone")
        left = None if deadline is None else max(deadline - time.monotonic(), 1e-3)
        cal = query_calibration(kind, q.source, epsilon=epsilon, method="optimal-laplace", time_limit=left,
                                baselines=False, progress=False, **options)
        out.append(_scale(cal))
        if bar is not None:
            bar.advance()
    return tuple(out)


def _workload_of_one(kind, bound, epsilon, w, single, deadline, options, start) -> WorkloadCalibration:
    """A workload of one is today's single query: its optimal Laplace scale, the same numbers."""
    left = None if deadline is None else max(deadline - time.monotonic(), 1e-3)
    cal = query_calibration(kind, bound.queries[0].source, epsilon=epsilon, method="optimal-laplace",
                            time_limit=left, progress=False, **options)
    scale, loss = _scale(cal), float(cal.loss or 0.0)
    return WorkloadCalibration(
        epsilon=epsilon, names=bound.names, weights=tuple(w), t=scale / w[0], scales=(scale,), loss=loss,
        witness=cal.witness, per_prior=(loss,), single_scales=single, group_dp_scale=cal.group_dp_scale,
        mqm_scale=cal.mqm_scale, workload=bound.to_dict(), prior=cal.prior, secrets=cal.secrets,
        n_pairs=cal.n_pairs, seconds={"total": round(time.monotonic() - start, 6)},
        notes=cal.notes + ("a workload of one: the single query's optimal Laplace scale",), bound=bound,
        layout=cal.layout)


def _scale(cal) -> float:
    """The optimal Laplace scale of a single-query calibration (always computed for that method)."""
    if cal.scale is None:
        raise ParameterError("The single query's optimal Laplace scale could not be computed (its laws are not exact); "
                             "use the Markov Quilt Mechanism (--method exact).")
    return float(cal.scale)
