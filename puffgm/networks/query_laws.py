r"""Exact conditional laws of a sum query on a Bayesian network: a junction tree with a partial-sum axis.

For :math:`F = \sum_i s_i(X_i)` with integer scores (shifted so that each node's
smallest score is 0), every factor of the computation carries, besides its
variables, an axis ``g`` for the partial sum of the scores of the variables
already summed into it.  Multiplying two factors convolves their ``g`` axes;
summing out a variable :math:`X_k` first shifts the ``g`` axis by :math:`s_k(x_k)`.  One
upward and one downward pass over the junction tree (the elimination tree of
a greedy min-size order, :func:`puffgm.networks.inference.elimination_tree`)
give at the clique of each protected node the joint law
:math:`\log P(X_k = x, G = g)`, hence :math:`P(G \mid X_k = x)`, for every node at once: the cost
is about twice one variable elimination, with factors longer by the partial-sum
axis (at most the largest value of :math:`F` plus one).

Everything is in log space: convolutions are log-sum-exps of sums of logs,
never FFTs, so a mass of 1e-300 or 1e-3000 (a log-mass) keeps its relative
precision; the loss of a Laplace mixture and W_inf depend on such tails (see
:mod:`puffgm.mechanisms.query`).  Zero probabilities are exact ``-inf``.

Only the ancestral set of the scored and protected nodes is used: the other
nodes are barren (they sum to one).
"""

from __future__ import annotations

import time

import numpy as np

from puffgm.core.kernels import COMPILED_MIN_GRID_SUM, log_convolve, log_convolve_grid, log_sum_exp
from puffgm.core.laws import NodeLaws
from puffgm.core.query import BoundQuery
from puffgm.exceptions import InferenceLimitError, TimeLimitError
from puffgm.networks.inference import DEFAULT_MAX_TABLE_ENTRIES, elimination_tree, logsumexp_axis

__all__ = ["network_query_laws", "network_joint_laws", "group_sensitivity", "DEFAULT_MAX_SUM_LENGTH",
           "DEFAULT_MAX_GRID_TABLE_ENTRIES", "SumFactor"]

#: Largest partial-sum axis (the largest value of F on the grid, plus one).
DEFAULT_MAX_SUM_LENGTH = 1 << 16

#: Largest clique of the junction tree times the grid's cells prod_j (n_j + 1) of a workload
#: (:func:`network_joint_laws`), 512 MiB per table: the downward pass builds, at every clique, the
#: clique's table over the whole grid.  Twice the networks' default (2^25), so that four counts on
#: hepar2 (its largest clique of 384 states times 18 x 18 x 18 x 20 = 116640 cells, 4.5e7 entries) fit.
DEFAULT_MAX_GRID_TABLE_ENTRIES = 1 << 26

_SUGGEST = "use the Markov Quilt Mechanism (--method exact), which does not depend on the query"


class SumFactor:
    r"""A log-space table over some variables and trailing partial-sum axes.

    One query has one partial-sum axis; a workload of :math:`k` queries has :math:`k` of them, a
    grid whose cell :math:`g` holds the partial sums :math:`(g_1, \dots, g_k)` (:func:`network_joint_laws`).

    Attributes
    ----------
    vars : tuple of int
        The variables of the leading axes, in axis order.
    table : ndarray
        Shape ``(card of each var...) + (length of each partial-sum axis...)``.
    """

    __slots__ = ("vars", "table")

    def __init__(self, vars_, table):
        self.vars = tuple(vars_)
        self.table = table

    @property
    def length(self) -> int:
        """Length of the (last) partial-sum axis."""
        return self.table.shape[-1]

    @property
    def grid(self) -> int:
        """The number of partial-sum axes."""
        return self.table.ndim - len(self.vars)

    def aligned(self, scope: tuple) -> np.ndarray:
        """The table with its variable axes in ``scope`` order (size-1 axes for absent variables)."""
        nv = len(self.vars)
        perm = sorted(range(nv), key=lambda j: scope.index(self.vars[j]))
        t = np.transpose(self.table, perm + list(range(nv, self.table.ndim)))
        present = set(self.vars)
        shape, it = [], iter(t.shape[:nv])
        for v in scope:
            shape.append(next(it) if v in present else 1)
        return t.reshape(tuple(shape) + t.shape[nv:])

    def sum_to(self, keep: tuple) -> SumFactor:
        """Sum out every variable not in ``keep`` (log-sum-exp), axes then in ``keep`` order."""
        t = self.table
        for j in sorted((j for j, v in enumerate(self.vars) if v not in keep), reverse=True):
            t = logsumexp_axis(t, j) if self.grid == 1 else log_sum_exp(t, j, min_compiled=COMPILED_MIN_GRID_SUM)
        rest = [v for v in self.vars if v in keep]
        return SumFactor(rest, t).reordered(tuple(v for v in keep if v in rest))

    def reordered(self, scope: tuple) -> SumFactor:
        """The same factor with its variables in ``scope`` order (scope holds exactly its variables)."""
        if scope == self.vars:
            return self
        perm = [self.vars.index(v) for v in scope]
        return SumFactor(scope, np.transpose(self.table, perm + list(range(len(self.vars), self.table.ndim))))


