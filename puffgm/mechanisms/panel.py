r"""The release record of a panel: many independent units released as one aggregate, or one release per unit.

A panel is a data set of units u = 1..N (a trace of a Markov chain, a record of a Bayesian
network), independent under every prior of the class.  :func:`puffgm.release` with ``unit=``
(:mod:`puffgm.api.units`) releases either

* the **aggregate** :math:`\sum_u F_u + Z`, with :math:`Z` calibrated for one unit's statistic :math:`F_u` under
  the unit's class: for a secret of unit :math:`u`, the release is :math:`F_u + Z` plus :math:`\sum_{v \ne u} F_v`,
  which is independent of :math:`X_u` under every prior, so it is post-processing of an
  :math:`\epsilon`-Pufferfish release of unit :math:`u` alone; or
* **one release per unit**, :math:`M_u(X_u)` each :math:`\epsilon`-private for unit :math:`u`'s secrets, together
  :math:`\epsilon`-private (parallel composition: for a secret of unit :math:`u` every other release is
  independent of :math:`X_u`).

Both hold only because units are independent under the prior: units that are correlated (a
household, a contact network) must be modelled jointly as one network.

The accountant charges a panel release once, and its composition names the units it touches
(:attr:`PanelRelease.units`): every unit for the aggregate, and for per-unit releases each unit
its own release, which is the same set since per-unit composition (the accountant composes, for
each unit, the entries touching it, and takes the max over units) then counts one release per
unit.  The record's :attr:`~PanelRelease.composition` is the one place that says how a panel
release composes: :class:`~puffgm.mechanisms.laplace.MarkovQuiltComposition` (Song et al.
Theorem 4.4, per unit, over the quilt sets of the unit calibrations) for MQM, and
:class:`~puffgm.core.composition.HeldAlone` on its units for query-specific noise: a second
query-specific release on any of those units is refused, one on disjoint units composes in
parallel.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from puffgm.core.accuracy import laplace_rows
from puffgm.core.composition import Composition, HeldAlone, canonical_units
from puffgm.core.release import Release
from puffgm.core.results import freeze_record
from puffgm.exceptions import NotApplicableError
from puffgm.mechanisms.laplace import MarkovQuiltComposition

__all__ = ["PanelRelease", "PanelMarkovQuiltRelease", "panel_record_type", "INDEPENDENCE", "THEOREM_PANEL"]

#: Said wherever the guarantee of a panel release is stated.
INDEPENDENCE = ("units are independent only under the prior: correlated units (a household, a contact network) "
                "must be modelled jointly as one network")

THEOREM_PANEL = ("the aggregate sum_u F_u + Z is post-processing of one unit's epsilon-Pufferfish release F_u + Z "
                 "(the other units are independent of it under every prior); per-unit releases compose in parallel "
                 "(max over units)")


@dataclass(frozen=True)
class PanelRelease(Release):
    """A panel's noisy aggregate, or its noisy per-unit statistics, under one charge.

    Attributes
    ----------
    value : float, tuple of float, or tuple of per-unit values
        Aggregate: the noisy statistic (one query) or table (a tuple in ``names`` order).
        Per unit (``each``): one such value per unit, in ``units`` order.
    names : tuple of str or None
        The statistics of a table (None for one query).
    units : tuple of str
        The ids of the units the release touches (every unit of the panel).
    each : bool
        One release per unit (True) or the aggregate (False).
    epsilon : float
    method : str
        ``"mqm"``, ``"wasserstein"``, ``"optimal-laplace"``, ``"optimal-noise"`` or ``"workload"``.
    mechanism, theorem : str
    prior_class : str
        The prior class of one unit.
    scales : tuple of float or None
        The aggregate's Laplace scale per statistic: the largest over the unit lengths present
        (None for the optimal noise law); for ``each``, the largest per-unit scale (each length's
        in ``details["scales_by_length"]``).
    secure : bool
    noise : str
    noise_laws : tuple
        Method ``"optimal-noise"``: ``(law, divisor)`` for each unit length present, the
        :class:`~puffgm.mechanisms.optimal_noise.OptimalNoise` law of that length's units and
        what their values are divided by (the public total for relative frequencies); empty
        for Laplace noise.  Read by :meth:`accuracy`; left out of :meth:`to_dict`.
    details : Mapping
        ``lengths`` (length -> number of units), ``entries`` (the public total number of entries),
        ``relative``, ``scales_by_length``, ``comparison`` (the aggregate's expected absolute error
        per statistic under user-level DP, group DP, MQM per unit and the query-specific road per
        unit), ``notes`` and ``independence``.
    """

    value: Any
    names: tuple | None
    units: tuple
    each: bool
    epsilon: float
    method: str
    mechanism: str
    theorem: str
    prior_class: str
    scales: tuple | None
    secure: bool
    noise: str
    details: Mapping = field(default_factory=dict)
    noise_laws: tuple = field(default=(), repr=False)

    def __post_init__(self):
        freeze_record(self)

    @property
    def unit_scope(self) -> frozenset:
        """The units the release touches, as the accountant's unit scope."""
        return cast(frozenset, canonical_units(self.units))

    @property
    def composition(self) -> Composition:
        """Held alone on its units (:class:`~puffgm.core.composition.HeldAlone`): the unit calibration is
        query-specific, so no theorem composes it with another release of those units."""
        return HeldAlone(self.epsilon, mechanism=self.mechanism, units=self.unit_scope)

    @property
    def prior(self) -> str:
        """The prior class of one unit (units independent under it)."""
        return f"{self.prior_class} (each of {len(self.units)} units; {INDEPENDENCE})"

    @property
    def releases(self) -> list:
        """Per unit (``each``): ``[{"unit": ID, "value" | "values": ...}, ...]``; empty for the aggregate."""
        if not self.each or self.value is None:
            return []
        key = "value" if self.names is None else "values"
        out = []
        for u, v in zip(self.units, self.value, strict=True):
            out.append({"unit": u, key: v if self.names is None else dict(zip(self.names, v, strict=True))})
        return out

    def accuracy(self, alpha: float = 0.05) -> tuple:
        r"""Each released statistic's noise: its scale and :math:`(1-\alpha)` half-width (:mod:`puffgm.core.accuracy`).

        The aggregate's rows are its noise's; for per-unit releases (``each``) the rows are those of
        the largest per-unit noise, a bound on every unit's (each length's scales are in
        ``details["scales_by_length"]``).  Optimal noise: the exact half-width of the law, the
        largest over the unit lengths present.
        """
        if self.scales is not None:
            return laplace_rows(self.names or ("value",), self.scales, alpha)
        rows = [dataclasses.replace(row, half_width=row.half_width / per,
                                    expected_abs_error=row.expected_abs_error / per)
                for law, per in self.noise_laws for row in law.accuracy(alpha)]
        if not rows:
            raise NotApplicableError("This panel release records no noise law, so its accuracy is unknown.")
        return (max(rows, key=lambda r: (r.half_width, r.expected_abs_error)),)

    def to_dict(self) -> dict:
        """JSON-ready (the noise laws of an optimal-noise release are left out: see :meth:`accuracy`)."""
        d = super().to_dict()
        d.pop("noise_laws", None)
        return d

    def as_dict(self) -> dict:
        """The aggregate's noisy statistics by name (one query: ``{"value": v}``)."""
        if self.each:
            raise ValueError("A per-unit release has one value per unit: read .releases.")
        if self.names is None:
            return {"value": self.value}
        return dict(zip(self.names, self.value or (), strict=True))

    def explain(self) -> str:
        r"""One line: what was released, over how many units, :math:`\epsilon`, scales, noise source."""
        what = f"one release per unit ({len(self.units)} units)" if self.each else \
            f"the aggregate over {len(self.units)} units"
        sc = "optimal noise law" if self.scales is None else \
            "Laplace scale(s) " + ", ".join(f"{s:.6g}" for s in self.scales)
        line = f"{self.mechanism}, {what}: epsilon {self.epsilon:g}, {sc}; noise: {self.noise}"
        return self._tagged(line)


@dataclass(frozen=True)
class PanelMarkovQuiltRelease(PanelRelease):
    """A panel release by the Markov Quilt Mechanism: composed per unit by Song et al. Theorem 4.4.

    Every unit's release (its own, or its share of the aggregate by post-processing) is an MQM
    release over the quilt sets of the unit's calibration; :attr:`quilt_key` identifies the
    calibrations of the lengths present.
    """

    @property
    def composition(self) -> Composition:
        """Song et al. Theorem 4.4 on each unit, over the quilt sets of the unit calibrations."""
        return MarkovQuiltComposition(self.epsilon, fingerprint=str(self.details.get("fingerprint", "")),
                                      quilt_key=str(self.quilt_key), units=self.unit_scope)

    @property
    def quilt_key(self) -> str | None:
        """The quilt sets of the unit calibrations (one key for the lengths present)."""
        return self.details.get("quilt_key")


def panel_record_type(method: str) -> type:
    """The record class of a panel release by ``method``: how the accountant composes it.

    An MQM panel release composes per unit by Song et al. Theorem 4.4 with MQM releases over
    the same quilt sets; a query-specific panel release is held alone on its units.
    """
    return PanelMarkovQuiltRelease if method == "mqm" else PanelRelease
