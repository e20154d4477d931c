r"""Closing the optimality gap: a cutting-plane certificate from the exact influences of small sets.

The far-set form of the optimum (:mod:`puffgm.networks.quilt_bounds`),

$$
\sigma_i^* = \min_{A \subseteq V \setminus \{i\}} f(A), \qquad f(A) = \frac{n - \mathrm{card}(A)}{\epsilon - e(A)},
$$

with :math:`e` monotone (Lemma 1), is bounded there through single nodes only:
:math:`e(A) \ge \max_{v \in A} e(\{v\})`.  Where the influence of :math:`X_i` on a far set
builds up over many weakly dependent nodes (hailfinder's R5Fcst, hepar2),
that bound is far below the optimum.  This module uses *every* set whose
influence is known exactly.

Knowledge and cuts
------------------
Let :math:`K` be a family of sets :math:`S \subseteq V \setminus \{i\}` with known lower bounds :math:`w(S) \le e(S)`
(the singles, all pairs, and the sets met below).  By Lemma 1, a far set :math:`A`
holding some :math:`S` in :math:`K` has :math:`e(A) \ge w(S)`, so

$$
e(A) \ge g(A) = \max_{S \in K,\ S \subseteq A} w(S).
$$

**Certificate of a target t.**  :math:`f(A) < t` iff :math:`e(A) < \tau_k = \epsilon - (n - k) / t`
with :math:`k = \mathrm{card}(A)`.  Let :math:`M(\tau)` be the largest :math:`\mathrm{card}(A)` over far sets with
:math:`g(A) < \tau`, i.e. the optimum of the 0-1 program

$$
\max \sum_v x_v \quad \text{s.t.} \quad \sum_{v \in S} x_v \le \mathrm{card}(S) - 1 \quad
  \text{for every } S \in K \text{ with } w(S) \ge \tau
$$

(a maximum independent set of a hypergraph; for pairs the complement of a
maximum clique), solved by HiGHS (:func:`scipy.optimize.milp`), whose dual
bound gives a certified upper bound on :math:`M`.  If :math:`M(\tau_k) < k` for every :math:`k \ge 1`
and :math:`t \le n / \epsilon` (the empty far set), no far set scores below :math:`t`:
:math:`\sigma_i^* \ge t`.  :math:`M` is non-decreasing in :math:`\tau` and :math:`\tau_k` increasing in :math:`k`, so
after :math:`M(\tau_k) = m < k` every :math:`k' \in (m, k)` passes too (:math:`M(\tau_{k'}) \le m < k'`):
the check jumps from :math:`k` to :math:`M(\tau_k)` and needs few programs.

**Lazy cuts.**  When some program answers :math:`M(\tau_k) \ge k`, its solution :math:`A` (a
set no known cut forbids) is *separated*: starting from :math:`A`'s node of largest
single influence, the node of :math:`A` with the largest known pairwise influence
with the current set :math:`S` is added and :math:`e(S)` computed exactly (through
:math:`Q^*(S)`, :func:`puffgm.networks.quilt_bounds.far_set_quilt`, when it has at most
``max_quilt_states`` joint states) until :math:`e(S) \ge \tau_k`; :math:`S` then joins :math:`K` as a
new cut (after dropping the nodes it does not need, which makes the cut
forbid more far sets).  If no cut of at most :data:`MAX_CUT_SIZE` nodes is
found, the target fails (the bisection moves down).  Every set :math:`S` evaluated on the way is itself a far set
with exact score :math:`f(S)`: if it beats the incumbent, the quilt :math:`Q^*(S)` with its
remote set recomputed by d-separation (:func:`puffgm.networks.quilts.make_quilt`) and
scored exactly becomes the new incumbent, so the search also finds better
quilts and never returns an invalid one.  If :math:`S` grows to the whole of :math:`A` below
:math:`\tau_k`, then :math:`f(A) < t` and :math:`t` is not certifiable.

**Bisection.**  The first target is the incumbent's score itself (less
half the tolerance): the incumbent is often optimal, and the cuts made for a
high target serve every lower one.  Then :math:`t` is bisected between a known lower
bound and the incumbent's score: a certified :math:`t` raises the lower bound; a :math:`t`
that fails (or runs out of budget) lowers the upper end of the bisection
only.  The
returned lower bound is the largest certified :math:`t`, hence sound whatever the
budget.  Every influence entering a cut is lowered by
:data:`puffgm.networks.quilt_bounds.INFLUENCE_SLACK`.

Cost: the pairs (all pairs of nodes with single influence below :math:`\epsilon`,
when at most half the query budget) and the lazy cuts are exact influence
queries on sets of a few nodes; the 0-1 programs have one variable per node.
On hailfinder's worst node the pairs alone raise the bound from 26.2 to 36.8.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from puffgm.core.results import QuiltChoice
from puffgm.core.validation import check_nonnegative_int
from puffgm.networks.quilt_bounds import INFLUENCE_SLACK, far_set_bound, far_set_quilt, single_influences
from puffgm.networks.quilt_scores import better
from puffgm.networks.quilts import make_quilt

__all__ = [
    "DEFAULT_CERTIFY_QUERIES",
    "GapCertificate",
    "certify_node",
    "check_certify_budget",
]

#: Default budget of exact influence queries per certified node (pairs and lazy cuts together).
DEFAULT_CERTIFY_QUERIES = 4000
#: The bisection stops when the bound is within this relative distance of its upper end.
CERTIFY_RTOL = 1e-3
#: Largest set the separation grows before giving up on a witness.
MAX_CUT_SIZE = 12


def check_certify_budget(value, where: str) -> int:
    r"""Return ``int(value)`` if it is an integer :math:`\ge 0`, else raise ParameterError."""
    return check_nonnegative_int(value, "certify_budget", where)


@dataclass(frozen=True)
class GapCertificate:
    r"""Outcome of :func:`certify_node` for one node under one prior.

    Attributes
    ----------
    node : str
    lower_bound : float
        A value :math:`\le \sigma_i^*`, the best score of any Markov quilt of ``node``.
    best : QuiltChoice
        The best quilt known (the incumbent, or a better quilt met while separating).
    certified : bool
        True when ``lower_bound`` is within the bisection tolerance of ``best.score``.
    start_bound : float
        The lower bound the certificate started from.
    queries : int
        Exact influence queries spent (pairs and cuts).
    cuts : int
        Sets in the knowledge family beyond the singles (pairs included).
    programs : int
        0-1 programs solved.
    seconds : float
        Wall time of the certificate.
    """

    node: str
    lower_bound: float
    best: QuiltChoice
    certified: bool
    start_bound: float
    queries: int
    cuts: int
    programs: int
    seconds: float = math.nan

    def to_dict(self) -> dict:
        """The record as plain JSON-ready data (the best quilt by its score only)."""
        return {"node": self.node, "lower_bound": self.lower_bound, "best_score": self.best.score,
                "certified": self.certified, "start_bound": self.start_bound, "queries": self.queries,
                "cuts": self.cuts, "programs": self.programs, "seconds": self.seconds}

    def explain(self) -> str:
        """One paragraph in words."""
        state = ("certified optimal within the bisection tolerance" if self.certified
                 else f"gap {self.best.score / self.lower_bound - 1:.1%} left")
        return (f"Cutting-plane certificate for {self.node}: lower bound {self.start_bound:.4g} -> "
                f"{self.lower_bound:.4g}, best quilt score {self.best.score:.4g} ({state}); "
                f"{self.queries} exact influence queries, {self.cuts} cuts, {self.programs} 0-1 programs, "
                f"{self.seconds:.1f} s.")


@dataclass
class _State:
    """Mutable working state of one certificate."""

    n: int
    epsilon: float
    cand: list  # candidate nodes (single influence < epsilon), ascending single influence
    single: np.ndarray  # lower bounds on single influences of cand
    cuts: list = field(default_factory=list)  # (tuple of cand indices, lower bound on e)
    pair: dict = field(default_factory=dict)  # (i, j) i < j -> lower bound on e({i, j})
    queries: int = 0
    programs: int = 0
    masks: list = field(default_factory=list)  # bit mask of each cut's members
    dominated: list = field(default_factory=list)  # cut c is implied by a subset cut at every tau <= this

    def add_cut(self, members, w: float) -> None:
        """Record the cut S = ``members`` with w <= e(S), and which cuts imply which.

        A cut S' ⊇ S adds nothing at a level tau <= w(S) (every far set holding S'
        holds S), so it is left out of the programs there.
        """
        members = tuple(sorted(int(j) for j in members))
        mask = sum(1 << j for j in members)
        dom = -math.inf
        for c, other in enumerate(self.masks):
            if other & ~mask == 0:  # an existing subset implies the new cut up to its weight
                dom = max(dom, self.cuts[c][1])
            elif mask & ~other == 0:
                self.dominated[c] = max(self.dominated[c], w)
        self.cuts.append((members, float(w)))
        self.masks.append(mask)
        self.dominated.append(dom)


@contextlib.contextmanager
def _quiet_stdout():
    """Silence file descriptor 1 (HiGHS's C++ code sometimes prints a debug line there, which
    would corrupt ``puffgm calibrate --json``)."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _active_cuts(st: _State, tau: float, ub: np.ndarray) -> list:
    """The cuts that forbid something at level tau: w(S) >= tau, every member still allowed."""
    blocked = sum(1 << int(j) for j in np.flatnonzero(ub == 0))
    return [members for (members, w), mask, dom in zip(st.cuts, st.masks, st.dominated, strict=True)
            if w >= tau and dom < tau and not mask & blocked]


