r"""Canonical tie-breaking: which witness a maximum or minimum reports.

A curve point, a worst node or an audit's worst pair reports two things: the
VALUE (the true maximum or minimum, as computed) and a WITNESS (which candidate
attains it).  Candidates whose values agree mathematically often differ in the
last bits of their floating-point values, and those bits depend on the BLAS
build and on the order of summation.  A witness chosen by the last bit is
therefore not reproducible.

Here two values tie when they are within a relative ``TIE_RTOL`` of the best,
with an absolute floor ``TIE_ATOL`` for values near 0:

$$
\mathrm{tie}(v, b) \iff |v - b| \le \mathtt{TIE\_RTOL} \cdot |b| + \mathtt{TIE\_ATOL} \quad (b \text{ the best value})
$$

(infinite values tie only with an equal infinity).  Among the candidates that
tie with the best, the witness is the FIRST in a canonical order that the
caller documents and offers the candidates in (e.g. the quilt with the fewest
nearby nodes, then the quilt's nodes in node order, lexicographically).  The
reported value stays the exact best, so a tie-break never loosens a bound.

Two forms: :func:`canonical_argmax` / :func:`canonical_argmin` on an array in
canonical order, and :class:`RunningBest` for a stream of candidates offered in
canonical order (it keeps only the few candidates that can still win).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from puffgm.exceptions import ParameterError

__all__ = ["TIE_RTOL", "TIE_ATOL", "ties", "canonical_argmax", "canonical_argmin", "RunningBest"]

#: Relative tolerance within which two values count as a tie for the choice of a witness.
TIE_RTOL = 1e-9
#: Absolute floor of the tie tolerance, for values near 0.
TIE_ATOL = 1e-12


def _slack(best: float) -> float:
    return TIE_RTOL * abs(best) + TIE_ATOL


def ties(value: float, best: float) -> bool:
    """True when ``value`` is within the tie tolerance of ``best`` (equal infinities tie).

    Examples
    --------
    >>> ties(0.5603931093947339, 0.560393109394734), ties(1.0, 1.0 + 1e-6)
    (True, False)
    """
    value, best = float(value), float(best)
    if math.isnan(value) or math.isnan(best):
        return False
    if not math.isfinite(best) or not math.isfinite(value):
        return value == best
    return abs(value - best) <= _slack(best)


def _canonical_arg(values, sign: float) -> int:
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0:
        raise ParameterError("A canonical argmax or argmin needs at least one value.")
    if np.isnan(v).any():
        raise ParameterError("A canonical argmax or argmin got a NaN value.")
    best = float(v.max() if sign > 0 else v.min())
    if not math.isfinite(best):
        return int(np.flatnonzero(v == best)[0])
    with np.errstate(invalid="ignore"):
        close = np.abs(v - best) <= _slack(best)
    return int(np.flatnonzero(close)[0])


def canonical_argmax(values) -> int:
    """Index of the first value (in the given order) that ties with the maximum.

    ``values[canonical_argmax(values)]`` may be below the maximum by the tie
    tolerance: report ``max(values)`` as the value and this index as the witness.

    Examples
    --------
    >>> canonical_argmax([1.0, 3.0 - 1e-15, 3.0, 2.0])
    1
    """
    return _canonical_arg(values, 1.0)


def canonical_argmin(values) -> int:
    """Index of the first value (in the given order) that ties with the minimum.

    Examples
    --------
    >>> canonical_argmin([2.0, 1.0 + 1e-15, 1.0])
    1
    """
    return _canonical_arg(values, -1.0)


class RunningBest:
    """The best of candidates offered in canonical order, with the canonical witness.

    ``value`` is the exact maximum (``kind="max"``) or minimum (``kind="min"``) of
    every value offered; ``witness`` is the first offered candidate that ties with
    it.  A candidate later in the order and no better than an earlier one can never
    be the witness, so only a short increasing run of candidates is kept.

    Parameters
    ----------
    kind : {"max", "min"}

    Examples
    --------
    >>> r = RunningBest("max")
    >>> for v, w in [(1.0, "a"), (2.0 - 1e-15, "b"), (2.0, "c"), (0.5, "d")]:
    ...     r.offer(v, w)
    >>> r.value, r.witness
    (2.0, 'b')
    """

    def __init__(self, kind: str = "max"):
        if kind not in ("max", "min"):
            raise ParameterError(f"The 'kind' parameter of RunningBest must be 'max' or 'min'. Got {kind!r} instead.")
        self._sign = 1.0 if kind == "max" else -1.0
        self.value = -math.inf * self._sign
        self._kept: list[tuple[float, Any]] = []  # strictly better along the order, each tying with value

    def offer(self, value, witness) -> None:
        """Offer one candidate; candidates must come in the canonical order."""
        value = float(value)
        if math.isnan(value):
            raise ParameterError(f"RunningBest was offered a NaN value (witness {witness!r}).")
        s = self._sign
        if self._kept and s * value <= s * self._kept[-1][0]:
            return  # an earlier candidate is at least as good
        if s * value > s * self.value:
            self.value = value
            self._kept = [(v, w) for v, w in self._kept if ties(v, value)]
        if ties(value, self.value):
            self._kept.append((value, witness))

    @property
    def witness(self):
        """The first offered candidate that ties with the best (None before any offer)."""
        return self._kept[0][1] if self._kept else None

    @property
    def empty(self) -> bool:
        """True before the first offer."""
        return not self._kept
