r"""Branch and bound over far sets: a better quilt search with a certified optimality gap.

The far-set form of the optimum (:mod:`puffgm.networks.quilt_bounds`) turns the search
for the best Markov quilt of :math:`X_i` into

$$
\sigma_i^* = \min_{A \subseteq V \setminus \{i\}} f(A), \qquad f(A) = \frac{n - \mathrm{card}(A)}{\epsilon - e(A)},
$$

with :math:`e(A)` monotone in :math:`A` (Lemma 1).  :func:`branch_and_bound` enumerates far
sets in the subset tree of :math:`V \setminus \{i\}`, the nodes sorted by increasing
single-node influence :math:`s_v`: the children of :math:`A` are :math:`A \cup \{v_q\}` for every :math:`q` after
:math:`A`'s last element, so every far set is met exactly once.  The subtree of :math:`A`
(:math:`A` with any nodes of the tail :math:`T = \{v_q : q > \text{last}\}`) is bounded below by

$$
B(A) = \min_j \frac{n - \mathrm{card}(A) - j}{\epsilon - \max(e(A), s_{(j)}(T))}
$$

(:func:`puffgm.networks.quilt_bounds.far_set_bound`; a :math:`j`-subset of :math:`T` holds a node of
influence :math:`\ge` the :math:`j`-th smallest :math:`s` in :math:`T`), which is admissible.  The search is
best first (smallest :math:`B` first).  Every expanded far set :math:`A` is turned into a
real quilt, :math:`Q^*(A)` (:func:`puffgm.networks.quilt_bounds.far_set_quilt`) with its
remote set recomputed by d-separation (:func:`puffgm.networks.quilts.make_quilt`),
scored exactly, and kept if it beats the incumbent, so the search never
returns an invalid quilt and never does worse than the incumbent it starts
from (the structured family's best).  :math:`e(A)` is computed exactly as
:math:`e(Q^*(A))` when :math:`Q^*(A)` has at most ``max_quilt_states`` joint states; a larger
far set keeps the lower bound :math:`\max(e(\text{parent}), s_v)` (sound, but it yields no
candidate quilt).

When the best remaining bound reaches the incumbent, the incumbent is
optimal over all Markov quilts; when the budget of expansions runs out first,

$$
\text{lower bound} = \min(\text{incumbent}, \text{smallest bound left open})
$$

is still a sound lower bound on :math:`\sigma_i^*`, because every far set is either
expanded (its :math:`f` is :math:`\ge` the incumbent's score ... or it became the incumbent)
or lies in an open subtree.

Network level (:func:`improve_and_certify`): :math:`\sigma_{\max} = \max_i \sigma_i`, so a
lower bound on the optimum :math:`\sigma_{\max}^* = \max_i \sigma_i^*` is :math:`\max_i \mathrm{LB}_i` for any
set of nodes.  Nodes are processed from the worst down: the worst node is
searched (improving its quilt and bounding it); if it stays the worst, the
search stops, else the new worst node is processed; a node whose score is not
above the lower bound already proved cannot raise it.  A node's bound never
exceeds its score, so once the worst node is certified the gap is 0.  While a
gap remains, the single-node bounds of the next-worst nodes and of the
:data:`HUB_NODES` nodes of highest degree in the moral graph are added (the
hubs' bounds are often stronger than the worst nodes' own).  With
``certify_budget`` > 0 a processed node whose gap remains goes on to the
cutting-plane certificate of :mod:`puffgm.networks.quilt_certify`.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, replace

import numpy as np

from puffgm.core.ties import canonical_argmax
from puffgm.core.validation import check_nonnegative_int
from puffgm.networks.quilt_bounds import INFLUENCE_SLACK, far_set_bound, far_set_quilt, single_influences
from puffgm.networks.quilt_certify import certify_node
from puffgm.networks.quilt_scores import better
from puffgm.networks.quilts import make_quilt

__all__ = [
    "DEFAULT_SEARCH_BUDGET",
    "MAX_PROCESSED_NODES",
    "HUB_NODES",
    "DEFAULT_DIVE_WIDTH",
    "DIVE_MAX_STEPS",
    "NodeCertificate",
    "branch_and_bound",
    "far_side_dive",
    "improve_and_certify",
    "check_search_budget",
]

#: Default number of branch-and-bound expansions per processed node.
DEFAULT_SEARCH_BUDGET = 300
#: At most this many nodes are processed per prior (the worst ones).
MAX_PROCESSED_NODES = 8
#: Single-node bounds of at most this many hubs (highest moral degree) are added when a gap remains.
HUB_NODES = 8
#: Nodes tried per step of the greedy dive run when the bound does not meet the incumbent.
DEFAULT_DIVE_WIDTH = 8
#: The dive stops after this many steps (DIVE_MAX_STEPS * width influence queries at most).
DIVE_MAX_STEPS = 40


def check_search_budget(value, where: str) -> int:
    r"""Return ``int(value)`` if it is an integer :math:`\ge 0`, else raise ParameterError."""
    return check_nonnegative_int(value, "search_budget", where)


@dataclass(frozen=True)
class NodeCertificate:
    r"""Outcome of the branch and bound for one node under one prior.

    Attributes
    ----------
    node : str
    lower_bound : float
        A value :math:`\le \sigma_i^*`, the best score of any Markov quilt of ``node``.
    best : QuiltChoice
        The best quilt found (the incumbent if nothing better was found).
    certified : bool
        True when the search finished: ``best`` is optimal over all Markov
        quilts (up to the 1e-12 relative tie tolerance and the influence slack).
    expansions : int
        Far sets expanded.
    root_bound : float
        The single-node bound (before any branching).
    cutting_planes : GapCertificate or None
        The record of :func:`puffgm.networks.quilt_certify.certify_node` when it ran after the
        branch and bound (``certify_budget`` > 0 and a gap remained); its bound and
        quilt are already folded into ``lower_bound`` and ``best``.
    """

    node: str
    lower_bound: float
    best: object
    certified: bool
    expansions: int
    root_bound: float
    cutting_planes: object = None


def branch_and_bound(search, node, incumbent, *, epsilon: float, budget: int = DEFAULT_SEARCH_BUDGET,
                     dive_width: int = DEFAULT_DIVE_WIDTH) -> NodeCertificate:
    """Best-first branch and bound over the far sets of ``node`` (module docstring).

    Parameters
    ----------
    search : puffgm.networks.quilt_scores.QuiltSearch
        Of a class with one prior (its engine answers the influence queries).
    node : str
        The protected node :math:`X_i`.
    incumbent : QuiltChoice
        A valid quilt of ``node`` scored at ``epsilon`` (the search starts from it).
    epsilon : float
        The privacy parameter the scores are computed at.
    budget : int
        Maximum number of far sets expanded; 0 gives the single-node bound only.
    dive_width : int
        When the budget runs out before the bound meets the incumbent, a greedy
        dive (:func:`far_side_dive`) trying this many nodes per step looks for a
        better quilt (0: no dive).

    Returns
    -------
    NodeCertificate
        The best quilt found and the certified lower bound of the node's score.
    """
    engine = search.engine
    dag = search.dag
    n = len(search.prior_class.nodes)
    order = search.prior_class.nodes.index
    singles = single_influences(engine, node)
    universe = sorted(singles, key=lambda v: (singles[v], order(v)))
    s = np.array([singles[v] for v in universe], dtype=float)
    best = incumbent
    root = far_set_bound(n, 0, 0.0, s, epsilon=epsilon)
    # (bound, tiebreak, far set as universe indices, e lower bound, exact)
    heap: list[tuple[float, int, tuple[int, ...], float, bool]] = [(root, 0, (), 0.0, True)]
    tick = 1
    expansions = 0
    exact_cache = {}

    def exact_influence(far, names=False):
        """(Q*(A), e(A)), e(A) exactly through Q*(A), or None when Q*(A) is too large."""
        q = far_set_quilt(dag, node, far if names else [universe[k] for k in far])
        if q not in exact_cache:
            e = search.influence_if_fits(node, q)
            exact_cache[q] = None if e is None else (q, e)
        return exact_cache[q]

    lower = None
    while heap:
        bound, _, far, e_lb, exact = heapq.heappop(heap)
        if not better(bound, best.score):
            lower = min(bound, best.score)
            heap = []
            break
        if expansions >= budget:
            heapq.heappush(heap, (bound, 0, far, e_lb, exact))
            break
        p = far[-1] + 1 if far else 0
        if not exact:
            got = exact_influence(far)
            if got is not None:
                e_val = got[1]
                e_new = max(e_lb, e_val - INFLUENCE_SLACK) if math.isfinite(e_val) else math.inf
                nb = far_set_bound(n, len(far), e_new, s[p:], epsilon=epsilon)
                heapq.heappush(heap, (nb, tick, far, e_new, True))
                tick += 1
                continue
        expansions += 1
        if far:
            got = exact_influence(far) if exact else None
            if got is not None and math.isfinite(got[1]) and got[1] < epsilon:
                ch = search.choice(make_quilt(dag, node, got[0]), epsilon=epsilon)
                if better(ch.score, best.score):
                    best = ch
        # children A ∪ {v_q}, q >= p: their bounds increase with q, so stop at the first hopeless one
        for q in range(p, len(universe)):
            e_child = max(e_lb, s[q])
            if e_child >= epsilon:
                break
            cb = far_set_bound(n, len(far) + 1, e_child, s[q + 1:], epsilon=epsilon)
            if not better(cb, best.score):
                break
            heapq.heappush(heap, (cb, tick, far + (q,), e_child, False))
            tick += 1
    if lower is None:
        lower = min([best.score] + [h[0] for h in heap])
        certified = not heap or not better(min(h[0] for h in heap), best.score)
    else:
        certified = True
    if not certified and dive_width:
        # the bound did not meet the incumbent: look for a better quilt by a greedy dive
        best = far_side_dive(search, node, best, singles, epsilon=epsilon, width=dive_width,
                             exact_influence_of=exact_influence)
        lower = min(lower, best.score)
    return NodeCertificate(node=node, lower_bound=float(lower), best=best, certified=certified,
                           expansions=expansions, root_bound=float(root))


def far_side_dive(search, node, incumbent, singles: dict, *, epsilon: float, width: int = DEFAULT_DIVE_WIDTH,
                  exact_influence_of=None):
    r"""Greedy far-set growth: the best quilt met while adding, one at a time, the node of least joint influence.

    Starting from :math:`A = \emptyset`, each step tries the ``width`` nodes outside :math:`A` of
    smallest single-node influence, computes :math:`e(A \cup \{v\})` exactly (through
    :math:`Q^*(A \cup \{v\})`, skipped if it has more than ``max_quilt_states`` states) and
    adds the one of least influence, until every trial reaches :math:`\epsilon`.  Every
    far set met gives the quilt :math:`Q^*(A)` with its remote set recomputed by
    d-separation; the best of them competes with ``incumbent`` (ties keep the
    incumbent).  The dive stops when no extension of the current far set can
    beat the incumbent (the bound of :func:`puffgm.networks.quilt_bounds.far_set_bound`)
    or after :data:`DIVE_MAX_STEPS` steps; cost: at most ``width`` influence
    queries per step.

    Parameters
    ----------
    search : puffgm.networks.quilt_scores.QuiltSearch
        Of a class with one prior.
    node : str
        The protected node :math:`X_i`.
    incumbent : QuiltChoice
        A valid quilt of ``node`` scored at ``epsilon``.
    singles : dict
        node -> lower bound on its single-node influence
        (:func:`puffgm.networks.quilt_bounds.single_influences`).
    epsilon : float
        The privacy parameter the scores are computed at.
    width : int
        Nodes tried per step.
    exact_influence_of : callable, optional
        ``(far set, names=True) -> (Q*(A), e(Q*(A)))`` or None when Q*(A) is too
        large; the branch and bound passes its own, which shares its cache.

    Returns
    -------
    QuiltChoice
        The better of ``incumbent`` and the best quilt met on the way.
    """
    dag = search.dag
    order = search.prior_class.nodes.index
    if exact_influence_of is None:
        def exact_influence_of(far, names=True):
            q = far_set_quilt(dag, node, far)
            e = search.influence_if_fits(node, q)
            return None if e is None else (q, e)
    best = incumbent
    far: set[str] = set()
    ranked = sorted(singles, key=lambda v: (singles[v], order(v)))
    n = len(search.prior_class.nodes)
    queries = 0
    e_far = 0.0
    while queries < DIVE_MAX_STEPS * width:
        rest = [u for u in ranked if u not in far]
        # no extension of the current far set can beat the incumbent: stop
        tail = np.array([singles[u] for u in rest], dtype=float)
        if not better(far_set_bound(n, len(far), max(0.0, e_far - INFLUENCE_SLACK), tail, epsilon=epsilon), best.score):
            return best
        trials = []
        for v in rest[:width]:
            queries += 1
            got = exact_influence_of(tuple(sorted(far | {v}, key=order)), names=True)
            if got is not None and got[1] < epsilon:
                trials.append((got[1], order(v), v, got[0]))
        if not trials:
            return best
        e_far, _, v, q = min(trials)
        far.add(v)
        ch = search.choice(make_quilt(dag, node, q), epsilon=epsilon)
        if better(ch.score, best.score):
            best = ch
    return best


def improve_and_certify(search, best: dict, nodes, *, epsilon: float, budget: int = DEFAULT_SEARCH_BUDGET,
                        max_nodes: int = MAX_PROCESSED_NODES, certify_budget: int = 0, dive: bool = True):
    r"""Improve the worst nodes' quilts and bound the optimum :math:`\sigma_{\max}^*` from below, for one prior.

    Parameters
    ----------
    search : puffgm.networks.quilt_scores.QuiltSearch
        Of a class with one prior (the witnesses of new quilts name prior 0: a
        caller searching the prior of index t in a class relabels them).
    best : dict
        node -> QuiltChoice, the active quilts found by the structured search.
    nodes : sequence of str
        The protected nodes.
    epsilon : float
        The privacy parameter the scores are computed at.
    budget : int
        Branch-and-bound expansions per processed node (0: single-node bounds only,
        no dive: the quilts are the structured search's).
    max_nodes : int
        At most this many nodes are processed (worst first).
    certify_budget : int
        When :math:`> 0`, a processed node whose branch and bound leaves a gap is handed to
        the cutting-plane certificate (:func:`puffgm.networks.quilt_certify.certify_node`)
        with this many exact influence queries; 0 (default) skips it.
    dive : bool
        Run the far-side dive (:func:`far_side_dive`) of each processed node when
        ``budget`` > 0 (False: expansions only, for a quick certification).

    Returns
    -------
    (dict, float, dict)
        The improved active quilts, a lower bound on the max over ``nodes`` of :math:`\sigma_i^*`
        (the optimum over all Markov quilts), and a record of the processed nodes
        (node -> NodeCertificate).

    Notes
    -----
    On an exhaustive search (``search.exhaustive``) every quilt was scored, so the
    lower bound is :math:`\sigma_{\max}` itself and nothing is processed.
    """
    best = dict(best)
    if not nodes:
        return best, math.nan, {}
    if search.exhaustive:
        return best, max(best[v].score for v in nodes), {}
    rank = {v: k for k, v in enumerate(nodes)}
    certs: dict[str, NodeCertificate] = {}
    lower = 0.0
    while True:
        worst = list(rank)[canonical_argmax([best[v].score for v in rank])]  # first of the ties, in node order
        top = max(best[v].score for v in nodes)
        if worst in certs or top <= lower or len(certs) >= max_nodes:
            break
        cert = branch_and_bound(search, worst, best[worst], epsilon=epsilon, budget=budget,
                                dive_width=DEFAULT_DIVE_WIDTH if budget and dive else 0)
        if certify_budget and not cert.certified:
            gap = certify_node(search, worst, cert.best, cert.lower_bound, epsilon=epsilon,
                               max_queries=certify_budget)
            cert = replace(cert, lower_bound=max(cert.lower_bound, gap.lower_bound), best=gap.best,
                           certified=gap.certified, cutting_planes=gap)
        certs[worst] = cert
        best[worst] = cert.best
        lower = max(lower, cert.lower_bound)
    # a node below the worst can still hold a higher bound: single-node bounds (cheap) of the next ones
    for v in sorted(nodes, key=lambda v: (-best[v].score, rank[v])):
        if len(certs) >= max_nodes or best[v].score <= lower:
            break
        if v not in certs:
            certs[v] = branch_and_bound(search, v, best[v], epsilon=epsilon, budget=0, dive_width=0)
            lower = max(lower, certs[v].lower_bound)
    top = max(best[v].score for v in nodes)
    if lower < top:
        # the hubs (highest degree in the moral graph) often hold the strongest single-node
        # bounds, whatever their scores
        moral = search.moral
        added = 0
        for v in sorted(nodes, key=lambda v: (-moral.degree(v), rank[v])):
            if added >= HUB_NODES or lower >= top:
                break
            if v in certs or best[v].score <= lower:  # a node's bound never exceeds its score
                continue
            certs[v] = branch_and_bound(search, v, best[v], epsilon=epsilon, budget=0, dive_width=0)
            lower = max(lower, certs[v].lower_bound)
            added += 1
    return best, min(lower, top), certs
