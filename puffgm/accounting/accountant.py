r"""Explicit privacy accounting for sequences of releases on the same data.

Pufferfish privacy does not compose in general (Kifer and Machanavajjhala,
section 10; Bai et al., section 4 show "privacy collapse").  The accountant
therefore only adds up releases for which a composition theorem applies, and
refuses the others:

* **Markov Quilt Mechanism releases that share quilt sets** (Song, Wang and
  Chaudhuri 2017, Theorem 4.4 and the remark after it): K releases with the
  same instantiation and the same quilt sets :math:`S_{Q,i}`, at privacy parameters
  :math:`\epsilon_1, \dots, \epsilon_K`, are together :math:`(K \max_k \epsilon_k)`-Pufferfish private.
* **DP-based releases along an a(b)-influence curve** (Bai, He, Gu, Kifer and
  Maeng, Theorem 7): releases :math:`l = 1, \dots, k` of per-entry
  :math:`\epsilon_{\mathrm{DP},l}`-DP mechanisms translated at curve points :math:`(a_l, b_l)` of
  the same :math:`(\Theta, S)`, each :math:`\epsilon_{\mathrm{puffer},l}`-Pufferfish by Theorem 6
  (:math:`a_l < \epsilon_{\mathrm{puffer},l}`), are together

  $$
  \max_l a_l + \sum_l (\epsilon_{\mathrm{puffer},l} - a_l)
  $$

  -Pufferfish private: the correlation penalty is paid once.  See
  :mod:`puffgm.mechanisms.pufferfish`.
* **Blowfish releases under one policy** (He, Machanavajjhala and Ding 2014,
  Theorems 4.1, 4.2): epsilons add up (sequential); releases on disjoint subsets
  of individuals of an unconstrained policy take the max (parallel).  Releases
  under different policies are refused.  See :mod:`puffgm.blowfish.mechanisms`.
* **A query-specific release alone** (Wasserstein mechanism, optimal Laplace
  scale, optimal noise: :mod:`puffgm.mechanisms.query`; a table of statistics
  calibrated jointly: :mod:`puffgm.mechanisms.workload`): it is calibrated for
  one query, or one table, by their exact laws, and no theorem of Song et al., Bai
  et al. or Kifer and Machanavajjhala composes it with another release, so the
  accountant holds it only alone and refuses any second release.

The accountant reads the rule from the release itself: every release record
derives from :class:`puffgm.core.release.Release` and exposes its ``composition``,
an object of :mod:`puffgm.core.composition` built by the mechanism's own module
(:class:`~puffgm.mechanisms.laplace.MarkovQuiltComposition`,
:class:`~puffgm.mechanisms.pufferfish.CurveComposition`,
:class:`~puffgm.blowfish.mechanisms.BlowfishComposition`,
:class:`~puffgm.core.composition.HeldAlone`, :class:`~puffgm.core.composition.Uncomposable`);
the accountant calls only these objects (:func:`puffgm.core.composition.composed_total`)
and holds no table of rules.  Composition is per unit: entries whose ``units``
intersect are composed by their rule, and the total is the max over units (releases
on disjoint units compose in parallel).  Releases of a "bare" Pufferfish mechanism (no DP constraint, no curve point)
are refused with :class:`~puffgm.exceptions.CompositionError`: Bai et al.,
section 4, give mechanisms with zero leakage alone that reveal the data when run
twice (privacy collapse).  MQM releases and curve-based releases are not mixed
in one accountant: Song et al. Theorem 4.4 composes MQM releases only with MQM
releases over the same quilt sets, Bai et al. Theorem 7 composes only DP-based
releases along one curve, and no theorem of either paper covers the mix; the
refusal says so.  Blowfish releases are :math:`(\epsilon, P)`-Blowfish private under their
policy, a guarantee of another kind than Pufferfish privacy for a prior class:
the report of an accountant holding them says "Blowfish private under the policy",
and they are not mixed with Pufferfish releases either.

There is no hidden global accountant: create one and pass it to each release.
A release that would exceed the budget raises :class:`~puffgm.exceptions.BudgetError`
before any noise is drawn, so nothing is released.  The accountant records only the
releases it charged: a charge is one atomic step (under a lock in memory, under
SQLite's write lock in a file), and the drawn release is recorded only if it matches
its charge field for field (an HMAC with a per-process secret binds the charge to the
accountant and to the digest of every field its composition reads).  A release built by
hand, edited (``dataclasses.replace``, ``object.__setattr__``), copied or unpickled is
refused, and a charge whose release fails or never comes stays: budget lost, privacy kept.

Examples
--------
>>> from puffgm.networks.calibration import calibrate
>>> from puffgm.mechanisms.laplace import release_laplace
>>> acc = PrivacyAccountant(budget=2.0)
>>> cal = calibrate("example:asia", epsilon=1.0)
>>> _ = release_laplace(1.0, cal, accountant=acc, random_state=0)
>>> _ = release_laplace(2.0, cal, accountant=acc, random_state=1)
>>> acc.total
2.0
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import json
import math
import secrets
import threading
from dataclasses import dataclass
from typing import Any, cast

from puffgm.accounting.ledger import LedgerEntry, check_budget, now, open_ledger
from puffgm.core.composition import Composition, composed_total, theorem_of
from puffgm.core.features import require_puffgm_caller
from puffgm.core.release import Release, jsonable
from puffgm.exceptions import BudgetError, CompositionError

__all__ = ["PrivacyAccountant", "AccountingReport", "THEOREM_MQM", "THEOREM_7", "THEOREM_BLOWFISH"]

#: The theorems of the composition classes (their ``theorem``), named here for reports and imports.
THEOREM_MQM = "Song, Wang and Chaudhuri 2017, Theorem 4.4 (sequential composition of MQM with shared quilt sets)"

THEOREM_7 = ("Bai, He, Gu, Kifer and Maeng, Theorem 7 (composition of DP-based Pufferfish mechanisms along an "
             "a(b)-influence curve)")

THEOREM_BLOWFISH = (
    "He, Machanavajjhala and Ding 2014, Theorems 4.1 and 4.2 (sequential composition, and parallel composition "
    "with a cardinality constraint, of releases under one Blowfish policy)"
)

_TOL = 1e-12

#: The per-process key of the charge tokens and release seals (never stored, never shown).
_SECRET = secrets.token_bytes(32)

#: The attribute a recorded release carries its seal in (not a dataclass field: copies do not carry it).
_SEAL = "_puffgm_seal"


@dataclass(frozen=True)
class _Seal:
    """A recorded release's seal: the accountant's nonce, the ledger position and the MAC over both."""

    nonce: bytes
    position: int
    mac: bytes

_NOT_CHARGED = (
    "The accountant records only the releases it charged before their noise was drawn (pass it as accountant= "
    "to the release function), and this {kind} is not one it can verify: made without it, built by hand, or "
    "changed after it was released (dataclasses.replace, object.__setattr__, copy or pickle), so nothing is "
    "recorded and its charges stay."
)


@dataclass(frozen=True)
class AccountingReport:
    r"""The composed guarantee of every recorded release and the theorem it rests on.

    Attributes
    ----------
    total : float
        The composed privacy parameter (the max over units of each unit's composed loss).
    budget : float or None
        The accountant's budget.
    n_releases : int
        Number of recorded releases.
    theorem : str
        The composition theorem the total rests on.
    entries : tuple of LedgerEntry
        The ledger.
    guarantee : str
        ``"Pufferfish"`` (:math:`\epsilon`-Pufferfish privacy for the prior class and secrets of
        the releases) or ``"Blowfish"`` (:math:`(\epsilon, P)`-Blowfish privacy under the policy :math:`P`
        of the releases, He et al. Definition 4.3; not a Pufferfish guarantee for a prior class).
    closed : tuple
        The unit scopes closed to further releases by a release held alone
        (:class:`~puffgm.core.composition.HeldAlone`): ``None`` for the whole data set, else a
        frozenset of unit ids.
    """

    total: float
    budget: float | None
    n_releases: int
    theorem: str
    entries: tuple
    guarantee: str = "Pufferfish"
    closed: tuple = ()

    @property
    def closed_to_all(self) -> bool:
        """True when a release held alone on the whole data set closes the ledger to every further release."""
        return any(units is None for units in self.closed)

    @property
    def remaining(self) -> float:
        """Budget left (inf without a budget; 0 once the ledger is closed to every further release)."""
        if self.closed_to_all:
            return 0.0
        return math.inf if self.budget is None else max(0.0, self.budget - self.total)

    def _budget_text(self) -> str:
        if self.closed_to_all:
            return "the ledger is closed to further releases: a query-specific release is held alone"
        b = "unlimited budget" if self.budget is None else f"budget {self.budget:g}, remaining {self.remaining:g}"
        if self.closed:
            units = sorted(set().union(*self.closed), key=str)
            shown = ", ".join(map(str, units[:10])) + (", ..." if len(units) > 10 else "")
            b = f"the ledger is closed to further releases of units {shown} (held alone); other units: {b}"
        return b

    def explain(self) -> str:
        """One line: number of releases, composed guarantee, budget (or closure), theorem."""
        b = self._budget_text()
        if self.guarantee == "Blowfish":
            e = self.entries[0] if self.entries else None
            policy = "" if e is None else f" ({e.composition.describe()})"
            return (f"{self.n_releases} release(s): ({self.total:g}, P)-Blowfish private under their policy P"
                    f"{policy}, not a Pufferfish guarantee for a prior class ({b}); by {self.theorem}")
        return f"{self.n_releases} release(s): {self.total:g}-Pufferfish private ({b}); by {self.theorem}"

    def __str__(self):
        return self.explain()


class PrivacyAccountant:
    """Records releases and reports their composed Pufferfish guarantee.

    The accountant takes releases only from puffgm's release functions (pass it as
    ``accountant=``): it charges each before its noise is drawn and records it only against
    that charge, verified field for field.  Every composition fact comes from the release's
    own ``composition`` object (:mod:`puffgm.core.composition`): no caller names a key, and a
    record built or edited by hand is refused.  One accountant may be shared by threads.

    Parameters
    ----------
    budget : float, optional
        Total privacy budget; releases beyond it are refused (nothing released).
        Keyword-only: ``PrivacyAccountant(budget=8.0)``.  ``math.inf`` is an unlimited
        budget, chosen explicitly (reports say "unlimited budget"); None in memory means the same.
    ledger : str, os.PathLike or ledger object, optional
        A SQLite file that keeps the entries across processes (:class:`~puffgm.accounting.ledger.SQLiteLedger`).
        A new file needs ``budget`` (a number, or ``math.inf``); an existing one keeps the
        budget it was created with.
    """

    def __init__(self, *, budget: float | None = None, ledger=None):
        self._store = open_ledger(ledger, budget=check_budget(budget=budget, where="PrivacyAccountant"))
        self.budget = self._store.budget
        self._nonce = secrets.token_bytes(16)  # binds tokens and seals to this accountant
        self._lock = threading.Lock()
        self._tokens: dict[int, bytes] = {}  # the open charges this accountant made: position -> token

    @property
    def _entries(self) -> tuple:
        return self._store.entries()

    # ------------------------------------------------------------- public
    def check(self, release) -> float:
        """The composed total if ``release`` were recorded now; nothing is recorded.

        Raises
        ------
        CompositionError
            If ``release`` is not a puffgm release record, has no composition puffgm knows, or
            cannot be composed with what is recorded.
        BudgetError
            If the composed total would exceed the budget.
        ParameterError
            If the release's privacy parameter is not a finite number > 0.
        """
        return self._total_with(self._entry(release, None).composition, self._entries)

    def charge(self, release, *, label: str | None = None) -> int:
        r"""Charge the release ``release`` describes before its noise is drawn; return its ledger position.

        Release functions call it with the record of the release they are about to make (its
        value not drawn yet), then :meth:`record` the release with ``charged=`` the position.
        The check and the charge are one atomic step (under a lock in memory, under the write
        lock of a SQLite ledger), so threads sharing an accountant, and accountants sharing a
        ledger file, never spend past the budget together.  A charge whose release never comes
        stays in the ledger: it costs budget, never privacy.

        Raises
        ------
        CompositionError, BudgetError, ParameterError
            As :meth:`check`; nothing is charged.  Also a CompositionError when called from
            outside puffgm without the feature ``"honest-but-curious"``
            (:mod:`puffgm.core.features`): a hand-made record could claim any :math:`\epsilon`.
        """
        require_puffgm_caller("PrivacyAccountant.charge")
        entry = dataclasses.replace(self._entry(release, label), time=now())
        with self._store.transaction() as (held, append):
            self._total_with(entry.composition, held)
            append(entry)
            position = len(held)
            with self._lock:
                self._tokens[position] = self._mac("charge", str(position), entry.digest)
        return position

    def record(self, release, *, label: str | None = None, charged: int | None = None) -> None:
        """Record a release against the charge :meth:`charge` made for it, by its composition.

        Parameters
        ----------
        release : Release
        label : str, optional
            Unused (the label is the charge's); kept for the release functions' calls.
        charged : int
            The position :meth:`charge` returned for this release (release functions pass it).
            Without it nothing is recorded: the accountant records only releases it charged
            before their noise was drawn.

        Raises
        ------
        CompositionError
            If ``release`` is not the release this accountant charged at ``charged`` (built by
            hand, edited, copied or unpickled, or made without this accountant), or is already
            recorded.  Its charges stay.
        """
        require_puffgm_caller("PrivacyAccountant.record")
        entry = self._entry(release, label)
        if self._sealed(release):
            raise CompositionError("This release is already recorded in the accountant; a release counts once.")
        if charged is None:
            raise CompositionError(_NOT_CHARGED.format(kind=type(release).__name__))
        with self._lock:
            token = self._tokens.get(charged) if isinstance(charged, int) else None
        if token is None or not hmac.compare_digest(token, self._mac("charge", str(charged), entry.digest)):
            raise CompositionError(f"Ledger position {charged} holds no open charge of this accountant for this "
                                   f"release (its every composition fact and epsilon must be the charge's), so "
                                   f"the accountant cannot record it there; the charge stays.")
        if not self._store.mark_released(charged, entry.digest):
            raise CompositionError(f"Ledger position {charged} holds no open charge for this release, so the "
                                   "accountant cannot record it there; the charge stays.")
        with self._lock:
            self._tokens.pop(charged, None)
        seal = self._mac("seal", str(charged), entry.digest, _value_digest(release))
        with contextlib.suppress(AttributeError):  # a record without a __dict__ is recorded, unsealed
            object.__setattr__(release, _SEAL, _Seal(self._nonce, charged, seal))

    # ------------------------------------------------------------ tokens
    def _mac(self, *parts: str) -> bytes:
        """HMAC-SHA256 under the process's secret of this accountant's nonce and ``parts``."""
        return hmac.new(_SECRET, b"|".join([self._nonce, *(p.encode() for p in parts)]), hashlib.sha256).digest()

    def _sealed(self, release) -> bool:
        """True if ``release`` is, unchanged, one this accountant recorded (its seal verifies)."""
        seal = getattr(release, _SEAL, None)
        if not (isinstance(seal, _Seal) and seal.nonce == self._nonce):
            return False
        expected = self._mac("seal", str(seal.position), release.composition.digest(), _value_digest(release))
        return hmac.compare_digest(seal.mac, expected)

    # ----------------------------------------------------------- entries
    def _entry(self, release, label: str | None) -> LedgerEntry:
        """The ledger entry of ``release``: its checked composition (or a refusal)."""
        if not isinstance(release, Release):
            name = getattr(release, "mechanism", None) or "an unknown mechanism"
            raise CompositionError(
                f"The accountant cannot compose a {type(release).__name__} ({name}): it is not a puffgm release "
                "record (puffgm.core.release.Release), so no composition theorem is known to hold for it "
                "(Bai et al., section 4: Pufferfish releases need not compose)."
            )
        rec = cast(Any, release)  # the base's contract: mechanism, secure, theorem
        comp = release.composition
        if not isinstance(comp, Composition):
            raise CompositionError(f"The release of {rec.mechanism} declares the composition rule {comp!r}, which is "
                                   "not a puffgm.core.composition.Composition, so no composition theorem is known "
                                   "to hold for it.")
        comp.check(str(rec.mechanism))
        return LedgerEntry(comp, label, str(rec.mechanism), bool(rec.secure), theorem=str(rec.theorem),
                           digest=comp.digest())

    def _total_with(self, new: Composition, held: tuple) -> float:
        """The composed total of ``held`` with ``new`` added; raises when no theorem composes it or it is over
        budget."""
        comps = [e.composition for e in held]
        total = composed_total(comps, new)
        if self.budget is not None and total > self.budget * (1 + _TOL):
            raise BudgetError(
                f"This release would bring the composed guarantee to {total:g} ({theorem_of([*comps, new])}), "
                f"over the budget of {self.budget:g}; nothing was released."
            )
        return total

    # -------------------------------------------------------------- reports
    @property
    def entries(self) -> tuple:
        """The ledger: one :class:`LedgerEntry` per charged or recorded release, in order."""
        return self._entries

    @property
    def total(self) -> float:
        """The composed privacy parameter of everything charged."""
        return self.report().total

    @property
    def guarantee(self) -> str:
        """``"Blowfish"`` when the releases are Blowfish releases (private under their policy), else
        ``"Pufferfish"``."""
        return self.report().guarantee

    @property
    def theorem(self) -> str:
        """The composition theorem the total relies on."""
        return self.report().theorem

    @property
    def remaining(self) -> float:
        """Budget left (inf without a budget; 0 once a release held alone closes the ledger)."""
        return self.report().remaining

    def report(self) -> AccountingReport:
        """The composed guarantee of every charged release, with the theorem it rests on."""
        held = self._entries
        comps = [e.composition for e in held]
        return AccountingReport(
            total=composed_total(comps),
            budget=self.budget,
            n_releases=len(held),
            theorem=theorem_of(comps) if held else THEOREM_MQM,
            entries=held,
            guarantee="Blowfish" if any(c.guarantee == "Blowfish" for c in comps) else "Pufferfish",
            closed=tuple(c.units for c in comps if c.closes),
        )


def _value_digest(release) -> str:
    """SHA-256 of the release's value as canonical JSON."""
    text = json.dumps(jsonable(cast(Any, release).value), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()
