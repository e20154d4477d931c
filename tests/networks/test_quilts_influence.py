"""Quilt finder and max-influence against brute force (networkx d-separation, joint tables)."""

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from _nets import chain_network, random_dag, random_network

from puffgm.exceptions import QuiltError
from puffgm.networks.calibration import calibrate
from puffgm.networks.influence import InfluenceEngine
from puffgm.networks.priors import PriorClass, load_prior_class
from puffgm.networks.quilt_scores import QuiltSearch, candidate_quilts, evaluate_quilts
from puffgm.networks.quilts import dconnected_nodes, make_quilt, remote_nodes
from puffgm.networks.secrets import SecretSpec


def brute_influence(priors, node, quilt, pairs=None):
    """Definition 4.1 by enumeration of the joint table (plain probabilities)."""
    best = 0.0
    for p in priors:
        joint = np.exp(p.log_joint_table())
        idx = [p.nodes.index(node)] + [p.nodes.index(q) for q in quilt]
        other = tuple(k for k in range(len(p.nodes)) if k not in idx)
        marg = joint.sum(axis=other) if other else joint
        marg = np.transpose(marg, np.argsort(np.argsort(idx))).reshape(len(p.states[node]), -1)
        pa = marg.sum(axis=1)
        values = [a for a in range(len(pa)) if pa[a] > 0]
        cand = itertools.permutations(values, 2) if pairs is None else [
            x for a, b in pairs for x in ((a, b), (b, a)) if pa[a] > 0 and pa[b] > 0]
        for a, b in cand:
            for x in range(marg.shape[1]):
                num, den = marg[a, x] / pa[a], marg[b, x] / pa[b]
                if num == 0:
                    continue
                best = max(best, math.inf if den == 0 else math.log(num / den))
    return best


def brute_sigma(priors, epsilon, protected=None):
    """max over theta of the exhaustive per-theta optimum (Pufferfish is a per-prior condition)."""
    return max(_brute_sigma_one([p], epsilon, protected) for p in priors)


def brute_sigma_sup(priors, epsilon):
    """min over quilts with the sup-over-Theta influence (Definition 4.1 applied to the class)."""
    return _brute_sigma_one(priors, epsilon, None)


def _brute_sigma_one(priors, epsilon, protected=None):
    dag = PriorClass(priors).dag
    nodes = list(dag.nodes)
    sig = []
    for i in (protected or nodes):
        others = [v for v in nodes if v != i]
        best = math.inf
        for r in range(len(others) + 1):
            for q in itertools.combinations(others, r):
                remote = {v for v in others if v not in q and nx.is_d_separator(dag, {i}, {v}, set(q))}
                n_near = len(nodes) - len(q) - len(remote)
                e = brute_influence(priors, i, q) if q else 0.0
                if e < epsilon:
                    best = min(best, n_near / (epsilon - e))
        sig.append(best)
    return max(sig)


def test_paper_T3_chain_example():
    """Song et al. section 4.3: X2's quilts have influence 0, log 6, log 6, log 36; scores at epsilon 10."""
    net = chain_network([0.8, 0.2], [[0.9, 0.1], [0.4, 0.6]], 3)
    res = evaluate_quilts(net, "X2", epsilon=10.0)
    by_quilt = {c.quilt: c for c in res}
    expect = {(): (0.0, 0.3), ("X1",): (math.log(6), 0.2437), ("X3",): (math.log(6), 0.2437),
              ("X1", "X3"): (math.log(36), 0.1558)}
    assert set(by_quilt) == set(expect)
    for q, (e, s) in expect.items():
        assert by_quilt[q].max_influence == pytest.approx(e, abs=1e-12)
        assert round(by_quilt[q].score, 4) == s
    cal = calibrate(net, epsilon=10.0)
    x2 = [c for c in cal.per_node if c.node == "X2"][0]
    assert x2.quilt == ("X1", "X3") and x2.score == pytest.approx(1 / (10 - math.log(36)))


def test_bayes_ball_matches_networkx_d_separation():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(2, 10))
        g = random_dag(rng, n, 0.35)
        node = int(rng.integers(n))
        others = [v for v in range(n) if v != node]
        q = {v for v in others if rng.random() < 0.4}
        remote = remote_nodes(g, node, q)
        near = dconnected_nodes(g, node, q)
        for v in others:
            if v not in q:
                assert nx.is_d_separator(g, {node}, {v}, q) == (v in remote)
                assert (v in near) == (v not in remote)


@pytest.mark.parametrize("name", ["alarm", "hailfinder"])
def test_every_candidate_quilt_d_separates_its_remote_set(name):
    pc = load_prior_class(f"example:{name}")
    search = QuiltSearch(pc)
    for node in pc.nodes[::4]:
        for c in search.candidates(node):
            assert node in c.nearby and not (c.quilt & c.nearby) and not (c.quilt & c.remote)
            assert c.quilt | c.nearby | c.remote == set(pc.nodes)
            if c.remote:
                assert nx.is_d_separator(pc.dag, {node}, set(c.remote), set(c.quilt))


def test_quilt_errors(asia):
    pc = asia
    with pytest.raises(QuiltError, match="cannot contain the node itself"):
        make_quilt(pc.dag, "smoke", ["smoke"])
    with pytest.raises(QuiltError, match="'nosuch', which is not a node"):
        make_quilt(pc.dag, "smoke", ["nosuch"])
    assert candidate_quilts(pc, "smoke")[0].is_trivial


