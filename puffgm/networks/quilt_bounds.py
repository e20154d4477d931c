r"""Certified lower bounds on the best score any Markov quilt can give a node.

Song, Wang and Chaudhuri (Algorithm 2) score a Markov quilt :math:`(X_N, X_Q, X_R)` of
:math:`X_i` by :math:`\sigma(X_Q) = \mathrm{card}(X_N) / (\epsilon - e(X_Q \mid X_i))`.  This module proves
and computes lower bounds on

$$
\sigma_i^* = \min_{\text{Markov quilts } X_Q \text{ of } X_i} \sigma(X_Q),
$$

where, as everywhere in puffgm, a quilt set :math:`Q` is paired with its largest
remote set :math:`R(Q)` (every node d-separated from :math:`X_i` by :math:`Q`).  A smaller remote
set only enlarges :math:`X_N` at the same influence, so :math:`\sigma_i^*` is also the optimum
over every Markov quilt of Definition 4.2 whose independence is certified by
the graph (d-separation).  Everything below holds for one prior :math:`\theta`; for a
finite class puffgm takes the max over :math:`\theta` (see :mod:`puffgm.networks.calibration`),
and so does the bound.

Far sets
--------
Call :math:`A = V \setminus X_N = Q \cup R(Q)` the *far set* of a quilt, and write
:math:`e(A) = e_\theta(X_A \mid X_i)`, :math:`n = \mathrm{card}(V)`.

**Lemma 1 (monotonicity, data processing).**  If :math:`S \subseteq A` then :math:`e(S) \le e(A)`.
*Proof.* :math:`P(X_S \mid X_i = a)` is the marginal of :math:`P(X_A \mid X_i = a)`, and a
marginal of two laws is never further apart in max-divergence:
:math:`\sum_{x_A \supseteq x_S} P(x_A \mid a) \le e^{e(A)} \sum_{x_A \supseteq x_S} P(x_A \mid b)`; an :math:`x_S`
possible under :math:`a` and impossible under :math:`b` extends to such an :math:`x_A`, so the
infinite case carries over too.

**Lemma 2 (a quilt is as influential as its far set).**  :math:`e(Q) = e(Q \cup R(Q))`.
*Proof.* :math:`X_R` is independent of :math:`X_i` given :math:`X_Q` (d-separation), so
:math:`P(x_Q, x_R \mid a) = P(x_Q \mid a) P(x_R \mid x_Q)` and the factor :math:`P(x_R \mid x_Q)` cancels
in every ratio; an :math:`x_Q` possible under :math:`a` and impossible under :math:`b` gives an
infinite ratio on both sides.  (:math:`\ge` is also Lemma 1.)

**Theorem (far-set form of the optimum).**

$$
\sigma_i^* = \min_{A \subseteq V \setminus \{i\}} f(A), \qquad f(A) = \frac{n - \mathrm{card}(A)}{\epsilon - e(A)}
$$

(:math:`+\infty` when :math:`e(A) \ge \epsilon`).  *Proof.* For a quilt :math:`Q` with far set :math:`A`,
:math:`\mathrm{card}(X_N) = n - \mathrm{card}(A)` and, by Lemma 2, :math:`e(Q) = e(A)`: :math:`\sigma(Q) = f(A)`, so
:math:`\sigma_i^* \ge \min_A f(A)`.  Conversely, for any :math:`A` the quilt :math:`Q = A` has
:math:`R(Q) \supseteq \emptyset` and :math:`e(Q) = e(A)`, so its score is at most :math:`f(A)`.

So the search is over far sets, and a lower bound needs, for every far set
in a region of the search space, a lower bound on :math:`\mathrm{card}(X_N) = n - \mathrm{card}(A)`
and on :math:`e(A)` together (the score is increasing in both).

**Corollary (single-node bound).**  Let :math:`s_{(1)} \le \cdots \le s_{(n-1)}` be the
influences :math:`e(\{X_v\} \mid X_i)` of the single nodes :math:`v \ne i`, sorted.  A far set of
card :math:`k` contains a node of influence :math:`\ge s_{(k)}`, so by Lemma 1 :math:`e(A) \ge s_{(k)}`:

$$
\sigma_i^* \ge \min_{k = 0, \ldots, n-1} \frac{n - k}{\epsilon - s_{(k)}} \qquad (s_{(0)} = 0).
$$

It costs :math:`n - 1` small influence queries (none for nodes d-separated from :math:`X_i`
by the empty set, whose influence is 0) and is often close: on ALARM at
:math:`\epsilon = 1` it gives 31.37 for the worst node CO, whose best structured
quilt scores 32.59.  :mod:`puffgm.networks.quilt_search` refines it by branch and
bound until it meets the best quilt found.

**Separator reduction.**  The influence of a large far set is computed on a
small quilt: with :math:`H = \mathrm{An}(A \cup \{i\})` and :math:`M` the moral graph of the DAG
restricted to :math:`H`, let :math:`C` be the component of :math:`X_i` in :math:`M - A` and
:math:`Q^*(A) = A \cap \mathrm{neighbours}_M(C)`.  :math:`Q^*(A)` separates :math:`i` from
:math:`A \setminus Q^*(A)` in :math:`M`, which is the moral graph of
:math:`\mathrm{An}(\{i\} \cup A) = \mathrm{An}(\{i\} \cup Q^*(A) \cup (A \setminus Q^*(A)))`, so by
Lauritzen's criterion :math:`Q^*(A)` d-separates :math:`X_i` from :math:`A \setminus Q^*(A)` and
:math:`e(A) = e(Q^*(A))` (Lemma 2 with Lemma 1).

Floating point
--------------
Influences come from log-space exact inference with rounding errors of about
:math:`10^{-15}`; every influence that enters a *lower* bound is lowered by
:data:`INFLUENCE_SLACK` (:math:`10^{-9}`), so a bound can only err on the safe side.
"""

