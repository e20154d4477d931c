"""Ordered and ordered hierarchical mechanisms (section 7): exact privacy loss, exact audits, exact errors."""

import itertools

import numpy as np
import pytest

from puffgm.accounting import PrivacyAccountant
from puffgm.blowfish import Domain, Policy, PolicyError, complete_graph, distance_threshold_graph, line_graph
from puffgm.blowfish.ordered import (
    best_plan,
    hierarchical_plan,
    laplace_histogram_plan,
    ordered_hierarchical_mechanism,
    ordered_hierarchical_plan,
    ordered_mechanism,
    ordered_plan,
    ordered_range_error,
    range_query,
)
from puffgm.blowfish.pufferfish import audit_blowfish_laplace


@pytest.mark.parametrize("k, theta, fanout", [(12, 1, 2), (12, 2, 2), (12, 3, 3), (13, 4, 2), (12, 5, 2), (16, 16, 2),
                                               (10, 3, 2)])
def test_ordered_hierarchical_plan_is_exactly_epsilon_blowfish(k, theta, fanout):
    eps = 1.3
    plan = ordered_hierarchical_plan(k, theta, epsilon=eps, fanout=fanout)
    # Theorem 7.2(1): the exact loss of the independent Laplace nodes over every edge of G^{d,theta} is <= eps
    loss = plan.privacy_loss(Policy(distance_threshold_graph(Domain.ordered(k), theta)))
    assert loss <= eps * (1 + 1e-12)
    if plan.details["blocks"] > 1 and plan.details["height"] > 0:
        assert loss == pytest.approx(eps)  # attained: one S node and 2h H nodes move together
    # and the structure reproduces every cumulative count exactly without noise
    h = np.arange(k) % 3
    est = plan.estimator @ (plan.node_matrix @ h) + h.sum() * plan.known_total
    assert np.allclose(est, np.cumsum(h))


def test_hierarchical_plan_is_dp_and_plain_histogram_too():
    k, eps = 9, 0.9
    dp = Policy(complete_graph(Domain.ordered(k)))
    assert hierarchical_plan(k, epsilon=eps, fanout=3).privacy_loss(dp) == pytest.approx(eps)
    assert laplace_histogram_plan(k, epsilon=eps).privacy_loss(dp) == pytest.approx(eps)
    assert ordered_plan(k, epsilon=eps, sensitivity=k - 1).privacy_loss(dp) == pytest.approx(eps)
    # the ordered mechanism at sensitivity 1 is NOT private under DP: loss (k - 1) eps
    assert ordered_plan(k, epsilon=eps).privacy_loss(dp) == pytest.approx((k - 1) * eps)


def test_exact_audit_of_the_ordered_hierarchical_release_via_pufferfish():
    k, theta, eps = 4, 2, 1.0
    plan = ordered_hierarchical_plan(k, theta, epsilon=eps, fanout=2)
    pol = Policy(distance_threshold_graph(Domain.ordered(k), theta))

    def nodes(db):
        return plan.node_matrix @ np.bincount(np.asarray(db), minlength=k)

    ok = audit_blowfish_laplace(pol, nodes, plan.scales, n=2)
    bad = audit_blowfish_laplace(pol, nodes, plan.scales * 0.6, n=2)
    assert ok.loss == pytest.approx(eps, rel=1e-9)
    assert bad.loss == pytest.approx(eps / 0.6, rel=1e-9)


def test_exact_audit_of_the_ordered_mechanism_on_the_line():
    k = 4
    pol = Policy(line_graph(Domain.ordered(k)))
    plan = ordered_plan(k, epsilon=0.7)

    def cum(db):
        return plan.node_matrix @ np.bincount(np.asarray(db), minlength=k)

    assert audit_blowfish_laplace(pol, cum, plan.scales, n=2).loss == pytest.approx(0.7)
    assert audit_blowfish_laplace(pol, cum, plan.scales / 3, n=2).loss == pytest.approx(2.1)


def _brute_range_mse(plan):
    """Average over ranges of the variance, from node coefficients (no covariance shortcut)."""
    k = plan.k
    tot, cnt = 0.0, 0
    for a, b in itertools.combinations_with_replacement(range(k), 2):
        coef = plan.estimator[b] - (plan.estimator[a - 1] if a > 0 else 0)
        tot += float(np.sum(coef**2 * 2 * plan.scales**2))
        cnt += 1
    return tot / cnt


