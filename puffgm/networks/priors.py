r"""Priors: the class :math:`\Theta` of distributions the attacker may hold.

A prior class is a finite set of discrete Bayesian networks that share one DAG
and the same state names (Song, Wang and Chaudhuri, section 4.1: "each :math:`\theta` in
:math:`\Theta` ... is based on this Bayesian network :math:`G`, but may have different
parameters").  Every calibration takes the supremum over the class.

Validation is strict because every later step takes logarithms of ratios of
probabilities:

* a CPD column whose sum is off 1 by more than ``1e-6`` is rejected (pgmpy
  tolerates ``0.01``); smaller slips, such as the ``3e-7`` rounding of the
  bnlearn files bundled with pgmpy, are renormalised and recorded in
  :attr:`NetworkPrior.notes`;
* negative, NaN or infinite entries are rejected;
* priors of one class must have the same nodes, edges and state names.

Zero probabilities are legitimate (deterministic nodes) and kept exactly.

Sources: pgmpy ``DiscreteBayesianNetwork`` objects; network files in every
format pgmpy reads -- BIF, XMLBIF, Hugin NET, GeNIe XDSL, UAI and XBN, each
also gzipped, recognised by content (:mod:`puffgm.networks.formats`); and the
bnlearn networks that ship inside the pgmpy wheel (``"example:alarm"``,
``"example:asia"``, ...), read from ``pgmpy/utils/example_models/*.bif.gz``
without any download.  Every source goes through the same validation.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import os
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

import numpy as np

from puffgm.core.validation import did_you_mean, saved_members
from puffgm.exceptions import PriorError
from puffgm.networks.formats import CPD_TOLERANCE, NetworkTables, pgmpy_tables, read_bif_text, read_network_file

__all__ = [
    "prior_class_to_json",
    "prior_class_from_json",
    "NetworkPrior",
    "PriorClass",
    "load_prior_class",
    "load_network",
    "bundled_networks",
    "CPD_TOLERANCE",
]

#: Deviations below this are floating-point noise and are renormalised silently.
_SILENT = 1e-12


def _restore_network_prior(fields):
    """Unpickle a NetworkPrior field by field (CPD arrays read-only again)."""
    obj = NetworkPrior.__new__(NetworkPrior)
    for name, value in fields:
        if name == "cpts":
            for arr in value.values():
                arr.setflags(write=False)
        object.__setattr__(obj, name, value)
    return obj


class NetworkPrior:
    r"""One validated discrete Bayesian network :math:`\theta` (immutable).

    Parameters
    ----------
    nodes : sequence of str
        Node names; stored in a topological order.
    states : mapping node -> sequence of str
        State names of each node.
    parents : mapping node -> sequence of str
        Parents of each node, in the axis order of its CPD.
    cpds : mapping node -> array_like
        ``cpds[X]`` has shape ``(card(X), card(parent_1), ...)`` (pgmpy's
        layout): column ``[:, j1, ...]`` is :math:`P(X \mid \mathrm{parents} = (j_1, \ldots))`.
    name : str, optional
        A label used in messages.
    notes : sequence of str, optional
        What the source of the tables reported (a file reader's notes); kept in
        :attr:`notes` before the notes of validation.

    Raises
    ------
    PriorError
        If the structure is not a DAG, a table has the wrong shape, an entry is
        negative or not finite, or a column sum is off 1 by more than 1e-6.
    """

    __slots__ = ("nodes", "states", "parents", "cpts", "name", "notes", "_fingerprint", "_index")
    _fingerprint: str | None

    def __init__(self, nodes, states, parents, cpds, name: str = "network", notes=()):
        import networkx as nx

        nodes = [str(n) for n in nodes]
        if not nodes:
            raise PriorError(f"The network {name!r} has no nodes.")
        if len(set(nodes)) != len(nodes):
            raise PriorError(f"The network {name!r} has duplicate node names.")
        g = nx.DiGraph()
        g.add_nodes_from(nodes)
        for n in nodes:
            if n not in parents:
                raise PriorError(f"Node {n!r} of network {name!r} has no parent list.")
            for p in parents[n]:
                if p not in states:
                    raise PriorError(f"Node {n!r} of network {name!r} has an unknown parent {p!r}.")
                g.add_edge(str(p), n)
        if not nx.is_directed_acyclic_graph(g):
            raise PriorError(f"The graph of network {name!r} has a directed cycle.")
        position = {v: i for i, v in enumerate(nodes)}
        order = list(nx.lexicographical_topological_sort(g, key=position.__getitem__))
        notes = [str(note) for note in notes]
        st = {}
        for n in order:
            s = tuple(str(v) for v in states[n])
            if not s:
                raise PriorError(f"Node {n!r} of network {name!r} has no states.")
            if len(set(s)) != len(s):
                raise PriorError(f"Node {n!r} of network {name!r} has duplicate state names.")
            st[n] = s
        cpts = {}
        for n in order:
            if n not in cpds:
                raise PriorError(f"Node {n!r} of network {name!r} has no CPD.")
            pa = tuple(str(p) for p in parents[n])
            arr = np.array(cpds[n], dtype=float, copy=True)
            shape = (len(st[n]),) + tuple(len(st[p]) for p in pa)
            if arr.shape != shape:
                try:
                    arr = arr.reshape(shape)
                except ValueError:
                    raise PriorError(
                        f"The CPD of node {n!r} in network {name!r} has shape {arr.shape}, expected {shape}."
                    ) from None
            if not np.all(np.isfinite(arr)):
                raise PriorError(f"The CPD of node {n!r} in network {name!r} has a NaN or infinite entry.")
            if np.any(arr < 0):
                raise PriorError(f"The CPD of node {n!r} in network {name!r} has a negative entry.")
            sums = arr.sum(axis=0)
            dev = np.abs(sums - 1.0)
            worst = float(dev.max())
            if worst > CPD_TOLERANCE:
                raise PriorError(
                    f"A column of the CPD of node {n!r} in network {name!r} sums to "
                    f"{float(sums.flat[int(dev.argmax())]):.10g}, off 1 by more than {CPD_TOLERANCE:g}."
                )
            if worst > 0:
                arr = arr / sums
                if worst > _SILENT:
                    notes.append(
                        f"renormalised {int((dev > _SILENT).sum())} CPD column(s) of node {n!r} "
                        f"(largest deviation {worst:.3g})"
                    )
            arr.setflags(write=False)
            cpts[n] = arr
        self.nodes = tuple(order)
        self.states = {n: st[n] for n in order}
        self.parents = {n: tuple(str(p) for p in parents[n]) for n in order}
        self.cpts = cpts
        self.name = str(name)
        self.notes = tuple(notes)
        self._index = {n: i for i, n in enumerate(order)}
        self._fingerprint = None

    @classmethod
    def exact(cls, nodes, states, parents, cpds, name: str = "network", notes=()) -> NetworkPrior:
        """The network with exactly these CPD values, bit for bit (a saved prior read back).

        Validated as by the constructor, which renormalises a column whose sum is off 1 by
        any amount; here a column off 1 by more than 1e-12 (floating-point noise) is refused
        instead, and the values are kept as given, so the fingerprint of a saved network is
        the fingerprint of the network read back.

        Raises
        ------
        PriorError
            As the constructor, or a CPD column off 1 by more than 1e-12.
        """
        checked = cls(nodes, states, parents, cpds, name=name, notes=notes)
        cpts = {}
        for n in checked.nodes:
            arr = np.array(cpds[n], dtype=float, copy=True).reshape(checked.cpts[n].shape)
            worst = float(np.abs(arr.sum(axis=0) - 1.0).max())
            if worst > _SILENT:
                raise PriorError(f"A column of the CPD of node {n!r} in network {name!r} is off 1 by {worst:.3g}: "
                                 "a saved network holds normalised CPDs.")
            arr.setflags(write=False)
            cpts[n] = arr
        fields = {slot: getattr(checked, slot) for slot in cls.__slots__}
        fields.update(cpts=cpts, _fingerprint=None)
        return _restore_network_prior(tuple(fields.items()))

    def __setattr__(self, key, value):
        if hasattr(self, "_fingerprint") and key != "_fingerprint":
            raise AttributeError("NetworkPrior is immutable")
        object.__setattr__(self, key, value)

    def __reduce__(self):
        # pickling (worker processes, Dask): restore the validated fields as they are, not re-validated
        return _restore_network_prior, (tuple((s, getattr(self, s)) for s in self.__slots__),)

    def __repr__(self):
        return f"NetworkPrior({self.name!r}, {len(self.nodes)} nodes)"

    # ------------------------------------------------------------------ facts
    @property
    def edges(self) -> frozenset:
        """The DAG's edges as (parent, child) pairs."""
        return frozenset((p, n) for n in self.nodes for p in self.parents[n])

    @property
    def n_zero_entries(self) -> int:
        """Number of zero entries over all CPDs (deterministic structure, kept exactly)."""
        return int(sum(int((t == 0).sum()) for t in self.cpts.values()))

    @property
    def fingerprint(self) -> str:
        """A SHA-256 prefix of the structure, states and CPD values."""
        fp = self._fingerprint
        if fp is None:
            h = hashlib.sha256()
            for n in self.nodes:
                h.update(repr((n, self.states[n], self.parents[n])).encode())
                h.update(np.ascontiguousarray(self.cpts[n]).tobytes())
            fp = h.hexdigest()[:16]
            object.__setattr__(self, "_fingerprint", fp)
        return fp

    def cardinality(self, node) -> int:
        """The number of values of ``node``."""
        return len(self.states[node])

    # ------------------------------------------------------------- conversions
    def reordered(self, states: Mapping, parents: Mapping) -> NetworkPrior:
        """The same distribution with the given state order and parent order of each node."""
        cpds = {}
        for n in self.nodes:
            t = self.cpts[n]
            own = [self.states[n].index(s) for s in states[n]]
            t = t[own]
            perm = [0] + [1 + self.parents[n].index(p) for p in parents[n]]
            t = np.transpose(t, perm)
            for ax, p in enumerate(parents[n], start=1):
                idx = [self.states[p].index(s) for s in states[p]]
                t = np.take(t, idx, axis=ax)
            cpds[n] = t
        return NetworkPrior(self.nodes, states, parents, cpds, name=self.name, notes=self.notes)

    def to_pgmpy(self):
        """This network as a pgmpy ``DiscreteBayesianNetwork``."""
        from pgmpy.factors.discrete import TabularCPD
        from pgmpy.models import DiscreteBayesianNetwork

        model = DiscreteBayesianNetwork()
        model.add_nodes_from(self.nodes)
        model.add_edges_from(sorted(self.edges))
        for n in self.nodes:
            t = self.cpts[n]
            pa = list(self.parents[n])
            cpd = TabularCPD(
                n,
                len(self.states[n]),
                t.reshape(len(self.states[n]), -1),
                evidence=pa or None,
                evidence_card=[len(self.states[p]) for p in pa] or None,
                state_names={v: list(self.states[v]) for v in [n] + pa},
            )
            model.add_cpds(cpd)
        return model

    def log_joint_table(self, max_entries: int = 1 << 22) -> np.ndarray:
        r""":math:`\log P(X_1, \dots, X_n)` as an array with one axis per node, in :attr:`nodes` order.

        Only for small networks (at most ``max_entries`` joint states); used by
        exact audits and brute-force checks.
        """
        size = math.prod(len(self.states[n]) for n in self.nodes)
        if size > max_entries:
            raise PriorError(
                f"The joint table of network {self.name!r} has {size} entries, more than {max_entries}."
            )
        out = np.zeros([len(self.states[n]) for n in self.nodes])
        with np.errstate(divide="ignore"):
            for n in self.nodes:
                axes = [self._index[n]] + [self._index[p] for p in self.parents[n]]
                t = np.log(self.cpts[n])
                # move the CPD axes into joint positions, broadcast over the rest
                order = np.argsort(axes)
                t = np.transpose(t, order)
                shape = [1] * len(self.nodes)
                for ax in sorted(axes):
                    shape[ax] = len(self.states[self.nodes[ax]])
                out = out + t.reshape(shape)
        return out


def _restore_slots(cls, state):
    """Unpickle an immutable slotted object without re-running its validation."""
    obj = object.__new__(cls)
    for key, value in state.items():
        object.__setattr__(obj, key, value)
    return obj


# ---------------------------------------------------------------------- pgmpy
def _from_tables(tables: NetworkTables, label: str) -> NetworkPrior:
    return NetworkPrior(tables.nodes, tables.states, tables.parents, tables.cpds, name=label, notes=tables.notes)


def _from_pgmpy(model, name: str | None = None) -> NetworkPrior:
    try:
        from pgmpy.models import DiscreteBayesianNetwork
    except ImportError:  # pragma: no cover
        DiscreteBayesianNetwork = ()
    if not isinstance(model, DiscreteBayesianNetwork):
        raise PriorError(
            f"A prior must be a pgmpy DiscreteBayesianNetwork, a network file (BIF, XMLBIF, Hugin NET, "
            f"GeNIe XDSL, UAI or XBN) or 'example:NAME'; got {type(model).__name__}."
        )
    label = name or getattr(model, "name", None) or "network"
    return _from_tables(pgmpy_tables(model, label), label)


# ------------------------------------------------------------------ files
def bundled_networks() -> tuple:
    """Names of the bnlearn networks shipped inside the installed pgmpy wheel."""
    d = _example_dir()
    return tuple(sorted(p.name[: -len(".bif.gz")] for p in d.glob("*.bif.gz"))) if d else ()


def _example_dir():
    import importlib.util

    spec = importlib.util.find_spec("pgmpy")
    if spec is None or not spec.submodule_search_locations:
        return None
    d = Path(list(spec.submodule_search_locations)[0]) / "utils" / "example_models"
    return d if d.is_dir() else None


@lru_cache(maxsize=32)
def _load_example(name: str) -> NetworkPrior:
    d = _example_dir()
    path = d / f"{name}.bif.gz" if d else None
    if path is None or not path.is_file():
        names = bundled_networks()
        raise PriorError(f"There is no bundled network named {name!r}{did_you_mean(name, names)}; "
                         f"bundled networks: {', '.join(names)}.")
    with gzip.open(path, "rt") as fh:
        return _from_tables(read_bif_text(fh.read(), name), name)


@lru_cache(maxsize=32)
def _load_file(path: str, mtime: float) -> NetworkPrior:
    """A network file read and validated once per (absolute path, modification time)."""
    return _from_tables(read_network_file(path), os.path.basename(path))


def load_network(spec) -> NetworkPrior:
    """Load one network: a pgmpy model, a NetworkPrior, a network file or ``"example:NAME"``.

    Parameters
    ----------
    spec : NetworkPrior, pgmpy DiscreteBayesianNetwork, str or os.PathLike
        A file in any format of :data:`puffgm.networks.formats.FORMATS` (BIF,
        XMLBIF, Hugin NET, GeNIe XDSL, UAI, XBN; each also gzipped), recognised
        by its content; or ``"example:NAME"`` for a network bundled with pgmpy.

    Returns
    -------
    NetworkPrior
        Validated; files are read once per (path, modification time).

    Raises
    ------
    PriorError
        One sentence: no such file, not a network in a format read (naming the
        formats), the reader failed (naming the reader), or the tables are invalid.
    """
    if isinstance(spec, NetworkPrior):
        return spec
    if isinstance(spec, (str, os.PathLike)):
        s = os.fspath(spec)
        if s.startswith("example:"):
            return _load_example(s.split(":", 1)[1])
        if not os.path.isfile(s):
            raise PriorError(f"There is no network file {s!r}.")
        return _load_file(os.path.abspath(s), os.path.getmtime(s))
    return _from_pgmpy(spec)


# ----------------------------------------------------------------- classes
class PriorClass:
    r"""A finite prior class :math:`\Theta` of Bayesian networks sharing one DAG and state names.

    Parameters
    ----------
    priors : iterable of NetworkPrior
        The members :math:`\theta` of :math:`\Theta`.

    Raises
    ------
    PriorError
        If the class is empty, or the members differ in nodes, edges or state names.

    Notes
    -----
    Members whose CPDs list a node's parents or states in another order are
    reordered to the first member's order.  Every max-influence and
    calibration takes the supremum over the members (Song et al., Definition
    4.1 and Algorithm 2).
    """

    __slots__ = ("priors", "nodes", "states", "parents", "dag", "fingerprint", "notes", "_frozen")

    def __init__(self, priors: Iterable[NetworkPrior]):
        import networkx as nx

        priors = list(priors)
        if not priors:
            raise PriorError("The prior class is empty: give at least one network.")
        first = priors[0]
        members = [first]
        for k, p in enumerate(priors[1:], start=2):
            if set(p.nodes) != set(first.nodes):
                diff = sorted(set(p.nodes) ^ set(first.nodes))[:3]
                raise PriorError(
                    f"Prior {k} ({p.name!r}) does not share the graph of prior 1 ({first.name!r}): "
                    f"nodes {diff} are in one but not the other."
                )
            if p.edges != first.edges:
                e = sorted(p.edges ^ first.edges)[0]
                raise PriorError(
                    f"Prior {k} ({p.name!r}) does not share the graph of prior 1 ({first.name!r}): "
                    f"edge {e[0]} -> {e[1]} is in one but not the other."
                )
            for n in first.nodes:
                if set(p.states[n]) != set(first.states[n]) or len(p.states[n]) != len(first.states[n]):
                    raise PriorError(
                        f"Prior {k} ({p.name!r}) gives node {n!r} the states {list(p.states[n])}, "
                        f"but prior 1 gives {list(first.states[n])}."
                    )
            if any(p.states[n] != first.states[n] or p.parents[n] != first.parents[n] for n in first.nodes):
                p = p.reordered(first.states, first.parents)
            members.append(p)
        self.priors = tuple(members)
        self.nodes = first.nodes
        self.states = dict(first.states)
        self.parents = dict(first.parents)
        g = nx.DiGraph()
        g.add_nodes_from(self.nodes)
        g.add_edges_from(sorted(first.edges))
        nx.freeze(g)
        self.dag = g
        h = hashlib.sha256("|".join(m.fingerprint for m in members).encode())
        self.fingerprint = h.hexdigest()[:16]
        notes: list[str] = []
        for k, m in enumerate(members, start=1):
            notes.extend(f"prior {k} ({m.name}): {note}" for note in m.notes)
        self.notes = tuple(notes)
        self._frozen = True

    def __setattr__(self, key, value):
        if getattr(self, "_frozen", False):
            raise AttributeError("PriorClass is immutable")
        object.__setattr__(self, key, value)

    def __reduce__(self):
        return (_restore_slots, (type(self), {k: getattr(self, k) for k in self.__slots__}))

    def __len__(self):
        return len(self.priors)

    def __iter__(self):
        return iter(self.priors)

    def __repr__(self):
        return f"PriorClass({len(self.priors)} prior(s), {len(self.nodes)} nodes, fingerprint {self.fingerprint})"

    @classmethod
    def from_pgmpy(cls, models) -> PriorClass:
        """Build a class from one pgmpy DiscreteBayesianNetwork or a list of them."""
        if not isinstance(models, (list, tuple)):
            models = [models]
        return cls(_from_pgmpy(m) for m in models)

    def largest_component(self) -> int:
        """Size of the largest connected component of the DAG (the group-DP group size)."""
        import networkx as nx

        return max(len(c) for c in nx.weakly_connected_components(self.dag))


def load_prior_class(specs) -> PriorClass:
    """Build a PriorClass from one spec or a list of specs.

    A spec is a :class:`PriorClass` (returned as is when alone), a
    :class:`NetworkPrior`, a pgmpy ``DiscreteBayesianNetwork``, a network file
    (BIF, XMLBIF, Hugin NET, GeNIe XDSL, UAI or XBN, each also gzipped; see
    :func:`load_network`), or ``"example:NAME"`` for a network bundled with pgmpy.

    Examples
    --------
    >>> theta = load_prior_class("example:asia")
    >>> theta.nodes[:3]
    ('asia', 'tub', 'smoke')
    """
    if isinstance(specs, PriorClass):
        return specs
    if isinstance(specs, (str, os.PathLike, NetworkPrior)) or hasattr(specs, "get_cpds") \
            or not isinstance(specs, Iterable):
        specs = [specs]
    members: list[NetworkPrior] = []
    for s in specs:
        if isinstance(s, PriorClass):
            members.extend(s.priors)
        else:
            members.append(load_network(s))
    return PriorClass(members)


def prior_class_to_json(obj: PriorClass) -> dict:
    """The body of a saved class of Bayesian networks (kind ``"bayesian-network"``, :mod:`puffgm.api.persist`).

    ``"nodes"`` (in the class's topological order), ``"states"`` (node -> state names, in order),
    ``"parents"`` (node -> the axis order of its CPD) and ``"members"``: ``{"name", "notes", "cpds"}``
    with ``cpds[X][x][j1]...`` = P(X = x | parents = (j1, ...)) (pgmpy's layout).
    """
    return {"nodes": list(obj.nodes),
            "states": {n: list(obj.states[n]) for n in obj.nodes},
            "parents": {n: list(obj.parents[n]) for n in obj.nodes},
            "members": [{"name": m.name, "notes": list(m.notes),
                         "cpds": {n: m.cpts[n].tolist() for n in obj.nodes}} for m in obj.priors]}


def prior_class_from_json(data: dict, label: str) -> PriorClass:
    """The class of Bayesian networks :func:`prior_class_to_json` wrote, every member validated, CPDs kept exactly."""
    nodes, states, parents = data["nodes"], data["states"], data["parents"]
    if not isinstance(nodes, list) or not isinstance(states, dict) or not isinstance(parents, dict):
        raise PriorError(f"The 'nodes' of {label} must be a list, its 'states' and 'parents' objects.")
    for n in nodes:
        if n not in states or n not in parents:
            raise PriorError(f"Node {n!r} of {label} has no 'states' or no 'parents' entry.")
    members = []
    for j, m in enumerate(saved_members(data, label), start=1):
        name = str(m.get("name", f"prior {j}"))
        members.append(NetworkPrior.exact(nodes, states, parents, m["cpds"], name=name, notes=m.get("notes", ())))
    return PriorClass(members)
