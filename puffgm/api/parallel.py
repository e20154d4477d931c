"""Calibrating many prior classes at once: locally with joblib, or on a Dask cluster.

Each prior class Theta is calibrated independently (Song, Wang and Chaudhuri,
Algorithm 2 for Bayesian networks through :func:`puffgm.networks.calibration.calibrate`;
Algorithms 3/4 and the baselines for Markov chains through
:mod:`puffgm.chains`), so a list of classes -- a parameter grid, a sweep over
fitted networks, a family of what-if priors -- is embarrassingly parallel.
:func:`calibrate_many` cuts the list into contiguous chunks and runs them

* locally with joblib (the default; loky worker processes, or whatever
  ``joblib.parallel_config`` selects), or
* on a Dask cluster when a ``distributed.Client`` (or its scheduler address)
  is passed as ``client=`` (the ``cluster`` extra: ``pip install 'puffgm[cluster]'``).

What crosses process boundaries: the function (by reference, so every worker
must be able to ``import puffgm``, the same version), each chunk's prior
objects as given (pickled: ``ChainPriorClass``, ``NetworkPrior``,
``PriorClass`` and pgmpy models are shipped whole; strings -- file paths and
``"example:NAME"`` -- are shipped as strings and loaded *on the worker*, so a
path must exist there), epsilon, L, the method and the options; the
:class:`~puffgm.core.results.CalibrationResult` objects come back.

Determinism.  A calibration draws no randomness and the chunking does not
change what any one calibration computes, so the results are those of calling
the calibration on each class alone, in input order, whatever the backend,
the number of workers or the chunk size.  With the same versions of puffgm,
numpy and scipy on every worker they are identical to the local run, down to
the last bit of every float (the test suite compares the full ``to_dict()``).
Pufferfish privacy is a condition per prior: every item of the list is its own
class Theta and gets its own calibration (an item that is a list of networks is
one class, calibrated as the max over its members of each member's optimum).
"""

from __future__ import annotations

import math
import os

from puffgm.core.validation import check_positive_finite, check_positive_int
from puffgm.exceptions import ParameterError

__all__ = ["calibrate_many", "CHAIN_METHODS", "NETWORK_METHODS"]

#: Methods for Markov-chain classes (``puffgm.chains``).
CHAIN_METHODS = ("exact", "approx", "groupdp", "gk16")
#: Methods for Bayesian-network classes (``puffgm.networks.calibration.calibrate``).
NETWORK_METHODS = ("exact",)
#: Options understood by the chain road (MQMExact / MQMApprox constructors).
_CHAIN_OPTIONS = {"exact": ("max_length", "paper_convention", "per_node", "mixing", "mixing_rtol"),
                  "approx": ("use_reversible",),
                  "groupdp": (), "gk16": ()}
#: Chunks per worker: small enough to balance uneven classes, large enough to amortise shipping.
_CHUNKS_PER_WORKER = 4


def _is_chain(prior) -> bool:
    from puffgm.chains.priors import ChainPrior, ChainPriorClass

    return isinstance(prior, (ChainPrior, ChainPriorClass))


def _calibrate_one(prior, epsilon: float, lipschitz: float, method: str, chain_options: dict,
                   network_options: dict):
    """One class, exactly as a direct call would calibrate it (runs on the worker)."""
    if _is_chain(prior):
        from puffgm.chains.priors import ChainPrior, ChainPriorClass

        cc = ChainPriorClass([prior]) if isinstance(prior, ChainPrior) else prior
        if method == "exact":
            from puffgm.chains.exact import MQMExact

            return MQMExact(cc, **chain_options).calibrate(epsilon=epsilon, lipschitz=lipschitz)
        if method == "approx":
            from puffgm.chains.approx import MQMApprox

            return MQMApprox(cc, **chain_options).calibrate(epsilon=epsilon, lipschitz=lipschitz)
        from puffgm.chains.baselines import gk16, group_dp

        baseline = group_dp if method == "groupdp" else gk16
        return baseline(cc, epsilon=epsilon, lipschitz=lipschitz)
    from puffgm.networks.calibration import calibrate

    return calibrate(prior, epsilon, lipschitz, **network_options)


