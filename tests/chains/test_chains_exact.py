"""MQMExact: paper numbers, brute force over every quilt, shortcuts, zero probabilities."""

import itertools
import math

import numpy as np
import pytest

from puffgm.chains import ChainPriorClass, MQMExact
from puffgm.chains.exact import chain_max_influence
from puffgm.exceptions import ParameterError

THETA1 = ([1.0, 0.0], [[0.9, 0.1], [0.4, 0.6]])
THETA2 = ([0.9, 0.1], [[0.8, 0.2], [0.3, 0.7]])


def chain(P, q, T):
    return ChainPriorClass.from_matrices(P, initial=q, length=T)


# ---------------------------------------------------------------- brute force
def joint(P, q, T):
    """Joint table of X1..XT (axes in order)."""
    P, q = np.asarray(P, float), np.asarray(q, float)
    J = q.copy()
    for _ in range(T - 1):
        J = J[..., None] * P
    return J


def brute_influence(J, i, Q):
    """max over secret pairs and x_Q of log P(x_Q | X_i=x) / P(x_Q | X_i=x'), skipping impossible events."""
    T = J.ndim
    keep = sorted(set(Q) | {i})
    other = tuple(ax for ax in range(T) if ax not in keep)
    M = J.sum(axis=other) if other else J
    M = np.moveaxis(M, keep.index(i), 0)  # (x_i, x_Q...)
    px = M.reshape(M.shape[0], -1).sum(axis=1)
    cond = M.reshape(M.shape[0], -1)
    best = 0.0
    for x, y in itertools.permutations(range(M.shape[0]), 2):
        if px[x] <= 0 or px[y] <= 0:
            continue
        num, den = cond[x] / px[x], cond[y] / px[y]
        for n_, d_ in zip(num, den, strict=True):
            if n_ > 0 and d_ == 0:
                return math.inf
            if n_ > 0:
                best = max(best, math.log(n_ / d_))
    return best


def brute_sigma(P, q, T, eps):
    """Algorithm 2 over EVERY subset quilt of every node (no Lemma 4.6), by brute force."""
    J = joint(P, q, T)
    sig = 0.0
    for i in range(T):
        others = [j for j in range(T) if j != i]
        best = T / eps
        for r in range(1, len(others) + 1):
            for Q in itertools.combinations(others, r):
                lo = max([j for j in Q if j < i], default=-1)
                hi = min([j for j in Q if j > i], default=T)
                card = hi - lo - 1
                e = brute_influence(J, i, Q)
                if e < eps:
                    best = min(best, card / (eps - e))
        sig = max(sig, best)
    return sig


def random_chain(rng, k, zeros=0.15):
    P = rng.dirichlet(np.ones(k) * 0.8, size=k)
    P[rng.random((k, k)) < zeros] = 0.0
    P[np.arange(k), rng.integers(0, k, k)] += 0.2
    return P / P.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------- paper numbers
def test_running_example_theta1_exact_skips_impossible_left_end():
    r = MQMExact(chain(THETA1[1], THETA1[0], 100)).calibrate(epsilon=1.0)
    assert r.sigma_max == pytest.approx(12.9341, abs=5e-5)
    assert r.worst.node == "X8" and r.worst.quilt == ("X1", "X13")
    assert r.worst.n_nearby == 11 and r.method == "exact"
    assert r.details["exact_optimum"]


def test_running_example_theta1_paper_convention():
    r = MQMExact(chain(THETA1[1], THETA1[0], 100), paper_convention=True).calibrate(epsilon=1.0)
    assert r.sigma_max == pytest.approx(13.0219, abs=5e-5)
    assert r.worst.node == "X8" and r.worst.quilt == ("X3", "X13")
    assert any("paper convention" in n for n in r.notes)


def test_running_example_theta2():
    r = MQMExact(chain(THETA2[1], THETA2[0], 100)).calibrate(epsilon=1.0)
    assert r.sigma_max == pytest.approx(10.6402, abs=5e-5)
    assert r.worst.node == "X6" and r.worst.quilt == ("X10",)