@pytest.mark.parametrize("plan", [ordered_plan(9, epsilon=0.5), ordered_hierarchical_plan(11, 3, epsilon=1.0, fanout=2),
                                  hierarchical_plan(10, epsilon=2.0, fanout=3), laplace_histogram_plan(7, epsilon=1.0)],
                         ids=lambda p: p.name)
def test_exact_range_error_formula_equals_enumeration(plan):
    assert plan.range_mse() == pytest.approx(_brute_range_mse(plan), rel=1e-12)
    assert plan.cumulative_mse() == pytest.approx(np.trace(plan.covariance()) / plan.k, rel=1e-12)


def test_theorem_7_1_error_of_range_queries():
    k, eps = 20, 0.5
    p = ordered_plan(k, epsilon=eps)
    assert p.range_variance(3, 10) == pytest.approx(ordered_range_error(epsilon=eps)) == pytest.approx(4 / eps**2)
    assert p.range_variance(0, 10) == pytest.approx(ordered_range_error(epsilon=eps, low_known=True))
    assert p.range_variance(0, k - 1) == 0
    # average over all ranges: 4/eps^2 except ranges touching an end
    n_r = k * (k + 1) // 2
    expect = (4 * (n_r - 2 * k + 1) + 2 * (2 * k - 2)) / eps**2 / n_r
    assert p.range_mse() == pytest.approx(expect)


def test_budget_split_is_the_exact_optimum():
    plan = ordered_hierarchical_plan(64, 8, epsilon=1.0, fanout=2)
    a, b = plan.details["error_coefficients"]
    best = plan.range_mse()
    for es in np.linspace(0.05, 0.95, 19):
        other = ordered_hierarchical_plan(64, 8, epsilon=1.0, fanout=2, epsilon_s=float(es))
        assert other.range_mse() >= best - 1e-9
        assert other.range_mse() == pytest.approx(a / es**2 + b / (1 - es) ** 2)


def test_claims_of_section_7_on_a_small_domain():
    k = 256
    hier = hierarchical_plan(k, epsilon=1.0).range_mse()
    # the ordered mechanism beats the hierarchical mechanism on the line graph by orders of magnitude
    assert ordered_plan(k, epsilon=1.0).range_mse() < hier / 50
    # the ordered hierarchical mechanism beats it for small theta
    assert ordered_hierarchical_plan(k, 8, epsilon=1.0).range_mse() < hier / 2
    # best_plan is never worse than any of its candidates
    for theta in (2, 64, 200):
        b = best_plan(k, theta, epsilon=1.0).range_mse()
        assert b <= min(hier, ordered_plan(k, epsilon=1.0, sensitivity=theta).range_mse(),
                        ordered_hierarchical_plan(k, theta, epsilon=1.0).range_mse()) + 1e-9


def test_ordered_mechanism_release_with_isotonic_inference_and_accountant():
    pol = Policy(line_graph(Domain.ordered(8)))
    data = [0, 1, 1, 3, 7, 7, 7]
    acc = PrivacyAccountant(budget=1.0)
    r = ordered_mechanism(data, pol, epsilon=0.5, random_state=1, accountant=acc)
    assert np.all(np.diff(r.value) >= 0) and r.value[-1] == len(data) and r.value.min() >= 0
    assert range_query(r.value, 2, 5) == pytest.approx(r.value[5] - r.value[1])
    raw = r.details["raw"]
    from scipy.optimize import isotonic_regression

    assert np.allclose(r.value[:-1], np.clip(isotonic_regression(raw[:-1]).x, 0, len(data)))
    oh = ordered_hierarchical_mechanism(data, Policy(distance_threshold_graph(Domain.ordered(8), 3)), epsilon=0.5,
                                        random_state=2)
    assert oh.value.shape == (8,) and oh.value[-1] == len(data)
    assert acc.total == pytest.approx(0.5)
    with pytest.raises(PolicyError, match="distance-threshold"):
        ordered_hierarchical_mechanism(data, Policy(complete_graph(Domain.ordered(8))), epsilon=0.5)
    with pytest.raises(PolicyError, match="not inside"):
        range_query(r.value, 3, 9)