def _greedy_far_set(st: _State, active: list, ub: np.ndarray, prefer=()) -> tuple:
    """A far set that no active cut forbids, grown greedily (``prefer`` first, then ascending single influence)."""
    cuts_of: dict[int, list[int]] = {}
    for c, members in enumerate(active):
        for j in members:
            cuts_of.setdefault(j, []).append(c)
    count = [0] * len(active)
    chosen = []
    seen = set(prefer)
    for j in list(prefer) + [int(j) for j in np.flatnonzero(ub) if int(j) not in seen]:  # cand: ascending
        mine = cuts_of.get(int(j), ())
        if any(count[c] == len(active[c]) - 1 for c in mine):
            continue
        chosen.append(int(j))
        for c in mine:
            count[c] += 1
    return tuple(chosen)


def _find_witness(st: _State, active: list, ub: np.ndarray, k: int, tries: int = 3) -> tuple:
    """A far set of at least k nodes that no active cut forbids, by greedy heuristics (or the largest met).

    Orders tried: ascending single influence, then ascending weighted degree in the
    active cuts (a cut of card s weighs 1 / (s - 1), the classic minimum-degree rule
    for independent sets), then that degree perturbed at random (seeded: results are
    reproducible).  A heuristic only saves programs; the proofs come from HiGHS.
    """
    best = _greedy_far_set(st, active, ub)
    if len(best) >= k or not active:
        return best
    free = [int(j) for j in np.flatnonzero(ub)]
    deg = np.zeros(len(st.cand))
    for members in active:
        deg[list(members)] += 1.0 / (len(members) - 1)
    rng = np.random.default_rng(len(active))
    for attempt in range(tries - 1):
        noise = rng.random(len(deg)) * (0.5 * attempt) if attempt else 0.0
        key = deg + noise
        order = sorted(free, key=lambda j: (key[j] if attempt else deg[j], st.single[j]))
        got = _greedy_far_set(st, active, ub, prefer=order)
        if len(got) > len(best):
            best = got
        if len(best) >= k:
            break
    return best


