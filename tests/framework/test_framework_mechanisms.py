"""Wasserstein mechanism (Song et al. section 3) and close adversaries (Theorem 2.4)."""

import math

import numpy as np
import pytest
from scipy.optimize import linprog

from puffgm.exceptions import ParameterError
from puffgm.framework import Instantiation, audit_finite
from puffgm.framework.adversaries import close_adversary, max_divergence, section_2_3_example
from puffgm.framework.cautionary import flu_clique
from puffgm.framework.wasserstein import (
    calibrate_wasserstein,
    group_dp_sensitivity,
    release_wasserstein,
    w_inf,
)


def _w_inf_lp(va, pa, vb, pb):
    """Brute force: smallest w (a |a - b|) for which a coupling supported on |x - y| <= w exists."""
    cands = sorted({abs(a - b) for a in va for b in vb})
    for w in cands:
        allowed = [(i, j) for i in range(len(va)) for j in range(len(vb)) if abs(va[i] - vb[j]) <= w + 1e-12]
        A = np.zeros((len(va) + len(vb), len(allowed)))
        for k, (i, j) in enumerate(allowed):
            A[i, k] = 1
            A[len(va) + j, k] = 1
        res = linprog(np.zeros(len(allowed)), A_eq=A, b_eq=np.concatenate([pa, pb]), bounds=(0, None), method="highs")
        if res.status == 0:
            return w
    raise AssertionError


def test_w_inf_flu_and_lp_brute_force():
    assert w_inf(range(5), [0.2, 0.225, 0.5, 0.075, 0], range(5), [0, 0.075, 0.5, 0.225, 0.2]) == 2.0
    rng = np.random.default_rng(0)
    for _ in range(40):
        va = rng.integers(-4, 5, size=rng.integers(1, 5)).astype(float)
        vb = rng.integers(-4, 5, size=rng.integers(1, 5)).astype(float)
        va, vb = np.unique(va), np.unique(vb)
        pa, pb = rng.dirichlet(np.ones(va.size)), rng.dirichlet(np.ones(vb.size))
        assert w_inf(va, pa, vb, pb) == pytest.approx(_w_inf_lp(va, pa, vb, pb), abs=1e-12)
    # point masses: W_inf is the distance
    assert w_inf([1.0], [1.0], [4.5], [1.0]) == 3.5
    with pytest.raises(ParameterError):
        w_inf([0, 1], [0.5, 0.6], [0], [1])


def test_flu_example_w2_vs_group_dp_4_and_audit():
    inst, count = flu_clique()
    cal = calibrate_wasserstein(inst, count, epsilon=0.5)
    assert cal.W == 2.0 and cal.group_dp_sensitivity == 4.0 and cal.scale == 4.0
    # Theorem 3.2, checked exactly: the release is epsilon-Pufferfish
    assert cal.audit.loss <= 0.5 + 1e-12
    # the conditional laws printed in the paper
    lp0 = np.exp(inst.conditional(0, "X1=0")).reshape(inst.shape)
    law = [lp0[count == j].sum() for j in range(5)]
    assert law == pytest.approx([0.2, 0.225, 0.5, 0.075, 0.0], abs=1e-12)
    rel = release_wasserstein(cal, 2.0, random_state=3)
    assert rel.secure is False and rel.value != 2.0


def _random_network(rng, n_nodes, max_card=3, p_edge=0.4):
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    nodes = [f"V{i}" for i in range(n_nodes)]
    edges = [(nodes[i], nodes[j]) for i in range(n_nodes) for j in range(i + 1, n_nodes) if rng.random() < p_edge]
    m = DiscreteBayesianNetwork()
    m.add_nodes_from(nodes)
    m.add_edges_from(edges)
    cards = {v: int(rng.integers(2, max_card + 1)) for v in nodes}
    for v in nodes:
        parents = [u for u, w in edges if w == v]
        cols = int(np.prod([cards[u] for u in parents])) if parents else 1
        vals = rng.dirichlet(np.full(cards[v], 0.8), size=cols).T
        m.add_cpds(TabularCPD(v, cards[v], vals, evidence=parents or None,
                              evidence_card=[cards[u] for u in parents] or None))
    return m


