"""Certified lower bounds and the branch-and-bound quilt search against brute force over all quilts."""

import itertools
import json
import math

import networkx as nx
import numpy as np
import pytest
from _nets import random_dag, random_network
from test_quilts_influence import _brute_sigma_one, brute_influence, brute_sigma

from puffgm.exceptions import ParameterError
from puffgm.networks.calibration import calibrate
from puffgm.networks.influence import InfluenceEngine
from puffgm.networks.priors import PriorClass, load_prior_class
from puffgm.networks.quilt_bounds import far_set_quilt, single_influences, single_node_bound
from puffgm.networks.quilt_scores import QuiltSearch
from puffgm.networks.quilt_search import branch_and_bound, far_side_dive
from puffgm.networks.quilts import make_quilt


def brute_node_optimum(net, node, epsilon):
    """sigma_i* by brute force over every quilt set (d-separation by networkx, joint tables)."""
    return _brute_sigma_one([net], epsilon, [node])


def brute_far_set_optimum(net, node, epsilon):
    """min over far sets A of (n - |A|) / (epsilon - e(A)), e(A) from the full joint table."""
    others = [v for v in net.nodes if v != node]
    n = len(net.nodes)
    best = math.inf
    for r in range(len(others) + 1):
        for a in itertools.combinations(others, r):
            e = brute_influence([net], node, a) if a else 0.0
            if e < epsilon:
                best = min(best, (n - r) / (epsilon - e))
    return best


def assert_valid_quilt(dag, choice):
    """The quilt's remote set is d-separated from the node and the partition is exact."""
    q, near, rem = set(choice.quilt), set(choice.nearby), set(choice.remote)
    assert choice.node in near and not (q & near) and not (q & rem) and not (near & rem)
    assert q | near | rem == set(dag.nodes)
    if rem:
        assert nx.is_d_separator(dag, {choice.node}, rem, q)
    assert make_quilt(dag, choice.node, q).remote == frozenset(rem)


def test_far_set_quilt_d_separates_the_rest_of_the_far_set():
    rng = np.random.default_rng(4)
    for _ in range(300):
        n = int(rng.integers(2, 11))
        g = random_dag(rng, n, 0.3)
        node = int(rng.integers(n))
        far = {v for v in range(n) if v != node and rng.random() < 0.5}
        q = far_set_quilt(g, node, far)
        assert q <= far
        if far - q:
            assert nx.is_d_separator(g, {node}, far - q, set(q))


def test_far_set_form_equals_the_optimum_over_quilts_and_single_node_bound_is_below():
    """Theorem of puffgm.networks.quilt_bounds: min over far sets of f(A) is sigma_i*; the single-node bound is below."""
    rng = np.random.default_rng(12)
    for _ in range(8):
        net, _ = random_network(rng, n=int(rng.integers(3, 6)), zero_prob=0.2, concentration=5.0)
        eng = InfluenceEngine(PriorClass([net]))
        for eps in (0.5, 2.0):
            for node in net.nodes:
                opt = brute_node_optimum(net, node, eps)
                assert brute_far_set_optimum(net, node, eps) == pytest.approx(opt, rel=1e-9)
                assert single_node_bound(eng, node, epsilon=eps) <= opt * (1 + 1e-9)


@pytest.mark.slow
def test_branch_and_bound_finds_and_certifies_the_optimum_of_every_node():
    rng = np.random.default_rng(31)
    certified = 0
    for _ in range(8):
        n = int(rng.integers(4, 8))
        net, _ = random_network(rng, n=n, p_edge=0.5, zero_prob=0.1, concentration=20.0, max_card=2)
        search = QuiltSearch(PriorClass([net]), exhaustive=False, max_quilt_states=1 << 20)
        for eps in (0.3, 1.0):
            for node in net.nodes:
                start = search.choice(make_quilt(search.dag, node, ()), epsilon=eps)
                cert = branch_and_bound(search, node, start, epsilon=eps, budget=10_000)
                opt = brute_node_optimum(net, node, eps)
                assert cert.certified
                assert cert.best.score == pytest.approx(opt, rel=1e-9)
                assert cert.lower_bound == pytest.approx(opt, rel=1e-9) and cert.lower_bound <= opt * (1 + 1e-9)
                assert_valid_quilt(search.dag, cert.best)
                certified += cert.best.quilt != ()
    assert certified > 20  # the comparison exercises non-trivial optimal quilts


