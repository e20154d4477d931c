"""Uniform parameter checks: one message template for every public function.

The template follows scikit-learn: "The 'epsilon' parameter of calibrate must
be a finite number > 0. Got -1 instead."
"""

from __future__ import annotations

import math
import numbers

from puffgm.exceptions import ParameterError

__all__ = ["check_positive_finite", "check_nonnegative_finite", "check_nonnegative_int", "check_positive_int",
           "check_time_limit"]


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_positive_finite(value, name: str, where: str) -> float:
    """Return ``float(value)`` if it is a finite real number > 0, else raise ParameterError."""
    if not _is_real(value) or not math.isfinite(float(value)) or float(value) <= 0:
        raise ParameterError(
            f"The '{name}' parameter of {where} must be a finite number > 0. Got {value!r} instead."
        )
    return float(value)


def check_nonnegative_finite(value, name: str, where: str) -> float:
    """Return ``float(value)`` if it is a finite real number >= 0, else raise ParameterError."""
    if not _is_real(value) or not math.isfinite(float(value)) or float(value) < 0:
        raise ParameterError(
            f"The '{name}' parameter of {where} must be a finite number >= 0. Got {value!r} instead."
        )
    return float(value)


def check_time_limit(value, where: str) -> float | None:
    """A time budget in seconds: None or 0 mean no limit (returned as None), else a finite number > 0.

    A negative, infinite or non-numeric budget raises ParameterError (one sentence naming 0
    as the way to lift the limit).
    """
    if value is None:
        return None
    if not _is_real(value) or not math.isfinite(float(value)) or float(value) < 0:
        raise ParameterError(
            f"The 'time_limit' parameter of {where} must be a finite number of seconds >= 0 (0: no limit). "
            f"Got {value!r} instead."
        )
    return float(value) or None


def check_nonnegative_int(value, name: str, where: str) -> int:
    """Return ``int(value)`` if it is an integer >= 0, else raise ParameterError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 0:
        raise ParameterError(
            f"The '{name}' parameter of {where} must be an integer >= 0. Got {value!r} instead."
        )
    return int(value)


def check_positive_int(value, name: str, where: str) -> int:
    """Return ``int(value)`` if it is an integer >= 1, else raise ParameterError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise ParameterError(
            f"The '{name}' parameter of {where} must be an integer >= 1. Got {value!r} instead."
        )
    return int(value)
