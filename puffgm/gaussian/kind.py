"""Linear-Gaussian networks with region secrets as a :class:`~puffgm.core.prior.PriorKind`.

Calibration and curves follow the Markov Quilt Mechanism (Song, Wang and
Chaudhuri, SIGMOD 2017, arXiv:1603.03977, Algorithm 2) and the a(b)-influence
curves (Bai, He, Gu, Kifer and Maeng, Definition 7) on the moral graph, with the
certified Gaussian leakage of :mod:`puffgm.gaussian.leakage`
(:func:`puffgm.gaussian.networks.gaussian_calibrate`,
:func:`puffgm.gaussian.networks.gaussian_influence_curve`).
"""

from __future__ import annotations

from puffgm.core.prior import PriorKind
from puffgm.gaussian.networks import gaussian_calibrate, gaussian_influence_curve, is_gaussian_prior

__all__ = ["LinearGaussianKind", "is_gaussian_prior"]

_OPTIONS = ("protected", "secrets", "bounds", "delta", "exhaustive")


class LinearGaussianKind(PriorKind):
    """A finite class of linear-Gaussian networks with region secrets.

    Parameters
    ----------
    prior_class : a puffgm-linear-gaussian JSON path or dict, a LinearGaussianPrior, a
        GaussianPriorClass, a pgmpy LinearGaussianBayesianNetwork, or a list of these
        A pgmpy model needs the options ``bounds`` and ``delta`` (the region secrets).
    """

    kind = "linear-Gaussian priors"
    methods = {"exact": _OPTIONS}
    curve_options = _OPTIONS

    @property
    def name(self) -> str:
        items = self.prior_class if isinstance(self.prior_class, (list, tuple)) else [self.prior_class]
        return " + ".join(str(getattr(p, "name", p)) for p in items)

    @property
    def fingerprint(self) -> str:
        from puffgm.gaussian.networks import load_gaussian_class

        return load_gaussian_class(self.prior_class).fingerprint

    def _calibrate(self, *, epsilon, lipschitz, method, options):
        return gaussian_calibrate(self.prior_class, epsilon=epsilon, lipschitz=lipschitz, **options)

    def _influence_curve(self, *, max_b, options):
        return gaussian_influence_curve(self.prior_class, max_b, **options)
