r"""The Laplace release of the Markov Quilt Mechanism.

Song, Wang and Chaudhuri, Algorithm 2 and Theorem 4.3: for an :math:`L`-Lipschitz
query :math:`F` (in L1), releasing $F(D) + L\, \sigma_{\max} Z$ with $Z \sim \mathrm{Lap}(1)$ on each
coordinate is :math:`\epsilon`-Pufferfish private in the Bayesian-network
instantiation, where :math:`\sigma_{\max}` comes from :func:`puffgm.networks.calibration.calibrate`
(or the chain calibrations of :mod:`puffgm.chains`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from puffgm.core.accuracy import coordinate_names, laplace_rows
from puffgm.core.composition import Composition
from puffgm.core.noise import check_resolves, resolve_noise
from puffgm.core.release import Release, make_release, quilt_set_key, wrong_calibration
from puffgm.core.results import CalibrationResult, freeze_record
from puffgm.exceptions import CompositionError, NotApplicableError, ParameterError

__all__ = ["MarkovQuiltRelease", "MarkovQuiltComposition", "MarkovQuiltLaplace", "release_laplace", "quilt_set_key",
           "THEOREM_MQM"]

THEOREM_MQM = "Song, Wang and Chaudhuri 2017, Theorem 4.4 (sequential composition of MQM with shared quilt sets)"


@dataclass(frozen=True)
class MarkovQuiltComposition(Composition):
    r"""Song, Wang and Chaudhuri 2017 ("Pufferfish privacy mechanisms for correlated data", SIGMOD),
    Theorem 4.4 and the remark after it.

    :math:`K` Markov Quilt Mechanism releases with the same instantiation (prior class :math:`\Theta`,
    secrets :math:`S`) and the same quilt sets :math:`S_{Q,i}`, at privacy parameters
    :math:`\epsilon_1, \dots, \epsilon_K`, are together

    $$
    \left(K \max_k \epsilon_k\right)\text{-Pufferfish private.}
    $$

    Attributes
    ----------
    fingerprint : str
        The prior class's fingerprint (the instantiation).
    quilt_key : str
        Identifies the secrets and quilt sets (:func:`quilt_set_key`, which hashes the fingerprint
        too): releases compose when their keys agree.
    """

    fingerprint: str = ""
    quilt_key: str = ""

    kinds: ClassVar[str] = "Markov Quilt Mechanism releases"
    one: ClassVar[str] = "a Markov Quilt Mechanism release"
    rule: ClassVar[str] = ("Song et al. Theorem 4.4 composes MQM releases only with MQM releases over the same "
                           "quilt sets")
    theorem: ClassVar[str] = THEOREM_MQM
    source: ClassVar[str] = "Song, Wang and Chaudhuri 2017"

    @property
    def key(self) -> str:
        return str(self.quilt_key)

    @classmethod
    def compose(cls, entries: Sequence[Composition]) -> float:
        r""":math:`K \max_k \epsilon_k` over one instantiation and its quilt sets."""
        if len({e.quilt_key for e in entries if isinstance(e, cls)}) > 1:  # the key hashes the fingerprint
            raise CompositionError(
                "These Markov Quilt Mechanism releases use different instantiations or quilt sets, so Theorem 4.4 "
                "of Song et al. does not apply and Pufferfish releases need not compose (Bai et al., section 4); "
                "use one calibration's quilt sets for every release.")
        return len(entries) * max(e.epsilon for e in entries)


@dataclass(frozen=True)
class MarkovQuiltRelease(Release):
    r"""A Laplace release of the Markov Quilt Mechanism and everything needed to account for it.

    Two such releases compose linearly when they share the quilt sets of one
    instantiation (Song et al. Theorem 4.4): :attr:`quilt_key` identifies them.

    Attributes
    ----------
    value : float or numpy.ndarray
        The released (noisy) answer.
    mechanism : str
        Name of the mechanism.
    epsilon : float
        Privacy parameter of this release (Pufferfish).
    scale : float
        Laplace scale used on each coordinate.
    secure : bool
        True for OpenDP's secure sampler; False for a seeded generator (not for production).
    noise : str
        Description of the noise source.
    fingerprint : str
        Fingerprint of the prior class the calibration used.
    theorem : str
        The guarantee relied on.
    details : Mapping
        Mechanism-specific record (quilt-set key, Lipschitz constant, :math:`\sigma_{\max}`,
        worst node, label).
    units : frozenset or None
        The unit ids the release reads (None: the whole data set).
    """

    value: Any
    mechanism: str
    epsilon: float
    scale: float
    secure: bool
    noise: str
    fingerprint: str
    theorem: str
    details: Mapping = field(default_factory=dict)
    units: frozenset | None = None

    def __post_init__(self):
        freeze_record(self)

    @property
    def composition(self) -> MarkovQuiltComposition:
        """Song et al. Theorem 4.4 over the instantiation and quilt sets of the calibration."""
        return MarkovQuiltComposition(self.epsilon, fingerprint=self.fingerprint, quilt_key=str(self.quilt_key),
                                      units=self.units)

    @property
    def quilt_key(self) -> str | None:
        """Identifies the instantiation and quilt sets (:func:`quilt_set_key`)."""
        return self.details.get("quilt_key")

    @property
    def prior(self) -> str:
        """The prior class (its fingerprint) and the quilt sets the guarantee holds for."""
        return f"prior class {self.fingerprint}, quilt sets {self.quilt_key}"

    def accuracy(self, alpha: float = 0.05) -> tuple:
        r"""Per coordinate of the value, the Laplace scale and its :math:`(1-\alpha)` half-width (core.accuracy)."""
        names = coordinate_names(self.value)
        return laplace_rows(names, (self.scale,) * len(names), alpha)

    def explain(self) -> str:
        r"""One line: mechanism, :math:`\epsilon`, Laplace scale, noise source."""
        s = (
            f"{self.mechanism}: epsilon {self.epsilon:g}, Laplace scale {self.scale:.6g}; "
            f"noise: {self.noise}"
        )
        return self._tagged(s)


class MarkovQuiltLaplace:
    """Laplace release of an L-Lipschitz query calibrated by the Markov Quilt Mechanism.

    Parameters
    ----------
    calibration : CalibrationResult
        From :func:`puffgm.networks.calibration.calibrate` (or a chain calibration).

    Examples
    --------
    >>> from puffgm.networks.calibration import calibrate
    >>> mech = MarkovQuiltLaplace(calibrate("example:asia", epsilon=1.0))
    >>> rel = mech.release(3.0, random_state=0)   # seeded: reproducible, not for production
    >>> rel.secure
    False
    """

    def __init__(self, calibration: CalibrationResult):
        if not isinstance(calibration, CalibrationResult):
            raise ParameterError(_not_mqm(calibration))
        if not calibration.applicable or not math.isfinite(calibration.scale):
            raise NotApplicableError(
                f"The calibration by method {calibration.method!r} is not applicable, so nothing can be released."
            )
        self.calibration = calibration

    @property
    def scale(self) -> float:
        r"""Laplace scale :math:`L \sigma_{\max}` of the calibration."""
        return self.calibration.scale

    def release(self, answer, *, random_state=None, accountant=None,
                label: str | None = None) -> MarkovQuiltRelease:
        r"""Release ``answer + Lap(scale)`` on each coordinate (Song et al. Algorithm 2).

        Parameters
        ----------
        answer : float or array_like
            The exact answer F(D) of the L-Lipschitz query the calibration was made for.
        random_state : None, int or numpy.random.Generator
            None (default) uses OpenDP's secure sampler; a seed gives reproducible,
            not-for-production noise.
        accountant : PrivacyAccountant, optional
            Charged before any noise is drawn; a release over budget raises
            BudgetError and nothing is released.
        label : str, optional
            A name for the release in the accountant's ledger.

        Returns
        -------
        MarkovQuiltRelease
            The noisy answer with its :math:`\epsilon`, scale, quilt-set key and noise source.
        """
        cal = self.calibration
        arr = check_resolves(_answer_array(answer), cal.scale)  # before the accountant is charged
        source = resolve_noise(random_state)
        planned = MarkovQuiltRelease(
            value=None,
            mechanism=f"Markov Quilt Mechanism, Laplace ({cal.method})",
            epsilon=cal.epsilon,
            scale=cal.scale,
            secure=source.secure,
            noise=source.description,
            fingerprint=cal.fingerprint,
            theorem=cal.theorem,
            details={"quilt_key": quilt_set_key(cal), "lipschitz": cal.lipschitz, "sigma_max": cal.sigma_max,
                     "worst_node": cal.worst_node, "label": label},
        )
        return make_release(planned, lambda: _shaped(source.laplace(arr, cal.scale), arr.ndim),
                            accountant=accountant, label=label)


def _not_mqm(calibration) -> str:
    """The refusal of a calibration that is not the Markov Quilt Mechanism's, naming the function that releases it."""
    return wrong_calibration("release_laplace", calibration, "a CalibrationResult from puffgm.calibrate()")


def _shaped(noisy, ndim: int):
    """A float for a scalar answer, a float array otherwise."""
    return float(noisy) if ndim == 0 else np.asarray(noisy, dtype=float)


def _answer_array(answer) -> np.ndarray:
    """The exact answer as a non-empty float array, or a ParameterError."""
    raw = np.asarray(answer)
    if raw.dtype.kind not in "iuf":
        raise ParameterError(f"The query answer to release must be real numbers; got {type(answer).__name__}.")
    if raw.size == 0:
        raise ParameterError("The query answer to release is empty.")
    return raw.astype(float)


def release_laplace(answer, calibration: CalibrationResult, *, random_state=None, accountant=None,
                    label: str | None = None) -> MarkovQuiltRelease:
    """Release ``answer + Lap(calibration.scale)``.

    Shorthand for ``MarkovQuiltLaplace(calibration).release(answer, ...)``.

    See :meth:`MarkovQuiltLaplace.release` for the parameters.
    """
    return MarkovQuiltLaplace(calibration).release(
        answer, random_state=random_state, accountant=accountant, label=label
    )
