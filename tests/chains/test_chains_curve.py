"""chain_influence_curve: definition by brute force, monotone, T-independent for stationary chains."""

import math

import numpy as np
import pytest

from puffgm.chains import ChainPriorClass
from puffgm.chains.curve import _nodewise_curve, chain_influence_curve
from puffgm.chains.exact import ChainQuiltSearch, chain_max_influence


def definition(cc, B):
    """a(b) straight from the definition over the Lemma 4.6 family (+ trivial)."""
    T = cc.length
    out = []
    for b in range(1, B + 1):
        worst = 0.0
        for i in range(1, T + 1):
            best = 0.0 if T <= b else math.inf
            for a_ in range(0, i):
                for bb in range(0, T - i + 1):
                    if a_ == 0 and bb == 0:
                        continue
                    lo = i - a_ + 1 if a_ else 1
                    hi = i + bb - 1 if bb else T
                    if hi - lo + 1 <= b:
                        Q = tuple(([i - a_] if a_ else []) + ([i + bb] if bb else []))
                        best = min(best, chain_max_influence(cc, i, Q))
            worst = max(worst, best)
        out.append(worst)
    return np.array(out)


@pytest.mark.parametrize("kind", ["stationary", "any", "vector"])
def test_curve_matches_definition(kind):
    rng = np.random.default_rng(5)
    P = rng.dirichlet(np.ones(3), size=3)
    init = list(rng.dirichlet(np.ones(3))) if kind == "vector" else kind
    cc = ChainPriorClass.from_matrices(P, init, 9)
    b, a, w = chain_influence_curve(cc, 11)
    assert list(b) == list(range(1, 12))
    assert np.allclose(a, definition(cc, 11), atol=1e-12)
    assert np.all(np.diff(a) <= 0) and a[8] == 0 and len(w) == 11


def test_stationary_fast_path_equals_nodewise():
    rng = np.random.default_rng(9)
    P = rng.dirichlet(np.ones(4), size=4)
    cc = ChainPriorClass.from_matrices(P, "stationary", 41)
    b, a, w = chain_influence_curve(cc, 15)  # T > 2*15+1: fast path
    s = ChainQuiltSearch(cc, epsilon=1.0, paper_convention=False)
    s.ensure(15)
    a2, w2 = np.full(15, math.inf), [None] * 15
    _nodewise_curve(s, 41, 15, a2, w2)
    assert np.allclose(a, a2, atol=1e-12)


def test_long_stationary_chain_curve_uses_the_middle_node_and_does_not_depend_on_T():
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(8), size=8)
    cc = ChainPriorClass.from_matrices(P, "stationary", 10**6)
    b, a, w = chain_influence_curve(cc, 200)
    assert np.all(np.diff(a) <= 0) and w[0][0] == "X500000"
    # stationary start: the curve (for b well below T) does not depend on T, so its cost need not either
    # (timings are in bench/curve_bench.py, not in tests)
    _, a_short, _ = chain_influence_curve(ChainPriorClass.from_matrices(P, "stationary", 10**4), 200)
    assert np.allclose(a, a_short, rtol=1e-12, atol=1e-15)
