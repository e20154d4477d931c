"""MQMExact with a fixed non-stationary start: exact early nodes + certified mixing bound.

The certified result must never be below the exact every-node search and must be close to it;
the pieces of the derivation (Hilbert-metric non-expansion, the per-quilt influence bound) are
checked directly.
"""

import math

import numpy as np
import pytest

from puffgm.chains import ChainPriorClass, MQMExact
from puffgm.chains.exact import chain_max_influence


def _random_P(rng, k, zero=0.0):
    P = rng.dirichlet(np.ones(k) * 0.7, size=k)
    if zero:
        P = np.where(rng.random((k, k)) < zero, 0.0, P)
        P[np.arange(k), (np.arange(k) + 1) % k] += 0.05  # keep it irreducible (a cycle through all states)
        P = P / P.sum(axis=1, keepdims=True)
    return P


def _starts(rng, k, P):
    pi = ChainPriorClass.from_matrices(P, "stationary", 2).members[0].stationary
    point = np.eye(k)[int(rng.integers(k))]
    near = 0.97 * pi + 0.03 * point  # close to stationarity: the worst node is late
    return [point, rng.dirichlet(np.ones(k)), near]


def _both(cc, eps):
    mixed = MQMExact(cc, per_node=False).calibrate(epsilon=eps)
    exact = MQMExact(cc, per_node=False, mixing=False).calibrate(epsilon=eps)
    return mixed, exact


def test_certified_result_brackets_the_exact_every_node_search():
    rng = np.random.default_rng(7)
    used, exact_hits, bounded_hits = 0, 0, 0
    for trial in range(14):
        k = int(rng.integers(2, 5))
        P = _random_P(rng, k, zero=0.3 if trial % 3 == 0 else 0.0)
        T = int(rng.choice([40, 90, 160]))
        eps = float(rng.choice([0.5, 1.0, 2.0]))
        for q in _starts(rng, k, P):
            cc = ChainPriorClass.from_matrices(P, q, T)
            mixed, exact = _both(cc, eps)
            d = mixed.details
            assert exact.details["strategy"] == "every node"
            # never below the exact optimum, and close to it
            assert mixed.sigma_max >= exact.sigma_max * (1 - 1e-12)
            assert mixed.sigma_max <= exact.sigma_max * (1 + 2e-6)
            if "mixing_node" not in d:
                continue
            used += 1
            assert d["sigma_lower_bound"] <= exact.sigma_max * (1 + 1e-12)
            assert d["certified_gap"] == pytest.approx(mixed.sigma_max - d["sigma_lower_bound"], abs=1e-9)
            if d["exact"]:
                exact_hits += 1
                assert mixed.sigma_max == pytest.approx(exact.sigma_max, rel=1e-12)
                assert d["exact_optimum"]
            else:
                bounded_hits += 1
                assert not d["exact_optimum"] and any("mixing bound" in n for n in mixed.notes)
            # the reported quilt is a real quilt whose certified score is the result
            w = mixed.worst
            assert w.score == mixed.sigma_max
    assert used >= 30 and exact_hits >= 5 and bounded_hits >= 5  # both ways of stopping are exercised


def test_per_quilt_bound_and_hilbert_non_expansion():
    """e_i(Q) <= e_pi(Q) + d_H(mu_i, pi) for every quilt, and d_H(uP, vP) <= d_H(u, v)."""
    rng = np.random.default_rng(3)
    for _ in range(6):
        k = int(rng.integers(2, 5))
        P = _random_P(rng, k)
        q = rng.dirichlet(np.ones(k))
        T = 30
        fixed = ChainPriorClass.from_matrices(P, q, T)
        stat = ChainPriorClass.from_matrices(P, "stationary", T)
        pi = stat.members[0].stationary
        mu = q.copy()
        prev = math.inf
        for i in range(1, T + 1):
            h = float(np.ptp(np.log(mu) - np.log(pi)))
            assert h <= prev + 1e-12  # the distance to pi never grows
            prev = h
            for quilt in [(i - 2, i + 3), (i - 1, i + 1), (i + 2,), (i - 3,)]:
                if all(1 <= v <= T for v in quilt):
                    e_i = chain_max_influence(fixed, i, quilt)
                    e_pi = chain_max_influence(stat, i, quilt)
                    assert e_i <= e_pi + h + 1e-9
                    assert e_i >= e_pi - h - 1e-9 or len(quilt) == 1 and quilt[0] < i
            mu = mu @ P
        u, v = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        assert np.ptp(np.log(u @ P) - np.log(v @ P)) <= np.ptp(np.log(u) - np.log(v)) + 1e-12


