"""State names: their natural order, and which state a value from data or a query stands for.

A node's states are strings (``str`` of the values the data held).  Two rules make them
behave as a reader expects:

* **Natural order** (:func:`natural_order`).  States that are all numbers sort by their
  value (months ``1, 2, ..., 12``, not ``1, 10, 11, 12, 2``); states that are all
  intervals -- ``"(8, 15.5]"``, ``"[0, 1)"``, pandas ``Interval`` objects, the labels of
  ``pandas.cut`` and ``pandas.qcut`` -- sort by their left edge, then their right edge;
  any other mix sorts numbers first, then intervals, then the other names as strings.
  The order is total and depends on the values alone, so it is the same in every process.
* **Matching** (:func:`match_state`).  A value stands for the state whose name it is:
  ``str(value)`` equal to a name, or a number equal to a numeric name (``3``, ``3.0``
  and the CSV text ``"3.0"`` all stand for the state ``"3"``).  Where the state names
  are not numbers (``"yes"``, ``"no"``), an integer may still name a state by its
  position (``0`` is the first); where they are numbers, a number that is not one of
  them is refused -- it is never read as a position, since ``0`` on a node with states
  ``1..5`` is a typo or a different coding, not the first state.
"""

from __future__ import annotations

import math
import numbers
import re

import numpy as np

from puffgm.core.validation import did_you_mean
from puffgm.exceptions import ParameterError

__all__ = ["natural_order", "number_of", "interval_of", "state_label", "numeric_states", "match_state"]

_INTERVAL = re.compile(r"^\s*([(\[])\s*([^,\s]+)\s*,\s*([^,\s]+)\s*([)\]])\s*$")


def number_of(value) -> float | None:
    """The finite number a state value or name stands for (``3``, ``3.0``, ``"3.0"``, ``" 3 "``), else None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Real):
        v = float(value)
    elif isinstance(value, str):
        try:
            v = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return v if math.isfinite(v) else None


def interval_of(value) -> tuple | None:
    """(left, right) of an interval state: a pandas ``Interval`` or a name such as ``"(8, 15.5]"``; else None."""
    left, right = getattr(value, "left", None), getattr(value, "right", None)
    if left is not None and right is not None and hasattr(value, "closed"):
        lo, hi = number_of(left), number_of(right)
        return (lo, hi) if lo is not None and hi is not None else None
    if not isinstance(value, str):
        return None
    m = _INTERVAL.match(value)
    if not m:
        return None
    lo, hi = number_of(m.group(2)), number_of(m.group(3))
    return (lo, hi) if lo is not None and hi is not None else None


def state_label(value) -> str:
    """The state name of a value: ``str`` of it, an integral float as an int (``3.0`` -> ``"3"``)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def _key(value) -> tuple:
    n = number_of(value)
    if n is not None:
        return (0, n, 0.0, state_label(value))
    iv = interval_of(value)
    if iv is not None:
        lo, hi = iv
        return (1, lo, hi, str(value))
    return (2, 0.0, 0.0, str(value))


def natural_order(values) -> list:
    """The distinct ``values`` in their natural order (module docstring); values are kept as given.

    Examples
    --------
    >>> natural_order(["10", "2", "1"])
    ['1', '2', '10']
    >>> natural_order(["(15.5, 23]", "(0.478, 8]", "(8, 15.5]"])
    ['(0.478, 8]', '(8, 15.5]', '(15.5, 23]']
    >>> natural_order(["no", "yes", "maybe"])
    ['maybe', 'no', 'yes']
    """
    seen: dict = {}
    for v in values:
        seen.setdefault(v, None)
    return sorted(seen, key=_key)


def numeric_states(states) -> bool:
    """True when every state name is a number (then integers are never read as positions)."""
    return bool(states) and all(number_of(s) is not None for s in states)


def match_state(value, states, node: str, error=ParameterError, *, positions: bool = True) -> str:
    """The name of the state of ``node`` that ``value`` stands for (module docstring), or one-sentence ``error``.

    Parameters
    ----------
    value : object
        A state name, a number (``3``, ``3.0``, ``"3.0"``), or, at a node whose state names are
        not numbers, an integer position (0 is the first state).
    states : sequence of str
        The node's state names, in order.
    node : str
        The node, for the message.
    error : type
        The exception raised when ``value`` is no state of the node.
    positions : bool
        Whether an integer may name a state by its position at a node whose state names are
        not numbers (False: only names and numbers equal to numeric names).

    Examples
    --------
    >>> match_state("3.0", ("1", "2", "3"), "rate")
    '3'
    >>> match_state(0, ("yes", "no"), "rain")
    'yes'
    """
    states = tuple(str(s) for s in states)
    if isinstance(value, np.generic):
        value = value.item()
    name = state_label(value)
    if name in states:
        return name
    n = number_of(value)
    numeric = numeric_states(states)
    if n is not None and numeric:
        for s in states:
            if number_of(s) == n:
                return s
    elif (positions and isinstance(value, numbers.Integral) and not isinstance(value, bool) and not numeric
          and 0 <= int(value) < len(states)):
        return states[int(value)]
    raise error(f"Node {node!r} has no state {value!r}{did_you_mean(value, states)}; its states are "
                f"{', '.join(states)}.")
