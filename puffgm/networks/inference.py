r"""Exact marginals of a discrete Bayesian network, with exact zeros and no false underflow.

Max-influence needs the joint law of a quilt :math:`X_Q` and a node :math:`X_i`,
:math:`\log P(X_Q = x_Q, X_i = a)`, for many quilts.  Three exact roads compute it:

* **ancestral elimination** (the reference): variable elimination restricted
  to the ancestral set :math:`\mathrm{An}(Q \cup \{i\})` (barren descendants sum to one and are
  dropped), greedy min-size order;
* **junction-tree subtree**: the network's junction tree (elimination tree of a
  greedy min-size order of the moral graph) is calibrated once; a query uses
  only the Steiner subtree of cliques covering it, :math:`P(C_{\mathrm{root}})` times
  :math:`P(C_w \mid S_w)` for the other cliques;
* **pairwise pass**: :math:`\log P(X_i, X_j)` for every :math:`j` at once, from one outward
  pass of the junction tree with the evidence :math:`X_i = a` on a batch axis
  (:meth:`LogVariableElimination.pair_log_marginals`).

A query is first planned symbolically on both of the first two roads (the greedy
min-size elimination order on the interaction graph as bitmasks, its largest table
and its cost, the sum of the product tables' entries): it is refused from the plan,
before any contraction, when the reference route (the subtree when it has fewer
variables to sum out than the ancestral set, else the ancestral set) needs a table
past the limit, and otherwise contracted along the cheaper road whose plan fits.

Every road multiplies and sums out with ``numpy.einsum`` in probability space,
each intermediate table scaled to maximum 1 with its log-scale kept apart, and
carries a certified lower bound on every positive entry (the sum of the logs
of the factors' smallest positive entries); if that bound falls below 1e-280
the query is redone in log space (products as sums of logs, summing out as a
max-shifted log-sum-exp), so a tiny probability never underflows to a false
zero.  Zeros are exact on every road: a product is zero iff a factor entry is,
a sum iff every term is, and a conditional P(C | S) is set to 0 where P(S) = 0
(then P(C) = 0 as well).  Intermediate tables are bounded by
``max_table_entries`` (:class:`~puffgm.exceptions.InferenceLimitError` names the
limit and the option).
"""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from puffgm.core.kernels import log_sum_exp
from puffgm.exceptions import InferenceLimitError

__all__ = ["LogVariableElimination", "logsumexp_axis", "elimination_tree", "DEFAULT_MAX_TABLE_ENTRIES"]

#: Largest intermediate table (entries) an exact marginal may build: 2**25 doubles, 256 MiB.
DEFAULT_MAX_TABLE_ENTRIES = 1 << 25
#: Total entries of the cached marginals (2**22 doubles, 32 MiB).
_CACHE_MAX_ENTRIES = 1 << 22
#: Pair tables kept by ``scaled_marginal`` for the other direction (networks without a junction tree):
#: at most this many tables, and this many entries in all (32 MiB).
_PAIR_KEEP_MAX = 1 << 17
_PAIR_KEEP_MAX_ENTRIES = 1 << 22
#: Contractions whose joint index space has at least this many entries use einsum's greedy path.
_EINSUM_OPTIMIZE_MIN = 1 << 15
#: The same for a product of two tables (below it einsum's single loop is faster).
_EINSUM_PAIR_OPTIMIZE_MIN = 1 << 22
#: Operands of one einsum call (numpy 1 accepts at most 32, numpy 2 at most 64).
_EINSUM_MAX_OPERANDS = 30
#: The pairwise pass looks for a min-fill tree when the min-size tree has at least this many entries,
#: and runs on it when it has at most this fraction of them (on smaller trees the pass is cheap).
PAIR_MIN_FILL_FROM = 1 << 16
PAIR_MIN_FILL_FRACTION = 0.75
#: Largest junction tree (total clique entries) built for the pairwise road.
PAIR_TREE_MAX_ENTRIES = 1 << 22
#: Largest pairwise pass: total clique entries times the states of the evidence node (the
#: batch axis).  Above it, one small elimination per pair is faster.
PAIR_PASS_MAX_ENTRIES = 1 << 24


def logsumexp_axis(t: np.ndarray, axis: int) -> np.ndarray:
    r""":math:`\log \sum \exp(t)` along ``axis`` with max-shifting; all ``-inf`` gives ``-inf`` (no NaN).

    :func:`puffgm.core.kernels.log_sum_exp` (compiled when numba is installed).
    """
    return log_sum_exp(t, axis)


def elimination_tree(card, fvars, *, max_clique: int | None = None, max_total: int | None = None):
    """The elimination tree of a greedy min-size order of the moral graph (a junction tree).

    Variables are integers 0..n-1.  The greedy order eliminates, at each step,
    the variable whose clique (itself and its current neighbours) has the fewest
    joint states.  Clique k is ``(k,) + its neighbours when eliminated`` and its
    parent is the clique of the first of those neighbours to be eliminated after
    k, so ``cliques[k][1:]`` is the separator towards the parent.

    Parameters
    ----------
    card : sequence of int
        Number of states of each variable.
    fvars : sequence of tuple of int
        The scope of each factor (each CPD's family); these are moralised.
    max_clique, max_total : int, optional
        Give up (return None) when one clique, or all cliques together, would
        have more joint states than this.

    Returns
    -------
    tuple or None
        (order, cliques, parent), or None when a clique would exceed the limit.
    """
    n = len(card)
    nb = _moral_neighbours(n, fvars)

    def weight(k):
        return math.prod(card[u] for u in nb[k]) * card[k]

    heap = [(weight(k), k) for k in range(n)]
    heapq.heapify(heap)
    done = [False] * n
    order: list[int] = []
    cliques: list[Any] = [None] * n  # a tuple once its node is eliminated
    total = 0
    while heap:
        w, k = heapq.heappop(heap)
        if done[k] or w != weight(k):
            continue
        done[k] = True
        order.append(k)
        cliques[k] = (k,) + tuple(sorted(nb[k]))
        total += w
        if (max_total is not None and total > max_total) or (max_clique is not None and w > max_clique):
            return None
        for u in nb[k]:
            nb[u] |= nb[k]
            nb[u].discard(u)
            nb[u].discard(k)
        for u in nb[k]:
            heapq.heappush(heap, (weight(u), u))
    pos = {k: t for t, k in enumerate(order)}
    parent = [min(cliques[k][1:], key=pos.__getitem__) if len(cliques[k]) > 1 else None for k in range(n)]
    return order, cliques, parent


