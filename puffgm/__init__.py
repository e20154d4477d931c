"""puffgm: Pufferfish privacy for correlated data with graphical-model priors.

A prior class of any kind -- Bayesian networks (:mod:`puffgm.networks`), Markov
chains and parameter boxes (:mod:`puffgm.chains`), linear-Gaussian networks
(:mod:`puffgm.gaussian`) -- goes through one road (:mod:`puffgm.api`)::

    prior -> as_prior -> calibrate / influence_curve / translate -> mechanisms -> accounting

(Blowfish policies: :mod:`puffgm.blowfish`; exact audits: :mod:`puffgm.framework`;
the layers are described in docs/architecture.md.)

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
    # one road for every prior kind (puffgm.api)
    "as_prior": "puffgm.api",
    "calibrate": "puffgm.api",
    "calibrate_many": "puffgm.api",
    "influence_curve": "puffgm.api",
    "translate": "puffgm.api",
    "calibrate_query": "puffgm.api",
    "calibrate_workload": "puffgm.api",
    "release": "puffgm.api.release",
    # query-specific calibration
    "SumQuery": "puffgm.core.query",
    "QueryCalibration": "puffgm.mechanisms.query",
    "release_query": "puffgm.mechanisms.query",
    "WorkloadCalibration": "puffgm.mechanisms.workload",
    "release_workload": "puffgm.mechanisms.workload",
    # Bayesian networks
    "load_prior_class": "puffgm.api.persist",
    "save_prior": "puffgm.api.persist",
    "PriorClass": "puffgm.networks.priors",
    "NetworkPrior": "puffgm.networks.priors",
    "SecretSpec": "puffgm.networks.secrets",
    "fit_network": "puffgm.networks.fit",
    # Markov chains and parameter boxes
    "ChainPrior": "puffgm.chains",
    "ChainPriorClass": "puffgm.chains",
    "ChainParameterBox": "puffgm.chains",
    "load_chain_spec": "puffgm.chains",
    "fit_chain": "puffgm.chains.priors",
    "temporal_leakage": "puffgm.chains.leakage",
    # linear-Gaussian networks
    "LinearGaussianPrior": "puffgm.gaussian.networks",
    "load_gaussian_class": "puffgm.gaussian.networks",
    # Blowfish policies
    "Domain": "puffgm.blowfish",
    "Policy": "puffgm.blowfish",
    # results, releases, accounting
    "CalibrationResult": "puffgm.core.results",
    "InfluenceCurve": "puffgm.core.curve",
    "Release": "puffgm.core.release",
    "release_laplace": "puffgm.mechanisms.laplace",
    "PrivacyAccountant": "puffgm.accounting",
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
