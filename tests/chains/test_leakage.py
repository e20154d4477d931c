"""Temporal privacy leakage (puffgm.chains.leakage, Cao et al. ICDE 2017) against independent computations.

* L(a) against brute force over every subset S (random matrices up to 8 states, zeros included,
  a up to 800 in log space): this checks the threshold structure (the best S is a prefix by
  q_j/d_j) and the Pareto pruning;
* BPL/FPL/TPL against a straightforward implementation (subsets, eigenvector time reversal);
* the recursion is never below the exact leakage of randomized-response releases, enumerated;
* the suprema against long recursions, and the finiteness condition epsilon < log(1/x_max);
* the budget allocations.
"""

import itertools
import json
import math

import numpy as np
import pytest

from puffgm.chains import ChainPriorClass
from puffgm.chains.leakage import (
    allocate_budget,
    leakage_function,
    leakage_recursion,
    leakage_supremum,
    temporal_correlations,
    temporal_leakage,
    time_reversal,
)
from puffgm.exceptions import NotApplicableError, ParameterError, PriorError


def random_matrix(rng, k, zeros=0.3):
    M = rng.random((k, k)) ** 3
    M[rng.random((k, k)) < zeros] = 0.0
    for r in range(k):
        if M[r].sum() == 0:
            M[r, rng.integers(k)] = 1.0
    return M / M.sum(axis=1, keepdims=True)


def subsets(k):
    """Indicator matrix of every non-empty subset of k states (2^k - 1 rows)."""
    return np.array([[(s >> j) & 1 for j in range(k)] for s in range(1, 2 ** k)], dtype=float)


def brute_L(M, a):
    """max over ordered pairs of rows (q, d) and subsets S of log[(q(S)(e^a-1)+1)/(d(S)(e^a-1)+1)], in log space."""
    X = subsets(M.shape[0]) @ M.T                       # X[S, i] = M[i](S)
    with np.errstate(divide="ignore"):
        lx, lxc = np.log(X), np.log(np.clip(1.0 - X, 0.0, None))
    logs = np.logaddexp(lx + a, lxc) if a > 30 else np.log1p(X * math.expm1(a))  # log(1 - X + X e^a)
    return max(0.0, float(np.max(logs[:, :, None] - logs[:, None, :])))


def reversal(P):
    """Time reversal from the eigenvector of P^T for eigenvalue 1 (independent of the library)."""
    w, V = np.linalg.eig(P.T)
    pi = np.real(V[:, np.argmin(np.abs(w - 1))])
    pi = pi / pi.sum()
    return (P.T * pi[None, :]) / pi[:, None]


def straightforward(P, budgets, B=None):
    """BPL, FPL, TPL by the recursions of Cao et al. with brute-force L."""
    B = reversal(P) if B is None else B
    T = len(budgets)
    bpl, fpl = [budgets[0]], [budgets[-1]]
    for t in range(1, T):
        bpl.append(brute_L(B, bpl[-1]) + budgets[t])
        fpl.append(brute_L(P, fpl[-1]) + budgets[T - 1 - t])
    bpl, fpl = np.array(bpl), np.array(fpl[::-1])
    return bpl, fpl, bpl + fpl - np.asarray(budgets)


# ------------------------------------------------------------------ L(a)
def test_leakage_function_matches_brute_force_over_all_subsets():
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(120):
        k = int(rng.integers(2, 9))
        M = random_matrix(rng, k, zeros=rng.choice([0.0, 0.3, 0.6]))
        L = leakage_function(M)
        for a in (1e-8, 0.01, 0.3, 1.0, 3.0, 12.0, 29.9, 30.1, 60.0, 800.0):
            b = brute_L(M, a)
            worst = max(worst, abs(L(a) - b) / max(1.0, b))
            assert L(a) == pytest.approx(max(0.0, float(np.max(L.values(a), initial=0.0))), rel=1e-13, abs=1e-300)
        # the witness attains the value
        v, w = L.witness(1.0)
        if w is None:
            assert v == 0.0 == brute_L(M, 1.0)
            continue
        i, j, S = w
        u = math.expm1(1.0)
        assert v == pytest.approx(math.log((M[i, list(S)].sum() * u + 1) / (M[j, list(S)].sum() * u + 1)), rel=1e-12)
    assert worst < 1e-12


