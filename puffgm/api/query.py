r"""Query-specific calibration for any prior kind that can compute the conditional laws of a sum query.

One call computes the exact laws of F given each secret (the kind's
:meth:`~puffgm.core.prior.PriorKind.query_laws`), then every scale that can be
had from them, side by side with the query-agnostic baselines:

* group DP: the query's sensitivity over a group of correlated nodes, :math:`/ \epsilon`;
* the Markov Quilt Mechanism: :math:`\sigma_{\max}` times the query's Lipschitz constant
  (Song, Wang and Chaudhuri, "Pufferfish Privacy Mechanisms for Correlated
  Data", SIGMOD 2017, arXiv:1603.03977, Algorithm 2);
* the Wasserstein mechanism: :math:`W / \epsilon` (their Algorithm 1);
* the optimal Laplace scale: the least scale whose exact loss is at most :math:`\epsilon`;
* the optimal noise: the additive noise law of least expected error under the
  exact Pufferfish constraints, by linear programming (method ``"optimal-noise"``).

``method`` chooses which scale the result (and its release) uses.
"""

from __future__ import annotations

import math
import time
from typing import Any, NamedTuple

from puffgm.core.progress import Stages, stages
from puffgm.core.records import RecordLayout
from puffgm.core.validation import check_positive_finite, check_time_limit
from puffgm.exceptions import AuditError, NotApplicableError, NumericalError, ParameterError
from puffgm.mechanisms.query import (
    QUERY_METHODS,
    THEOREM_OPTIMAL_LAPLACE,
    THEOREM_WASSERSTEIN,
    LeastScale,
    QueryCalibration,
    check_resolvable,
    laplace_loss_of,
    mqm_scale,
    optimal_laplace_of,
    wasserstein_of,
)

__all__ = ["query_calibration", "record_layout"]

#: Relative slack on the audit of the Wasserstein scale: the loss is exactly epsilon for laws that are
#: shifts of each other, and its floating-point value may then exceed epsilon by rounding (the audit
#: also allows the loss's own rounding, :func:`puffgm.mechanisms.query.check_resolvable`).
_AUDIT_RTOL = 1e-9


def query_calibration(kind, query, *, epsilon, method: str = "wasserstein", time_limit=None,
                      baselines: bool = True, objective: str = "abs", **options) -> QueryCalibration:
    r"""Calibrate Laplace noise for one sum query by exact inference (Wasserstein mechanism or optimal scale).

    Parameters
    ----------
    kind : PriorKind
        The prior class (:func:`puffgm.api.as_prior`); Bayesian networks and
        Markov-chain classes have conditional laws.
    query : SumQuery, dict, JSON text or JSON file path
        ``{"scores": {...}}``, ``{"scores": [...]}`` or ``{"count": STATE}``
        (:mod:`puffgm.core.query`).
    epsilon : float
        Pufferfish privacy parameter, finite and :math:`> 0`.
    method : str
        ``"wasserstein"`` (:math:`W / \epsilon`, Song et al. Algorithm 1),
        ``"optimal-laplace"`` (the least scale with exact loss :math:`\le \epsilon`) or
        ``"optimal-noise"`` (the least-error additive noise law by linear
        programming, :mod:`puffgm.mechanisms.optimal_noise`).
    time_limit : float, optional
        Seconds the computation may take (TimeLimitError beyond); None or 0: no limit.
    baselines : bool
        Also compute the MQM scale for the comparison.
    objective : {"abs", "square"}
        Method ``"optimal-noise"``: minimise :math:`\mathbb{E}|Z|` or :math:`\mathbb{E}[Z^2]`
        (:func:`puffgm.mechanisms.optimal_noise.optimal_noise_of`).
    **options
        ``progress`` (bool or None): a tqdm bar of the stages (laws, W, optimal scale, optimal
        noise, MQM) on stderr, shown once the calibration has run for 2 seconds; None (default)
        shows it when stderr is a terminal, False never (:mod:`puffgm.core.progress`).  The
        rest are the kind's query options (``protected``, ``secrets``,
        ``max_sum_length``, ``max_table_entries`` for networks;
        ``max_exact_length`` for chains).

    Returns
    -------
    QueryCalibration
        The chosen scale (or noise law) beside the Wasserstein, group-DP and MQM scales, with its exact loss.

    Examples
    --------
    >>> from puffgm.api import as_prior
    >>> cal = query_calibration(as_prior("example:asia"), {"count": 0}, epsilon=1.0)
    >>> cal.wasserstein, cal.group_dp_scale
    (5.0, 8.0)
    """
    epsilon = check_positive_finite(epsilon, "epsilon", "puffgm.calibrate_query")
    if method not in QUERY_METHODS:
        raise ParameterError(f"Query-specific methods are {', '.join(map(repr, QUERY_METHODS))}; got {method!r}.")
    time_limit = check_time_limit(time_limit, "calibrate")  # None or 0: no limit
    progress = options.pop("progress", None)
    n_stages = 2 + (method == "optimal-noise") + bool(baselines) + 1  # laws, W, optimal scale, noise, MQM
    with stages(progress, n_stages, "calibrate query", unit="stage") as bar:
        bar.show("conditional laws")
        return _query_calibration(kind, query, _Ask(epsilon, method, time_limit, baselines, objective), bar, options)


