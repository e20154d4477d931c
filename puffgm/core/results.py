"""Immutable result records shared by every calibration road (networks, chains, baselines).

A :class:`CalibrationResult` explains itself: the privacy parameter, the
Lipschitz constant, the noise scale, the worst node and its active Markov quilt
with the quilt's max-influence and score, the group-DP baseline and the gain
over it, the fingerprint of the prior class, and the theorem relied on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from puffgm.core.witness import Witness

__all__ = ["QuiltChoice", "QuiltGraph", "CalibrationResult", "json_float", "freeze_record"]


def freeze_record(record) -> None:
    """In a frozen dataclass's ``__post_init__``: make ``value`` and ``details`` read-only.

    A numpy ``value`` is copied and marked non-writable; ``details`` becomes a
    read-only mapping.  Shared by every release record.
    """
    v = getattr(record, "value", None)
    if isinstance(v, np.ndarray):
        v = v.copy()
        v.setflags(write=False)
        object.__setattr__(record, "value", v)
    object.__setattr__(record, "details", MappingProxyType(dict(record.details)))


def json_float(x: float):
    """A float for JSON: finite floats unchanged, infinities and NaN as ``None``."""
    x = float(x)
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class QuiltChoice:
    r"""A Markov quilt :math:`(X_Q, X_N, X_R)` of one node with its max-influence and score.

    Attributes
    ----------
    node : str
        The protected node :math:`X_i`.
    quilt : tuple of str
        :math:`X_Q`, the quilt (empty for the trivial quilt).
    nearby : tuple of str
        :math:`X_N`, the nearby nodes; contains ``node``.
    remote : tuple of str
        :math:`X_R`, the nodes d-separated from ``node`` by the quilt (may be left empty by
        chain calibrations of very long chains; ``n_remote`` always counts them).
    max_influence : float
        :math:`e_\Theta(X_Q \mid X_i)` (Song et al., Definition 4.1), ``inf`` if unusable.
    score : float
        :math:`\operatorname{card}(X_N) / (\epsilon - e_\Theta(X_Q \mid X_i))` (Algorithm 2), ``inf`` if the
        influence is at least :math:`\epsilon`.
    n_remote : int
        :math:`\operatorname{card}(X_R)`.
    witness : Witness or None
        Where the max-influence is attained: ``prior`` index, ``node``, ``pair`` of its values :math:`a`, :math:`b` and
        ``output`` the assignment of :math:`X_Q` (networks; linear-Gaussian networks name the prior only).
    """

    node: str
    quilt: tuple
    nearby: tuple
    remote: tuple
    max_influence: float
    score: float
    n_remote: int = -1
    witness: Witness | None = None

    def __post_init__(self):
        if self.n_remote < 0:
            object.__setattr__(self, "n_remote", len(self.remote))

    @property
    def prior(self) -> int:
        """Index in its class of the prior whose max-influence the witness names (0 without a witness)."""
        return 0 if self.witness is None or self.witness.prior is None else self.witness.prior

    @property
    def n_nearby(self) -> int:
        r""":math:`\operatorname{card}(X_N)`."""
        return len(self.nearby)

    def to_dict(self) -> dict:
        """JSON-ready dict of the quilt (infinite influence or score as ``None``)."""
        return {
            "node": self.node,
            "quilt": list(self.quilt),
            "nearby": list(self.nearby),
            "n_nearby": self.n_nearby,
            "n_remote": self.n_remote,
            "max_influence": json_float(self.max_influence),
            "score": json_float(self.score),
        }


@dataclass(frozen=True)
class QuiltGraph:
    """The graph a calibration's quilts live in, kept with the result to draw it (:meth:`CalibrationResult.plot`).

    Attributes
    ----------
    kind : str
        ``"dag"`` (a Bayesian network: ``nodes`` and ``edges``) or ``"chain"`` (a Markov chain
        X1 -> X2 -> ... -> XT of ``length`` T).
    nodes : tuple of str
        The nodes of a DAG, in the network's order.
    edges : tuple of (str, str)
        The arcs (parent, child) of a DAG.
    length : int
        T, the length of a chain.
    """

    kind: str
    nodes: tuple = ()
    edges: tuple = ()
    length: int = 0


@dataclass(frozen=True)
class CalibrationResult:
    r"""The outcome of a calibration: noise scale and everything that justifies it.

    Attributes
    ----------
    epsilon : float
        Pufferfish privacy parameter.
    lipschitz : float
        :math:`L`, the L1 Lipschitz constant of the query.
    method : str
        ``"mqm"`` (Bayesian networks), ``"exact"``/``"approx"`` (MQMExact and
        MQMApprox for chains), ``"groupdp"``, ``"gk16"``, ``"dp"``, ...
    sigma_max : float
        Noise scale per unit Lipschitz constant (:math:`\max_i \sigma_i` of Algorithm 2).
    worst : QuiltChoice or None
        The active quilt of the worst node (None for baselines without quilts).
    per_node : tuple of QuiltChoice
        Every protected node's active quilt (may be empty when not materialised).
    n_nodes : int
        Number of nodes (records) in the database.
    groupdp_sigma : float
        The group-DP baseline per unit :math:`L`: size of the largest connected component :math:`/ \epsilon`.
    fingerprint : str
        Fingerprint of the prior class the calibration used.
    theorem : str
        The result relied on for the guarantee.
    applicable : bool
        False for baselines that do not apply (then ``sigma_max`` is ``inf``).
    notes : tuple of str
        Anything the user should know (renormalised tables, skipped events, ...).
    details : Mapping
        Method-specific figures (chain bound :math:`l`, :math:`\pi_{\min}`, eigengap, ...).
    sigma_lower_bound : float
        A certified lower bound on the best :math:`\sigma_{\max}` any choice of Markov
        quilts could give (max over protected nodes, and over the priors of a
        finite class, of each one's bound; :mod:`puffgm.networks.quilt_bounds`), ``nan``
        when the calibration road does not compute one.
    graph : QuiltGraph or None
        The DAG or chain the quilts live in, for :meth:`plot`; recorded by the engine that
        built the result (Bayesian networks, chains, parameter boxes, linear-Gaussian
        networks), None when the road does not know it.  Not part of :meth:`to_dict` nor of
        equality.
    options : tuple of (str, object) pairs or None
        The calibration options the result was computed with, sorted by name, recorded by the
        engine that built the result: the network engine records its own quilt-set options,
        the chain engines and the linear-Gaussian engine the options :func:`puffgm.calibrate`
        was given (``PriorKind.calibrate`` passes them down).  None when they were not recorded
        (a chain engine called directly).  They define the quilt sets, so they enter the
        composition key (:func:`puffgm.core.release.quilt_set_key`).
    """

    epsilon: float
    lipschitz: float
    method: str
    sigma_max: float
    worst: QuiltChoice | None
    per_node: tuple
    n_nodes: int
    groupdp_sigma: float
    fingerprint: str
    theorem: str
    applicable: bool = True
    notes: tuple = ()
    details: Mapping = field(default_factory=dict)
    sigma_lower_bound: float = math.nan
    graph: QuiltGraph | None = field(default=None, compare=False, repr=False)
    options: tuple | Mapping | None = field(default=None, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))
        if self.options is not None:
            object.__setattr__(self, "options", tuple(sorted((str(k), v) for k, v in dict(self.options).items())))
        object.__setattr__(self, "sigma_lower_bound", float(self.sigma_lower_bound))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "per_node", tuple(self.per_node))

    def __reduce__(self):  # picklable (details is a read-only mappingproxy)
        state = {f: getattr(self, f) for f in self.__dataclass_fields__}
        state["details"] = dict(self.details)
        return (_rebuild_calibration, (state,))

    @property
    def scale(self) -> float:
        r"""Laplace scale :math:`L \sigma_{\max}` for an :math:`L`-Lipschitz query."""
        return self.lipschitz * self.sigma_max

    @property
    def worst_node(self):
        """Name of the node that needs the most noise (None for quilt-free baselines)."""
        return None if self.worst is None else self.worst.node

    @property
    def gain(self) -> float:
        r""":math:`\sigma_{\mathrm{groupdp}} / \sigma_{\max}`: the noise saved over group DP (a gain if :math:`\ge 1`).

        0 when :math:`\sigma_{\max}` is infinite or zero.
        """
        if not math.isfinite(self.sigma_max) or self.sigma_max <= 0:
            return 0.0
        return self.groupdp_sigma / self.sigma_max

    @property
    def optimality_gap(self) -> float:
        r""":math:`\sigma_{\max} / \sigma_{\mathrm{lower}} - 1`: 0 means the noise is optimal over all Markov quilts.

        ``nan`` when no lower bound was computed.  A gap :math:`g` means no choice of
        quilts can lower the noise by more than a factor :math:`1 + g`.
        """
        lb = self.sigma_lower_bound
        if not (math.isfinite(lb) and lb > 0 and math.isfinite(self.sigma_max)):
            return math.nan
        return max(0.0, self.sigma_max / lb - 1.0)

    def accuracy(self, alpha: float = 0.05) -> tuple:
        r"""The Laplace scale :math:`L \sigma_{\max}` and its :math:`(1 - \alpha)` half-width, on each coordinate.

        One :class:`~puffgm.core.accuracy.Accuracy` row (``statistic`` ``"each coordinate"``) for each coordinate
        of the query: the release adds :math:`\mathrm{Lap}(L \sigma_{\max})` to every coordinate; an infinite scale
        (a baseline that does not apply) has an infinite half-width.
        """
        from puffgm.core.accuracy import laplace_rows

        return laplace_rows(("each coordinate",), (self.scale,), alpha)

    def to_dict(self, per_node: bool = False) -> dict:
        """A JSON-ready dict (the ``--json`` output of ``puffgm calibrate``)."""
        d = {
            "epsilon": self.epsilon,
            "lipschitz": self.lipschitz,
            "method": self.method,
            "applicable": self.applicable,
            "sigma_max": json_float(self.sigma_max),
            "scale": json_float(self.scale),
            "groupdp_sigma": json_float(self.groupdp_sigma),
            "gain": json_float(self.gain),
            "sigma_lower_bound": json_float(self.sigma_lower_bound),
            "optimality_gap": json_float(self.optimality_gap),
            "n_nodes": self.n_nodes,
            "worst_node": self.worst_node,
            "quilt": None if self.worst is None else self.worst.to_dict(),
            "fingerprint": self.fingerprint,
            "theorem": self.theorem,
            "notes": list(self.notes),
            "details": {k: (json_float(v) if isinstance(v, float) else v) for k, v in self.details.items()},
        }
        if per_node:
            d["per_node"] = [q.to_dict() for q in self.per_node]
        return d

    def explain(self) -> str:
        """A short human summary."""
        lines = [f"method {self.method}, epsilon {self.epsilon:g}, Lipschitz {self.lipschitz:g}"]
        if not self.applicable:
            lines.append("not applicable: " + (self.notes[0] if self.notes else "see details"))
            return "\n".join(lines)
        lines.append(f"Laplace scale {self.scale:.6g} (sigma_max {self.sigma_max:.6g} per unit L)")
        if self.worst is not None:
            w = self.worst
            q = "{" + ", ".join(map(str, w.quilt)) + "}"
            lines.append(
                f"worst node {w.node}: quilt {q}, {w.n_nearby} nearby, {w.n_remote} remote, "
                f"max-influence {w.max_influence:.6g}, score {w.score:.6g}"
            )
        if math.isfinite(self.optimality_gap):
            gap = self.optimality_gap
            lines.append(
                f"lower bound on sigma_max over all Markov quilts: {self.sigma_lower_bound:.6g} "
                + ("(optimal, gap 0)" if gap <= 1e-9 else f"(optimality gap {100 * gap:.3g}% = sigma_max / bound - 1)")
            )
        group = self.groupdp_sigma * self.lipschitz
        if not math.isfinite(group):
            lines.append("group-DP baseline: above the largest double (group DP needs an infinite scale here)")
        else:
            lines.append(f"group-DP baseline {group:.6g}: gain x{self.gain:.4g}"
                         + ("" if self.gain > 1 + 1e-12 else " (no gain over group DP)"))
        for note in self.notes:
            lines.append(f"note: {note}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()

    def plot(self, path: str | None = None, *, ax: Any = None, graph: Any = None) -> Any:
        """Draw the worst node, its quilt, the nearby set and the remote set (needs matplotlib).

        A Bayesian network is drawn as its DAG in layers (topological generations, parents
        above children) with every node labelled; a Markov chain as its positions along the
        chain (long runs of one set shortened to their ends and a count).  The legend gives
        the max-influence and score of the quilt, and the title the noise scale.

        Parameters
        ----------
        path : str, optional
            Save the picture there (the format from the extension: PNG, SVG, PDF, ...).
        ax : matplotlib Axes, optional
            Draw into these axes instead of a new figure.
        graph : optional
            The DAG when the result does not carry it (a result of the low-level
            :func:`puffgm.networks.calibration.calibrate`): a networkx DiGraph, a pgmpy
            model, a :class:`~puffgm.networks.priors.PriorClass` (its ``dag``) or a list
            of (parent, child) pairs.

        Returns
        -------
        matplotlib.figure.Figure
            The figure drawn into.

        Raises
        ------
        ParameterError
            Without matplotlib (``pip install 'puffgm[plot]'``), when the result has no
            quilt to draw (a baseline) or no graph, or when ``path`` cannot be written.
        """
        from puffgm.core.plot import plot_calibration

        return plot_calibration(self, path, ax=ax, graph=graph)


def _rebuild_calibration(state: dict) -> CalibrationResult:
    return CalibrationResult(**state)
