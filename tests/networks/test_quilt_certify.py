"""The cutting-plane certificate (puffgm.networks.quilt_certify) against brute force over every quilt."""

import json

import networkx as nx
import numpy as np
import pytest
from _nets import random_network
from test_quilt_bounds import assert_valid_quilt, brute_node_optimum
from test_quilts_influence import brute_sigma

from puffgm.cli import main
from puffgm.exceptions import ParameterError
from puffgm.networks.calibration import calibrate
from puffgm.networks.priors import PriorClass
from puffgm.networks.quilt_certify import (
    CERTIFY_RTOL,
    _active_cuts,
    _greedy_far_set,
    _max_far_set,
    _State,
    certify_node,
)
from puffgm.networks.quilt_scores import QuiltSearch
from puffgm.networks.quilts import make_quilt


@pytest.mark.slow
def test_certificate_is_sound_and_meets_the_brute_force_optimum():
    """From the trivial quilt and no bound: lower bound <= optimum <= quilt score, and the two meet."""
    rng = np.random.default_rng(17)
    nontrivial = 0
    for _ in range(7):
        n = int(rng.integers(4, 8))
        net, _ = random_network(rng, n=n, p_edge=0.5, zero_prob=0.15, concentration=8.0, max_card=3)
        search = QuiltSearch(PriorClass([net]), exhaustive=False, max_quilt_states=1 << 20)
        for eps in (0.4, 1.5):
            for node in net.nodes:
                start = search.choice(make_quilt(search.dag, node, ()), epsilon=eps)
                cert = certify_node(search, node, start, 0.0, epsilon=eps, max_queries=100_000)
                opt = brute_node_optimum(net, node, eps)
                assert cert.lower_bound <= opt * (1 + 1e-9)
                assert opt <= cert.best.score * (1 + 1e-9) and cert.best.score <= start.score
                assert cert.certified
                assert cert.lower_bound >= opt * (1 - CERTIFY_RTOL) * (1 - 1e-9)
                assert cert.best.score * (1 - CERTIFY_RTOL) <= cert.lower_bound * (1 + 1e-9)
                assert_valid_quilt(search.dag, cert.best)
                nontrivial += cert.best.quilt != ()
    assert nontrivial > 15  # optimal quilts found by the certificate's own evaluations


@pytest.mark.slow
def test_truncated_certificate_is_sound_and_grows_with_the_budget():
    rng = np.random.default_rng(23)
    net, _ = random_network(rng, n=10, p_edge=0.4, zero_prob=0.1, concentration=10.0, max_card=2)
    search = QuiltSearch(PriorClass([net]), exhaustive=False, max_quilt_states=1 << 20)
    checked = 0
    for node in net.nodes[::2]:
        opt = brute_node_optimum(net, node, 1.0)
        start = search.choice(make_quilt(search.dag, node, ()), epsilon=1.0)
        previous = 0.0
        for budget in (0, 2, 10, 40, 200, 5000):
            cert = certify_node(search, node, start, 0.0, epsilon=1.0, max_queries=budget, max_programs=budget)
            assert cert.lower_bound <= opt * (1 + 1e-9) <= cert.best.score * (1 + 2e-9)
            # more budget never loses more than the bisection's tolerance
            assert cert.lower_bound >= previous * (1 - CERTIFY_RTOL)
            assert cert.queries <= budget + 1  # one query may finish the step that hits the budget
            assert_valid_quilt(search.dag, cert.best)
            previous = cert.lower_bound
        assert cert.certified and cert.lower_bound >= opt * (1 - CERTIFY_RTOL) * (1 - 1e-9)
        checked += 1
    assert checked == 5


def test_programs_and_greedy_respect_the_cuts():
    """M(tau) by HiGHS equals a brute-force maximum independent set of the cut hypergraph."""
    import itertools

    rng = np.random.default_rng(3)
    for _ in range(30):
        m = int(rng.integers(3, 9))
        single = np.sort(rng.random(m) * 0.5)
        st = _State(n=m + 1, epsilon=1.0, cand=list(range(m)), single=single)
        for _ in range(int(rng.integers(0, 10))):
            size = int(rng.integers(2, 4))
            st.add_cut(rng.choice(m, size=min(size, m), replace=False).tolist(), float(rng.random()))
        tau = float(rng.random())
        ub = (single < tau).astype(float)
        active = [c for c, w in st.cuts if w >= tau and all(ub[j] for j in c)]
        reduced = _active_cuts(st, tau, ub)  # the dominated cuts left out
        assert set(reduced) <= set(active)
        assert all(any(set(r) <= set(c) for r in reduced) for c in active)
        size, sol = _max_far_set(st, reduced, ub)
        want = 0
        for r in range(m + 1):
            for a in itertools.combinations(range(m), r):
                if all(ub[j] for j in a) and not any(set(c) <= set(a) for c in active):
                    want = max(want, r)
        assert size == want and len(sol) == want
        assert not any(set(c) <= set(sol) for c in active) and all(ub[j] for j in sol)
        greedy = _greedy_far_set(st, active, ub)
        assert not any(set(c) <= set(greedy) for c in active) and len(greedy) <= want


