r"""One road for every prior kind: turn what the user gives into a prior class, then dispatch.

Every entry point of :mod:`puffgm` that takes a prior -- :func:`calibrate`,
:func:`influence_curve`, :func:`translate`, :func:`puffgm.calibrate_many` and the
``puffgm`` command -- goes through :func:`as_prior`, which returns an object of
the :class:`~puffgm.core.prior.PriorKind` interface, and then calls only that
interface.  The kinds (networkx's backend dispatch and pgmpy's inference base
class are the models), by input:

* a network file (BIF, XMLBIF, Hugin NET, GeNIe XDSL, UAI, XBN: every path not
  ending in .json), ``example:NAME``, a pgmpy network, a NetworkPrior, a
  PriorClass, or a list of them: :class:`~puffgm.networks.kind.BayesianNetworkKind`
  (:mod:`puffgm.networks`);
* a chain JSON spec (a path, inline JSON text or a dict), a ChainPrior or a
  ChainPriorClass: :class:`~puffgm.chains.kind.MarkovChainKind` (:mod:`puffgm.chains`);
* a box JSON spec or a ChainParameterBox: :class:`~puffgm.chains.kind.ChainBoxKind`
  (:mod:`puffgm.chains.box`);
* puffgm-linear-gaussian JSON, a LinearGaussianPrior or a pgmpy
  LinearGaussianBayesianNetwork: :class:`~puffgm.gaussian.kind.LinearGaussianKind`
  (:mod:`puffgm.gaussian`);
* a saved prior of any kind (``"format": "puffgm-prior"``, :func:`puffgm.save_prior`; a
  ``*.json`` path, inline JSON text or a dict): read by :mod:`puffgm.api.persist`, then
  classified as the class it holds.

A list is one class :math:`\Theta` and must hold one kind.  Pufferfish privacy is a
condition per prior, so every kind calibrates a finite class as the max over its
members of each member's own optimum, and its curve is the pointwise max of the
members' curves.

Two analyses take their inputs outside this dispatch, because they answer other
questions than a calibration for a prior class:

* the temporal privacy leakage of per-step DP releases on a Markov chain
  (:func:`puffgm.chains.leakage.temporal_leakage`, ``puffgm leakage``) reads a
  chain spec with :func:`puffgm.chains.spec.read_chain_spec` itself, since it needs
  the spec's ``"backward"`` matrix and refuses parameter boxes;
* Blowfish policies (:mod:`puffgm.blowfish`, ``puffgm blowfish``) are secret graphs
  and count constraints over a domain, not a class of priors; their sensitivity and
  mechanisms are their own, and their releases meet the others only in the accountant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from puffgm.api.persist import is_saved_prior, load_prior_class
from puffgm.core.curve import InfluenceCurve
from puffgm.core.prior import QUERY_METHODS, PriorKind
from puffgm.core.validation import check_positive_finite, deprecated_call, renamed
from puffgm.exceptions import ParameterError, PriorError

if TYPE_CHECKING:  # annotations only
    from puffgm.core.results import CalibrationResult
    from puffgm.mechanisms.query import QueryCalibration
    from puffgm.mechanisms.translation import Translation
    from puffgm.mechanisms.workload import WorkloadCalibration

__all__ = ["as_prior", "classify", "kind_of", "calibrate", "calibrate_query", "calibrate_workload",
           "calibrate_for_query", "influence_curve", "translate"]


def _items(prior) -> list:
    if isinstance(prior, (list, tuple)):
        return list(prior)
    return [prior]


def _refuse_data(items: list) -> None:
    """Data is not a prior: a pandas DataFrame or Series is refused, never iterated as file names."""
    from puffgm.core.frames import pandas_type

    for p in items:
        kind = pandas_type(p)
        if kind == "DataFrame":
            raise PriorError("A pandas DataFrame is data, not a prior: fit a prior class to it first with "
                             "puffgm.fit_network(frame) (discrete columns) or puffgm.fit_chain(frame) (one trace "
                             "per column).")
        if kind == "Series":
            raise PriorError("A pandas Series is data, not a prior: fit a Markov chain to it first with "
                             "puffgm.fit_chain(series).")


def _refuse_results(items: list) -> None:
    """A calibration or a curve is a result, not a prior: refused in one sentence naming what to do with it."""
    from puffgm.core.release import released_by

    for p in items:
        known = None if isinstance(p, (str, PriorKind)) else released_by(p)
        if known is not None and isinstance(p, InfluenceCurve):
            raise PriorError("An a(b)-influence curve is a result, not a prior: translate along it with "
                             "puffgm.translate(curve, epsilon=...) or release along it with "
                             "puffgm.mechanisms.pufferfish (pufferfish_laplace(answer, curve, epsilon=...)).")
        if known is not None:
            raise PriorError(f"This is {known[0]}, a result and not a prior: release it with {known[1]}.")


def classify(prior) -> tuple:
    """(kind class, the loaded kind or None): chains are loaded here, other kinds by their class.

    The registered roads (:mod:`puffgm.api.kinds`) are asked in order; the first that claims every
    item of the class gives its kind, one that claims only some refuses the mix, and the default road
    (Bayesian networks) takes the rest.  Chain specs are read (they are small JSON files) to tell a box
    from a class; network and linear-Gaussian inputs are classified by type, extension and format key
    only.
    """
    from puffgm.api.kinds import roads

    if isinstance(prior, PriorKind):
        return type(prior), prior
    items = _items(prior)
    _refuse_data(items)
    _refuse_results(items)
    if any(is_saved_prior(p) for p in items):  # a saved prior (puffgm.save_prior) is read here, then classified
        items = [load_prior_class(p) if is_saved_prior(p) else p for p in items]
        loaded_prior = items if isinstance(prior, (list, tuple)) else items[0]
        kind, loaded = classify(loaded_prior)
        return kind, loaded if loaded is not None else kind(loaded_prior)
    every = roads()
    for road in every:
        if road.default or not items:
            continue
        claimed = [road.claims(p) for p in items]
        if all(claimed):
            return road.classify(prior)
        if any(claimed):
            kinds = ", ".join(r.label for r in every)
            raise PriorError(f"A prior class mixes {road.label} with other priors; one class holds one kind "
                             f"({kinds}).")
    return next(r for r in every if r.default).classify(prior)


def kind_of(prior) -> type:
    """The :class:`PriorKind` subclass that serves ``prior``, without loading any network."""
    return classify(prior)[0]


def as_prior(prior: Any) -> PriorKind:
    r"""The prior class of ``prior`` as a :class:`~puffgm.core.prior.PriorKind` (loaded and validated).

    Parameters
    ----------
    prior : PriorKind, or any input of the table in :mod:`puffgm.api.dispatch`
        A list (or tuple) is one class :math:`\Theta`.

    Returns
    -------
    PriorKind
        The prior kind of the class, loaded and validated once; every calibration goes through it.

    Raises
    ------
    PriorError
        When the input is not a prior, or a list mixes kinds.

    Examples
    --------
    >>> from puffgm.api import as_prior
    >>> as_prior("example:asia").kind
    'Bayesian-network priors'
    """
    if isinstance(prior, (list, tuple)) and not prior:
        raise PriorError("No prior given: a prior class needs at least one prior.")
    kind, loaded = classify(prior)
    return loaded if loaded is not None else kind(prior)


def calibrate(prior: Any, *, epsilon: float, lipschitz: float = 1.0, method: str = "exact",
              **options: Any) -> CalibrationResult:
    r"""Calibrate noise for an :math:`L`-Lipschitz query on any prior class (the Markov Quilt Mechanism and kin).

    Bayesian networks: Song, Wang and Chaudhuri, "Pufferfish Privacy Mechanisms
    for Correlated Data", SIGMOD 2017 (arXiv:1603.03977), Algorithm 2 and
    Theorem 4.3; Markov chains: their Algorithms 3 and 4 (``method`` ``"exact"``
    or ``"approx"``) and the baselines ``"groupdp"`` and ``"gk16"``; parameter boxes:
    certified suprema over the box (section 5.2); linear-Gaussian networks:
    Algorithm 2 with certified Gaussian leakage.  For one query or a table of
    queries, :func:`calibrate_query` and :func:`calibrate_workload` calibrate by
    exact inference instead.

    Parameters
    ----------
    prior : PriorKind or anything :func:`as_prior` accepts
        The class :math:`\Theta`.
    epsilon : float
        Pufferfish privacy parameter :math:`\epsilon`, finite and :math:`> 0`.
    lipschitz : float
        L1 Lipschitz constant :math:`L` of the query.
    method : str
        ``"exact"`` (every kind); chains and boxes also take ``"approx"``,
        ``"groupdp"`` and ``"gk16"``.
    **options
        The options of the kind and method (``kind.methods[method]``), e.g.
        ``protected``, ``max_quilt_states``, ``search_budget`` ... for networks
        (:class:`puffgm.networks.calibration.NetworkOptions`; ``client=`` a Dask
        ``distributed.Client`` or a scheduler address spreads one network's node
        searches over the cluster's workers, with the local result); an option the
        kind does not use is refused with a ParameterError naming the options.
        ``query=`` (with method ``"wasserstein"``, ``"optimal-laplace"`` or
        ``"optimal-noise"``) is deprecated: it warns and returns what
        :func:`calibrate_query` or :func:`calibrate_workload` return.

    Returns
    -------
    CalibrationResult
        The noise scale :math:`L \sigma_{\max}` with the quilts, the theorem and the baselines that justify it.

    Examples
    --------
    >>> import puffgm
    >>> res = puffgm.calibrate("example:asia", epsilon=4.0)
    >>> round(res.sigma_max, 4)
    1.7873
    """
    if method in QUERY_METHODS or "query" in options:
        return _deprecated_query_road(prior, epsilon, lipschitz, method, options)
    from puffgm.api.recipes import remember

    kind = as_prior(prior)
    return remember(kind.calibrate(epsilon=epsilon, lipschitz=lipschitz, method=method, **options), kind,
                    lambda k: k.calibrate(epsilon=epsilon, lipschitz=lipschitz, method=method, **options))


def _deprecated_query_road(prior: Any, epsilon: float, lipschitz: float, method: str, options: dict) -> Any:
    """``calibrate(..., query=...)``: warns, then returns what calibrate_query or calibrate_workload return."""
    from puffgm.core.workload import is_workload_spec

    query = options.pop("query", None)
    if query is None:
        raise ParameterError(f"Method {method!r} calibrates for one query: call "
                             f"puffgm.calibrate_query(prior, query, epsilon=..., method={method!r}).")
    if method not in QUERY_METHODS:
        raise ParameterError(f"A query is calibrated by puffgm.calibrate_query (methods "
                             f"{', '.join(map(repr, QUERY_METHODS))}); method {method!r} calibrates for every "
                             f"{lipschitz:g}-Lipschitz query.")
    deprecated_call("puffgm.calibrate(..., query=...)",
                    "puffgm.calibrate_workload(prior, workload, epsilon=...)" if is_workload_spec(query)
                    else f"puffgm.calibrate_query(prior, query, epsilon=..., method={method!r})", stacklevel=4)
    return calibrate_for_query(prior, query, epsilon=epsilon, method=method, **options)


def calibrate_for_query(prior: Any, query: Any, *, epsilon: float, method: str = "wasserstein",
                        **options: Any) -> Any:
    """:func:`calibrate_workload` for a workload (several queries, a histogram), else :func:`calibrate_query`.

    The one road of a query given without saying whether it is one query or a table (``puffgm
    calibrate --query``, the deprecated ``calibrate(..., query=...)``).  A workload takes the
    joint optimal Laplace scales (method ``"optimal-laplace"``) and the options ``weights`` and
    ``max_joint_length``; one query takes any query method and neither of those.

    Returns
    -------
    QueryCalibration or WorkloadCalibration
        The workload's calibration when ``query`` is a workload spec, else the one query's.

    Raises
    ------
    ParameterError
        For a workload with another method.
    """
    from puffgm.core.workload import is_workload_spec

    if is_workload_spec(query):
        if method != "optimal-laplace":
            raise ParameterError(f"A workload (several queries) is calibrated by its joint optimal Laplace scales "
                                 f"(method 'optimal-laplace': puffgm.calibrate_workload, or --method optimal-laplace "
                                 f"on the command line); method {method!r} takes one query.")
        return calibrate_workload(prior, query, epsilon=epsilon, **options)
    return calibrate_query(prior, query, epsilon=epsilon, method=method, **options)


def calibrate_query(prior: Any, query: Any, *, epsilon: float, method: str = "wasserstein",
                    **options: Any) -> QueryCalibration:
    r"""Calibrate Laplace noise for one sum query by exact inference, beside group DP and MQM.

    Song, Wang and Chaudhuri, "Pufferfish Privacy Mechanisms for Correlated
    Data", SIGMOD 2017 (arXiv:1603.03977), section 3: the Wasserstein mechanism
    adds :math:`\mathrm{Lap}(W / \epsilon)`, :math:`W` the largest :math:`\infty`-Wasserstein distance between
    the laws of :math:`F` given the two secrets of a pair; ``"optimal-laplace"`` finds
    the least scale whose exact Pufferfish loss is at most :math:`\epsilon`.  See
    :func:`puffgm.api.query.query_calibration` for the options.

    Parameters
    ----------
    prior : PriorKind or anything :func:`as_prior` accepts
        Bayesian networks or Markov-chain classes.
    query : SumQuery, dict, JSON text or JSON file path
        ``{"scores": {NODE: [...]}}``, ``{"scores": [...]}`` or ``{"count": STATE}``.
    epsilon : float
    method : str
        ``"wasserstein"``, ``"optimal-laplace"`` or ``"optimal-noise"``.

    Returns
    -------
    QueryCalibration
        The chosen scale (or noise law) beside the Wasserstein, group-DP and MQM scales, with its exact loss.

    Examples
    --------
    >>> import puffgm
    >>> cal = puffgm.calibrate_query("example:alarm", {"count": 0}, epsilon=1.0)
    >>> cal.wasserstein, cal.group_dp_scale
    (7.0, 37.0)
    """
    from puffgm.api.query import query_calibration
    from puffgm.api.recipes import remember

    kind = as_prior(prior)
    return remember(query_calibration(kind, query, epsilon=epsilon, method=method, **options), kind,
                    lambda k: query_calibration(k, query, epsilon=epsilon, method=method, **options))


def calibrate_workload(prior: Any, workload: Any, *, epsilon: float, weights: Any = None,
                       **options: Any) -> WorkloadCalibration:
    r"""Calibrate a table of sum queries released together, by their exact joint laws, beside group DP and MQM.

    Statistic :math:`j` gets :math:`\mathrm{Lap}(t\, w_j)`; :math:`t` is the least multiplier whose exact joint
    Pufferfish loss is at most :math:`\epsilon` (:mod:`puffgm.mechanisms.workload`).  See
    :func:`puffgm.api.workload.workload_calibration` for the options.

    Parameters
    ----------
    prior : PriorKind or anything :func:`as_prior` accepts
        Bayesian networks or Markov-chain classes.
    workload : list of sum queries, ``{"queries": [...]}``, ``{"histogram": {...}}``, JSON text or path
        :func:`puffgm.core.workload.load_workload`; a single query is a workload of one.
    epsilon : float
    weights : sequence of float, optional
        :math:`w_j` per statistic (default 1 each).

    Returns
    -------
    WorkloadCalibration
        One Laplace scale per statistic, with the exact joint loss and the alternatives beside them.

    Examples
    --------
    >>> import puffgm
    >>> cal = puffgm.calibrate_workload("example:asia", {"histogram": {}}, epsilon=1.0)
    >>> cal.names, cal.loss <= 1.0
    (('yes', 'no'), True)
    """
    from puffgm.api.recipes import remember
    from puffgm.api.workload import workload_calibration

    kind = as_prior(prior)
    return remember(workload_calibration(kind, workload, epsilon=epsilon, weights=weights, **options), kind,
                    lambda k: workload_calibration(k, workload, epsilon=epsilon, weights=weights, **options))


def influence_curve(prior: Any, max_b: int | None = None, **options: Any) -> InfluenceCurve:
    """The :math:`a(b)`-influence curve of a prior class (Bai, He, Gu, Kifer and Maeng, Definition 7).

    Parameters
    ----------
    prior : PriorKind or anything :func:`as_prior` accepts
        Networks, chain classes and linear-Gaussian networks have curves; a
        parameter box has none (NotApplicableError).
    max_b : int, optional
        Largest b.  Default: the number of nodes for networks, and
        ``min(T, DEFAULT_CHAIN_MAX_B)`` for chains.
    **options
        The kind's curve options: ``secrets``, ``max_quilt_states`` and
        ``per_node`` (keep every node's own curve) for networks; ``protected``,
        ``secrets``, ``bounds``, ``delta``, ``exhaustive`` for linear-Gaussian
        networks; none for chains.

    Returns
    -------
    InfluenceCurve
        The points (a(b), b) with the witnesses that attain them.

    Examples
    --------
    >>> from puffgm import influence_curve
    >>> c = influence_curve("example:asia")
    >>> c.a_at(c.n_entries)
    0.0
    """
    return as_prior(prior).influence_curve(max_b, **options)  # checked at the kind's door


def translate(prior: Any, *, epsilon: float | None = None, epsilon_dp: float | None = None,
              max_b: int | None = None, **options: Any) -> Translation:
    r"""Translate the Pufferfish :math:`\epsilon` to or from :math:`\epsilon_{\mathrm{DP}}` along a prior class's curve.

    Bai, He, Gu, Kifer and Maeng, Theorem 6.

    Parameters
    ----------
    prior : InfluenceCurve, PriorKind, or anything :func:`as_prior` accepts
        A curve is used as it is; a prior class gets its curve first
        (:func:`influence_curve` with ``max_b`` and ``options``).
    epsilon, epsilon_dp : float
        Exactly one: the Pufferfish guarantee to reach (gives the largest :math:`\epsilon_{\mathrm{DP}}`;
        ``epsilon_puffer`` is its deprecated name) or the DP parameter of the mechanism
        (gives the Pufferfish guarantee).

    Returns
    -------
    Translation
        The :math:`\epsilon` on the other side, the curve point used and its witness.

    Examples
    --------
    >>> import puffgm
    >>> t = puffgm.translate("example:asia", epsilon=10.0)
    >>> t.epsilon_dp > 0
    True
    """
    from puffgm.mechanisms.translation import translate_curve

    epsilon = renamed(options, "epsilon_puffer", "epsilon", "puffgm.translate", epsilon)
    if (epsilon is None) == (epsilon_dp is None):
        raise ParameterError("puffgm.translate needs exactly one of 'epsilon' (the Pufferfish guarantee) and "
                             "'epsilon_dp'.")
    if epsilon is not None:  # checked before any curve is computed, under the name the user called
        epsilon = check_positive_finite(epsilon, "epsilon", "puffgm.translate")
    else:
        epsilon_dp = check_positive_finite(epsilon_dp, "epsilon_dp", "puffgm.translate")
    if isinstance(prior, InfluenceCurve) and (max_b is not None or options):
        raise ParameterError("translate was given a curve: max_b and curve options apply only to a prior class.")
    curve = prior if isinstance(prior, InfluenceCurve) else influence_curve(prior, max_b, **options)
    return translate_curve(curve, epsilon=epsilon, epsilon_dp=epsilon_dp)
