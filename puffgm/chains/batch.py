"""Calibrating many chain classes at once (parameter grids, sweeps over Theta).

Each class is calibrated independently, so a grid is embarrassingly parallel.
:func:`calibrate_many` is the chain-only face of :func:`puffgm.calibrate_many`
(:mod:`puffgm.api.parallel`): contiguous chunks of the grid run in joblib worker
processes, or on a Dask cluster with ``client=``, and the results come back in
input order, exactly those of calling the method on each class alone.
"""

from __future__ import annotations

from puffgm.exceptions import ParameterError

__all__ = ["calibrate_many"]


def calibrate_many(classes, epsilon: float, lipschitz: float = 1.0, *, method: str = "exact",
                   n_jobs: int | None = None, client=None, **options) -> list:
    """Calibrate every chain class of ``classes`` (a list), in parallel.

    Parameters
    ----------
    classes : sequence of ChainPriorClass
    epsilon, lipschitz : float
    method : {"exact", "approx", "groupdp", "gk16"}
    n_jobs : int, optional
        Local worker processes (joblib); default every core.  ``1`` runs serially here.
    client : distributed.Client or str, optional
        Run on a Dask cluster instead (see :func:`puffgm.api.parallel.calibrate_many`).
    **options
        Passed to :class:`MQMExact` / :class:`MQMApprox` (e.g. ``per_node=False``).

    Returns
    -------
    list of CalibrationResult, in the order of ``classes``.

    Examples
    --------
    >>> from puffgm.chains import ChainPriorClass, MQMExact
    >>> grid = [ChainPriorClass.from_matrices([[p, 1 - p], [0.3, 0.7]], "any", 100) for p in (0.2, 0.5, 0.8)]
    >>> [round(r.sigma_max, 3) for r in calibrate_many(grid, 1.0, n_jobs=1)] == \\
    ...     [round(MQMExact(c).calibrate(epsilon=1.0).sigma_max, 3) for c in grid]
    True
    """
    from puffgm.api.parallel import _is_chain, calibrate_many as _many

    classes = list(classes) if not isinstance(classes, (str, bytes)) else classes
    if isinstance(classes, list):
        for j, c in enumerate(classes):
            if not _is_chain(c):
                raise ParameterError(
                    f"puffgm.chains.calibrate_many takes chain classes; item {j} is a {type(c).__name__} "
                    "(use puffgm.calibrate_many for networks)."
                )
    return _many(classes, epsilon, lipschitz, method=method, n_jobs=n_jobs, client=client, **options)
