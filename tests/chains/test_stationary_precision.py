"""Stationary laws to full relative precision, checked against exact rational arithmetic.

Every float matrix is converted exactly to fractions (``Fraction(float)`` is exact) and
its stationary law solved exactly by Gaussian elimination (an algorithm independent
of the GTH elimination under test).  A row whose floats do not sum exactly to 1 is
read as GTH reads it: its off-diagonal entries as given, its diagonal 1 minus their sum.
The end-to-end tests recompute the exact Pufferfish loss of the calibrated Laplace scale
by enumerating every sequence of the chain with exact probabilities.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

import puffgm
from puffgm.chains import ChainPriorClass
from puffgm.chains.leakage import time_reversal
from puffgm.chains.priors import closed_classes, gth_stationary, stationary_distribution
from puffgm.exceptions import PriorError

RTOL = 1e-13
TINY = np.finfo(float).tiny
REPRODUCER = [[0.9999999999999999, 1.1102230246251565e-16], [0.125, 0.875]]


# ------------------------------------------------------------------ exact references
def exact_matrix(P) -> list:
    """P in fractions, each diagonal entry 1 minus the off-diagonal entries of its row."""
    k = len(P)
    F = [[Fraction(float(P[i][j])) for j in range(k)] for i in range(k)]
    for i in range(k):
        F[i][i] = 1 - sum(F[i][j] for j in range(k) if j != i)
    return F


def exact_stationary(P) -> list:
    """The unique solution of pi (P - I) = 0, sum(pi) = 1, by Gaussian elimination in fractions."""
    F = exact_matrix(P)
    k = len(F)
    # equations: columns of (P - I)^T, the last replaced by the normalisation
    rows = [[F[j][i] - (1 if i == j else 0) for j in range(k)] + [Fraction(0)] for i in range(k - 1)]
    rows.append([Fraction(1)] * k + [Fraction(1)])
    for c in range(k):
        piv = next(r for r in range(c, k) if rows[r][c] != 0)
        rows[c], rows[piv] = rows[piv], rows[c]
        for r in range(k):
            if r != c and rows[r][c] != 0:
                f = rows[r][c] / rows[c][c]
                rows[r] = [a - f * b for a, b in zip(rows[r], rows[c], strict=True)]
    return [rows[i][k] / rows[i][i] for i in range(k)]


def assert_relative(pi, exact):
    for got, want in zip(pi, exact, strict=True):
        if want == 0:
            assert got == 0.0
        else:
            assert abs(Fraction(float(got)) - want) <= RTOL * want, (float(got), float(want))


def flog(x: Fraction) -> float:
    """log of a positive fraction, accurate however small it is."""
    return math.log(x.numerator) - math.log(x.denominator)


def true_laplace_loss(P, T: int, state: int, scale: float) -> float:
    """Exact Pufferfish loss of count(state) + Lap(scale) under the exact stationary chain.

    Every sequence is enumerated with its exact probability; for each node t and states
    a, b of positive mass, the log ratio of the two Laplace mixtures is maximal at an atom
    of the count or as y -> +-inf (the ratio is monotone between atoms).
    """
    F = exact_matrix(P)
    pi = exact_stationary(P)
    k = len(F)
    joint: dict = {}  # (t, a) -> {count: probability}
    for seq in itertools.product(range(k), repeat=T):
        p = pi[seq[0]]
        for x, y in itertools.pairwise(seq):
            p *= F[x][y]
        if p == 0:
            continue
        c = seq.count(state)
        for t, a in enumerate(seq):
            law = joint.setdefault((t, a), {})
            law[c] = law.get(c, 0) + p
    ys = np.arange(T + 1, dtype=float)

    def log_mix(law, y):
        vals = np.array(sorted(law), dtype=float)
        logw = np.array([flog(law[v] / sum(law.values())) for v in sorted(law)])
        dens = logw[None, :] - np.abs(y[:, None] - vals[None, :]) / scale
        tails = np.array([logsumexp(logw + vals / scale), logsumexp(logw - vals / scale)])
        return np.concatenate([logsumexp(dens, axis=1), tails])

    worst = 0.0
    for t in range(T):
        laws = {a: log_mix(joint[(t, a)], ys) for (s, a) in joint if s == t}
        for a, b in itertools.permutations(laws, 2):
            d = laws[a] - laws[b]
            # the tails are limits of ratios of the un-normalised tail weights
            worst = max(worst, float(np.max(d)))
    return worst


# ------------------------------------------------------------------ (a) exact rationals
@pytest.mark.parametrize("P", [
    REPRODUCER,
    [[1 - 2.0**-50, 2.0**-50], [0.25, 0.75]],
    [[1 - 1e-300, 1e-300], [0.5, 0.5]],
    [[1.0 - 2.0**-53, 2.0**-53, 0.0], [0.5, 0.0, 0.5], [0.5, 0.0, 0.5]],
    [[0.9, 0.1 - 1e-200, 1e-200], [0.3, 0.7, 0.0], [1e-100, 0.0, 1 - 1e-100]],
    [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3], [0.25, 0.25, 0.5]],
])
def test_gth_agrees_with_exact_law(P):
    assert_relative(stationary_distribution(np.array(P)), exact_stationary(P))


def test_reproducer_mass():
    pi = stationary_distribution(np.array(REPRODUCER))
    assert pi[1] == pytest.approx(8 * 2.0**-53, rel=1e-15)  # 8.88e-16, not 1.11e-16


def test_time_reversal_of_a_tiny_mass_is_stochastic_and_exact():
    B = time_reversal(np.array(REPRODUCER))
    pi = exact_stationary(REPRODUCER)
    F = exact_matrix(REPRODUCER)
    for i, j in itertools.product(range(2), repeat=2):
        want = pi[j] * F[j][i] / pi[i]
        assert abs(Fraction(float(B[i, j])) - want) <= RTOL * want


# ------------------------------------------------------------------ (b) random near-absorbing chains
def near_absorbing(seed: int, k: int) -> np.ndarray:
    """A random irreducible chain: a cycle of tiny exits, some extra tiny or zero entries."""
    rng = np.random.default_rng(seed)
    P = np.where(rng.random((k, k)) < 0.4, rng.random((k, k)), 0.0)
    tiny = 10.0 ** -rng.uniform(12, 300, size=(k, k))
    P = np.where(rng.random((k, k)) < 0.3, tiny, P)
    order = rng.permutation(k)
    for x, y in zip(order, np.roll(order, -1), strict=True):  # a cycle keeps it irreducible
        if x != y and P[x, y] == 0:
            P[x, y] = 10.0 ** -rng.uniform(12, 300)
    np.fill_diagonal(P, 0.0)
    np.fill_diagonal(P, np.maximum(1.0 - P.sum(axis=1), 0.0))
    return P


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 6))
def test_random_near_absorbing_chains(seed, k):
    P = near_absorbing(seed, k)
    exact = exact_stationary(P.tolist())
    try:
        pi = gth_stationary(P)
    except PriorError:
        # refused only when an exact probability of the elimination leaves the normal range
        assert min(exact) < 1e-290 or _exact_censored_min(P) < TINY
        return
    assert_relative(pi, exact)


def _exact_censored_min(P) -> Fraction:
    """Smallest positive off-diagonal entry of the exact GTH eliminations (the censored chains)."""
    A = exact_matrix(P.tolist())
    k = len(A)
    low = Fraction(1)
    for n in range(k - 1, 0, -1):
        s = sum(A[n][:n])
        for i in range(n):
            A[i][n] /= s
        for i, j in itertools.product(range(n), repeat=2):
            A[i][j] += A[i][n] * A[n][j]
        low = min([low] + [A[i][j] for i in range(n) for j in range(n + 1) if i != j and A[i][j] > 0])
    return low


# ------------------------------------------------------------------ (c) structure
def test_transient_states_are_exactly_zero():
    P = np.array([[0.5, 0.5, 0.0, 0.0], [1e-300, 1 - 1e-300, 0.0, 0.0],
                  [1e-200, 0.0, 1 - 1e-200, 0.0], [0.0, 0.0, 1e-17, 1 - 1e-17]])
    pi = stationary_distribution(P)
    assert pi[2] == 0.0 and pi[3] == 0.0
    assert_relative(pi, exact_stationary(P.tolist()))
    assert [c.tolist() for c in closed_classes(P)] == [[0, 1]]


def test_several_closed_classes_are_refused():
    P = np.array([[1.0, 0.0, 0.0], [0.0, 1.0 - 1e-300, 1e-300], [0.0, 1e-300, 1.0 - 1e-300]])
    with pytest.raises(PriorError, match="2 closed classes"):
        stationary_distribution(P)
    with pytest.raises(PriorError, match="2 closed classes"):
        ChainPriorClass.from_matrices(P, "stationary", 3)
    both = stationary_distribution(P, require_unique=False)
    assert both.tolist() == [0.5, 0.25, 0.25]


def test_mass_below_the_double_range_is_refused():
    P = np.array([[1 - 1e-200, 1e-200, 0.0], [0.5, 0.0, 0.5 - 1e-200], [0.0, 0.5, 0.5]])
    P[1, 2], P[1, 0] = 1e-200, 1.0 - 1e-200  # pi_2 ~ 1e-400
    with pytest.raises(PriorError, match="smallest normal double"):
        stationary_distribution(P)


# ------------------------------------------------------------------ (d) end to end
@pytest.mark.parametrize(("P", "T", "eps"), [
    (REPRODUCER, 4, 1.0),
    ([[1 - 2.0**-50, 2.0**-50], [0.25, 0.75]], 3, 0.5),
    ([[1 - 2.0**-42, 2.0**-42], [0.5, 0.5]], 5, 2.0),
    ([[1 - 2.0**-45, 2.0**-45], [0.125, 0.875]], 6, 1.0),
])
def test_optimal_laplace_keeps_the_true_loss(P, T, eps):
    cal = puffgm.calibrate_query(ChainPriorClass.from_matrices(P, "stationary", T), {"count": 0},
                                 epsilon=eps, method="optimal-laplace")
    assert true_laplace_loss(P, T, 0, cal.scale) <= eps * (1 + 1e-9)


def test_reproducer_scale():
    cal = puffgm.calibrate_query(ChainPriorClass.from_matrices(REPRODUCER, "stationary", 4), {"count": 0},
                                 epsilon=1.0, method="optimal-laplace")
    assert cal.scale == pytest.approx(3.5899, abs=1e-4)
    assert true_laplace_loss(REPRODUCER, 4, 0, 3.4599) > 1.03  # the scale of a least-squares prior


def test_a_tiny_stationary_mass_keeps_its_secret_pairs():
    d = 2.0**-53
    P = [[1 - d, d, 0.0], [0.5, 0.0, 0.5], [0.5, 0.0, 0.5]]  # pi_1 = pi_2 = 1.1e-16
    pi = stationary_distribution(np.array(P))
    assert_relative(pi, exact_stationary(P))
    cal = puffgm.calibrate_query(ChainPriorClass.from_matrices(P, "stationary", 3), {"count": 2},
                                 epsilon=1.0, method="optimal-laplace")
    assert cal.n_pairs == 9
    assert true_laplace_loss(P, 3, 2, cal.scale) <= 1.0 * (1 + 1e-9)


# ------------------------------------------------------------------ MQMApprox's mixing parameters
def test_mixing_parameters_see_tiny_masses_and_tiny_flows():
    from puffgm.chains.approx import chain_mixing_parameters

    mix = chain_mixing_parameters(np.array(REPRODUCER))
    assert abs(Fraction(mix["pi_min"]) - exact_stationary(REPRODUCER)[1]) <= RTOL * exact_stationary(REPRODUCER)[1]
    # flows of order 1e-20 that break detailed balance (Kolmogorov: 0.03e-20 vs 0.3e-20 around the cycle)
    P = [[1 - 2e-20, 1e-20, 1e-20], [0.5, 0.2, 0.3], [0.1, 0.6, 0.3]]
    mix = chain_mixing_parameters(np.array(P))
    assert not mix["reversible"]
    assert_relative(mix["pi"], exact_stationary(P))
    # a reversible chain keeps its classification and a gap just below the exact 0.75
    mix = chain_mixing_parameters(np.array([[0.9, 0.1], [0.4, 0.6]]))
    assert mix["reversible"] and 0.75 - 1e-9 < mix["gap_ppstar"] < 0.75
