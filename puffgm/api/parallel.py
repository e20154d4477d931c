r"""Calibrating many prior classes at once: locally with joblib, or on a Dask cluster.

Each prior class :math:`\Theta` is calibrated independently (Song, Wang and Chaudhuri,
Algorithm 2 for Bayesian networks through :func:`puffgm.networks.calibration.calibrate`;
Algorithms 3/4 and the baselines for Markov chains through
:mod:`puffgm.chains`), so a list of classes -- a parameter grid, a sweep over
fitted networks, a family of what-if priors -- is embarrassingly parallel.
:func:`calibrate_many` cuts the list into contiguous chunks and runs them

* locally with joblib (the default; loky worker processes, or whatever
  ``joblib.parallel_config`` selects), or
* on a Dask cluster when a ``distributed.Client`` (or its scheduler address)
  is passed as ``client=`` (the ``cluster`` extra: ``pip install 'puffgm[cluster]'``).

Every item goes through :func:`puffgm.api.as_prior` on the worker, so every
prior kind is accepted (Bayesian networks, chain classes, parameter boxes,
linear-Gaussian networks) and a list may mix kinds.  What crosses process
boundaries: the function (by reference, so every worker must be able to
``import puffgm``, the same version), each chunk's prior objects as given (pickled: ``ChainPriorClass``,
``NetworkPrior``,
``PriorClass`` and pgmpy models are shipped whole; strings -- file paths and
``"example:NAME"`` -- are shipped as strings and loaded *on the worker*, so a
path must exist there), :math:`\epsilon`, :math:`L`, the method and the options; the
:class:`~puffgm.core.results.CalibrationResult` objects come back.

Determinism.  A calibration draws no randomness and the chunking does not
change what any one calibration computes, so the results are those of calling
:func:`puffgm.calibrate` on each class alone, in input order, whatever the backend,
the number of workers or the chunk size.  With the same versions of puffgm,
numpy and scipy on every worker they are identical to the local run, down to
the last bit of every float (the test suite compares the full ``to_dict()``).
Pufferfish privacy is a condition per prior: every item of the list is its own
class :math:`\Theta` and gets its own calibration (an item that is a list of networks is
one class, calibrated as the max over its members of each member's optimum).

Failures.  An error inside one calibration never escapes as a worker
traceback or a broken process pool: the worker returns it, and the caller gets
one :class:`~puffgm.exceptions.WorkerError` of one line naming the prior (its
index and name) and the cause; a worker process that dies is reported the same
way with the indices of its chunk.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from puffgm.api.dispatch import as_prior, classify
from puffgm.api.kinds import calibration_methods
from puffgm.core.validation import check_positive_finite, check_positive_int, dask_client
from puffgm.exceptions import ParameterError, PuffgmError, WorkerError, one_line

if TYPE_CHECKING:  # annotations only
    from puffgm.core.results import CalibrationResult

__all__ = ["calibrate_many"]

#: Chunks per worker: small enough to balance uneven classes, large enough to amortise shipping.
_CHUNKS_PER_WORKER = 4


@dataclass(frozen=True)
class _Failure:
    """What a worker sends back instead of raising: the prior's index and name, and the cause."""

    index: int
    name: str
    cause: str

    def error(self) -> WorkerError:
        return WorkerError(f"Calibrating prior {self.index} ({self.name}) failed: {self.cause}")


def _label(prior) -> str:
    """A short name of a prior for messages (a path, an example name, a class's name)."""
    if isinstance(prior, (str, os.PathLike)):
        return repr(os.fspath(prior))
    name = getattr(prior, "name", None)
    if isinstance(name, str):
        return repr(name)
    if isinstance(prior, (list, tuple)):
        return "[" + ", ".join(_label(p) for p in prior[:3]) + (", ..." if len(prior) > 3 else "") + "]"
    return type(prior).__name__