def test_cost_stops_growing_with_T():
    P = [[0.9, 0.1], [0.4, 0.6]]
    results = [MQMExact(ChainPriorClass.from_matrices(P, [1, 0], T)).calibrate(epsilon=1.0) for T in (2000, 10**6)]
    short, long_ = results
    assert short.sigma_max == long_.sigma_max == pytest.approx(12.9341, abs=1e-4)  # the running example's X8
    for r in results:
        assert r.details["exact"] and r.details["early_nodes_searched"] < 100
    assert long_.details["influence_evaluations"] <= 2 * short.details["influence_evaluations"] + 100
    # a 3-state chain starting at a point mass, far from pi, long chain: bracketed, cheap
    P3 = [[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.3, 0.3, 0.4]]
    r = MQMExact(ChainPriorClass.from_matrices(P3, [0, 0, 1], 10**6)).calibrate(epsilon=0.5)
    assert r.details["early_nodes_searched"] < 200
    assert r.details["sigma_lower_bound"] <= r.sigma_max <= r.details["sigma_lower_bound"] * (1 + 2e-6)
    stationary = MQMExact(ChainPriorClass.from_matrices(P3, "stationary", 10**6)).calibrate(epsilon=0.5)
    assert r.sigma_max >= stationary.sigma_max * (1 - 1e-6)  # the late nodes are nearly stationary


@pytest.mark.parametrize("P,q", [
    ([[0.0, 1.0], [1.0, 0.0]], [1.0, 0.0]),                 # periodic: the marginals never converge
    ([[0.5, 0.5, 0.0], [0.0, 0.7, 0.3], [0.0, 0.4, 0.6]], [1, 0, 0]),  # a transient state: pi has a zero
])
def test_chains_without_convergence_fall_back_to_every_node(P, q):
    cc = ChainPriorClass.from_matrices(P, q, 120)
    mixed, exact = _both(cc, 1.0)
    assert mixed.sigma_max == exact.sigma_max
    assert mixed.worst.quilt == exact.worst.quilt


def test_families_and_paper_convention_keep_their_meaning():
    P1, P2 = [[0.9, 0.1], [0.4, 0.6]], [[0.7, 0.3], [0.2, 0.8]]
    fam = ChainPriorClass.from_family([P1, P2], [[1, 0], [0.3, 0.7]], 150)
    mixed = MQMExact(fam, per_node=False).calibrate(epsilon=1.0)
    exact = MQMExact(fam, per_node=False, mixing=False).calibrate(epsilon=1.0)
    assert exact.sigma_max <= mixed.sigma_max <= exact.sigma_max * (1 + 2e-6)
    assert exact.details["strategy"] == "every node" and "mixing_node" in mixed.details
    assert mixed.sigma_max == max(MQMExact(ChainPriorClass([m]), per_node=False).calibrate(epsilon=1.0).sigma_max
                                  for m in fam.members)
    for paper in (False, True):
        cc = ChainPriorClass.from_matrices(P1, [1, 0], 150)
        a = MQMExact(cc, per_node=False, paper_convention=paper).calibrate(epsilon=1.0)
        b = MQMExact(cc, per_node=False, paper_convention=paper, mixing=False).calibrate(epsilon=1.0)
        assert b.sigma_max <= a.sigma_max <= b.sigma_max * (1 + 2e-6)
        assert "mixing_node" in a.details and a.details["paper_convention"] == paper
    with pytest.raises(Exception, match="mixing_rtol"):
        MQMExact(fam, mixing_rtol=0.0)


def test_single_quilt_evaluation_matches_equation_5():
    """The certificate path (one quilt at a time) computes the same influence as the node tables."""
    from puffgm.chains.exact import ChainQuiltSearch

    rng = np.random.default_rng(12)
    for trial in range(5):
        k = int(rng.integers(2, 5))
        P = _random_P(rng, k, zero=0.4)
        q = np.eye(k)[0] if trial % 2 else rng.dirichlet(np.ones(k))
        for paper in (False, True):
            cc = ChainPriorClass.from_matrices(P, q, 25)
            s = ChainQuiltSearch(cc, epsilon=1.0, paper_convention=paper)
            s.ensure(24)
            for i in range(1, 26):
                for a, b in [(1, 1), (i - 1, 2), (3, 0), (0, 4), (2, 25 - i)]:
                    if (a or b) and 0 <= a < i and i + b <= 25:
                        quilt = tuple(v for v in ((i - a) if a else None, (i + b) if b else None) if v)
                        _, d = s.quilt_score(i, a, b)
                        assert d == pytest.approx(chain_max_influence(cc, i, quilt, paper_convention=paper),
                                                  abs=1e-12)
