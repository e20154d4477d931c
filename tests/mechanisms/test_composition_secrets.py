"""Releases that protect different secrets do not compose.

A release calibrated for node A gives no guarantee for node B, so the accountant may add up
releases only within one instantiation (Theta, S).  Network: A isolated, B -> C -> D sticky.
"""

import numpy as np
import pytest

from puffgm.accounting import PrivacyAccountant
from puffgm.api import influence_curve
from puffgm.exceptions import CompositionError
from puffgm.framework import Instantiation, Secret, audit_vector_laplace
from puffgm.mechanisms.laplace import quilt_set_key, release_laplace
from puffgm.mechanisms.pufferfish import pufferfish_laplace
from puffgm.networks.calibration import calibrate
from puffgm.networks.priors import NetworkPrior, PriorClass
from puffgm.networks.secrets import SecretSpec


def sticky(stay=0.97):
    s = {n: ("0", "1") for n in "ABCD"}
    P = np.array([[stay, 1 - stay], [1 - stay, stay]])
    return NetworkPrior(list("ABCD"), s, {"A": (), "B": (), "C": ("B",), "D": ("C",)},
                        {"A": np.array([0.5, 0.5]), "B": np.array([0.5, 0.5]), "C": P, "D": P})


def test_why_it_matters_the_joint_loss_on_b_exceeds_the_sum():
    net = sticky()
    only_a, only_b = calibrate(net, epsilon=1.0, protected=["A"]), calibrate(net, epsilon=1.0, protected=["B"])
    inst = Instantiation([net], [(Secret.value("B", "0"), Secret.value("B", "1"))])
    count = lambda x: float(sum(v == "1" for v in x.values()))
    joint = audit_vector_laplace(inst, lambda x: [count(x), count(x)], [only_a.scale, only_b.scale])
    assert joint.loss > 2.0 + 1.0  # far beyond epsilon_A + epsilon_B


def test_mqm_releases_protecting_different_nodes_do_not_compose():
    net = sticky()
    only_a, only_b = calibrate(net, epsilon=1.0, protected=["A"]), calibrate(net, epsilon=1.0, protected=["B"])
    assert quilt_set_key(only_a) != quilt_set_key(only_b)
    acc = PrivacyAccountant(budget=2.0)
    release_laplace(1.0, only_a, accountant=acc, random_state=0)
    with pytest.raises(CompositionError, match="different instantiations or quilt sets"):
        release_laplace(1.0, only_b, accountant=acc, random_state=1)
    # the same secrets written two ways are one instantiation
    assert quilt_set_key(calibrate(net, epsilon=1.0)) == quilt_set_key(calibrate(net, epsilon=1.0, protected=list("ABCD")))
    pairs = calibrate(net, epsilon=1.0, secrets=SecretSpec(pairs={"A": [("0", "1")]}))
    assert quilt_set_key(pairs) == quilt_set_key(calibrate(net, epsilon=1.0))


def test_curve_releases_protecting_different_nodes_do_not_compose():
    net = sticky()
    ca = influence_curve(net, secrets=SecretSpec(protected=["A"]))
    cb = influence_curve(net, secrets=SecretSpec(protected=["B"]))
    assert ca.composition_key != cb.composition_key
    acc = PrivacyAccountant(budget=10.0)
    pufferfish_laplace(1.0, ca, epsilon=2.0, accountant=acc, random_state=0)
    with pytest.raises(CompositionError):
        pufferfish_laplace(1.0, cb, epsilon=2.0, accountant=acc, random_state=1)


def test_class_curves_keep_their_secrets_in_the_key():
    net, other = sticky(0.97), sticky(0.9)
    full = influence_curve([net, other])
    only_a = influence_curve([net, other], secrets=SecretSpec(protected=["A"]))
    assert full.composition_key != only_a.composition_key
    assert full.composition_key == influence_curve(PriorClass([net, other])).composition_key