def _calibrate_chunk(payload) -> list:
    """Calibrate one contiguous chunk (runs on the worker); errors come back as :class:`_Failure`.

    ``payload = (start, items, epsilon, lipschitz, method)`` with ``items`` a list of
    (prior, label, options) triples.
    """
    start, items, epsilon, lipschitz, method = payload
    out = []
    for k, (prior, label, options) in enumerate(items):
        try:
            out.append(as_prior(prior).calibrate(epsilon=epsilon, lipschitz=lipschitz, method=method, **options))
        except Exception as exc:  # noqa: BLE001 - every cause is reported, in one line, by the caller
            out.append(_Failure(start + k, label, one_line(exc)))
    return out


def _items(priors, method: str, options: dict) -> list:
    """(what to ship, its label, its options) for every prior; refuses a method or an option a prior's kind
    does not use, with the message :func:`puffgm.calibrate` gives (:meth:`PriorKind.check_options`).

    Chain classes and boxes are shipped loaded (they were read to classify them);
    network and linear-Gaussian inputs are shipped as given and loaded on the worker.
    """
    items = []
    for j, prior in enumerate(priors):
        try:
            kind, loaded = classify(prior)
            accepted = kind.accepted_options(method)
        except PuffgmError as exc:
            raise type(exc)(f"Prior {j} ({_label(prior)}): {one_line(exc)}") from None
        kind.check_options(options, accepted, f"method {method!r}")
        items.append((prior if loaded is None else loaded, _label(prior), dict(options)))
    return items


def _chunks(n: int, workers: int, chunk_size):
    size = chunk_size if chunk_size is not None else max(1, math.ceil(n / (workers * _CHUNKS_PER_WORKER)))
    return [(lo, min(lo + size, n)) for lo in range(0, n, size)]


def _dask_client(client):
    """(Client, owned): a ``distributed.Client`` as given, or a new one for a scheduler address."""
    return dask_client(client, "calibrate_many")