from __future__ import annotations

import math

import numpy as np

from puffgm.core.validation import check_positive_finite, check_positive_int
from puffgm.networks.influence import InfluenceEngine
from puffgm.networks.priors import PriorClass, load_prior_class
from puffgm.networks.quilts import ancestral_set, remote_nodes
from puffgm.networks.secrets import resolve_secrets

__all__ = [
    "INFLUENCE_SLACK",
    "far_set_quilt",
    "single_influences",
    "single_node_bound",
    "far_set_bound",
    "network_lower_bound",
]

#: Every influence entering a lower bound is lowered by this much (rounding safety).
INFLUENCE_SLACK = 1e-9


def far_set_quilt(dag, node, far) -> frozenset:
    r""":math:`Q^*(A)`: the part of a far set :math:`A` that d-separates ``node`` from the rest of :math:`A`.

    Parameters
    ----------
    dag : networkx.DiGraph
    node : node of ``dag``
        :math:`X_i`.
    far : iterable of nodes
        :math:`A`, not containing ``node``.

    Returns
    -------
    frozenset
        :math:`Q^*(A) \subseteq A` with :math:`X_i` d-separated from :math:`A \smallsetminus Q^*(A)` given
        :math:`Q^*(A)`, so :math:`e(A) = e(Q^*(A))` (module docstring, separator reduction).

    Examples
    --------
    >>> import networkx as nx
    >>> g = nx.DiGraph([("a", "b"), ("b", "c"), ("c", "d")])
    >>> sorted(far_set_quilt(g, "a", {"c", "d"}))
    ['c']
    """
    far = set(far)
    if not far:
        return frozenset()
    anc = ancestral_set(dag, far | {node})  # H = An(A ∪ {i})
    # breadth-first search from i in moral(H) minus A; A-nodes touched form Q*
    seen = {node}
    touched = set()
    stack = [node]
    while stack:
        u = stack.pop()
        nbrs = set(dag.predecessors(u))
        for c in dag.successors(u):
            if c in anc:
                nbrs.add(c)
                nbrs.update(dag.predecessors(c))  # co-parents (married in the moral graph)
        nbrs.discard(u)
        for w in nbrs:
            if w in far:
                touched.add(w)
            elif w not in seen:
                seen.add(w)
                stack.append(w)
    return frozenset(touched)


def single_influences(engine, node, slack: float = INFLUENCE_SLACK) -> dict:
    r"""Lower bounds on :math:`e(\{X_v\} \mid X_i)` for every :math:`v \ne i`: the exact value minus ``slack``.

    Floored at 0.

    Nodes d-separated from ``node`` by the empty set have influence exactly 0
    and cost no query.
    """
    dag = engine.prior_class.dag
    independent = remote_nodes(dag, node, ())
    out = {}
    for v in engine.prior_class.nodes:
        if v == node:
            continue
        if v in independent:
            out[v] = 0.0
        else:
            e = engine.max_influence(node, (v,)).value
            out[v] = max(0.0, e - slack) if math.isfinite(e) else math.inf
    return out


