r"""How releases compose: one small frozen class per composition theorem, owned by its mechanism.

Pufferfish privacy does not compose in general (Kifer and Machanavajjhala, "Pufferfish: A
framework for mathematical privacy definitions", section 10; Bai, He, Gu, Kifer and Maeng,
"Composition for Pufferfish privacy", section 4, "privacy collapse").  Every release record therefore carries a
:class:`Composition` (``release.composition``): the facts that decide whether two releases
compose (the quilt sets of a Markov Quilt Mechanism calibration, the point on an
a(b)-influence curve, a Blowfish policy...), its own ``epsilon``, the ``units`` it reads, and
the theorem that composes a list of such entries (:meth:`Composition.compose`).  The
accountant (:class:`puffgm.accounting.PrivacyAccountant`) calls only these objects and
:func:`composed_total`; it holds no table of rules.

The classes live with their mechanisms:

* :class:`puffgm.mechanisms.laplace.MarkovQuiltComposition`: Song, Wang and Chaudhuri 2017,
  Theorem 4.4 (:math:`K` releases over one instantiation and its quilt sets: :math:`K \max \epsilon`);
* :class:`puffgm.mechanisms.pufferfish.CurveComposition`: Bai et al. Theorem 7 (DP-based
  releases along one a(b)-influence curve: :math:`\max a + \sum (\epsilon - a)`);
* :class:`puffgm.blowfish.mechanisms.BlowfishComposition`: He, Machanavajjhala and Ding 2014,
  Theorems 4.1 and 4.2 (one policy: sequential sum, parallel over disjoint individuals);
* :class:`HeldAlone` (here, shared by every query-specific record: one query, a workload,
  optimal noise, the Wasserstein mechanism): no theorem composes it with anything, so it
  closes its units to further releases;
* :class:`Uncomposable` (here): no composition theorem at all; the accountant refuses it.

**Units.**  ``units`` is a frozenset of unit ids (for panels of independent units, or the
individuals of a Blowfish release) or None, "the release's whole data set", which touches
every unit.  :func:`composed_total` composes, for every unit, the entries whose units
contain it (None contains every unit) by their rule, and takes the max over units: releases
on disjoint units compose in parallel.  A release function sets the scope of the composition
it builds with the ``units=`` argument of :func:`puffgm.core.release.make_release` (or the
record's ``units`` field); the unit ids must be hashable and the set non-empty.

**A new mechanism** declares its rule by a frozen subclass in its own module: the fields that
decide composition, ``compose`` (the composed loss of entries of its class touching one unit,
or a :class:`~puffgm.exceptions.CompositionError` giving the reason), ``check`` for its own
conditions, and the class texts ``kinds``, ``one``, ``rule``, ``theorem``.  Nothing changes in
the accountant.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from puffgm.core.validation import check_positive_finite
from puffgm.exceptions import CompositionError

__all__ = ["Composition", "HeldAlone", "Uncomposable", "composed_total", "theorem_of", "unit_groups",
           "canonical_units"]

_NEED_NOT = "Pufferfish releases need not compose (Bai et al., section 4)"


def canonical_units(units) -> frozenset | None:
    """``units`` as a frozenset of unit ids (None stays None: the whole data set).

    Unit ids are ints, strings, or tuples of them (lists become tuples, numpy integers ints), so
    they survive the JSON of a ledger file unchanged.
    """
    if units is None:
        return None
    if isinstance(units, (str, bytes)):
        units = (units,)
    try:
        return frozenset(_unit_id(u) for u in units)
    except TypeError:
        raise CompositionError("The units of a release must be an iterable of hashable unit ids.") from None


def _unit_id(u):
    if isinstance(u, (list, tuple)):
        return tuple(_unit_id(v) for v in u)
    if isinstance(u, numbers.Integral) and not isinstance(u, bool):
        return int(u)
    hash(u)
    return u


@dataclass(frozen=True)
class Composition:
    r"""What decides how one release composes with others, and the theorem that composes them.

    Attributes
    ----------
    epsilon : float
        The release's own privacy parameter :math:`\epsilon`.
    units : frozenset or None
        The unit ids the release reads; None: the whole data set (every unit).

    Class attributes (texts for reports and refusals): ``guarantee`` (``"Pufferfish"`` or
    ``"Blowfish"``), ``kinds`` (plural name), ``one`` (singular name), ``rule`` (which releases
    the theorem composes), ``theorem`` (the theorem), ``source`` (the paper it is in, short),
    ``closes`` (True: the release is held alone and closes its units to further releases).
    """

    epsilon: float
    units: frozenset | None = field(default=None, kw_only=True)

    guarantee: ClassVar[str] = "Pufferfish"
    kinds: ClassVar[str] = "releases"
    one: ClassVar[str] = "a release"
    rule: ClassVar[str] = "no composition theorem covers it"
    theorem: ClassVar[str] = "no composition theorem"
    source: ClassVar[str] = "Kifer and Machanavajjhala"
    closes: ClassVar[bool] = False

    def __post_init__(self):
        object.__setattr__(self, "units", canonical_units(self.units))

    # ------------------------------------------------------------ the rule
    @property
    def key(self) -> str:
        """A short identifier of what must agree for releases to compose (shown in ledgers)."""
        return type(self).__name__

    def check(self, mechanism: str) -> None:
        """Raise ParameterError or CompositionError if this entry cannot be charged at all."""
        check_positive_finite(self.epsilon, "epsilon", f"the accountant's record of {mechanism}")
        if self.units is not None and not self.units:
            raise CompositionError(f"The units of the release of {mechanism} are an empty set; give the unit ids "
                                   "it reads, or None for the whole data set.")

    @classmethod
    def compose(cls, entries: Sequence[Composition]) -> float:
        """The composed loss of ``entries`` (all of this class, touching one unit), or a CompositionError."""
        raise CompositionError(f"No composition theorem covers {cls.kinds}; {_NEED_NOT}.")

    def joins(self, held: Composition) -> str | None:
        """Why this entry cannot share a ledger with ``held`` even on disjoint units (None: it can)."""
        if held.guarantee != self.guarantee:
            return _mixing(held, self)
        return None

    def beside(self, held: Sequence[Composition]) -> str | None:
        """Why this entry cannot compose with the ``held`` entries that touch its units (None: it can)."""
        closing = next((h for h in held if h.closes), None)
        if closing is not None:
            return closing.closed_to(self)
        other = next((h for h in held if type(h) is not type(self)), None)
        return None if other is None else _mixing(other, self)

    def closed_to(self, new: Composition) -> str:
        """The refusal of ``new`` beside this entry (for classes that close their units)."""
        return _mixing(self, new)

    def describe(self) -> str:
        """What the entry composes under, for reports."""
        return f"key {self.key}"

    # ------------------------------------------------------------ identity
    def canonical(self) -> dict:
        """Every field, as plain JSON data with the class's import path: what the ledger stores and digests."""
        cls = type(self)
        fields = {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}
        return {"class": f"{cls.__module__}:{cls.__qualname__}", "fields": fields}

    def digest(self) -> str:
        """SHA-256 of :meth:`canonical`: two entries with equal digests read the same facts."""
        text = json.dumps(self.canonical(), sort_keys=True, allow_nan=True)
        return hashlib.sha256(text.encode()).hexdigest()

    @classmethod
    def from_fields(cls, fields: dict) -> Composition:
        """The entry :meth:`canonical` described (lists back to frozensets for ``units``)."""
        return cls(**fields)

    def scoped(self, units) -> Composition:
        """This entry on ``units`` (an iterable of unit ids, or None for the whole data set)."""
        return dataclasses.replace(self, units=canonical_units(units))