def _moral_neighbours(n, fvars) -> list:
    """Neighbour sets of the moral graph of factors with scopes ``fvars`` over variables 0..n-1."""
    nb: list[set[int]] = [set() for _ in range(n)]
    for fv in fvars:
        for a in fv:
            nb[a].update(fv)
    for k in range(n):
        nb[k].discard(k)
    return nb


def min_fill_order(card, fvars) -> list:
    """A greedy min-fill elimination order of the moral graph of ``fvars``.

    At each step the variable whose elimination adds the fewest edges between its current
    neighbours, ties by the fewest joint states of its clique, then by index.

    Parameters
    ----------
    card : sequence of int
        Number of states of each variable.
    fvars : sequence of tuple of int
        The scope of each factor (each CPD's family); these are moralised.

    Returns
    -------
    list of int
        The order, every variable once.
    """
    n = len(card)
    nb = _moral_neighbours(n, fvars)

    def score(k):
        s = list(nb[k])
        fill = 0
        for i, u in enumerate(s):
            nu = nb[u]
            fill += sum(1 for w in s[i + 1:] if w not in nu)
        return fill, math.prod(card[u] for u in s) * card[k], k

    scores = {k: score(k) for k in range(n)}
    order: list[int] = []
    while scores:
        k = min(scores, key=scores.__getitem__)
        del scores[k]
        order.append(k)
        touched = set(nb[k])
        for u in nb[k]:
            nb[u] |= nb[k]
            nb[u].discard(u)
            nb[u].discard(k)
        for u in list(touched):
            touched |= nb[u]
        for u in touched:
            if u in scores:
                scores[u] = score(u)
    return order


def tree_of_order(card, fvars, order):
    """The elimination tree of a given elimination order (as :func:`elimination_tree` builds it).

    Parameters
    ----------
    card : sequence of int
        Number of states of each variable.
    fvars : sequence of tuple of int
        The scope of each factor; these are moralised.
    order : sequence of int
        Every variable once.

    Returns
    -------
    tuple
        (order, cliques, parent): clique k is ``(k,) + its neighbours when eliminated`` and its
        parent is the clique of the first of those neighbours eliminated after k.
    """
    n = len(card)
    nb = _moral_neighbours(n, fvars)
    cliques: list[Any] = [None] * n
    for k in order:
        cliques[k] = (k,) + tuple(sorted(nb[k]))
        for u in nb[k]:
            nb[u] |= nb[k]
            nb[u].discard(u)
            nb[u].discard(k)
    pos = {k: t for t, k in enumerate(order)}
    parent = [min(cliques[k][1:], key=pos.__getitem__) if len(cliques[k]) > 1 else None for k in range(n)]
    return list(order), cliques, parent


class _Factor:
    __slots__ = ("vars", "table")

    def __init__(self, vars_, table):
        self.vars = tuple(vars_)
        self.table = table


def _align(f: _Factor, target: tuple, cards: dict) -> np.ndarray:
    """View of f's table broadcastable to the axis order ``target``."""
    perm = sorted(range(len(f.vars)), key=lambda k: target.index(f.vars[k]))
    t = np.transpose(f.table, perm) if perm != list(range(len(f.vars))) else f.table
    present = {f.vars[k] for k in perm}
    shape = [cards[v] if v in present else 1 for v in target]
    return t.reshape(shape)


def _multiply(factors, cards) -> _Factor:
    order_: list = []
    for f in factors:
        for v in f.vars:
            if v not in order_:
                order_.append(v)
    target = tuple(order_)
    out: np.ndarray | None = None
    for f in factors:
        a = _align(f, target, cards)
        out = a if out is None else out + a
    assert out is not None  # callers pass at least one factor
    if out.shape != tuple(cards[v] for v in target):
        out = np.broadcast_to(out, tuple(cards[v] for v in target)).copy()
    return _Factor(target, out)


def _log_min_positive(t: np.ndarray) -> float:
    """log of the smallest positive entry of ``t`` (0.0 if there is none)."""
    m = float(np.min(t, where=t > 0, initial=np.inf))
    return math.log(m) if m < math.inf else 0.0


