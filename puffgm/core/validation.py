"""Uniform parameter checks: one message template for every public function.

The template follows scikit-learn: "The 'epsilon' parameter of calibrate must
be a finite number > 0. Got -1 instead."
"""

from __future__ import annotations

import difflib
import json
import math
import numbers
import os
import sys
import warnings
from collections.abc import Iterable

from puffgm.exceptions import ParameterError, PriorError

__all__ = ["check_positive_finite", "check_nonnegative_finite", "check_nonnegative_int", "check_positive_int",
           "check_time_limit", "did_you_mean", "is_inline_json", "read_json_argument",
           "progress_enabled", "renamed", "refuse_unexpected", "deprecated_call", "dask_client", "saved_members"]


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
    r"""Return ``float(value)`` if it is a finite real number :math:`\ge 0`, else raise ParameterError."""
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


def _check_int_from(value, name: str, where: str, low: int) -> int:
    """``int(value)`` if it is an integer (not a bool) >= ``low``, else ParameterError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < low:
        raise ParameterError(
            f"The '{name}' parameter of {where} must be an integer >= {low}. Got {value!r} instead."
        )
    return int(value)


def check_nonnegative_int(value, name: str, where: str) -> int:
    r"""Return ``int(value)`` if it is an integer :math:`\ge 0`, else raise ParameterError."""
    return _check_int_from(value, name, where, 0)


def check_positive_int(value, name: str, where: str) -> int:
    r"""Return ``int(value)`` if it is an integer :math:`\ge 1`, else raise ParameterError."""
    return _check_int_from(value, name, where, 1)


def renamed(kwargs: dict, old: str, new: str, where: str, value=None, *, stacklevel: int = 3):
    """The value of parameter ``new``, also when given by its deprecated name ``old``.

    Every renamed parameter of the public API goes through here: ``old`` is popped
    from ``kwargs`` with a :class:`DeprecationWarning` naming ``new``; giving both is
    refused in one sentence.

    Parameters
    ----------
    kwargs : dict
        The function's extra keyword arguments (``old`` is removed from it).
    old, new : str
        The deprecated and the current name of the parameter.
    where : str
        The function, for the messages (``"puffgm.translate"``).
    value : object, optional
        The value given as ``new`` (None when not given).
    stacklevel : int
        As :func:`warnings.warn`, counted from here: 3 is the caller of the function that calls this.

    Returns
    -------
    object
        ``value``, or the value given as ``old``.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     renamed({"epsilon_puffer": 2.0}, "epsilon_puffer", "epsilon", "dp_epsilon")
    2.0
    """
    if old not in kwargs:
        return value
    if value is not None:
        raise ParameterError(f"{where} was given both '{new}' and its deprecated name '{old}'; give '{new}' only.")
    warnings.warn(f"The '{old}' parameter of {where} is deprecated; use '{new}'.", DeprecationWarning,
                  stacklevel=stacklevel)
    return kwargs.pop(old)


def refuse_unexpected(kwargs: dict, where: str) -> None:
    """Raise TypeError, as Python does, for a keyword argument left after the deprecated names are taken."""
    if kwargs:
        raise TypeError(f"{where}() got an unexpected keyword argument {sorted(kwargs)[0]!r}")


def deprecated_call(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn (DeprecationWarning) that the call ``old`` is deprecated and ``new`` replaces it.

    ``stacklevel`` is counted as in :func:`warnings.warn` from here: 3 is the caller of the
    function that calls this.
    """
    warnings.warn(f"{old} is deprecated; use {new}.", DeprecationWarning, stacklevel=stacklevel)


def did_you_mean(word, choices: Iterable) -> str:
    """A hint for a misspelt name: ``" (did you mean 'x'?)"``, or ``""`` when nothing is close.

    The closest of ``choices`` by :func:`difflib.get_close_matches` (ratio at least 0.6),
    compared as strings; every message that refuses an unknown name (a bundled network,
    a node, a state, a JSON key) appends it to its one sentence.

    Parameters
    ----------
    word : object
        The name given.
    choices : iterable
        The names that exist.

    Returns
    -------
    str
        The hint, to append to an error message (empty when no name is close).

    Examples
    --------
    >>> did_you_mean("alram", ["asia", "alarm", "child"])
    " (did you mean 'alarm'?)"
    >>> did_you_mean("zzz", ["asia", "alarm"])
    ''
    """
    names = {str(c): c for c in choices}
    match = difflib.get_close_matches(str(word), list(names), n=1)
    return f" (did you mean {names[match[0]]!r}?)" if match else ""