def dinkelbach_L(M, a):
    """L(a) pair by pair with Dinkelbach's iteration S <- {j : q_j > lambda d_j} (no sorting, no pruning)."""
    u, best = math.expm1(a), 0.0
    for q in M:
        for d in M:
            lam, S = 1.0, None
            while True:
                new = q > lam * d
                if S is not None and np.array_equal(new, S):
                    break
                S = new
                lam = (q[S].sum() * u + 1) / (d[S].sum() * u + 1)
            best = max(best, math.log(lam))
    return best


def test_large_fronts_match_dinkelbach():
    rng = np.random.default_rng(11)
    for k, zeros in ((24, 0.0), (40, 0.2)):
        M = random_matrix(rng, k, zeros=zeros)
        L = leakage_function(M)
        for a in (0.05, 0.9, 4.0, 40.0):
            ref = dinkelbach_L(M, a)
            assert L(a) == pytest.approx(ref, rel=1e-12)
            assert float(np.max(L.values(a))) == pytest.approx(ref, rel=1e-12)  # the vectorised path


def test_best_subset_is_a_prefix_by_ratio():
    """The threshold structure itself: for each pair, the best of all subsets is the best prefix by q_j/d_j."""
    rng = np.random.default_rng(2)
    for _ in range(200):
        k = int(rng.integers(2, 8))
        q, d = random_matrix(rng, 2, 0.2)[0], random_matrix(rng, 2, 0.2)[1]
        q, d = rng.dirichlet(np.ones(k)) * (rng.random(k) > 0.2), rng.dirichlet(np.ones(k))
        q = q / q.sum() if q.sum() else np.full(k, 1 / k)
        u = math.expm1(rng.uniform(0.01, 8))
        f = (lambda S: math.log((q[S].sum() * u + 1) / (d[S].sum() * u + 1)))
        best = max([0.0] + [f(list(S)) for r in range(1, k + 1) for S in itertools.combinations(range(k), r)])
        with np.errstate(divide="ignore"):
            order = np.argsort(-(q / d))
        prefix = max([0.0] + [f(list(order[:m])) for m in range(1, k + 1)])
        assert prefix == pytest.approx(best, rel=1e-12, abs=1e-15)


def test_large_a_has_no_overflow():
    M = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]])
    L = leakage_function(M)
    for a in (100.0, 800.0, 1e5):
        assert L(a) == pytest.approx(a + math.log(0.5), rel=1e-14)  # q(S) = 0.5 with d(S) = 0
    pos = leakage_function([[0.9, 0.1], [0.2, 0.8]])
    assert pos(1e6) == pytest.approx(math.log(0.8 / 0.1), rel=1e-12)  # max q(S)/d(S) as a -> inf


def test_critical_epsilon_is_log_of_largest_mass_outside_a_support():
    rng = np.random.default_rng(3)
    for _ in range(60):
        k = int(rng.integers(2, 7))
        M = random_matrix(rng, k, zeros=0.4)
        x_max = max([M[i, M[j] == 0].sum() for i in range(k) for j in range(k)])
        expected = math.inf if x_max == 0 else -math.log(x_max)
        assert leakage_function(M).critical_epsilon == pytest.approx(expected, rel=1e-12, abs=1e-15)


# ------------------------------------------------------------------ recursions
def test_bpl_fpl_tpl_match_a_straightforward_implementation():
    rng = np.random.default_rng(4)
    for trial in range(25):
        k = int(rng.integers(2, 6))
        P = random_matrix(rng, k, zeros=0.0) if trial % 2 else rng.dirichlet(np.ones(k) * 0.3, size=k) * 0.98 + 0.02 / k
        T = int(rng.integers(1, 30))
        budgets = rng.uniform(0.05, 2.0, T) if trial % 3 else np.full(T, rng.uniform(0.05, 2.0))
        res = temporal_leakage(ChainPriorClass.from_matrices(P, "stationary", T), epsilons=budgets)
        for mine, ref in zip((res.bpl, res.fpl, res.tpl), straightforward(P, budgets), strict=True):
            np.testing.assert_allclose(mine, ref, rtol=1e-9, atol=1e-12)
        assert res.max_tpl == pytest.approx(np.max(res.tpl))