def _witness_program(st: _State, active: list, ub: np.ndarray, k: int):
    """A far set of k or more nodes that no active cut forbids, by HiGHS (first feasible point), or None.

    None means HiGHS proved there is none (or stopped early); only the
    optimisation program of :func:`_max_far_set` is used as a proof.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix, vstack

    m = len(st.cand)
    rows = [r for r, members in enumerate(active) for _ in members]
    cols = [j for members in active for j in members]
    a = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(active), m))
    a = vstack([a, coo_matrix(np.ones((1, m)))]).tocsr()
    lo = np.full(len(active) + 1, -np.inf)
    lo[-1] = k
    hi = np.array([len(members) - 1 for members in active] + [m], float)
    st.programs += 1
    with _quiet_stdout():
        res = milp(np.zeros(m), integrality=np.ones(m), bounds=Bounds(np.zeros(m), ub),
                   constraints=[LinearConstraint(a, lo, hi)])
    if res.status != 0 or res.x is None:
        return None
    sol = tuple(int(j) for j in np.flatnonzero(res.x > 0.5))
    if len(sol) < k or any(all(res.x[j] > 0.5 for j in members) for members in active):
        return None  # not a clean witness: let the optimisation program decide
    return sol


def _max_far_set(st: _State, active: list, ub: np.ndarray):
    """(M, A): a certified upper bound on M(tau) (module docstring) and a maximiser, by HiGHS."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    free = np.flatnonzero(ub)
    if len(free) == 0:
        return 0, ()
    if not active:
        return len(free), tuple(int(j) for j in free)
    rows = [r for r, members in enumerate(active) for _ in members]
    cols = [j for members in active for j in members]
    rhs = np.array([len(members) - 1 for members in active], float)
    st.programs += 1
    m = len(st.cand)
    a = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(active), m)).tocsr()
    with _quiet_stdout():
        res = milp(-np.ones(m), integrality=np.ones(m), bounds=Bounds(np.zeros(m), ub),
                   constraints=[LinearConstraint(a, -np.inf, rhs)])
    if res.x is None:  # no solution reported: only the trivial bound is certain
        return len(free), tuple(int(j) for j in free)
    sol = tuple(int(j) for j in np.flatnonzero(res.x > 0.5))
    dual = getattr(res, "mip_dual_bound", None)
    if dual is None or not np.isfinite(dual):
        bound = len(sol) if res.status == 0 else len(free)
    else:  # HiGHS's dual bound on the (integral) optimum: certified whatever the gap
        bound = max(len(sol), int(math.floor(-dual + 1e-3)))  # rounding up is the safe side
    return bound, sol


