"""Theorem 6 translation (Bai et al.) and its reduction to MQM on Markov chains (section 6.2)."""


import dataclasses

import pytest
from _nets import markov_chain_network

from puffgm.api import influence_curve
from puffgm.core.curve import curve_from_points
from puffgm.exceptions import ParameterError
from puffgm.mechanisms.translation import Translation, dp_epsilon, puffer_epsilon, translate_curve
from puffgm.networks.calibration import calibrate

CURVE = curve_from_points({1: 3.0, 2: 1.0, 3: 0.4, 4: 0.1}, n_entries=20)


def test_dp_epsilon_takes_the_best_point_not_the_min_of_algorithm_1():
    eps = 2.0
    t = dp_epsilon(CURVE, epsilon=eps)
    cands = [((eps - a) / b, b) for b, a in CURVE.points if a < eps] + [(eps / 20, 20)]
    best = max(cands)
    assert t.epsilon_dp == pytest.approx(best[0]) and t.b == best[1]
    assert t.point == (CURVE.a_at(t.b), t.b)
    # the paper's line 8 ("min") would choose the worst admissible point
    assert min(cands)[0] < t.epsilon_dp
    assert isinstance(t, Translation) and "Theorem 6" in t.theorem
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.epsilon_dp = 1.0  # immutable


def test_puffer_epsilon_is_min_over_b_and_round_trips():
    e_dp = 0.3
    t = puffer_epsilon(CURVE, epsilon_dp=e_dp)
    vals = [b * e_dp + a for b, a in CURVE.points] + [20 * e_dp]
    assert t.epsilon_puffer == pytest.approx(min(vals))
    for eps in (0.2, 0.5, 1.0, 2.5, 7.0):
        back = puffer_epsilon(CURVE, epsilon_dp=dp_epsilon(CURVE, epsilon=eps).epsilon_dp)
        assert back.epsilon_puffer <= eps * (1 + 1e-12)
    assert translate_curve(CURVE, epsilon_dp=e_dp) == t


def test_trivial_point_fallback_and_errors():
    c = curve_from_points({1: 5.0, 2: 4.0}, n_entries=10)
    t = dp_epsilon(c, epsilon=1.0)
    assert (t.a, t.b) == (0.0, 10) and t.trivial_point and t.epsilon_dp == pytest.approx(0.1)
    full = curve_from_points({1: 5.0, 2: 4.0, 3: 3.0}, n_entries=3)
    assert full.a == (5.0, 4.0, 0.0)  # a(n) = 0 always (H = every entry)
    assert dp_epsilon(full, epsilon=1.0).b == 3
    with pytest.raises(ParameterError, match="'epsilon' parameter of dp_epsilon must be a finite number > 0"):
        dp_epsilon(CURVE, epsilon=-1)
    with pytest.raises(ParameterError, match="exactly one"):
        translate_curve(CURVE, epsilon_dp=1.0, epsilon=1.0)
    with pytest.raises(ParameterError, match="InfluenceCurve"):
        dp_epsilon([(1, 0.5)], epsilon=1.0)


@pytest.mark.parametrize("P,init", [
    ([[0.9, 0.1], [0.3, 0.7]], [0.75, 0.25]),
    ([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]], [0.2, 0.5, 0.3]),
])
def test_translation_reduces_to_mqm_on_markov_chains(P, init):
    """Section 6.2: Laplace + per-node best curve point = the MQM calibration (Song et al.)."""
    model = markov_chain_network(7, P, init)
    curve = influence_curve(model, per_node=True)
    for eps in (0.5, 1.0, 3.0):
        cal = calibrate(model, epsilon=eps)
        per_node = [dp_epsilon(curve.node_curve(v), epsilon=eps) for v in curve.details["per_node"]]
        eps_dp = min(t.epsilon_dp for t in per_node)
        assert 1.0 / eps_dp == pytest.approx(cal.sigma_max, rel=1e-9)
        # the single global curve can only need as much noise or more
        assert dp_epsilon(curve, epsilon=eps).epsilon_dp <= eps_dp * (1 + 1e-12)