def convolve(f: SumFactor, g: SumFactor, scope: tuple) -> SumFactor:
    """The product of two factors over ``scope``, their partial-sum axes convolved (in log space).

    ``out[x, s] = log sum_t exp(f[x, t] + g[x, s - t])``: a sum of products of
    non-negative terms evaluated in log space (:func:`puffgm.core.kernels.log_convolve`,
    compiled when numba is installed), so no relative precision is lost however small a
    term is.  With several partial-sum axes, s and t are cells of the grid
    (:func:`puffgm.core.kernels.log_convolve_grid`).
    """
    if f.grid == 1:
        return SumFactor(scope, log_convolve(f.aligned(scope), g.aligned(scope)))
    return SumFactor(scope, log_convolve_grid(f.aligned(scope), g.aligned(scope), f.grid))


def add_score(f: SumFactor, var: int, scores: np.ndarray) -> SumFactor:
    """Shift the partial-sum axes by the score of ``var``'s state: out[.., x, s + scores[x]] = f[.., x, s].

    ``scores`` has one entry per state (one partial-sum axis) or one row per state (a grid: the
    score of each statistic).
    """
    if not np.any(scores):
        return f
    j = f.vars.index(var)
    t = np.moveaxis(f.table, j, 0)
    rows = np.asarray(scores).reshape(len(scores), -1)
    grid = t.shape[t.ndim - rows.shape[1]:]
    out = np.full(t.shape[:t.ndim - rows.shape[1]] + tuple(n + int(m) for n, m in zip(grid, rows.max(axis=0),
                                                                                        strict=True)), -np.inf)
    for x, sc in enumerate(rows):
        out[(x, Ellipsis) + tuple(slice(int(c), int(c) + n) for c, n in zip(sc, grid, strict=True))] = t[x]
    return SumFactor(f.vars, np.moveaxis(out, 0, j))


def group_sensitivity(prior_class, query: BoundQuery) -> int:
    """Group-DP sensitivity of the query in grid units: the largest score range of a connected component.

    Group differential privacy protects together every group of correlated
    records; in a Bayesian network these are the connected components of the
    DAG, and changing a whole component changes F by at most the sum of its
    nodes' score ranges.
    """
    import networkx as nx

    return max((query.range_of(c) for c in nx.weakly_connected_components(prior_class.dag)), default=0)


