r"""Calibration of the Markov Quilt Mechanism for Bayesian-network priors.

Song, Wang and Chaudhuri, Algorithm 2: for each protected node :math:`X_i` and each
candidate quilt :math:`(X_Q, X_N, X_R)` with :math:`e = e_\Theta(X_Q \mid X_i) < \epsilon`,

$$
\sigma(X_Q) = \frac{\mathrm{card}(X_N)}{\epsilon - e}, \qquad \sigma_i = \min_Q \sigma(X_Q), \qquad \sigma_{\max} =
  \max_i \sigma_i,
$$

and an :math:`L`-Lipschitz query (in :math:`L_1`) is released with Laplace noise of scale
:math:`L \sigma_{\max}` on each coordinate (Theorem 4.3; the vector case follows from
Proposition 1 of Dwork et al.).  The minimising quilt of each node is its
*active* quilt (Definition 4.5); :math:`K` releases with the same quilt sets at
:math:`\epsilon` compose to :math:`K \epsilon` (Theorem 4.4), which
:class:`puffgm.accounting.PrivacyAccountant` tracks.

Group differential privacy, the baseline, treats every connected component
of the DAG as one group: noise :math:`L \cdot (\text{size of the largest component}) / \epsilon`.

For a finite class :math:`\Theta`, puffgm takes :math:`\sigma_{\max} = \max_{\theta \in \Theta}` of each
:math:`\theta`'s own optimum, each node with an active quilt per :math:`\theta`.  Pufferfish
privacy is a condition for each :math:`\theta` separately, and the proofs of Theorems
4.3 and 4.4 (appendix C.1) fix :math:`\theta` first and use only :math:`\theta`'s conditionals,
so this is valid; it is never above the minimum over quilts of the score with the
:math:`\sup_{\theta \in \Theta}` influence of Definition 4.1, and equal to it for one prior.

The quilt search is described in :mod:`puffgm.networks.quilts`: exhaustive on small
networks (so :math:`\sigma_{\max}` is optimal over all quilts), a structured family
bounded by ``max_quilt_states`` on larger ones.  Each node's active quilt comes
from :class:`puffgm.networks.quilt_scores.QuiltSearch`; on the structured family
the worst nodes' quilts are then improved, and :math:`\sigma_{\max}` bounded from below, by
the branch and bound of :mod:`puffgm.networks.quilt_search` and, with
``certify_budget``, the cutting planes of :mod:`puffgm.networks.quilt_certify`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from puffgm.core.results import CalibrationResult, QuiltGraph
from puffgm.core.validation import check_positive_finite, check_time_limit, dask_client
from puffgm.core.witness import NodeId
from puffgm.exceptions import InferenceLimitError, ParameterError, PuffgmError, TimeLimitError, WorkerError, one_line
from puffgm.mechanisms.mqm_loop import MQMClock, MQMOutcome, run_mqm, search_nodes, worst_index
from puffgm.networks.inference import DEFAULT_MAX_TABLE_ENTRIES
from puffgm.networks.priors import PriorClass, load_prior_class
from puffgm.networks.quilt_certify import check_certify_budget
from puffgm.networks.quilt_scores import QuiltSearch, better
from puffgm.networks.quilt_search import DEFAULT_SEARCH_BUDGET, check_search_budget, improve_and_certify
from puffgm.networks.quilts import DEFAULT_MAX_QUILT_STATES
from puffgm.networks.secrets import SecretSpec, resolve_secrets

__all__ = ["calibrate", "NetworkOptions", "NETWORK_OPTIONS"]

THEOREM = "Song, Wang and Chaudhuri 2017, Theorem 4.3 (Markov Quilt Mechanism, Algorithm 2)"


def _first_worst(nodes, score):
    """The first node, in node order, whose score ties with the largest (``mqm_loop.worst_index``)."""
    nodes = list(nodes)
    return nodes[worst_index([score(n) for n in nodes])]


#: Expansions per node of the quick branch and bound (no dive) that runs before any
#: refinement, when the single-node bound is within QUICK_SEARCH_GAP of sigma_max: a
#: few expansions often certify the structured search's quilt optimal already.
QUICK_SEARCH_BUDGET = 32
QUICK_SEARCH_GAP = 0.9

#: Networks with at least this many protected nodes use joblib (n_jobs=None) when 2+ cores exist.
AUTO_PARALLEL_NODES = 150


def _resolve_n_jobs(n_jobs, n_nodes: int) -> int:
    import os

    cores = os.cpu_count() or 1
    if n_jobs is None:
        return min(cores, 4) if n_nodes >= AUTO_PARALLEL_NODES and cores > 1 else 1
    n_jobs = int(n_jobs)
    if n_jobs == 0:
        raise ParameterError("The 'n_jobs' parameter of calibrate must be a nonzero integer or None. Got 0 instead.")
    return max(1, cores + 1 + n_jobs) if n_jobs < 0 else n_jobs


#: The quilt search each worker thread keeps between its tasks (the latest calibration's only).
_WORKER = threading.local()


def _worker_search(prior_class, secrets, max_quilt_states, exhaustive, max_table_entries) -> QuiltSearch:
    """This worker's :class:`QuiltSearch` for these arguments, built once per calibration.

    A worker process runs many node searches of one calibration (one node per task under a
    time limit); keeping the search keeps its calibrated junction tree, its conditionals and
    its moral graph.  What is kept per node (influences, quilts, d-separation memos, all
    keyed by node) is dropped at the start of every task, so a node's result and the counts
    do not depend on the nodes searched before it in the same worker.
    """
    key = (prior_class.fingerprint, secrets.key(), max_quilt_states, exhaustive, max_table_entries)
    if getattr(_WORKER, "key", None) != key:
        _WORKER.key, _WORKER.search = None, None  # free the previous calibration's search first
        _WORKER.search = QuiltSearch(prior_class, secrets, max_quilt_states, exhaustive, max_table_entries)
        _WORKER.key = key
    return _WORKER.search


def _best_chunk(prior_class, secrets, max_quilt_states, exhaustive, max_table_entries, nodes, epsilon,
                deadline=None):
    """Worker of the parallel roads: active quilts of ``nodes``, which influences were computed for them
    (:meth:`~puffgm.networks.influence.InfluenceEngine.evaluated`, positions only, not the influences),
    the evaluation and skipped counts of this task, and the nodes that fell back to the trivial quilt."""
    search = _worker_search(prior_class, secrets, max_quilt_states, exhaustive, max_table_entries)
    name = prior_class.priors[0].name

    def check():
        if deadline is not None and time.time() > deadline:
            raise TimeLimitError(
                f"Calibrating network {name!r} reached its time_limit before the node search finished; protect "
                "fewer nodes, lower max_quilt_states or raise time_limit (--time-limit SECONDS; 0: no limit).")

    search.forget_nodes()  # what the previous task's nodes left: the parent has it already
    engine = search.engine
    engine.deadline_check = check if deadline is not None else None
    evaluations, skipped = engine.evaluations, search.skipped
    out = {n: search.best(n, epsilon=epsilon) for n in nodes}
    fallback = [n for n in nodes if n in search.fallback]
    return out, engine.evaluated(), engine.evaluations - evaluations, search.skipped - skipped, fallback


def network_clock(time_limit, total_nodes: int, name: str, jobs: int = 1) -> MQMClock:
    """The time budget of a network calibration of ``total_nodes`` node searches on ``jobs`` workers."""
    return MQMClock(time_limit, f"Calibrating network {name!r}",
                    "protect fewer nodes, lower max_quilt_states or raise time_limit", total=total_nodes, jobs=jobs)


def _node_bests(search: QuiltSearch, nodes, epsilon, n_jobs: int = 1, bar=None, clock=None, client=None) -> dict:
    """search.best of every node, sequentially, split over joblib workers, or over the workers of a
    Dask cluster (``client``).  Identical results: each node's search depends on that node only.

    A worker sends back each node's active quilt and a compact record of the influences it
    computed (which quilts, not their values or witnesses); the refinement of the worst nodes
    recomputes in this process the few influences it needs again (the same values, the same
    code), and the record keeps the evaluation count that of the sequential run.
    """
    if client is None and (n_jobs <= 1 or len(nodes) < 2 * n_jobs):
        return search_nodes(nodes, lambda n: search.best(n, epsilon=epsilon), bar=bar,
                            tick=None if clock is None else lambda _: clock.tick())
    workers = n_jobs if client is None else max(1, sum(client.nthreads().values()))
    size = max(1, -(-len(nodes) // (4 * workers)))  # about 4 chunks per worker, in node order
    deadline = None
    if clock is not None and clock.limit is not None:
        size = 1  # one node per task, so the time budget is checked often
        deadline = clock.wall_deadline()
    chunks = [nodes[k:k + size] for k in range(0, len(nodes), size)]
    settings = (search.secrets, search.max_quilt_states, search.exhaustive, search.max_table_entries)
    best = {}
    where = f"n_jobs={n_jobs}" if client is None else "a Dask worker"
    results = _chunk_results(search.prior_class, settings, chunks, epsilon, deadline, n_jobs, client)
    try:
        for out, evaluated, evaluations, skipped, fallback in results:
            best.update(out)
            search.engine.add_evaluated(evaluated)
            search.engine.evaluations += evaluations
            search.skipped += skipped
            search.fallback.update(fallback)
            if bar is not None:
                bar.update(len(out))
            if clock is not None:
                clock.tick(len(out))
    except (PuffgmError, ArithmeticError, MemoryError):
        raise  # raised on purpose inside a worker (a time limit, an inference limit, ...)
    except Exception as exc:  # noqa: BLE001 - a worker process died: one line, never a worker traceback
        name = search.prior_class.priors[0].name
        retry = "retry with n_jobs=1" if client is None else "retry without client="
        raise WorkerError(f"A worker process failed while searching the quilts of {name!r} ({where}): "
                          f"{one_line(exc)}; {retry}.") from None
    finally:
        results.close()  # a time limit reached here: the tasks left are cancelled
    return {n: best[n] for n in nodes}


def _chunk_results(prior_class, settings, chunks, epsilon, deadline, n_jobs, client):
    """The results of :func:`_best_chunk` on every chunk (``settings``: its arguments after the prior class),
    as they complete (joblib) or in order of completion (Dask; the prior class is sent to every worker once)."""
    if client is None:
        from joblib import Parallel, delayed

        yield from Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(_best_chunk)(prior_class, *settings, chunk, epsilon, deadline) for chunk in chunks)
        return
    from distributed import as_completed

    shared = client.scatter(prior_class, broadcast=True, hash=False)
    futures = [client.submit(_best_chunk, shared, *settings, chunk, epsilon, deadline, pure=False)
               for chunk in chunks]
    try:
        for future in as_completed(futures):
            yield future.result()
    finally:
        client.cancel(futures)


def _node_optima(search: QuiltSearch, nodes, epsilon, prior_index: int, run: _Run):
    """Active quilt of every node under one prior, improved and bounded (puffgm.networks.quilt_search).

    1. The structured search gives every node's active quilt (a time limit reached
       here refuses: some node has no quilt yet).
    2. The single-node lower bound (no expansion) is computed; when it is within
       :data:`QUICK_SEARCH_GAP` of sigma_max, a quick branch and bound (at most
       :data:`QUICK_SEARCH_BUDGET` expansions per node, no dive) tries to certify the
       worst node's quilt optimal.  If the certified lower bound reaches sigma_max, no
       Markov quilt can do better and the work stops here.
    3. Otherwise, from the structured quilts again, the worst node's quilt grows one step
       at a time (:meth:`QuiltSearch.refine_steps`) while it is the worst, until the worst
       node's growth is complete (:func:`_refine_worst`), and the branch and bound runs
       with the full ``budget`` from the refined quilts; each node keeps the better of
       this quilt and the quick search's, and the lower bound is the
       larger of the two certified ones (each is a lower bound on max_i sigma_i*).  With
       ``certify_budget`` > 0 the worst nodes left uncertified then get the cutting-plane
       certificate (:mod:`puffgm.networks.quilt_certify`).

    Steps 2 and 3 only improve quilts that are valid already, so a time limit reached
    there (:class:`~puffgm.exceptions.TimeLimitError` from the engine's deadline check)
    stops them and keeps every node's best quilt so far, with the single-node bound
    (computed outside the time budget: it needs no new inference).

    A node whose search needed a table past ``max_table_entries`` keeps its trivial quilt
    (:meth:`QuiltSearch.best`, named in ``search.fallback``): steps 2 and 3 and the lower
    bound take the other nodes only (a bound on their max is one on max_i sigma_i*).

    Returns (active quilts, lower bound on max_i sigma_i*, certificates, stopped), with
    ``stopped`` True when the time limit cut steps 2-3 short.
    """
    refined, budget, certify_budget = run.refined, run.opts.search_budget, run.opts.certify_budget
    best = _node_bests(search, nodes, epsilon, run.jobs, run.bar, run.clock, run.client)
    every, nodes = nodes, [n for n in nodes if n not in search.fallback]
    if not nodes:  # every node fell back: no lower bound but the trivial 0
        return best, 0.0, {}, False
    with search.engine.without_deadline():
        quick, lower0, certs = improve_and_certify(search, best, nodes, epsilon=epsilon, budget=0)
    try:
        if not search.exhaustive and budget > 0:
            top = max(c.score for c in best.values())
            if lower0 >= QUICK_SEARCH_GAP * top:  # close already: a few expansions may certify
                quick, lower_q, certs = improve_and_certify(search, best, nodes, epsilon=epsilon,
                                                            budget=min(budget, QUICK_SEARCH_BUDGET), dive=False)
                lower0 = max(lower0, lower_q)
            if not better(lower0, max(c.score for c in quick.values())):
                return quick, lower0, certs, False  # certified optimal
        if not search.exhaustive:
            _refine_worst(search, best, every, epsilon,
                          lambda n: refined.append(NodeId(prior_index, n)), search.fallback)
        best, lower, certs = improve_and_certify(search, best, nodes, epsilon=epsilon, budget=budget,
                                                 certify_budget=certify_budget)
        stopped = False
    except TimeLimitError:
        lower, stopped = lower0, True  # best holds every node's best valid quilt so far
    # the quick search's quilts compete (both are valid; the better score wins, ties keep the full road's)
    best = {n: quick[n] if better(quick[n].score, c.score) else c for n, c in best.items()}
    return best, max(lower, lower0), certs, stopped


def _refine_worst(search: QuiltSearch, best: dict, nodes, epsilon, started, fixed=frozenset()) -> None:
    """Grow the quilt of the worst node one step at a time while it is the worst (in place).

    Every node's growth (:meth:`QuiltSearch.refine_steps`) starts from its active quilt the
    first time it is the worst (``started(node)`` is called then) and pauses as soon as
    another node is worse; it stops when the worst node's growth is complete.  The scores
    of a growth never increase, so at the end every node scores at least its complete
    growth's result r_i and at most the worst node's, which is complete: sigma_max is
    max_i r_i, the value of growing every node completely (and of growing the worst node
    completely until the worst is one grown), for a fraction of the work: a node whose
    score drops below the worst's mid-way is not grown further unless it becomes the
    worst again.  The nodes in ``fixed`` (those that fell back to the trivial quilt) are not
    grown: when one of them is the worst, the refinement ends.
    """
    growth: dict = {}
    complete: set = set(fixed)
    while True:
        node = _first_worst(nodes, lambda n: best[n].score)  # first of the maxima, in node order
        if node in complete:
            return
        if node not in growth:
            started(node)
            growth[node] = search.refine_steps(node, epsilon=epsilon, incumbent=best[node])
        try:
            step = next(growth[node], None)
        except InferenceLimitError:  # a quilt past max_table_entries: the node keeps its valid quilt
            step = None
        if step is None:
            complete.add(node)
        else:
            best[node] = step


def _progress_bar(progress, total: int, pc):
    """A tqdm bar on stderr that appears after 2 s (None: only if stderr is a terminal; :mod:`puffgm.core.progress`)."""
    from puffgm.core.progress import progress_bar

    name = pc.priors[0].name if len(pc.priors) == 1 else f"{len(pc.priors)} priors"
    return progress_bar(progress, total, f"calibrate {name}", unit="node")


@dataclass(frozen=True)
class NetworkOptions:
    r"""The options of :func:`calibrate` for Bayesian-network classes.

    Parameters
    ----------
    secrets : SecretSpec, optional
        Protected nodes and value pairs (default: every node, every pair).
    protected : iterable of str, optional
        Shorthand for ``SecretSpec(protected=...)``.
    max_quilt_states : int
        Bound on the joint state space of candidate quilts (structured family).
    exhaustive : bool or None
        Force or forbid the exhaustive quilt search (default: by network size).
    search_budget : int
        Branch-and-bound expansions per processed node on large networks
        (:mod:`puffgm.networks.quilt_search`, default 300): the worst nodes' quilts are
        improved and ``sigma_lower_bound`` is certified; 0 keeps the structured
        search alone and gives the single-node bound (:mod:`puffgm.networks.quilt_bounds`).
    max_table_entries : int, optional
        Largest table exact inference may build (default :math:`2^{25}` entries, 256 MiB).
        A candidate quilt that needs more is skipped (counted in
        ``details["skipped_quilts"]`` and noted; the result stays valid); a node whose
        search needs a single-node influence past the limit gets the trivial quilt (score
        :math:`\mathrm{card}(X_N) / \epsilon`, valid for Theorem 4.3), named in ``details["fallback_nodes"]``
        (with ``details["fallback_sigma"]``, their largest score) and in a note.
    progress : bool or None
        A tqdm progress bar on stderr, shown only once the calibration has run for
        2 seconds; None (default) shows it when stderr is a terminal, False never.
    n_jobs : int or None
        Nodes searched in parallel with joblib (processes); None (default) uses
        the available cores, at most 4, on networks with at least
        :data:`AUTO_PARALLEL_NODES` protected nodes and 1 otherwise; -1 means all cores.
        Results are identical to the sequential run.
    time_limit : float or None
        Seconds the calibration may take (default None, or 0: no limit; the library never
        cuts a call short unless asked, while ``puffgm calibrate`` passes a default budget
        of 120 s, see :data:`puffgm.cli.calibrate.DEFAULT_TIME_LIMIT`).  Once 5 seconds (or a
        tenth of the limit) have passed, the time per node searched projects the total;
        if it exceeds the limit, calibrate stops with
        :class:`~puffgm.exceptions.TimeLimitError` (one sentence with the projection and
        the options to change) instead of running on.  If the limit is reached after
        every node has been searched (during the refinement or the branch and bound of
        the worst nodes, which only improve valid quilts), the result is returned with
        the quilts found so far and the single-node lower bound, a note, and
        ``details["time_limit_reached"]`` True.
    certify_budget : int
        When > 0, a worst node whose branch and bound leaves an optimality gap gets
        the cutting-plane certificate of :mod:`puffgm.networks.quilt_certify` (exact
        influences of pairs and small sets, 0-1 programs by HiGHS) with this many
        influence queries: a higher ``sigma_lower_bound`` and possibly better
        quilts, at a cost of seconds to minutes.  0 (default) skips it.
    client : distributed.Client or str, optional
        Search the nodes on the workers of this Dask cluster (a ``Client``, or a scheduler
        address such as ``"tcp://10.0.0.5:8786"``, for which a client is opened and closed
        again; the ``cluster`` extra).  Each worker thread keeps one quilt search (its
        junction tree) across its tasks and sends back each node's active quilt and which
        influences it computed, never the influences themselves; the refinement and the
        branch and bound of the worst nodes run in this process.  The result is that of the
        local run (every quilt, score, witness, bound and count).  ``n_jobs`` is ignored.
    """

    secrets: SecretSpec | None = None
    protected: Iterable | None = None
    max_quilt_states: int = DEFAULT_MAX_QUILT_STATES
    exhaustive: bool | None = None
    search_budget: int = DEFAULT_SEARCH_BUDGET
    max_table_entries: int | None = None
    progress: bool | None = None
    n_jobs: int | None = None
    time_limit: float | None = None
    certify_budget: int = 0
    client: Any = None

    @classmethod
    def from_options(cls, options: dict, where: str = "calibrate") -> NetworkOptions:
        """The record of ``options`` (keyword arguments); a ParameterError names the options if one is unknown."""
        unknown = sorted(set(options) - set(NETWORK_OPTIONS))
        if unknown:
            raise ParameterError(f"Option(s) {', '.join(unknown)} do not apply to {where} of Bayesian-network "
                                 f"priors; the options are: {', '.join(NETWORK_OPTIONS)}.")
        return cls(**options)


#: The option names of :func:`calibrate` (the fields of :class:`NetworkOptions`).
NETWORK_OPTIONS = tuple(f.name for f in fields(NetworkOptions))


@dataclass
class _Run:
    """One calibration's validated options and bookkeeping: workers, progress bar, time budget, refined nodes."""

    opts: NetworkOptions
    jobs: int
    bar: Any  # a tqdm bar, or None
    clock: MQMClock
    refined: list[NodeId]
    client: Any = None  # a distributed.Client: the node searches run on its workers


@dataclass
class _Found:
    """What the search over every prior of the class found (see :func:`_search_priors`)."""

    lower: list
    searched: list[NodeId]
    planes: list
    evaluations: int = 0
    skipped: int = 0
    family: str | None = None
    stopped: bool = False
    fallback: list[NodeId] = field(default_factory=list)  # the nodes given the trivial quilt
    fallback_sigma: float = 0.0  # their largest score card(X_N) / epsilon
    searched_sigma: float = 0.0  # the largest score of the other nodes
    outcome: MQMOutcome | None = None  # the outer loop's active quilts, worst node and group-DP baseline


def calibrate(prior, *, epsilon, lipschitz=1.0, **options) -> CalibrationResult:
    r"""Calibrate the Markov Quilt Mechanism (Song et al., Algorithm 2) for a Bayesian-network prior class.

    Parameters
    ----------
    prior : PriorClass, NetworkPrior, pgmpy DiscreteBayesianNetwork, path, "example:NAME", or a list
        The class :math:`\Theta` (every member shares one DAG and state names).
    epsilon : float
        Pufferfish privacy parameter :math:`\epsilon`, finite and :math:`> 0`.
    lipschitz : float
        :math:`L`, the :math:`L_1` Lipschitz constant of the query (finite, :math:`> 0`).
    **options
        The fields of :class:`NetworkOptions`: ``secrets``, ``protected``,
        ``max_quilt_states``, ``exhaustive``, ``search_budget``,
        ``max_table_entries``, ``progress``, ``n_jobs``, ``time_limit``,
        ``certify_budget``, ``client``; any other name is refused.
    Returns
    -------
    CalibrationResult
        ``sigma_max`` and ``scale = lipschitz * sigma_max``, the worst node and
        every protected node's active quilt, the group-DP baseline and the gain,
        ``sigma_lower_bound`` (no Markov quilt can give less than this) and
        ``optimality_gap`` :math:`= \sigma_{\max} / \sigma_{\text{lower}} - 1`.

    Examples
    --------
    >>> res = calibrate("example:asia", epsilon=1.0)
    >>> res.scale <= res.groupdp_sigma
    True
    """
    opts = NetworkOptions.from_options(options)
    epsilon = check_positive_finite(epsilon, "epsilon", "calibrate")
    lipschitz = check_positive_finite(lipschitz, "lipschitz", "calibrate")
    opts = replace(opts, search_budget=check_search_budget(opts.search_budget, "calibrate"),
                   certify_budget=check_certify_budget(opts.certify_budget, "calibrate"))
    secrets = resolve_secrets(opts.secrets, opts.protected, "calibrate")
    pc = load_prior_class(prior)
    nodes = secrets.protected_nodes(pc)
    opts = replace(opts, time_limit=check_time_limit(opts.time_limit, "calibrate"))
    client: Any = None
    owned = False
    if opts.client is not None:
        client, owned = dask_client(opts.client, "calibrate")
    try:
        jobs = _resolve_n_jobs(opts.n_jobs, len(nodes)) if client is None else max(
            1, sum(client.nthreads().values()))
        clock = network_clock(opts.time_limit, len(pc.priors) * len(nodes),
                              pc.priors[0].name if len(pc.priors) == 1 else f"{len(pc.priors)} priors", jobs)
        bar = _progress_bar(opts.progress, len(pc.priors) * len(nodes), pc)
        run = _Run(opts, jobs, bar, clock, refined=[], client=client)
        found = _search_priors(pc, nodes, epsilon, secrets, run)
    finally:
        if owned and client is not None:
            client.close()
    return _calibration_result(pc, nodes, epsilon, lipschitz, secrets, found, run)


def _search_priors(pc, nodes, epsilon, secrets, run: _Run) -> _Found:
    """Every protected node's active quilt under every prior of the class, with the lower bounds.

    Pufferfish privacy is a condition per prior, and so is the proof of Theorem 4.3:
    for a finite class, sigma_max = max over theta of each theta's own optimum, with an
    active quilt per (node, theta).  This is never above the min over quilts of the
    sup-over-Theta score, and equal to it for a single prior.
    """
    opts = run.opts
    found = _Found(lower=[], searched=[], planes=[])

    def search_prior(t: int, theta) -> dict:
        search = QuiltSearch(PriorClass([theta]), secrets, opts.max_quilt_states, opts.exhaustive,
                             opts.max_table_entries)
        if opts.time_limit is not None:
            search.engine.deadline_check = run.clock.check_nodes
        found.family = search.family
        # structured search, then branch-and-bound improvement of the worst nodes with a certified
        # lower bound (puffgm.networks.quilt_search), refinement of the worst nodes left uncertified and,
        # with certify_budget, the cutting-plane certificate (puffgm.networks.quilt_certify)
        mine, lower_t, certs, cut = _node_optima(search, nodes, epsilon, t, run)
        found.stopped = found.stopped or cut
        found.lower.append(lower_t)
        found.searched.extend(NodeId(t, v) for v in certs)
        found.planes.extend(c.cutting_planes.to_dict() | ({"prior": t} if t else {})
                            for c in certs.values() if c.cutting_planes is not None)
        found.evaluations += search.engine.evaluations
        found.skipped += search.skipped
        _record_fallback(found, mine, [v for v in nodes if v in search.fallback], t)
        return mine

    found.outcome = run_mqm(pc.priors, nodes, search_prior, epsilon=epsilon,
                            largest_group=pc.largest_component(), bar=run.bar)
    return found


def _record_fallback(found: _Found, mine: dict, fallback: list, prior_index: int) -> None:
    """Add one prior's fallback nodes (given the trivial quilt) and the two largest scores to ``found``."""
    found.fallback.extend(NodeId(prior_index, v) for v in fallback)
    for v, c in mine.items():
        if v in fallback:
            found.fallback_sigma = max(found.fallback_sigma, c.score)
        else:
            found.searched_sigma = max(found.searched_sigma, c.score)


def _fallback_note(found: _Found, limit: int, sigma_max: float) -> str:
    """The note naming the nodes that fell back to the trivial quilt and the sigma it implies."""
    names = [str(v) for v in found.fallback]
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    effect = ("sets sigma_max" if found.fallback_sigma >= sigma_max
              else f"is below sigma_max = {sigma_max:.6g}")
    return (f"{len(names)} node(s) fell back to the trivial quilt (X_Q empty, valid for Theorem 4.3) because exact "
            f"inference of one of their single-node influences would exceed max_table_entries={limit}: {shown}; "
            f"their largest score card(X_N)/epsilon = {found.fallback_sigma:.6g} {effect} (the other nodes' "
            f"largest score is {found.searched_sigma:.6g}); raise max_table_entries (--max-table-entries, 8 bytes "
            "per entry) to search their quilts")


def _calibration_notes(pc, found: _Found, opts: NetworkOptions, outcome: MQMOutcome) -> list:
    """The notes of a network calibration: renormalised CPDs, skipped quilts, time limit, no gain."""
    notes = list(pc.notes)
    sigma_max, group = outcome.sigma_max, outcome.groupdp_sigma
    limit = opts.max_table_entries or DEFAULT_MAX_TABLE_ENTRIES
    if found.fallback:
        notes.append(_fallback_note(found, limit, sigma_max))
    if found.skipped:
        notes.append(f"{found.skipped} candidate quilt(s) skipped: exact inference on them would exceed "
                     f"max_table_entries={limit}; the calibration is valid over the remaining candidates")
    if found.stopped:
        lower = max(found.lower)
        gap = f"{sigma_max / lower - 1:.1%}" if lower > 0 else "unknown"
        notes.append(f"time_limit={opts.time_limit:g} s reached after every node search: the refinement and "
                     "branch and bound of the worst nodes stopped early; every quilt is valid, and the lower bound "
                     f"is the single-node bound (certified gap reached: {gap}; raise time_limit, --time-limit "
                     "SECONDS or 0 for no limit, for a smaller sigma_max or gap)")
    if outcome.no_gain:
        notes.append("the quilt search found no gain over group DP for the worst node")
        if max(found.lower) >= group * (1 - 1e-9):
            notes.append("certified: no choice of Markov quilts beats group DP here (lower bound = group DP)")
    return notes


#: The options that decide which quilts a calibration searches (its secrets are in ``details["secrets"]``).
_QUILT_SET_OPTIONS = ("max_quilt_states", "exhaustive", "search_budget", "max_table_entries", "time_limit",
                      "certify_budget")


def _quilt_set(family, epsilon, search_budget: int, certify_budget: int) -> str:
    """The key of the quilt sets a calibration used (the structured family adapts to epsilon)."""
    if family == "exhaustive":
        return "exhaustive"
    if not search_budget and not certify_budget:
        return f"structured+refined@epsilon={epsilon!r}"
    if not certify_budget:
        return f"structured+refined+bnb{search_budget}@epsilon={epsilon!r}"
    return f"structured+refined+bnb{search_budget}+cp{certify_budget}@epsilon={epsilon!r}"


def _calibration_result(pc, nodes, epsilon, lipschitz, secrets, found: _Found, run: _Run) -> CalibrationResult:
    """The :class:`CalibrationResult` of a network calibration from what the search found."""
    outcome = found.outcome
    assert outcome is not None
    opts = run.opts
    notes = _calibration_notes(pc, found, opts, outcome)
    fallback = ({"fallback_nodes": tuple(v.detail() for v in found.fallback), "fallback_sigma": found.fallback_sigma}
                if found.fallback else {})
    return outcome.result(
        epsilon=epsilon,
        lipschitz=lipschitz,
        method="exact",
        n_nodes=len(pc.nodes),
        sigma_lower_bound=max(found.lower),  # max over theta of each theta's bound, like sigma_max
        fingerprint=pc.fingerprint,
        theorem=THEOREM,
        notes=tuple(notes),
        details={
            "quilt_family": found.family,
            "n_priors": len(pc.priors),
            "per_prior_sigma": outcome.per_prior,
            "protected": len(nodes),
            "influence_evaluations": found.evaluations,
            "secrets": secrets.canonical(pc),  # identifies S for composition (quilt_set_key)
            "secrets_description": repr(secrets),
            "refined_nodes": tuple(v.detail() for v in run.refined),
            "per_prior_lower_bound": tuple(found.lower),
            "search_budget": opts.search_budget,
            "branch_and_bound_nodes": tuple(v.detail() for v in found.searched),
            "certify_budget": opts.certify_budget,
            "cutting_plane_nodes": tuple(found.planes),
            "skipped_quilts": found.skipped,
            "time_limit_reached": found.stopped,
            "quilt_set": _quilt_set(found.family, epsilon, opts.search_budget, opts.certify_budget),
            **fallback,  # present only when some node fell back to the trivial quilt
        },
        options={name: getattr(opts, name) for name in _QUILT_SET_OPTIONS},
        graph=QuiltGraph("dag", nodes=tuple(pc.nodes), edges=tuple(pc.dag.edges)),  # for result.plot()
    )
