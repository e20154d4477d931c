"""The base of every release record: what was released, under which guarantee, for whom.

Every mechanism of puffgm returns an immutable record derived from
:class:`Release` (the Markov Quilt Mechanism's Laplace release, the DP-based
Pufferfish mechanisms of Bai et al., Blowfish releases, the Wasserstein
mechanism, releases under continuous secrets).  The base names the five facts
an auditor asks for -- ``value``, ``epsilon``, ``mechanism``, ``prior`` (the
prior class or policy the guarantee holds for) and ``theorem`` -- and gives every
record the same ``to_dict()`` and ``explain()``.  The accountant
(:class:`puffgm.accounting.PrivacyAccountant`) composes releases by their
``composition`` rule.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar, Mapping

import numpy as np

__all__ = ["Release", "jsonable"]


def jsonable(x: Any) -> Any:
    """``x`` as plain JSON data: arrays and tuples as lists, sets sorted, non-finite floats as None."""
    if isinstance(x, (bool, str)) or x is None:
        return x
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else None
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, Mapping):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (set, frozenset)):
        return [jsonable(v) for v in sorted(x, key=repr)]
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    return str(x)


class Release:
    """Base class of every release record (a frozen dataclass in each subclass).

    Subclasses provide the fields ``value``, ``mechanism``, ``theorem``, ``secure``,
    ``noise`` and ``details`` and an ``epsilon`` (field or property), and implement
    :attr:`prior` and :meth:`explain`.

    Attributes
    ----------
    composition : str
        How the accountant composes this release: ``"markov-quilt"`` (Song et al.
        Theorem 4.4), ``"curve"`` (Bai et al. Theorem 7), ``"blowfish"`` (He et al.
        Theorems 4.1 and 4.2) or ``"none"`` (no composition theorem covers it).
    """

    composition: ClassVar[str] = "none"

    @property
    def prior(self) -> str:
        """The prior class (or policy) the guarantee holds for, as a short description."""
        raise NotImplementedError

    def explain(self) -> str:
        """One line: mechanism, privacy parameter, noise."""
        raise NotImplementedError

    def to_dict(self) -> dict:
        """JSON-ready dict: ``kind``, ``value``, ``epsilon``, ``mechanism``, ``prior``, ``theorem``, then the rest."""
        head = {"kind": type(self).__name__, "value": jsonable(self.value), "epsilon": jsonable(self.epsilon),
                "mechanism": self.mechanism, "prior": self.prior, "theorem": self.theorem}
        rest = {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self) if f.name not in head}
        return head | rest

    def __str__(self) -> str:
        return self.explain()
