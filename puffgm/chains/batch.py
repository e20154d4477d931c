"""Calibrating many chain classes at once (parameter grids, sweeps over Theta).

Each class is calibrated independently, so a grid is embarrassingly parallel:
:func:`calibrate_many` splits it into contiguous chunks over ``n_jobs`` worker
processes (the ``fork`` start method where the platform has it, so workers
start with puffgm and the classes already in memory: only index ranges and
results cross process boundaries) and returns the results in input order.
``n_jobs=1``, or a platform without ``fork``, runs in this process.  The results are exactly those of calling
the method on each class alone.
"""

from __future__ import annotations

import multiprocessing as mp
import os

from .._validation import check_positive_finite, check_positive_int
from ..exceptions import ParameterError
from .approx import MQMApprox
from .baselines import gk16, group_dp
from .exact import MQMExact

__all__ = ["calibrate_many"]

_METHODS = ("exact", "approx", "groupdp", "gk16")


def _one(method: str, cc, epsilon: float, lipschitz: float, options: dict):
    if method == "exact":
        return MQMExact(cc, **options).calibrate(epsilon, lipschitz)
    if method == "approx":
        return MQMApprox(cc, **options).calibrate(epsilon, lipschitz)
    if method == "groupdp":
        return group_dp(cc, epsilon, lipschitz)
    return gk16(cc, epsilon, lipschitz)


#: The classes of the call in progress, inherited by forked workers (never pickled).
_SHARED: list = []


def _chunk(args):
    method, lo, hi, epsilon, lipschitz, options = args
    return [_one(method, cc, epsilon, lipschitz, options) for cc in _SHARED[lo:hi]]


def calibrate_many(classes, epsilon: float, lipschitz: float = 1.0, *, method: str = "exact",
                   n_jobs: int | None = None, **options) -> list:
    """Calibrate every chain class of ``classes`` (a list), in parallel.

    Parameters
    ----------
    classes : sequence of ChainPriorClass
    epsilon, lipschitz : float
    method : {"exact", "approx", "groupdp", "gk16"}
    n_jobs : int, optional
        Worker processes; default ``os.cpu_count()``.  ``1`` runs serially here.
    **options
        Passed to :class:`MQMExact` / :class:`MQMApprox` (e.g. ``per_node=False``).

    Returns
    -------
    list of CalibrationResult, in the order of ``classes``.

    Examples
    --------
    >>> from puffgm.chains import ChainPriorClass
    >>> grid = [ChainPriorClass.from_matrices([[p, 1 - p], [0.3, 0.7]], "any", 100) for p in (0.2, 0.5, 0.8)]
    >>> [round(r.sigma_max, 3) for r in calibrate_many(grid, 1.0, n_jobs=1)] == \\
    ...     [round(MQMExact(c).calibrate(1.0).sigma_max, 3) for c in grid]
    True
    """
    epsilon = check_positive_finite(epsilon, "epsilon", "calibrate_many")
    lipschitz = check_positive_finite(lipschitz, "lipschitz", "calibrate_many")
    if method not in _METHODS:
        raise ParameterError(f"The 'method' parameter of calibrate_many must be one of {_METHODS}. Got {method!r} instead.")
    classes = list(classes)
    if n_jobs is None:
        jobs = os.cpu_count() or 1
    else:
        jobs = check_positive_int(n_jobs, "n_jobs", "calibrate_many")
    jobs = max(1, min(jobs, len(classes)))
    if jobs == 1 or "fork" not in mp.get_all_start_methods():
        return [_one(method, cc, epsilon, lipschitz, options) for cc in classes]
    size = -(-len(classes) // jobs)
    parts = [(method, j, min(j + size, len(classes)), epsilon, lipschitz, options)
             for j in range(0, len(classes), size)]
    _SHARED[:] = classes
    try:
        with mp.get_context("fork").Pool(processes=jobs) as pool:
            chunks = pool.map(_chunk, parts)
    finally:
        _SHARED.clear()
    return [r for chunk in chunks for r in chunk]
