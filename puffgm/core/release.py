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
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

__all__ = ["Release", "jsonable"]


def jsonable(x: Any) -> Any:
    """``x`` as plain JSON data.

    Arrays and tuples become lists, sets sorted lists, mappings dicts with string
    keys, non-finite floats ``None``, objects with a ``to_dict()`` method (a
    calibration inside a release) their dict; anything else its ``str``.
    """
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
        return [jsonable(v) for v in sorted(x, key=str)]
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if callable(getattr(x, "to_dict", None)):
        return jsonable(x.to_dict())
    return str(x)


class Release:
    """Base class of every release record (a frozen dataclass in each subclass).

    Subclasses provide ``value``, ``epsilon``, ``mechanism``, ``theorem`` and
    ``secure`` (fields or properties), and implement :attr:`prior` and
    :meth:`explain`.

    Attributes
    ----------
    composition : str
        How the accountant composes this release, and the attributes it reads:

        * ``"markov-quilt"`` (Song et al. Theorem 4.4): ``quilt_key``;
        * ``"curve"`` (Bai et al. Theorem 7): ``epsilon_puffer``, ``epsilon_dp``,
          the curve point ``a``, ``b`` and ``curve_key``;
        * ``"blowfish"`` (He et al. Theorems 4.1 and 4.2): ``policy_key``,
          ``subset`` and ``constrained``;
        * ``"none"``: no composition theorem covers the release; the accountant
          refuses it.
    withheld : tuple of str
        Fields :meth:`to_dict` leaves out: the exact, unprotected answer, which
        must not travel with the release.
    """

    composition: ClassVar[str] = "none"
    withheld: ClassVar[tuple] = ()

    @property
    def prior(self) -> str:
        """The prior class (or policy) the guarantee holds for, as a short description."""
        raise NotImplementedError

    def explain(self) -> str:
        """One line: mechanism, privacy parameter, noise."""
        raise NotImplementedError

    def to_dict(self) -> dict:
        """JSON-ready dict: ``kind``, ``value``, ``epsilon``, ``mechanism``, ``prior``, ``theorem``, then the rest.

        The rest is every other dataclass field except those named in :attr:`withheld`;
        ``json.dumps(release.to_dict(), allow_nan=False)`` always works.
        """
        rec: Any = self  # a dataclass subclass providing the fields named in the class docstring
        head = {"kind": type(self).__name__, "value": jsonable(rec.value), "epsilon": jsonable(rec.epsilon),
                "mechanism": rec.mechanism, "prior": self.prior, "theorem": rec.theorem}
        rest = {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(rec)
                if f.name not in head and f.name not in self.withheld}
        return head | rest

    def __str__(self) -> str:
        return self.explain()