def bit_indices(mask: int) -> list:
    """The set bits of ``mask``, increasing (variable indices of a scope)."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _contract(operands, scope, out_vars) -> np.ndarray:
    """Sum over ``scope - out_vars`` of the product of ``operands`` [(vars, table), ...], one einsum.

    Axis labels are renumbered 0..len(scope)-1 (einsum accepts at most 52).  A large
    contraction goes through einsum's greedy path (pairwise, batched matrix products):
    three or more tables from :data:`_EINSUM_OPTIMIZE_MIN` joint entries, two from
    :data:`_EINSUM_PAIR_OPTIMIZE_MIN`.
    """
    label = {v: k for k, v in enumerate(scope)}
    args = []
    for vars_, table in operands:
        args.append(table)
        args.append([label[v] for v in vars_])
    args.append([label[v] for v in out_vars])
    if len(operands) > 2:
        if _joint_size(operands) >= _EINSUM_OPTIMIZE_MIN:
            return np.einsum(*args, optimize="greedy")
    elif (len(operands) == 2 and operands[0][1].size * operands[1][1].size >= _EINSUM_PAIR_OPTIMIZE_MIN
          and _joint_size(operands) >= _EINSUM_PAIR_OPTIMIZE_MIN):  # the product of sizes bounds the joint
        return np.einsum(*args, optimize="greedy")
    return np.einsum(*args)


def _joint_size(operands) -> int:
    """Entries of the joint index space of ``operands`` [(vars, table), ...]."""
    size: dict[int, int] = {}
    for vars_, table in operands:
        size.update(zip(vars_, table.shape, strict=True))
    return math.prod(size.values())


def _divided(table, top: float, operands):
    """table / top, in place when ``table`` is a contraction's fresh result.

    A contraction that sums out a variable returns new memory, possibly as a permuted
    view of einsum's last intermediate (its greedy path ends in a batched matrix product):
    such a view is divided in place too, not copied (a copy of a table of 2^24 entries
    costs its page faults), unless it shares memory with one of the ``operands``.
    """
    if isinstance(table, np.ndarray) and table.flags.writeable and (
            table.base is None or not any(np.may_share_memory(table, t) for _, t in operands)):
        table /= top
        return table
    return table / top


def _broadcast_to(table, vars_, target) -> np.ndarray:
    """A view of ``table`` (axes ``vars_`` then a batch axis) broadcastable against a table with
    axes ``target`` then the batch axis (``vars_`` a subset of ``target``)."""
    where = {v: k for k, v in enumerate(target)}
    perm = sorted(range(len(vars_)), key=lambda k: where[vars_[k]])
    t = table.transpose(perm + [len(vars_)]) if perm != list(range(len(vars_))) else table
    present = set(vars_)
    return t.reshape(tuple(table.shape[vars_.index(v)] if v in present else 1 for v in target) + (table.shape[-1],))


class _Plan(NamedTuple):
    """A greedy min-size elimination planned symbolically on the factors' scopes: its order, largest table, cost."""

    order: list
    largest: int
    cost: int


class _Route(NamedTuple):
    """The factors a query is contracted from and their elimination order."""

    factors: list
    order: list


class _Subtree(NamedTuple):
    """The factors of the Steiner subtree of the junction tree covering a query, and its variable count."""

    factors: list
    n_vars: int


class _Underflow(Exception):
    """A product could fall below the floating-point range: redo the query in log space."""


#: Smallest log-probability a product of scaled factors may reach in the fast path
#: (1e-280, well above the smallest normal double 2.2e-308).
_LOG_FLOOR = math.log(1e-280)


@dataclass(frozen=True)
class _JunctionTree:
    """The calibrated junction tree of :meth:`LogVariableElimination._tree` (one clique per variable).

    ``cliques[k]`` (variable k first, then its neighbours eliminated later), ``parent[k]`` (None at a
    root), ``beta[k]`` = P(C_k), ``sep[k]`` = P(S_k) on the separator towards the parent (None at a
    root), ``blo[k]`` a lower bound on log of the positive entries of ``beta[k]``, ``biggest`` the
    largest clique table (entries), ``nbrs[k]`` the cliques adjacent to k, ``total`` the entries of
    all cliques, and ``conds`` the conditionals P(C_w | S) built so far (``_conditional``).
    """

    cliques: list
    parent: list
    beta: list
    sep: list
    blo: list
    biggest: int
    nbrs: list
    total: int = 0
    conds: dict = field(default_factory=dict)  # (w, towards) -> (vars, P(C_w | S), bound), filled on use