def test_truncated_search_gives_a_sound_bound_that_grows_with_the_budget():
    rng = np.random.default_rng(8)
    net, _ = random_network(rng, n=9, p_edge=0.35, zero_prob=0.05, concentration=20.0, max_card=2)
    search = QuiltSearch(PriorClass([net]), exhaustive=False)
    for node in net.nodes[::3]:
        opt = brute_node_optimum(net, node, 1.0)
        start = search.choice(make_quilt(search.dag, node, ()), epsilon=1.0)
        previous = 0.0
        for budget in (0, 1, 2, 4, 8, 32, 100_000):
            cert = branch_and_bound(search, node, start, epsilon=1.0, budget=budget)
            assert cert.lower_bound <= opt * (1 + 1e-9) and opt <= cert.best.score * (1 + 1e-9)
            assert cert.lower_bound >= previous * (1 - 1e-12)
            assert_valid_quilt(search.dag, cert.best)
            previous = cert.lower_bound
        assert cert.certified and cert.lower_bound == pytest.approx(opt, rel=1e-9)
        for width in (1, 3, 20):
            dive = far_side_dive(search, node, start, single_influences(search.engine, node), epsilon=1.0, width=width)
            assert opt <= dive.score * (1 + 1e-9) and dive.score <= start.score
            assert_valid_quilt(search.dag, dive)


def test_search_is_never_worse_than_the_structured_family_and_keeps_quilts_valid():
    rng = np.random.default_rng(44)
    for _ in range(3):
        net, dag = random_network(rng, n=13, p_edge=0.3, zero_prob=0.05, concentration=20.0, max_card=2)
        other = random_network(rng, dag=dag, n=13, zero_prob=0.05, concentration=20.0)[0]
        for eps in (0.5, 1.5):
            before = calibrate([net, other], epsilon=eps, search_budget=0)
            after = calibrate([net, other], epsilon=eps, search_budget=50)
            assert after.sigma_max <= before.sigma_max
            assert after.sigma_lower_bound <= after.sigma_max and before.sigma_lower_bound <= before.sigma_max
            assert after.sigma_lower_bound == max(after.details["per_prior_lower_bound"])
            for c in after.per_node:
                assert_valid_quilt(PriorClass([net]).dag, c)


def test_calibration_bound_equals_the_brute_force_optimum_without_exhaustive_search():
    """The structured family plus branch and bound reaches, and certifies, the exhaustive optimum."""
    rng = np.random.default_rng(5)
    for trial in range(8):
        n = int(rng.integers(3, 7))
        net, dag = random_network(rng, n=n, zero_prob=0.2, concentration=10.0)
        members = [net]
        if trial % 2:
            members.append(random_network(rng, dag=dag, n=n, zero_prob=0.2, concentration=10.0)[0])
        for eps in (0.5, 2.0):
            want = brute_sigma(members, eps)
            res = calibrate(members, epsilon=eps, exhaustive=False, max_quilt_states=1 << 20)
            assert res.sigma_lower_bound == pytest.approx(want, rel=1e-9)
            assert res.sigma_lower_bound <= want * (1 + 1e-9)
            assert res.sigma_max == pytest.approx(want, rel=1e-9)
            assert res.optimality_gap == pytest.approx(0.0, abs=1e-9)
            for c in res.per_node:
                assert_valid_quilt(PriorClass(members).dag, c)
            exh = calibrate(members, epsilon=eps)
            assert exh.sigma_lower_bound == exh.sigma_max == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_asia_bound_equals_exhaustive_optimum(eps, asia):
    pc = asia
    want = brute_sigma(list(pc.priors), eps)
    res = calibrate(pc, epsilon=eps, exhaustive=False, max_quilt_states=1 << 20)
    assert res.sigma_lower_bound == pytest.approx(want, rel=1e-9)
    assert res.sigma_max == pytest.approx(want, rel=1e-9)


def test_alarm_is_certified_optimal_and_never_worse_than_the_structured_search():
    pc = load_prior_class("example:alarm")
    res = calibrate(pc, epsilon=1.0)
    assert res.sigma_max <= 32.5924203 and res.sigma_lower_bound <= res.sigma_max
    assert res.optimality_gap == pytest.approx(0.0, abs=1e-9)  # measured: the bound meets sigma_max
    assert_valid_quilt(pc.dag, res.worst)
    single = single_node_bound(InfluenceEngine(pc), res.worst_node, epsilon=1.0)
    assert 30 < single <= res.sigma_lower_bound * (1 + 1e-12)
    d = res.to_dict()
    assert d["sigma_lower_bound"] == res.sigma_lower_bound and d["optimality_gap"] == res.optimality_gap
    assert "lower bound on sigma_max over all Markov quilts" in res.explain()


def test_result_fields_json_and_validation():
    net, _ = random_network(np.random.default_rng(1), n=4)
    res = calibrate(net, epsilon=1.0, search_budget=0)
    assert res.sigma_lower_bound <= res.sigma_max
    assert json.loads(json.dumps(res.to_dict(), allow_nan=False))["optimality_gap"] is not None
    with pytest.raises(ParameterError, match="'search_budget' parameter of calibrate must be an integer >= 0"):
        calibrate(net, epsilon=1.0, search_budget=-1)
    with pytest.raises(ParameterError, match="search_budget"):
        calibrate(net, epsilon=1.0, search_budget=1.5)
    from puffgm.chains import ChainPriorClass, MQMExact

    chain = MQMExact(ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], initial=[1, 0], length=10))
    d = chain.calibrate(epsilon=1.0).to_dict()
    assert d["sigma_lower_bound"] is None and d["optimality_gap"] is None