class _Ask(NamedTuple):
    """What :func:`query_calibration` was asked, checked."""

    epsilon: float
    method: str
    time_limit: float | None
    baselines: bool
    objective: str


def _query_calibration(kind, query, ask: _Ask, bar: Stages, options: dict) -> QueryCalibration:
    """The body of :func:`query_calibration`, with its arguments checked, advancing ``bar`` after each stage."""
    epsilon, method, time_limit, baselines, objective = ask
    start = time.monotonic()
    deadline = None if time_limit is None else start + time_limit
    laws = kind.query_laws(query, deadline=deadline, **options)
    bar.advance("Wasserstein distance")
    seconds = {"laws": round(laws.seconds, 6)}
    q, unit = laws.query, laws.query.unit
    notes = list(laws.notes)
    t0 = time.monotonic()
    W, w_witness, per_prior = wasserstein_of(laws)
    w_scale = _wasserstein_scale(W, epsilon, unit)
    w_loss = 0.0 if laws.exact else None  # exact loss at W / epsilon (0: W = 0, the exact answer is released)
    if laws.exact and W > 0:
        resolution = check_resolvable(laws, epsilon=epsilon, scale_per_epsilon=W)
        w_loss, _, _ = laplace_loss_of(laws, w_scale)
        if w_loss > epsilon * (1 + _AUDIT_RTOL) + resolution:
            raise AuditError(f"The exact loss of the Wasserstein scale is {w_loss:.10g} > epsilon {epsilon:g}; "
                             "refusing to calibrate (Theorem 3.2 of Song et al. should prevent this: "
                             "please report it).")
    seconds["wasserstein"] = round(time.monotonic() - t0, 6)
    bar.advance("optimal Laplace scale")
    opt: LeastScale | None = None  # optimal_laplace_of's search; set whenever a method needs it
    if laws.exact:
        t0 = time.monotonic()
        opt = optimal_laplace_of(laws, epsilon=epsilon, upper=w_scale, deadline=deadline)
        seconds["optimal_laplace"] = round(time.monotonic() - t0, 6)
        if opt.scale == 0:
            notes.append("the exact answer is already epsilon-Pufferfish private for this query: no noise is needed")
    elif method != "wasserstein":
        raise ParameterError(f"Method {method!r} needs the exact laws at every position, which were not computed "
                             "here (see the notes of the Wasserstein bound); use --method wasserstein.")
    bar.advance("optimal noise" if method == "optimal-noise" else "MQM baseline")
    noise: Any = None
    if method == "optimal-noise":
        t0 = time.monotonic()
        assert opt is not None  # optimal noise needs the exact laws, so the Laplace search ran
        noise = _optimal_noise(laws, epsilon=epsilon, laplace_scale=opt.scale, deadline=deadline, objective=objective)
        seconds["optimal_noise"] = round(time.monotonic() - t0, 6)
        bar.advance("MQM baseline")
    mqm, why = (None, "MQM not computed (baselines=False)") if not baselines else mqm_scale(
        kind, epsilon=epsilon, lipschitz=q.lipschitz, options=options, deadline=deadline)
    bar.advance()
    if why:
        notes.append(why)
    if not laws.exact:
        notes.append("W is a certified upper bound (past and future of each position coupled separately)")
    if method == "wasserstein":
        scale, loss, witness, theorem = w_scale, w_loss, w_witness, THEOREM_WASSERSTEIN
    elif method == "optimal-laplace":
        assert opt is not None  # the method needs the exact laws, so the search ran
        at = None if opt.witness is None else opt.witness.in_units((q,))  # the output in the query's units
        scale, loss, witness, theorem = opt.scale, opt.loss, at, THEOREM_OPTIMAL_LAPLACE
    else:
        scale, loss, witness, theorem = None, noise.loss, noise.witness, noise.theorem
    seconds["total"] = round(time.monotonic() - start, 6)
    return QueryCalibration(
        method=method, epsilon=epsilon, scale=None if scale is None else scale / unit, loss=loss, wasserstein=W / unit,
        wasserstein_scale=w_scale / unit, optimal_laplace_scale=None if opt is None else opt.scale / unit,
        group_dp_scale=laws.group_sensitivity / unit / epsilon, mqm_scale=mqm, witness=witness,
        per_prior=tuple(w / unit for w in per_prior), query=q.to_dict(), exact=laws.exact,
        prior=laws.prior_name, secrets=laws.secrets, n_pairs=_n_pairs(laws), seconds=seconds,
        notes=tuple(notes), theorem=theorem, optimal_noise=noise,
        wasserstein_loss=w_loss,
        optimal_laplace_loss=None if opt is None else opt.loss,
        bound=q, layout=record_layout(kind),
    )


