r"""Pufferfish instantiations :math:`(S, Q, \Theta)` over small discrete databases.

A Pufferfish instantiation (Kifer and Machanavajjhala, "Pufferfish: A framework
for mathematical privacy definitions", TODS 2014, section 3) has three parts:

* ``S``, the *secrets*: statements about the database ("record i has value a",
  "the value of X lies in a set", "the sum is in [k, k+1)", ...);
* ``Q``, the *discriminative pairs*: pairs :math:`(s_i, s_j)` of mutually exclusive
  secrets the adversary must not be able to tell apart;
* ``Theta``, the *data evolution scenarios*: the priors an adversary may hold.

A mechanism :math:`M` satisfies :math:`\epsilon\text{-Pufferfish}(S, Q, \Theta)` when, for every :math:`\theta`
in :math:`\Theta`, every pair :math:`(s_i, s_j)` in :math:`Q` with :math:`P(s_i \mid \theta) > 0` and
:math:`P(s_j \mid \theta) > 0`, and every output :math:`w`,

$$
e^{-\epsilon} \le \frac{P(M(\mathrm{Data}) = w \mid s_i, \theta)}{P(M(\mathrm{Data}) = w \mid s_j, \theta)} \le
  e^{\epsilon}
$$

(Kifer-Machanavajjhala Definition 3.1; Song-Wang-Chaudhuri Definition 2.1).
Pairs with a secret of prior probability zero under a :math:`\theta` are *skipped* for
that :math:`\theta` (the technical condition), never an error.

Differential privacy is the special case in which the secrets are "record i
has value a" (or "record i is absent"), Q holds every pair of values of one
record, and :math:`\Theta` holds every product distribution (Kifer-Machanavajjhala
Theorem 6.1).  The Bayesian-network default of Song et al. section 4 is the
same :math:`S` and :math:`Q` with :math:`\Theta` a set of Bayesian networks:
:meth:`Instantiation.bayesian_network_default`.

This module represents the database as a joint assignment of named discrete
nodes, the priors as log joint tables over all assignments (axes in ``nodes``
order), and secrets as boolean masks over that table.  It is meant for exact
audits of *small* databases (at most ``MAX_DATABASE_STATES`` = 2**16 joint
states by default).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import logsumexp

from puffgm.exceptions import AuditError, PriorError, SecretError

__all__ = [
    "MAX_DATABASE_STATES",
    "Secret",
    "Instantiation",
    "joint_log_table_from_pgmpy",
]

#: Largest number of joint database states the exact auditor enumerates by default.
MAX_DATABASE_STATES = 2**16

#: Tolerance on probability tables: larger deviations of a sum from 1 are rejected.
SUM_TOLERANCE = 1e-6


# --------------------------------------------------------------------------- secrets


@dataclass(frozen=True)
class Secret:
    """A secret: a named predicate over a database assignment.

    Use the constructors :meth:`value`, :meth:`in_set`, :meth:`region` and
    :meth:`predicate` rather than the raw dataclass.

    Attributes
    ----------
    name : str
        A readable name, e.g. ``"X2=1"``; pairs and witnesses refer to it.
    kind : str
        ``"value"``, ``"in_set"``, ``"region"`` or ``"predicate"``.
    node : str or None
        The node the secret speaks about (None for a general predicate).
    values : tuple
        The accepted values (``"value"``/``"in_set"``), or ``(low, high)`` for a
        half-open region ``low <= X < high``.
    func : callable or None
        For ``"predicate"``: ``func(assignment) -> bool`` where ``assignment`` is
        a mapping ``{node: state}``.
    """

    name: str
    kind: str
    node: Any = None
    values: tuple = ()
    func: Callable | None = field(default=None, compare=False)

    # -- constructors -------------------------------------------------------
    @classmethod
    def value(cls, node, value, name: str | None = None) -> Secret:
        """The secret "node has value ``value``" (:math:`X_i = a`)."""
        return cls(name or f"{node}={value}", "value", node, (value,))

    @classmethod
    def in_set(cls, node, values, name: str | None = None) -> Secret:
        """The secret "the value of ``node`` lies in ``values``"."""
        vals = tuple(values)
        if not vals:
            raise SecretError(f"The set of values of the secret on node {node!r} is empty.")
        return cls(name or f"{node} in {{{', '.join(map(str, vals))}}}", "in_set", node, vals)

    @classmethod
    def region(cls, node, low=-math.inf, high=math.inf, name: str | None = None) -> Secret:
        """The region event ``low <= node < high`` for a numeric (discretised continuous) node."""
        if not (float(low) < float(high)):
            raise SecretError(f"The region [{low}, {high}) of the secret on node {node!r} is empty.")
        return cls(name or f"{low}<={node}<{high}", "region", node, (float(low), float(high)))

    @classmethod
    def predicate(cls, func: Callable, name: str) -> Secret:
        """An arbitrary secret ``func(assignment) -> bool`` over the whole database."""
        if not callable(func):
            raise SecretError(f"The predicate of secret {name!r} is not callable.")
        return cls(str(name), "predicate", None, (), func)

    # -- evaluation ---------------------------------------------------------
    def mask(self, inst: Instantiation) -> np.ndarray:
        """Boolean array over the joint states of ``inst`` (shape ``inst.shape``)."""
        if self.kind == "predicate":
            func = self.func
            assert func is not None  # a predicate secret carries its function
            out = np.fromiter(
                (bool(func(a)) for a in inst.iter_assignments()), dtype=np.bool_, count=inst.n_databases
            )
            return out.reshape(inst.shape)
        if self.node not in inst.axis:
            raise SecretError(f"The secret {self.name!r} names the unknown node {self.node!r}.")
        ax = inst.axis[self.node]
        states = inst.states[self.node]
        if self.kind in ("value", "in_set"):
            unknown = [v for v in self.values if v not in states]
            if unknown:
                raise SecretError(
                    f"The secret {self.name!r} uses value(s) {unknown!r} that node {self.node!r} does not "
                    f"have (states {list(states)!r})."
                )
            accept = np.array([s in self.values for s in states], dtype=bool)
        elif self.kind == "region":
            low, high = self.values
            try:
                nums = np.array([float(s) for s in states])
            except (TypeError, ValueError):
                raise SecretError(
                    f"The region secret {self.name!r} needs numeric states on node {self.node!r}."
                ) from None
            # half-open [low, high); a 1e-9 slack absorbs rounding of grid values
            accept = (nums >= low - 1e-9) & (nums < high - 1e-9)
        else:  # pragma: no cover - guarded by constructors
            raise SecretError(f"Unknown secret kind {self.kind!r}.")
        shape = [1] * len(inst.shape)
        shape[ax] = len(states)
        return np.broadcast_to(accept.reshape(shape), inst.shape)

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.node is not None:
            d["node"] = self.node
        if self.values:
            d["values"] = list(self.values)
        return d


def _coerce_secret(s) -> Secret:
    if isinstance(s, Secret):
        return s
    if isinstance(s, tuple) and len(s) == 2:
        return Secret.value(*s)
    raise SecretError(f"Cannot interpret {s!r} as a secret; use Secret.value/in_set/region/predicate.")


# --------------------------------------------------------------------------- priors


def _log(x):
    with np.errstate(divide="ignore"):
        return np.log(x)


def _topological(nodes, edges):
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    return tuple(nx.lexicographical_topological_sort(g, key=lambda n: list(nodes).index(n)))


def joint_log_table_from_pgmpy(model, notes: list | None = None):
    r"""Log joint table of a pgmpy discrete Bayesian network.

    Parameters
    ----------
    model : pgmpy.models.DiscreteBayesianNetwork
        A network whose CPDs are all attached.
    notes : list, optional
        Receives a note for every CPD column renormalised (deviation :math:`\le 10^{-6}`).

    Returns
    -------
    nodes : tuple
        Nodes in topological order (the axes of the table).
    states : dict
        ``{node: tuple of state names}``.
    log_table : ndarray
        ``log P(x)`` with axes in ``nodes`` order (``-inf`` for probability zero).

    Raises
    ------
    PriorError
        Missing CPDs, negative or NaN entries, or columns off 1 by more than 1e-6.
    """
    nodes = _topological(list(model.nodes()), list(model.edges()))
    cpds = {c.variable: c for c in model.get_cpds()}
    missing = [n for n in nodes if n not in cpds]
    if missing:
        raise PriorError(f"The Bayesian network has no CPD for node(s) {missing!r}.")
    states = {}
    for n in nodes:
        sn = cpds[n].state_names.get(n)
        states[n] = tuple(sn) if sn is not None else tuple(range(cpds[n].variable_card))
    axis = {n: i for i, n in enumerate(nodes)}
    cards = tuple(len(states[n]) for n in nodes)
    if math.prod(cards) > MAX_DATABASE_STATES * 16:
        raise AuditError(
            f"The Bayesian network has {math.prod(cards)} joint states; too many to tabulate exactly."
        )
    total = np.zeros(cards)
    for n in nodes:
        cpd = cpds[n]
        variables = list(cpd.variables)
        vals = np.asarray(cpd.values, dtype=float)
        if vals.ndim != len(variables):  # flat (card, prod) layout
            vals = vals.reshape([len(cpd.state_names[v]) for v in variables])
        # reorder each variable's states to match the node's state order
        for k, v in enumerate(variables):
            sn = list(cpd.state_names.get(v, range(vals.shape[k])))
            if tuple(sn) != states[v]:
                if sorted(map(str, sn)) != sorted(map(str, states[v])):
                    raise PriorError(f"The CPD of {n!r} uses states {sn!r} for {v!r}, expected {states[v]!r}.")
                order = [sn.index(s) for s in states[v]]
                vals = np.take(vals, order, axis=k)
        if not np.all(np.isfinite(vals)) or np.any(vals < 0):
            raise PriorError(f"The CPD of node {n!r} has a negative, NaN or infinite entry.")
        sums = vals.sum(axis=0)
        dev = np.max(np.abs(sums - 1.0))
        if dev > SUM_TOLERANCE:
            raise PriorError(
                f"A column of the CPD of node {n!r} sums to {sums.ravel()[np.argmax(np.abs(sums - 1).ravel())]!r}, "
                "not 1 (tolerance 1e-6)."
            )
        if dev > 0:
            vals = vals / sums
            if notes is not None and dev > 1e-12:
                notes.append(f"CPD columns of {n!r} renormalised (max deviation {dev:.2e}).")
        # move to full-rank broadcast shape
        perm = np.argsort([axis[v] for v in variables])
        vals = np.transpose(vals, perm)
        shape = [1] * len(nodes)
        for v in variables:
            shape[axis[v]] = cards[axis[v]]
        total = total + _log(vals).reshape(shape)
    return nodes, states, total


@dataclass(frozen=True)
class _ModelTable:
    """One prior given as a model: its nodes, ``{node: states}``, log joint table and label."""

    nodes: tuple
    states: dict
    log_table: np.ndarray
    label: str


def _prior_to_table(prior, notes: list) -> _ModelTable:
    """(nodes, states, log table, label) of one prior given in any supported form."""
    # a NetworkPrior (puffgm.networks.priors), duck-typed: this module does not import puffgm.networks
    if hasattr(prior, "log_joint_table") and hasattr(prior, "nodes") and hasattr(prior, "states"):
        nodes = tuple(prior.nodes)
        states = {n: tuple(prior.states[n]) for n in nodes}
        table = np.asarray(prior.log_joint_table(), dtype=float)
        return _ModelTable(nodes, states, table, getattr(prior, "name", None) or "NetworkPrior")
    if hasattr(prior, "get_cpds") and hasattr(prior, "edges"):
        nodes, states, table = joint_log_table_from_pgmpy(prior, notes)
        return _ModelTable(nodes, states, table, getattr(prior, "name", None) or "pgmpy network")
    raise PriorError(f"Cannot interpret {type(prior).__name__} as a prior; give a pgmpy network, a "
                     "NetworkPrior/PriorClass or an explicit joint table.")


def _validate_joint(table, shape, label, notes, log=False):
    t = np.asarray(table, dtype=float)
    if t.size != math.prod(shape):
        raise PriorError(f"The joint table of prior {label} has {t.size} entries, expected {math.prod(shape)}.")
    t = t.reshape(shape)
    if log:
        if np.any(np.isnan(t)) or np.any(t == np.inf):
            raise PriorError(f"The log joint table of prior {label} has a NaN or +inf entry.")
        total = logsumexp(t)
        if not np.isfinite(total) or abs(math.expm1(total)) > SUM_TOLERANCE:
            raise PriorError(f"The joint table of prior {label} sums to "
                             f"{math.exp(total) if np.isfinite(total) else 0.0!r}, not 1.")
        if total != 0.0 and abs(total) > 1e-15:
            notes.append(f"Prior {label} renormalised (sum off 1 by {abs(math.expm1(total)):.2e}).")
        return t - total
    if not np.all(np.isfinite(t)) or np.any(t < 0):
        raise PriorError(f"The joint table of prior {label} has a negative, NaN or infinite entry.")
    s = float(t.sum())
    if abs(s - 1.0) > SUM_TOLERANCE:
        raise PriorError(f"The joint table of prior {label} sums to {s!r}, not 1 (tolerance 1e-6).")
    if s != 1.0:
        if abs(s - 1.0) > 1e-12:
            notes.append(f"Prior {label} renormalised (sum off 1 by {abs(s - 1.0):.2e}).")
        t = t / s
    return _log(t)


def _expand_priors(priors) -> list:
    """Theta as a flat list: one prior, a sequence of priors, and prior classes (``.priors``) expanded."""
    expanded = []
    for p in priors if isinstance(priors, (list, tuple)) else [priors]:
        if hasattr(p, "priors") and not hasattr(p, "log_joint_table"):
            expanded.extend(p.priors)
        else:
            expanded.append(p)
    if not expanded:
        raise PriorError("Theta is empty: give at least one prior.")
    return expanded


def _resolve_prior(prior, notes: list):
    """The explicit joint table as given, or the :class:`_ModelTable` of a model prior."""
    if isinstance(prior, np.ndarray) or (isinstance(prior, (list, tuple)) and not hasattr(prior, "nodes")):
        return prior
    return _prior_to_table(prior, notes)


def _cardinalities(nodes: Sequence | None, cards: Sequence) -> dict:
    """``{node: (0, ..., c - 1)}`` from one cardinality per node."""
    if nodes is None:
        raise PriorError("Give 'nodes' along with the cardinalities in 'states'.")
    nodes, cards = list(nodes), list(cards)
    if len(cards) != len(nodes):
        raise PriorError(f"Give one cardinality per node in 'states': {len(nodes)} nodes, {len(cards)} cardinalities.")
    return {n: tuple(range(int(c))) for n, c in zip(nodes, cards, strict=True)}


def _nodes_and_states(resolved: list, nodes, states) -> tuple[tuple, dict]:
    """The database's nodes and ``{node: states}``: given, or those of the first model prior."""
    if nodes is None:
        first = next((r for r in resolved if isinstance(r, _ModelTable)), None)
        if first is None:
            raise PriorError("Give 'nodes' and 'states' for explicit joint tables.")
        nodes = first.nodes
    nodes = tuple(nodes)
    if len(set(nodes)) != len(nodes):
        raise PriorError(f"The node list {list(nodes)!r} has duplicates.")
    if states is None:
        first = next(r for r in resolved if isinstance(r, _ModelTable))
        states = first.states
    states = {n: tuple(states[n]) for n in nodes}
    for n in nodes:
        if len(states[n]) < 1 or len(set(states[n])) != len(states[n]):
            raise PriorError(f"Node {n!r} must have distinct states; got {list(states[n])!r}.")
    return nodes, states


