r"""The JSON chain spec read by ``puffgm calibrate CHAIN.json`` (a file, inline JSON text or a dict).

One chain::

    {"transition": [[0.9, 0.1], [0.4, 0.6]], "initial": "stationary" | "any" | [1, 0], "length": 100}

A finite family (:math:`\Theta` with several members)::

    {"transitions": [[[...]], [[...]]], "initials": ["any", [0.9, 0.1]], "length": 100}

``"initials"`` may be one value for every member; ``"initial"`` defaults to
``"stationary"``; an optional ``"states"`` list names the states.  Errors are
one sentence (:class:`~puffgm.exceptions.PriorError`).

An optional ``"backward"`` gives the backward transition matrix :math:`P^B` of the
temporal privacy leakage (``puffgm leakage``, :mod:`puffgm.chains.leakage`;
rows: the state at :math:`t`, columns: the state at :math:`t-1`): one :math:`k \times k` matrix beside
``"transition"``, or a list of one matrix per member beside ``"transitions"``.
It is validated like a transition matrix (:func:`backward_from_spec`).  The
calibrations and curves use the joint law of the chain (initial distribution
and forward matrix) and not :math:`P^B`; a class read from such a spec says so in its
``notes``.

An infinite box of binary chains (:class:`~puffgm.chains.ChainParameterBox`,
Song et al. section 5.2), p0 = P(0 -> 0) and p1 = P(1 -> 1) each in a range
strictly inside (0, 1); ``"initial"`` is ``"any"`` (default, as in the
paper) or ``"stationary"``::

    {"box": {"p0": [0.1, 0.9], "p1": [0.1, 0.9]}, "initial": "any", "length": 100}
"""

from __future__ import annotations

from collections.abc import Mapping

from puffgm.chains.priors import ChainPriorClass, check_transition_matrix
from puffgm.core.validation import did_you_mean, read_json_argument
from puffgm.exceptions import PriorError

__all__ = ["load_chain_spec", "chain_class_from_spec", "read_chain_spec", "backward_from_spec"]

_KEYS = {"transition", "transitions", "initial", "initials", "length", "states", "name", "description", "box",
         "backward"}
_BOX_KEYS = {"p0", "p1"}


def _box_from_spec(spec: dict, length: int, label: str):
    from puffgm.chains.box import ChainParameterBox

    for key in ("transition", "transitions", "initials", "backward"):
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
        raise PriorError(f"The {label} has unknown key(s) {unknown}{did_you_mean(unknown[0], sorted(_KEYS))}.")
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
        cc = ChainPriorClass.from_matrices(spec["transition"], spec.get("initial", "stationary"), length, states)
    else:
        trans = spec["transitions"]
        if not isinstance(trans, list) or not trans:
            raise PriorError(f"The 'transitions' of the {label} must be a non-empty list of matrices.")
        initials = spec.get("initials", spec.get("initial", "stationary"))
        if isinstance(initials, list) and initials and isinstance(initials[0], (list, str)):
            pass
        else:
            initials = [initials] * len(trans)
        cc = ChainPriorClass.from_family(trans, initials, length, states)
    if "backward" in spec:
        backward_from_spec(spec, cc, label)  # validated here, so every reader of the spec refuses a bad one
        note = ("the spec's 'backward' matrix is used only by the temporal privacy leakage (puffgm leakage); "
                "calibrations and curves use the initial distribution and the forward matrix")
        object.__setattr__(cc, "notes", cc.notes + (note,))
    return cc


def backward_from_spec(spec: dict, chain_class: ChainPriorClass, label: str = "chain spec"):
    """The validated ``"backward"`` matrices of a chain spec, one per member of ``chain_class``, or None.

    Beside ``"transition"`` the value is one k x k matrix; beside ``"transitions"`` a
    list of as many k x k matrices as there are members, in the same order.  Each
    is validated like a transition matrix
    (:func:`~puffgm.chains.priors.check_transition_matrix`).

    Returns
    -------
    tuple of read-only ndarray, or None
        None when the spec has no ``"backward"``.
    """
    if "backward" not in spec:
        return None
    raw = spec["backward"]
    n, k = len(chain_class.members), chain_class.k
    if "transitions" in spec:
        if not isinstance(raw, list) or len(raw) != n or not all(isinstance(m, list) for m in raw):
            raise PriorError(f"The 'backward' of the {label} must be a list of {n} matrices, one per member of "
                             "'transitions'.")
        mats = raw
    else:
        mats = [raw]
    out = []
    for j, matrix in enumerate(mats, start=1):
        what = f"'backward' matrix of the {label}" if len(mats) == 1 else f"'backward' matrix {j} of the {label}"
        checked, _ = check_transition_matrix(matrix, what, k)
        out.append(checked)
    return tuple(out)


def read_chain_spec(source) -> tuple:
    """(spec, label): a chain spec as a parsed JSON object and a label naming it in messages.

    Parameters
    ----------
    source : str, os.PathLike or dict
        The path of a JSON file, inline JSON text (``'{"transition": ..., "length": 5}'``)
        or the spec itself as a dict (:func:`puffgm.core.validation.read_json_argument`).

    Raises
    ------
    PriorError
        If the file does not exist or cannot be read, or the JSON is invalid.
    """
    if isinstance(source, Mapping):
        return dict(source), "chain spec"
    return read_json_argument(source, "chain spec", PriorError)


def load_chain_spec(source):
    """The :class:`ChainPriorClass` (or parameter box) of a chain spec file, inline JSON text or dict.

    Examples
    --------
    >>> load_chain_spec('{"transition": [[0.9, 0.1], [0.4, 0.6]], "length": 5}').length
    5
    """
    return chain_class_from_spec(*read_chain_spec(source))
