"""Exact audits, with the shared auditor of puffgm.framework, of every chain mechanism.

Each chain calibration's Laplace release (scalar count, or the vector histogram of states)
must keep every secret pair X_i = a vs X_i = b within e^epsilon under every prior of the class.
"""

import pytest

from puffgm.chains import ChainPrior, ChainPriorClass, MQMApprox, MQMExact, gk16, group_dp
from puffgm.framework import Instantiation, audit_laplace, audit_vector_laplace

T = 7


def inst_for(members):
    """The Bayesian-network instantiation over the unrolled chains (every node, every pair)."""
    return Instantiation.bayesian_network_default([m.to_pgmpy() for m in members])


def ones(x):
    return float(sum(1 for v in x.values() if str(v) == "1"))


@pytest.mark.parametrize("P,initial,eps", [
    ([[0.9, 0.1], [0.4, 0.6]], [1.0, 0.0], 1.0),      # the section 4.4 example, impossible X1 = 1
    ([[0.8, 0.2], [0.3, 0.7]], "stationary", 0.5),
    ([[0.6, 0.4], [0.45, 0.55]], [0.3, 0.7], 2.0),
    ([[0.5, 0.5, 0.0], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6]], "stationary", 1.0),
])
def test_mqm_exact_and_approx_releases_pass_the_exact_audit(P, initial, eps):
    cc = ChainPriorClass.from_matrices(P, initial, T)
    inst = inst_for(cc.members)
    exact = MQMExact(cc).calibrate(epsilon=eps)
    assert audit_laplace(inst, ones, exact.scale).loss <= eps * (1 + 1e-9)
    if initial == "stationary":  # MQMApprox's bounds are for stationary-mixing chains
        approx = MQMApprox(cc).calibrate(epsilon=eps)
        assert approx.sigma_max >= exact.sigma_max
        assert audit_laplace(inst, ones, approx.scale).loss <= eps * (1 + 1e-9)
    assert audit_laplace(inst, ones, group_dp(cc, epsilon=eps).scale).loss <= eps * (1 + 1e-9)


def test_any_initial_distribution_calibration_holds_for_sampled_initials():
    P = [[0.85, 0.15], [0.35, 0.65]]
    cc = ChainPriorClass.from_matrices(P, "any", T)
    cal = MQMExact(cc).calibrate(epsilon=1.0)
    initials = [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.1, 0.9], [0.97, 0.03]]
    members = [ChainPrior(P, q, T) for q in initials]
    assert audit_laplace(inst_for(members), ones, cal.scale).loss <= 1.0 + 1e-9


def test_family_calibration_holds_for_every_member():
    P1, P2 = [[0.9, 0.1], [0.4, 0.6]], [[0.8, 0.2], [0.3, 0.7]]
    fam = ChainPriorClass([ChainPrior(P1, [1.0, 0.0], T), ChainPrior(P2, [0.9, 0.1], T)])
    cal = MQMExact(fam).calibrate(epsilon=1.0)
    audit = audit_laplace(inst_for(fam.members), ones, cal.scale)
    assert audit.loss <= 1.0 + 1e-9
    assert len(audit.per_prior) == 2


def test_gk16_when_applicable_passes_the_exact_audit():
    P = [[0.55, 0.45], [0.45, 0.55]]  # weak correlation: spectral norm of Gamma below 1
    cc = ChainPriorClass.from_matrices(P, "stationary", T)
    res = gk16(cc, epsilon=1.0)
    assert res.applicable
    assert audit_laplace(inst_for(cc.members), ones, res.scale).loss <= 1.0 + 1e-9


def test_vector_histogram_release_passes_the_exact_audit():
    """Laplace noise on each coordinate of the state histogram (2/T-Lipschitz in L1)."""
    P = [[0.8, 0.2], [0.3, 0.7]]
    n = 5
    cc = ChainPriorClass.from_matrices(P, "stationary", n)
    cal = MQMExact(cc).calibrate(epsilon=1.0, lipschitz=2.0 / n)
    inst = inst_for(cc.members)

    def hist(x):
        c1 = ones(x)
        return [(n - c1) / n, c1 / n]

    assert audit_vector_laplace(inst, hist, cal.scale).loss <= 1.0 + 1e-9
    # and half that noise is not enough: the audit is sharp enough to notice
    assert audit_vector_laplace(inst, hist, cal.scale / 2).loss > 1.0
