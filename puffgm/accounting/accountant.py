"""Explicit privacy accounting for sequences of releases on the same data.

Pufferfish privacy does not compose in general (Kifer and Machanavajjhala,
section 10; Bai et al., section 4 show "privacy collapse").  The accountant
therefore only adds up releases for which a composition theorem applies, and
refuses the others:

* **Markov Quilt Mechanism releases that share quilt sets** (Song, Wang and
  Chaudhuri 2017, Theorem 4.4 and the remark after it): K releases with the
  same instantiation and the same quilt sets S_{Q,i}, at privacy parameters
  epsilon_1..epsilon_K, are together (K * max_k epsilon_k)-Pufferfish private.
* **DP-based releases along an a(b)-influence curve** (Bai, He, Gu, Kifer and
  Maeng, Theorem 7): releases l = 1..k of per-entry epsilon_DP_l-DP mechanisms
  translated at curve points (a_l, b_l) of the same (Theta, S), each
  epsilon_puffer_l-Pufferfish by Theorem 6 (a_l < epsilon_puffer_l), are together

      max_l a_l + sum_l (epsilon_puffer_l - a_l)

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
derives from :class:`puffgm.core.release.Release` and names its rule in
``composition`` (``"markov-quilt"``, ``"curve"``, ``"blowfish"``,
``"query-specific"`` or ``"none"``).  Releases of a "bare" Pufferfish mechanism (no DP constraint, no curve point)
are refused with :class:`~puffgm.exceptions.CompositionError`: Bai et al.,
section 4, give mechanisms with zero leakage alone that reveal the data when run
twice (privacy collapse).  MQM releases and curve-based releases are not mixed
in one accountant: Song et al. Theorem 4.4 composes MQM releases only with MQM
releases over the same quilt sets, Bai et al. Theorem 7 composes only DP-based
releases along one curve, and no theorem of either paper covers the mix; the
refusal says so.  Blowfish releases are (epsilon, P)-Blowfish private under their
policy, a guarantee of another kind than Pufferfish privacy for a prior class:
the report of an accountant holding them says "Blowfish private under the policy",
and they are not mixed with Pufferfish releases either.

There is no hidden global accountant: create one and pass it to each release.
A release that would exceed the budget raises :class:`~puffgm.exceptions.BudgetError`
before any noise is drawn, so nothing is released.

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

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, cast

from puffgm.accounting.ledger import LedgerEntry, check_budget, now, open_ledger
from puffgm.core.release import Release, composition_key, was_issued
from puffgm.core.validation import check_positive_finite
from puffgm.exceptions import BudgetError, CompositionError

__all__ = ["PrivacyAccountant", "AccountingReport", "THEOREM_MQM", "THEOREM_7", "THEOREM_BLOWFISH"]

THEOREM_MQM = "Song, Wang and Chaudhuri 2017, Theorem 4.4 (sequential composition of MQM with shared quilt sets)"

THEOREM_7 = ("Bai, He, Gu, Kifer and Maeng, Theorem 7 (composition of DP-based Pufferfish mechanisms along an "
             "a(b)-influence curve)")

THEOREM_BLOWFISH = (
    "He, Machanavajjhala and Ding 2014, Theorems 4.1 and 4.2 (sequential composition, and parallel composition "
    "with a cardinality constraint, of releases under one Blowfish policy)"
)

_COLLAPSE = (
    "it has no curve point (a, b) and epsilon_DP, so no composition theorem applies: Bai et al., "
    "section 4, show that Pufferfish mechanisms without DP-style constraints can collapse when composed"
)

_TOL = 1e-12

_SINGLE = (
    "it was calibrated for one query, or one table of queries released together, from their exact conditional "
    "laws, and no composition theorem (Song et al., Bai et al., Kifer and Machanavajjhala) covers such releases "
    "together with any other: Pufferfish releases need not compose (Bai et al., section 4). Put every statistic "
    "in one workload, or use MQM or curve-based releases to compose"
)


#: What each kind of ledger entry is, and the only theorem that composes it (for refusals).
_KIND_RULE = {
    "mqm": ("Markov Quilt Mechanism releases", "a Markov Quilt Mechanism release",
            "Song et al. Theorem 4.4 composes MQM releases only with MQM releases over the same quilt sets"),
    "dp": ("DP-based releases along an a(b)-influence curve", "a DP-based release along an a(b)-influence curve",
           "Bai et al. Theorem 7 composes DP-based releases translated along one a(b)-influence curve only"),
    "blowfish": ("Blowfish releases", "a Blowfish release",
                 "He et al. Theorems 4.1 and 4.2 compose releases under one Blowfish policy only, and their "
                 "guarantee, (epsilon, P)-Blowfish privacy under a policy, is not Pufferfish privacy for a prior "
                 "class"),
}


def _mixing_refusal(held: str, new: str) -> CompositionError:
    """The refusal to compose a release of kind ``new`` with held releases of kind ``held``, with the reason."""
    held_name, _, held_rule = _KIND_RULE[held]
    _, new_name, new_rule = _KIND_RULE[new]
    if {held, new} == {"mqm", "dp"}:
        why = ("no theorem in Song, Wang and Chaudhuri 2017 or in Bai et al. covers this mix: "
               f"{held_rule}, and {new_rule}; Pufferfish releases need not compose (Bai et al., section 4)")
    else:
        why = f"no theorem composes releases of another kind with them: {held_rule}; {new_rule}"
    return CompositionError(f"The accountant holds {held_name}, so it refuses {new_name}: {why}. "
                            "Nothing was released.")


@dataclass(frozen=True)
class AccountingReport:
    """The composed guarantee of every recorded release and the theorem it rests on.

    Attributes
    ----------
    total : float
        The composed privacy parameter.
    budget : float or None
        The accountant's budget.
    n_releases : int
        Number of recorded releases.
    theorem : str
        The composition theorem the total rests on.
    entries : tuple of LedgerEntry
        The ledger.
    guarantee : str
        ``"Pufferfish"`` (epsilon-Pufferfish privacy for the prior class and secrets of
        the releases) or ``"Blowfish"`` ((epsilon, P)-Blowfish privacy under the policy P
        of the releases, He et al. Definition 4.3; not a Pufferfish guarantee for a prior class).
    """

    total: float
    budget: float | None
    n_releases: int
    theorem: str
    entries: tuple
    guarantee: str = "Pufferfish"

    @property
    def remaining(self) -> float:
        """Budget left (inf without a budget)."""
        return math.inf if self.budget is None else max(0.0, self.budget - self.total)

    def explain(self) -> str:
        """One line: number of releases, composed guarantee, budget, theorem."""
        b = "unlimited budget" if self.budget is None else f"budget {self.budget:g}, remaining {self.remaining:g}"
        if self.guarantee == "Blowfish":
            e = self.entries[0] if self.entries else None
            policy = "" if e is None else f" ({e.policy}; key {e.key})" if e.policy else f" (key {e.key})"
            return (f"{self.n_releases} release(s): ({self.total:g}, P)-Blowfish private under their policy P"
                    f"{policy}, not a Pufferfish guarantee for a prior class ({b}); by {self.theorem}")
        return f"{self.n_releases} release(s): {self.total:g}-Pufferfish private ({b}); by {self.theorem}"

    def __str__(self):
        return self.explain()


class PrivacyAccountant:
    """Records releases and reports their composed Pufferfish guarantee.

    The accountant takes releases only from puffgm's release functions (pass it as
    ``accountant=``; :func:`puffgm.core.release.was_issued`) and derives every
    composition key from the release itself (:func:`puffgm.core.release.composition_key`):
    no caller names a key, and a record built or edited by hand is refused.

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
        self._held: list[Release] = []  # the releases recorded in this process (identity: one record once)

    @property
    def _entries(self) -> tuple:
        return self._store.entries()

    # ------------------------------------------------------------- public
    def check(self, release) -> float:
        """The composed total if ``release`` were recorded now; nothing is recorded.

        Raises
        ------
        CompositionError
            If ``release`` is not a puffgm release record, declares no composition rule
            puffgm knows, or cannot be composed with what is recorded.
        BudgetError
            If the composed total would exceed the budget.
        ParameterError
            If the release's privacy parameter is not a finite number > 0.
        """
        return self._total_with(self._entry(release, None), self._entries)

    def charge(self, release, *, label: str | None = None) -> int:
        """Charge the release ``release`` describes before its noise is drawn; return its ledger position.

        Release functions call it with the record of the release they are about to make (its
        value not drawn yet), then :meth:`record` the release with ``charged=`` the position.
        The check and the charge are one transaction (in a SQLite ledger, under its write lock),
        so concurrent accountants on one ledger never spend past the budget together.  A charge
        whose release never comes stays in the ledger: it costs budget, never privacy.

        Raises
        ------
        CompositionError, BudgetError, ParameterError
            As :meth:`check`; nothing is charged.
        """
        entry = dataclasses.replace(self._entry(release, label), time=now())
        with self._store.transaction() as (held, append):
            self._total_with(entry, held)
            append(entry)
            return len(held)

    def record(self, release, *, label: str | None = None, charged: int | None = None) -> None:
        """Record a release made by one of puffgm's release functions, by the rule it declares.

        * ``"markov-quilt"``: Song et al. Theorem 4.4, within one instantiation and quilt sets;
        * ``"curve"``: Bai et al. Theorem 7, along one a(b)-influence curve;
        * ``"blowfish"``: He et al. Theorems 4.1 and 4.2, under one policy;
        * ``"query-specific"``: held only alone;
        * ``"none"``: refused (Bai et al., section 4: no composition theorem applies).

        Parameters
        ----------
        release : Release
        label : str, optional
            The release's name in the ledger.
        charged : int, optional
            The position :meth:`charge` returned for this release (release functions pass it);
            without it the release is charged now.

        Raises
        ------
        CompositionError
            If ``release`` was not returned by a puffgm release function in this process
            (built by hand, edited, unpickled), is already recorded, does not match its charge,
            or cannot be composed.
        BudgetError
            If the composed total would exceed the budget.
        """
        entry = self._entry(release, label)
        if not was_issued(release):
            raise CompositionError(
                f"The accountant records only releases returned by puffgm's release functions in this process, and "
                f"this {type(release).__name__} is not one (built by hand, edited or unpickled), so no composition "
                "theorem is known to hold for it."
            )
        if any(held is release for held in self._held):
            raise CompositionError("This release is already recorded in the accountant; a release counts once.")
        if charged is None:
            charged = self.charge(release, label=label)
        else:
            self._match_charge(entry, charged)
        self._store.mark_released(charged)
        self._held.append(release)

    def _match_charge(self, entry: LedgerEntry, position: int) -> None:
        """Refuse a release that is not the one charged at ``position``."""
        held = self._entries
        c = held[position] if 0 <= position < len(held) else None
        if c is None or c.status != "charged" or (c.kind, c.key, c.epsilon) != (entry.kind, entry.key, entry.epsilon):
            raise CompositionError(f"Ledger position {position} holds no open charge for this release, so the "
                                   "accountant cannot record it there.")

    # ----------------------------------------------------------- entries
    def _entry(self, release, label: str | None) -> LedgerEntry:
        """The ledger entry of ``release``: its rule, validated epsilon and derived key (or a refusal)."""
        if not isinstance(release, Release):
            name = getattr(release, "mechanism", None) or "an unknown mechanism"
            raise CompositionError(
                f"The accountant cannot compose a {type(release).__name__} ({name}): it is not a puffgm release "
                "record (puffgm.core.release.Release), so no composition theorem is known to hold for it "
                "(Bai et al., section 4: Pufferfish releases need not compose)."
            )
        rec = cast(Any, release)  # subclasses provide mechanism, epsilon and secure
        rule = release.composition
        if rule == "none":
            raise CompositionError(f"The accountant cannot compose a release of {rec.mechanism}: {_COLLAPSE}.")
        if rule not in _RULE_KIND:
            raise CompositionError(f"The release of {rec.mechanism} declares the composition rule {rule!r}; "
                                   "the accountant knows 'markov-quilt', 'curve', 'blowfish', 'query-specific' "
                                   "and 'none'.")
        epsilon = check_positive_finite(rec.epsilon, "epsilon", f"the accountant's record of {rec.mechanism}")
        label = label if label is not None else _label_of(release)
        entry = LedgerEntry(_RULE_KIND[rule], epsilon, composition_key(release), label, rec.mechanism,
                            bool(rec.secure), theorem=str(rec.theorem))
        if rule == "curve":
            return _curve_entry(entry, rec)
        if rule == "blowfish":
            subset = None if rec.subset is None else frozenset(rec.subset)
            if subset is not None and rec.constrained:
                raise CompositionError(
                    "Parallel composition over subsets of individuals needs a policy without count constraints "
                    "(He et al. Theorem 4.2); constraints can correlate individuals across subsets (Theorem 4.3)."
                )
            if subset is not None and not subset:
                raise CompositionError("The subset of individuals of a parallel release is empty.")
            return dataclasses.replace(entry, subset=subset, policy=_policy_description(release))
        return entry

    def _total_with(self, entry: LedgerEntry, held: tuple) -> float:
        """The composed total of ``held`` with ``entry`` added; raises when no theorem composes it or it is over
        budget."""
        if entry.kind == "single" and held:
            raise CompositionError(f"The accountant cannot compose {entry.mechanism} with the {len(held)} "
                                   f"release(s) it holds: {_SINGLE}.")
        if held and held[0].kind == "single":
            raise CompositionError(f"The accountant holds a query-specific release ({held[0].mechanism}), so it "
                                   f"cannot compose {_KIND_RULE[entry.kind][1]} with it: {_SINGLE}.")
        other = next((e.kind for e in held if e.kind != entry.kind), None)
        if other is not None:
            raise _mixing_refusal(other, entry.kind)
        total = _TOTAL[entry.kind]([*held, entry])
        if self.budget is not None and total > self.budget * (1 + _TOL):
            raise BudgetError(
                f"This release would bring the composed guarantee to {total:g} ({_THEOREM_OF[entry.kind]}), "
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
        held = self._entries
        return _TOTAL[held[0].kind](list(held)) if held else 0.0

    @property
    def guarantee(self) -> str:
        """``"Blowfish"`` when the releases are Blowfish releases (private under their policy), else
        ``"Pufferfish"``."""
        return "Blowfish" if any(e.kind == "blowfish" for e in self._entries) else "Pufferfish"

    @property
    def theorem(self) -> str:
        """The composition theorem the total relies on."""
        held = self._entries
        return _THEOREM_OF[held[0].kind] if held else THEOREM_MQM

    @property
    def remaining(self) -> float:
        """Budget left (inf without a budget)."""
        return math.inf if self.budget is None else max(0.0, self.budget - self.total)

    def report(self) -> AccountingReport:
        """The composed guarantee of every charged release, with the theorem it rests on."""
        held = self._entries
        return AccountingReport(
            total=_TOTAL[held[0].kind](list(held)) if held else 0.0,
            budget=self.budget,
            n_releases=len(held),
            theorem=_THEOREM_OF[held[0].kind] if held else THEOREM_MQM,
            entries=held,
            guarantee="Blowfish" if any(e.kind == "blowfish" for e in held) else "Pufferfish",
        )


def _curve_entry(entry: LedgerEntry, rec) -> LedgerEntry:
    """A curve release's entry with its point (a, b) and epsilon_DP, checked as Theorem 7 needs."""
    a, b, eps_dp = float(rec.a), rec.b, float(rec.epsilon_dp)
    if not (math.isfinite(a) and 0 <= a < entry.epsilon):
        raise CompositionError(f"Theorem 7 needs a curve point with 0 <= a < epsilon_puffer; got a = {a!r} for "
                               f"epsilon_puffer = {entry.epsilon:g}.")
    if isinstance(b, bool) or int(b) != b or int(b) < 1:
        raise CompositionError(f"The curve point's b must be an integer >= 1; got {b!r}.")
    if not (math.isfinite(eps_dp) and eps_dp > 0):
        raise CompositionError(f"The release's epsilon_DP must be a finite number > 0; got {eps_dp!r}.")
    return dataclasses.replace(entry, a=a, b=int(b), epsilon_dp=eps_dp)


def _one_key(entries, refusal: str) -> None:
    """Raise CompositionError(refusal) unless every entry has the same key."""
    if len({e.key for e in entries}) > 1:
        raise CompositionError(refusal)


def _mqm_total(entries) -> float:
    """Song et al. Theorem 4.4 and the remark after it: K * max_k epsilon_k over one key."""
    _one_key(entries, "These Markov Quilt Mechanism releases use different instantiations or quilt sets, "
                      "so Theorem 4.4 of Song et al. does not apply and Pufferfish releases need not compose "
                      "(Bai et al., section 4); use one calibration's quilt sets for every release.")
    return len(entries) * max(e.epsilon for e in entries)


def _dp_total(entries) -> float:
    """Bai et al. Theorem 7: max_l a_l + sum_l (epsilon_puffer_l - a_l) along one curve."""
    _one_key(entries, "These releases were translated along a(b)-influence curves of different prior classes or "
                      "secrets, so Theorem 7 of Bai et al. does not apply; use curve points of one (Theta, S).")
    return max(e.a for e in entries) + sum(e.epsilon - e.a for e in entries)


def _blowfish_total(entries) -> float:
    """He et al. Theorems 4.1 (sequential) and 4.2 (parallel): the largest, over individuals, sum of the
    epsilons of the releases that read that individual, under one policy."""
    _one_key(entries, "These Blowfish releases use different policies; Theorems 4.1 and 4.2 of He et al. compose "
                      "releases under one policy only, so the accountant refuses to add them up.")
    everyone = sum(e.epsilon for e in entries if e.subset is None)
    ids = set().union(*[e.subset for e in entries if e.subset is not None])
    return everyone + max((sum(e.epsilon for e in entries if e.subset is not None and i in e.subset) for i in ids),
                          default=0.0)


def _single_total(entries) -> float:
    """A query-specific release is held alone: its own epsilon."""
    return entries[0].epsilon


#: The ledger kind of each composition rule a release may declare.
_RULE_KIND = {"markov-quilt": "mqm", "curve": "dp", "blowfish": "blowfish", "query-specific": "single"}

_TOTAL = {"mqm": _mqm_total, "dp": _dp_total, "blowfish": _blowfish_total, "single": _single_total}

_THEOREM_OF = {"mqm": THEOREM_MQM, "dp": THEOREM_7, "blowfish": THEOREM_BLOWFISH,
               "single": "a single query-specific release (no composition)"}


def _label_of(release) -> str | None:
    """The label a release records in its details (None if it records none)."""
    details = getattr(release, "details", None) or {}
    label = details.get("label") if hasattr(details, "get") else None
    return None if label is None else str(label)


def _policy_description(release) -> str | None:
    """The policy description a Blowfish release records in its details (None if it records none)."""
    details = getattr(release, "details", None) or {}
    policy = details.get("policy") if hasattr(details, "get") else None
    return None if policy is None else str(policy)