def far_set_bound(n: int, k_in: int, e_in: float, tail, *, epsilon: float) -> float:
    r"""Min of :math:`f` over far sets :math:`A \cup J`, :math:`J \subseteq T`: a lower bound on a region of the search.

    Parameters
    ----------
    n : int
        Number of nodes of the network.
    k_in : int
        :math:`\mathrm{card}(A)`, the nodes already in the far set.
    e_in : float
        A lower bound on :math:`e(A)`.
    tail : 1-D array, ascending
        Lower bounds on the single-node influences of the nodes :math:`T` that may still join.
    epsilon : float
        The privacy parameter of the scores.

    Returns
    -------
    float
        :math:`\min_{0 \le j \le \mathrm{card}(T)} (n - k_{\text{in}} - j) / (\epsilon - \max(e_{\text{in}}, t_{j-1}))`
        with :math:`t` = ``tail``:
        a :math:`j`-subset :math:`J` of :math:`T` contains a node of influence :math:`\ge t_{j-1}`, so by
        Lemma 1 :math:`e(A \cup J) \ge \max(e(A), t_{j-1})`, and
        :math:`\mathrm{card}(X_N) = n - k_{\mathrm{in}} - j`.
    """
    best = (n - k_in) / (epsilon - e_in) if e_in < epsilon else math.inf
    if len(tail):
        ej = np.maximum(e_in, tail)
        ok = ej < epsilon
        if ok.any():
            num = n - k_in - np.arange(1, len(tail) + 1, dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                vals = np.where(ok, num / np.where(ok, epsilon - ej, 1.0), np.inf)
            best = min(best, float(vals.min()))
    return best


def single_node_bound(engine, node, *, epsilon: float) -> float:
    r"""The single-node lower bound on :math:`\sigma_i^*` (module docstring, Corollary).

    Parameters
    ----------
    engine : InfluenceEngine
        Of a class with one prior (for a class, take the max over its priors).
    node : str
        The protected node :math:`X_i`.
    epsilon : float
        The privacy parameter of the scores.

    Returns
    -------
    float
        A value :math:`\le` the smallest score any Markov quilt of ``node`` can have.

    Examples
    --------
    >>> from puffgm.networks.priors import load_prior_class
    >>> from puffgm.networks.influence import InfluenceEngine
    >>> eng = InfluenceEngine(load_prior_class("example:asia"))
    >>> round(single_node_bound(eng, "either", epsilon=4.0), 4) <= 2.0
    True
    """
    s = np.sort(np.fromiter(single_influences(engine, node).values(), float))
    return far_set_bound(len(engine.prior_class.nodes), 0, 0.0, s, epsilon=float(epsilon))


def network_lower_bound(prior, *, epsilon, secrets=None, protected=None, max_nodes=None):
    r"""A certified lower bound on the best :math:`\sigma_{\max}` any Markov quilts can give, without calibrating.

    The max, over priors of the class and over protected nodes, of the
    single-node bound (module docstring, Corollary): every node's bound is
    below its optimum :math:`\sigma_i^*`, so the max is below :math:`\max_i \sigma_i^*` (and, for a
    class, below the max over priors, as puffgm's calibration is).  Any subset
    of the nodes gives a valid, possibly weaker, bound: ``max_nodes`` takes the
    nodes of highest degree in the moral graph first (hubs need the most noise).
    Useful on networks whose calibration is slow: a bound close to the group-DP
    baseline shows that no Markov quilt can do much better than group DP.

    Parameters
    ----------
    prior : anything :func:`puffgm.networks.priors.load_prior_class` accepts
    epsilon : float
        The privacy parameter, finite and > 0.
    secrets : SecretSpec, optional
    protected : iterable of str, optional
    max_nodes : int or None
        Bound at most this many nodes (None: every protected node).

    Returns
    -------
    (float, str)
        The bound and the node that attains it.

    Examples
    --------
    >>> bound, node = network_lower_bound("example:asia", epsilon=4.0)
    >>> from puffgm.networks.calibration import calibrate
    >>> bound <= calibrate("example:asia", epsilon=4.0).sigma_max
    True
    """
    epsilon = check_positive_finite(epsilon, "epsilon", "network_lower_bound")
    secrets = resolve_secrets(secrets, protected, "network_lower_bound")
    pc = load_prior_class(prior)
    nodes = list(secrets.protected_nodes(pc))
    if max_nodes is not None:
        max_nodes = check_positive_int(max_nodes, "max_nodes", "network_lower_bound")
        import networkx as nx

        moral = nx.moral_graph(pc.dag)
        nodes = sorted(nodes, key=lambda v: (-moral.degree(v), pc.nodes.index(v)))[:max_nodes]
    best, arg = -math.inf, None
    for theta in pc.priors:
        engine = InfluenceEngine(PriorClass([theta]), secrets)
        for v in nodes:
            b = single_node_bound(engine, v, epsilon=epsilon)
            if b > best:
                best, arg = b, v
    return float(best), arg
