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


def random_pgmpy_network(seed, n=4, card=2, extra_edges=1):
    """A random pgmpy network on a connected chain backbone with ``extra_edges`` more edges (seeded)."""
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    rng = np.random.default_rng(seed)
    names = [f"X{i}" for i in range(n)]
    edges = [(names[i - 1], names[i]) for i in range(1, n)]  # connected backbone
    pairs = [(i, j) for i in range(n) for j in range(i + 2, n)]
    for k in rng.permutation(len(pairs))[:extra_edges]:
        i, j = pairs[k]
        edges.append((names[i], names[j]))
    model = DiscreteBayesianNetwork(edges)
    model.add_nodes_from(names)
    for v in names:
        parents = sorted(model.get_parents(v))
        cols = int(np.prod([card] * len(parents))) if parents else 1
        table = rng.dirichlet(np.ones(card) * 1.5, size=cols).T
        model.add_cpds(TabularCPD(v, card, table, evidence=parents or None,
                                  evidence_card=[card] * len(parents) or None))
    return model


def count_utility(theta, candidates=None):
    """u(x, r) = number of nodes whose state index equals r: changing one entry moves it by <= 1."""
    nodes = theta.nodes
    k = len(theta.states[nodes[0]])

    def u(assign):
        idx = [theta.states[v].index(assign[v]) if assign[v] in theta.states[v] else int(assign[v]) for v in nodes]
        return [sum(1 for i in idx if i == r) for r in range(k)]
    return u


def markov_chain_network(T, P, init):
    """The Markov chain (init, P) of length T unrolled into a pgmpy network X0 -> X1 -> ... (P: rows from)."""
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    P = np.asarray(P, float)
    k = P.shape[0]
    names = [f"X{t}" for t in range(T)]
    model = DiscreteBayesianNetwork([(names[t - 1], names[t]) for t in range(1, T)])
    model.add_cpds(TabularCPD(names[0], k, np.asarray(init, float).reshape(k, 1)))
    for t in range(1, T):
        model.add_cpds(TabularCPD(names[t], k, P.T, evidence=[names[t - 1]], evidence_card=[k]))
    return model
