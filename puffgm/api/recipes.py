r"""How a calibration was made, so that a release on units of other chain lengths can calibrate each length.

A calibration is made for one prior class; for a Markov chain that class has one length T.  A
panel of traces (:mod:`puffgm.api.units`) may hold units of several lengths :math:`T' \le T`, and the
noise of each length comes from the same class, query and options at length T' (the prefix
X1..XT' of a time-homogeneous chain of length T is the chain of length T' with the same
(q, P)).  :func:`remember` keeps, for a calibration made in this process by
:func:`puffgm.calibrate`, :func:`puffgm.calibrate_query`, :func:`puffgm.calibrate_workload` or
``puffgm release``, the prior kind and a function that repeats the calibration on another kind;
:func:`recipe_of` finds it again.  The mark is the calibration's identity in this process (as
:func:`puffgm.core.release.issue` marks releases): a copy or an unpickled calibration has no
recipe, and a release on units of other lengths then says how to calibrate.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Recipe", "remember", "recipe_of"]

C = TypeVar("C")


@dataclass(frozen=True)
class Recipe:
    r"""The prior kind a calibration was made for and how to make it again on another kind.

    Attributes
    ----------
    kind : PriorKind
        The prior class (:func:`puffgm.api.as_prior`).
    remake : callable
        ``remake(kind)`` repeats the calibration (same query, method, :math:`\epsilon` and options) on ``kind``.
    """

    kind: Any
    remake: Callable[[Any], Any]

    @functools.cached_property
    def _by_length(self) -> dict:
        return {}

    def at_length(self, length: int):
        """The same calibration for the same chain class at length ``length`` (computed once per length).

        Raises
        ------
        ParameterError
            When the kind is not a finite class of Markov chains (only those have a length to change).
        """
        from puffgm.chains.kind import MarkovChainKind
        from puffgm.exceptions import ParameterError

        if not isinstance(self.kind, MarkovChainKind):
            raise ParameterError(f"Only a finite class of Markov chains can be calibrated at another length; "
                                 f"this calibration is for {self.kind.kind}.")
        cache = self._by_length
        if length not in cache:
            kind = MarkovChainKind(self.kind.prior_class.with_length(int(length)))
            cache[length] = remember(self.remake(kind), kind, self.remake)
        return cache[length]


#: id -> (weak reference of the calibration, its recipe).
_RECIPES: dict[int, tuple] = {}


def remember(calibration: C, kind: Any, remake: Callable[[Any], Any]) -> C:
    """Keep ``kind`` and ``remake`` as the recipe of ``calibration`` (made in this process); return it."""
    key = id(calibration)
    try:
        ref = weakref.ref(calibration, functools.partial(_forget, key))
    except TypeError:  # an object without weak references keeps no recipe
        return calibration
    _RECIPES[key] = (ref, Recipe(kind, remake))
    return calibration


def _forget(key: int, _ref) -> None:
    _RECIPES.pop(key, None)


def recipe_of(calibration) -> Recipe | None:
    """The recipe :func:`remember` kept for ``calibration``, or None (made by hand, copied or unpickled)."""
    held = _RECIPES.get(id(calibration))
    if held is None:
        return None
    ref, recipe = held
    return recipe if ref() is calibration else None