def _plain(x: Any):
    if isinstance(x, (set, frozenset)):
        return sorted((_plain(v) for v in x), key=lambda v: json.dumps(v, sort_keys=True, default=str))
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, numbers.Integral):
        return int(x)
    if isinstance(x, numbers.Real):
        return float(x) if math.isfinite(float(x)) else repr(float(x))
    return str(x)


def _mixing(held: Composition, new: Composition) -> str:
    """The refusal of ``new`` beside ``held`` of another class, with the rules of both."""
    if held.guarantee == new.guarantee == "Pufferfish":
        sources = " or in ".join(sorted({held.source, new.source}, reverse=True))  # a fixed order
        why = f"no theorem in {sources} covers this mix: {held.rule}, and {new.rule}; {_NEED_NOT}"
    else:
        why = f"no theorem composes releases of another kind with them: {held.rule}; {new.rule}"
    return f"The accountant holds {held.kinds}, so it refuses {new.one}: {why}. Nothing was released."


_SINGLE = (
    "it was calibrated for one query, or one table of queries released together, from their exact conditional "
    "laws, and no composition theorem (Song et al., Bai et al., Kifer and Machanavajjhala) covers such releases "
    "together with any other: Pufferfish releases need not compose (Bai et al., section 4). Put every statistic "
    "in one workload, or use MQM or curve-based releases to compose"
)


