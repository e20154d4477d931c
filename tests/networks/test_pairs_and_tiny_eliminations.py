"""The pairwise pass on a min-fill tree, the compiled Bayes ball, the exact zero of independent nodes
and the pair tables kept for the other direction: each gives the answers of the road it shortcuts."""

import itertools

import networkx as nx
import numpy as np
import pytest
from _nets import random_dag, random_network

from puffgm.core import kernels
from puffgm.exceptions import InferenceLimitError
from puffgm.networks import inference
from puffgm.networks.inference import LogVariableElimination, min_fill_order, tree_of_order
from puffgm.networks.influence import InfluenceEngine, _max_ratio_rows
from puffgm.networks.priors import PriorClass
from puffgm.networks.quilt_scores import QuiltSearch
from puffgm.networks.quilts import DSeparationIndex


def _same_table(a, b, tol=1e-12):
    assert np.array_equal(np.isfinite(a), np.isfinite(b))  # zeros are exact on both roads
    f = np.isfinite(a)
    assert np.allclose(a[f], b[f], rtol=0, atol=tol)


def _nets(seed, count, n_range=(16, 24)):
    rng = np.random.default_rng(seed)
    return [random_network(rng, n=int(rng.integers(*n_range)), p_edge=0.3, max_parents=3, zero_prob=0.2)[0]
            for _ in range(count)]


def test_min_fill_order_gives_a_valid_elimination_tree():
    for net in _nets(3, 6):
        ve = LogVariableElimination(net)
        order = min_fill_order(ve._card, ve._fvars)
        assert sorted(order) == list(range(len(ve._card)))
        _, cliques, parent = tree_of_order(ve._card, ve._fvars, order)
        for fv in ve._fvars:  # every family inside some clique
            assert any(set(fv) <= set(c) for c in cliques)
        for k, p in enumerate(parent):  # running intersection: the separator is in the parent's clique
            if p is not None:
                assert set(cliques[k][1:]) <= set(cliques[p])


@pytest.fixture
def min_fill_everywhere(monkeypatch):
    """The min-fill tree for the pass whenever it is smaller, whatever the size of the network."""
    monkeypatch.setattr(inference, "PAIR_MIN_FILL_FROM", 0)
    monkeypatch.setattr(inference, "PAIR_MIN_FILL_FRACTION", 1.0)


def test_pairwise_pass_on_the_min_fill_tree_is_the_min_size_pass_and_the_log_space_road(min_fill_everywhere):
    chosen = 0
    for net in _nets(5, 8):
        ve = LogVariableElimination(net)
        base = ve._tree()
        small = ve._pair_tree()
        assert base is not None and small is not None
        assert small.total <= base.total and small.biggest <= base.biggest
        chosen += small is not base
        for k, i in enumerate(net.nodes):
            fast = ve.pair_log_marginals(i)
            plain = ve._pair_pass(base, ve._index[i])
            assert fast is not None and plain is not None and fast.keys() == plain.keys()
            for j, table in fast.items():
                _same_table(table, plain[j])
                if k % 4 == 0:  # and, for a quarter of the nodes, the reference road
                    _same_table(table, ve.log_marginal_logspace((i, j)))
    assert chosen >= 3  # the min-fill tree is smaller on several of these networks


def test_pairwise_pass_falls_back_to_the_min_size_tree_when_the_min_fill_pass_cannot_certify(monkeypatch,
                                                                                             min_fill_everywhere):
    net = next(n for n in _nets(5, 8) if (lambda v: v._pair_tree() is not v._tree())(LogVariableElimination(n)))
    ve = LogVariableElimination(net)
    small = ve._pair_tree()
    plain_pass = LogVariableElimination._pair_pass
    monkeypatch.setattr(LogVariableElimination, "_pair_pass",
                        lambda self, tree, k0, wanted=None: None if tree is small else plain_pass(self, tree, k0, wanted))
    for i in net.nodes[:4]:
        got = ve.pair_log_marginals(i)
        assert got is not None
        for j, table in got.items():
            _same_table(table, ve.log_marginal_logspace((i, j)))