def is_inline_json(value) -> bool:
    """True if ``value`` is JSON text of an object or a list (its first non-blank character is ``{`` or ``[``)."""
    return isinstance(value, str) and value.lstrip()[:1] in ("{", "[")


def read_json_argument(value, what: str, error: type[Exception] = ParameterError) -> tuple:
    """(parsed JSON, label) of a JSON argument given as inline text, a file path or ``@path``.

    Every JSON argument of the ``puffgm`` command (a chain spec, a query, a policy,
    data) is read the same way: text whose first non-blank character is ``{`` or
    ``[`` is parsed as it is; anything else is the path of a JSON file, with an
    optional leading ``@``.

    Parameters
    ----------
    value : str or os.PathLike
        The argument as given.
    what : str
        What the argument is, for the label and the messages (``"chain spec"``).
    error : type of Exception
        The exception raised on a missing file or invalid JSON (one sentence).

    Returns
    -------
    tuple
        The parsed JSON value, and a label naming the argument in messages:
        ``"inline chain spec"`` or ``"chain spec 'walk.json'"``.

    Examples
    --------
    >>> read_json_argument('{"length": 3}', "chain spec")
    ({'length': 3}, 'inline chain spec')
    """
    text = os.fspath(value)
    if is_inline_json(text):
        try:
            return json.loads(text), f"inline {what}"
        except json.JSONDecodeError as exc:
            raise error(f"The inline {what} is not valid JSON ({exc.msg} at line {exc.lineno}, "
                        f"column {exc.colno}).") from None
    path = text[1:] if isinstance(text, str) and text.startswith("@") else text
    try:
        with open(path, encoding="utf-8") as fh:
            parsed = json.load(fh)
    except FileNotFoundError:
        raise error(f"The {what} file {path!r} does not exist (give a JSON file or inline JSON text).") from None
    except json.JSONDecodeError as exc:
        raise error(f"The {what} file {path!r} is not valid JSON ({exc.msg} at line {exc.lineno}).") from None
    except OSError as exc:
        raise error(f"The {what} file {path!r} cannot be read ({exc.strerror}).") from None
    return parsed, f"{what} {os.path.basename(path)!r}"


def progress_enabled(progress: bool | None = None, stream=None) -> bool:
    """Whether to draw a progress bar: ``progress`` when given, else whether ``stream`` is a terminal.

    Every tqdm bar of puffgm asks this first, so output redirected to a file or a
    pipe gets no bar unless the caller passes ``progress=True``.

    Parameters
    ----------
    progress : bool or None
        True or False to force the bar on or off; None (default) to decide by the stream.
    stream : file-like, optional
        Where the bar is drawn (default ``sys.stderr``).

    Returns
    -------
    bool
        True when a bar should be drawn.
    """
    if progress is not None:
        return bool(progress)
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (ValueError, OSError):  # a closed or detached stream
        return False


def dask_client(client, where: str):
    """(Client, owned): a ``distributed.Client`` as given, or a new one for a scheduler address.

    ``owned`` is True when the client was opened here (the caller closes it).  Anything else
    than an object with ``submit`` and ``gather`` or a string is refused with a ParameterError
    naming ``where``.
    """
    if isinstance(client, str):
        try:
            from distributed import Client
        except ImportError:
            raise ParameterError(
                f"client= of {where} needs Dask's distributed package: install it with pip install 'puffgm[cluster]'."
            ) from None
        return Client(client), True
    if not (hasattr(client, "submit") and hasattr(client, "gather")):
        raise ParameterError(
            f"The 'client' parameter of {where} must be a distributed.Client or a scheduler address "
            f"'tcp://host:8786'; got {type(client).__name__}."
        )
    return client, False


def saved_members(data: dict, label: str) -> list:
    """The ``"members"`` of a saved prior (:mod:`puffgm.api.persist`): a non-empty list of objects, or one sentence."""
    members = data["members"]
    if not isinstance(members, list) or not members or not all(isinstance(m, dict) for m in members):
        raise PriorError(f"The 'members' of {label} must be a non-empty list of objects.")
    return members