@dataclass(frozen=True)
class HeldAlone(Composition):
    r"""A release calibrated for itself alone (one query, a workload, optimal noise, the Wasserstein mechanism).

    It is :math:`\epsilon`-Pufferfish private by its own exact calibration, and no theorem of Song et
    al., Bai et al. or Kifer and Machanavajjhala composes it with another release: the accountant
    holds it only alone on its units, and the ledger is then closed to further releases of them.

    Attributes
    ----------
    mechanism : str
        The release's mechanism (for messages).
    """

    mechanism: str = "a query-specific release"

    kinds: ClassVar[str] = "a query-specific release"
    one: ClassVar[str] = "a query-specific release"
    rule: ClassVar[str] = "a query-specific release is held only alone"
    theorem: ClassVar[str] = "a single query-specific release (no composition)"
    source: ClassVar[str] = "Song et al., Bai et al. or Kifer and Machanavajjhala"
    closes: ClassVar[bool] = True

    @property
    def key(self) -> str:
        return "query-specific"

    @classmethod
    def compose(cls, entries: Sequence[Composition]) -> float:
        if len(entries) > 1:
            raise CompositionError(f"The accountant cannot compose {entries[-1].one} with another release "
                                   f"on the same units: {_SINGLE}.")
        return float(entries[0].epsilon)

    def beside(self, held: Sequence[Composition]) -> str | None:
        if held:
            return (f"The accountant cannot compose {self.mechanism} with the {len(held)} release(s) it holds on "
                    f"these units: {_SINGLE}.")
        return None

    def closed_to(self, new: Composition) -> str:
        return (f"The accountant holds a query-specific release ({self.mechanism}), so it cannot compose "
                f"{new.one} with it on these units: {_SINGLE}.")


@dataclass(frozen=True)
class Uncomposable(Composition):
    """A release no composition theorem covers: the accountant refuses it (Bai et al., section 4).

    Attributes
    ----------
    reason : str
        Why no theorem applies.
    """

    reason: str = ("it has no curve point (a, b) and epsilon_DP, so no composition theorem applies: Bai et al., "
                   "section 4, show that Pufferfish mechanisms without DP-style constraints can collapse when "
                   "composed")

    def check(self, mechanism: str) -> None:
        raise CompositionError(f"The accountant cannot compose a release of {mechanism}: {self.reason}.")


def unit_groups(entries: Sequence[Composition]) -> list[list[int]]:
    """The positions of the entries that touch each unit, one list per distinct group.

    An entry with ``units`` None touches every unit; without any explicit unit, all entries form
    one group.
    """
    ids = set().union(*[e.units for e in entries if e.units is not None])
    whole = [i for i, e in enumerate(entries) if e.units is None]
    groups = {tuple(whole)} if whole or not ids else set()
    for u in ids:
        groups.add(tuple(i for i, e in enumerate(entries) if e.units is None or u in e.units))
    return [list(g) for g in sorted(groups)]


def _touch(a: Composition, b: Composition) -> bool:
    return a.units is None or b.units is None or not a.units.isdisjoint(b.units)


def composed_total(held: Sequence[Composition], new: Composition | None = None) -> float:
    """The composed privacy loss of ``held`` with ``new`` added: the max over units of each unit's composed loss.

    Parameters
    ----------
    held : sequence of Composition
        Entries already composed (they were checked when they came in).
    new : Composition, optional
        The entry to add, checked against ``held``: it must share a ledger with every held entry
        (:meth:`Composition.joins`) and compose with those touching its units
        (:meth:`Composition.beside`, then the class's :meth:`Composition.compose`).

    Raises
    ------
    CompositionError
        When no theorem composes ``new`` with what is held.
    """
    entries = list(held)
    if new is not None:
        for h in entries:
            why = new.joins(h)
            if why:
                raise CompositionError(why)
        why = new.beside([h for h in entries if _touch(h, new)])
        if why:
            raise CompositionError(why)
        entries.append(new)
    if not entries:
        return 0.0
    total = 0.0
    for group in unit_groups(entries):
        members = [entries[i] for i in group]
        if members:
            total = max(total, type(members[0]).compose(members))
    return total


def theorem_of(entries: Sequence[Composition]) -> str:
    """The theorem(s) a composed total rests on (with parallel composition when units are scoped)."""
    theorems = list(dict.fromkeys(type(e).theorem for e in entries))
    text = "; ".join(theorems)
    if any(e.units is not None for e in entries):
        text += "; parallel composition over disjoint units (the max over units)"
    return text
