"""One release function for every calibration puffgm makes: :func:`release`.

:func:`release` dispatches on the calibration it is given, so a caller never has to
know which release function serves which result:

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
=============================================  ===============================================  ==================

A query-specific calibration holds for the one query (or table of queries) it was
calibrated for, so :func:`release` computes that query's true value from the database
itself (:meth:`puffgm.core.query.BoundQuery.evaluate` on the record that
:class:`puffgm.core.records.RecordLayout` reads): a typed answer could be the answer of
another query, for which the noise proves nothing.  A Markov Quilt Mechanism calibration
covers every L-Lipschitz query, so puffgm cannot know which query to compute: it takes the
exact answer of the caller's query, named as such (``answer=``).

An a(b)-influence curve and a Blowfish policy are not calibrations: the mechanism (Laplace,
exponential, noisy top-K; a histogram, a k-means step) and its privacy parameter are chosen
when releasing, so they are released by :mod:`puffgm.mechanisms.pufferfish` and
:mod:`puffgm.blowfish.mechanisms`, and :func:`release` says so.
"""

from __future__ import annotations

from typing import Any

from puffgm.core.curve import InfluenceCurve
from puffgm.core.release import Release
from puffgm.core.results import CalibrationResult
from puffgm.exceptions import ParameterError
from puffgm.mechanisms.laplace import release_laplace
from puffgm.mechanisms.optimal_noise import OptimalNoise, release_optimal_noise
from puffgm.mechanisms.query import QueryCalibration, release_query
from puffgm.mechanisms.translation import Translation
from puffgm.mechanisms.workload import WorkloadCalibration, release_workload

__all__ = ["release", "true_value"]

_CURVES = ("an a(b)-influence curve is no calibration: the DP mechanism and its epsilon are chosen when "
           "releasing, so release along it with puffgm.mechanisms.pufferfish (pufferfish_laplace(answer, curve, "
           "epsilon=..., lipschitz=...), pufferfish_exponential, pufferfish_top_k).")


def release(calibration: Any, data: Any = None, *, answer: Any = None, accountant: Any = None,
            random_state: Any = None, label: str | None = None) -> Release:
    """Release the noisy answer a calibration was made for: the one entry point for every calibration.

    Parameters
    ----------
    calibration : QueryCalibration, WorkloadCalibration or CalibrationResult
        From :func:`puffgm.calibrate_query`, :func:`puffgm.calibrate_workload` or
        :func:`puffgm.calibrate` (the Markov Quilt Mechanism and the chain baselines).
    data : optional
        One database, for a query-specific calibration (the true value is computed from it):
        for a Bayesian network one record (a mapping node -> state, a pandas Series indexed
        by node, or a one-row DataFrame of node columns); for a Markov chain one trace (a
        list, array or pandas Series of the states of X1..XT in time order, or a one-column
        DataFrame).  A state is its name (``str`` of the value) or its index.
    answer : float or array_like, optional
        For a ``CalibrationResult`` only: the exact answer of the L-Lipschitz query the
        calibration covers (any such query, so puffgm cannot compute it).
    accountant : PrivacyAccountant, optional
        Charged before any noise is drawn; a refused release draws none.
    random_state : int or numpy Generator, optional
        Seeded numpy noise, for tests only (not for production); default: secure samplers.
    label : str, optional
        The release's name in the accountant's ledger.

    Returns
    -------
    Release
        ``QueryRelease``, ``OptimalNoiseRelease``, ``WorkloadRelease`` or ``MarkovQuiltRelease``; it
        keeps the noisy value only, never the true one.

    Raises
    ------
    ParameterError
        One sentence: ``answer=`` for a query-specific calibration (its value is computed
        from the data), ``data`` for a Markov Quilt Mechanism calibration, several records
        or traces, data that does not fit the prior, or an object that is no calibration
        (the message names the function that releases it).

    Examples
    --------
    >>> import puffgm
    >>> cal = puffgm.calibrate_query("example:asia", {"count": "yes"}, epsilon=1.0, method="optimal-laplace")
    >>> record = {"asia": "no", "tub": "no", "smoke": "yes", "lung": "no", "bronc": "yes",
    ...           "either": "no", "xray": "no", "dysp": "yes"}
    >>> true_value(cal, record)                      # the count computed from the record
    3.0
    >>> rel = puffgm.release(cal, record, random_state=0)   # seeded: not for production
    >>> rel.secure
    False
    >>> mqm = puffgm.calibrate("example:asia", epsilon=4.0)
    >>> puffgm.release(mqm, answer=3.0, random_state=0).scale == mqm.scale
    True
    """
    options = {"accountant": accountant, "random_state": random_state, "label": label}
    if isinstance(calibration, (QueryCalibration, WorkloadCalibration)):
        if answer is not None:
            raise ParameterError("A query-specific calibration's true value is computed from the data: give the "
                                 "database as data (puffgm.release(cal, data)), not answer=.")
        value = true_value(calibration, data)
        if isinstance(calibration, WorkloadCalibration):
            return release_workload(value, calibration, **options)
        if calibration.method == "optimal-noise":
            return release_optimal_noise(value, calibration.optimal_noise, **options)
        return release_query(value, calibration, **options)
    if isinstance(calibration, CalibrationResult):
        if data is not None:
            raise ParameterError("A Markov Quilt Mechanism calibration covers any L-Lipschitz query, so puffgm cannot "
                                 "compute the answer from data: give the exact answer of your query as answer=.")
        if answer is None:
            raise ParameterError("A Markov Quilt Mechanism calibration covers any L-Lipschitz query: give the exact "
                                 "answer of your query as answer= (puffgm.release(cal, answer=...)).")
        return release_laplace(answer, calibration, **options)
    raise ParameterError(_not_a_calibration(calibration))


def true_value(calibration: QueryCalibration | WorkloadCalibration, data: Any) -> Any:
    """The exact value of a query-specific calibration's query (or table) on one database.

    Parameters
    ----------
    calibration : QueryCalibration or WorkloadCalibration
    data : one record or one trace, as :func:`release` takes it

    Returns
    -------
    float, or tuple of float (a workload, in workload order)

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
    if isinstance(obj, (InfluenceCurve, Translation)):
        return f"puffgm.release takes a calibration, and {_CURVES}"
    if type(obj).__module__.startswith("puffgm.blowfish"):
        return ("puffgm.release takes a Pufferfish calibration; a Blowfish policy is released by "
                "puffgm.blowfish.mechanisms (laplace_mechanism, release_histogram, release_cumulative, "
                "release_linear_sum) or puffgm.blowfish.ordered.ordered_mechanism.")
    if isinstance(obj, OptimalNoise):
        return ("puffgm.release takes the QueryCalibration whose optimal_noise this is, and computes its answer "
                "from the data: puffgm.release(cal, data).")
    if isinstance(obj, Release):
        return "This is already a release record (its value is drawn); puffgm.release takes a calibration."
    return (f"puffgm.release takes a calibration (from puffgm.calibrate, puffgm.calibrate_query or "
            f"puffgm.calibrate_workload); got {type(obj).__name__}: to add noise to a number, calibrate first, "
            "then release.")
