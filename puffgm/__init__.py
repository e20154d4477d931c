"""puffgm: Pufferfish privacy for correlated data with graphical-model priors.

The package mirrors the data flow, one stage per module::

    priors -> quilts -> influence -> calibration -> curves -> translation
           -> mechanisms -> accounting          (chains: puffgm.chains; audits: puffgm.framework)

The most used names are available here and imported on first use, so
``import puffgm`` stays fast and never imports pgmpy:

>>> import puffgm
>>> res = puffgm.calibrate("example:asia", epsilon=4.0)
>>> round(res.sigma_max, 4)
1.7873
"""

from importlib import import_module

__version__ = "0.1.0"

_LAZY = {
    "load_prior_class": "puffgm.networks.priors",
    "PriorClass": "puffgm.networks.priors",
    "NetworkPrior": "puffgm.networks.priors",
    "SecretSpec": "puffgm.networks.secrets",
    "calibrate": "puffgm.networks.calibration",
    "evaluate_quilts": "puffgm.networks.quilt_scores",
    "InfluenceEngine": "puffgm.networks.influence",
    "influence_curve": "puffgm.api",
    "InfluenceCurve": "puffgm.core.curve",
    "translate": "puffgm.mechanisms.translation",
    "release_laplace": "puffgm.mechanisms.laplace",
    "MarkovQuiltLaplace": "puffgm.mechanisms.laplace",
    "PrivacyAccountant": "puffgm.accounting",
    "CalibrationResult": "puffgm.core.results",
    "calibrate_many": "puffgm.api.parallel",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'puffgm' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
