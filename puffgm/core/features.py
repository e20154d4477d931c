r"""Opt-in features: a hand-made release is accepted by the accountant only when the user vouches for it.

The accountant (:class:`puffgm.accounting.PrivacyAccountant`) charges and records releases
that puffgm's own release functions make: each builds the record of its release (the
privacy parameter and the composition facts come from its calibration), charges it, and
draws the noise itself.  The building block they share,
:func:`puffgm.core.release.make_release`, and the accountant's :meth:`charge` and
:meth:`record` take a record and a drawing function from their caller; called from
outside puffgm they would let any code declare any privacy parameter for any value (a
release drawn at :math:`\epsilon = 1` recorded at 0.001, or an exact answer recorded as a noisy one).
So, as OpenDP does for measurements built by hand (``dp.enable_features("honest-but-curious")``),
they refuse callers outside puffgm unless the user turns on the feature
``"honest-but-curious"`` and so states that the records they hand in are what they claim.

>>> from puffgm.core.features import enable_features, disable_features, enabled
>>> enabled("honest-but-curious")
False
>>> enable_features("honest-but-curious"); enabled("honest-but-curious")
True
>>> disable_features("honest-but-curious")
"""

from __future__ import annotations

import inspect
import threading

from puffgm.exceptions import CompositionError, ParameterError

__all__ = ["FEATURES", "enable_features", "disable_features", "enabled", "require_puffgm_caller"]

#: The features that can be enabled, with what each one allows.
FEATURES = {"honest-but-curious": "hand-made release records charged and recorded by the accountant "
                                  "(make_release, PrivacyAccountant.charge / record called from outside puffgm)"}

_ENABLED: set[str] = set()
_LOCK = threading.Lock()


def _checked(names) -> tuple:
    unknown = [n for n in names if n not in FEATURES]
    if unknown:
        raise ParameterError(f"Unknown feature(s) {unknown}; puffgm's features are {sorted(FEATURES)}.")
    return tuple(names)


def enable_features(*names: str) -> None:
    """Turn on the named features (see :data:`FEATURES`) for this process."""
    with _LOCK:
        _ENABLED.update(_checked(names))


def disable_features(*names: str) -> None:
    """Turn off the named features."""
    with _LOCK:
        _ENABLED.difference_update(_checked(names))


def enabled(name: str) -> bool:
    """Whether the feature ``name`` is on."""
    return name in _ENABLED


def require_puffgm_caller(what: str, depth: int = 2) -> None:
    """Refuse a call of ``what`` from outside puffgm unless ``"honest-but-curious"`` is enabled.

    Parameters
    ----------
    what : str
        The function refused, named in the message.
    depth : int
        How many frames up the caller to judge is (2: the caller of the function that calls this).

    Raises
    ------
    CompositionError
        One sentence saying why, and how to vouch for a hand-made release.
    """
    if "honest-but-curious" in _ENABLED:
        return
    frame = inspect.currentframe()  # this function's frame; ``depth`` frames up is the caller to judge
    for _ in range(depth):
        frame = frame.f_back if frame is not None else None
    module = frame.f_globals.get("__name__", "") if frame is not None else ""
    del frame  # no reference cycle through the frames (the inspect documentation's advice)
    if module == "puffgm" or module.startswith("puffgm."):
        return
    raise CompositionError(
        f"{what} takes release records only from puffgm's release functions (pass accountant= to them); a "
        "record built by hand could claim any privacy parameter, so it is refused unless you vouch for it with "
        "puffgm.core.features.enable_features('honest-but-curious').")