def certify_node(search, node, incumbent, lower: float = 0.0, *, epsilon: float,
                 max_queries: int = DEFAULT_CERTIFY_QUERIES, max_programs: int | None = None,
                 rtol: float = CERTIFY_RTOL) -> GapCertificate:
    r"""Raise the certified lower bound on :math:`\sigma_i^*` by cutting planes, improving the quilt on the way.

    The steps (module docstring): the single-node bound, the pairs when
    affordable (:meth:`_Certifier.add_pairs`), then the bisection on the target t
    (:meth:`_Certifier.bisect`), each target checked by 0-1 programs with lazy cuts
    (:meth:`_Certifier.certifies`).

    Parameters
    ----------
    search : puffgm.networks.quilt_scores.QuiltSearch
        Of a class with one prior (its engine answers the influence queries).
    node : str
        The protected node :math:`X_i`.
    incumbent : QuiltChoice
        A valid quilt of ``node`` scored at ``epsilon``.
    lower : float
        A known lower bound on :math:`\sigma_i^*` (the bisection starts there).
    epsilon : float
        The privacy parameter the scores are computed at.
    max_queries : int
        Budget of exact influence queries (the single-node pass is not counted).
    max_programs : int, optional
        Budget of 0-1 programs (default: ``max_queries // 2``).
    rtol : float
        Relative tolerance of the bisection.

    Returns
    -------
    GapCertificate
        ``lower_bound`` :math:`\le \sigma_i^*` (module docstring), never below ``lower`` nor
        above ``best.score``.

    Examples
    --------
    >>> from puffgm.networks.quilt_scores import QuiltSearch
    >>> from puffgm.networks.priors import load_prior_class
    >>> from puffgm.networks.quilts import make_quilt
    >>> search = QuiltSearch(load_prior_class("example:asia"), exhaustive=False)
    >>> start = search.choice(make_quilt(search.dag, "either", ()), epsilon=1.0)   # the trivial quilt
    >>> cert = certify_node(search, "either", start, epsilon=1.0)
    >>> cert.certified and cert.lower_bound <= cert.best.score <= start.score
    True
    """
    clock = time.perf_counter()
    if max_programs is None:
        max_programs = max_queries // 2
    run = _Certifier(search, node, incumbent, epsilon=epsilon, max_queries=max_queries, max_programs=max_programs)
    lower = max(float(lower), run.single_node_bound())
    start = lower
    run.add_pairs()
    lower = min(run.bisect(lower, rtol), run.best.score)
    best, st = run.best, run.st
    return GapCertificate(node=node, lower_bound=float(lower), best=best,
                          certified=bool(best.score - lower <= rtol * best.score), start_bound=float(start),
                          queries=st.queries, cuts=len(st.cuts), programs=st.programs,
                          seconds=time.perf_counter() - clock)


