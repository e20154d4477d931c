"""One answer, two roads: MQMExact on a chain == the general Bayesian-network calibration."""

import numpy as np
import pytest

from puffgm.chains import ChainPriorClass, MQMExact

calibration = pytest.importorskip("puffgm.networks.calibration")


def random_chain(rng, k, zeros):
    P = rng.dirichlet(np.ones(k) * 0.8, size=k)
    P[rng.random((k, k)) < zeros] = 0.0
    P[np.arange(k), rng.integers(0, k, k)] += 0.2
    return P / P.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seed", range(10))
def test_exact_equals_network_road(seed):
    rng = np.random.default_rng(1000 + seed)
    k = int(rng.integers(2, 4))
    T = int(rng.integers(2, 9)) if k == 3 else int(rng.integers(2, 13))
    P = random_chain(rng, k, zeros=0.12)
    q = rng.dirichlet(np.ones(k))
    if seed % 2:
        q[0] = 0.0
        q /= q.sum()
    eps = float(rng.choice([1.0, 2.0, 4.0, 8.0]))
    cc = ChainPriorClass.from_matrices(P, q, T)
    mine = MQMExact(cc).calibrate(epsilon=eps)
    theirs = calibration.calibrate([cc.to_pgmpy()], epsilon=eps)
    assert mine.sigma_max == pytest.approx(theirs.sigma_max, abs=1e-9)


@pytest.mark.slow
def test_running_example_short_and_family_two_roads():
    th1 = ([1.0, 0.0], [[0.9, 0.1], [0.4, 0.6]])
    th2 = ([0.9, 0.1], [[0.8, 0.2], [0.3, 0.7]])
    cc = ChainPriorClass.from_matrices(th1[1], th1[0], 12)
    assert MQMExact(cc).calibrate(epsilon=3.0).sigma_max == pytest.approx(
        calibration.calibrate([cc.to_pgmpy()], epsilon=3.0).sigma_max, abs=1e-9
    )
    fam = ChainPriorClass.from_family([th1[1], th2[1]], [th1[0], th2[0]], 10)
    assert MQMExact(fam).calibrate(epsilon=2.0).sigma_max == pytest.approx(
        calibration.calibrate(fam.to_pgmpy(), epsilon=2.0).sigma_max, abs=1e-9
    )
