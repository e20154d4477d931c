r"""Max-influence of a node on a set of nodes, by exact inference on every prior.

Song, Wang and Chaudhuri, Definition 4.1:

$$
e_\Theta(X_A \mid X_i) = \sup_{\theta \in \Theta} \max_{a, b} \max_{x_A} \log \frac{P(X_A = x_A \mid X_i = a,
  \theta)}{P(X_A = x_A \mid X_i = b, \theta)}.
$$

Computed from the exact joint :math:`\log P(X_A, X_i)` (log-space variable elimination
on the ancestral set, :mod:`puffgm.networks.inference`):
:math:`\log P(x_A \mid a) = \log P(x_A, a) - \log P(a)`.  Zeros are handled exactly:

* a value :math:`a` with :math:`P(X_i = a \mid \theta) = 0` is not a secret under :math:`\theta` (the
  Pufferfish conditioning event has probability zero), so pairs involving it
  are skipped for that :math:`\theta`;
* an assignment :math:`x_A` impossible under both values is skipped (0/0);
* an assignment possible under :math:`a` but impossible under :math:`b` gives an infinite
  influence: the quilt cannot be used (score infinity), which is not an error.

Both orders :math:`(a, b)` and :math:`(b, a)` of every discriminative pair are taken.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from puffgm.core.witness import Witness
from puffgm.networks.inference import DEFAULT_MAX_TABLE_ENTRIES, LogVariableElimination
from puffgm.networks.secrets import SecretSpec

__all__ = ["Influence", "InfluenceEngine", "max_divergence_rows"]


@dataclass(frozen=True)
class Influence:
    """A max-influence value with the witness that attains it.

    ``witness`` is a :class:`~puffgm.core.witness.Witness` (``prior`` index, ``node``, ``pair`` of its
    values a, b, and ``output`` the quilt's assignment ``{quilt node: value}``) or None when the
    influence is 0 by independence or the quilt is empty.
    """

    value: float
    witness: Witness | None = None


def max_divergence_rows(logcond: np.ndarray, pairs=None):
    r"""max over ordered pairs (a, b) and columns x of logcond[a, x] - logcond[b, x].

    Parameters
    ----------
    logcond : ndarray, shape (k, S)
        Row :math:`a` holds :math:`\log P(X_A = x \mid X_i = a)`; rows of impossible values must be removed.
    pairs : sequence of (a, b) row-index pairs or None (all pairs)

    Returns
    -------
    tuple
        (value, a, b, column); value is ``-inf`` if no column is possible at all (cannot happen
        for a proper conditional), ``inf`` for a zero denominator.
    """
    k = logcond.shape[0]
    if k < 2:
        return 0.0, None, None, None
    if pairs is None:
        hi = logcond.max(axis=0)
        lo = logcond.min(axis=0)
        possible = np.isfinite(hi)
        if not possible.any():
            return 0.0, None, None, None
        with np.errstate(invalid="ignore"):
            gap = np.where(possible, hi - lo, -np.inf)  # hi finite, lo -inf -> inf
        x = int(np.argmax(gap))
        a = int(np.argmax(logcond[:, x]))
        b = int(np.argmin(logcond[:, x]))
        return float(gap[x]), a, b, x
    best: tuple[float, int | None, int | None, int | None] = (-math.inf, None, None, None)
    for a0, b0 in pairs:
        for a, b in ((a0, b0), (b0, a0)):
            num, den = logcond[a], logcond[b]
            with np.errstate(invalid="ignore"):
                gap = np.where(np.isfinite(num), num - den, -np.inf)
            x = int(np.argmax(gap))
            if gap[x] > best[0]:
                best = (float(gap[x]), a, b, x)
    if best[1] is None or best[0] == -math.inf:
        return 0.0, None, None, None
    return best


def _max_ratio_rows(joint: np.ndarray):
    """max over ordered value pairs (a, b) and x of log P(x | a) / P(x | b), from c * P(X_i, X_Q).

    The probability-space twin of :func:`max_divergence_rows` for all pairs: rows are
    values of X_i (impossible ones dropped), P(x | a) = joint[a, x] / sum_x joint[a, x];
    per column the largest over the smallest conditional, +inf where the smallest is 0
    and the largest is not, columns impossible under every value skipped.  The log is
    monotone, so the column is chosen on the ratio hi / lo and one logarithm is taken
    (hi <= 1 and every positive lo >= 1e-280 / card(X_Q), the underflow guard of
    :meth:`~puffgm.networks.inference.LogVariableElimination.scaled_marginal`, so the ratio
    cannot overflow).  Returns (value, a, b, flat column), a and b as row indices of
    ``joint``.
    """
    k = joint.shape[0]
    flat = joint.reshape(k, -1)
    pa = flat.sum(axis=1)
    support = np.flatnonzero(pa > 0)
    if len(support) < 2:
        return 0.0, None, None, None
    if len(support) == k:
        cond = flat * (1.0 / pa)[:, None]
    else:
        cond = flat[support] * (1.0 / pa[support])[:, None]
    hi = cond.max(axis=0)
    lo = cond.min(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = hi / lo  # lo = 0 < hi: +inf; hi = lo = 0 (impossible column): nan
    x = int(np.nanargmax(ratio)) if hi.any() else -1
    if x < 0:
        return 0.0, None, None, None
    a = int(support[int(np.argmax(cond[:, x]))])
    b = int(support[int(np.argmin(cond[:, x]))])
    return float(np.log(ratio[x])), a, b, x


class InfluenceEngine:
    r"""Max-influence :math:`e_\Theta(X_Q \mid X_i)` for one prior class, cached across quilts and nodes.

    Parameters
    ----------
    prior_class : PriorClass
    secrets : SecretSpec, optional
        Restricts the value pairs per node (default: all pairs).

    Examples
    --------
    >>> from puffgm.networks.priors import load_prior_class
    >>> eng = InfluenceEngine(load_prior_class("example:asia"))
    >>> eng.max_influence("smoke", ()).value
    0.0
    """

    def __init__(self, prior_class, secrets: SecretSpec | None = None, max_table_entries: int | None = None):
        self.prior_class = prior_class
        self.secrets = secrets or SecretSpec()
        limit = DEFAULT_MAX_TABLE_ENTRIES if max_table_entries is None else int(max_table_entries)
        self._ve = [LogVariableElimination(p, max_table_entries=limit) for p in prior_class.priors]
        self._cache: dict[tuple, Influence] = {}
        self._position = {v: k for k, v in enumerate(prior_class.nodes)}
        self._card = {v: len(prior_class.states[v]) for v in prior_class.nodes}
        self._pair_node = None  # the node whose pairwise tables are held, and the tables per prior
        self._pair_tables: list[dict | None] = []
        self._pair_results_node = None  # e({X_j} | X_node) of every j, for the latest node
        self._pair_results = None
        self.evaluations = 0
        # node -> the quilts (as node positions) whose influence a worker evaluated already: asked
        # again here, they are recomputed (the same value) but not counted again
        self._elsewhere: dict = {}
        self._elsewhere_names: dict = {}
        self.deadline_check: Callable[[], None] | None = None  # a callable that raises when a time limit is reached

    def forget_nodes(self):
        """Drop the influences computed so far and the latest node's pairwise tables (the
        inference engines keep their calibrated junction trees)."""
        self._cache = {}
        self._pair_node = self._pair_results_node = self._pair_results = None
        self._pair_tables = []

    @contextmanager
    def without_deadline(self) -> Iterator[None]:
        """Suspend :attr:`deadline_check` inside the block (a step that must finish once started)."""
        check, self.deadline_check = self.deadline_check, None
        try:
            yield
        finally:
            self.deadline_check = check

    def _key(self, node, quilt) -> tuple:
        """The cache key of e(quilt | node): the quilt in the class's node order."""
        return node, tuple(sorted(quilt, key=self._position.__getitem__)) if len(quilt) > 1 else tuple(quilt)

    def remember(self, node, quilt, influence: Influence) -> None:
        """Keep an influence known without inference (for example 0 for a node independent of
        X_node) as if computed: :meth:`max_influence` returns it, ``evaluations`` does not count it."""
        self._cache[self._key(node, quilt)] = influence

    def max_influence(self, node, quilt) -> Influence:
        """e_Theta(X_quilt | X_node) with its witness (Definition 4.1)."""
        key = self._key(node, quilt)
        quilt = key[1]
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        result = self._compute(node, quilt)
        self._cache[key] = result
        return result

    def _pair_influence(self, node, j):
        """e({X_j} | X_node) for every j at once from the junction-tree pass (all value pairs).

        The same computation as the general road, vectorised over j: the tables
        log P(X_node = a, X_j) of all j side by side, each segment normalised by its own
        log-sum-exp over x_j, then the largest gap between rows per column and per
        segment.  None when a prior has no pass (the general road answers).
        """
        if self._pair_results_node != node:
            self._pair_results_node = node
            self._pair_results = self._all_pair_influences(node)
        if self._pair_results is None:
            return None
        return self._pair_results.get(j)

    def _all_pair_influences(self, node):
        states = self.prior_class.states
        out: dict[int, Influence] = {}
        for t in range(len(self._ve)):
            self._pair_table(t, node, None)
            tables = self._pair_tables[t]
            if not tables:
                return None
            js = list(tables)
            widths = [tables[j].shape[1] for j in js]
            starts = np.cumsum([0] + widths[:-1])
            big = np.concatenate([tables[j] for j in js], axis=1)  # (k, sum of card(X_j))
            m = big.max(axis=1, keepdims=True)  # >= log P(a) - log card(X_j) in every segment
            m_safe = np.where(np.isfinite(m), m, 0.0)
            with np.errstate(divide="ignore"):
                logp = np.log(np.add.reduceat(np.exp(big - m_safe), starts, axis=1)) + m_safe  # (k, segments)
            finite = np.isfinite(logp)
            if not (finite == finite[:, :1]).all():
                return None  # supports disagree (cannot happen for a proper network): general road
            support = np.flatnonzero(finite[:, 0])
            if len(support) < 2:
                for j in js:
                    out.setdefault(j, Influence(0.0, None))
                continue
            logcond = big[support] - np.repeat(logp[support], widths, axis=1)
            hi = logcond.max(axis=0)
            lo = logcond.min(axis=0)
            possible = np.isfinite(hi)
            with np.errstate(invalid="ignore"):
                gap = np.where(possible, hi - lo, -np.inf)  # hi finite, lo -inf -> inf
            seg_max = np.maximum.reduceat(gap, starts)
            for j, start, width, val in zip(js, starts, widths, seg_max, strict=True):
                prev = out.get(j)
                if not np.isfinite(val) and val < 0:  # no possible column at all
                    val = 0.0
                if val > (prev.value if prev is not None else 0.0):
                    x = int(start + np.argmax(gap[start:start + width]))
                    a = int(np.argmax(logcond[:, x]))
                    b = int(np.argmin(logcond[:, x]))
                    out[j] = Influence(float(val), Witness(prior=t, node=node, output={j: states[j][x - int(start)]},
                                                           pair=(states[node][int(support[a])],
                                                                 states[node][int(support[b])])))
                elif prev is None:
                    out[j] = Influence(0.0, None)
        return out

    def _pair_table(self, t, node, j):
        """log P(X_node, X_j) under prior t from one junction-tree pass per node (None: not available).

        The single-node influences e({X_j} | X_i) of every j are asked together (the
        region growing of the structured family asks them all), so the pass over the
        tree serves all of them; only the latest node's tables are kept.
        """
        if self._pair_node != node:
            self._pair_node = node
            self._pair_tables = [None] * len(self._ve)
        tables = self._pair_tables[t]
        if tables is None:
            # the others are independent of X_node: _compute answers them 0 without a table
            tables = self._ve[t].pair_log_marginals(node, dependent_only=True) or {}
            self._pair_tables[t] = tables
        return tables.get(j) if j is not None else None

    def evaluated(self) -> dict:
        """The quilts whose influences this engine computed, per protected node, compactly.

        ``{node: (positions of the single-node quilts, [positions of each larger quilt])}``
        (positions in ``prior_class.nodes``, a numpy array of int32 and a list of tuples): what
        a worker sends back instead of its influence cache, so that the driver counts
        ``evaluations`` as one engine would (:meth:`add_evaluated`).
        """
        pos = self._position
        singles: dict = {}
        multis: dict = {}
        for node, quilt in self._cache:
            if len(quilt) == 1:
                singles.setdefault(node, []).append(pos[quilt[0]])
            elif quilt:
                multis.setdefault(node, []).append(tuple(pos[v] for v in quilt))
        return {n: (np.array(singles.get(n, ()), dtype=np.int32), multis.get(n, []))
                for n in set(singles) | set(multis)}

    def add_evaluated(self, record: dict) -> None:
        """Mark the quilts of :meth:`evaluated` (another engine's) as evaluated: computed again here
        they are not counted in ``evaluations`` again."""
        self._elsewhere.update(record)

    def _counted_elsewhere(self, node, quilt) -> bool:
        rec = self._elsewhere.get(node)
        if rec is None:
            return False
        names = self._elsewhere_names.get(node)
        if names is None:
            nodes = self.prior_class.nodes
            names = {(nodes[k],) for k in rec[0].tolist()}
            names.update(tuple(nodes[k] for k in q) for q in rec[1])
            self._elsewhere_names[node] = names
        return quilt in names

    def quilt_states(self, quilt) -> int:
        """Joint state space size of a quilt."""
        return math.prod(map(self._card.__getitem__, quilt))

    def _compute(self, node, quilt) -> Influence:
        if not quilt:
            return Influence(0.0, None)
        if not self._elsewhere or not self._counted_elsewhere(node, quilt):
            self.evaluations += 1
        if self.deadline_check is not None and not self.evaluations % 16:
            self.deadline_check()
        if len(quilt) == 1 and self._ve[0].independent(node, quilt[0]):
            # no common ancestor: P(X_j | X_i = a) = P(X_j) for every possible a, so e = 0 exactly
            # (counted as an evaluation, as the inference it replaces)
            return Influence(0.0, None)
        states = self.prior_class.states
        pairs = self.secrets.value_pairs(self.prior_class, node)
        if len(quilt) == 1 and pairs is None:
            hit = self._pair_influence(node, quilt[0])
            if hit is not None:
                return hit
        best = Influence(0.0, None)
        best_val = 0.0
        for t, ve in enumerate(self._ve):
            joint = self._pair_table(t, node, quilt[0]) if len(quilt) == 1 else None
            if joint is None and pairs is None:
                scaled = ve.scaled_marginal((node,) + quilt)
                if scaled is not None:
                    val, a, b, x = _max_ratio_rows(scaled)
                    if val > best_val:
                        best_val = val
                        xq = np.unravel_index(x, scaled.shape[1:])
                        assignment = {q: states[q][int(v)] for q, v in zip(quilt, xq, strict=True)}
                        best = Influence(float(val), Witness(prior=t, node=node, output=assignment,
                                                             pair=(states[node][a], states[node][b])))
                    continue
            if joint is None:
                joint = ve.log_marginal((node,) + quilt)  # axes: node, quilt...
            k = joint.shape[0]
            flat = joint.reshape(k, -1)
            m = flat.max(axis=1, keepdims=True)
            m_safe = np.where(np.isfinite(m), m, 0.0)
            with np.errstate(divide="ignore"):
                logp = (np.log(np.exp(flat - m_safe).sum(axis=1, keepdims=True)) + m_safe)[:, 0]
            support = np.flatnonzero(np.isfinite(logp))
            if len(support) < 2:
                continue
            logcond = flat[support] - logp[support, None]
            if pairs is None:
                sub_pairs = None
            else:
                pos = {int(v): r for r, v in enumerate(support)}
                sub_pairs = [(pos[a], pos[b]) for a, b in pairs if a in pos and b in pos]
                if not sub_pairs:
                    continue
            val, a, b, x = max_divergence_rows(logcond, sub_pairs)
            if val > best_val:
                best_val = val
                xq = np.unravel_index(x, joint.shape[1:])
                assignment = {q: states[q][int(v)] for q, v in zip(quilt, xq, strict=True)}
                pair = (states[node][int(support[a])], states[node][int(support[b])])
                best = Influence(float(val), Witness(prior=t, node=node, pair=pair, output=assignment))
        return best