def test_runs_of_equal_budgets_are_filled_with_exactly_the_loop_values():
    """The shortcut (period 1 or 2 in floating point) changes no bit of the recursion."""
    rng = np.random.default_rng(12)
    for k in (2, 5, 60):
        L = leakage_function(rng.dirichlet(np.full(k, 0.5), size=k))
        e = np.concatenate([np.full(700, 0.1), rng.uniform(0.05, 0.3, 20), np.full(900, 0.3), [0.1, 0.1]])
        plain = [e[0]]
        for t in range(1, e.size):
            plain.append(L(plain[-1]) + e[t])
        assert np.array_equal(leakage_recursion(L, e), np.array(plain))


def test_given_backward_matrix_and_families():
    rng = np.random.default_rng(5)
    P1, P2, B = random_matrix(rng, 3, 0.0), random_matrix(rng, 3, 0.0), random_matrix(rng, 3, 0.2)
    r = temporal_leakage(P1, epsilon=0.3, length=12, backward=B)
    np.testing.assert_allclose(r.tpl, straightforward(P1, [0.3] * 12, B)[2], rtol=1e-9)
    assert r.members[0].backward_source == "given"
    fam = ChainPriorClass.from_family([P1, P2], "stationary", 12)
    rf = temporal_leakage(fam, epsilon=0.3)
    refs = [straightforward(P, [0.3] * 12) for P in (P1, P2)]
    for n, arr in enumerate((rf.bpl, rf.fpl, rf.tpl)):
        np.testing.assert_allclose(arr, np.maximum(refs[0][n], refs[1][n]), rtol=1e-9)


def randomized_response(eps, k):
    p = math.exp(eps) / (math.exp(eps) + k - 1)
    return np.where(np.eye(k, dtype=bool), p, (1 - p) / (k - 1))


def exact_release_leakage(P, budgets):
    """max over outputs and pairs of values of |log P(outputs | X_t = a) / P(outputs | X_t = b)|, per t."""
    k, T = P.shape[0], len(budgets)
    w, V = np.linalg.eig(P.T)
    pi = np.real(V[:, np.argmin(np.abs(w - 1))])
    pi = pi / pi.sum()
    paths = np.array(list(itertools.product(range(k), repeat=T)))          # x, also used for outputs o
    px = pi[paths[:, 0]] * np.prod([P[paths[:, s], paths[:, s + 1]] for s in range(T - 1)], axis=0)
    R = [randomized_response(e, k) for e in budgets]
    like = np.prod([R[s][paths[:, s][:, None], paths[:, s][None, :]] for s in range(T)], axis=0)  # [x, o]
    out = []
    for t in range(T):
        cond = np.array([(px * (paths[:, t] == a)) @ like / pi[a] for a in range(k)])  # [a, o]
        lc = np.log(cond)
        out.append(float(np.max(lc[:, None, :] - lc[None, :, :])))
    return np.array(out)


def test_recursion_never_below_exact_leakage_of_randomized_response():
    rng = np.random.default_rng(6)
    ratios = []
    for trial in range(24):
        k = 2 + trial % 2
        T = int(rng.integers(1, 7 if k == 2 else 6))
        P = rng.dirichlet(np.ones(k) * 0.7, size=k) * 0.96 + 0.04 / k
        budgets = rng.uniform(0.1, 1.5, T)
        exact = exact_release_leakage(P, budgets)
        tpl = temporal_leakage(ChainPriorClass.from_matrices(P, "stationary", T), epsilons=budgets).tpl
        assert np.all(exact <= tpl + 1e-9), (P, budgets, exact, tpl)
        assert exact[0] >= budgets[0] - 1e-9 or T > 1  # one release alone: randomized response is tight
        ratios.append(float(np.max(exact) / np.max(tpl)))
    # randomized response reaches the bound on some chains, and 80% of it on all of these
    assert min(ratios) > 0.8 and max(ratios) > 1 - 1e-9 and max(ratios) <= 1 + 1e-9


