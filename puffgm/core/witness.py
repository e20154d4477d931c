"""Where a result is decided: one witness type for every result, and one node identity across priors.

Every privacy claim of puffgm is a maximum (over the priors of a class, the protected nodes, their
pairs of secrets and the outputs), and every result that reports such a maximum names where it is
attained: the Wasserstein distance W and the exact losses of the query mechanisms, the joint loss
of a workload, the exact auditor's loss, the Wasserstein mechanism of an instantiation, a Blowfish
sensitivity, the point of a translation along an influence curve.  :class:`Witness` is that place,
with a field for each coordinate (none read by index); a result fills the coordinates it has.

:class:`NodeId` names one node of one prior of a class Theta (the maximum over Theta is taken per
prior, so a node is a (prior, name) pair once the class has several members).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["NodeId", "Witness"]


@dataclass(frozen=True)
class NodeId:
    """One node of one prior of a class: ``prior`` the prior's index in the class, ``node`` its name.

    Examples
    --------
    >>> str(NodeId(0, "asia")), str(NodeId(1, "asia"))
    ('asia', 'asia (prior 1)')
    >>> NodeId(0, "asia").detail(), NodeId(1, "asia").detail()
    ('asia', (1, 'asia'))
    """

    prior: int
    node: Any

    def detail(self) -> Any:
        """Its form in results' details and JSON: the name under prior 0, ``(prior, name)`` otherwise."""
        return (self.prior, self.node) if self.prior else self.node

    def __str__(self) -> str:
        return f"{self.node} (prior {self.prior})" if self.prior else str(self.node)


@dataclass(frozen=True)
class Witness:
    """Where a maximum (a distance, a loss, an influence, a sensitivity) is attained.

    Each field is one coordinate of the maximum; a result fills those it has and leaves the others None.

    Attributes
    ----------
    prior : int or None
        Index of the prior in the class Theta.
    node : str or None
        The node whose pair of secrets decides (query mechanisms, workloads, curve points).
    pair : tuple or None
        The two secrets compared: the node's two states, or two secrets of an instantiation, or
        two neighbouring databases (Blowfish).
    output : object or None
        The output at which the loss is attained: in the query's own units (a number, ``+-inf``, or one
        number per statistic of a workload), an output label, or a tuple of labels.
    quilt : tuple or None
        The Markov quilt :math:`X_Q` of an influence-curve point (as the curve gives it; the trivial
        point :math:`(0, |I|)` of a curve names node ``"*"`` and describes its split here).

    Examples
    --------
    >>> w = Witness(prior=0, node="tub", pair=("yes", "no"))
    >>> str(w)
    'node tub (yes vs no), prior 0'
    >>> w.to_dict()
    {'prior': 0, 'node': 'tub', 'a': 'yes', 'b': 'no'}
    """

    prior: int | None = None
    node: Any = None
    pair: tuple | None = None
    output: Any = None
    quilt: Any = None

    @property
    def node_id(self) -> NodeId | None:
        """The node as a :class:`NodeId` (None when the witness names no node)."""
        return None if self.node is None else NodeId(0 if self.prior is None else self.prior, self.node)

    def in_units(self, queries: Sequence) -> Witness:
        r"""The witness with its grid output in the queries' own units.

        The output of a query bound to a grid (:class:`puffgm.core.query.BoundQuery`) is a grid sum
        :math:`g`; in the query's units it is :math:`(\mathrm{offset} + g) / \mathrm{unit}`
        (:math:`\pm\infty` unchanged).  A tuple output is a workload's vertex, one grid sum per
        statistic of ``queries``; any other output is the grid sum of ``queries[0]``.
        """
        if self.output is None:
            return self
        if isinstance(self.output, tuple):
            return replace(self, output=tuple(_in_units(q, g) for q, g in zip(queries, self.output, strict=True)))
        return replace(self, output=_in_units(queries[0], self.output))

    def to_dict(self) -> dict:
        """JSON-ready: the coordinates it has, in the results' form (``a`` and ``b`` for a node's two states,
        else ``pair`` as a list; an infinite output as ``"+inf"`` or ``"-inf"``)."""
        out: dict = {}
        if self.prior is not None:
            out["prior"] = self.prior
        if self.node is not None:
            out["node"] = self.node
        if self.pair is not None and self.node is not None:
            out["a"], out["b"] = self.pair
        elif self.pair is not None:
            out["pair"] = list(self.pair)
        if self.quilt is not None:
            out["quilt"] = list(self.quilt)
        if self.output is not None:
            out["output"] = _json_output(self.output)
        return out

    def __str__(self) -> str:
        """``node N (a vs b), prior t``, the text query results print after "decided at" (the coordinates it has,
        but the output)."""
        parts = []
        if self.node is not None:
            pair = "" if self.pair is None else f" ({self.pair[0]} vs {self.pair[1]})"
            parts.append(f"node {self.node}{pair}")
        elif self.pair is not None:
            parts.append(f"pair {tuple(self.pair)}")
        if self.quilt is not None:
            parts.append(f"quilt {self.quilt}")
        if self.prior is not None:
            parts.append(f"prior {self.prior}")
        return ", ".join(parts)  # the output is the result's to print, in its form


def _in_units(query, g):
    return g if math.isinf(g) else (query.offset + g) / query.unit


def _json_output(x: Any) -> Any:
    if isinstance(x, float) and math.isinf(x):
        return "+inf" if x > 0 else "-inf"
    if isinstance(x, (list, tuple)):
        return [_json_output(v) for v in x]
    return x
