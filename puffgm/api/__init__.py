"""The entry points that take any prior kind and dispatch on the prior interface.

:func:`as_prior` turns what the user gives into a :class:`~puffgm.core.prior.PriorKind`;
:func:`calibrate`, :func:`influence_curve`, :func:`translate` and
:func:`calibrate_many` call only that interface (see :mod:`puffgm.api.dispatch`).
"""

from puffgm.api.dispatch import (
    as_prior,
    calibrate,
    calibrate_query,
    calibrate_workload,
    influence_curve,
    kind_of,
    translate,
)
from puffgm.api.parallel import calibrate_many

__all__ = ["as_prior", "kind_of", "calibrate", "calibrate_query", "calibrate_workload", "influence_curve", "translate",
           "calibrate_many"]
