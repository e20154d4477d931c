r"""One release function for every calibration puffgm makes: :func:`release`.

:func:`release` dispatches on the calibration it is given (one :func:`functools.singledispatch`,
one short function per kind), so a caller never has to know which release function serves
which result:

=============================================  ===============================================  ==================
calibration                                    released by                                      true value
=============================================  ===============================================  ==================
``QueryCalibration``, method ``wasserstein``   :func:`puffgm.mechanisms.query.release_query`    computed from
or ``optimal-laplace``                                                                          ``data``
``QueryCalibration``, method ``optimal-noise`` :func:`puffgm.mechanisms.optimal_noise.           computed from
                                               release_optimal_noise`                           ``data``
``WorkloadCalibration``                        :func:`puffgm.mechanisms.workload.               computed from
                                               release_workload`                                ``data``
``CalibrationResult`` (the Markov Quilt        :func:`puffgm.mechanisms.laplace.release_laplace` ``answer=``
Mechanism and the chain baselines)
``Translation`` (:func:`puffgm.translate`)     :class:`puffgm.mechanisms.pufferfish.             ``answer=``, and
                                               PufferfishLaplace`                               ``lipschitz=``
``BlowfishCalibration``, ``query=``            :func:`puffgm.blowfish.mechanisms.               computed from
                                               release_histogram` (``release_cumulative``,      ``data`` (a data
                                               ``release_linear_sum``)                          set)
``BlowfishCalibration``, ``sensitivity=``      :func:`puffgm.blowfish.mechanisms.               ``answer=``
                                               laplace_mechanism`
=============================================  ===============================================  ==================

A query-specific calibration holds for the one query (or table of queries) it was
calibrated for, so :func:`release` computes that query's true value from the database
itself (:meth:`puffgm.core.query.BoundQuery.evaluate` on the record that
:class:`puffgm.core.records.RecordLayout` reads): a typed answer could be the answer of
another query, for which the noise proves nothing.  A Markov Quilt Mechanism calibration
and a translation cover every :math:`L`-Lipschitz query, so puffgm cannot know which query to
compute: they take the exact answer of the caller's query, named as such (``answer=``).

A translation along an a(b)-influence curve (Bai et al. Theorem 6) carries its curve and its
Pufferfish :math:`\epsilon`, so it is released by the Pufferfish Laplace mechanism (Algorithm 1) at
scale :math:`L / \epsilon_{\mathrm{DP}}`, and such releases compose along the curve (Theorem 7).  A curve alone
is no calibration (the :math:`\epsilon` is chosen when translating), and neither is a Blowfish policy
alone (the scale :math:`S(f, P) / \epsilon` depends on the query): :func:`release` names the form that
makes each one.  The exponential and top-K mechanisms along a curve, and Blowfish releases
on a subset (parallel composition) or by the ordered mechanism, keep their own functions in
:mod:`puffgm.mechanisms.pufferfish` and :mod:`puffgm.blowfish`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import singledispatch
from typing import Any

from puffgm.blowfish.calibration import BlowfishCalibration
from puffgm.blowfish.mechanisms import laplace_mechanism, release_cumulative, release_histogram, release_linear_sum
from puffgm.blowfish.policy import Policy
from puffgm.core.curve import InfluenceCurve
from puffgm.core.release import Release
from puffgm.core.results import CalibrationResult
from puffgm.exceptions import ParameterError
from puffgm.mechanisms.laplace import release_laplace
from puffgm.mechanisms.optimal_noise import OptimalNoise, release_optimal_noise
from puffgm.mechanisms.pufferfish import PufferfishLaplace
from puffgm.mechanisms.query import QueryCalibration, release_query
from puffgm.mechanisms.translation import Translation
from puffgm.mechanisms.workload import WorkloadCalibration, release_workload

__all__ = ["release", "true_value", "BlowfishCalibration"]


def release(calibration: Any, data: Any = None, *, answer: Any = None, lipschitz: float | None = None,
            accountant: Any = None, random_state: Any = None, label: str | None = None, **units: Any) -> Release:
    r"""Release the noisy answer a calibration was made for: the one entry point for every calibration.

    Parameters
    ----------
    calibration : QueryCalibration, WorkloadCalibration, CalibrationResult, Translation or BlowfishCalibration
        From :func:`puffgm.calibrate_query`, :func:`puffgm.calibrate_workload`,
        :func:`puffgm.calibrate` (the Markov Quilt Mechanism and the chain baselines),
        :func:`puffgm.translate` (a point of an :math:`a(b)`-influence curve and its :math:`\epsilon_{\mathrm{DP}}`), or
        :class:`~puffgm.blowfish.calibration.BlowfishCalibration` (a Blowfish policy, its
        :math:`\epsilon` and the query).
    data : optional
        The database, for a calibration that computes its true value:

        * query-specific (``QueryCalibration``, ``WorkloadCalibration``): one database; for a
          Bayesian network one record (a mapping node -> state, a pandas Series indexed by
          node, or a one-row DataFrame of node columns); for a Markov chain one trace (a list,
          array or pandas Series of the states of X1..XT in time order, or a one-column
          DataFrame).  A state is its name (``str`` of the value) or its index.
        * ``BlowfishCalibration`` with ``query=``: the data set, a sequence of domain values
          (one per individual).
    answer : float or array_like, optional
        The exact answer of the caller's query, for a calibration that covers many queries:
        a ``CalibrationResult`` or a ``Translation`` (any L-Lipschitz query), a
        ``BlowfishCalibration`` with ``sensitivity=`` (any query of that S(f, P)).
    lipschitz : float, optional
        For a ``Translation`` only: L, the largest L1 change of the query when one entry
        changes (default 1.0).  The other calibrations carry their own.
    accountant : PrivacyAccountant, optional
        Charged before any noise is drawn; a refused release draws none.
    random_state : int or numpy Generator, optional
        Seeded numpy noise, for tests only (not for production); default: secure samplers.
    label : str, optional
        The release's name in the accountant's ledger.
    **units
        A release on **many units** (:mod:`puffgm.api.units`), named by these keywords:

        * ``unit`` (str or True, optional):
          **Many units** (:mod:`puffgm.api.units`): ``data`` is a panel of independent units (traces
          or records), and the release is the sum over units of each unit's statistic, with noise
          calibrated for one unit.  A column name (a long frame of traces, or a frame of records
          with an id column), or True for data that is units already (a wide frame, one row per
          unit; a list or dict of traces or records).  Units are independent only under the prior.
        * ``time``, ``state`` (str, optional):
          With ``unit=``, a long frame of traces: the column ordering each unit's rows, the column
          of states.
        * ``gaps`` ({"refuse", "split"}):
          With ``unit=``: a gap inside a trace is refused, or splits it into independent units.
        * ``each`` (bool):
          With ``unit=``: one release per unit, all under one charge (parallel composition).
        * ``relative`` (bool):
          With ``unit=``: divide by the public total number of entries (relative frequencies).
        * ``query`` (dict, optional):
          With ``unit=`` and a Markov Quilt Mechanism calibration: the query or workload whose
          sum over units to release (noise :math:`\sigma_{\max}` times its Lipschitz constant).

    Returns
    -------
    Release
        ``QueryRelease``, ``OptimalNoiseRelease``, ``WorkloadRelease``, ``MarkovQuiltRelease``,
        ``PufferfishRelease`` or ``BlowfishRelease``; with ``unit=`` a ``PanelRelease``; it keeps
        the noisy value only, never the true one.

    Raises
    ------
    ParameterError
        One sentence naming the right form: ``answer=`` where the value is computed from the
        data, ``data`` where the calibration covers many queries, ``lipschitz=`` for anything
        but a translation, several records or traces, data that does not fit the prior, a
        curve not yet translated, a policy without its :math:`\epsilon` and query, or an object that
        is no calibration (the message names the function that releases it).

    Examples
    --------
    A query-specific calibration computes its answer from one record:

    >>> import puffgm
    >>> cal = puffgm.calibrate_query("example:asia", {"count": "yes"}, epsilon=1.0, method="optimal-laplace")
    >>> record = {"asia": "no", "tub": "no", "smoke": "yes", "lung": "no", "bronc": "yes",
    ...           "either": "no", "xray": "no", "dysp": "yes"}
    >>> true_value(cal, record)                      # the count computed from the record
    3.0
    >>> rel = puffgm.release(cal, record, random_state=0)   # seeded: not for production
    >>> rel.secure
    False

    The Markov Quilt Mechanism and a translation take the answer of any L-Lipschitz query:

    >>> mqm = puffgm.calibrate("example:asia", epsilon=4.0)
    >>> puffgm.release(mqm, answer=3.0, random_state=0).scale == mqm.scale
    True
    >>> t = puffgm.translate("example:asia", epsilon=4.0)
    >>> rel = puffgm.release(t, answer=3.0, lipschitz=2.0, random_state=0)
    >>> rel.epsilon_puffer, rel.details["scale"] == 2.0 / t.epsilon_dp
    (4.0, True)

    A Blowfish calibration computes its histogram from the data set:

    >>> from puffgm.blowfish import Domain, Policy, line_graph
    >>> policy = Policy(line_graph(Domain.ordered(5)))
    >>> hist = BlowfishCalibration(policy, epsilon=1.0, query="histogram")
    >>> puffgm.release(hist, [0, 1, 1, 4], random_state=0).value.shape
    (5,)
    """
    if units:
        return _units(calibration, data, answer, lipschitz, units | {
            "accountant": accountant, "random_state": random_state, "label": label})
    return _release(calibration, _Request(data, answer, lipschitz, accountant, random_state, label))


def _units(calibration: Any, data: Any, answer: Any, lipschitz: Any, options: dict) -> Release:
    """A release on many units (:func:`puffgm.api.units.release_units`), refusing what does not apply."""
    from puffgm.api.units import release_units

    unknown = sorted(set(options) - {"unit", "time", "state", "gaps", "each", "relative", "query", "accountant",
                                     "random_state", "label"})
    if unknown:
        raise ParameterError(f"puffgm.release takes no keyword {unknown[0]!r}; a release on units takes unit=, time=, "
                             "state=, gaps=, each=, relative= and query=.")
    options.setdefault("unit", True)
    if answer is not None or lipschitz is not None:
        raise ParameterError("A release on units computes each unit's statistic from the data: give the units as "
                             "data, not answer= or lipschitz=.")
    if not isinstance(calibration, (QueryCalibration, WorkloadCalibration, CalibrationResult)):
        raise ParameterError("A release on units takes a query-specific calibration (puffgm.calibrate_query, "
                             "puffgm.calibrate_workload) or a Markov Quilt Mechanism calibration (puffgm.calibrate) "
                             f"with query=; got {type(calibration).__name__}.")
    if data is None:
        raise ParameterError("A release on units computes each unit's statistic from the data: give the units.")
    return release_units(calibration, data, **options)


@dataclass(frozen=True)
class _Request:
    """What the caller gave :func:`release` besides the calibration."""

    data: Any
    answer: Any
    lipschitz: float | None
    accountant: Any
    random_state: Any
    label: str | None

    @property
    def options(self) -> dict:
        """The release options every release function takes."""
        return {"accountant": self.accountant, "random_state": self.random_state, "label": self.label}

    def no_lipschitz(self, what: str) -> None:
        if self.lipschitz is not None:
            raise ParameterError(f"lipschitz= applies to a Translation only: {what} carries its own "
                                 "(give it when calibrating).")

    def needs_data(self, what: str, form: str) -> Any:
        """The data, refusing ``answer=``: the true value is computed from the data."""
        self.no_lipschitz(what)
        if self.answer is not None:
            raise ParameterError(f"{what}'s true value is computed from the data: give the data as data "
                                 f"({form}), not answer=.")
        return self.data

    def needs_answer(self, what: str, covers: str, form: str) -> Any:
        """The answer, refusing ``data``: the calibration covers many queries, puffgm cannot pick one."""
        if self.data is not None:
            raise ParameterError(f"{what} covers {covers}, so puffgm cannot compute the answer from data: "
                                 f"give the exact answer of your query as answer= ({form}).")
        if self.answer is None:
            raise ParameterError(f"{what} covers {covers}: give the exact answer of your query as answer= ({form}).")
        return self.answer


@singledispatch
def _release(calibration: Any, request: _Request) -> Release:
    raise ParameterError(_not_a_calibration(calibration))


@_release.register(QueryCalibration)
def _query(cal: QueryCalibration, request: _Request) -> Release:
    value = true_value(cal, request.needs_data("A query-specific calibration", "puffgm.release(cal, data)"))
    if cal.method == "optimal-noise":
        return release_optimal_noise(value, cal.optimal_noise, **request.options)
    return release_query(value, cal, **request.options)


@_release.register(WorkloadCalibration)
def _workload(cal: WorkloadCalibration, request: _Request) -> Release:
    value = true_value(cal, request.needs_data("A query-specific calibration", "puffgm.release(cal, data)"))
    return release_workload(value, cal, **request.options)


@_release.register(CalibrationResult)
def _markov_quilt(cal: CalibrationResult, request: _Request) -> Release:
    request.no_lipschitz("a Markov Quilt Mechanism calibration")
    answer = request.needs_answer("A Markov Quilt Mechanism calibration", "any L-Lipschitz query",
                                  "puffgm.release(cal, answer=...)")
    return release_laplace(answer, cal, **request.options)


@_release.register(Translation)
def _translation(t: Translation, request: _Request) -> Release:
    answer = request.needs_answer("A translation", "any L-Lipschitz query",
                                  "puffgm.release(translation, answer=..., lipschitz=L)")
    if t.curve is None:
        raise ParameterError("This Translation does not carry its a(b)-influence curve (it was not made by "
                             "puffgm.translate), so release along the curve with pufferfish_laplace(answer, curve, "
                             f"epsilon={t.epsilon_puffer:g}, lipschitz=L).")
    lipschitz = 1.0 if request.lipschitz is None else request.lipschitz
    return PufferfishLaplace(t.curve, epsilon=t.epsilon_puffer, lipschitz=lipschitz).release(answer, **request.options)


#: The Blowfish release function of each query a BlowfishCalibration computes from the data set.
_BLOWFISH_FROM_DATA = {"histogram": release_histogram, "cumulative": release_cumulative,
                       "linear_sum": release_linear_sum}


@_release.register(BlowfishCalibration)
def _blowfish(cal: BlowfishCalibration, request: _Request) -> Release:
    if cal.query is None:
        request.no_lipschitz("a Blowfish calibration")
        answer = request.needs_answer("A Blowfish calibration with sensitivity=", "any query of that S(f, P)",
                                      "puffgm.release(cal, answer=...)")
        return laplace_mechanism(answer, cal.policy, epsilon=cal.epsilon, sensitivity=cal.sensitivity,
                                 **request.options)
    data = request.needs_data(f"A Blowfish calibration of the {cal.query}", "puffgm.release(cal, data_set)")
    if data is None:
        raise ParameterError(f"A Blowfish calibration of the {cal.query} computes it from the data set: give the "
                             "data set (a sequence of domain values) as data.")
    extra = {"histogram": {"partition": cal.partition}, "linear_sum": {"values": cal.values}}.get(cal.query, {})
    return _BLOWFISH_FROM_DATA[cal.query](data, cal.policy, epsilon=cal.epsilon, **extra, **request.options)


def true_value(calibration: QueryCalibration | WorkloadCalibration, data: Any) -> Any:
    """The exact value of a query-specific calibration's query (or table) on one database.

    Parameters
    ----------
    calibration : QueryCalibration or WorkloadCalibration
    data : one record or one trace, as :func:`release` takes it

    Returns
    -------
    float or tuple of float
        The exact answer of the query, or of each statistic of a workload in workload order.

    Raises
    ------
    ParameterError
        When ``data`` is missing, not one database of the class, or the calibration does not
        carry its bound query (made by hand rather than by puffgm).
    """
    if calibration.bound is None or calibration.layout is None:
        name = type(calibration).__name__
        how = "release_workload(answers, cal)" if name == "WorkloadCalibration" else "release_query(answer, cal)"
        raise ParameterError(f"This {name} does not carry its bound query (it was not made by "
                             f"puffgm.calibrate_query or puffgm.calibrate_workload), so the true value cannot be "
                             f"computed from data; release it with {how}.")
    if data is None:
        raise ParameterError(f"A query-specific calibration's true value is computed from the data: give one "
                             f"database, {_form(calibration.layout)}.")
    return calibration.bound.evaluate(calibration.layout.read(data))


def _form(layout) -> str:
    if layout.trace:
        return "one trace of the chain (the states of X1..XT in time order)"
    return "one record of the network's nodes (a mapping node -> state)"


def _not_a_calibration(obj: Any) -> str:
    """The one-sentence refusal of an object :func:`release` does not release, naming what does."""
    if isinstance(obj, InfluenceCurve):
        return ("An a(b)-influence curve is no calibration, since the epsilon is chosen when translating: translate "
                "it first, puffgm.release(puffgm.translate(curve, epsilon=E), answer=..., lipschitz=L).")
    if isinstance(obj, Policy):
        return ("A Blowfish policy is no calibration, since the noise depends on the epsilon and the query: release "
                "BlowfishCalibration(policy, epsilon=E, query='histogram') (or 'cumulative', 'linear_sum') with "
                "puffgm.release(cal, data_set), or BlowfishCalibration(policy, epsilon=E, sensitivity=S) with "
                "puffgm.release(cal, answer=...).")
    if type(obj).__module__.startswith("puffgm.blowfish"):
        return ("puffgm.release takes a calibration; this Blowfish object is released by puffgm.blowfish.mechanisms "
                "or puffgm.blowfish.ordered.ordered_mechanism.")
    if isinstance(obj, OptimalNoise):
        return ("puffgm.release takes the QueryCalibration whose optimal_noise this is, and computes its answer "
                "from the data: puffgm.release(cal, data).")
    if isinstance(obj, Release):
        return "This is already a release record (its value is drawn); puffgm.release takes a calibration."
    return (f"puffgm.release takes a calibration (from puffgm.calibrate, puffgm.calibrate_query, "
            f"puffgm.calibrate_workload or puffgm.translate, or a BlowfishCalibration); got {type(obj).__name__}: "
            "to add noise to a number, calibrate first, then release.")