def test_influence_matches_brute_force_on_random_networks_with_zeros():
    rng = np.random.default_rng(7)
    for _ in range(12):
        net, dag = random_network(rng, n=int(rng.integers(3, 6)), zero_prob=0.25)
        other, _ = random_network(rng, dag=dag, n=len(net.nodes), zero_prob=0.25, name="other")
        pc = PriorClass([net, other])
        eng = InfluenceEngine(pc)
        for node in net.nodes:
            others = [v for v in net.nodes if v != node]
            for r in range(1, min(3, len(others)) + 1):
                for q in itertools.combinations(others, r):
                    got = eng.max_influence(node, q).value
                    want = max(brute_influence([net], node, q), brute_influence([other], node, q))
                    assert got == pytest.approx(want, rel=1e-9, abs=1e-12) or (got == want == math.inf)


def test_infinite_influence_rules_a_quilt_out_and_impossible_values_are_skipped():
    # B copies A exactly: the quilt {B} has infinite influence on A; C's value 2 is impossible.
    from puffgm.networks.priors import NetworkPrior

    net = NetworkPrior(
        ["A", "B", "C"], {"A": ("0", "1"), "B": ("0", "1"), "C": ("0", "1", "2")},
        {"A": (), "B": ("A",), "C": ("B",)},
        {"A": np.array([0.5, 0.5]), "B": np.array([[1.0, 0.0], [0.0, 1.0]]),
         "C": np.array([[0.7, 0.2], [0.3, 0.8], [0.0, 0.0]])})
    eng = InfluenceEngine(PriorClass([net]))
    assert eng.max_influence("A", ("B",)).value == math.inf
    # value "2" of C has probability zero: not a secret; the pair (0, 1) remains
    assert eng.max_influence("C", ("B",)).value == pytest.approx(brute_influence([net], "C", ("B",)))
    cal = calibrate(net, epsilon=1.0)
    a = [c for c in cal.per_node if c.node == "A"][0]
    assert "B" not in a.quilt and math.isfinite(a.score)


def test_restricted_pairs():
    rng = np.random.default_rng(11)
    net, _ = random_network(rng, n=4, max_card=3, zero_prob=0.0)
    node = net.nodes[-1]
    states = net.states[node]
    spec = SecretSpec(pairs={node: [(states[0], states[1])]})
    eng = InfluenceEngine(PriorClass([net]), spec)
    for q in itertools.combinations([v for v in net.nodes if v != node], 2):
        assert eng.max_influence(node, q).value == pytest.approx(
            brute_influence([net], node, q, pairs=[(0, 1)]), rel=1e-12, abs=1e-12)


def test_calibration_is_optimal_over_all_quilts_on_small_networks():
    rng = np.random.default_rng(5)
    for trial in range(10):
        n = int(rng.integers(3, 6))
        net, dag = random_network(rng, n=n, zero_prob=0.2)
        members = [net]
        if trial % 2:
            members.append(random_network(rng, dag=dag, n=n, zero_prob=0.2)[0])
        for eps in (0.5, 2.0):
            got = calibrate(members, epsilon=eps).sigma_max
            assert got == pytest.approx(brute_sigma(members, eps), rel=1e-9)


def test_weakly_correlated_networks_use_nontrivial_quilts_optimally():
    rng = np.random.default_rng(21)
    nontrivial = 0
    for _ in range(6):
        n = int(rng.integers(4, 7))
        net, dag = random_network(rng, n=n, p_edge=0.6, zero_prob=0.05, concentration=30.0, max_card=2)
        other = random_network(rng, dag=dag, n=n, zero_prob=0.05, concentration=30.0)[0]
        for eps in (0.3, 1.0):
            res = calibrate([net, other], epsilon=eps)
            assert res.sigma_max == pytest.approx(brute_sigma([net, other], eps), rel=1e-9)
            assert res.sigma_max <= brute_sigma_sup([net, other], eps) * (1 + 1e-12)
            nontrivial += sum(1 for c in res.per_node if c.quilt)
    assert nontrivial > 10  # the comparison exercises real quilts, not only the trivial one


def test_class_calibration_dominates_each_member_and_influence_is_the_max():
    rng = np.random.default_rng(9)
    net, dag = random_network(rng, n=5, zero_prob=0.1)
    other, _ = random_network(rng, dag=dag, n=5, zero_prob=0.1)
    both = calibrate([net, other], epsilon=1.0)
    assert both.sigma_max == max(calibrate(net, epsilon=1.0).sigma_max, calibrate(other, epsilon=1.0).sigma_max)
    assert both.details["per_prior_sigma"] == (calibrate(net, epsilon=1.0).sigma_max, calibrate(other, epsilon=1.0).sigma_max)
    eng_all = InfluenceEngine(PriorClass([net, other]))
    eng_a, eng_b = InfluenceEngine(PriorClass([net])), InfluenceEngine(PriorClass([other]))
    for node in net.nodes:
        for q in itertools.combinations([v for v in net.nodes if v != node], 2):
            assert eng_all.max_influence(node, q).value == max(
                eng_a.max_influence(node, q).value, eng_b.max_influence(node, q).value)
    # a class of one prior calibrates exactly like the prior itself
    assert calibrate([net, net], epsilon=1.0).sigma_max == calibrate(net, epsilon=1.0).sigma_max


def test_protected_subset_only_bounds_protected_nodes():
    rng = np.random.default_rng(2)
    net, _ = random_network(rng, n=5, zero_prob=0.1)
    full = calibrate(net, epsilon=1.0)
    sub = calibrate(net, epsilon=1.0, protected=[net.nodes[0]])
    assert [c.node for c in sub.per_node] == [net.nodes[0]]
    assert sub.sigma_max == pytest.approx(brute_sigma([net], 1.0, protected=[net.nodes[0]]), rel=1e-9)
    assert sub.sigma_max <= full.sigma_max