def calibrate_many(priors: Iterable[Any], *, epsilon: float, lipschitz: float = 1.0, method: str = "exact",
                   n_jobs: int | None = None, client: Any = None, chunk_size: int | None = None,
                   **options: Any) -> list[CalibrationResult]:
    r"""Calibrate every prior class of ``priors`` independently, in parallel; results in input order.

    Each item is one prior class :math:`\Theta` and gets the calibration a direct call
    gives it: Song et al. Algorithm 2 (the Markov Quilt Mechanism,
    :math:`\sigma_{\max} = \max_\theta \max_{X_i} \min_Q |X_N| / (\epsilon - e_\theta(X_Q \mid X_i))`)
    for networks via :func:`puffgm.networks.calibration.calibrate`, and MQMExact /
    MQMApprox / GroupDP / GK16 for Markov chains (section 4.4).

    Parameters
    ----------
    priors : sequence
        The classes, of any kind and mixed: anything :func:`puffgm.api.as_prior`
        accepts (a network path, ``"example:NAME"``, a pgmpy model, a
        ``PriorClass``, a ``ChainPriorClass`` or ``ChainPrior``, a
        ``ChainParameterBox``, a chain or linear-Gaussian JSON spec, or a list of
        these, which is one class).
    epsilon, lipschitz : float
        Pufferfish parameter and the query's L1 Lipschitz constant (finite, > 0).
    method : {"exact", "approx", "groupdp", "gk16"}
        Chains and boxes take every method; networks and linear-Gaussian networks
        take ``"exact"`` only.
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
        Each prior gets the options its kind takes for ``method``
        (``PriorKind.methods``): e.g. ``max_length``, ``paper_convention``,
        ``per_node``, ``mixing``, ``mixing_rtol`` (chains, exact), ``use_reversible``
        (approx), the :class:`~puffgm.networks.calibration.NetworkOptions` for
        networks.  An option that the kind of some prior of the list does not take
        for ``method`` is refused, with the ParameterError :func:`puffgm.calibrate` gives;
        no option is dropped.
        ``time_limit`` (networks; default None: no limit) is a budget per prior:
        each network calibration answers or refuses within it.

    Returns
    -------
    list of CalibrationResult
        ``result[j]`` is the calibration of ``priors[j]``, identical to a direct call.

    Raises
    ------
    ParameterError
        On a bad ``epsilon``, ``lipschitz``, ``method``, ``n_jobs``, ``chunk_size``, ``client``, or an option
        some prior's kind does not use.
    WorkerError
        When one calibration fails (an invalid prior, ...): one line naming the
        prior's index and name, and the cause.

    Examples
    --------
    >>> from puffgm import calibrate_many
    >>> from puffgm.chains import ChainPriorClass, MQMExact
    >>> grid = [ChainPriorClass.from_matrices([[p, 1 - p], [0.3, 0.7]], "any", 50) for p in (0.2, 0.8)]
    >>> [r.sigma_max for r in calibrate_many(grid, epsilon=1.0, n_jobs=1)] == \
    ...     [MQMExact(c).calibrate(epsilon=1.0).sigma_max for c in grid]
    True
    """
    epsilon = check_positive_finite(epsilon, "epsilon", "calibrate_many")
    lipschitz = check_positive_finite(lipschitz, "lipschitz", "calibrate_many")
    if isinstance(priors, (str, bytes)) or not hasattr(priors, "__iter__"):
        raise ParameterError(
            "calibrate_many takes a list of prior classes (one per calibration); for one class call "
            "puffgm.calibrate."
        )
    methods = calibration_methods()
    if method not in methods:
        raise ParameterError(f"The 'method' parameter of calibrate_many must be one of {methods}. Got {method!r} "
                             "instead.")
    priors = list(priors)
    if chunk_size is not None:
        chunk_size = check_positive_int(chunk_size, "chunk_size", "calibrate_many")
    items = _items(priors, method, options)
    if not items:
        return []
    if client is not None:
        chunks = _run_dask(client, items, (epsilon, lipschitz, method), chunk_size)
    else:
        jobs = (os.cpu_count() or 1) if n_jobs is None else check_positive_int(n_jobs, "n_jobs", "calibrate_many")
        chunks = _run_local(min(jobs, len(items)), items, (epsilon, lipschitz, method), chunk_size)
    results = [r for chunk in chunks for r in chunk]
    failure = next((r for r in results if isinstance(r, _Failure)), None)
    if failure is not None:
        raise failure.error()
    return results


def _payloads(items, parts, args) -> list:
    return [(lo, items[lo:hi]) + tuple(args) for lo, hi in parts]


def _run_local(jobs: int, items, args, chunk_size) -> list:
    """The chunks' results with joblib worker processes (or in this process for one job)."""
    parts = _chunks(len(items), jobs, chunk_size)
    payloads = _payloads(items, parts, args)
    if jobs == 1 or len(parts) == 1:
        return [_calibrate_chunk(p) for p in payloads]
    from joblib import Parallel, delayed

    try:
        return Parallel(n_jobs=jobs)(delayed(_calibrate_chunk)(p) for p in payloads)
    except Exception as exc:  # noqa: BLE001 - a worker process died (the chunk function never raises)
        raise WorkerError(f"A worker process failed while calibrating priors 0..{len(items) - 1}: "
                          f"{one_line(exc)}") from None


def _run_dask(client, items, args, chunk_size) -> list:
    """The chunks' results on a Dask cluster."""
    client, owned = _dask_client(client)
    try:
        workers = max(1, sum(client.nthreads().values()))
        parts = _chunks(len(items), workers, chunk_size)
        futures = [client.submit(_calibrate_chunk, p, pure=False) for p in _payloads(items, parts, args)]
        try:
            return client.gather(futures)
        except Exception as exc:  # noqa: BLE001 - a worker died or the cluster failed
            raise WorkerError(f"A Dask worker failed while calibrating priors 0..{len(items) - 1}: "
                              f"{one_line(exc)}") from None
    finally:
        if owned:
            client.close()
