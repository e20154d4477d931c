"""Finite prior classes: every calibration and curve is the max over the members' own optima.

Pufferfish privacy is a condition per prior (Song et al., section 2.1) and the proofs of
Theorems 4.3/4.4 (appendix C.1) and of Bai et al. Theorem 6 fix theta first, so each prior may
use its own active quilt.  The exact audits in test_release_audit.py cover families too.
"""

import numpy as np
import pytest
from _nets import random_network

from puffgm.api import influence_curve
from puffgm.networks.priors import PriorClass


def test_network_family_curve_is_the_pointwise_max_and_below_the_sup_curve():
    from puffgm.networks.quilt_scores import QuiltSearch

    rng = np.random.default_rng(44)
    net, dag = random_network(rng, n=5, p_edge=0.6, zero_prob=0.05, concentration=10.0)
    other, _ = random_network(rng, dag=dag, n=5, zero_prob=0.05, concentration=10.0)
    fam = influence_curve([net, other])
    one, two = influence_curve(net), influence_curve(other)
    assert list(fam.a) == [max(x, y) for x, y in zip(one.a, two.a, strict=True)]
    # the sup-over-Theta road: every quilt's influence is the max over both priors
    pc = PriorClass([net, other])
    search = QuiltSearch(pc)
    for b in range(1, 6):
        sup_curve = max(
            min([c.max_influence for c in (search.choice(q) for q in search.candidates(node)) if c.n_nearby <= b]
                + [np.inf])
            for node in pc.nodes)
        assert fam.a_at(b) <= sup_curve + 1e-12
    assert fam.a_at(5) == 0.0


def test_chain_family_curve_is_the_pointwise_max():
    from puffgm.chains import ChainPriorClass

    P1 = np.array([[0.9, 0.1], [0.4, 0.6]])
    P2 = np.array([[0.8, 0.2], [0.3, 0.7]])
    fam = ChainPriorClass.from_family([P1, P2], ["stationary", "stationary"], length=40)
    c = influence_curve(fam, max_b=20)
    c1 = influence_curve(ChainPriorClass([fam.members[0]]), max_b=20)
    c2 = influence_curve(ChainPriorClass([fam.members[1]]), max_b=20)
    assert list(c.a) == pytest.approx([max(x, y) for x, y in zip(c1.a, c2.a, strict=True)], rel=0, abs=0)