class _Tree:
    """The junction tree shared by every prior of the class, on the relevant nodes.

    ``scored`` maps a node to its scores: one per state (one partial-sum axis) or a row per state
    (a grid of ``grid`` axes); ``cells`` is the largest number of partial-sum cells a clique's table
    carries (the axis length, or the grid's cells), ``what`` names them in the refusal.
    """

    def __init__(self, prior, keep: list, scored: dict, cells: int, max_entries: int, what: str):
        self.names = keep
        index = {n: i for i, n in enumerate(keep)}
        self.card = [len(prior.states[n]) for n in keep]
        self.fvars = [(index[n],) + tuple(index[p] for p in prior.parents[n]) for n in keep]
        tail = next(iter(scored.values())).shape[1:] if scored else ()
        self.grid = tail[0] if tail else 1
        self.scores = [scored[n] if n in scored else np.zeros((c,) + tail, dtype=np.int64)
                       for n, c in zip(keep, self.card, strict=True)]
        tree = elimination_tree(self.card, self.fvars, max_clique=max(1, max_entries // cells))
        if tree is None:
            raise InferenceLimitError(
                f"A clique of the junction tree times {what} exceeds max_table_entries = {max_entries}; {_SUGGEST}.")
        self.order, self.cliques, self.parent = tree
        pos = {k: t for t, k in enumerate(self.order)}
        self.home: list[list[int]] = [[] for _ in keep]
        for v, fv in enumerate(self.fvars):
            self.home[min(fv, key=pos.__getitem__)].append(v)
        self.children: list[list[int]] = [[] for _ in keep]
        for k in self.order:
            if self.parent[k] is not None:
                self.children[self.parent[k]].append(k)
        self.roots = [k for k in self.order if self.parent[k] is None]


def _base(tree: _Tree, prior, k: int) -> SumFactor:
    """Clique k's potential: its assigned CPDs (logs summed) and the score of variable k."""
    scope = tree.cliques[k]
    ones = (1,) * tree.grid
    shape = tuple(tree.card[v] for v in scope) + ones
    t = np.zeros(shape)
    with np.errstate(divide="ignore"):
        for v in tree.home[k]:
            cpd = np.log(prior.cpts[tree.names[v]])
            t = t + SumFactor(tree.fvars[v], cpd.reshape(cpd.shape + ones)).aligned(scope)
    return add_score(SumFactor(scope, np.broadcast_to(t, shape).copy()), k, tree.scores[k])


def _unit(grid: int = 1) -> SumFactor:
    return SumFactor((), np.zeros((1,) * grid))


def _product(factors, scope) -> SumFactor:
    out = factors[0]
    for f in factors[1:]:
        out = convolve(out, f, scope)
    return out if out.vars == scope else convolve(out, _unit(out.grid), scope)


def _passes(tree: _Tree, prior, wanted: set, deadline):
    """Upward and downward passes; yields (k, log P(X_k, G)) for each wanted variable k."""
    base = {}
    up: dict[int, SumFactor] = {}
    for k in tree.order:  # upward: children before parents
        _check_time(deadline)
        base[k] = _base(tree, prior, k)
        full = _product([base[k]] + [up[c] for c in tree.children[k]], tree.cliques[k])
        up[k] = full.sum_to(tree.cliques[k][1:])
    down = {}
    for r in tree.roots:
        others = [up[o] for o in tree.roots if o != r]
        down[r] = _product(others, ()) if others else _unit(tree.grid)
    for k in reversed(tree.order):  # downward: parents before children
        _check_time(deadline)
        scope = tree.cliques[k]
        kids = tree.children[k]
        items = [convolve(base[k], down[k], scope)] + [up[c] for c in kids]
        prefix = [items[0]]
        for f in items[1:]:
            prefix.append(convolve(prefix[-1], f, scope))
        full = prefix.pop()  # the clique's whole table: used once, then freed (the largest of the pass)
        if k in wanted:
            yield k, full.sum_to((k,)).table
        del full, base[k], down[k]
        suffix = None
        for c in reversed(kids):  # prefix[-1] leaves out c and the kids after it, suffix holds those after it
            rest = prefix.pop()
            if suffix is not None:
                rest = convolve(rest, suffix, scope)
            down[c] = rest.sum_to(tree.cliques[c][1:])
            item = items.pop()  # up[c]
            suffix = item if suffix is None else convolve(item, suffix, scope)
            del rest, item, up[c]


def _check_time(deadline):
    if deadline is not None and time.monotonic() > deadline:
        raise TimeLimitError(f"The time limit passed while computing the query's conditional laws; {_SUGGEST}.")


def _relevant(prior_class, nodes) -> list:
    """The ancestral set of ``nodes``, in the class's (topological) order."""
    import networkx as nx

    keep = set(nodes).union(*(nx.ancestors(prior_class.dag, n) for n in nodes))
    return [n for n in prior_class.nodes if n in keep]


def network_query_laws(prior_class, query: BoundQuery, secrets, *, max_sum_length: int = DEFAULT_MAX_SUM_LENGTH,
                       max_table_entries: int = DEFAULT_MAX_TABLE_ENTRIES, deadline: float | None = None) -> list:
    """The conditional laws of the query given each state of each protected node, for every prior.

    Parameters
    ----------
    prior_class : PriorClass
    query : BoundQuery
        Bound to the class's nodes.
    secrets : SecretSpec
        The protected nodes and their discriminative pairs.
    max_sum_length, max_table_entries : int
        Limits on the partial-sum axis and on clique entries times its length;
        InferenceLimitError (naming the limit) beyond them.
    deadline : float, optional
        ``time.monotonic()`` value after which TimeLimitError is raised.

    Returns
    -------
    list of NodeLaws
        One per protected node and prior.
    """
    if query.total + 1 > max_sum_length:
        raise InferenceLimitError(
            f"The query's partial-sum axis has {query.total + 1} entries, over the limit max_sum_length = "
            f"{max_sum_length}; {_SUGGEST}.")
    scored = {n: query.score_vector(n) for n in query.nodes}
    what = f"the partial-sum axis ({query.total + 1} entries)"
    return _node_laws(prior_class, scored, secrets, (query.total + 1, max_table_entries, what), deadline)


def network_joint_laws(prior_class, workload, secrets, *, max_sum_length: int = DEFAULT_MAX_SUM_LENGTH,
                       max_table_entries: int = DEFAULT_MAX_GRID_TABLE_ENTRIES, deadline: float | None = None) -> list:
    r"""The joint laws of a workload's k grid sums given each state of each protected node, for every prior.

    The junction tree of :func:`network_query_laws` with a grid of :math:`k` partial-sum axes
    instead of one: a factor's table carries, besides its variables, the partial sums
    :math:`(g_1, \dots, g_k)` of the :math:`k` statistics over the variables already summed into it;
    multiplying two factors convolves their grids (:func:`puffgm.core.kernels.log_convolve_grid`),
    summing out :math:`X_v` shifts the grid by the row of scores :math:`(s_1(x_v), \dots, s_k(x_v))`.  The
    same log-space arithmetic, with exact zeros, no FFT and no truncation.

    Parameters
    ----------
    prior_class : PriorClass
    workload : BoundWorkload
        Bound to the class's nodes (:class:`puffgm.core.workload.BoundWorkload`).
    secrets : SecretSpec
    max_sum_length : int
        The longest axis of one statistic (:math:`n_j + 1`).
    max_table_entries : int
        The limit on clique entries times the grid's cells :math:`\prod_j (n_j + 1)`, the size of the
        largest table of the downward pass (default :data:`DEFAULT_MAX_GRID_TABLE_ENTRIES`).
    deadline : float, optional

    Returns
    -------
    list of NodeLaws
        ``log_cond`` of shape ``(states,) + workload.dims``.
    """
    dims = workload.dims
    if max(dims) > max_sum_length:
        raise InferenceLimitError(
            f"A statistic's partial-sum axis has {max(dims)} entries, over the limit max_sum_length = "
            f"{max_sum_length}; {_SUGGEST}.")
    what = f"the grid of partial sums ({workload.joint_length} cells, {' x '.join(map(str, dims))})"
    return _node_laws(prior_class, workload.node_score_rows(), secrets, (workload.joint_length, max_table_entries,
                                                                          what), deadline)


def _node_laws(prior_class, scored: dict, secrets, limits: tuple, deadline) -> list:
    """NodeLaws of every prior and protected node from the passes (:func:`_passes`) over the scored nodes."""
    cells, max_entries, what = limits
    protected = secrets.protected_nodes(prior_class)
    pairs = {n: secrets.value_pairs(prior_class, n) for n in protected}
    keep = _relevant(prior_class, list(scored) + list(protected))
    tree = _Tree(prior_class.priors[0], keep, scored, cells, max_entries, what)
    index = {n: i for i, n in enumerate(keep)}
    wanted = {index[n] for n in protected}
    out = []
    for t, prior in enumerate(prior_class.priors):
        found = dict(_passes(tree, prior, wanted, deadline))
        for n in protected:
            joint = found[index[n]]
            flat = joint.reshape(joint.shape[0], -1)
            marg = logsumexp_axis(flat, 1)
            with np.errstate(invalid="ignore"):
                cond = np.where(np.isfinite(marg)[:, None], flat - marg[:, None], -np.inf).reshape(joint.shape)
            card = len(prior.states[n])
            ps = pairs[n] if pairs[n] is not None else tuple((a, b) for a in range(card) for b in range(a + 1, card))
            out.append(NodeLaws(prior=t, node=n, states=tuple(prior.states[n]), log_cond=cond,
                                log_marginal=marg, pairs=tuple(ps)))
    return out