@pytest.mark.slow
def test_calibration_with_certificate_is_sound_valid_and_never_worse():
    """calibrate(certify_budget=...) on random networks and a two-prior class, structured search forced."""
    rng = np.random.default_rng(9)
    for _ in range(3):
        net, dag = random_network(rng, n=7, p_edge=0.45, zero_prob=0.1, concentration=10.0, max_card=2)
        other = random_network(rng, dag=dag, n=7, zero_prob=0.1, concentration=10.0)[0]
        for members in ([net], [net, other]):
            want = brute_sigma(members, 1.0)
            plain = calibrate(members, epsilon=1.0, exhaustive=False, search_budget=0)
            res = calibrate(members, epsilon=1.0, exhaustive=False, search_budget=0, certify_budget=0)
            assert res.sigma_max == plain.sigma_max and res.sigma_lower_bound == plain.sigma_lower_bound
            cp = calibrate(members, epsilon=1.0, exhaustive=False, search_budget=0, certify_budget=20_000)
            assert cp.sigma_lower_bound <= want * (1 + 1e-9) and want <= cp.sigma_max * (1 + 1e-9)
            assert cp.sigma_max <= plain.sigma_max and cp.sigma_lower_bound >= plain.sigma_lower_bound
            assert cp.sigma_lower_bound >= want * (1 - CERTIFY_RTOL) * (1 - 1e-9)
            assert cp.details["certify_budget"] == 20_000
            for rec in cp.details["cutting_plane_nodes"]:
                assert rec["lower_bound"] <= rec["best_score"]
            for c in cp.per_node:
                assert_valid_quilt(PriorClass([net]).dag, c)
            json.dumps(cp.to_dict())


def test_certify_budget_validation_and_cli(capsys, tmp_path):
    with pytest.raises(ParameterError, match="certify_budget"):
        calibrate("example:asia", epsilon=1.0, certify_budget=-1)
    with pytest.raises(ParameterError, match="certify_budget"):
        calibrate("example:asia", epsilon=1.0, certify_budget=2.5)
    assert main(["calibrate", "example:asia", "--epsilon", "1", "--certify-budget", "100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sigma_lower_bound"] <= out["sigma_max"]
    assert main(["calibrate", "example:asia", "--epsilon", "1", "--certify-budget", "-3"]) == 2
    err = capsys.readouterr().err
    assert "certify_budget" in err and len(err.strip().splitlines()) == 1
    spec = tmp_path / "c.json"
    spec.write_text(json.dumps({"transition": [[0.9, 0.1], [0.4, 0.6]], "initial": "stationary", "length": 10}))
    assert main(["calibrate", str(spec), "--epsilon", "1", "--certify-budget", "10"]) == 2
    err = capsys.readouterr().err
    assert "--certify-budget" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_calibration_bound_includes_the_hubs_single_node_bounds():
    """While a gap remains, the single-node bounds of the 8 highest-degree nodes enter the bound (sound)."""
    from puffgm.networks.quilt_bounds import single_node_bound
    from puffgm.networks.quilt_search import HUB_NODES

    rng = np.random.default_rng(61)
    for _ in range(3):
        net, _ = random_network(rng, n=10, p_edge=0.35, zero_prob=0.05, concentration=20.0, max_card=2)
        res = calibrate(net, epsilon=1.0, exhaustive=False, search_budget=0)
        search = QuiltSearch(PriorClass([net]))
        moral = nx.moral_graph(search.dag)
        hubs = sorted(net.nodes, key=lambda v: (-moral.degree(v), net.nodes.index(v)))[:HUB_NODES]
        hub_bound = max(single_node_bound(search.engine, v, epsilon=1.0) for v in hubs)
        assert res.sigma_lower_bound >= min(res.sigma_max, hub_bound) * (1 - 1e-12)
        assert res.sigma_lower_bound <= brute_sigma([net], 1.0) * (1 + 1e-9)