@pytest.mark.parametrize("P", [[[0.9, 0.1], [0.4, 0.6]], [[0.8, 0.2], [0.3, 0.7]]])
def test_randomized_response_attains_tpl_on_the_running_examples(P):
    """On theta1 and theta2 (docs/chains.md) the bound is exact: randomized response reaches TPL_t at every t."""
    for eps in (0.1, 0.5, 1.0):
        exact = exact_release_leakage(np.array(P), [eps] * 6)
        tpl = temporal_leakage(ChainPriorClass.from_matrices(P, "stationary", 6), epsilon=eps).tpl
        np.testing.assert_allclose(exact, tpl, rtol=1e-12)


# ------------------------------------------------------------------ suprema
def test_suprema_match_long_recursions():
    rng = np.random.default_rng(7)
    for _ in range(12):
        k = int(rng.integers(2, 6))
        P = random_matrix(rng, k, zeros=0.0)
        eps = float(rng.uniform(0.05, 1.0))
        sup = leakage_supremum(P, epsilon=eps)
        long = temporal_leakage(P, epsilon=eps, length=4001)
        assert sup.finite
        assert long.bpl[-1] == pytest.approx(sup.sup_bpl, rel=1e-9)
        assert long.fpl[0] == pytest.approx(sup.sup_fpl, rel=1e-9)
        assert long.tpl[2000] == pytest.approx(sup.sup_tpl, rel=1e-9)
        assert np.all(long.tpl <= sup.sup_tpl * (1 + 1e-12))


def test_finiteness_condition_against_long_recursions():
    """sup BPL < inf iff epsilon < log(1/x_max): below it converges, above it grows linearly."""
    rng = np.random.default_rng(8)
    checked = 0
    while checked < 8:
        k = int(rng.integers(2, 5))
        M = random_matrix(rng, k, zeros=0.35)
        L = leakage_function(M)
        crit = L.critical_epsilon
        if not 0.05 < crit < 3:
            continue
        checked += 1
        below, above = 0.8 * crit, 1.2 * crit
        a = leakage_recursion(L, np.full(20000, below))
        assert a[-1] == pytest.approx(L.fixed_point(epsilon=below), rel=1e-8)
        assert math.isinf(L.fixed_point(epsilon=above))
        b = leakage_recursion(L, np.full(20000, above))
        slope = (b[-1] - b[10000]) / 9999
        assert slope == pytest.approx(above - crit, rel=1e-3)  # a - L(a) -> crit, so a grows by epsilon - crit
    periodic = leakage_supremum([[0.0, 1.0], [1.0, 0.0]], epsilon=0.01)
    assert not periodic.finite and "disjoint supports" in periodic.reason


# ------------------------------------------------------------------ budgets
@pytest.mark.parametrize("T", [1, 2, 7, 60])
def test_constant_budget_is_feasible_and_within_one_percent(T):
    rng = np.random.default_rng(9 + T)
    P = random_matrix(rng, 3, zeros=0.2)
    for alpha in (0.5, 2.0):
        a = allocate_budget(P, epsilon=alpha, length=T)
        assert a.leakage.max_tpl <= alpha
        tpl_ref = straightforward(P, [a.epsilon_step] * T)[2] if T <= 7 else a.leakage.tpl
        assert np.max(tpl_ref) <= alpha * (1 + 1e-12)
        if math.isfinite(a.infeasible_above):
            assert a.infeasible_above <= a.epsilon_step * (1 + 1e-6) * (1 + 1e-12)
            assert temporal_leakage(P, epsilon=1.01 * a.epsilon_step, length=T).max_tpl > alpha
        else:
            assert a.epsilon_step == alpha


