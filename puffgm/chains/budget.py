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

from puffgm.exceptions import InferenceLimitError, PriorError
from puffgm.mechanisms.mqm_loop import MQMClock, format_seconds

__all__ = ["MEMORY_LIMIT", "MAX_LENGTH", "ChainClock", "check_chain_length", "check_memory", "format_seconds"]

#: The longest chain the calibrations take (their noise scales are floats: T must stay far inside their range).
MAX_LENGTH = 10**18

#: Bytes of working memory a chain computation may project before it starts (1 GiB).
MEMORY_LIMIT = 2**30
#: The time budget of a chain computation: the one clock of every calibration (:mod:`puffgm.mechanisms.mqm_loop`).
ChainClock = MQMClock


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


