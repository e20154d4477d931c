"""Regressions from the internal privacy review of the framework (both were confirmed bugs)."""

import math

import numpy as np
import pytest

from puffgm.framework import Instantiation, Secret, audit_finite
from puffgm.framework.adversaries import close_adversary
from puffgm.framework.wasserstein import calibrate_wasserstein, w_inf


def test_w_inf_counts_atoms_of_any_positive_probability():
    for m in (1e-11, 1e-12, 1e-13, 1e-200):
        assert w_inf([0, 10], [1 - m, m], [0], [1.0]) == 10.0
    assert w_inf([0, 1], [0.5, 0.5], [0, 1], [0.5, 0.5]) == 0.0  # identical laws


def test_wasserstein_calibration_sees_a_tiny_atom():
    m = 1e-13
    joint = np.zeros((2, 3))
    joint[0] = [0.5 * (0.5 - m), 0.25, 0.5 * m]
    joint[1] = [0, 0.5, 0]
    inst = Instantiation([joint], [(Secret.value("X", 0), Secret.value("X", 1))], nodes=["X", "Y"],
                         states={"X": (0, 1), "Y": (0, 1, 1000)})
    cal = calibrate_wasserstein(inst, lambda a: float(a["Y"]), epsilon=1.0)
    assert cal.W == 999.0  # was 1 when atoms below 1e-12 were dropped
    assert cal.audit.loss <= 1.0

    joint = np.zeros((2, 2))
    joint[0] = [0.5 * (1 - m), 0.5 * m]
    joint[1] = [0.5, 0]
    inst = Instantiation([joint], [(Secret.value("X", 0), Secret.value("X", 1))], nodes=["X", "Y"],
                         states={"X": (0, 1), "Y": (0, 1000)})
    cal = calibrate_wasserstein(inst, lambda a: float(a["Y"]), epsilon=1.0)
    assert cal.W == 1000.0 and cal.scale > 0  # was W = 0: the value released without noise


def test_close_adversary_with_a_secret_theta_cannot_produce():
    """theta gives X = 2 probability 0, the adversary does not: no guarantee carries over."""
    theta = np.array([0.5, 0.5, 0.0])
    pairs = [(Secret.value("X", 0), Secret.value("X", 1)), (Secret.value("X", 1), Secret.value("X", 2))]
    inst = Instantiation([theta], pairs, nodes=["X"], states=[3])
    M = np.array([[0.75, 0.25, 0.0], [0.25, 0.75, 0.0], [0.0, 0.0, 1.0]])  # reveals X = 2
    loss = audit_finite(inst, M).loss
    assert loss == pytest.approx(math.log(3))
    adv = close_adversary(inst, np.array([0.4, 0.4, 0.2]), epsilon=loss)
    assert adv.delta == math.inf and adv.degraded_epsilon == math.inf  # was Delta = 0
    true_loss = audit_finite(Instantiation([np.array([0.4, 0.4, 0.2])], pairs, nodes=["X"], states=[3]), M).loss
    assert true_loss == math.inf