def test_ends_scheme_is_flat_at_the_target():
    P = np.array([[0.8, 0.2], [0.1, 0.9]])
    for T in (2, 5, 200):
        a = allocate_budget(P, epsilon=1.0, length=T, scheme="ends")
        tpl = a.leakage.tpl
        assert np.max(tpl) <= 1.0 and np.min(tpl) > 1.0 - 1e-5
        assert a.epsilon_first > a.epsilon_step and a.epsilon_last > a.epsilon_step
        sup = leakage_supremum(P, epsilon=a.epsilon_step)
        assert a.epsilon_first == pytest.approx(sup.sup_bpl) and sup.sup_tpl == pytest.approx(1.0, rel=1e-5)
    assert allocate_budget(P, epsilon=1.0, length=1, scheme="ends").epsilon_first == 1.0
    fam = ChainPriorClass.from_family([P, [[0.6, 0.4], [0.3, 0.7]]], "stationary", 30)
    af = allocate_budget(fam, epsilon=1.0, scheme="ends")
    assert af.leakage.max_tpl <= 1.0
    with pytest.raises(NotApplicableError, match="disjoint supports"):
        allocate_budget([[0.0, 1.0], [1.0, 0.0]], epsilon=1.0, length=5, scheme="ends")


# ------------------------------------------------------------------ inputs
def test_inputs_are_validated(tmp_path):
    P = [[0.8, 0.2], [0.1, 0.9]]
    for kwargs, match in [(dict(epsilon=0.0, length=3), "epsilon"), (dict(epsilon=math.inf, length=3), "epsilon"),
                          (dict(epsilon=0.1), "length"), (dict(epsilon=0.1, epsilons=[0.1], length=1), "exactly one"),
                          (dict(epsilons=[0.1, math.nan]), "Budget 2"), (dict(epsilons=[0.1, 0.2], length=3), "agree"),
                          (dict(epsilon=0.1, length=0), "integer >= 1")]:
        with pytest.raises((ParameterError, PriorError), match=match):
            temporal_leakage(P, **kwargs)
    with pytest.raises(PriorError, match="sums to"):
        temporal_leakage([[0.5, 0.6], [0.1, 0.9]], epsilon=0.1, length=2)
    with pytest.raises(PriorError, match="transient"):
        time_reversal([[0.5, 0.5], [0.0, 1.0]])
    with pytest.raises(PriorError, match="several stationary"):
        temporal_leakage([[1.0, 0.0], [0.0, 1.0]], epsilon=0.1, length=2)
    box = tmp_path / "box.json"
    box.write_text(json.dumps({"box": {"p0": [0.1, 0.9], "p1": [0.1, 0.9]}, "length": 10}))
    with pytest.raises(NotApplicableError, match="parameter box"):
        temporal_leakage(str(box), epsilon=0.1)


def test_spec_backward_key(tmp_path):
    from puffgm.chains.spec import load_chain_spec

    spec = {"transitions": [[[0.8, 0.2], [0.1, 0.9]], [[0.6, 0.4], [0.3, 0.7]]], "length": 8,
            "backward": [[[0.7, 0.3], [0.2, 0.8]], [[0.5, 0.5], [0.5, 0.5]]]}
    path = tmp_path / "fam.json"
    path.write_text(json.dumps(spec))
    members = temporal_correlations(str(path))
    assert [m.backward_source for m in members] == ["given", "given"]
    np.testing.assert_array_equal(members[1].backward.matrix, [[0.5, 0.5], [0.5, 0.5]])
    assert any("backward" in n for n in load_chain_spec(path).notes)  # calibrations say they do not use it
    for bad, match in [([0.7, 0.3], "list of 2 matrices"),
                       ([[[0.7, 0.3], [0.2, 0.8]], [[0.5, 0.5, 0.0]] * 3], "chain has 2 states")]:
        path.write_text(json.dumps(dict(spec, backward=bad)))
        with pytest.raises(PriorError, match=match):
            load_chain_spec(path)
