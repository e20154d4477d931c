"""Baselines: GroupDP, plain DP, GK16 (applicability threshold)."""

import math

import numpy as np
import pytest

from puffgm.chains import ChainPriorClass, gk16, group_dp, plain_dp
from puffgm.chains.baselines import gk16_gamma


def test_group_dp_and_plain_dp():
    cc = ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], "stationary", 100)
    r = group_dp(cc, epsilon=2.0, lipschitz=0.5)
    assert r.sigma_max == pytest.approx(50.0) and r.scale == pytest.approx(25.0) and r.method == "groupdp"
    d = plain_dp(epsilon=0.5)
    assert d.sigma_max == pytest.approx(2.0) and d.method == "dp"


def test_gk16_not_applicable_on_running_example():
    cc = ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], [1, 0], 100)
    r = gk16(cc, epsilon=1.0)
    assert not r.applicable and math.isinf(r.sigma_max)
    assert r.details["spectral_norm"] > 1 and "does not apply" in r.notes[0]
    assert r.to_dict()["sigma_max"] is None


@pytest.mark.slow
def test_gk16_independent_chain_and_threshold():
    # p = q = 0.5: independent bits, gamma = 0, Gamma = 0, epsilon_DP = epsilon / 2
    cc = ChainPriorClass.from_matrices([[0.5, 0.5], [0.5, 0.5]], "stationary", 50)
    r = gk16(cc, epsilon=1.0)
    assert r.applicable and r.details["gamma"] == pytest.approx(0.0) and r.sigma_max == pytest.approx(2.0)
    T = 100
    for p in np.arange(0.1, 0.91, 0.05):
        for q in np.arange(0.1, 0.91, 0.05):
            P = [[1 - q, q], [1 - p, p]]
            g = gk16_gamma(P)
            norm = 2 * g * math.cos(math.pi / (T + 1))
            res = gk16(ChainPriorClass.from_matrices(P, "any", T), epsilon=1.0)
            assert res.applicable == (norm < 1)
            if res.applicable:
                Gam = g * (np.eye(T, k=1) + np.eye(T, k=-1))
                want = np.max(2 * np.linalg.inv(np.eye(T) - Gam).sum(axis=1))
                assert res.sigma_max == pytest.approx(want, rel=1e-9)


def test_gk16_needs_binary_chain():
    cc = ChainPriorClass.from_matrices(np.full((3, 3), 1 / 3), "stationary", 10)
    r = gk16(cc, epsilon=1.0)
    assert not r.applicable and "binary" in r.notes[0]