def test_cli_prints_the_bound_and_refuses_a_bad_budget(capsys):
    from puffgm.cli import main

    assert main(["calibrate", "example:asia", "--epsilon", "4", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["sigma_lower_bound"] == pytest.approx(d["sigma_max"]) and d["optimality_gap"] == 0.0
    assert main(["calibrate", "example:asia", "--epsilon", "4", "--search-budget", "0"]) == 0
    assert "lower bound on sigma_max over all Markov quilts" in capsys.readouterr().out
    assert main(["calibrate", "example:asia", "--epsilon", "4", "--search-budget", "-1"]) == 2
    err = capsys.readouterr().err
    assert "search_budget" in err and len(err.strip().splitlines()) == 1


def test_lemmas_quilt_as_influential_as_its_far_set_and_separator_reduction():
    """Lemma 2 (e(Q) = e(Q ∪ R(Q))) and e(A) = e(Q*(A)), by brute force on joint tables."""
    rng = np.random.default_rng(17)
    checked = 0
    for _ in range(6):
        net, _ = random_network(rng, n=6, p_edge=0.4, zero_prob=0.15, concentration=3.0)
        dag = PriorClass([net]).dag
        for node in net.nodes:
            others = [v for v in net.nodes if v != node]
            for r in (1, 2, 3):
                for far in itertools.combinations(others, r):
                    q = make_quilt(dag, node, far)
                    e_far = brute_influence([net], node, tuple(q.quilt | q.remote))
                    e_q = brute_influence([net], node, tuple(q.quilt))
                    assert e_q == pytest.approx(e_far, rel=1e-9, abs=1e-12) or e_q == e_far == math.inf
                    star = far_set_quilt(dag, node, far)
                    e_star = brute_influence([net], node, tuple(star)) if star else 0.0
                    e_a = brute_influence([net], node, far)
                    assert e_star == pytest.approx(e_a, rel=1e-9, abs=1e-12) or e_star == e_a == math.inf
                    checked += bool(set(far) - star)
    assert checked > 20  # the reduction drops nodes in many cases


def test_network_lower_bound_is_below_the_brute_force_optimum():
    from puffgm.networks.quilt_bounds import network_lower_bound

    rng = np.random.default_rng(23)
    for _ in range(4):
        n = int(rng.integers(3, 6))
        net, dag = random_network(rng, n=n, zero_prob=0.2, concentration=5.0)
        other = random_network(rng, dag=dag, n=n, zero_prob=0.2, concentration=5.0)[0]
        for eps in (0.5, 2.0):
            bound, node = network_lower_bound([net, other], epsilon=eps)
            assert bound <= brute_sigma([net, other], eps) * (1 + 1e-9)
            assert network_lower_bound([net, other], epsilon=eps, max_nodes=1)[0] <= bound
            assert node in net.nodes
    with pytest.raises(ParameterError, match="'max_nodes' parameter of network_lower_bound"):
        network_lower_bound(net, epsilon=1.0, max_nodes=0)
    with pytest.raises(ParameterError, match="'epsilon' parameter of network_lower_bound"):
        network_lower_bound(net, epsilon=math.inf)


def test_zero_budget_keeps_the_structured_search():
    rng = np.random.default_rng(3)
    net, _ = random_network(rng, n=13, p_edge=0.3, zero_prob=0.05, concentration=20.0, max_card=2)
    from puffgm.networks.calibration import NetworkOptions, _node_optima, _Run, network_clock

    search = QuiltSearch(PriorClass([net]))
    run = _Run(NetworkOptions(search_budget=0), jobs=1, bar=None, clock=network_clock(None, len(net.nodes), net.name),
               refined=[])
    structured = _node_optima(search, list(net.nodes), 1.0, 0, run)[0]
    res = calibrate(net, epsilon=1.0, search_budget=0)
    assert [c.score for c in res.per_node] == [structured[v].score for v in net.nodes]
    assert res.details["quilt_set"].startswith("structured+refined@")


def test_cli_refuses_search_budget_for_chain_specs(tmp_path, capsys):
    from puffgm.cli import main

    spec = tmp_path / "chain.json"
    spec.write_text(json.dumps({"transition": [[0.9, 0.1], [0.4, 0.6]], "initial": "stationary", "length": 10}))
    assert main(["calibrate", str(spec), "--epsilon", "1", "--search-budget", "5"]) == 2
    err = capsys.readouterr().err
    assert "--search-budget does not apply to Markov-chain priors (method 'exact')" in err and len(err.strip().splitlines()) == 1
