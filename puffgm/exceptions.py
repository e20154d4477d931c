"""The exception hierarchy of puffgm.

Every error puffgm raises on purpose derives from :class:`PuffgmError`, so a
pipeline can catch one class.  Errors about bad input also derive from
:class:`ValueError` (the convention of networkx and scikit-learn), and each
message is one sentence naming the offending object.
"""

__all__ = [
    "PuffgmError",
    "WorkerError",
    "ParameterError",
    "PriorError",
    "SecretError",
    "QuiltError",
    "BudgetError",
    "CompositionError",
    "NotApplicableError",
    "AuditError",
    "NumericalError",
    "InferenceLimitError",
    "TimeLimitError",
    "first_line",
    "one_line",
]


class PuffgmError(Exception):
    """Base class of every error raised by puffgm."""


class ParameterError(PuffgmError, ValueError):
    r"""A scalar parameter (:math:`\epsilon`, Lipschitz constant, bound, ...) is invalid."""


class PriorError(PuffgmError, ValueError):
    r"""A prior or prior class (:math:`\Theta`) is malformed or inconsistent."""


class SecretError(PuffgmError, ValueError):
    """A secret specification names unknown nodes or values."""


class QuiltError(PuffgmError, ValueError):
    """A Markov quilt is not a valid quilt for its node."""


class BudgetError(PuffgmError, ValueError):
    """A release would exceed the privacy budget of an accountant."""


class CompositionError(PuffgmError, ValueError):
    """A release cannot be composed by the accountant (no composition theorem applies)."""


class NotApplicableError(PuffgmError, ValueError):
    """A mechanism or bound does not apply to the given prior."""


class AuditError(PuffgmError, ValueError):
    """An exact audit cannot be carried out (for example, the database is too large)."""


class NumericalError(PuffgmError, ArithmeticError):
    """A probability that is positive falls below the floating-point range, so an exact
    result cannot be certified (raised instead of treating it as an impossible event)."""


class InferenceLimitError(PuffgmError, ValueError):
    """Exact inference would need a table larger than the stated limit (the network's
    treewidth is too large for the query); the message names the limit and the option to change."""


class TimeLimitError(PuffgmError, ValueError):
    """A calibration would run longer than its ``time_limit``; the message gives the projected
    time and the options to change."""


class WorkerError(PuffgmError, ValueError):
    """A calibration inside :func:`puffgm.calibrate_many` failed; the one-line message names the
    prior (its index in the list and its name) and the cause."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, stripped ('' when the message is empty)."""
    text = str(exc).strip()
    return text.splitlines()[0].strip() if text else ""


def one_line(exc: BaseException) -> str:
    """An exception as one line: a puffgm error's first line, or ``"Type: first line"`` for any other."""
    detail = first_line(exc)
    if isinstance(exc, PuffgmError):
        return detail or type(exc).__name__
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
