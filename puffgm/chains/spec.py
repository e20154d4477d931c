"""The JSON chain spec read by ``puffgm calibrate CHAIN.json``.

One chain::

    {"transition": [[0.9, 0.1], [0.4, 0.6]], "initial": "stationary" | "any" | [1, 0], "length": 100}

A finite family (Theta with several members)::

    {"transitions": [[[...]], [[...]]], "initials": ["any", [0.9, 0.1]], "length": 100}

``"initials"`` may be one value for every member; ``"initial"`` defaults to
``"stationary"``; an optional ``"states"`` list names the states.  Errors are
one sentence (:class:`~puffgm.exceptions.PriorError`).

An infinite box of binary chains (:class:`~puffgm.chains.ChainParameterBox`,
Song et al. section 5.2), p0 = P(0 -> 0) and p1 = P(1 -> 1) each in a range
strictly inside (0, 1); ``"initial"`` is ``"any"`` (default, as in the
paper) or ``"stationary"``::

    {"box": {"p0": [0.1, 0.9], "p1": [0.1, 0.9]}, "initial": "any", "length": 100}
"""

from __future__ import annotations

import json
import os

from puffgm.exceptions import PriorError
from puffgm.chains.priors import ChainPriorClass

__all__ = ["load_chain_spec", "chain_class_from_spec"]

_KEYS = {"transition", "transitions", "initial", "initials", "length", "states", "name", "description", "box"}
_BOX_KEYS = {"p0", "p1"}


def _box_from_spec(spec: dict, length: int, label: str):
    from puffgm.chains.box import ChainParameterBox

    for key in ("transition", "transitions", "initials"):
        if key in spec:
            raise PriorError(f"The {label} has a 'box', so it cannot also have {key!r}.")
    box = spec["box"]
    if not isinstance(box, dict):
        raise PriorError(f"The 'box' of the {label} must be an object {{\"p0\": [low, high], \"p1\": [low, high]}}.")
    if set(box) != _BOX_KEYS:
        raise PriorError(
            f"The 'box' of the {label} must have exactly the keys 'p0' and 'p1'. Got {sorted(box)} instead."
        )
    for key in ("p0", "p1"):
        if not isinstance(box[key], list) or len(box[key]) != 2:
            raise PriorError(f"The 'box' {key!r} range of the {label} must be a list [low, high]. Got {box[key]!r}.")
    initial = spec.get("initial", "any")
    return ChainParameterBox(box["p0"], box["p1"], initial=initial, length=length, states=spec.get("states"))


def chain_class_from_spec(spec: dict, label: str = "chain spec"):
    """Build a :class:`ChainPriorClass` (or a :class:`~puffgm.chains.ChainParameterBox`) from a parsed chain spec."""
    if not isinstance(spec, dict):
        raise PriorError(f"The {label} must be a JSON object.")
    unknown = sorted(set(spec) - _KEYS)
    if unknown:
        raise PriorError(f"The {label} has unknown key(s) {unknown}.")
    if "length" not in spec:
        raise PriorError(f"The {label} has no 'length' (the chain length T).")
    length = spec["length"]
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise PriorError(f"The 'length' of the {label} must be an integer >= 1. Got {length!r} instead.")
    if "box" in spec:
        return _box_from_spec(spec, length, label)
    if ("transition" in spec) == ("transitions" in spec):
        raise PriorError(f"The {label} must have exactly one of 'transition', 'transitions' or 'box'.")
    if "initial" in spec and "initials" in spec:
        raise PriorError(f"The {label} must have at most one of 'initial' or 'initials'.")
    states = spec.get("states")
    if "transition" in spec:
        if "initials" in spec:
            raise PriorError(f"The {label} has one 'transition', so use 'initial', not 'initials'.")
        return ChainPriorClass.from_matrices(spec["transition"], spec.get("initial", "stationary"), length, states)
    trans = spec["transitions"]
    if not isinstance(trans, list) or not trans:
        raise PriorError(f"The 'transitions' of the {label} must be a non-empty list of matrices.")
    initials = spec.get("initials", spec.get("initial", "stationary"))
    if isinstance(initials, list) and initials and isinstance(initials[0], (list, str)):
        pass
    else:
        initials = [initials] * len(trans)
    return ChainPriorClass.from_family(trans, initials, length, states)


def load_chain_spec(path):
    """Read a chain spec JSON file and return its :class:`ChainPriorClass` (or parameter box)."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as fh:
            spec = json.load(fh)
    except FileNotFoundError:
        raise PriorError(f"Chain spec file {path!r} does not exist.") from None
    except json.JSONDecodeError as e:
        raise PriorError(f"Chain spec file {path!r} is not valid JSON ({e.msg} at line {e.lineno}).") from None
    except OSError as e:
        raise PriorError(f"Chain spec file {path!r} cannot be read ({e.strerror}).") from None
    return chain_class_from_spec(spec, f"chain spec {os.path.basename(path)!r}")