def _calibrate_chunk(payload) -> list:
    """Calibrate one contiguous chunk; ``payload = (priors, epsilon, lipschitz, method, chain_opts, net_opts)``."""
    priors, epsilon, lipschitz, method, chain_options, network_options = payload
    return [_calibrate_one(p, epsilon, lipschitz, method, chain_options, network_options) for p in priors]


def _split_options(method: str, kinds: set, options: dict):
    """(chain options, network options), refusing options that no class of the list uses."""
    chain_keys = set(_CHAIN_OPTIONS[method]) if method in _CHAIN_OPTIONS else set()
    chain = {k: v for k, v in options.items() if k in chain_keys}
    network = {k: v for k, v in options.items() if k not in chain_keys}
    if network:
        if "network" not in kinds:
            raise ParameterError(
                f"Option(s) {sorted(network)} do not apply to Markov-chain classes with method {method!r}; "
                f"the chain options are {sorted(chain_keys) or 'none'}."
            )
        import inspect

        from puffgm.networks.calibration import calibrate

        known = {n for n, p in inspect.signature(calibrate).parameters.items() if p.kind == p.KEYWORD_ONLY}
        unknown = sorted(set(network) - known)
        if unknown:
            raise ParameterError(
                f"Option(s) {unknown} are unknown: networks take {sorted(known)}, "
                f"chains ({method}) take {sorted(chain_keys) or 'none'}."
            )
    if chain and "chain" not in kinds:
        raise ParameterError(f"Option(s) {sorted(chain)} apply to Markov-chain classes, and the list has none.")
    return chain, network


def _chunks(n: int, workers: int, chunk_size):
    size = chunk_size if chunk_size is not None else max(1, math.ceil(n / (workers * _CHUNKS_PER_WORKER)))
    return [(lo, min(lo + size, n)) for lo in range(0, n, size)]


def _dask_client(client):
    """(Client, owned): a ``distributed.Client`` as given, or a new one for a scheduler address."""
    if isinstance(client, str):
        try:
            from distributed import Client
        except ImportError:
            raise ParameterError(
                "client= needs Dask's distributed package: install it with pip install 'puffgm[cluster]'."
            ) from None
        return Client(client), True
    if not (hasattr(client, "submit") and hasattr(client, "gather")):
        raise ParameterError(
            f"client= must be a distributed.Client or a scheduler address 'tcp://host:8786'; "
            f"got {type(client).__name__}."
        )
    return client, False