def test_theorem_3_3_on_random_networks():
    """W <= group-DP sensitivity (Theorem 3.3) and the audited loss <= epsilon (Theorem 3.2)."""
    rng = np.random.default_rng(12)
    for _ in range(12):
        nets = [_random_network(rng, 4)]
        inst = Instantiation.bayesian_network_default(nets)
        w = rng.uniform(0.2, 2.0, size=len(inst.nodes))
        q = lambda a, w=w: float(sum(wi * v for wi, v in zip(w, a.values(), strict=True)))  # noqa: E731
        cal = calibrate_wasserstein(inst, q, epsilon=1.0)
        assert cal.W <= cal.group_dp_sensitivity + 1e-12
        if cal.W > 0:
            assert cal.audit.loss <= 1.0 + 1e-9
        # independent components: the group sensitivity is computed per component
        assert cal.group_dp_sensitivity <= group_dp_sensitivity(inst, q, [inst.nodes]) + 1e-12


def test_wasserstein_reduces_to_laplace_under_independence():
    joint = np.multiply.outer(np.array([0.3, 0.7]), np.array([0.6, 0.4]))
    inst = Instantiation.bayesian_network_default([joint], nodes=["A", "B"], states=[2, 2], edges=[])
    cal = calibrate_wasserstein(inst, lambda a: a["A"] + 2 * a["B"], epsilon=1.0)
    assert cal.W == 2.0 and cal.group_dp_sensitivity == 2.0
    assert cal.audit.loss == pytest.approx(1.0, abs=1e-12)


# ---------------------------------------------------------------- close adversaries


def test_section_2_3_numbers():
    r = section_2_3_example()
    assert r["exp_unconditioned"] == pytest.approx(90.0, rel=1e-12)
    assert r["exp_conditioned"] == pytest.approx(1728 / 19, rel=1e-12)
    assert r["exp_paper_conditioned"] == pytest.approx(91.0962, abs=5e-5)  # rounded conditionals
    assert r["close_adversary_delta"] == pytest.approx(math.log(1728 / 19), rel=1e-12)
    assert max_divergence(np.log([1 / 3, 1 / 2, 1 / 6]), np.log([1 / 2, 1 / 4, 1 / 4])) == pytest.approx(math.log(2))


def test_theorem_2_4_bound_holds_on_random_instances():
    rng = np.random.default_rng(5)
    shape = (2, 3)
    pairs = [(("A", 0), ("A", 1)), (("B", 0), ("B", 2))]
    for _ in range(25):
        theta = [rng.dirichlet(np.ones(6)).reshape(shape) for _ in range(2)]
        tilde = rng.dirichlet(np.ones(6)).reshape(shape)
        mech = rng.dirichlet(np.ones(3), size=6).reshape(shape + (3,))
        inst = Instantiation(theta, pairs, nodes=["A", "B"], states=list(shape))
        eps = audit_finite(inst, mech).loss
        ca = close_adversary(inst, tilde, epsilon=eps)
        loss_tilde = audit_finite(Instantiation([tilde], pairs, nodes=["A", "B"], states=list(shape)), mech).loss
        assert loss_tilde <= ca.degraded_epsilon + 1e-9
        assert ca.delta == pytest.approx(min(ca.per_prior))


def test_close_adversary_inside_theta_has_delta_zero():
    joint = np.array([[0.1, 0.2], [0.3, 0.4]])
    inst = Instantiation([joint, np.full((2, 2), 0.25)], [(("A", 0), ("A", 1))], nodes=["A", "B"], states=[2, 2])
    assert close_adversary(inst, joint).delta == 0.0
