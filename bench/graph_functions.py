"""puffgm's hand-written graph functions against networkx and pgmpy; prints JSON timings.

Each hand-written piece that remains in puffgm.networks (ancestral sets, the Bayes ball of
``dconnected_nodes``, its bitmask form ``DSeparationIndex``, the ancestor table of
``LogVariableElimination``) is kept because the library answer measured here is slower; the
moral graph is networkx's (``nx.moral_graph``, timed against the hand-written one it replaced).
Every pair is first checked to give the same answer.  One query per node of the network, with a
random set of 4 observed (or source) nodes.  docs/architecture.md, "Graph functions".

Run: python3 bench/graph_functions.py [network ...] (from the repository root, puffgm importable;
default alarm hailfinder win95pts)
"""

import itertools
import json
import random
import sys
import timeit

import networkx as nx
from pgmpy.base import DAG

from puffgm.networks import quilts
from puffgm.networks.priors import load_prior_class


def hand_moral(dag):
    """The moral graph as puffgm wrote it before it used networkx (for the comparison)."""
    m = nx.Graph()
    m.add_nodes_from(dag.nodes)
    m.add_edges_from(dag.to_undirected().edges)
    for v in dag.nodes:
        m.add_edges_from(itertools.combinations(list(dag.predecessors(v)), 2))
    return m


def ancestor_table(prior):
    """LogVariableElimination's pass: ancestors of every node in topological order."""
    anc: dict = {}
    for n in prior.nodes:
        s = set()
        for p in prior.parents[n]:
            s.add(p)
            s |= anc[p]
        anc[n] = frozenset(s)
    return anc


def timed(fn) -> float:
    t = timeit.Timer(fn)
    n, _ = t.autorange()
    return min(t.repeat(5, n)) / n * 1e3


def measure(net: str) -> dict:
    pc = load_prior_class(f"example:{net}")
    dag, prior, nodes = pc.dag, pc.priors[0], list(pc.nodes)
    rnd = random.Random(0)
    qs = [(v, set(rnd.sample([u for u in nodes if u != v], 4))) for v in nodes]
    pdag = DAG(dag.edges)
    pdag.add_nodes_from(nodes)
    idx = quilts.DSeparationIndex(dag)

    def bits():
        idx.forget()
        return [set(idx.names(idx.dconnected_bits(v, idx.bits(q)))) for v, q in qs]

    pairs = {
        "moral graph": (lambda: hand_moral(dag), lambda: nx.moral_graph(dag), "networkx moral_graph"),
        "ancestral sets": (lambda: [quilts.ancestral_set(dag, q) for _, q in qs],
                           lambda: [set(q).union(*(nx.ancestors(dag, x) for x in q)) for _, q in qs],
                           "union of networkx ancestors"),
        "ancestor table": (lambda: ancestor_table(prior),
                           lambda: {n: frozenset(nx.ancestors(dag, n)) for n in prior.nodes},
                           "networkx ancestors per node"),
        "d-connected sets": (lambda: [quilts.dconnected_nodes(dag, v, q) for v, q in qs],
                             lambda: [pdag.active_trail_nodes(v, observed=list(q))[v] for v, q in qs],
                             "pgmpy active_trail_nodes (DAG built once)"),
        "d-connected sets, bitmask": (bits,
                                      lambda: [pdag.active_trail_nodes(v, observed=list(q))[v] for v, q in qs],
                                      "pgmpy active_trail_nodes (DAG built once)"),
    }
    out: dict = {"network": net, "nodes": len(nodes), "queries": len(qs)}
    for name, (mine, lib, lib_name) in pairs.items():
        a, b = mine(), lib()
        if name == "moral graph":
            a, b = {frozenset(e) for e in a.edges}, {frozenset(e) for e in b.edges}
        assert a == b, name
        out[name] = {"hand_ms": round(timed(mine), 4), "library": lib_name, "library_ms": round(timed(lib), 4)}
    if len(nodes) <= 80:  # networkx has no reachable set: one is_d_separator per node
        out["d-connected sets"]["networkx_is_d_separator_ms"] = round(timed(
            lambda: [{u for u in nodes if u not in q and (u == v or not nx.is_d_separator(dag, {v}, {u}, q))}
                     for v, q in qs]), 2)
    return out


if __name__ == "__main__":
    for net in sys.argv[1:] or ["alarm", "hailfinder", "win95pts"]:
        print(json.dumps(measure(net)))