def record_layout(kind) -> RecordLayout:
    """How one database of ``kind``'s class is given to a release: one trace for a Markov chain, one record
    of the nodes for a Bayesian network (:class:`puffgm.core.records.RecordLayout`).

    Examples
    --------
    >>> from puffgm.api import as_prior
    >>> record_layout(as_prior("example:asia")).form
    'record'
    """
    from puffgm.chains.kind import MarkovChainKind

    if isinstance(kind, MarkovChainKind):
        cc = kind.prior_class
        return RecordLayout(nodes=cc.nodes, states=(tuple(cc.states),) * cc.length, trace=True)
    domain = kind.query_domain()
    if domain is None:
        raise NotApplicableError(f"Releases from data are not available for {kind.kind}: they need the exact laws "
                                 "of a query, which puffgm computes for Bayesian networks and Markov-chain classes.")
    nodes, states = domain
    return RecordLayout(nodes=tuple(map(str, nodes)), states=tuple(tuple(map(str, states[n])) for n in nodes))


def _wasserstein_scale(W: float, epsilon: float, unit: int) -> float:
    """W / epsilon in grid units, or NumericalError when it exceeds the double range."""
    scale = W / epsilon
    if not math.isfinite(scale):
        raise NumericalError(f"epsilon = {epsilon:g} is too small for this query: the Wasserstein scale "
                             f"W / epsilon = {W / unit:g} / {epsilon:g} exceeds the double range (about 1.8e308); "
                             f"epsilon must be at least about {W / 1e308:.1e}.")
    return scale


def _optimal_noise(laws, *, epsilon: float, laplace_scale: float, deadline, objective: str):
    """The optimal noise law (puffgm.mechanisms.optimal_noise), reusing the optimal Laplace scale (grid units)."""
    from puffgm.mechanisms.optimal_noise import OptimalNoiseOptions, optimal_noise_of

    left = None if deadline is None else max(deadline - time.monotonic(), 1e-3)
    opts = OptimalNoiseOptions(laplace_scale=laplace_scale, time_limit=left)
    return optimal_noise_of(laws, epsilon=epsilon, objective=objective, options=opts)


def _n_pairs(laws) -> int:
    if not laws.exact:
        return len(laws.w_bounds)
    return sum(len(nl.active_pairs()) for nl in laws.laws)
