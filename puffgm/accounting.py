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
  scale, optimal noise: :mod:`puffgm.mechanisms.query`): it is calibrated for
  one query by the exact laws of that query, and no theorem of Song et al., Bai
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

import math
from dataclasses import dataclass
from typing import Any, NoReturn, cast

from puffgm.core.release import Release
from puffgm.core.validation import check_positive_finite
from puffgm.exceptions import BudgetError, CompositionError

__all__ = ["PrivacyAccountant", "LedgerEntry", "AccountingReport", "THEOREM_MQM", "THEOREM_7", "THEOREM_BLOWFISH"]

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
    "it was calibrated for one query from that query's exact conditional laws, and no composition theorem "
    "(Song et al., Bai et al., Kifer and Machanavajjhala) covers such releases together with any other: "
    "Pufferfish releases need not compose (Bai et al., section 4). Use MQM or curve-based releases to compose"
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
class LedgerEntry:
    """One recorded release.

    Attributes
    ----------
    kind : str
        ``"mqm"`` (Song et al. Theorem 4.4), ``"dp"`` (Bai et al. Theorem 7), ``"blowfish"``, or
        ``"single"`` (a query-specific release, held alone).
    epsilon : float
        The release's own privacy parameter.
    key : str
        Quilt-set key, curve key or policy key: releases compose only within one key.
    label, mechanism, secure
        As given by the release.
    a, b, epsilon_dp
        Curve point and DP parameter of a ``"dp"`` release (None otherwise).
    subset : frozenset or None
        Individuals a ``"blowfish"`` release reads (None: all).
    policy : str or None
        The description of the policy of a ``"blowfish"`` release, when the release records one.
    """

    kind: str
    epsilon: float
    key: str
    label: str | None
    mechanism: str
    secure: bool
    a: float | None = None
    b: int | None = None
    epsilon_dp: float | None = None
    subset: frozenset | None = None
    policy: str | None = None


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
        b = "no budget" if self.budget is None else f"budget {self.budget:g}, remaining {self.remaining:g}"
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

    Parameters
    ----------
    budget : float, optional
        Total privacy budget; releases beyond it are refused (nothing released).
        Keyword-only: ``PrivacyAccountant(budget=8.0)``.
    """

    def __init__(self, *, budget: float | None = None):
        self.budget = None if budget is None else check_positive_finite(budget, "budget", "PrivacyAccountant")
        self._entries: list[LedgerEntry] = []

    # ------------------------------------------------- Theorem 7 (Bai et al.)
    @staticmethod
    def _theorem7(points) -> float:
        """max_l a_l + sum_l (epsilon_puffer_l - a_l) over (epsilon_puffer_l, a_l) pairs."""
        if not points:
            return 0.0
        return max(a for _, a in points) + sum(e - a for e, a in points)

    def _dp_total(self, extra=None, extra_key=None) -> float:
        entries = [e for e in self._entries if e.kind == "dp"]
        points = [(e.epsilon, e.a) for e in entries]
        keys = {e.key for e in entries}
        if extra is not None:
            points.append(extra)
            keys.add(extra_key)
        if len(keys) > 1:
            raise CompositionError(
                "These releases were translated along a(b)-influence curves of different prior classes or "
                "secrets, so Theorem 7 of Bai et al. does not apply; use curve points of one (Theta, S)."
            )
        return self._theorem7(points)

    def check_dp(self, *, epsilon_puffer: float, a: float, b: int, curve_key: str) -> float:
        """The composed total after one more DP-based release at curve point (a, b).

        Raises CompositionError if it cannot be composed (other kind of releases, other
        curve, a >= epsilon_puffer) and BudgetError if the total would exceed the budget.
        """
        self._refuse_after_single("a DP-based release")
        epsilon_puffer = check_positive_finite(epsilon_puffer, "epsilon_puffer", "PrivacyAccountant.check_dp")
        a = float(a)
        if not (math.isfinite(a) and 0 <= a < epsilon_puffer):
            raise CompositionError(
                f"Theorem 7 needs a curve point with 0 <= a < epsilon_puffer; got a = {a!r} for "
                f"epsilon_puffer = {epsilon_puffer:g}."
            )
        if isinstance(b, bool) or int(b) != b or int(b) < 1:
            raise CompositionError(f"The curve point's b must be an integer >= 1; got {b!r}.")
        other = next((e.kind for e in self._entries if e.kind != "dp"), None)
        if other is not None:
            raise _mixing_refusal(other, "dp")
        total = self._dp_total((epsilon_puffer, a), curve_key)
        if self.budget is not None and total > self.budget * (1 + _TOL):
            raise BudgetError(
                f"This release would bring the composed guarantee to {total:g} (Theorem 7 of Bai et al.), "
                f"over the budget of {self.budget:g}; nothing was released."
            )
        return total

    def record_dp(self, release, *, label: str | None = None) -> None:
        """Record a DP-based Pufferfish release (after :meth:`check_dp` passed)."""
        a = getattr(release, "a", None)
        b = getattr(release, "b", None)
        if a is None or b is None or getattr(release, "epsilon_dp", None) is None:
            self.refuse(release)
        self.check_dp(epsilon_puffer=release.epsilon_puffer, a=a, b=b, curve_key=release.curve_key)
        self._entries.append(
            LedgerEntry("dp", float(release.epsilon_puffer), release.curve_key, label, release.mechanism,
                        bool(release.secure), a=float(a), b=int(b), epsilon_dp=float(release.epsilon_dp))
        )

    def refuse(self, release=None, *, mechanism: str | None = None) -> NoReturn:
        """Refuse a bare Pufferfish release (no curve point): always raises CompositionError."""
        name = mechanism or getattr(release, "mechanism", None) or "this mechanism"
        raise CompositionError(f"The accountant cannot compose a release of {name}: {_COLLAPSE}.")

    def record(self, release, *, label: str | None = None, quilt_key: str | None = None) -> None:
        """Record any release by the composition rule it declares (``release.composition``).

        * ``"curve"``: Bai et al. Theorem 7 (:meth:`record_dp`);
        * ``"blowfish"``: He et al. Theorems 4.1 and 4.2 (:meth:`record_blowfish`);
        * ``"markov-quilt"``: Song et al. Theorem 4.4 (:meth:`record_mqm`) over the
          release's ``quilt_key`` (the ``quilt_key`` argument, if given, takes its place);
        * ``"query-specific"``: held only alone (:meth:`check_query_specific`);
        * ``"none"``: refused (:meth:`refuse`).

        Raises
        ------
        CompositionError
            If ``release`` is not a :class:`~puffgm.core.release.Release`, declares no
            known rule, or cannot be composed with what is recorded.
        BudgetError
            If the composed total would exceed the budget.
        """
        if not isinstance(release, Release):
            name = getattr(release, "mechanism", None) or "an unknown mechanism"
            raise CompositionError(
                f"The accountant cannot compose a {type(release).__name__} ({name}): it is not a puffgm release "
                "record (puffgm.core.release.Release), so no composition theorem is known to hold for it "
                "(Bai et al., section 4: Pufferfish releases need not compose)."
            )
        # Release subclasses provide mechanism, epsilon and secure (fields or properties); the base class
        # does not declare them
        release = cast(Any, release)
        rule = release.composition
        if rule == "curve":
            self.record_dp(release, label=label)
        elif rule == "blowfish":
            self.record_blowfish(release, label=label)
        elif rule == "markov-quilt":
            key = getattr(release, "quilt_key", None) if quilt_key is None else quilt_key
            if key is None:
                raise CompositionError(f"The release of {release.mechanism} names no quilt sets (quilt_key), so "
                                       "Theorem 4.4 of Song et al. cannot be applied to it.")
            self.record_mqm(release, quilt_key=key, label=label)
        elif rule == "query-specific":
            self.check_query_specific(mechanism=release.mechanism, epsilon=release.epsilon)
            self._entries.append(LedgerEntry("single", float(release.epsilon), "single", label, release.mechanism,
                                             bool(release.secure)))
        elif rule == "none":
            self.refuse(release)
        else:
            raise CompositionError(f"The release of {release.mechanism} declares the composition rule {rule!r}; "
                                   "the accountant knows 'markov-quilt', 'curve', 'blowfish', 'query-specific' "
                                   "and 'none'.")

    # ------------------------------------------------------- query-specific
    def _refuse_after_single(self, mechanism: str) -> None:
        held = [e for e in self._entries if e.kind == "single"]
        if held:
            raise CompositionError(f"The accountant holds a query-specific release ({held[0].mechanism}), so it "
                                   f"cannot compose {mechanism} with it: {_SINGLE}.")

    def check_query_specific(self, *, mechanism: str, epsilon: float | None = None) -> float:
        """Check that a query-specific release may be recorded: only into an empty accountant, within budget.

        Raises
        ------
        CompositionError
            If any release is already recorded.
        BudgetError
            If its epsilon exceeds the budget.
        """
        if self._entries:
            raise CompositionError(f"The accountant cannot compose {mechanism} with the {len(self._entries)} "
                                   f"release(s) it holds: {_SINGLE}.")
        if epsilon is not None and self.budget is not None and epsilon > self.budget * (1 + _TOL):
            raise BudgetError(f"This release's epsilon {epsilon:g} is over the budget of {self.budget:g}; "
                              "nothing was released.")
        return 0.0 if epsilon is None else float(epsilon)

    # ------------------------------------------------------------------ MQM
    def _mqm_total(self, extra_eps=None, extra_key=None) -> float:
        entries = [e for e in self._entries if e.kind == "mqm"]
        eps = [e.epsilon for e in entries]
        keys = {e.key for e in entries}
        if extra_eps is not None:
            eps.append(extra_eps)
            keys.add(extra_key)
        if not eps:
            return 0.0
        if len(keys) > 1:
            raise CompositionError(
                "These Markov Quilt Mechanism releases use different instantiations or quilt sets, "
                "so Theorem 4.4 of Song et al. does not apply and Pufferfish releases need not compose "
                "(Bai et al., section 4); use one calibration's quilt sets for every release."
            )
        return len(eps) * max(eps)

    def check_mqm(self, *, epsilon: float, quilt_key: str) -> float:
        """The total after one more MQM release; raises if it cannot be composed or is over budget."""
        self._refuse_after_single("a Markov Quilt Mechanism release")
        epsilon = check_positive_finite(epsilon, "epsilon", "PrivacyAccountant.check_mqm")
        other = next((e.kind for e in self._entries if e.kind != "mqm"), None)
        if other is not None:
            raise _mixing_refusal(other, "mqm")
        total = self._mqm_total(epsilon, quilt_key)
        if self.budget is not None and total > self.budget * (1 + _TOL):
            raise BudgetError(
                f"This release would bring the composed guarantee to {total:g}, over the budget of "
                f"{self.budget:g}; nothing was released."
            )
        return total

    def record_mqm(self, release, *, quilt_key: str, label: str | None = None) -> None:
        """Record an MQM release (after :meth:`check_mqm` passed)."""
        self.check_mqm(epsilon=release.epsilon, quilt_key=quilt_key)
        self._entries.append(
            LedgerEntry("mqm", float(release.epsilon), quilt_key, label, release.mechanism, bool(release.secure))
        )

    # ------------------------------------------------------------ Blowfish
    def _blowfish_total(self, extra=None) -> float:
        """Sequential (Thm 4.1) and parallel (Thm 4.2) composition: the largest, over individuals,
        sum of the epsilons of the releases that read that individual."""
        items = [(e.epsilon, e.key, e.subset) for e in self._entries if e.kind == "blowfish"]
        if extra is not None:
            items.append(extra)
        if len({k for _, k, _ in items}) > 1:
            raise CompositionError(
                "These Blowfish releases use different policies; Theorems 4.1 and 4.2 of He et al. compose "
                "releases under one policy only, so the accountant refuses to add them up."
            )
        everyone = sum(eps for eps, _, sub in items if sub is None)
        ids = set().union(*[sub for _, _, sub in items if sub is not None])
        return everyone + max((sum(eps for eps, _, sub in items if sub is not None and i in sub) for i in ids),
                              default=0.0)

    def check_blowfish(self, *, epsilon: float, policy_key: str, subset=None, constrained: bool = False) -> float:
        """The total after one more (epsilon, P)-Blowfish release; raises if it cannot be composed or is over budget.

        ``subset`` (a set of individual ids) marks a release computed on those individuals only
        (parallel composition with a cardinality constraint, He et al. Theorem 4.2); refused for
        policies with count constraints (Theorem 4.3 needs the critical pairs of each constraint).
        """
        self._refuse_after_single("a Blowfish release")
        epsilon = check_positive_finite(epsilon, "epsilon", "PrivacyAccountant.check_blowfish")
        other = next((e.kind for e in self._entries if e.kind != "blowfish"), None)
        if other is not None:
            raise _mixing_refusal(other, "blowfish")
        if subset is not None:
            if constrained:
                raise CompositionError(
                    "Parallel composition over subsets of individuals needs a policy without count constraints "
                    "(He et al. Theorem 4.2); constraints can correlate individuals across subsets (Theorem 4.3)."
                )
            subset = frozenset(subset)
            if not subset:
                raise CompositionError("The subset of individuals of a parallel release is empty.")
        total = self._blowfish_total((epsilon, policy_key, subset))
        if self.budget is not None and total > self.budget * (1 + _TOL):
            raise BudgetError(
                f"This release would bring the composed Blowfish guarantee to {total:g}, over the budget of "
                f"{self.budget:g}; nothing was released."
            )
        return total

    def record_blowfish(self, release, *, subset=None, label: str | None = None) -> None:
        """Record a Blowfish release (``release.policy_key``, ``.epsilon``; after :meth:`check_blowfish`)."""
        subset = getattr(release, "subset", None) if subset is None else subset
        self.check_blowfish(epsilon=release.epsilon, policy_key=release.policy_key, subset=subset,
                            constrained=bool(getattr(release, "constrained", False)))
        self._entries.append(
            LedgerEntry("blowfish", float(release.epsilon), release.policy_key, label, release.mechanism,
                        bool(release.secure), subset=None if subset is None else frozenset(subset),
                        policy=_policy_description(release))
        )

    # -------------------------------------------------------------- reports
    @property
    def entries(self) -> tuple:
        """The ledger: one :class:`LedgerEntry` per recorded release, in order."""
        return tuple(self._entries)

    @property
    def total(self) -> float:
        """The composed privacy parameter of everything recorded."""
        if any(e.kind == "single" for e in self._entries):
            return self._entries[0].epsilon
        if any(e.kind == "dp" for e in self._entries):
            return self._dp_total()
        if any(e.kind == "blowfish" for e in self._entries):
            return self._blowfish_total()
        return self._mqm_total()

    @property
    def guarantee(self) -> str:
        """``"Blowfish"`` when the releases are Blowfish releases (private under their policy), else
        ``"Pufferfish"``."""
        return "Blowfish" if any(e.kind == "blowfish" for e in self._entries) else "Pufferfish"

    @property
    def theorem(self) -> str:
        """The composition theorem the total relies on."""
        if any(e.kind == "single" for e in self._entries):
            return "a single query-specific release (no composition)"
        if any(e.kind == "blowfish" for e in self._entries):
            return THEOREM_BLOWFISH
        return THEOREM_7 if any(e.kind == "dp" for e in self._entries) else THEOREM_MQM

    @property
    def remaining(self) -> float:
        """Budget left (inf without a budget)."""
        return math.inf if self.budget is None else max(0.0, self.budget - self.total)

    def report(self) -> AccountingReport:
        """The composed guarantee of every recorded release, with the theorem it rests on."""
        return AccountingReport(
            total=self.total,
            budget=self.budget,
            n_releases=len(self._entries),
            theorem=self.theorem,
            entries=self.entries,
            guarantee=self.guarantee,
        )


def _policy_description(release) -> str | None:
    """The policy description a Blowfish release records in its details (None if it records none)."""
    details = getattr(release, "details", None) or {}
    policy = details.get("policy") if hasattr(details, "get") else None
    return None if policy is None else str(policy)
