"""Nodes whose quilt search needs a table past max_table_entries fall back to the trivial quilt.

The trivial quilt (X_Q empty) is a Markov quilt of every node (Song et al., Definition 4.2),
so the calibration answers with sigma_max = max(the searched nodes' scores, the fallback
nodes' trivial scores card(X_N) / epsilon); the exact audit checks the Laplace release.
"""

import numpy as np
import pytest
from _nets import random_network

from puffgm.framework.audit import audit_laplace
from puffgm.framework.instantiation import Instantiation
from puffgm.networks.calibration import calibrate
from puffgm.networks.priors import NetworkPrior, PriorClass

#: A chain V0 -> V1 -> V2 -> V3 -> V4 whose last two nodes have 6 states: the pair (V3, V4)
#: is a table of 36 entries, so a limit of 36 lets V3's search run and not the others'.
CHAIN = ({"V0": (), "V1": ("V0",), "V2": ("V1",), "V3": ("V2",), "V4": ("V3",)},
         {"V0": 2, "V1": 2, "V2": 2, "V3": 6, "V4": 6})


def chain_net():
    return random_network(np.random.default_rng(7), n=5, dag=CHAIN, zero_prob=0.0, concentration=5.0)[0]


def two_components():
    """Four correlated binary nodes A0 -> ... -> A3, and B0 -> B1 of 6 states each (a 36-entry pair)."""
    strong = np.array([[0.9, 0.1], [0.1, 0.9]])
    wide = np.full((6, 6), 0.04) + 0.76 * np.eye(6)
    nodes = ["A0", "A1", "A2", "A3", "B0", "B1"]
    parents = {"A0": (), "A1": ("A0",), "A2": ("A1",), "A3": ("A2",), "B0": (), "B1": ("B0",)}
    states = {v: tuple(f"s{k}" for k in range(6 if v[0] == "B" else 2)) for v in nodes}
    cpds = {"A0": np.array([0.6, 0.4]), "A1": strong, "A2": strong, "A3": strong,
            "B0": np.full(6, 1 / 6), "B1": wide / wide.sum(axis=0)}
    return NetworkPrior(nodes, states, parents, cpds, name="two")


def count_s0(x):
    return float(sum(1 for v in x.values() if v == "s0"))


def check_fallback(res, epsilon):
    """The fallback nodes hold their trivial quilts, and sigma_max is the max of every node's score."""
    fallback = set(res.details["fallback_nodes"])
    searched = [c.score for c in res.per_node if c.node not in fallback]
    trivial = [c for c in res.per_node if c.node in fallback]
    assert all(not c.quilt and c.max_influence == 0.0 for c in trivial)
    assert all(c.score == len(c.nearby) / epsilon for c in trivial)
    assert res.details["fallback_sigma"] == max(c.score for c in trivial)
    assert res.sigma_max == max(searched + [res.details["fallback_sigma"]])
    assert any("fell back to the trivial quilt" in n and "max_table_entries=" in n for n in res.notes)


@pytest.mark.parametrize("exhaustive", [None, False])
def test_fallback_nodes_are_named_and_set_sigma_max(exhaustive):
    net = chain_net()
    full = calibrate(net, epsilon=1.0, exhaustive=exhaustive)
    res = calibrate(net, epsilon=1.0, max_table_entries=36, exhaustive=exhaustive)
    assert "fallback_nodes" not in full.details  # only when some node fell back
    assert res.details["fallback_nodes"] == ("V0", "V1", "V2", "V4")
    check_fallback(res, 1.0)
    assert res.sigma_max == 5.0 >= full.sigma_max  # the trivial quilt: the whole component
    v3, v3_full = res.per_node[3], full.per_node[3]  # V3's search ran as without the limit (another road)
    assert v3.quilt == v3_full.quilt and v3.score == pytest.approx(v3_full.score, rel=1e-12)
    assert 0 < res.sigma_lower_bound <= full.sigma_max * (1 + 1e-12)  # from V3 alone (rounding of two roads)
    inst = Instantiation.bayesian_network_default(PriorClass([net]))
    assert audit_laplace(inst, count_s0, res.scale).loss <= 1.0 * (1 + 1e-9)


def test_fallback_below_sigma_max_passes_the_exact_audit():
    net = two_components()
    epsilon = 2.0
    full = calibrate(net, epsilon=epsilon)
    res = calibrate(net, epsilon=epsilon, max_table_entries=20)
    assert res.details["fallback_nodes"] == ("B0", "B1")
    check_fallback(res, epsilon)
    assert res.details["fallback_sigma"] == 2 / epsilon  # B's component has two nodes
    assert res.sigma_max > res.details["fallback_sigma"]  # the A chain sets sigma_max, as without the limit
    assert res.sigma_max == pytest.approx(full.sigma_max, rel=1e-12)
    assert any("is below sigma_max" in n for n in res.notes)
    inst = Instantiation.bayesian_network_default(PriorClass([net]))
    assert audit_laplace(inst, count_s0, res.scale).loss <= epsilon * (1 + 1e-9)
    assert audit_laplace(inst, count_s0, 2 * res.scale / 3).loss > epsilon  # the audit can fail here


def test_fallback_is_the_same_on_parallel_workers_and_for_a_class_of_two_priors():
    net = chain_net()
    one = calibrate(net, epsilon=1.0, max_table_entries=36, exhaustive=False, n_jobs=1)
    two = calibrate(net, epsilon=1.0, max_table_entries=36, exhaustive=False, n_jobs=2)
    assert one.per_node == two.per_node and one.details == two.details and one.notes == two.notes
    other = random_network(np.random.default_rng(8), n=5, dag=CHAIN, zero_prob=0.0, concentration=5.0)[0]
    pair = calibrate([net, other], epsilon=1.0, max_table_entries=36)
    assert set(pair.details["fallback_nodes"]) == {"V0", "V1", "V2", "V4", (1, "V0"), (1, "V1"), (1, "V2"),
                                                   (1, "V4")}
    assert pair.sigma_max == 5.0
