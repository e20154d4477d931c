"""Exact audits: the calibrated MQM Laplace release keeps every secret pair within e^epsilon."""

import math

import numpy as np
import pytest
from _nets import chain_network, random_network

from puffgm.accounting import PrivacyAccountant
from puffgm.core.results import CalibrationResult
from puffgm.exceptions import BudgetError, CompositionError, NotApplicableError, ParameterError
from puffgm.framework.audit import audit_laplace
from puffgm.framework.instantiation import Instantiation
from puffgm.mechanisms.laplace import MarkovQuiltLaplace, release_laplace
from puffgm.networks.calibration import calibrate
from puffgm.networks.priors import PriorClass


def count_query(states_zero="s0"):
    return lambda x: float(sum(1 for v in x.values() if v == states_zero))


@pytest.mark.parametrize("seed", range(8))
def test_calibrated_laplace_passes_the_exact_audit(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(3, 7))
    net, dag = random_network(rng, n=n, p_edge=0.6, zero_prob=0.15, concentration=float(rng.choice([1.0, 20.0])))
    members = [net, random_network(rng, dag=dag, n=n, zero_prob=0.15)[0]] if seed % 2 else [net]
    eps = float(rng.choice([0.5, 1.0, 2.0]))
    lip = 2.0
    cal = calibrate(members, epsilon=eps, lipschitz=lip)
    inst = Instantiation.bayesian_network_default(PriorClass(members))
    # a 2-Lipschitz query: twice the number of nodes in state s0
    q = lambda x: 2.0 * sum(1 for v in x.values() if v == "s0")
    audit = audit_laplace(inst, q, cal.scale)
    assert audit.loss <= eps * (1 + 1e-9), (audit.loss, eps, audit.witness)


def test_the_audit_is_sharp_enough_to_catch_undercalibration():
    # strong correlation: plain DP noise L/epsilon is NOT enough, and the audit says so
    net = chain_network([0.5, 0.5], [[0.95, 0.05], [0.05, 0.95]], 5)
    inst = Instantiation.bayesian_network_default(PriorClass([net]))
    q = lambda x: float(sum(1 for v in x.values() if v == "0"))
    assert audit_laplace(inst, q, 1.0 / 1.0).loss > 1.0 + 0.1
    cal = calibrate(net, epsilon=1.0)
    assert audit_laplace(inst, q, cal.scale).loss <= 1.0 + 1e-9
    assert cal.sigma_max == cal.groupdp_sigma  # so strongly correlated that group DP is optimal


def test_weaker_correlation_beats_group_dp_and_passes_the_audit():
    net = chain_network([0.5, 0.5], [[0.7, 0.3], [0.3, 0.7]], 9)
    cal = calibrate(net, epsilon=1.0)
    assert cal.sigma_max < 0.85 * cal.groupdp_sigma
    assert cal.worst.quilt == ("X1", "X7")  # no superfluous nodes in the active quilt
    inst = Instantiation.bayesian_network_default(PriorClass([net]))
    q = lambda x: float(sum(1 for v in x.values() if v == "0"))
    assert audit_laplace(inst, q, cal.scale).loss <= 1.0 + 1e-9


def test_release_records_noise_source_and_validates():
    cal = calibrate(chain_network([0.5, 0.5], [[0.8, 0.2], [0.3, 0.7]], 4), epsilon=1.0)
    seeded = release_laplace([1.0, 2.0], cal, random_state=3)
    assert not seeded.secure and "NOT for production" in seeded.noise and "NOT FOR PRODUCTION" in seeded.explain()
    again = release_laplace([1.0, 2.0], cal, random_state=3)
    assert np.array_equal(seeded.value, again.value)
    secure = release_laplace(5.0, cal)
    assert secure.secure and "OpenDP" in secure.noise and isinstance(secure.value, float)
    with pytest.raises(ParameterError, match="NaN or infinity"):
        release_laplace(float("nan"), cal, random_state=1)
    with pytest.raises(ParameterError, match="random_state"):
        release_laplace(1.0, cal, random_state="seed")
    with pytest.raises(AttributeError):
        seeded.value = 0


def test_seeded_noise_has_the_calibrated_scale():
    cal = calibrate(chain_network([0.5, 0.5], [[0.8, 0.2], [0.3, 0.7]], 4), epsilon=1.0, lipschitz=3.0)
    draws = release_laplace(np.zeros(20000), cal, random_state=0).value
    assert np.mean(np.abs(draws)) == pytest.approx(cal.scale, rel=0.03)  # E|Lap(b)| = b


def test_not_applicable_calibrations_cannot_release():
    bad = CalibrationResult(epsilon=1.0, lipschitz=1.0, method="gk16", sigma_max=math.inf, worst=None,
                            per_node=(), n_nodes=3, groupdp_sigma=3.0, fingerprint="x", theorem="t",
                            applicable=False, notes=("spectral norm of Gamma >= 1",))
    with pytest.raises(NotApplicableError, match="not applicable"):
        MarkovQuiltLaplace(bad)


def test_accountant_composes_mqm_releases_sharing_quilt_sets():
    net = chain_network([0.5, 0.5], [[0.8, 0.2], [0.3, 0.7]], 4)
    cal = calibrate(net, epsilon=0.5)
    acc = PrivacyAccountant(budget=1.5)
    for k in range(3):
        release_laplace(1.0, cal, accountant=acc, random_state=k)
    assert acc.total == pytest.approx(1.5)
    rep = acc.report()
    assert "Theorem 4.4" in rep.theorem and rep.n_releases == 3 and rep.remaining == 0
    with pytest.raises(BudgetError, match="over the budget of 1.5; nothing was released"):
        release_laplace(1.0, cal, accountant=acc, random_state=9)
    assert len(acc.entries) == 3  # the refused release left no trace


def test_accountant_uses_k_times_max_epsilon_and_refuses_other_quilt_sets():
    net = chain_network([0.5, 0.5], [[0.8, 0.2], [0.3, 0.7]], 4)
    acc = PrivacyAccountant()
    release_laplace(1.0, calibrate(net, epsilon=0.5), accountant=acc, random_state=0)
    release_laplace(1.0, calibrate(net, epsilon=1.0), accountant=acc, random_state=1)
    assert acc.total == pytest.approx(2 * 1.0)  # K * max epsilon_k (remark after Theorem 4.4)
    other = chain_network([0.5, 0.5], [[0.6, 0.4], [0.3, 0.7]], 4)
    with pytest.raises(CompositionError, match="different instantiations or quilt sets"):
        release_laplace(1.0, calibrate(other, epsilon=1.0), accountant=acc, random_state=2)
    assert len(acc.entries) == 2
    with pytest.raises(ParameterError, match="budget"):
        PrivacyAccountant(budget=0)


def test_release_refuses_non_numeric_answers():
    cal = calibrate(chain_network([0.5, 0.5], [[0.8, 0.2], [0.3, 0.7]], 4), epsilon=1.0)
    for bad in ("3", [1.0, "2"], 1 + 2j, True):
        with pytest.raises(ParameterError, match="must be real numbers"):
            release_laplace(bad, cal, random_state=0)
