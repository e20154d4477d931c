"""The chain road of influence_curve agrees with the network road on unrolled chains (to 1e-9)."""

import json

import numpy as np
import pytest

from puffgm.api import influence_curve
from puffgm.chains.closed_forms import binary_chain_curve_exact
from puffgm.chains.priors import ChainPriorClass


@pytest.mark.parametrize("P,init,T", [
    ([[0.9, 0.1], [0.3, 0.7]], "stationary", 9),
    ([[0.9, 0.1], [0.3, 0.7]], [1, 0], 7),
    ([[0.2, 0.8], [0.7, 0.3]], "stationary", 8),
    ([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]], "stationary", 6),
    ([[0.6, 0.3, 0.1], [0.0, 0.5, 0.5], [0.25, 0.25, 0.5]], [0.5, 0.5, 0.0], 6),
])
def test_chain_road_equals_network_road(P, init, T):
    cc = ChainPriorClass.from_matrices(P, init, T)
    chain = influence_curve(cc)
    net = influence_curve(cc.to_pgmpy())
    assert chain.method == "chain" and net.method == "quilts"
    assert chain.n_entries == net.n_entries == T
    np.testing.assert_allclose(chain.a, net.a, rtol=0, atol=1e-9)
    assert all(x >= y for x, y in zip(chain.a, chain.a[1:], strict=False)) and chain.a[-1] == 0.0


def test_family_of_chains():
    cc = ChainPriorClass.from_family([[[0.9, 0.1], [0.3, 0.7]], [[0.8, 0.2], [0.1, 0.9]]], "stationary", 6)
    chain = influence_curve(cc)
    net = influence_curve(cc.to_pgmpy())
    np.testing.assert_allclose(chain.a, net.a, rtol=0, atol=1e-9)


def test_long_stationary_binary_chain_matches_exact_closed_computation():
    p, q = 0.85, 0.6
    cc = ChainPriorClass.from_matrices([[p, 1 - p], [1 - q, q]], "stationary", 100_000)
    c = influence_curve(cc, max_b=30)
    exact, _ = binary_chain_curve_exact(p, q, 30)
    np.testing.assert_allclose(c.a, exact, rtol=1e-9, atol=1e-12)
    assert c.max_b == 30 and c.n_entries == 100_000


def test_json_spec_path(tmp_path):
    spec = tmp_path / "c.json"
    spec.write_text(json.dumps({"transition": [[0.9, 0.1], [0.3, 0.7]], "length": 1000}))
    c = influence_curve(str(spec))
    assert c.max_b == 200 and c.method == "chain"
