r"""Composable Pufferfish mechanisms built from differential-privacy mechanisms.

Bai, He, Gu, Kifer and Maeng (section 6.2, Theorem 6; section 6.4; appendix B
Algorithms 1-2): given the :math:`a(b)`-influence curve of :math:`(\Theta, S)` and a Pufferfish
budget :math:`\epsilon_{\mathrm{puffer}}`, any per-entry :math:`\epsilon_{\mathrm{DP}}`-DP mechanism with

$$
\epsilon_{DP} = \max_{b \,:\, a(b) < \epsilon_{puffer}} \frac{\epsilon_{puffer} - a(b)}{b}
$$

(the maximum over the curve points with :math:`a(b) < \epsilon_{\mathrm{puffer}}`) is
:math:`\epsilon_{\mathrm{puffer}}`-Pufferfish, and such releases compose (Theorem 7, see :mod:`puffgm.accounting`).
"Per-entry" means neighbouring databases differ in one entry (one node's value).  (The paper's Algorithms
write ``min`` on line 8, which picks the worst point: a slip, see :mod:`puffgm.mechanisms.translation`.)

Mechanisms here:

* :class:`PufferfishLaplace` — :math:`F(D) + \mathrm{Lap}(L / \epsilon_{\mathrm{DP}})` for an :math:`L`-Lipschitz
  (in L1, per entry) scalar or vector query (Algorithm 1);
* :class:`PufferfishExponential` — :math:`P(r) \propto \exp(\epsilon_{\mathrm{DP}}\, u(D, r) / (2 \Delta_u))`
  (Algorithm 2), sampled as the argmax of :math:`u + \mathrm{Gumbel}(2 \Delta_u / \epsilon_{\mathrm{DP}})`;
* :class:`PufferfishTopK` — :math:`K` rounds of the exponential mechanism without
  replacement at :math:`\epsilon_{\mathrm{DP}} / K` each (section 7.1.3; basic DP composition makes
  the :math:`K` rounds :math:`\epsilon_{\mathrm{DP}}`-DP together);
* :class:`PufferfishWrapper` — any user-supplied per-entry :math:`\epsilon_{\mathrm{DP}}`-DP
  mechanism ``mechanism(data, epsilon_dp, noise)``.

Every ``release`` method (and shorthand function) takes the same release options:

random_state : None, int, numpy.random.Generator or NoiseSource
    None (default) uses OpenDP's secure sampler (:func:`puffgm.core.noise.resolve_noise`);
    a seed gives reproducible, not-for-production noise and the release says
    ``secure=False``.
accountant : PrivacyAccountant, optional
    Asked before any noise is drawn: a release it refuses (over budget,
    :class:`~puffgm.exceptions.BudgetError`; not composable,
    :class:`~puffgm.exceptions.CompositionError`) raises and draws nothing.
    Charged after the release.
label : str, optional
    A name for the release in the accountant's ledger.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from puffgm.core.accuracy import coordinate_names, laplace_rows
from puffgm.core.composition import Composition
from puffgm.core.noise import check_resolves, resolve_noise
from puffgm.core.release import Release, curve_key
from puffgm.core.results import freeze_record
from puffgm.core.validation import check_positive_finite, check_positive_int, refuse_unexpected, renamed
from puffgm.exceptions import CompositionError, NotApplicableError, ParameterError
from puffgm.mechanisms.translation import THEOREM6, Translation, dp_epsilon

__all__ = [
    "THEOREM_7",
    "CurveComposition",
    "PufferfishRelease",
    "PufferfishLaplace",
    "PufferfishExponential",
    "PufferfishTopK",
    "PufferfishWrapper",
    "pufferfish_laplace",
    "pufferfish_exponential",
    "pufferfish_top_k",
    "exponential_log_probabilities",
    "top_k_log_probability",
]


THEOREM_7 = ("Bai, He, Gu, Kifer and Maeng, Theorem 7 (composition of DP-based Pufferfish mechanisms along an "
             "a(b)-influence curve)")


def _real(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


@dataclass(frozen=True)
class CurveComposition(Composition):
    r"""Bai, He, Gu, Kifer and Maeng ("Composition for Pufferfish privacy"), Theorem 7.

    Releases :math:`l = 1, \dots, k` of per-entry :math:`\epsilon_{\mathrm{DP},l}`-DP mechanisms translated
    at curve points :math:`(a_l, b_l)` of one :math:`a(b)`-influence curve of :math:`(\Theta, S)`, each
    :math:`\epsilon_l`-Pufferfish by Theorem 6 (:math:`0 \le a_l < \epsilon_l`), are together

    $$
    \max_l a_l + \sum_l (\epsilon_l - a_l)
    $$

    -Pufferfish private: the correlation penalty is paid once.

    Attributes
    ----------
    fingerprint : str
        The prior class's fingerprint.
    curve_key : str
        Identifies :math:`(\Theta, S)` (:func:`puffgm.core.release.curve_key`).
    a, b : float, int
        The curve point used.
    epsilon_dp : float
        The per-entry DP parameter used.
    """

    fingerprint: str = ""
    curve_key: str = ""
    a: float = math.nan
    b: int = 0
    epsilon_dp: float = math.nan

    kinds: ClassVar[str] = "DP-based releases along an a(b)-influence curve"
    one: ClassVar[str] = "a DP-based release along an a(b)-influence curve"
    rule: ClassVar[str] = ("Bai et al. Theorem 7 composes DP-based releases translated along one a(b)-influence "
                           "curve only")
    theorem: ClassVar[str] = THEOREM_7
    source: ClassVar[str] = "Bai et al."

    @property
    def key(self) -> str:
        return str(self.curve_key)

    def check(self, mechanism: str) -> None:
        r"""Theorem 7's conditions on the curve point and the DP parameter.

        :math:`0 \le a < \epsilon`, an integer :math:`b \ge 1` and a finite :math:`\epsilon_{\mathrm{DP}} > 0`.
        """
        super().check(mechanism)
        a, b, eps_dp = self.a, self.b, self.epsilon_dp
        if not (_real(a) and math.isfinite(a) and 0 <= a < self.epsilon):
            raise CompositionError(f"Theorem 7 needs a curve point with 0 <= a < epsilon_puffer; got a = {a!r} for "
                                   f"epsilon_puffer = {self.epsilon:g}.")
        if not _real(b) or not math.isfinite(b) or int(b) != b or int(b) < 1:
            raise CompositionError(f"The curve point's b must be an integer >= 1; got {b!r}.")
        if not (_real(eps_dp) and math.isfinite(eps_dp) and eps_dp > 0):
            raise CompositionError(f"The release's epsilon_DP must be a finite number > 0; got {eps_dp!r}.")

    @classmethod
    def compose(cls, entries: Sequence[Composition]) -> float:
        r""":math:`\max_l a_l + \sum_l (\epsilon_l - a_l)` along one curve."""
        if len({e.curve_key for e in entries if isinstance(e, cls)}) > 1:  # the key hashes the fingerprint
            raise CompositionError("These releases were translated along a(b)-influence curves of different prior "
                                   "classes or secrets, so Theorem 7 of Bai et al. does not apply; use curve points "
                                   "of one (Theta, S).")
        points = [e for e in entries if isinstance(e, cls)]
        return max(e.a for e in points) + sum(e.epsilon - e.a for e in points)


@dataclass(frozen=True)
class PufferfishRelease(Release):
    r"""A release of a DP-based Pufferfish mechanism, with what composition needs.

    Releases along one curve compose by Bai et al. Theorem 7
    (:class:`puffgm.accounting.PrivacyAccountant`).

    Attributes
    ----------
    value : Any
        The released output (float, array, index, tuple of indices, ...).
    mechanism : str
    epsilon_puffer : float
        Pufferfish guarantee of this release alone (Theorem 6).
    epsilon_dp : float
        Per-entry DP parameter actually used.
    a, b : float, int
        The curve point :math:`(a_l, b_l)` used:
        :math:`\epsilon_{\mathrm{DP}} \le (\epsilon_{\mathrm{puffer}} - a) / b`.
    secure : bool
        True for OpenDP's secure sampler; False for seeded noise (not for production).
    noise : str
    fingerprint : str
        Fingerprint of the prior class (the curve's).
    curve_key : str
        Identifies :math:`(\Theta, S)`: Theorem 7 composes releases along one curve only.
    theorem : str
    details : Mapping
    units : frozenset or None
        The unit ids the release reads (None: the whole data set).
    """

    value: Any
    mechanism: str
    epsilon_puffer: float
    epsilon_dp: float
    a: float
    b: int
    secure: bool
    noise: str
    fingerprint: str
    curve_key: str
    theorem: str = THEOREM6
    details: Mapping = field(default_factory=dict)
    units: frozenset | None = None

    def __post_init__(self):
        freeze_record(self)

    @property
    def composition(self) -> CurveComposition:
        r"""Bai et al. Theorem 7 along the curve of :math:`(\Theta, S)`, at this release's point and DP parameter."""
        return CurveComposition(self.epsilon_puffer, fingerprint=self.fingerprint, curve_key=self.curve_key,
                                a=self.a, b=self.b, epsilon_dp=self.epsilon_dp, units=self.units)

    @property
    def epsilon(self) -> float:
        """The Pufferfish parameter of this release (same as ``epsilon_puffer``)."""
        return self.epsilon_puffer

    def accuracy(self, alpha: float = 0.05) -> tuple:
        r"""Per coordinate, the Laplace scale :math:`L / \epsilon_{\mathrm{DP}}` and its :math:`(1-\alpha)` half-width.

        Raises
        ------
        NotApplicableError
            For the exponential, top-K and wrapped mechanisms: they select an output or add
            noise puffgm does not know, so there is no noise half-width to state.
        """
        scale = self.details.get("scale")
        if scale is None:
            raise NotApplicableError(f"{self.mechanism} adds no Laplace noise of a known scale, so it states no "
                                     "noise half-width.")
        names = coordinate_names(self.value)
        return laplace_rows(names, (float(scale),) * len(names), alpha)

    @property
    def curve_point(self) -> tuple:
        """:math:`(a_l, b_l)`."""
        return (self.a, self.b)

    @property
    def prior(self) -> str:
        r"""The prior class (its fingerprint) and the curve of :math:`(\Theta, S)` the guarantee holds for."""
        return f"prior class {self.fingerprint}, a(b)-influence curve {self.curve_key}"

    def explain(self) -> str:
        """One line: mechanism, ``epsilon_puffer``, ``epsilon_dp``, curve point, noise source."""
        s = (f"{self.mechanism}: epsilon_puffer {self.epsilon_puffer:g} via epsilon_DP {self.epsilon_dp:.6g} "
             f"at curve point (a={self.a:.6g}, b={self.b}); noise: {self.noise}")
        return self._tagged(s)


class _DPBased:
    """Shared part: translation of epsilon_puffer along the curve, accountant handshake."""

    name = "DP-based Pufferfish mechanism"

    def __init__(self, curve, *, epsilon: float | None, deprecated: dict):
        where = type(self).__name__
        epsilon = renamed(deprecated, "epsilon_puffer", "epsilon", where, epsilon, stacklevel=4)
        refuse_unexpected(deprecated, where)
        self.epsilon = check_positive_finite(epsilon, "epsilon", where)
        self.translation: Translation = dp_epsilon(curve, epsilon=self.epsilon)
        self.curve = curve

    @property
    def epsilon_puffer(self) -> float:
        """The Pufferfish parameter of one release (the field name of :class:`PufferfishRelease`)."""
        return self.epsilon

    @property
    def epsilon_dp(self) -> float:
        """The per-entry DP parameter epsilon_DP = (epsilon - a) / b at the point used."""
        return self.translation.epsilon_dp

    @property
    def point(self) -> tuple:
        """The curve point (a, b) the translation used."""
        return self.translation.point

    def _record(self, value, source, label, details) -> PufferfishRelease:
        """The release record of ``value`` (None while the noise is not drawn yet)."""
        t = self.translation
        w = t.witness  # in the details as (node, quilt), as before the Witness record
        d = {"label": label, "witness": None if w is None else (w.node, w.quilt), "n_entries": t.n_entries}
        d.update(details)
        return PufferfishRelease(
            value=value, mechanism=self.name, epsilon_puffer=self.epsilon, epsilon_dp=t.epsilon_dp,
            a=t.a, b=t.b, secure=bool(source and source.secure), noise=source.description if source else "",
            fingerprint=self.curve.fingerprint, curve_key=curve_key(self.curve), details=d,
        )

    def _check(self, accountant, label=None):
        """Charge the accountant before any noise is drawn (it raises if it cannot compose this release);
        the ledger position of the charge, or None."""
        if accountant is None:
            return None
        return accountant.charge(self._record(None, None, label, {}), label=label)

    def _release(self, value, source, accountant, label, details, charged=None) -> PufferfishRelease:
        rel = self._record(value, source, label, details)
        if accountant is not None:
            accountant.record(rel, label=label, charged=charged)
        return rel


# ------------------------------------------------------------------ Laplace
class PufferfishLaplace(_DPBased):
    r"""Pufferfish Laplace mechanism (Algorithm 1): :math:`F(D) + \mathrm{Lap}(L / \epsilon_{\mathrm{DP}})`.

    Parameters
    ----------
    curve : InfluenceCurve
        The :math:`a(b)`-influence curve of :math:`(\Theta, S)`.
    epsilon : float
        Pufferfish privacy parameter of one release (``epsilon_puffer`` is its deprecated name).
    lipschitz : float
        L: changing one entry moves F(D) by at most L in L1 norm (scalar or vector F).

    Examples
    --------
    >>> from puffgm import influence_curve
    >>> mech = PufferfishLaplace(influence_curve("example:cancer"), epsilon=2.0)
    >>> rel = mech.release(10.0, random_state=0)   # seeded: reproducible, not for production
    """

    name = "Pufferfish Laplace (Bai et al. Algorithm 1)"

    def __init__(self, curve, *, epsilon: float | None = None, lipschitz: float = 1.0, **deprecated):
        super().__init__(curve, epsilon=epsilon, deprecated=deprecated)
        self.lipschitz = check_positive_finite(lipschitz, "lipschitz", "PufferfishLaplace")

    @property
    def scale(self) -> float:
        r"""Laplace scale :math:`L / \epsilon_{\mathrm{DP}}`."""
        return self.lipschitz / self.epsilon_dp

    def release(self, answer, *, random_state=None, accountant=None, label: str | None = None) -> PufferfishRelease:
        """Release ``answer + Lap(scale)`` on each coordinate.

        Parameters
        ----------
        answer : float or array_like
            The exact answer F(D) of the L-Lipschitz query (finite numbers).
        random_state, accountant, label
            The release options of every mechanism here (module docstring).

        Returns
        -------
        PufferfishRelease
            The noisy answer with ``epsilon_puffer``, ``epsilon_dp``, the curve point and the noise source.
        """
        arr = np.asarray(answer, dtype=float)
        if arr.size == 0:
            raise ParameterError("The query answer to release is empty.")
        if not np.all(np.isfinite(arr)):
            raise ParameterError("The query answer contains NaN or infinity.")
        check_resolves(arr, self.scale)
        charged = self._check(accountant, label)
        source = resolve_noise(random_state)
        noisy = source.laplace(arr, self.scale)
        value = float(noisy) if arr.ndim == 0 else np.asarray(noisy, dtype=float)
        return self._release(value, source, accountant, label, {"scale": self.scale, "lipschitz": self.lipschitz},
                             charged)


def pufferfish_laplace(answer, curve, *, epsilon: float | None = None, lipschitz: float = 1.0,
                       **options) -> PufferfishRelease:
    r"""Release :math:`\mathrm{answer} + \mathrm{Lap}(L / \epsilon_{\mathrm{DP}})`.

    The same as ``PufferfishLaplace(curve, ...).release(answer, **options)``.

    Parameters
    ----------
    answer : float or array_like
    curve : InfluenceCurve
    epsilon : float
    lipschitz : float
    **options
        Keywords of :meth:`PufferfishLaplace.release`: ``random_state``,
        ``accountant``, ``label``.
    """
    epsilon = renamed(options, "epsilon_puffer", "epsilon", "pufferfish_laplace", epsilon)
    return PufferfishLaplace(curve, epsilon=epsilon, lipschitz=lipschitz).release(answer, **options)


# ------------------------------------------------------------------ exponential
def _utilities(utilities) -> np.ndarray:
    u = np.asarray(utilities, dtype=float).ravel()
    if u.size == 0:
        raise ParameterError("The exponential mechanism needs at least one candidate.")
    if np.isnan(u).any() or np.isposinf(u).any():
        raise ParameterError("The utilities contain NaN or +inf.")
    if not np.isfinite(u).any():
        raise ParameterError("Every candidate of the exponential mechanism has utility -inf.")
    return u


def _check_candidates(candidates, u: np.ndarray) -> None:
    if candidates is not None and len(candidates) != u.size:
        raise ParameterError(f"{len(candidates)} candidates for {u.size} utilities.")


def exponential_log_probabilities(utilities, *, epsilon_dp: float, sensitivity: float) -> np.ndarray:
    r"""The exact output law of the exponential mechanism, in log space.

    $$
    \log P(r) = \frac{\epsilon\, u_r}{2 \Delta_u} - \log \sum_{r'} \exp\left(\frac{\epsilon\, u_{r'}}{2 \Delta_u}\right)
    $$

    (McSherry and Talwar; Bai et al. Algorithm 2).

    Parameters
    ----------
    utilities : array_like
        :math:`u(D, r)` for every candidate :math:`r` (-inf: never selected).
    epsilon_dp : float
        The DP parameter :math:`\epsilon`.
    sensitivity : float
        :math:`\Delta_u`, the largest change of a utility when one entry changes.

    Returns
    -------
    numpy.ndarray
        log P(r) for every candidate.
    """
    from scipy.special import logsumexp

    u = _utilities(utilities)
    eps = check_positive_finite(epsilon_dp, "epsilon_dp", "exponential_log_probabilities")
    d = check_positive_finite(sensitivity, "sensitivity", "exponential_log_probabilities")
    s = eps * u / (2 * d)
    return s - logsumexp(s)


def top_k_log_probability(utilities, selection, *, epsilon_dp: float, sensitivity: float) -> float:
    r"""log P(noisy top-K returns ``selection`` in that order): :math:`K` exponential rounds at :math:`\epsilon / K`.

    Parameters
    ----------
    utilities : array_like
        :math:`u(D, r)` for every candidate :math:`r`.
    selection : sequence of int
        The ordered indices selected (:math:`K` = its length).
    epsilon_dp : float
        The DP parameter of the :math:`K` rounds together.
    sensitivity : float
        :math:`\Delta_u`.

    Returns
    -------
    float
        The log-probability (-inf for a selection that repeats a candidate or
        names one of utility -inf).
    """
    u = _utilities(utilities).copy()
    k = len(selection)
    if k == 0:
        raise ParameterError("The selection is empty.")
    for r in selection:
        if isinstance(r, bool) or int(r) != r or not 0 <= int(r) < u.size:
            raise ParameterError(f"The selection {list(selection)!r} names a candidate outside 0..{u.size - 1}.")
    total = 0.0
    for r in selection:
        r = int(r)
        if not np.isfinite(u[r]):  # a repeated or impossible candidate: probability 0
            return -math.inf
        lp = exponential_log_probabilities(u, epsilon_dp=epsilon_dp / k, sensitivity=sensitivity)
        total += float(lp[r])
        u[r] = -math.inf
    return total


class PufferfishExponential(_DPBased):
    r"""Pufferfish exponential mechanism (Algorithm 2).

    Samples candidate :math:`r` with probability proportional to
    :math:`\exp(\epsilon_{\mathrm{DP}}\, u(D, r) / (2 \Delta_u))`, where :math:`\Delta_u` bounds the change of any
    utility when one entry of the database changes.  Sampling: argmax of
    :math:`u + \mathrm{Gumbel}(2 \Delta_u / \epsilon_{\mathrm{DP}})` (exactly the same law).

    Parameters
    ----------
    curve : InfluenceCurve
        The :math:`a(b)`-influence curve of :math:`(\Theta, S)`.
    epsilon : float
        Pufferfish privacy parameter of one release (``epsilon_puffer`` is its deprecated name).
    sensitivity : float
        :math:`\Delta_u`.
    """

    name = "Pufferfish exponential mechanism (Bai et al. Algorithm 2)"

    def __init__(self, curve, *, epsilon: float | None = None, sensitivity: float = 1.0, **deprecated):
        super().__init__(curve, epsilon=epsilon, deprecated=deprecated)
        self.sensitivity = check_positive_finite(sensitivity, "sensitivity", "PufferfishExponential")

    def log_probabilities(self, utilities) -> np.ndarray:
        """The exact output law (log space): for audits and inspection."""
        return exponential_log_probabilities(utilities, epsilon_dp=self.epsilon_dp, sensitivity=self.sensitivity)

    def release(self, utilities, *, candidates=None, random_state=None, accountant=None,
                label: str | None = None) -> PufferfishRelease:
        """Select one candidate; the value is its index, or ``candidates[index]`` if given.

        Parameters
        ----------
        utilities : array_like
            :math:`u(D, r)` for every candidate :math:`r`.
        candidates : sequence, optional
            What to release for each index (as many as utilities).
        random_state, accountant, label
            The release options of every mechanism here (module docstring).

        Returns
        -------
        PufferfishRelease
            The selected index (or candidate) with ``epsilon_puffer``, ``epsilon_dp`` and the curve point.
        """
        u = _utilities(utilities)
        _check_candidates(candidates, u)
        charged = self._check(accountant, label)
        source = resolve_noise(random_state)
        idx = source.gumbel_argmax(u, 2 * self.sensitivity / self.epsilon_dp)
        value = idx if candidates is None else candidates[idx]
        return self._release(value, source, accountant, label,
                             {"index": idx, "sensitivity": self.sensitivity, "n_candidates": int(u.size)}, charged)


def pufferfish_exponential(utilities, curve, *, epsilon: float | None = None, sensitivity: float = 1.0,
                           **options) -> PufferfishRelease:
    """Select one candidate: ``PufferfishExponential(curve, ...).release(utilities, **options)``.

    Parameters
    ----------
    utilities : array_like
    curve : InfluenceCurve
    epsilon : float
    sensitivity : float
    **options
        Keywords of :meth:`PufferfishExponential.release`: ``candidates``,
        ``random_state``, ``accountant``, ``label``.
    """
    epsilon = renamed(options, "epsilon_puffer", "epsilon", "pufferfish_exponential", epsilon)
    return PufferfishExponential(curve, epsilon=epsilon, sensitivity=sensitivity).release(
        utilities, **options)


class PufferfishTopK(_DPBased):
    r"""Noisy top-K: :math:`K` exponential-mechanism draws, without replacement, at :math:`\epsilon_{\mathrm{DP}}/K`.

    Bai et al. section 7.1.3 ("Ours-Exp").  The :math:`K` rounds are :math:`\epsilon_{\mathrm{DP}}`-DP together
    (basic composition), so the whole selection is :math:`\epsilon_{\mathrm{puffer}}`-Pufferfish by
    Theorem 6 at the translated point.  The order of the output is the order of selection.

    Parameters
    ----------
    curve : InfluenceCurve
        The :math:`a(b)`-influence curve of :math:`(\Theta, S)`.
    epsilon : float
        Pufferfish privacy parameter of the whole selection (``epsilon_puffer`` is its deprecated name).
    k : int
        K, the number of candidates selected.
    sensitivity : float
        :math:`\Delta_u`.
    """

    name = "Pufferfish noisy top-K (exponential mechanism, Bai et al. section 7.1.3)"

    def __init__(self, curve, *, epsilon: float | None = None, k: int, sensitivity: float = 1.0, **deprecated):
        super().__init__(curve, epsilon=epsilon, deprecated=deprecated)
        self.k = check_positive_int(k, "k", "PufferfishTopK")
        self.sensitivity = check_positive_finite(sensitivity, "sensitivity", "PufferfishTopK")

    def log_probability(self, utilities, selection) -> float:
        """Exact log-probability of an ordered selection (for audits)."""
        if len(selection) != self.k:
            raise ParameterError(f"A selection of noisy top-{self.k} has {self.k} items; got {len(selection)}.")
        return top_k_log_probability(utilities, selection, epsilon_dp=self.epsilon_dp, sensitivity=self.sensitivity)

    def release(self, utilities, *, candidates=None, random_state=None, accountant=None,
                label: str | None = None) -> PufferfishRelease:
        """Select K candidates in order; the value is their indices, or their ``candidates`` entries.

        Parameters
        ----------
        utilities : array_like
            u(D, r) for every candidate r; at least K must be finite.
        candidates : sequence, optional
            What to release for each index (as many as utilities).
        random_state, accountant, label
            The release options of every mechanism here (module docstring).

        Returns
        -------
        PufferfishRelease
            The :math:`K` selected indices (or candidates) in order, with ``epsilon_puffer``, ``epsilon_dp`` and the
            curve point.
        """
        u = _utilities(utilities).copy()
        if int(np.isfinite(u).sum()) < self.k:
            raise ParameterError(f"Noisy top-{self.k} needs at least {self.k} candidates with finite utility; "
                                 f"got {int(np.isfinite(u).sum())}.")
        _check_candidates(candidates, u)
        charged = self._check(accountant, label)
        source = resolve_noise(random_state)
        scale = 2 * self.sensitivity * self.k / self.epsilon_dp
        chosen = []
        for _ in range(self.k):
            idx = source.gumbel_argmax(u, scale)
            chosen.append(int(idx))
            u[idx] = -math.inf
        value = tuple(chosen) if candidates is None else tuple(candidates[i] for i in chosen)
        return self._release(value, source, accountant, label,
                             {"indices": tuple(chosen), "k": self.k, "sensitivity": self.sensitivity,
                              "epsilon_dp_per_round": self.epsilon_dp / self.k}, charged)


def pufferfish_top_k(utilities, k: int, curve, *, epsilon: float | None = None, sensitivity: float = 1.0,
                     **options) -> PufferfishRelease:
    """Select K candidates: ``PufferfishTopK(curve, ...).release(utilities, **options)``.

    Parameters
    ----------
    utilities : array_like
    k : int
    curve : InfluenceCurve
    epsilon : float
    sensitivity : float
    **options
        Keywords of :meth:`PufferfishTopK.release`: ``candidates``,
        ``random_state``, ``accountant``, ``label``.
    """
    epsilon = renamed(options, "epsilon_puffer", "epsilon", "pufferfish_top_k", epsilon)
    return PufferfishTopK(curve, epsilon=epsilon, k=k, sensitivity=sensitivity).release(
        utilities, **options)


# ------------------------------------------------------------------ generic wrapper
class PufferfishWrapper(_DPBased):
    r"""Any per-entry :math:`\epsilon_{\mathrm{DP}}`-DP mechanism made :math:`\epsilon_{\mathrm{puffer}}`-Pufferfish.

    Bai et al. Theorem 6.

    Parameters
    ----------
    curve : InfluenceCurve
        The :math:`a(b)`-influence curve of :math:`(\Theta, S)`.
    epsilon : float
        Pufferfish privacy parameter of one release (``epsilon_puffer`` is its deprecated name).
    mechanism : callable ``mechanism(data, epsilon_dp, noise) -> output``
        Must be :math:`\epsilon_{\mathrm{DP}}`-differentially private with respect to changing one
        entry of the database, for every ``epsilon_dp`` it is given (the user's
        responsibility: puffgm cannot check it).  ``noise`` is the
        :class:`~puffgm.core.noise.NoiseSource` to draw from (secure by default).
    name : str, optional
    """

    def __init__(self, curve, *, epsilon: float | None = None, mechanism: Callable, name: str | None = None,
                 **deprecated):
        super().__init__(curve, epsilon=epsilon, deprecated=deprecated)
        if not callable(mechanism):
            raise ParameterError("The 'mechanism' parameter of PufferfishWrapper must be callable.")
        self.mechanism = mechanism
        self.name = name or f"Pufferfish wrapper of {getattr(mechanism, '__name__', 'a DP mechanism')}"

    def release(self, data, *, random_state=None, accountant=None, label: str | None = None) -> PufferfishRelease:
        r"""Run the user's mechanism on ``data`` at :math:`\epsilon_{\mathrm{DP}}`.

        Parameters
        ----------
        data : Any
            Passed unchanged to the mechanism.
        random_state, accountant, label
            The release options of every mechanism here (module docstring).

        Returns
        -------
        PufferfishRelease
            The mechanism's output with ``epsilon_puffer``, ``epsilon_dp`` and the curve point.
        """
        charged = self._check(accountant, label)
        source = resolve_noise(random_state)
        out = self.mechanism(data, self.epsilon_dp, source)
        return self._release(out, source, accountant, label, {"user_mechanism": True}, charged)