class _Certifier:
    """The working parts of one :func:`certify_node` run: knowledge, incumbent and budgets.

    Parameters
    ----------
    search : QuiltSearch
        Of a class with one prior.
    node : str
        The protected node :math:`X_i`.
    incumbent : QuiltChoice
        A valid quilt of ``node`` scored at ``epsilon``: :attr:`best` starts there.
    epsilon : float
    max_queries, max_programs : int
        The budgets of :func:`certify_node`.
    """

    def __init__(self, search, node, incumbent, *, epsilon, max_queries, max_programs):
        self.search = search
        self.node = node
        self.epsilon = epsilon
        self.max_queries = max_queries
        self.max_programs = max_programs
        self.n = len(search.prior_class.nodes)
        order = search.prior_class.nodes.index
        self.singles = single_influences(search.engine, node)
        singles = self.singles
        self.cand = sorted((v for v in singles if singles[v] < epsilon), key=lambda v: (singles[v], order(v)))
        self.st = _State(n=self.n, epsilon=float(epsilon), cand=self.cand,
                         single=np.array([singles[v] for v in self.cand], dtype=float))
        self.best = incumbent
        self.cache = {}  # frozenset of cand indices -> lower bound on e(S), or None (too large)

    def single_node_bound(self) -> float:
        """The single-node bound (:func:`puffgm.networks.quilt_bounds.single_node_bound`) from the singles."""
        all_s = np.sort(np.fromiter(self.singles.values(), float))
        return far_set_bound(self.n, 0, 0.0, all_s, epsilon=self.epsilon)

    def exact(self, members):
        """Lower bound on e(S) for S = cand[members] (exact minus slack), None if too large."""
        key = frozenset(members)
        if key in self.cache:
            return self.cache[key]
        search, st = self.search, self.st
        names = [self.cand[j] for j in sorted(members)]
        q = far_set_quilt(search.dag, self.node, names)
        e = search.influence_if_fits(self.node, q)
        if e is None:
            self.cache[key] = None
            return None
        st.queries += 1
        val = max(0.0, e - INFLUENCE_SLACK) if math.isfinite(e) else math.inf
        self.cache[key] = val
        self.consider(members, q, e)
        return val

    def consider(self, members, q, e) -> None:
        """Every evaluated set is a far set: keep its quilt if it beats the incumbent."""
        epsilon = self.epsilon
        if not (math.isfinite(e) and e < epsilon):
            return
        if not better((self.n - len(members)) / (epsilon - e), self.best.score):
            return
        ch = self.search.choice(make_quilt(self.search.dag, self.node, q), epsilon=epsilon)
        if better(ch.score, self.best.score):
            self.best = ch

    def add_pairs(self) -> None:
        """Every pair of candidates becomes a cut, when the pairs take at most half the query budget."""
        st, m = self.st, len(self.cand)
        if m * (m - 1) // 2 <= self.max_queries // 2:
            for i, j in itertools.combinations(range(m), 2):
                w = self.exact((i, j))
                if w is not None:
                    st.pair[(i, j)] = w
                    st.add_cut((i, j), w)

    def pair_w(self, i, j) -> float:
        """The known lower bound on e({i, j}): the pair's, else the larger single."""
        st = self.st
        return st.pair.get((i, j) if i < j else (j, i), max(st.single[i], st.single[j]))

    def separate(self, far, tau):
        """A new cut S ⊆ far with e(S) >= tau (its members), or None when none was found within the limits."""
        st = self.st
        far = list(far)
        s = [max(far, key=lambda j: st.single[j])]
        rest = [j for j in far if j != s[0]]
        w = float(st.single[s[0]])
        if not rest:  # a single-node far set below tau: evaluate it, as a quilt (consider)
            self.exact(tuple(s))
            return None
        while w < tau:
            if not rest or len(s) >= MAX_CUT_SIZE or st.queries >= self.max_queries:
                return None
            nxt = max(rest, key=lambda j: (max(self.pair_w(j, i) for i in s), st.single[j]))
            rest.remove(nxt)
            s.append(nxt)
            got = self.exact(tuple(s))
            if got is None:
                return None
            w = got
        # drop the members the cut does not need (earliest added first, never the last)
        for j in list(s[:-1]):
            if len(s) <= 2 or st.queries >= self.max_queries:
                break
            trial = tuple(i for i in s if i != j)
            got = self.exact(trial)
            if got is not None and got >= tau:
                s, w = list(trial), got
        st.add_cut(s, w)
        return s

    def certifies(self, t) -> bool:
        """True when sigma_i* >= t is proved from the knowledge (with lazy cuts)."""
        st, n, epsilon = self.st, self.n, self.epsilon
        if t > n / epsilon or t >= self.best.score:
            return False
        k = len(self.cand)
        while k >= 1:
            tau = epsilon - (n - k) / t
            if tau <= 0:
                return True
            ub = (st.single < tau).astype(float)
            free = int(ub.sum())
            if free < k:  # fewer than k nodes may join at all
                k = free
                continue
            active = _active_cuts(st, tau, ub)
            far = _find_witness(st, active, ub, k)
            if len(far) < k:
                if st.programs >= self.max_programs:
                    return False
                far = _witness_program(st, active, ub, k) or ()
            if len(far) < k:
                if st.programs >= self.max_programs:
                    return False
                size, far = _max_far_set(st, active, ub)
                if size < k:
                    k = size
                    continue
                if len(far) < k:  # the dual bound alone did not prove it
                    return False
            if not self.cut_witness(far, tau, t, active, ub, k):
                return False
        return True

    def cut_witness(self, far, tau, t, active, ub, k) -> bool:
        """Cut the witness ``far`` (a far set no known cut forbids), then what is left of it.

        Local search: the new cut's most influential member is taken out of the witness
        and the rest refilled greedily; a refilled witness of k nodes is cut without a
        new program.  False when a witness could not be cut (t is not certified).
        """
        st = self.st
        while len(far) >= k:
            cut = self.separate(far, tau)
            if cut is None or self.best.score <= t:
                return False
            active.append(tuple(sorted(cut)))
            out = max(cut, key=lambda j: st.single[j])
            far = _greedy_far_set(st, active, ub, prefer=[j for j in far if j != out])
        return True

    def bisect(self, lower: float, rtol: float) -> float:
        """The bisection on the target t between ``lower`` and the incumbent's score: the largest t certified."""
        st = self.st
        hi = self.best.score
        top = True  # the incumbent is often optimal: try to certify it first (its cuts serve every lower t)
        while hi - lower > rtol * hi and st.queries < self.max_queries and st.programs < self.max_programs:
            t = hi * (1 - rtol / 2) if top else 0.5 * (lower + hi)
            top = False
            if self.certifies(t):
                lower = t
            else:
                hi = min(t, self.best.score)
        return lower