class LogVariableElimination:
    r"""Exact log-marginals of one :class:`~puffgm.networks.priors.NetworkPrior`.

    Parameters
    ----------
    prior : NetworkPrior
        The network :math:`\theta`.
    cache_size : int
        How many marginals to keep (keyed by the set of query variables).
    max_table_entries : int
        Largest intermediate table an elimination may build; a query that needs a
        larger one raises :class:`~puffgm.exceptions.InferenceLimitError`.

    Notes
    -----
    Two exact roads compute the same marginal.  The fast road multiplies and
    sums out with one ``numpy.einsum`` per eliminated variable in probability
    space, every intermediate table scaled to maximum 1 with its log-scale kept
    apart; it tracks a lower bound on every nonzero product (the sum of the
    logs of the factors' smallest positive entries) and hands the query to the
    log-space road (max-shifted log-sum-exp, :meth:`log_marginal_logspace`)
    as soon as that bound falls below 1e-280, so no positive probability ever
    underflows to a false zero.  Zeros stay exact on both roads: a product is
    zero iff a factor entry is zero, a sum iff every term is.

    Examples
    --------
    >>> from puffgm.networks.priors import load_network
    >>> ve = LogVariableElimination(load_network("example:asia"))
    >>> t = ve.log_marginal(("smoke", "lung"))
    >>> round(float(np.exp(t).sum()), 12)
    1.0
    """

    def __init__(self, prior, cache_size: int = 4096, max_table_entries: int = DEFAULT_MAX_TABLE_ENTRIES):
        self.prior = prior
        self.cards = {n: len(prior.states[n]) for n in prior.nodes}
        self.max_table_entries = int(max_table_entries)
        with np.errstate(divide="ignore"):
            self._logcpt = {n: np.log(prior.cpts[n]) for n in prior.nodes}
        self._cache: OrderedDict = OrderedDict()
        # frozenset of two variables -> (variables, c * P) or (None, None): see scaled_marginal
        self._pairs: OrderedDict = OrderedDict()
        self._pair_entries = 0
        self._cache_size = cache_size
        self._cached_entries = 0
        self._anc: dict[str, frozenset[str]] = {}
        # kept by measurement (python bench/graph_functions.py; docs/architecture.md, "Graph functions"):
        # one nx.ancestors per node is 13-17 times slower on alarm, hailfinder and win95pts
        for n in prior.nodes:  # topological order: parents' ancestor sets are ready
            s = set()
            for p in prior.parents[n]:
                s.add(p)
                s |= self._anc[p]
            self._anc[n] = frozenset(s)
        # integer view for the fast road: node k is prior.nodes[k] (topological order)
        index = {n: k for k, n in enumerate(prior.nodes)}
        self._index = index
        self._card = [len(prior.states[n]) for n in prior.nodes]
        self._size_memo: dict[int, int] = {}
        self._scope_masks: dict[tuple, int] = {}
        self._fvars = [(index[n],) + tuple(index[p] for p in prior.parents[n]) for n in prior.nodes]
        self._ftab = [np.ascontiguousarray(prior.cpts[n], dtype=float) for n in prior.nodes]
        self._flo = [_log_min_positive(t) for t in self._ftab]
        bits: list[int] = []
        for k, n in enumerate(prior.nodes):
            b = 1 << k
            for p in prior.parents[n]:
                b |= bits[index[p]]
            bits.append(b)
        self._anc_bits = bits
        self.fallbacks = 0
        # junction tree for pairwise marginals, built on first use: False until then, None if too large
        self._jt: _JunctionTree | None = None
        self._jt_tried = False  # _tree() builds the tree once; None after that: too large or not certifiable
        self._bfs_cache: dict[int, tuple[dict, dict]] = {}
        # the tree of the pairwise pass: a min-fill tree when it is smaller than the routing tree
        self._pt: _JunctionTree | None = None
        self._pt_tried = False

    def _mask_size(self, mask: int) -> int:
        """Number of joint states of the variables of a bitmask (memoised)."""
        hit = self._size_memo.get(mask)
        if hit is None:
            card = self._card
            hit = math.prod(card[u] for u in bit_indices(mask))
            if len(self._size_memo) >= 1 << 16:
                self._size_memo.clear()
            self._size_memo[mask] = hit
        return hit

    def ancestral_set(self, variables) -> set:
        """An(variables) ∪ variables."""
        out = set(variables)
        for v in variables:
            out |= self._anc[v]
        return out

    def independent(self, a, b) -> bool:
        """True when variables ``a`` and ``b`` have no common ancestor (each one counted among its own
        ancestors): they are d-separated by the empty set, so P(X_a, X_b) = P(X_a) P(X_b)."""
        return not self._anc_bits[self._index[a]] & self._anc_bits[self._index[b]]

    def log_marginal(self, variables) -> np.ndarray:
        """log P(variables) as an array with axes in the given order."""
        variables = tuple(variables)
        key = frozenset(variables)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._compute(key, variables[0] if variables else None)
            self._cache[key] = hit
            self._cached_entries += hit[1].size
            while len(self._cache) > self._cache_size or self._cached_entries > _CACHE_MAX_ENTRIES:
                self._cached_entries -= self._cache.popitem(last=False)[1][1].size
        else:
            self._cache.move_to_end(key)
        f_vars, table = hit
        perm = [f_vars.index(v) for v in variables]
        return np.transpose(table, perm)

    def log_marginal_logspace(self, variables) -> np.ndarray:
        """The same marginal by the log-space road only (reference implementation, no cache)."""
        variables = tuple(variables)
        f_vars, table = self._compute_log(frozenset(variables))
        return np.transpose(table, [f_vars.index(v) for v in variables])

    def scaled_marginal(self, variables):
        r""":math:`c\, P(\text{variables})`, axes in the given order, for an unknown :math:`c > 0`.

        None if the query needs the log-space road.

        Every positive entry is at least 1e-280 (the underflow guard), so ratios of
        entries, such as conditionals P(x | a) = P(x, a) / P(a), are exact to rounding.
        """
        variables = tuple(variables)
        key = frozenset(variables)
        # a pair asked in one direction (the search of X_a asks P(X_a, X_b)) is asked again in the other
        # (the search of X_b): without a junction tree the route does not depend on the order, so the
        # table of the first is the second's, and it is kept until then
        pair = len(key) == 2 and self._tree() is None
        hit = self._pairs.pop(key, None) if pair else None
        if hit is not None:
            self._pair_entries -= 0 if hit[1] is None else hit[1].size
        if hit is None:
            try:
                hit = self._compute_fast(key, variables[0] if variables else None, log=False)
            except _Underflow:
                hit = (None, None)
            if pair:
                self._keep_pair(key, hit)
        f_vars, table = hit
        if f_vars is None or table is None:
            return None
        return np.transpose(table, [f_vars.index(v) for v in variables])

    def _keep_pair(self, key, hit) -> None:
        """Keep a pair's table for :meth:`scaled_marginal` (the oldest go first past the bounds)."""
        pairs = self._pairs
        pairs[key] = hit
        self._pair_entries += 0 if hit[1] is None else hit[1].size
        while len(pairs) > _PAIR_KEEP_MAX or self._pair_entries > _PAIR_KEEP_MAX_ENTRIES:
            old = pairs.popitem(last=False)[1]
            self._pair_entries -= 0 if old[1] is None else old[1].size

    def _compute(self, keep: frozenset, root=None):
        try:
            return self._compute_fast(keep, root)
        except _Underflow:
            self.fallbacks += 1
            return self._compute_log(keep)

    # ----------------------------------------------------------- fast road
    def _too_large(self, size, keep):
        names = ", ".join(sorted(map(str, keep))[:6]) + (", ..." if len(keep) > 6 else "")
        raise InferenceLimitError(
            f"Exact inference on network {self.prior.name!r} for the variables {{{names}}} needs a table of "
            f"{size:.3g} entries, more than the limit max_table_entries={self.max_table_entries} (the network's "
            "treewidth is too large for exact inference on it); raise max_table_entries (--max-table-entries, "
            "8 bytes per entry), lower max_quilt_states or protect fewer nodes."
        )

    def _compute_fast(self, keep: frozenset, root=None, log=True):
        """The fast road: plan both routes, refuse before contracting, answer by the cheaper one.

        The *reference route* is the Steiner subtree of the junction tree when it has fewer
        variables to sum out than the ancestral set, else the ancestral set (the rule that
        decides which quilts are skipped, kept from the releases before routing by cost).  The
        query is refused (:class:`~puffgm.exceptions.InferenceLimitError`) exactly when the
        reference route's greedy elimination (or the final table) needs a table past
        ``max_table_entries``: that is decided from the plan (:meth:`_plan`, bitmasks only),
        before any contraction runs.  An answered query is then contracted along the route of
        smaller estimated cost among those whose plan fits (the marginal is the same on both,
        to rounding; each route carries its own underflow certificate).
        """
        keep_idx = sorted(self._index[v] for v in keep)
        factors, order = self._route(keep_idx, root, keep)
        return self._eliminate(factors, order, keep_idx, keep, log)

    def _route(self, keep_idx, root, keep) -> _Route:
        """(factors, elimination order) of the route that answers the query (see :meth:`_compute_fast`)."""
        limit = self.max_table_entries
        keep_mask = 0
        for k in keep_idx:
            keep_mask |= 1 << k
        total = self._mask_size(keep_mask)
        if total > limit:
            self._too_large(total, keep)
        mask = 0
        for k in keep_idx:
            mask |= self._anc_bits[k]
        anc = [(self._fvars[k], self._ftab[k], self._flo[k]) for k in bit_indices(mask)]
        n_vars = mask.bit_count()
        subtree = None
        if keep_idx:
            subtree = self._subtree_factors(keep_idx, self._index[root] if root in self._index else keep_idx[0])
        plan_a = self._plan(anc, keep_mask)
        if subtree is None or subtree.n_vars >= n_vars:
            if plan_a.largest > limit:
                self._too_large(plan_a.largest, keep)
            return _Route(anc, plan_a.order)
        tree = subtree.factors
        if plan_a.largest <= limit:
            # no plan of the subtree is needed when it surely fits (all its variables together make
            # a table within the limit) and cannot be cheaper: its cost is at least its largest
            # table's entries, since every table takes part in some product
            union = 0
            biggest = 0
            for f in tree:
                union |= self._vars_mask(f[0])
                biggest = max(biggest, f[1].size)
            if plan_a.cost <= biggest and self._mask_size(union) <= limit:
                return _Route(anc, plan_a.order)
        plan_t = self._plan(tree, keep_mask)
        if plan_t.largest > limit:  # the reference route's refusal, before contracting
            self._too_large(plan_t.largest, keep)
        if plan_a.largest <= limit and plan_a.cost < plan_t.cost:
            return _Route(anc, plan_a.order)
        return _Route(tree, plan_t.order)

    def _vars_mask(self, vars_) -> int:
        """The bitmask of a factor's scope (memoised by the scope)."""
        m = self._scope_masks.get(vars_)
        if m is None:
            m = 0
            for v in vars_:
                m |= 1 << v
            if len(self._scope_masks) >= 1 << 16:
                self._scope_masks.clear()
            self._scope_masks[vars_] = m
        return m

    def _plan(self, factors, keep_mask: int) -> _Plan:
        """(order, largest table, cost) of the greedy min-size elimination of ``factors``.

        Symbolic only: the interaction graph of the factors' scopes as neighbour bitmasks
        (the scope of the product that eliminates v is v and its current neighbours, and
        eliminating v joins its neighbours into a clique).  The variables outside
        ``keep_mask`` are eliminated one at a time, each time the one whose product table is
        smallest (ties by index), exactly the order :meth:`_eliminate` follows.  The largest
        table is the largest product table met (the final table included); the cost is the
        sum of the product tables' entries, the multiply-adds of the contractions up to the
        number of tables in each.
        """
        nb: dict[int, int] = {}
        vars_mask = self._vars_mask
        for f in factors:
            m = vars_mask(f[0])
            for v in f[0]:
                nb[v] = nb.get(v, 0) | m
        size_of = self._mask_size
        sizes = {v: size_of(m) for v, m in nb.items() if not keep_mask >> v & 1}
        heap = [(size, v) for v, size in sizes.items()]
        heapq.heapify(heap)
        remaining = set(sizes)
        order: list[int] = []
        largest = 0
        cost = 0
        while remaining:
            size, v = heapq.heappop(heap)
            if v not in remaining or size != sizes[v]:
                continue
            remaining.discard(v)
            order.append(v)
            if size > largest:
                largest = size
            cost += size
            bit = 1 << v
            m = nb.pop(v) & ~bit
            for u in bit_indices(m):
                nb[u] = (nb[u] | m) & ~bit
                if u in remaining:
                    sizes[u] = size_of(nb[u])
                    heapq.heappush(heap, (sizes[u], u))
        final = size_of(keep_mask)
        return _Plan(order, max(largest, final), cost + final)

    def _eliminate(self, factors, order, keep_idx, keep, log=True):
        """Contract ``factors`` eliminating the variables in ``order`` (from :meth:`_plan`), in
        scaled probability space with the underflow guard (:class:`_Underflow`)."""
        fvars, ftab, flo = {}, {}, {}
        holders: dict[int, set[int]] = {}
        for k, (fv, tab, lo) in enumerate(factors):
            fvars[k], ftab[k], flo[k] = fv, tab, lo
            for v in fv:
                holders.setdefault(v, set()).add(k)
        next_id = len(factors)
        logscale = 0.0
        for v in order:
            fids = holders.pop(v)
            # the product's scope, its certified floor and its operands, in the order of ``fids``;
            # the tables leave the pool (a query that raises _Underflow is redone from the start)
            in_scope: set[int] = set()
            lo = 0.0
            operands = []
            for f in fids:
                fv = fvars.pop(f)
                in_scope.update(fv)
                lo += flo.pop(f)
                operands.append((fv, ftab.pop(f)))
                for u in fv:
                    if u != v:
                        holders[u].discard(f)
            if lo < _LOG_FLOOR:
                raise _Underflow
            scope = sorted(in_scope)
            out_vars = tuple(u for u in scope if u != v)
            table = _contract(operands, scope, out_vars)
            top = float(table.max())
            if not top > 0.0:  # an all-zero message: cannot happen for a proper network
                raise _Underflow
            if top != 1.0:
                table = _divided(table, top, operands)
                logscale += math.log(top)
            if not out_vars:
                continue
            # every positive entry is a sum of products >= exp(lo), scaled by 1 / top; the
            # exact smallest entry is taken only when that cheap bound gets close to the floor
            lo -= math.log(top)
            if lo < 0.5 * _LOG_FLOOR:
                lo = _log_min_positive(table)
            fvars[next_id], ftab[next_id], flo[next_id] = out_vars, table, lo
            for u in out_vars:
                holders[u].add(next_id)
            next_id += 1
        fids_left = list(fvars)
        out_vars = tuple(keep_idx)
        if sum(flo[f] for f in fids_left) < _LOG_FLOOR:
            raise _Underflow
        table = _contract([(fvars[f], ftab[f]) for f in fids_left], out_vars, out_vars)
        names = self.prior.nodes
        if not log:
            return tuple(names[u] for u in out_vars), table
        with np.errstate(divide="ignore"):
            logt = np.log(table)
        if logscale:
            logt += logscale
        return tuple(names[u] for u in out_vars), logt

    def _subtree_factors(self, keep_idx, root):
        """Factors of P(vars(T)) over the Steiner subtree T of the junction tree covering
        ``keep_idx``, rooted at the clique of ``root``: P(C_root) and P(C_w | S_w) for the
        other cliques w (S_w the separator towards the root), with 0 where P(S_w) = 0.

        Returns a :class:`_Subtree` (factors, number of variables) or None (no tree, or the query spans
        several components of the network).
        """
        tree = self._tree()
        if tree is None:
            return None
        cliques, beta, blo = tree.cliques, tree.beta, tree.blo
        up, dist = self._bfs(root)
        chosen = set()
        for j in keep_idx:
            best = min(self._var_cliques[j], key=lambda c: (dist.get(c, math.inf), c))
            if best not in dist:
                return None
            chosen.add(best)
        members = {root}
        for c in chosen:
            while c not in members:
                members.add(c)
                c = up[c]
        factors = [(cliques[root], beta[root], blo[root])]
        variables = set(cliques[root])
        for w in members:
            if w == root:
                continue
            variables.update(cliques[w])
            factors.append(self._conditional(w, up[w]))
        return _Subtree(factors, len(variables))

    def _bfs(self, root):
        """(parent towards ``root``, distance) of every clique of root's tree; a few roots are kept."""
        hit = self._bfs_cache.get(root)
        if hit is None:
            assert self._jt is not None  # a root is asked for only once the tree is built
            nbrs = self._jt.nbrs
            up, dist = {root: None}, {root: 0}
            frontier = [root]
            while frontier:
                nxt = []
                for u in frontier:
                    for w in nbrs[u]:
                        if w not in dist:
                            dist[w] = dist[u] + 1
                            up[w] = u
                            nxt.append(w)
                frontier = nxt
            hit = (up, dist)
            if len(self._bfs_cache) >= 8:
                self._bfs_cache.pop(next(iter(self._bfs_cache)))
            self._bfs_cache[root] = hit
        return hit

    def _conditional(self, w, towards, tree=None):
        """(vars, P(C_w | S), lower bound) with S the separator between clique w and its neighbour
        ``towards`` in ``tree`` (default: the routing tree): 0 where P(S) = 0 (P(C_w) is 0 there too)."""
        if tree is None:
            tree = self._jt
        assert tree is not None  # conditionals are asked for only once the tree is built
        key = (w, towards)
        hit = tree.conds.get(key)
        if hit is None:
            cliques, parent, beta, sep, blo = tree.cliques, tree.parent, tree.beta, tree.sep, tree.blo
            child = w if parent[w] == towards else towards
            s_vars = cliques[child][1:]
            cw = cliques[w]
            mu = _contract([(s_vars, sep[child])], sorted(s_vars), tuple(v for v in cw if v in s_vars))
            shape = tuple(self._card[v] if v in s_vars else 1 for v in cw)
            mu = mu.reshape(shape)
            cond = np.divide(beta[w], mu, out=np.zeros_like(beta[w]), where=mu > 0)
            hit = (cw, cond, blo[w])  # P(C_w | S) >= P(C_w) entrywise: P(S) <= 1
            tree.conds[key] = hit
        return hit

    # ------------------------------------------------------- pairwise road
    def pair_log_marginals(self, node, *, dependent_only: bool = False) -> dict | None:
        r""":math:`\log P(X_{\mathrm{node}}, X_j)` for every node :math:`j` connected to ``node``, from one
        junction-tree pass.

        Parameters
        ----------
        node : str
            The evidence node.
        dependent_only : bool
            Only the nodes :math:`j` with a common ancestor with ``node`` (the others are independent
            of it, :meth:`independent`); the pass then skips the parts of the tree that hold none.

        Returns
        -------
        dict or None
            ``{j: table}`` with axes (node, j).  None when the network's junction
            tree exceeds :data:`PAIR_TREE_MAX_ENTRIES`, the pass (the tree times the
            states of ``node``) :data:`PAIR_PASS_MAX_ENTRIES`, one clique times the
            states of ``node`` ``max_table_entries``, or a probability could fall
            below :math:`10^{-280}` on the way (then ask :meth:`log_marginal` per pair).

        Notes
        -----
        The junction tree is the elimination tree of a greedy min-size order of
        the moral graph (one clique :math:`C_k = \{k\} \cup N_k` per variable, parent = the
        first variable of :math:`N_k` eliminated after :math:`k`), calibrated once in scaled
        probability space (Hugin collect and distribute), so every clique holds
        :math:`P(C_k)` and every separator :math:`P(N_k)`.  Evidence :math:`X_{\mathrm{node}} = a`, for all values
        :math:`a` at once (a batch axis), enters the clique of ``node`` and flows out
        along the tree: :math:`P(C_w, a) = P(C_w)\, P(S, a) / P(S)` over the separator
        :math:`S` of each edge, with 0 where :math:`P(S) = 0` (then :math:`P(C_w) = 0` too), so zeros
        are exact; a lower bound on every positive entry (the sum of the logs
        of the smallest positive entries along the path, replaced by the exact
        smallest entry of a clique's table when it falls below :math:`10^{-280}`) guards
        underflow.  The product :math:`P(C_w \mid S)\, P(S, a)` is one multiplication per entry,
        the rounding of ``numpy.einsum``'s.

        The size limits above are those of the min-size tree (they decide when the pass
        answers); the pass itself runs on the elimination tree of a greedy min-fill order
        when that tree has fewer entries in all (:meth:`_pair_tree`), and on the min-size
        tree when the min-fill pass meets the underflow guard.
        """
        tree = self._tree()
        if tree is None:
            return None
        k0 = self._index[node]
        card = self._card
        if tree.biggest * card[k0] > self.max_table_entries or tree.total * card[k0] > PAIR_PASS_MAX_ENTRIES:
            return None
        wanted = None
        if dependent_only:
            anc = self._anc_bits
            wanted = [bool(anc[k] & anc[k0]) for k in range(len(card))]
        small = self._pair_tree()
        out = self._pair_pass(small, k0, wanted)
        if out is None and small is not tree:
            out = self._pair_pass(tree, k0, wanted)
        return out

    def _pair_pass(self, tree, k0, wanted=None) -> dict | None:
        """The pass of :meth:`pair_log_marginals` over ``tree`` with the evidence on variable ``k0``
        (None when the underflow guard is met); with ``wanted`` (a flag per variable), only the
        wanted variables' tables, through the cliques on the way to them."""
        cliques, parent, beta, blo, nbrs = tree.cliques, tree.parent, tree.beta, tree.blo, tree.nbrs
        card = self._card
        needed = None if wanted is None else self._towards(nbrs, k0, wanted)
        # beta'[k]: P(C_k, X_node = a) with the batch axis a last
        start = k0  # clique k holds variable k
        c0 = cliques[start]
        ind = np.zeros((card[k0], card[k0]))
        np.fill_diagonal(ind, 1.0)
        root = _contract([(c0, beta[start]), ((k0, -1), ind)], sorted(set(c0) | {-1}), c0 + (-1,))
        names = self.prior.nodes
        out = {}

        def emit(k, table):  # P(X_node, X_k) from the clique of k (clique k holds variable k)
            if k != k0 and (wanted is None or wanted[k]):
                t = _contract([(cliques[k] + (-1,), table)], sorted(set(cliques[k]) | {-1}), (-1, k))
                with np.errstate(divide="ignore"):
                    out[names[k]] = np.log(t)

        emit(start, root)
        # depth first from the clique of ``node``; the stack holds separator tables P(S, a) only,
        # and one clique table at a time is alive
        todo: list[tuple] = []
        done = {start}

        def push(u, table, lo_u):
            exact = False
            for w in nbrs[u]:
                if w in done or (needed is not None and not needed[w]):
                    continue
                if blo[w] + lo_u < _LOG_FLOOR and not exact:  # the cheap bound is too low: the smallest entry
                    lo_u, exact = _log_min_positive(table), True
                child = w if parent[w] == u else u
                s_vars = cliques[child][1:]
                bs = _contract([(cliques[u] + (-1,), table)], sorted(set(cliques[u]) | {-1}), s_vars + (-1,))
                todo.append((w, u, s_vars, bs, blo[w] + lo_u))
                done.add(w)

        push(start, root, blo[start])
        del root
        while todo:
            w, u, s_vars, bs, bound = todo.pop()
            if bound < _LOG_FLOOR:
                return None
            cvars, cond, _ = self._conditional(w, u, tree)  # P(C_w | S): P(C_w, a) = P(C_w | S) P(S, a)
            table = cond[..., None] * _broadcast_to(bs, s_vars, cvars)  # one rounding, as einsum's
            emit(w, table)
            push(w, table, bound)
        return out

    @staticmethod
    def _towards(nbrs, start, wanted) -> list:
        """For each clique of the tree of ``start``: does it or the part of the tree behind it (seen from
        ``start``) hold a wanted variable (clique k holds variable k)?"""
        up = {start: -1}
        order = [start]
        for u in order:  # breadth first: every clique after the one it is reached from
            for w in nbrs[u]:
                if w not in up:
                    up[w] = u
                    order.append(w)
        needed = [False] * len(nbrs)
        for w in reversed(order):
            if wanted[w] or needed[w]:
                needed[w] = True
                if up[w] >= 0:
                    needed[up[w]] = True
        return needed

    def _home(self, k) -> int:
        self._tree()
        return self._home_of[k]

    def _tree(self):
        """The calibrated junction tree of the greedy min-size order (built once; None if too large
        or not certifiable): the routing's subtrees and the size limits of the pairwise pass."""
        if self._jt_tried:
            return self._jt
        self._jt_tried = True
        n = len(self._card)
        tree = elimination_tree(self._card, self._fvars, max_clique=self.max_table_entries,
                                max_total=PAIR_TREE_MAX_ENTRIES)
        if tree is None:
            return None
        jt = self._calibrated(*tree)
        if jt is None:
            return None
        self._home_of = {k: k for k in range(n)}
        var_cliques: list[list[int]] = [[] for _ in range(n)]
        for k in range(n):
            for v in jt.cliques[k]:
                var_cliques[v].append(k)
        self._var_cliques = var_cliques
        self._jt = jt
        return jt

    def _pair_tree(self):
        """The tree the pairwise pass runs on: the calibrated elimination tree of a greedy min-fill
        order (:func:`min_fill_order`) when the min-size tree has at least :data:`PAIR_MIN_FILL_FROM`
        entries and the min-fill tree at most :data:`PAIR_MIN_FILL_FRACTION` of them and no larger
        clique, else the min-size tree (built once; only when the min-size tree exists)."""
        if self._pt_tried:
            return self._pt
        self._pt_tried = True
        base = self._tree()
        self._pt = base
        if base is None or base.total < PAIR_MIN_FILL_FROM:
            return base
        order, cliques, parent = tree_of_order(self._card, self._fvars, min_fill_order(self._card, self._fvars))
        sizes = [self._mask_size(self._vars_mask(c)) for c in cliques]
        if sum(sizes) <= PAIR_MIN_FILL_FRACTION * base.total and max(sizes) <= base.biggest:
            small = self._calibrated(order, cliques, parent)
            if small is not None:
                self._pt = small
        return self._pt

    def _calibrated(self, order, cliques, parent):
        """The :class:`_JunctionTree` of an elimination tree, calibrated (Hugin collect and distribute
        in scaled probability space); None when a probability could fall below 1e-280."""
        n = len(self._card)
        pos = {k: t for t, k in enumerate(order)}
        # potentials: each CPD goes to the clique of its first-eliminated family member
        ops: list[list[tuple]] = [[] for _ in range(n)]
        for v, fv in enumerate(self._fvars):
            home = min(fv, key=pos.__getitem__)
            ops[home].append((fv, self._ftab[v], self._flo[v]))
        phi: list[Any] = [None] * n
        msg: list[Any] = [None] * n
        for k in order:  # collect: children are eliminated before their parent
            c = cliques[k]
            if sum(o[2] for o in ops[k]) < _LOG_FLOOR:
                return None
            operands = [(o[0], o[1]) for o in ops[k]]
            while len(operands) > _EINSUM_MAX_OPERANDS:  # einsum's limit on operands: multiply in groups
                head, operands = operands[:_EINSUM_MAX_OPERANDS], operands[_EINSUM_MAX_OPERANDS:]
                scope = tuple(sorted({v for vs, _ in head for v in vs}))
                operands.insert(0, (scope, _contract(head, scope, scope)))
            t = _contract(operands, sorted(c), c)
            top = float(t.max())
            if not top > 0:
                return None
            phi[k] = t / top
            if parent[k] is not None:
                m = phi[k].sum(axis=0)
                m /= m.max()
                msg[k] = m
                ops[parent[k]].append((c[1:], m, _log_min_positive(m)))
        beta: list[Any] = [None] * n
        sep: list[Any] = [None] * n
        blo = [0.0] * n
        for k in reversed(order):  # distribute: parents before children
            c = cliques[k]
            if parent[k] is None:
                b = phi[k]
            else:
                p = parent[k]
                mu = _contract([(cliques[p], beta[p])], sorted(cliques[p]), c[1:])
                sep[k] = mu
                if _log_min_positive(phi[k]) + _log_min_positive(mu) < _LOG_FLOOR:
                    return None
                ratio = np.divide(mu, msg[k], out=np.zeros_like(mu), where=msg[k] > 0)
                b = phi[k] * ratio[None]
            beta[k] = b / b.sum()
            blo[k] = _log_min_positive(beta[k])
        nbrs: list[list[int]] = [[] for _ in range(n)]
        for k in range(n):
            if parent[k] is not None:
                nbrs[k].append(parent[k])
                nbrs[parent[k]].append(k)
        return _JunctionTree(cliques=cliques, parent=parent, beta=beta, sep=sep, blo=blo,
                             biggest=max(b.size for b in beta), nbrs=nbrs, total=sum(b.size for b in beta))

    # ------------------------------------------------------------ log road
    def _compute_log(self, keep: frozenset):
        prior = self.prior
        cards = self.cards
        nodes = self.ancestral_set(keep)
        factors = [_Factor((n,) + prior.parents[n], self._logcpt[n]) for n in prior.nodes if n in nodes]
        elim = set(nodes) - set(keep)
        while elim:
            # greedy min-size: the variable whose product table is smallest
            best, best_size, best_fs = None, math.inf, None
            for v in elim:
                fs = [f for f in factors if v in f.vars]
                scope: set[str] = set()
                for f in fs:
                    scope.update(f.vars)
                size = math.prod(cards[u] for u in scope)
                if size < best_size or (size == best_size and v < best):
                    best, best_size, best_fs = v, size, fs
            if best_size > self.max_table_entries:
                self._too_large(best_size, keep)
            prod = _multiply(best_fs, cards)
            ax = prod.vars.index(best)
            reduced = _Factor(prod.vars[:ax] + prod.vars[ax + 1 :], logsumexp_axis(prod.table, ax))
            factors = [f for f in factors if best not in f.vars] + [reduced]
            elim.discard(best)
        final = _multiply(factors, cards) if factors else _Factor((), np.zeros(()))
        # normalise away nothing: factors over an ancestral set already sum to one
        return final.vars, final.table