@pytest.fixture
def numba_ball(monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setattr(kernels, "_BACKEND", None)
    monkeypatch.setenv("PUFFGM_KERNELS", "numba")
    return kernels.bayes_ball()


def test_compiled_bayes_ball_visits_what_the_bitmask_search_visits(numba_ball):
    assert numba_ball is not None
    rng = np.random.default_rng(17)
    for _ in range(60):
        n = int(rng.integers(2, 40))
        g = random_dag(rng, n, float(rng.uniform(0.05, 0.4)))
        idx = DSeparationIndex(g)
        idx._kernel, idx._csr = numba_ball, idx._csr_arrays()
        for _ in range(5):
            node = int(rng.integers(n))
            observed = idx.bits(v for v in range(n) if v != node and rng.random() < rng.uniform(0, 0.6))
            assert idx._ball_compiled(node, observed) == idx._ball_bits(node, observed)


def test_a_large_dag_runs_the_compiled_ball_with_the_same_quilts(numba_ball):
    rng = np.random.default_rng(4)
    g = random_dag(rng, 220, 0.012)
    fast, plain = DSeparationIndex(g), DSeparationIndex(g)
    plain._kernel = None  # the bitmask search
    for _ in range(40):
        node = int(rng.integers(220))
        q = [v for v in range(220) if v != node and rng.random() < 0.05]
        assert fast.make_quilt(node, q) == plain.make_quilt(node, q)
    assert fast._kernel is numba_ball


def _general_road(ve, i, j):
    """e({X_j} | X_i) by an elimination (the road the exact zero replaces)."""
    scaled = ve.scaled_marginal((i, j))
    return _max_ratio_rows(scaled)[0] if scaled is not None else None


def test_independent_nodes_have_influence_exactly_zero_and_the_elimination_agrees():
    rng = np.random.default_rng(21)
    seen = 0
    for _ in range(12):
        net, dag = random_network(rng, n=int(rng.integers(4, 10)), p_edge=0.25, zero_prob=0.2)
        other, _ = random_network(rng, dag=dag, n=len(net.nodes), zero_prob=0.2)
        engine = InfluenceEngine(PriorClass([net, other]))
        ve = LogVariableElimination(net)
        g = nx.DiGraph([(p, v) for v in net.nodes for p in net.parents[v]])
        g.add_nodes_from(net.nodes)
        for i, j in itertools.permutations(net.nodes, 2):
            independent = ve.independent(i, j)
            assert independent == nx.is_d_separator(g, {i}, {j}, set())
            if independent:
                seen += 1
                assert engine.max_influence(i, (j,)).value == 0.0
                assert abs(_general_road(ve, i, j)) < 1e-12
    assert seen > 20


def test_refusals_of_single_node_influences_are_unchanged_by_the_exact_zero():
    rng = np.random.default_rng(2)
    net, _ = random_network(rng, n=9, p_edge=0.3, max_card=3, zero_prob=0.0)
    ve = LogVariableElimination(net)
    search = QuiltSearch(PriorClass([net]), max_table_entries=1, exhaustive=False)
    for i, j in itertools.permutations(net.nodes, 2):
        if ve.independent(i, j):  # answered 0 without inference, as the refusal handler did
            assert search._influence_or_skip(i, (j,)).value == 0.0
        else:  # still refused: the node search falls back to the trivial quilt
            with pytest.raises(InferenceLimitError):
                search._influence_or_skip(i, (j,))


def test_a_pair_kept_for_the_other_direction_is_the_table_computed_afresh(monkeypatch):
    monkeypatch.setattr(inference, "PAIR_TREE_MAX_ENTRIES", 0)  # no junction tree: the route ignores the order
    monkeypatch.setattr(inference, "_PAIR_KEEP_MAX", 7)  # a small FIFO: some pairs are dropped before use
    for net in _nets(9, 4, (5, 9)):
        kept, fresh = LogVariableElimination(net), None
        assert kept._tree() is None
        for a, b in itertools.combinations(net.nodes, 2):
            kept.scaled_marginal((a, b))
        assert len(kept._pairs) <= 7
        assert kept._pair_entries == sum(t.size for _, t in kept._pairs.values() if t is not None)
        for a, b in itertools.combinations(net.nodes, 2):
            fresh = LogVariableElimination(net)
            got, ref = kept.scaled_marginal((b, a)), fresh.scaled_marginal((b, a))
            assert (got is None) == (ref is None)
            if got is not None:
                assert np.array_equal(got, ref)  # bit for bit


def test_the_pass_for_dependent_nodes_only_gives_their_tables_bit_for_bit():
    rng = np.random.default_rng(13)
    for _ in range(8):
        net = random_network(rng, n=int(rng.integers(6, 16)), p_edge=0.2, max_parents=2, zero_prob=0.2)[0]
        ve = LogVariableElimination(net)
        for i in net.nodes:
            full, dep = ve.pair_log_marginals(i), ve.pair_log_marginals(i, dependent_only=True)
            assert set(dep) == {j for j in full if not ve.independent(i, j)}
            for j, table in dep.items():
                assert np.array_equal(table, full[j])


def test_a_clique_with_more_messages_than_einsum_takes_is_calibrated_in_groups():
    rng = np.random.default_rng(6)
    leaves = [f"L{k}" for k in range(70)]  # 70 messages and a CPD into the root's clique
    nodes = ["R"] + leaves
    states = {v: ("a", "b") for v in nodes}
    parents = {"R": (), **{v: ("R",) for v in leaves}}
    cpds = {"R": np.array([0.3, 0.7]), **{v: rng.dirichlet([1, 1], size=2).T for v in leaves}}
    from puffgm.networks.priors import NetworkPrior

    ve = LogVariableElimination(NetworkPrior(nodes, states, parents, cpds, name="star"))
    tree = tree_of_order(ve._card, ve._fvars, min_fill_order(ve._card, ve._fvars))
    assert ve._calibrated(*tree) is not None  # the leaves first: 70 messages into the root's clique
    pairs = ve.pair_log_marginals("L0")
    assert pairs is not None and set(pairs) == set(nodes) - {"L0"}
    for j in ("R", "L1", "L69"):
        _same_table(pairs[j], ve.log_marginal_logspace(("L0", j)))