def test_running_example_family_is_sup_over_theta():
    fam = ChainPriorClass.from_family([THETA1[1], THETA2[1]], [THETA1[0], THETA2[0]], length=100)
    r = MQMExact(fam).calibrate(epsilon=1.0)
    assert r.sigma_max >= 12.9341 - 1e-4
    # the per-quilt influence is the max over members
    for quilt in [(1, 13), (3, 13), (13,), (1,)]:
        e = chain_max_influence(fam, 8, quilt)
        e1 = chain_max_influence(chain(THETA1[1], THETA1[0], 100), 8, quilt)
        e2 = chain_max_influence(chain(THETA2[1], THETA2[0], 100), 8, quilt)
        assert e == pytest.approx(max(e1, e2), abs=1e-12)


# ---------------------------------------------------------------- brute force
@pytest.mark.parametrize("seed", range(8))
def test_influence_equation5_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    k, T = int(rng.integers(2, 4)), 6
    P = random_chain(rng, k)
    q = rng.dirichlet(np.ones(k))
    if seed % 2:
        q[0] = 0.0
        q /= q.sum()
    cc = chain(P, q, T)
    J = joint(P, q, T)
    for i in range(1, T + 1):
        for a in range(0, i):
            for b in range(0, T - i + 1):
                Q = tuple(([i - a] if a else []) + ([i + b] if b else []))
                got = chain_max_influence(cc, i, Q)
                want = brute_influence(J, i - 1, [v - 1 for v in Q])
                if math.isinf(want):
                    assert math.isinf(got)
                else:
                    assert got == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("seed", range(10))
def test_sigma_matches_brute_force_over_all_quilts(seed):
    rng = np.random.default_rng(100 + seed)
    k, T = int(rng.integers(2, 4)), int(rng.integers(2, 7))
    P = random_chain(rng, k, zeros=0.1 if seed < 5 else 0.3)
    q = rng.dirichlet(np.ones(k))
    if seed % 3 == 0:
        q[-1] = 0.0
        q /= q.sum()
    eps = float(rng.choice([1.0, 3.0, 6.0]))
    got = MQMExact(chain(P, q, T)).calibrate(epsilon=eps).sigma_max
    assert got == pytest.approx(brute_sigma(P, q, T, eps), rel=1e-9)


def test_any_initial_is_sup_over_simplex():
    rng = np.random.default_rng(7)
    for _ in range(4):
        k, T = 3, 6
        P = random_chain(rng, k, zeros=0.2)
        cc = ChainPriorClass.from_matrices(P, initial="any", length=T)
        for i in range(2, T + 1):
            for Q in [(i - 1,), (1,), (1, T) if i < T else (i - 1,), (i - 1, T) if i < T else (1,)]:
                got = chain_max_influence(cc, i, Q)
                # every q in the simplex is below the closed form ...
                vals = []
                for qq in list(rng.dirichlet(np.ones(k) * 0.3, size=40)) + [
                    (1 - d) * np.eye(k)[y] + d / k for y in range(k) for d in (1e-3, 1e-6)
                ]:
                    vals.append(brute_influence(joint(P, qq, T), i - 1, [v - 1 for v in Q]))
                best = max(vals)
                assert best <= got + 1e-7
                # ... and it is approached near a vertex (sup, not max)
                if math.isfinite(got):
                    assert best >= got - 2e-3
                else:
                    assert best > 5.0


