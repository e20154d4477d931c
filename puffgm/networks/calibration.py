"""Calibration of the Markov Quilt Mechanism for Bayesian-network priors.

Song, Wang and Chaudhuri, Algorithm 2: for each protected node X_i and each
candidate quilt (X_Q, X_N, X_R) with e = e_Theta(X_Q | X_i) < epsilon,

    sigma(X_Q) = card(X_N) / (epsilon - e),        sigma_i = min_Q sigma(X_Q),
    sigma_max  = max_i sigma_i,

and an L-Lipschitz query (in L1) is released with Laplace noise of scale
L * sigma_max on each coordinate (Theorem 4.3; the vector case follows from
Proposition 1 of Dwork et al.).  The minimising quilt of each node is its
*active* quilt (Definition 4.5); K releases with the same quilt sets at
epsilon compose to K * epsilon (Theorem 4.4), which
:class:`puffgm.accounting.PrivacyAccountant` tracks.

Group differential privacy, the baseline, treats every connected component
of the DAG as one group: noise L * (size of the largest component) / epsilon.

For a finite class Theta, puffgm takes sigma_max = max over theta of each
theta's own optimum, each node with an active quilt per theta.  Pufferfish
privacy is a condition for each theta separately, and the proofs of Theorems
4.3 and 4.4 (appendix C.1) fix theta first and use only theta's conditionals,
so this is valid; it is never above min over quilts of the score with the
sup-over-Theta influence of Definition 4.1, and equal to it for one prior.

The quilt search is described in :mod:`puffgm.networks.quilts`: exhaustive on small
networks (so sigma_max is optimal over all quilts), a structured family
bounded by ``max_quilt_states`` on larger ones.  Within a node the candidates
are scanned by increasing card(X_N) and the scan stops once card(X_N) /
epsilon cannot beat the best score (a score is never below card(X_N) /
epsilon), so the pruning never changes the result.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from itertools import combinations
from typing import Iterable

from puffgm.core.validation import check_positive_finite, check_positive_int
from puffgm.exceptions import InferenceLimitError, ParameterError, TimeLimitError
from puffgm.networks.inference import DEFAULT_MAX_TABLE_ENTRIES
from puffgm.networks.influence import InfluenceEngine
from puffgm.networks.priors import PriorClass, load_prior_class
from puffgm.networks.quilts import (
    DEFAULT_MAX_QUILT_STATES,
    DSeparationIndex,
    MarkovQuilt,
    distance_layers,
    exhaustive_quilts,
    moral_graph,
    use_exhaustive,
)
from puffgm.core.results import CalibrationResult, QuiltChoice
from puffgm.networks.secrets import SecretSpec
from puffgm.networks.quilt_certify import check_certify_budget
from puffgm.networks.quilt_search import DEFAULT_SEARCH_BUDGET, check_search_budget, improve_and_certify

__all__ = ["calibrate", "evaluate_quilts", "candidate_quilts", "QuiltSearch"]

THEOREM = "Song, Wang and Chaudhuri 2017, Theorem 4.3 (Markov Quilt Mechanism, Algorithm 2)"


#: Absolute slack on computed log-influences when a lower bound is used to skip a
#: quilt (rounding of exact inference is ~1e-14): a quilt is skipped only if its
#: score with influence ``bound - _BOUND_SLACK`` still cannot win.
_BOUND_SLACK = 1e-9


#: Values closer than this (relative for scores, absolute for log-influences) are ties in
#: the structured search; they differ only by floating-point rounding.
_TIE = 1e-9

#: Quilts whose joint table with the node has at least this many entries are first
#: probed with their two and three strongest nodes (a cheap lower bound on e).  Below it a
#: probe costs about as much as the query it may save (measured: alarm's node searches are
#: 18 % faster at 2**14 than at 512, hailfinder's are unchanged; no probes at all makes
#: hailfinder's 25 % slower).
_PROBE_MIN_ENTRIES = 1 << 14
#: After the two and three strongest nodes, one more probe: the most strongest nodes whose
#: joint table is at most 1/_PROBE_RATIO of the quilt's (measured, node searches against the
#: two and three strongest only: hailfinder 22 % faster, alarm 7 %, win95pts and hepar2
#: unchanged within noise).
_PROBE_RATIO = 16


def _score_floor(n_nearby: int, bound: float, epsilon: float) -> float:
    """A lower bound on the computed score of a quilt whose influence is at least ``bound``."""
    lo = bound - _BOUND_SLACK
    return n_nearby / (epsilon - lo) if lo < epsilon else math.inf


def _first_worst(nodes, score):
    """The first node, in node order, whose score is within 1e-9 (relative) of the largest.

    Nodes whose scores are equal in exact arithmetic (a deterministic copy of a node has
    its quilts and influences) differ only by rounding; the tolerance makes the choice
    independent of the order of floating-point operations.
    """
    top = max(score(n) for n in nodes)
    if not math.isfinite(top):
        return next(n for n in nodes if score(n) == top)
    return next(n for n in nodes if score(n) >= top - 1e-9 * abs(top))


def resolve_secrets(secrets, protected, where: str) -> SecretSpec:
    """The :class:`SecretSpec` of a call given ``secrets`` or its shorthand ``protected`` (not both)."""
    if secrets is not None and protected is not None:
        raise ParameterError(f"Give either 'secrets' or 'protected' to {where}, not both.")
    if protected is not None:
        return SecretSpec(protected=protected)
    return secrets or SecretSpec()


def _better(score: float, incumbent: float) -> bool:
    """Strictly better beyond rounding: ties (equal up to 1e-12 relative) keep the
    incumbent, which was met first in the scan by (card(X_N), card(X_Q)), so the
    active quilt carries no superfluous nodes."""
    return score < incumbent * (1 - 1e-12)


class QuiltSearch:
    """Candidate quilts of every node of one prior class, sharing one influence engine.

    Parameters
    ----------
    prior_class : PriorClass
    secrets : SecretSpec, optional
    max_quilt_states : int
        Bound on the joint state space of a candidate quilt (structured family only).
    exhaustive : bool or None
        Force (True) or forbid (False) the exhaustive search; None decides by size
        (:func:`puffgm.networks.quilts.use_exhaustive`).
    max_table_entries : int, optional
        Largest table exact inference may build (default
        :data:`puffgm.networks.inference.DEFAULT_MAX_TABLE_ENTRIES`).  While searching for an
        active quilt, a candidate whose inference would need more is skipped
        (counted in :attr:`skipped`); the trivial quilt needs none.
    """

    def __init__(self, prior_class, secrets=None, max_quilt_states=DEFAULT_MAX_QUILT_STATES, exhaustive=None,
                 max_table_entries=None):
        self.prior_class = prior_class
        self.secrets = secrets or SecretSpec()
        self.max_quilt_states = check_positive_int(max_quilt_states, "max_quilt_states", "calibrate")
        self.exhaustive = use_exhaustive(prior_class) if exhaustive is None else bool(exhaustive)
        if max_table_entries is not None:
            max_table_entries = check_positive_int(max_table_entries, "max_table_entries", "calibrate")
        self.max_table_entries = max_table_entries
        self.engine = InfluenceEngine(prior_class, self.secrets, max_table_entries)
        self.skipped = 0  # candidates skipped by best/refine because inference exceeded max_table_entries
        self.dag = prior_class.dag
        self._moral = None
        self._dsep = DSeparationIndex(self.dag)
        self._order = {n: k for k, n in enumerate(prior_class.nodes)}
        self._quilts = {}  # (node, frozenset quilt) -> MarkovQuilt

    def _make(self, node, quilt) -> MarkovQuilt:
        """make_quilt(dag, node, quilt), on the compiled DAG and memoised."""
        key = (node, quilt if isinstance(quilt, frozenset) else frozenset(quilt))
        mq = self._quilts.get(key)
        if mq is None:
            mq = self._dsep.make_quilt(node, key[1])
            self._quilts[key] = mq
        return mq

    def _single(self, node, j) -> float:
        """e({X_j} | X_i): max-influence is monotone in the quilt (a marginal of a
        conditional law is no more distinguishable), so e(Q) >= max_j in Q of this."""
        return self.engine.max_influence(node, (j,)).value

    def influence_floor(self, node, quilt) -> float:
        """A lower bound on e(quilt | node): the largest single-node influence in the quilt."""
        return max((self._single(node, j) for j in quilt), default=0.0)

    @property
    def family(self) -> str:
        return "exhaustive" if self.exhaustive else f"structured (max_quilt_states={self.max_quilt_states})"

    def candidates(self, node) -> list:
        """Candidate quilts of ``node``, trivial quilt first, deduplicated."""
        if self.exhaustive:
            if node not in self._dsep.index:
                return list(exhaustive_quilts(self.dag, node))  # raises the QuiltError
            others = [v for v in self.dag.nodes if v != node]
            return [self._make(node, q) for r in range(len(others) + 1) for q in combinations(others, r)]
        return self._structured(node)

    # -------------------------------------------------------------- structured
    def _fits(self, quilt) -> bool:
        return self.engine.quilt_states(quilt) <= self.max_quilt_states

    def _structured(self, node) -> list:
        if self._moral is None:
            self._moral = moral_graph(self.dag)
            self._moral_bits = {v: self._dsep.bits(self._moral.neighbors(v)) for v in self._moral}
        moral = self._moral
        seen = {}

        def add(q):
            q = frozenset(q)
            if q in seen or (q and not self._fits(q)):
                return
            seen[q] = self._make(node, q)

        add(())
        for layer in distance_layers(moral, node):
            add(layer)
        # region growing: absorb the boundary node with the largest single-node influence
        single = {}

        def strength(j):
            if j not in single:
                single[j] = self.engine.max_influence(node, (j,)).value
            return single[j]

        dsep, mbits = self._dsep, self._moral_bits
        region = dsep.bits([node])
        near = mbits[node]  # moral neighbours of the region (region included after growth)
        while True:
            bb = near & ~region
            if not bb:
                break
            boundary = dsep.names(bb)
            add(boundary)
            minimal = self._minimal(node, boundary)
            if minimal != boundary:
                add(minimal)
            # the strongest boundary node; strengths within 1e-9 are ties (they differ by
            # rounding only), broken by name, so the family does not depend on rounding
            ranked = sorted(boundary)
            top = max(strength(j) for j in ranked)
            nxt = next(j for j in ranked if strength(j) >= top - _TIE)
            region |= 1 << dsep.index[nxt]
            near |= mbits[nxt]
        return list(seen.values())

    def _minimal(self, node, quilt) -> frozenset:
        """Drop quilt nodes d-separated from ``node`` by the rest, keeping the remote set."""
        dsep = self._dsep
        q = dsep.bits(quilt)
        reach, touched = dsep.reach_and_touched(node, q)
        first_touched, fresh = touched, True
        target = dsep.all_bits & ~reach & ~q
        for v in sorted(quilt, key=self._order.__getitem__, reverse=True):
            k = dsep.index[v]
            vb = 1 << k
            trial = q & ~vb
            if not first_touched & vb:
                # the ball never reaches v: v is d-separated by the rest (touched sets only
                # shrink as d-separated nodes leave the quilt), and dropping a d-separated
                # node only closes trails (the remote set cannot shrink)
                q, fresh = trial, False
                continue
            if dsep.desc[k] & trial:
                # v is an ancestor of another quilt node, so An(quilt) does not change without v:
                # the ball given the rest reaches v iff the ball given the quilt touches v
                if not fresh:
                    touched, fresh = dsep.reach_and_touched(node, q)[1], True
                if touched & vb:
                    continue  # v is d-connected given the rest: it stays
                q, fresh = trial, False
                continue
            # v is screened off and nothing moves nearby: the ball given the rest reaches
            # neither v nor any node of the remote set (stopped at the first it reaches)
            if not dsep.reaches_any(node, trial, target | vb):
                q, fresh = trial, False
        return dsep.names(q)

    # ----------------------------------------------------------------- scoring
    def choice(self, quilt: MarkovQuilt, epsilon=None) -> QuiltChoice:
        infl = self.engine.max_influence(quilt.node, quilt.quilt)
        order = self._order.__getitem__
        if epsilon is None:
            score = math.nan
        elif infl.value < epsilon:
            score = len(quilt.nearby) / (epsilon - infl.value)
        else:
            score = math.inf
        return QuiltChoice(
            node=quilt.node,
            quilt=tuple(sorted(quilt.quilt, key=order)),
            nearby=tuple(sorted(quilt.nearby, key=order)),
            remote=tuple(sorted(quilt.remote, key=order)),
            max_influence=infl.value,
            score=score,
            witness=infl.witness,
        )

    def _try_choice(self, quilt: MarkovQuilt, epsilon):
        """:meth:`choice`, or None (counted in :attr:`skipped`) when exact inference on the
        quilt would exceed ``max_table_entries``: leaving a candidate out keeps every
        remaining candidate valid, so the calibration stays valid (never below the optimum
        over the remaining candidates)."""
        try:
            return self.choice(quilt, epsilon)
        except InferenceLimitError:
            if not quilt.quilt or len(quilt.quilt) == 1:
                raise  # single-node influences drive the search itself: refuse
            self.skipped += 1
            return None

    def refine(self, node, epsilon, incumbent: QuiltChoice) -> QuiltChoice:
        """Greedy quilt growth from the outside in, for the nodes that set sigma_max.

        Starting from the trivial quilt, repeatedly move into X_Q the nearby node
        whose addition gives the smallest score (ties: smaller influence), while
        some addition keeps the influence below epsilon and the quilt within
        ``max_quilt_states``; the best quilt met on the way competes with the
        incumbent.
        """
        best = incumbent
        quilt = frozenset()
        current = self._make(node, quilt)
        order = self._order.__getitem__
        e_quilt = 0.0  # e(quilt | node): a lower bound for every extension (monotonicity)
        while True:
            # each addition's score has a floor from max(e(quilt), e({j})); options are
            # scored in order of that floor, and once a floor exceeds the smallest score
            # found no later option can be the minimum, so the choice is unchanged
            cands = []
            for j in sorted(current.nearby - {node}, key=order):
                q = quilt | {j}
                if not self._fits(q):
                    continue
                mq = self._make(node, q)
                floor = _score_floor(len(mq.nearby), max(e_quilt, self._single(node, j)), epsilon)
                cands.append((floor, order(j), j, mq))
            cands.sort(key=lambda c: c[:2])
            options = []
            for floor, _, j, mq in cands:
                if floor == math.inf or (options and floor > min(o[0] for o in options) * (1 + 1e-9)):
                    break
                ch = self._try_choice(mq, epsilon)
                if ch is None:
                    continue
                if math.isfinite(ch.score):
                    options.append((ch.score, ch.max_influence, order(j), j, ch))
            if not options:
                return best
            # smallest score, then smaller influence, then node order; values within 1e-9
            # (relative for scores, absolute for influences) are ties
            low = min(o[0] for o in options)
            near = [o for o in options if o[0] <= low * (1 + _TIE)]
            low_e = min(o[1] for o in near)
            score, e_quilt, _, j, ch = min((o for o in near if o[1] <= low_e + _TIE), key=lambda o: o[2])
            if _better(score, best.score):
                best = ch
            quilt = quilt | {j}
            current = self._make(node, quilt)

    def best(self, node, epsilon) -> QuiltChoice:
        """The active quilt of ``node``: the candidate of smallest score.

        The result is that of a scan by increasing (card(X_N), card(X_Q)) that keeps the
        incumbent unless a candidate is strictly better (:func:`_better`).  To score few
        quilts, a candidate is skipped when a floor on its score is at least
        (1 + 1e-9) times the smallest score found so far (the trivial quilt's, to start):
        max-influence is monotone in the quilt (a marginal of a conditional law is no
        more distinguishable), so e(Q) is at least the largest single-node influence in
        Q, at least e(Q') of every evaluated candidate Q' inside Q, and, for large
        quilts, at least e of the m strongest nodes of Q for m = 2, 3 and the largest m
        whose table is small beside the quilt's (:data:`_PROBE_RATIO`) (cheap probes);
        and a score is at least card(X_N) / epsilon.  Every skipped candidate scores
        above (1 + 1e-9) * minimum, while only candidates within 1e-12 of the minimum
        can be chosen by the scan, so the scan over the evaluated candidates, in the
        original order, picks exactly the quilt the full scan picks.
        """
        cands = sorted(self.candidates(node), key=lambda c: (len(c.nearby), len(c.quilt)))
        known = {k: self.choice(c, epsilon) for k, c in enumerate(cands) if not c.quilt}  # no inference
        top = min((ch.score for ch in known.values()), default=math.inf)
        evaluated = []  # (quilt, influence) of the evaluated candidates
        k_node = len(self.prior_class.states[node])
        best = None  # the scan's incumbent, over the candidates evaluated so far
        for k, c in enumerate(cands):
            # skip when the floor reaches the incumbent (c cannot be strictly better) or
            # (1 + 1e-9) * the smallest score found (c cannot be the minimum)
            limit = min(top * (1 + 1e-9), best.score if best is not None else math.inf)
            if len(c.nearby) / epsilon >= limit:
                break  # every later candidate has at least as many nearby nodes
            if c.quilt:
                e = max((v for q, v in evaluated if q <= c.quilt), default=0.0)
                e = max(e, self.influence_floor(node, c.quilt))
                if _score_floor(len(c.nearby), e, epsilon) >= limit:
                    continue
                if len(c.quilt) > 2 and self.engine.quilt_states(c.quilt) * k_node >= _PROBE_MIN_ENTRIES:
                    strongest = sorted(c.quilt, key=lambda j: (-self._single(node, j), self._order[j]))
                    # probes: the 2 and 3 strongest, then the most strongest nodes whose table is
                    # at most 1/_PROBE_RATIO of the quilt's (the highest floor at that cost)
                    full = self.engine.quilt_states(c.quilt)
                    m_max = 3
                    while (m_max + 1 < len(c.quilt)
                           and self.engine.quilt_states(strongest[:m_max + 1]) * _PROBE_RATIO <= full):
                        m_max += 1
                    for m in (2, 3, m_max) if m_max > 3 else (2, 3):
                        if m >= len(c.quilt) or _score_floor(len(c.nearby), e, epsilon) >= limit:
                            break
                        try:
                            e = max(e, self.engine.max_influence(node, strongest[:m]).value)
                        except InferenceLimitError:
                            break
                    if _score_floor(len(c.nearby), e, epsilon) >= limit:
                        continue
                ch = self._try_choice(c, epsilon)
                if ch is None:
                    continue
                known[k] = ch
                evaluated.append((c.quilt, ch.max_influence))
                top = min(top, ch.score)
            ch = known[k]
            if best is None or _better(ch.score, best.score):
                best = ch
        best = None
        for k, c in enumerate(cands):  # the scan, over the candidates that can matter
            if best is not None and len(c.nearby) / epsilon >= best.score:
                break
            ch = known.get(k)
            if ch is not None and (best is None or _better(ch.score, best.score)):
                best = ch
        return best


def candidate_quilts(prior, node, *, secrets=None, max_quilt_states=DEFAULT_MAX_QUILT_STATES, exhaustive=None):
    """The candidate Markov quilts of ``node`` (see :mod:`puffgm.networks.quilts`)."""
    pc = load_prior_class(prior)
    if node not in pc.states:
        raise ParameterError(f"{node!r} is not a node of the prior.")
    return QuiltSearch(pc, secrets, max_quilt_states, exhaustive).candidates(node)


def evaluate_quilts(prior, node, *, epsilon=None, secrets=None, max_quilt_states=DEFAULT_MAX_QUILT_STATES,
                    exhaustive=None, search: QuiltSearch | None = None) -> list:
    """Every candidate quilt of ``node`` with its max-influence (and score when epsilon is given).

    Returns
    -------
    list of QuiltChoice
        ``score`` is ``nan`` when ``epsilon`` is None.
    """
    if epsilon is not None:
        epsilon = check_positive_finite(epsilon, "epsilon", "evaluate_quilts")
    if search is None:
        pc = load_prior_class(prior)
        search = QuiltSearch(pc, secrets, max_quilt_states, exhaustive)
    if node not in search.prior_class.states:
        raise ParameterError(f"{node!r} is not a node of the prior.")
    return [search.choice(c, epsilon) for c in search.candidates(node)]


#: Expansions per node of the quick branch and bound (no dive) that runs before any
#: refinement, when the single-node bound is within QUICK_SEARCH_GAP of sigma_max
#: (alarm needs 18 expansions, win95pts 20; hailfinder's bound is 2x away and skips it).
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


def _best_chunk(prior_class, secrets, max_quilt_states, exhaustive, max_table_entries, nodes, epsilon,
                deadline=None):
    """Worker of the parallel road: active quilts of ``nodes`` and the influence cache behind them."""
    secrets = SecretSpec(protected=secrets[0], pairs=secrets[1])  # sent as plain data
    search = QuiltSearch(prior_class, secrets, max_quilt_states, exhaustive, max_table_entries)
    if deadline is not None:
        def check():
            if time.time() > deadline:
                raise TimeLimitError(
                    f"Calibrating network {prior_class.priors[0].name!r} reached its time_limit before "
                    f"the node search finished; protect fewer nodes, lower max_quilt_states or raise "
                    "time_limit (--time-limit).")

        search.engine.deadline_check = check
    out = {n: search.best(n, epsilon) for n in nodes}
    return out, search.engine._cache, search.engine.evaluations, search.skipped


class _Clock:
    """The time budget of one calibration: refuses as soon as the projected total exceeds it."""

    def __init__(self, time_limit, total_nodes: int, name: str):
        self.limit = time_limit
        self.total = total_nodes
        self.name = name
        self.start = time.perf_counter()
        self.done = 0

    def check(self):
        """Called by the influence engine: stop at the limit even inside one node's search."""
        if self.limit is not None and time.perf_counter() - self.start > self.limit:
            self.tick(0)

    def tick(self, n_done: int = 1):
        self.done += n_done
        if self.limit is None:
            return
        elapsed = time.perf_counter() - self.start
        projected = elapsed / self.done * self.total if self.done else math.inf
        if self.done >= self.total and elapsed > self.limit:  # the refinement of the worst nodes
            raise TimeLimitError(
                f"Calibrating network {self.name!r} did not finish within time_limit={self.limit:g} s "
                f"(all {self.total} node searches done, the refinement of the worst nodes still running "
                f"after {elapsed:.0f} s); protect fewer nodes, lower max_quilt_states or raise time_limit "
                "(--time-limit).")
        if elapsed > self.limit or (elapsed > min(5.0, self.limit / 10) and projected > self.limit):
            raise TimeLimitError(
                f"Calibrating network {self.name!r} would take "
                f"{'about ' + format(projected, '.0f') if math.isfinite(projected) else 'more than ' + format(elapsed, '.0f')} s "
                f"({self.done} of {self.total} node searches done in {elapsed:.0f} s), more than "
                f"time_limit={self.limit:g} s; protect fewer nodes, lower max_quilt_states or raise "
                "time_limit (--time-limit).")


def _node_bests(search: QuiltSearch, nodes, epsilon, n_jobs: int = 1, bar=None, clock=None) -> dict:
    """search.best of every node, sequentially or split over joblib workers (identical results:
    each node's search depends on that node only; the workers' influence caches are merged
    back, so the refinement and the evaluation count are those of the sequential run)."""
    if n_jobs <= 1 or len(nodes) < 2 * n_jobs:
        best = {}
        for n in nodes:
            best[n] = search.best(n, epsilon)
            if bar is not None:
                bar.update(1)
            if clock is not None:
                clock.tick()
        return best
    from joblib import Parallel, delayed

    size = max(1, -(-len(nodes) // (4 * n_jobs)))  # about 4 chunks per worker, in node order
    deadline = None
    if clock is not None and clock.limit is not None:
        size = 1  # one node per task, so the time budget is checked often
        deadline = time.time() + clock.limit - (time.perf_counter() - clock.start)
    chunks = [nodes[k:k + size] for k in range(0, len(nodes), size)]
    spec = (search.secrets._protected, dict(search.secrets._pairs))
    args = (search.prior_class, spec, search.max_quilt_states, search.exhaustive, search.max_table_entries)
    best = {}
    for out, cache, evaluations, skipped in Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(_best_chunk)(*args, chunk, epsilon, deadline) for chunk in chunks):
        best.update(out)
        for key, value in cache.items():
            search.engine._cache.setdefault(key, value)
        search.engine.evaluations += evaluations
        search.skipped += skipped
        if bar is not None:
            bar.update(len(out))
        if clock is not None:
            clock.tick(len(out))
    return {n: best[n] for n in nodes}


def _node_optima(search: QuiltSearch, nodes, epsilon, refined: list, prior_index: int, n_jobs: int = 1,
                 bar=None, clock=None, budget: int = DEFAULT_SEARCH_BUDGET, certify_budget: int = 0):
    """Active quilt of every node under one prior, improved and bounded (puffgm.networks.quilt_search).

    1. The structured search gives every node's active quilt (a time limit reached
       here refuses: some node has no quilt yet).
    2. The single-node lower bound (no expansion) is computed; when it is within
       :data:`QUICK_SEARCH_GAP` of sigma_max, a quick branch and bound (at most
       :data:`QUICK_SEARCH_BUDGET` expansions per node, no dive) tries to certify the
       worst node's quilt optimal.  If the certified lower bound reaches sigma_max, no
       Markov quilt can do better and the work stops here.
    3. Otherwise, from the structured quilts again, the worst node is refined
       (:meth:`QuiltSearch.refine`) until the worst node is one already refined, and the
       branch and bound runs with the full ``budget`` from the refined quilts; each node
       keeps the better of this quilt and the quick search's, and the lower bound is the
       larger of the two certified ones (each is a lower bound on max_i sigma_i*).  With
       ``certify_budget`` > 0 the worst nodes left uncertified then get the cutting-plane
       certificate (:mod:`puffgm.networks.quilt_certify`).

    Steps 2 and 3 only improve quilts that are valid already, so a time limit reached
    there (:class:`~puffgm.exceptions.TimeLimitError` from the engine's deadline check)
    stops them and keeps every node's best quilt so far, with the single-node bound
    (computed outside the time budget: it needs no new inference).

    Returns (active quilts, lower bound on max_i sigma_i*, certificates, stopped), with
    ``stopped`` True when the time limit cut steps 2-3 short.
    """
    best = _node_bests(search, nodes, epsilon, n_jobs, bar, clock)
    engine = search.engine
    check, engine.deadline_check = engine.deadline_check, None
    try:
        quick, lower0, certs = improve_and_certify(search, best, nodes, epsilon, 0, prior_index=prior_index)
    finally:
        engine.deadline_check = check
    try:
        if not search.exhaustive and budget > 0:
            top = max(c.score for c in best.values())
            if lower0 >= QUICK_SEARCH_GAP * top:  # close already: a few expansions may certify
                quick, lower_q, certs = improve_and_certify(search, best, nodes, epsilon,
                                                            min(budget, QUICK_SEARCH_BUDGET),
                                                            prior_index=prior_index, dive=False)
                lower0 = max(lower0, lower_q)
            if not _better(lower0, max(c.score for c in quick.values())):
                return _with_prior(quick, prior_index), lower0, certs, False  # certified optimal
        if not search.exhaustive:
            # sigma_max is set by the worst node: refine the worst until the worst is refined
            done = set()
            while True:
                node = _first_worst(nodes, lambda n: best[n].score)  # first of the maxima, in node order
                if node in done:
                    break
                done.add(node)
                refined.append((prior_index, node) if prior_index else node)
                best[node] = search.refine(node, epsilon, best[node])
        best, lower, certs = improve_and_certify(search, best, nodes, epsilon, budget, prior_index=prior_index,
                                                 certify_budget=certify_budget)
        stopped = False
    except TimeLimitError:
        lower, stopped = lower0, True  # best holds every node's best valid quilt so far
    # the quick search's quilts compete (both are valid; the better score wins, ties keep the full road's)
    best = {n: quick[n] if _better(quick[n].score, c.score) else c for n, c in best.items()}
    return _with_prior(best, prior_index), max(lower, lower0), certs, stopped


def _with_prior(best: dict, prior_index: int) -> dict:
    """The active quilts with their witnesses naming the prior's index in its class."""
    out = {}
    for n, c in best.items():
        w = c.witness
        if w is not None and prior_index:
            c = replace(c, witness=(prior_index,) + tuple(w[1:]))
        out[n] = c
    return out


def _progress_bar(progress, total: int, pc):
    """A tqdm bar on stderr that appears after 2 s (None: only if stderr is a terminal)."""
    import sys

    if progress is None:
        progress = bool(getattr(sys.stderr, "isatty", lambda: False)())
    if not progress:
        return None
    from tqdm.auto import tqdm

    name = pc.priors[0].name if len(pc.priors) == 1 else f"{len(pc.priors)} priors"
    return tqdm(total=total, desc=f"calibrate {name}", unit="node", delay=2.0, file=sys.stderr, leave=False)


def calibrate(prior, epsilon, lipschitz=1.0, *, secrets: SecretSpec | None = None,
              protected: Iterable | None = None, max_quilt_states=DEFAULT_MAX_QUILT_STATES,
              exhaustive=None, search_budget=DEFAULT_SEARCH_BUDGET, max_table_entries=None,
              progress=None, n_jobs=None, time_limit=None, certify_budget=0) -> CalibrationResult:
    """Calibrate the Markov Quilt Mechanism (Song et al., Algorithm 2) for a Bayesian-network prior class.

    Parameters
    ----------
    prior : PriorClass, NetworkPrior, pgmpy DiscreteBayesianNetwork, path, "example:NAME", or a list
        The class Theta (every member shares one DAG and state names).
    epsilon : float
        Pufferfish privacy parameter, finite and > 0.
    lipschitz : float
        L, the L1 Lipschitz constant of the query (finite, > 0).
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
        Largest table exact inference may build (default 2**25 entries, 256 MiB).
        A candidate quilt that needs more is skipped (counted in
        ``details["skipped_quilts"]`` and noted; the result stays valid); if even a
        single-node influence needs more, calibrate raises
        :class:`~puffgm.exceptions.InferenceLimitError` naming this limit.
    progress : bool or None
        A tqdm progress bar on stderr, shown only once the calibration has run for
        2 seconds; None (default) shows it when stderr is a terminal, False never.
    n_jobs : int or None
        Nodes searched in parallel with joblib (processes); None (default) uses
        the available cores, at most 4, on networks with at least
        :data:`AUTO_PARALLEL_NODES` protected nodes and 1 otherwise; -1 means all cores.
        Results are identical to the sequential run.
    time_limit : float or None
        Seconds the calibration may take (default: no limit).  Once 5 seconds (or a
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

    Returns
    -------
    CalibrationResult
        ``sigma_max`` and ``scale = lipschitz * sigma_max``, the worst node and
        every protected node's active quilt, the group-DP baseline and the gain,
        ``sigma_lower_bound`` (no Markov quilt can give less than this) and
        ``optimality_gap`` = sigma_max / sigma_lower_bound - 1.

    Examples
    --------
    >>> res = calibrate("example:asia", epsilon=1.0)
    >>> res.scale <= res.groupdp_sigma
    True
    """
    from puffgm.gaussian.networks import gaussian_calibrate, is_gaussian_prior

    if is_gaussian_prior(prior):  # linear-Gaussian networks with region secrets (puffgm.gaussian)
        return gaussian_calibrate(prior, epsilon=epsilon, lipschitz=lipschitz, protected=protected, secrets=secrets)
    epsilon = check_positive_finite(epsilon, "epsilon", "calibrate")
    lipschitz = check_positive_finite(lipschitz, "lipschitz", "calibrate")
    search_budget = check_search_budget(search_budget, "calibrate")
    certify_budget = check_certify_budget(certify_budget, "calibrate")
    secrets = resolve_secrets(secrets, protected, "calibrate")
    pc = load_prior_class(prior)
    nodes = secrets.protected_nodes(pc)
    # Pufferfish privacy is a condition per prior, and so is the proof of Theorem 4.3:
    # for a finite class, sigma_max = max over theta of each theta's own optimum, with an
    # active quilt per (node, theta).  This is never above the min over quilts of the
    # sup-over-Theta score, and equal to it for a single prior.
    best, refined, evaluations, family, per_prior = {}, [], 0, None, []
    lower, searched, planes = [], [], []
    jobs = _resolve_n_jobs(n_jobs, len(nodes))
    if time_limit is not None:
        time_limit = check_positive_finite(time_limit, "time_limit", "calibrate")
    clock = _Clock(time_limit, len(pc.priors) * len(nodes),
                   pc.priors[0].name if len(pc.priors) == 1 else f"{len(pc.priors)} priors")
    bar = _progress_bar(progress, len(pc.priors) * len(nodes), pc)
    skipped = 0
    stopped = False  # the time limit cut the refinement / branch and bound short (quilts valid)
    for t, theta in enumerate(pc.priors):
        search = QuiltSearch(PriorClass([theta]), secrets, max_quilt_states, exhaustive, max_table_entries)
        if time_limit is not None:
            search.engine.deadline_check = clock.check
        family = search.family
        try:
            # structured search, then branch-and-bound improvement of the worst nodes with a certified
            # lower bound (puffgm.networks.quilt_search), refinement of the worst nodes left uncertified and,
            # with certify_budget, the cutting-plane certificate (puffgm.networks.quilt_certify)
            mine, lower_t, certs, cut = _node_optima(search, nodes, epsilon, refined, t, jobs, bar, clock,
                                                     search_budget, certify_budget)
            stopped = stopped or cut
        except BaseException:
            if bar is not None:
                bar.close()
            raise
        lower.append(lower_t)
        searched.extend(((t, v) if t else v) for v in certs)
        planes.extend(c.cutting_planes.to_dict() | ({"prior": t} if t else {})
                      for c in certs.values() if c.cutting_planes is not None)
        evaluations += search.engine.evaluations
        skipped += search.skipped
        per_prior.append(max(c.score for c in mine.values()))
        for n in nodes:
            if n not in best or mine[n].score > best[n].score:  # ties keep the earlier prior
                best[n] = mine[n]
    if bar is not None:
        bar.close()
    per_node = tuple(best[n] for n in nodes)
    worst = best[_first_worst(nodes, lambda n: best[n].score)]  # first of the maxima, in node order
    sigma_max = max(c.score for c in per_node)  # never below any node's computed score
    group = pc.largest_component() / epsilon
    notes = list(pc.notes)
    if skipped:
        limit = max_table_entries or DEFAULT_MAX_TABLE_ENTRIES
        notes.append(f"{skipped} candidate quilt(s) skipped: exact inference on them would exceed "
                     f"max_table_entries={limit}; the calibration is valid over the remaining candidates")
    if stopped:
        notes.append(f"time_limit={time_limit:g} s reached after every node search: the refinement and branch "
                     "and bound of the worst nodes stopped early; every quilt is valid, and the lower bound is "
                     "the single-node bound (raise time_limit for a smaller sigma_max or gap)")
    if sigma_max >= group * (1 - 1e-12):
        notes.append("the quilt search found no gain over group DP for the worst node")
        if max(lower) >= group * (1 - 1e-9):
            notes.append("certified: no choice of Markov quilts beats group DP here (lower bound = group DP)")
    return CalibrationResult(
        epsilon=epsilon,
        lipschitz=lipschitz,
        method="exact",
        sigma_max=sigma_max,
        worst=worst,
        per_node=per_node,
        n_nodes=len(pc.nodes),
        groupdp_sigma=group,
        sigma_lower_bound=max(lower),  # max over theta of each theta's bound, like sigma_max
        fingerprint=pc.fingerprint,
        theorem=THEOREM,
        notes=tuple(notes),
        details={
            "quilt_family": family,
            "n_priors": len(pc.priors),
            "per_prior_sigma": tuple(per_prior),
            "protected": len(nodes),
            "influence_evaluations": evaluations,
            "secrets": secrets.canonical(pc),  # identifies S for composition (quilt_set_key)
            "secrets_description": repr(secrets),
            "refined_nodes": tuple(refined),
            "per_prior_lower_bound": tuple(lower),
            "search_budget": search_budget,
            "branch_and_bound_nodes": tuple(searched),
            "certify_budget": certify_budget,
            "cutting_plane_nodes": tuple(planes),
            "skipped_quilts": skipped,
            "time_limit_reached": stopped,
            # the structured family adapts to epsilon through the refinement
            "quilt_set": "exhaustive" if family == "exhaustive" else (
                f"structured+refined@epsilon={epsilon!r}" if not search_budget and not certify_budget
                else f"structured+refined+bnb{search_budget}@epsilon={epsilon!r}" if not certify_budget
                else f"structured+refined+bnb{search_budget}+cp{certify_budget}@epsilon={epsilon!r}"),
        },
    )
