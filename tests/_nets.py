"""Small random Bayesian networks for brute-force and audit tests (shared by test modules)."""

import networkx as nx
import numpy as np

from puffgm.networks.priors import NetworkPrior


def random_dag(rng, n, p_edge):
    """A random DAG on nodes 0..n-1 (edges i -> j for i < j, each with probability p_edge)."""
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from((i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < p_edge)
    return g


def random_network(rng, n=5, p_edge=0.4, max_card=3, zero_prob=0.15, max_parents=2, name="rand", dag=None,
                   concentration=1.0):
    """A random discrete network with some exact zeros in its CPDs (columns still sum to 1)."""
    nodes = [f"V{i}" for i in range(n)]
    if dag is None:
        parents = {}
        for j in range(n):
            cands = [nodes[i] for i in range(j) if rng.random() < p_edge]
            rng.shuffle(cands)
            parents[nodes[j]] = tuple(sorted(cands[:max_parents]))
        cards = {v: int(rng.integers(2, max_card + 1)) for v in nodes}
    else:
        parents, cards = dag
    states = {v: tuple(f"s{k}" for k in range(cards[v])) for v in nodes}
    cpds = {}
    for v in nodes:
        shape = (cards[v],) + tuple(cards[p] for p in parents[v])
        t = rng.dirichlet(concentration * np.ones(cards[v]), size=int(np.prod(shape[1:]))).T
        mask = rng.random(t.shape) < zero_prob
        for c in range(t.shape[1]):
            col = np.where(mask[:, c], 0.0, t[:, c])
            if col.sum() > 0:
                t[:, c] = col / col.sum()
        cpds[v] = t.reshape(shape)
    return NetworkPrior(nodes, states, parents, cpds, name=name), (parents, cards)


def chain_network(initial, transition, T):
    """X1 -> X2 -> ... -> XT as a NetworkPrior."""
    initial = np.asarray(initial, float)
    P = np.asarray(transition, float)
    k = len(initial)
    nodes = [f"X{t}" for t in range(1, T + 1)]
    states = {v: tuple(str(s) for s in range(k)) for v in nodes}
    parents = {nodes[0]: ()}
    cpds = {nodes[0]: initial}
    for t in range(1, T):
        parents[nodes[t]] = (nodes[t - 1],)
        cpds[nodes[t]] = P.T.copy()  # column j: P(X_t | X_{t-1} = j)
    return NetworkPrior(nodes, states, parents, cpds, name="chain")
