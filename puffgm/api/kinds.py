"""The registry of prior kinds: the one place a prior kind is registered.

A prior kind declares its calibration methods once, in its :class:`~puffgm.core.prior.PriorKind`
subclass (``methods``: each method and the options it takes).  Everything that lists methods
reads them from the kinds registered here: :func:`puffgm.calibrate_many` validates its
``method`` against :func:`calibration_methods`, and the ``puffgm`` command offers them as the
choices of ``--method`` (with the query-specific methods,
:data:`puffgm.core.prior.QUERY_METHODS`).  The built-in kinds are registered by their import
path and imported only when a list is first asked for, so ``puffgm --help`` imports none of them.
"""

from __future__ import annotations

import importlib

from puffgm.core.prior import PriorKind
from puffgm.exceptions import ParameterError

__all__ = ["register_kind", "unregister_kind", "prior_kinds", "calibration_methods"]

#: The registered kinds, in order: a PriorKind subclass or its ``"module:Class"`` import path.
_REGISTERED: list = [
    "puffgm.networks.kind:BayesianNetworkKind",
    "puffgm.chains.kind:MarkovChainKind",
    "puffgm.chains.kind:ChainBoxKind",
    "puffgm.gaussian.kind:LinearGaussianKind",
]


def _resolve(entry) -> type[PriorKind]:
    if isinstance(entry, str):
        module, _, name = entry.partition(":")
        entry = getattr(importlib.import_module(module), name)
    return entry


def register_kind(kind):
    """Register a prior kind (a :class:`~puffgm.core.prior.PriorKind` subclass or its ``"module:Class"`` path).

    Its methods then appear wherever methods are listed (``calibrate_many``, ``puffgm --method``).
    Registering a kind twice changes nothing.  Returns ``kind`` (usable as a class decorator).

    Raises
    ------
    ParameterError
        When ``kind`` is neither a PriorKind subclass nor an import path.
    """
    if not (isinstance(kind, str) or (isinstance(kind, type) and issubclass(kind, PriorKind))):
        raise ParameterError(f"register_kind takes a PriorKind subclass or its 'module:Class' path; got {kind!r}.")
    if kind not in _REGISTERED:
        _REGISTERED.append(kind)
    return kind


def unregister_kind(kind) -> None:
    """Remove a kind registered by :func:`register_kind` (as it was given); an unknown kind is ignored."""
    if kind in _REGISTERED:
        _REGISTERED.remove(kind)


def prior_kinds() -> tuple:
    """The registered PriorKind subclasses, in registration order (the built-in kinds imported here)."""
    return tuple(_resolve(e) for e in _REGISTERED)


def calibration_methods() -> tuple:
    """Every calibration method of a registered kind, each once, in registration order.

    Examples
    --------
    >>> calibration_methods()
    ('exact', 'approx', 'groupdp', 'gk16')
    """
    return tuple(dict.fromkeys(m for k in prior_kinds() for m in k.methods))