# ---------------------------------------------------------------- shortcuts
@pytest.mark.parametrize("seed", range(6))
def test_stationary_shortcut_equals_every_node(seed):
    rng = np.random.default_rng(200 + seed)
    k = int(rng.integers(2, 5))
    P = random_chain(rng, k, zeros=0.0)
    T = int(rng.integers(20, 60))
    cc = ChainPriorClass.from_matrices(P, initial="stationary", length=T)
    eps = float(rng.choice([0.5, 1.0, 2.0]))
    fast = MQMExact(cc, per_node=False).calibrate(epsilon=eps)
    full = MQMExact(cc, per_node=True).calibrate(epsilon=eps)
    assert fast.details["strategy"].startswith("stationary")
    assert full.details["strategy"] == "every node"
    assert fast.sigma_max == pytest.approx(full.sigma_max, rel=1e-12)
    assert len(full.per_node) == T
    assert max(c.score for c in full.per_node) == pytest.approx(full.sigma_max, rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_any_left_scan_equals_every_node(seed):
    rng = np.random.default_rng(300 + seed)
    k = int(rng.integers(2, 4))
    P = random_chain(rng, k, zeros=0.1)
    T = int(rng.integers(10, 40))
    fam = ChainPriorClass.from_family([P, random_chain(rng, k, 0.0)], ["any", "stationary"], length=T)
    eps = float(rng.choice([1.0, 3.0]))
    fast = MQMExact(fam, per_node=False).calibrate(epsilon=eps)
    full = MQMExact(fam, per_node=True).calibrate(epsilon=eps)
    assert fast.sigma_max == pytest.approx(full.sigma_max, rel=1e-12)
    # the "any" member alone takes the left scan, and agrees with the every-node search
    anyc = ChainPriorClass.from_family([P], ["any"], length=T)
    fast1 = MQMExact(anyc, per_node=False).calibrate(epsilon=eps)
    assert fast1.details["strategy"].startswith("left scan")
    assert fast1.sigma_max == pytest.approx(MQMExact(anyc, per_node=True).calibrate(epsilon=eps).sigma_max, rel=1e-12)
    # a finite family calibrates to the max over its members (Pufferfish is a per-prior condition)
    members = [MQMExact(ChainPriorClass([m]), per_node=False).calibrate(epsilon=eps).sigma_max for m in fam.members]
    assert fast.sigma_max == max(members)


def test_max_length_restriction_is_valid_upper_bound_and_adaptive_l_is_exact():
    cc = chain(THETA1[1], THETA1[0], 100)
    exact = MQMExact(cc).calibrate(epsilon=1.0)
    short = MQMExact(cc, max_length=6).calibrate(epsilon=1.0)
    assert short.sigma_max >= exact.sigma_max
    assert not short.details["exact_optimum"]
    full = MQMExact(cc, max_length=100).calibrate(epsilon=1.0)
    assert full.sigma_max == pytest.approx(exact.sigma_max, rel=1e-12)


def test_long_stationary_chain_cost_independent_of_T():
    # cost is measured as work done (influence evaluations, bound l), not wall time:
    # timings belong to bench/bench_chains.py, not to the test suite
    P = [[0.9, 0.1], [0.4, 0.6]]
    r_small = MQMExact(ChainPriorClass.from_matrices(P, "stationary", 1000), per_node=False).calibrate(epsilon=1.0)
    r_big = MQMExact(ChainPriorClass.from_matrices(P, "stationary", 10**7)).calibrate(epsilon=1.0)
    assert r_big.details["influence_evaluations"] == r_small.details["influence_evaluations"]
    assert r_big.details["l"] == r_small.details["l"]
    assert r_big.sigma_max == pytest.approx(r_small.sigma_max, rel=1e-12)
    assert r_big.per_node == () and r_big.worst.remote == () and r_big.worst.n_remote == 10**7 - r_big.worst.n_nearby - len(r_big.worst.quilt)


def test_zero_probability_quilt_is_infinite_and_skipped():
    # state 1 can never follow state 1: X_{i+1} reveals a lot; a deterministic chain forbids small quilts
    P = [[0.0, 1.0], [1.0, 0.0]]
    cc = ChainPriorClass.from_matrices(P, initial=[0.5, 0.5], length=5)
    assert math.isinf(chain_max_influence(cc, 3, (2, 4)))
    r = MQMExact(cc).calibrate(epsilon=1.0)
    assert r.sigma_max == pytest.approx(5.0)  # only the trivial quilt (group DP) works
    assert r.worst.quilt == ()


def test_single_state_chain_has_no_secret_pairs():
    cc = ChainPriorClass.from_matrices([[1.0]], initial=[1.0], length=5)
    r = MQMExact(cc).calibrate(epsilon=2.0)
    assert r.sigma_max == pytest.approx(0.5)


def test_bad_parameters():
    cc = chain(THETA1[1], THETA1[0], 10)
    with pytest.raises(ParameterError, match="epsilon"):
        MQMExact(cc).calibrate(epsilon=0.0)
    with pytest.raises(ParameterError, match="max_length"):
        MQMExact(cc, max_length=0)
    with pytest.raises(ParameterError, match="ChainPriorClass"):
        MQMExact([[0.5, 0.5], [0.5, 0.5]])


def test_calibrate_many_matches_one_by_one_in_order():
    from puffgm import calibrate_many

    grid = [ChainPriorClass.from_matrices([[p, 1 - p], [1 - q, q]], "any", 60) for p in (0.2, 0.6, 0.9)
            for q in (0.3, 0.7)]
    serial = [MQMExact(c, per_node=False).calibrate(epsilon=1.0) for c in grid]
    for jobs in (1, 2):
        got = calibrate_many(grid, epsilon=1.0, n_jobs=jobs, per_node=False)
        assert [r.sigma_max for r in got] == [r.sigma_max for r in serial]
        assert [r.worst.quilt for r in got] == [r.worst.quilt for r in serial]
    with pytest.raises(ParameterError, match="'method' parameter of calibrate_many"):
        calibrate_many(grid, epsilon=1.0, method="nope")


@pytest.mark.parametrize("initial", ["any", "stationary", [0.7, 0.3, 0.0]])
def test_quilt_nearby_and_remote_partition_the_chain_in_order(initial):
    # every reported choice (left, right, two-sided and trivial quilts occur) splits X1..XT exactly
    rng = np.random.default_rng(5)
    kinds = set()
    for T in (1, 2, 7, 30):
        for eps in (0.2, 1.0, 4.0):
            P = rng.dirichlet(np.ones(3), size=3)
            r = MQMExact(chain(P, initial, T), per_node=True).calibrate(epsilon=eps)
            for c in (r.worst, *r.per_node):
                i = int(c.node[1:])
                q = sorted(int(v[1:]) for v in c.quilt)
                kinds.add(("left" if q and q[0] < i else "") + ("right" if q and q[-1] > i else ""))
                names = [f"X{j}" for j in range(1, T + 1)]
                parts = list(c.nearby) + list(c.quilt) + list(c.remote)
                assert sorted(parts, key=lambda v: int(v[1:])) == names
                assert list(c.remote) == [v for v in names if v not in c.nearby and v not in c.quilt]
                assert c.n_remote == len(c.remote) and c.node in c.nearby
    assert {"", "left", "right", "leftright"} <= kinds or initial != "any"


def test_underflowing_probabilities_are_refused_not_treated_as_impossible():
    """State 1 is reachable only through its own tiny self-loop: P^t[1, 1] = (1.6e-5)^t
    underflows for t > 65.  Treating it as impossible could understate influence, so the
    calibration refuses with a NumericalError; exact zeros elsewhere stay legitimate."""
    from puffgm.exceptions import NumericalError

    P = [[1.0, 0.0], [1 - 1.6e-5, 1.6e-5]]
    with pytest.raises(NumericalError, match="below 1e-280"):
        MQMExact(ChainPriorClass.from_matrices(P, "any", 200)).calibrate(epsilon=1.0)
    with pytest.raises(NumericalError, match="marginal"):
        MQMExact(ChainPriorClass.from_matrices(P, [0.5, 0.5], 200)).calibrate(epsilon=1.0)
    # exact structural zeros are fine: the same chain, short enough not to underflow
    MQMExact(ChainPriorClass.from_matrices(P, [0.5, 0.5], 20)).calibrate(epsilon=1.0)


def test_stationary_law_with_zeros_raises_no_floating_point_warning():
    import warnings

    P = [[0.5, 0.4, 0.1], [0.3, 0.6, 0.1], [0.3, 0.3, 0.4]]
    P0 = [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.3, 0.3, 0.4]]  # state 2 is transient: pi_2 = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for M in (P, P0):
            res = MQMExact(ChainPriorClass.from_matrices(M, "stationary", 30)).calibrate(epsilon=1.0)
            assert np.isfinite(res.sigma_max)