def calibrate_many(priors, epsilon: float, lipschitz: float = 1.0, *, method: str = "exact",
                   n_jobs: int | None = None, client=None, chunk_size: int | None = None, **options) -> list:
    """Calibrate every prior class of ``priors`` independently, in parallel; results in input order.

    Each item is one prior class Theta and gets the calibration a direct call
    gives it: Song et al. Algorithm 2 (the Markov Quilt Mechanism,
    sigma_max = max over theta of min over quilts of card(X_N) / (epsilon - e_theta(X_Q | X_i)))
    for networks via :func:`puffgm.networks.calibration.calibrate`, and MQMExact /
    MQMApprox / GroupDP / GK16 for Markov chains (section 4.4).

    Parameters
    ----------
    priors : sequence
        The classes.  A ``ChainPriorClass`` (or one ``ChainPrior``) takes the
        chain road; anything :func:`puffgm.networks.calibration.calibrate` accepts takes
        the network road: a path, ``"example:NAME"``, a pgmpy model, a
        ``NetworkPrior``, a ``PriorClass``, or a list of these (one class).
    epsilon, lipschitz : float
        Pufferfish parameter and the query's L1 Lipschitz constant (finite, > 0).
    method : {"exact", "approx", "groupdp", "gk16"}
        Chains take every method; networks take ``"exact"`` only.
    n_jobs : int, optional
        Local worker processes (joblib); default every core.  ``1`` runs in
        this process.  Ignored with ``client``.
    client : distributed.Client or str, optional
        Run on this Dask cluster instead (a ``Client``, or a scheduler address
        such as ``"tcp://10.0.0.5:8786"``, for which a client is opened and
        closed again).  Every worker must be able to import the same puffgm.
    chunk_size : int, optional
        Classes per task (default: about four tasks per worker).  Does not
        change the results.
    **options
        Passed on: ``max_length``, ``paper_convention``, ``per_node``, ``mixing``,
        ``mixing_rtol`` (chains, exact), ``use_reversible`` (chains, approx); the keyword options of
        :func:`puffgm.networks.calibration.calibrate` (``protected``, ``secrets``,
        ``max_quilt_states``, ...) for networks.

    Returns
    -------
    list of CalibrationResult
        ``result[j]`` is the calibration of ``priors[j]``, identical to a direct call.

    Raises
    ------
    ParameterError
        On a bad epsilon, L, method, n_jobs, chunk_size, client or option.  An
        error inside one calibration (an invalid prior, ...) is raised here as
        the worker raised it.

    Examples
    --------
    >>> from puffgm import calibrate_many
    >>> from puffgm.chains import ChainPriorClass, MQMExact
    >>> grid = [ChainPriorClass.from_matrices([[p, 1 - p], [0.3, 0.7]], "any", 50) for p in (0.2, 0.8)]
    >>> [r.sigma_max for r in calibrate_many(grid, 1.0, n_jobs=1)] == \\
    ...     [MQMExact(c).calibrate(epsilon=1.0).sigma_max for c in grid]
    True
    """
    epsilon = check_positive_finite(epsilon, "epsilon", "calibrate_many")
    lipschitz = check_positive_finite(lipschitz, "lipschitz", "calibrate_many")
    if method not in CHAIN_METHODS:
        raise ParameterError(
            f"The 'method' parameter of calibrate_many must be one of {CHAIN_METHODS}. Got {method!r} instead."
        )
    if isinstance(priors, (str, bytes)) or not hasattr(priors, "__iter__"):
        raise ParameterError(
            "calibrate_many takes a list of prior classes (one per calibration); for one class call "
            "puffgm.calibrate or MQMExact."
        )
    priors = list(priors)
    if chunk_size is not None:
        chunk_size = check_positive_int(chunk_size, "chunk_size", "calibrate_many")
    kinds = {"chain" if _is_chain(p) else "network" for p in priors}
    if "network" in kinds and method not in NETWORK_METHODS:
        raise ParameterError(
            f"Method {method!r} applies to Markov-chain classes; Bayesian networks use {NETWORK_METHODS}."
        )
    chain_options, network_options = _split_options(method, kinds, options)
    if not priors:
        return []

    def payload(lo, hi):
        return (priors[lo:hi], epsilon, lipschitz, method, chain_options, network_options)

    if client is not None:
        client, owned = _dask_client(client)
        try:
            workers = max(1, sum(client.nthreads().values()))
            futures = [client.submit(_calibrate_chunk, payload(lo, hi), pure=False)
                       for lo, hi in _chunks(len(priors), workers, chunk_size)]
            chunks = client.gather(futures)
        finally:
            if owned:
                client.close()
    else:
        jobs = (os.cpu_count() or 1) if n_jobs is None else check_positive_int(n_jobs, "n_jobs", "calibrate_many")
        jobs = min(jobs, len(priors))
        parts = _chunks(len(priors), jobs, chunk_size)
        if jobs == 1 or len(parts) == 1:
            chunks = [_calibrate_chunk(payload(lo, hi)) for lo, hi in parts]
        else:
            from joblib import Parallel, delayed

            chunks = Parallel(n_jobs=jobs)(delayed(_calibrate_chunk)(payload(lo, hi)) for lo, hi in parts)
    return [r for chunk in chunks for r in chunk]
