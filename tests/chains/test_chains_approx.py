"""MQMApprox: section 4.4.2 numbers, never below MQMExact, refusals, exact privacy audit."""

import math

import numpy as np
import pytest

from puffgm.chains import ChainPriorClass, MQMApprox, MQMExact
from puffgm.chains.approx import chain_mixing_parameters
from puffgm.exceptions import NotApplicableError


def test_running_example_mixing_parameters():
    p1 = chain_mixing_parameters([[0.9, 0.1], [0.4, 0.6]])
    p2 = chain_mixing_parameters([[0.8, 0.2], [0.3, 0.7]])
    assert p1["pi"] == pytest.approx([0.8, 0.2]) and p1["pi_min"] == pytest.approx(0.2)
    assert p2["pi"] == pytest.approx([0.6, 0.4]) and p2["pi_min"] == pytest.approx(0.4)
    assert p1["gap_ppstar"] == pytest.approx(0.75) and p2["gap_ppstar"] == pytest.approx(0.75)
    assert p1["reversible"] and p2["reversible"]
    fam = ChainPriorClass.from_family([[[0.9, 0.1], [0.4, 0.6]], [[0.8, 0.2], [0.3, 0.7]]], [[1, 0], [0.9, 0.1]], 100)
    r = MQMApprox(fam).calibrate(epsilon=1.0)
    assert r.details["pi_min"] == pytest.approx(0.2) and r.details["eigengap"] == pytest.approx(0.75)
    assert r.method == "approx" and r.sigma_max >= MQMExact(fam).calibrate(epsilon=1.0).sigma_max


def rand_irreducible(rng, k, reversible=False):
    P = rng.dirichlet(np.ones(k), size=k) + 0.02
    P /= P.sum(axis=1, keepdims=True)
    if reversible:  # symmetric weights give a reversible chain
        W = P + P.T
        P = W / W.sum(axis=1, keepdims=True)
    return P


@pytest.mark.parametrize("seed", range(12))
def test_approx_never_below_exact(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 5))
    T = int(rng.choice([30, 100, 400]))
    eps = float(rng.choice([0.5, 1.0, 3.0]))
    kind = ["stationary", "any", list(rng.dirichlet(np.ones(k)))][seed % 3]
    cc = ChainPriorClass.from_matrices(rand_irreducible(rng, k, reversible=seed % 2 == 0), kind, T)
    a = MQMApprox(cc).calibrate(epsilon=eps)
    e = MQMExact(cc).calibrate(epsilon=eps)
    assert a.sigma_max >= e.sigma_max * (1 - 1e-12)
    # Lemma 4.8 bounds dominate the exact influence wherever they are finite
    m = MQMApprox(cc)
    from puffgm.chains.exact import chain_max_influence

    i = T // 2
    for aa, bb in [(int(m.t0) + 1, int(m.t0) + 1), (int(m.t0) + 3, int(m.t0) + 2)]:
        if i - aa >= 1 and i + bb <= T:
            assert m.bound_two(aa, bb) >= chain_max_influence(cc, i, (i - aa, i + bb)) - 1e-12
            assert m.bound_left(aa) >= chain_max_influence(cc, i, (i - aa,)) - 1e-12
            assert m.bound_right(bb) >= chain_max_influence(cc, i, (i + bb,)) - 1e-12


def test_bounds_only_beyond_threshold():
    m = MQMApprox(ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], "any", 100))
    t0 = 2 * math.log(1 / 0.2) / 1.0
    assert m.t0 == pytest.approx(t0)
    assert math.isinf(m.bound_two(3, 10)) and math.isinf(m.bound_right(3))
    assert math.isfinite(m.bound_two(4, 4))


def test_refuses_reducible_and_periodic():
    with pytest.raises(NotApplicableError, match="irreducible"):
        MQMApprox(ChainPriorClass.from_matrices([[1.0, 0.0], [0.5, 0.5]], [0.5, 0.5], 10))
    with pytest.raises(NotApplicableError, match="period 2"):
        MQMApprox(ChainPriorClass.from_matrices([[0.0, 1.0], [1.0, 0.0]], [0.5, 0.5], 10))


def test_long_chain_uses_middle_node_and_does_not_depend_on_T():
    # timings are in bench/bench_chains.py; here: the same answer at T = 10^4 and 10^6 (Lemma 4.9)
    r = MQMApprox(ChainPriorClass.from_matrices([[0.8, 0.2], [0.3, 0.7]], "stationary", 10**6)).calibrate(epsilon=1.0)
    r4 = MQMApprox(ChainPriorClass.from_matrices([[0.8, 0.2], [0.3, 0.7]], "stationary", 10**4)).calibrate(epsilon=1.0)
    assert r.worst.node == "X500000" and "middle" in r.details["strategy"]
    assert r.sigma_max == pytest.approx(r4.sigma_max, rel=1e-12)


# ------------------------------------------------------------ exact privacy audit
def audit(P, q, T, i, sigma, eps, L=1.0):
    """sup over w and secret pairs of log p(w | X_i=a) / p(w | X_i=b) for F = sum(X) + Lap(L sigma)."""
    import itertools

    P, q = np.asarray(P), np.asarray(q)
    k = len(q)
    F, W = [], []
    for x in itertools.product(range(k), repeat=T):
        p = q[x[0]] * np.prod([P[x[t], x[t + 1]] for t in range(T - 1)])
        F.append(sum(x))
        W.append((x[i - 1], p))
    F = np.array(F, float)
    grid = np.linspace(F.min() - 5, F.max() + 5, 2001)
    dens = {}
    for v in range(k):
        w = np.array([p if xv == v else 0.0 for xv, p in W])
        if w.sum() > 0:
            w /= w.sum()
            dens[v] = (w[:, None] * np.exp(-np.abs(grid[None, :] - F[:, None]) / (L * sigma))).sum(axis=0)
    worst = 0.0
    for a in dens:
        for b in dens:
            worst = max(worst, float(np.max(np.log(dens[a] / dens[b]))))
    return worst


@pytest.mark.parametrize("seed", range(3))
def test_exact_audit_of_released_laplace(seed):
    rng = np.random.default_rng(40 + seed)
    P = rand_irreducible(rng, 2)
    q = rng.dirichlet(np.ones(2))
    T, eps = 7, 1.0
    cc = ChainPriorClass.from_matrices(P, q, T)
    for res in (MQMExact(cc).calibrate(epsilon=eps), MQMApprox(cc).calibrate(epsilon=eps)):
        for i in range(1, T + 1):
            assert audit(P, q, T, i, res.sigma_max, eps) <= eps + 1e-9