def _dependency_edges(expanded: list, edges) -> tuple | None:
    """Dependency edges, the union over Theta of the networks' edges (and ``edges``), for group-DP baselines.

    None when no prior is a network and no ``edges`` are given (the dependencies are unknown).
    """
    found = set() if edges is None else {tuple(e) for e in edges}
    known = edges is not None
    for p in expanded:
        if hasattr(p, "get_cpds") and hasattr(p, "edges"):
            found.update(tuple(e) for e in p.edges())
            known = True
        elif hasattr(p, "parents") and isinstance(p.parents, Mapping):
            found.update((u, v) for v, ps in p.parents.items() for u in ps)
            known = True
    return tuple(sorted(found, key=str)) if known else None


# --------------------------------------------------------------------------- instantiation


class Instantiation:
    r"""A Pufferfish instantiation :math:`(S, Q, \Theta)` over a small discrete database.

    Validates and tabulates once (the log joint of every prior, the mask and log
    prior probability of every secret); the auditors of :mod:`puffgm.framework.audit`
    then answer many mechanism questions.

    Parameters
    ----------
    priors : sequence
        :math:`\Theta`, a finite list of priors.  Each is a pgmpy ``DiscreteBayesianNetwork``,
        a :class:`puffgm.networks.priors.NetworkPrior` (anything with ``.nodes``, ``.states``
        and ``.log_joint_table()``), or an explicit joint table (array of
        probabilities of shape ``cards``; then ``nodes`` and ``states`` are required).
        A :class:`puffgm.networks.priors.PriorClass` (anything with ``.priors``) is expanded.
    pairs : sequence of (Secret, Secret)
        Q, the discriminative pairs.  A secret may also be given as ``(node, value)``.
    nodes : sequence, optional
        Node names (axes of explicit tables).  Defaults to the first network's
        topological order.
    states : mapping or sequence of int, optional
        ``{node: tuple of states}`` or cardinalities (states ``0..card-1``); needed
        with explicit tables.
    log_tables : bool
        Explicit tables are log-probabilities instead of probabilities.
    max_states : int
        Refuse databases with more joint states than this (AuditError naming the size).
    prior_names : sequence of str, optional
        Labels of the priors for reports.

    Notes
    -----
    The technical condition of Pufferfish: a pair :math:`(s_i, s_j)` is audited under
    :math:`\theta` only when :math:`P(s_i \mid \theta) > 0` and :math:`P(s_j \mid \theta) > 0`; the skipped
    (:math:`\theta`, pair) combinations are listed in :attr:`skipped`.

    Examples
    --------
    >>> import numpy as np
    >>> from puffgm.framework import Instantiation, Secret
    >>> joint = np.array([[0.4, 0.1], [0.1, 0.4]])        # two correlated bits
    >>> inst = Instantiation([joint], [(Secret.value("A", 0), Secret.value("A", 1))],
    ...                      nodes=["A", "B"], states=[2, 2])
    >>> inst.n_databases
    4
    """

    def __init__(
        self,
        priors,
        pairs,
        *,
        nodes: Sequence | None = None,
        states=None,
        log_tables: bool = False,
        max_states: int = MAX_DATABASE_STATES,
        prior_names: Sequence[str] | None = None,
        edges: Sequence | None = None,
    ):
        notes: list[str] = []
        expanded = _expand_priors(priors)
        if states is not None and not isinstance(states, Mapping):
            states = _cardinalities(nodes, states)
        resolved = [_resolve_prior(p, notes) for p in expanded]
        self._set_database(*_nodes_and_states(resolved, nodes, states), max_states)
        self._tabulate_priors(resolved, prior_names, log_tables, notes)
        self.edges = _dependency_edges(expanded, edges)
        self._tabulate_secrets(pairs, notes)
        self.notes = tuple(dict.fromkeys(notes))

    def _set_database(self, nodes: tuple, states: dict, max_states: int) -> None:
        """The database's nodes, states, axes and shape; refuse more than ``max_states`` joint states."""
        self.nodes = nodes
        self.states = states
        self.axis = {n: i for i, n in enumerate(nodes)}
        self.shape = tuple(len(states[n]) for n in nodes)
        self.n_databases = int(math.prod(self.shape))
        if self.n_databases > max_states:
            raise AuditError(
                f"The database has {self.n_databases} joint states, more than the {max_states} the exact "
                "auditor enumerates; audit a smaller model or raise max_states."
            )

    def _tabulate_priors(self, resolved: list, prior_names, log_tables: bool, notes: list) -> None:
        """Theta as validated log joint tables with axes in ``self.nodes`` order, and the priors' labels."""
        tables = []
        names = []
        for k, r in enumerate(resolved):
            label = prior_names[k] if prior_names is not None and k < len(prior_names) else f"#{k}"
            if isinstance(r, _ModelTable):
                tables.append(_validate_joint(self._align(r, label), self.shape, label, notes, log=True))
            else:
                tables.append(_validate_joint(r, self.shape, label, notes, log=log_tables))
            names.append(label)
        self.log_priors = tuple(np.ascontiguousarray(t) for t in tables)
        for t in self.log_priors:
            t.setflags(write=False)
        self.prior_names = tuple(names)

    def _align(self, resolved_model: _ModelTable, label: str) -> np.ndarray:
        """A model prior's log table with its axes and states reordered to the instantiation's."""
        pn, ps, t = resolved_model.nodes, resolved_model.states, resolved_model.log_table
        nodes, states = self.nodes, self.states
        if set(pn) != set(nodes):
            raise PriorError(f"Prior {label} has nodes {sorted(map(str, pn))!r}, expected {sorted(map(str, nodes))!r}.")
        t = np.transpose(t, [list(pn).index(n) for n in nodes])
        for n in nodes:
            if tuple(ps[n]) != states[n]:
                if set(ps[n]) != set(states[n]):
                    raise PriorError(f"Prior {label} gives node {n!r} states {list(ps[n])!r}, expected "
                                     f"{list(states[n])!r}.")
                t = np.take(t, [list(ps[n]).index(s) for s in states[n]], axis=self.axis[n])
        return t

    def _tabulate_secrets(self, pairs, notes: list) -> None:
        """Q, the mask of every secret, log P(s | theta), and the (theta, pair) combinations skipped."""
        self.pairs = tuple((_coerce_secret(a), _coerce_secret(b)) for a, b in pairs)
        if not self.pairs:
            raise SecretError("Q is empty: give at least one discriminative pair.")
        self._masks: dict = {}
        for a, b in self.pairs:
            if a.name == b.name:
                raise SecretError(f"The pair ({a.name!r}, {b.name!r}) compares a secret with itself.")
            for s in (a, b):
                if s.name not in self._masks:
                    m = np.ascontiguousarray(s.mask(self))
                    m.setflags(write=False)
                    self._masks[s.name] = m
            if np.any(self._masks[a.name] & self._masks[b.name]):
                notes.append(f"Secrets {a.name!r} and {b.name!r} are not mutually exclusive.")
        self._log_p: dict = {}
        skipped = []
        for t_idx, lp in enumerate(self.log_priors):
            for a, b in self.pairs:
                for s in (a, b):
                    key = (t_idx, s.name)
                    if key not in self._log_p:
                        m = self._masks[s.name]
                        self._log_p[key] = float(logsumexp(lp[m])) if m.any() else -math.inf
                zero = [s.name for s in (a, b) if self._log_p[(t_idx, s.name)] == -math.inf]
                if zero:
                    skipped.append((t_idx, (a.name, b.name), f"P({' and '.join(zero)} | theta) = 0"))
        self.skipped = tuple(skipped)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def bayesian_network_default(cls, priors, protected: Sequence | None = None, **kwargs) -> Instantiation:
        r"""The Bayesian-network instantiation of Song et al. (section 4.1).

        :math:`S = \{X_i = a\}`, :math:`Q = \{(X_i = a, X_i = b) : a < b\}` (in state order) for every
        node ``i`` (or only the nodes in ``protected``), :math:`\Theta` = ``priors``.  Other
        keyword arguments (``nodes``, ``states``, ...) go to the constructor.
        """
        inst_nodes, inst_states = _peek_nodes_states(priors, kwargs)
        chosen = inst_nodes if protected is None else tuple(protected)
        pairs = []
        for n in chosen:
            if n not in inst_states:
                raise SecretError(f"Unknown node {n!r}; the nodes are {list(inst_nodes)!r}.")
            for a, b in itertools.combinations(inst_states[n], 2):
                pairs.append((Secret.value(n, a), Secret.value(n, b)))
        return cls(priors, pairs, **kwargs)

    @classmethod
    def from_tables(cls, tables, pairs, nodes, states, **kwargs) -> Instantiation:
        r"""An instantiation whose :math:`\Theta` is a list of explicit joint probability tables."""
        return cls(list(tables), pairs, nodes=nodes, states=states, **kwargs)

    # ------------------------------------------------------------------ helpers
    @property
    def n_priors(self) -> int:
        return len(self.log_priors)

    def mask(self, secret_name: str) -> np.ndarray:
        """Boolean mask (shape ``self.shape``) of a secret of Q."""
        return self._masks[secret_name]

    def log_prob_secret(self, theta: int, secret_name: str) -> float:
        r""":math:`\log P(s \mid \theta)`."""
        return self._log_p[(theta, secret_name)]

    def active(self):
        r"""Yield (:math:`\theta` index, ``secret_i``, ``secret_j``) for every audited combination."""
        skipped = {(t, p) for t, p, _ in self.skipped}
        for t in range(self.n_priors):
            for a, b in self.pairs:
                if (t, (a.name, b.name)) not in skipped:
                    yield t, a, b

    def iter_assignments(self):
        """Every joint assignment as a dict ``{node: state}``, in C (row-major) order."""
        for combo in itertools.product(*(self.states[n] for n in self.nodes)):
            yield dict(zip(self.nodes, combo, strict=True))

    def evaluate(self, func, what: str = "function") -> np.ndarray:
        """Tabulate ``func(assignment)`` over all databases.

        ``func`` may also already be an array of shape ``self.shape + extra``
        (returned as a float array of shape ``(n_databases,) + extra``).
        """
        if callable(func):
            vals = [func(a) for a in self.iter_assignments()]
            arr = np.asarray(vals, dtype=float)
            return arr.reshape((self.n_databases,) + arr.shape[1:])
        arr = np.asarray(func, dtype=float)
        if arr.shape[: len(self.shape)] != self.shape:
            if arr.ndim >= 1 and arr.shape[0] == self.n_databases:
                return arr
            raise AuditError(f"The {what} table has shape {arr.shape}; expected {self.shape} (+ output axes).")
        return arr.reshape((self.n_databases,) + arr.shape[len(self.shape):])

    def conditional(self, theta: int, secret_name: str) -> np.ndarray:
        r""":math:`\log P(\mathrm{Data} = x \mid s, \theta)` over the flattened databases (``-inf`` outside s)."""
        lp = self.log_priors[theta].ravel()
        m = self._masks[secret_name].ravel()
        out = np.full(lp.shape, -math.inf)
        out[m] = lp[m] - self._log_p[(theta, secret_name)]
        return out

    def groups(self) -> list:
        """Groups of possibly correlated records: connected components of the dependency graph.

        The graph is the union of the networks' edges (or the ``edges`` argument);
        with explicit joint tables and no edges, every node is in one group (the
        conservative choice).
        """
        if self.edges is None:
            return [tuple(self.nodes)]
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from(self.nodes)
        g.add_edges_from(self.edges)
        return [tuple(n for n in self.nodes if n in c) for c in nx.connected_components(g)]

    def describe(self) -> dict:
        return {
            "nodes": list(self.nodes),
            "n_databases": self.n_databases,
            "n_priors": self.n_priors,
            "n_pairs": len(self.pairs),
            "n_skipped": len(self.skipped),
        }

    def __repr__(self) -> str:
        return (f"Instantiation({len(self.nodes)} nodes, {self.n_databases} databases, "
                f"{self.n_priors} priors, {len(self.pairs)} pairs, {len(self.skipped)} skipped)")


def _peek_nodes_states(priors, kwargs):
    nodes = kwargs.get("nodes")
    states = kwargs.get("states")
    if states is not None and not isinstance(states, Mapping):
        states = _cardinalities(nodes, states)
    if nodes is not None and states is not None:
        return tuple(nodes), states
    plist = priors if isinstance(priors, (list, tuple)) else [priors]
    for p in plist:
        if hasattr(p, "priors") and not hasattr(p, "log_joint_table"):
            p = p.priors[0]
        if hasattr(p, "get_cpds") and hasattr(p, "edges"):
            n, s, _ = joint_log_table_from_pgmpy(p)
            return n, s
        if hasattr(p, "log_joint_table"):
            return tuple(p.nodes), {n: tuple(p.states[n]) for n in p.nodes}
    raise PriorError("Give 'nodes' and 'states' for explicit joint tables.")
