r"""The Laplace mechanism under Blowfish (He, Machanavajjhala and Ding, Theorem 5.1).

$$
M(D) = f(D) + \mathrm{Lap}\left(S(f, P) / \epsilon\right)^d \quad \text{is } (\epsilon, P)\text{-Blowfish private},
$$

with :math:`S(f, P)` the policy-specific global sensitivity (Definition 5.1,
:mod:`puffgm.blowfish.sensitivity`).  When :math:`S(f, P) = 0` (e.g. a histogram over
the blocks of a partitioned secret graph) the answer is released exactly.

Noise comes from :mod:`puffgm.core.noise` (OpenDP's secure sampler unless a seed is
given; results then say ``secure=False``).  With an accountant the release is
checked before any noise is drawn and recorded after (Theorems 4.1, 4.2;
releases under different policies are refused).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from puffgm.blowfish.policy import Policy, PolicyError
from puffgm.blowfish.sensitivity import (
    Sensitivity,
    cumulative_sensitivity,
    histogram_cells,
    histogram_sensitivity,
    linear_sum_sensitivity,
    values_matrix,
)
from puffgm.core.accuracy import coordinate_names, laplace_rows
from puffgm.core.composition import Composition
from puffgm.core.noise import check_resolves, resolve_noise
from puffgm.core.release import Release, make_release
from puffgm.core.results import freeze_record
from puffgm.core.validation import check_nonnegative_finite, check_positive_finite
from puffgm.exceptions import CompositionError

__all__ = ["BlowfishComposition", "BlowfishRelease", "ReleaseOptions", "laplace_mechanism", "release_histogram",
           "release_cumulative", "release_linear_sum", "THEOREM_5_1", "THEOREM_BLOWFISH"]

THEOREM_5_1 = "He, Machanavajjhala and Ding 2014, Theorem 5.1 (Laplace mechanism at the policy-specific sensitivity)"

THEOREM_BLOWFISH = (
    "He, Machanavajjhala and Ding 2014, Theorems 4.1 and 4.2 (sequential composition, and parallel composition "
    "with a cardinality constraint, of releases under one Blowfish policy)"
)


@dataclass(frozen=True)
class BlowfishComposition(Composition):
    r"""He, Machanavajjhala and Ding 2014 ("Blowfish privacy: tuning privacy-utility trade-offs using
    policies", SIGMOD), Theorems 4.1 and 4.2.

    Under one policy :math:`P`, releases at :math:`\epsilon_1, \ldots, \epsilon_k` are
    :math:`(\sum_k \epsilon_k, P)`-Blowfish private
    (Theorem 4.1, sequential); releases computed from disjoint subsets of individuals of a policy
    without count constraints take the max (Theorem 4.2, parallel).  The ``units`` are the
    individuals the release reads (its ``subset``; None: all).  The guarantee is
    :math:`(\epsilon, P)`-Blowfish privacy under the policy, not Pufferfish privacy for a prior class.

    Attributes
    ----------
    policy_key : str
        Fingerprint of the policy: every release in one ledger must share it.
    constrained : bool
        True if the policy has count constraints (no parallel composition, Theorem 4.3).
    policy : str or None
        The policy's description, for reports.
    """

    policy_key: str = ""
    constrained: bool = False
    policy: str | None = None

    guarantee: ClassVar[str] = "Blowfish"
    kinds: ClassVar[str] = "Blowfish releases"
    one: ClassVar[str] = "a Blowfish release"
    rule: ClassVar[str] = ("He et al. Theorems 4.1 and 4.2 compose releases under one Blowfish policy only, and their "
                           "guarantee, (epsilon, P)-Blowfish privacy under a policy, is not Pufferfish privacy for a "
                           "prior class")
    theorem: ClassVar[str] = THEOREM_BLOWFISH
    source: ClassVar[str] = "He, Machanavajjhala and Ding 2014"

    @property
    def key(self) -> str:
        return str(self.policy_key)

    def check(self, mechanism: str) -> None:
        """Parallel composition needs a non-empty subset and a policy without count constraints."""
        if self.units is not None and not self.units:
            raise CompositionError("The subset of individuals of a parallel release is empty.")
        super().check(mechanism)
        if self.units is not None and self.constrained:
            raise CompositionError(
                "Parallel composition over subsets of individuals needs a policy without count constraints "
                "(He et al. Theorem 4.2); constraints can correlate individuals across subsets (Theorem 4.3).")

    def joins(self, held: Composition) -> str | None:
        """Releases under different policies never share a ledger, whatever individuals they read."""
        if isinstance(held, BlowfishComposition) and held.policy_key != self.policy_key:
            return ("These Blowfish releases use different policies; Theorems 4.1 and 4.2 of He et al. compose "
                    "releases under one policy only, so the accountant refuses to add them up.")
        return super().joins(held)

    @classmethod
    def compose(cls, entries: Sequence[Composition]) -> float:
        """Theorem 4.1: the sum of the epsilons of the releases reading one individual."""
        return sum(e.epsilon for e in entries)

    def describe(self) -> str:
        return f"{self.policy}; key {self.key}" if self.policy else f"key {self.key}"


@dataclass(frozen=True)
class BlowfishRelease(Release):
    r"""A noisy answer released under a Blowfish policy.

    Releases under one policy compose by He et al. Theorems 4.1 and 4.2
    (:class:`puffgm.accounting.PrivacyAccountant`).

    Attributes
    ----------
    value : float or ndarray
    mechanism : str
    epsilon : float
    scale : float
        Laplace scale :math:`S / \epsilon` on each coordinate (0: released exactly).
    sensitivity : float
    secure : bool
    noise : str
    policy_key : str
        Fingerprint of the policy; the accountant composes equal keys only.
    constrained : bool
        True if the policy has count constraints (no parallel composition).
    subset : frozenset or None
        Individuals the answer was computed from (parallel composition), None for all.
    theorem : str
    details : Mapping
    """

    value: Any
    mechanism: str
    epsilon: float
    scale: float
    sensitivity: float
    secure: bool
    noise: str
    policy_key: str
    constrained: bool
    subset: Any
    theorem: str
    details: Mapping = field(default_factory=dict)

    def __post_init__(self):
        freeze_record(self)

    @property
    def composition(self) -> BlowfishComposition:
        """He et al. Theorems 4.1 and 4.2 under the release's policy, on its subset of individuals."""
        subset = None if self.subset is None else frozenset(self.subset)
        policy = self.details.get("policy")
        return BlowfishComposition(self.epsilon, policy_key=self.policy_key, constrained=bool(self.constrained),
                                   policy=None if policy is None else str(policy), units=subset)

    @property
    def prior(self) -> str:
        """The Blowfish policy the guarantee holds for: its description (when recorded) and key."""
        policy = self.details.get("policy")
        return f"{policy} (key {self.policy_key})" if policy else f"Blowfish policy {self.policy_key}"

    def accuracy(self, alpha: float = 0.05) -> tuple:
        r"""Per coordinate, the Laplace scale :math:`S(f, P) / \epsilon` and its :math:`(1 - \alpha)` half-width.

        Both are 0 where the coordinate is released exactly.
        """
        names = coordinate_names(self.value)
        return laplace_rows(names, (self.scale,) * len(names), alpha)

    def explain(self) -> str:
        r"""One line: mechanism, :math:`(\epsilon, P)`, :math:`S(f, P)`, Laplace scale, theorem, noise source."""
        s = (f"{self.mechanism}: ({self.epsilon:g}, P)-Blowfish private, S(f, P) = {self.sensitivity:g}, "
             f"Laplace scale {self.scale:.6g} ({self.theorem}); noise: {self.noise}")
        return self._tagged(s)


@dataclass(frozen=True)
class ReleaseOptions:
    """How a Blowfish release draws its noise and is recorded.

    The keyword arguments ``random_state``, ``accountant``, ``label`` and ``subset``
    of the release functions, grouped for the steps they pass through.

    Attributes
    ----------
    random_state : None, int or numpy Generator
        None for OpenDP's secure sampler; a seed for reproducible, non-secure noise.
    accountant : PrivacyAccountant, optional
        Checked before any noise is drawn, charged after.
    label : str, optional
        The release's label in the accountant's ledger.
    subset : iterable, optional
        Ids of the individuals the answer was computed from (parallel composition).
    """

    random_state: Any = None
    accountant: Any = None
    label: str | None = None
    subset: Any = None


def laplace_mechanism(answer, policy: Policy, *, epsilon: float, sensitivity, random_state=None, accountant=None,
                      label: str | None = None, subset=None) -> BlowfishRelease:
    r"""Release ``answer + Lap(sensitivity / epsilon)`` coordinate-wise (Theorem 5.1).

    Parameters
    ----------
    answer : float or array
        The true answer :math:`f(D)`.
    policy : Policy
    epsilon : float
    sensitivity : float or Sensitivity
        :math:`S(f, P)` of the query under ``policy`` (a :class:`Sensitivity` must carry this policy's key).
    random_state : None, int or numpy Generator
        None for OpenDP's secure sampler; a seed for reproducible, non-secure noise.
    accountant : PrivacyAccountant, optional
    label : str, optional
        The release's label in the accountant's ledger.
    subset : iterable, optional
        Ids of the individuals the answer was computed from (parallel composition).

    Examples
    --------
    >>> from puffgm.blowfish import Domain, Policy, line_graph
    >>> p = Policy(line_graph(Domain.ordered(10)))
    >>> r = laplace_mechanism(3.0, p, epsilon=1.0, sensitivity=1.0, random_state=0)
    >>> r.scale, r.secure
    (1.0, False)
    """
    release = ReleaseOptions(random_state, accountant, label, subset)
    return _laplace_release(answer, policy, epsilon, sensitivity, release, "Blowfish Laplace")


def _laplace_release(answer, policy: Policy, epsilon: float, sensitivity, release: ReleaseOptions,
                     mechanism: str) -> BlowfishRelease:
    """The Laplace mechanism of Theorem 5.1, its release named ``mechanism``."""
    if not isinstance(policy, Policy):
        raise PolicyError(f"Expected a Blowfish Policy; got {type(policy).__name__}.")
    epsilon = check_positive_finite(epsilon, "epsilon", "laplace_mechanism")
    if isinstance(sensitivity, Sensitivity):
        if sensitivity.policy_key != policy.key:
            raise PolicyError("The sensitivity was computed under another policy than the release's.")
        sens = float(sensitivity.value)
    else:
        sens = check_nonnegative_finite(sensitivity, "sensitivity", "laplace_mechanism")
    arr = np.asarray(answer, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise PolicyError("The query answer contains NaN or infinity.")
    subset = release.subset
    scale = sens / epsilon
    if scale > 0:
        check_resolves(arr, scale)  # before the accountant is charged
    noise = resolve_noise(release.random_state)
    planned = BlowfishRelease(None, mechanism, epsilon, scale, sens, bool(noise.secure), noise.description, policy.key,
                              not policy.unconstrained, None if subset is None else frozenset(subset), THEOREM_5_1,
                              {"policy": policy.explain()})

    def draw():
        value = noise.laplace(arr, scale) if scale > 0 else arr.copy()
        return float(value) if np.ndim(value) == 0 else np.asarray(value, dtype=float)

    return make_release(planned, draw, accountant=release.accountant, label=release.label)


def _data_indices(policy: Policy, data):
    try:
        idx = policy.domain.indices(list(data))
    except TypeError:
        raise PolicyError("The data must be a sequence of domain values.") from None
    if idx.size == 0:
        raise PolicyError("The data set is empty.")
    return idx


def release_histogram(data, policy: Policy, *, epsilon: float, partition=None, **kwargs) -> BlowfishRelease:
    r"""The histogram :math:`h_P` of ``data`` (a sequence of domain values) with Laplace noise at :math:`S(h_P, P)`.

    ``partition`` gives the cells (default one per value, see
    :func:`~puffgm.blowfish.sensitivity.histogram_cells`); ``kwargs`` are the
    ``random_state``, ``accountant``, ``label`` and ``subset`` of :func:`laplace_mechanism`.
    """
    sens = histogram_sensitivity(policy, partition)
    cell = histogram_cells(policy, partition)
    c = cell[_data_indices(policy, data)]
    ans = np.bincount(c[c >= 0], minlength=int(cell.max()) + 1).astype(float)
    return _laplace_release(ans, policy, epsilon, sens, ReleaseOptions(**kwargs), "Blowfish Laplace histogram")


def release_cumulative(data, policy: Policy, *, epsilon: float, **kwargs) -> BlowfishRelease:
    r"""The cumulative histogram (Definition 7.1) with Laplace noise at :math:`S(c, P)`.

    No inference; see :func:`puffgm.blowfish.ordered.ordered_mechanism` for the
    ordered mechanism.  ``kwargs`` as in :func:`release_histogram`.
    """
    sens = cumulative_sensitivity(policy)
    ans = np.cumsum(np.bincount(_data_indices(policy, data), minlength=policy.domain.size)).astype(float)
    return _laplace_release(ans, policy, epsilon, sens, ReleaseOptions(**kwargs),
                            "Blowfish Laplace cumulative histogram")


def release_linear_sum(data, policy: Policy, *, epsilon: float, values=None, **kwargs) -> BlowfishRelease:
    r""":math:`\sum_i g(x_i)` with Laplace noise at :math:`S(f, P)`.

    ``values`` gives :math:`g` (see :func:`~puffgm.blowfish.sensitivity.values_matrix`;
    default the rank coordinates); ``kwargs`` as in :func:`release_histogram`.
    """
    sens = linear_sum_sensitivity(policy, values)
    g = values_matrix(policy, values)
    ans = g[_data_indices(policy, data)].sum(axis=0)
    return _laplace_release(ans if ans.size > 1 else float(ans[0]), policy, epsilon, sens, ReleaseOptions(**kwargs),
                            "Blowfish Laplace linear sum")
