r"""Time and memory budgets of the chain roads.

A chain's length :math:`T` is any integer :math:`\ge 1`, so every road that loops over the
nodes (or over a partial-sum axis that grows with :math:`T`) estimates its work before
it starts and refuses at once when the projection is over its budget:

* memory: the bytes a road would hold (per-node tables, conditional laws, powers
  of P) are projected from T, k and the number of secret pairs, and a
  projection above :data:`MEMORY_LIMIT` raises
  :class:`~puffgm.exceptions.InferenceLimitError` whatever the time limit;
* time: a projection from the same counts (with per-unit costs at the low end
  of what the loops cost, so that a refusal is never premature) above the time
  limit raises :class:`~puffgm.exceptions.TimeLimitError`; inside every loop
  over T a :class:`ChainClock` checks the deadline and, when the total work is
  known, projects the total from the work done so far.

Each message is one sentence naming the projected seconds (or bytes) and the
limit, as the network road's messages do (:mod:`puffgm.networks.calibration`).
"""

from __future__ import annotations

import math
import time

from puffgm.core.validation import check_time_limit
from puffgm.exceptions import InferenceLimitError, PriorError, TimeLimitError

__all__ = ["MEMORY_LIMIT", "MAX_LENGTH", "ChainClock", "check_chain_length", "check_memory", "format_seconds"]

#: The longest chain the calibrations take (their noise scales are floats: T must stay far inside their range).
MAX_LENGTH = 10**18

#: Bytes of working memory a chain computation may project before it starts (1 GiB).
MEMORY_LIMIT = 2**30
#: A projection this many times over the limit refuses at once (once it is informed).
_CLEAR_EXCESS = 4.0
_HOW = "(--time-limit SECONDS; 0: no limit)"


def format_seconds(s: float) -> str:
    """Seconds for a message: ``'12'``, ``'3.2e+05'``; ``'inf'`` stays ``'inf'``."""
    if not math.isfinite(s):
        return "inf"
    return f"{s:.0f}" if s < 1e5 else f"{s:.2g}"


def check_chain_length(T: int, where: str) -> int:
    """T if it is at most :data:`MAX_LENGTH`, else PriorError (one sentence, without converting T to a float)."""
    if T > MAX_LENGTH:
        raise PriorError(f"The chain length T of {where} has {len(str(T))} digits, above 10**18, the longest "
                         "chain puffgm calibrates.")
    return T


def check_memory(nbytes: float, what: str, advice: str) -> None:
    """Raise InferenceLimitError when ``what`` would hold more than :data:`MEMORY_LIMIT` bytes.

    Parameters
    ----------
    nbytes : float
        The projected working memory in bytes (may exceed any int64).
    what : str
        The computation, as the subject of the sentence ("MQMExact on chain 'chain' (T = 10)").
    advice : str
        What to change, ending the sentence.
    """
    if nbytes > MEMORY_LIMIT:
        raise InferenceLimitError(
            f"{what} would need about {nbytes / 2**30:.3g} GiB of memory, over the {MEMORY_LIMIT / 2**30:g} GiB "
            f"a chain computation may use; {advice}.")


class ChainClock:
    """The time budget of one chain computation: a deadline and projections of the work left.

    Parameters
    ----------
    time_limit : float or None
        Seconds (None or 0: no limit).
    what : str
        The computation, the subject of the refusal sentence.
    advice : str
        What to change ("use a shorter chain"), before the ``--time-limit`` hint.
    deadline : float, optional
        A ``time.monotonic()`` deadline given instead of ``time_limit`` (query laws).
    """

    def __init__(self, time_limit=None, what: str = "The computation", advice: str = "use a shorter chain", *,
                 deadline: float | None = None):
        self.start = time.monotonic()
        if deadline is not None:
            self.limit: float | None = max(deadline - self.start, 0.0)
        else:
            self.limit = check_time_limit(time_limit, "the chain calibration")
        self.deadline = None if self.limit is None else self.start + self.limit
        self.what, self.advice = what, advice

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def refuse(self, projected: float, detail: str = "") -> None:
        """Raise the TimeLimitError of a projected total of ``projected`` seconds."""
        elapsed = self.elapsed
        how_long = "about " + format_seconds(projected) if math.isfinite(projected) and projected > elapsed else \
            "more than " + format_seconds(elapsed)
        raise TimeLimitError(
            f"{self.what} would take {how_long} s{detail}, over the time limit of {self.limit:.3g} s; "
            f"{self.advice} {_HOW}.")

    def project(self, seconds: float, detail: str = "") -> None:
        """Refuse before the work starts when ``seconds`` (a projection from the counts) is over the limit."""
        if self.limit is not None and seconds > self.limit:
            self.refuse(seconds, detail)

    def check(self, done: float | None = None, total: float | None = None, detail: str = "") -> None:
        """Inside a loop: refuse past the deadline, or early when the work projected from ``done`` of ``total``
        units is clearly over the limit (after min(1 s, limit / 10) has passed)."""
        if self.limit is None:
            return
        elapsed = self.elapsed
        known = bool(done and total)
        projected = elapsed / done * total if known else math.inf  # type: ignore[operator]
        if elapsed > self.limit:
            self.refuse(projected, detail)
        if known and projected > _CLEAR_EXCESS * self.limit and elapsed > min(1.0, self.limit / 10):
            self.refuse(projected, detail)
