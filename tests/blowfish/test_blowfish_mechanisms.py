"""Laplace under Blowfish (Theorem 5.1), Blowfish as Pufferfish (Theorems 4.4, 4.5) and composition (Theorems 4.1, 4.2)."""

import numpy as np
import pytest

from puffgm.accounting import THEOREM_BLOWFISH, PrivacyAccountant
from puffgm.blowfish import (
    CountConstraint,
    Domain,
    Policy,
    PolicyError,
    attribute_graph,
    complete_graph,
    cumulative_query,
    cumulative_sensitivity,
    distance_threshold_graph,
    enumerate_sensitivity,
    histogram_query,
    histogram_sensitivity,
    line_graph,
    linear_query,
    linear_sum_sensitivity,
    partition_graph,
)
from puffgm.blowfish.mechanisms import laplace_mechanism, release_cumulative, release_histogram, release_linear_sum
from puffgm.blowfish.pufferfish import audit_blowfish_laplace, pufferfish_instantiation
from puffgm.exceptions import BudgetError, CompositionError

# These tests hand the accountant records directly (charge, record, make_release): the user vouches for them.
pytestmark = pytest.mark.usefixtures("honest_but_curious")

EPS = 0.8


def _cases():
    o = Domain.ordered(4)
    g = Domain.grid({"a": 2, "b": 3})
    return [
        ("sum/line", Policy(line_graph(o)), lambda p: linear_query(p), lambda p: linear_sum_sensitivity(p)),
        ("sum/theta2", Policy(distance_threshold_graph(o, 2)), lambda p: linear_query(p), lambda p: linear_sum_sensitivity(p)),
        ("sum/complete", Policy(complete_graph(o)), lambda p: linear_query(p), lambda p: linear_sum_sensitivity(p)),
        ("cum/line", Policy(line_graph(o)), lambda p: cumulative_query(p), lambda p: cumulative_sensitivity(p)),
        ("cum/theta2", Policy(distance_threshold_graph(o, 2)), lambda p: cumulative_query(p), lambda p: cumulative_sensitivity(p)),
        ("hist/partition", Policy(partition_graph(o, [[0, 1], [2, 3]])),
         lambda p: histogram_query(p, [[0, 1], [2, 3]]), lambda p: histogram_sensitivity(p, [[0, 1], [2, 3]])),
        ("hist/attribute", Policy(attribute_graph(g)), lambda p: histogram_query(p, [[(0, 0), (0, 1)], [(1, 2)]]),
         lambda p: histogram_sensitivity(p, [[(0, 0), (0, 1)], [(1, 2)]])),
    ]


@pytest.mark.parametrize("name, policy, query, sens", _cases(), ids=[c[0] for c in _cases()])
def test_laplace_at_policy_sensitivity_passes_the_exact_pufferfish_audit_and_half_scale_fails(name, policy, query, sens):
    f = query(policy)
    s = sens(policy).value
    n = 2
    if s == 0:  # released exactly: every output law is a point mass shared by both secrets' databases
        assert enumerate_sensitivity(policy, f, n=n).value == 0
        return
    ok = audit_blowfish_laplace(policy, f, s / EPS, n=n, extra_priors=2)
    bad = audit_blowfish_laplace(policy, f, 0.5 * s / EPS, n=n, extra_priors=2)
    # Theorem 4.4: the loss over the (extreme) product priors equals the Blowfish loss S/scale
    assert ok.loss == pytest.approx(EPS, rel=1e-9)
    assert bad.loss == pytest.approx(2 * EPS, rel=1e-9)


def test_hist_under_partition_is_free_and_released_exactly():
    p = Policy(partition_graph(Domain.ordered(4), [[0, 1], [2, 3]]))
    r = release_histogram([0, 1, 1, 3], p, epsilon=1.0, partition=[[0, 1], [2, 3]], random_state=0)
    assert r.scale == 0 and list(r.value) == [3.0, 1.0]
    # the total histogram is not free: the pair (0, 1) is protected
    assert histogram_sensitivity(p).value == 2


def test_extreme_priors_dominate_random_product_priors():
    p = Policy(distance_threshold_graph(Domain.ordered(4), 2))
    inst = pufferfish_instantiation(p, n=2, extra_priors=8)
    assert inst.n_priors == 2 * 4 + 8
    r = audit_blowfish_laplace(p, linear_query(p), 2.0, n=2, extra_priors=8)
    extreme = max(r.per_prior[:8])
    assert max(r.per_prior[8:]) <= extreme + 1e-12 and extreme == pytest.approx(1.0)


def test_theorem_4_5_contrapositive_under_a_count_constraint():
    # #{0, 1} = 1 is public: the histogram's sensitivity over induced neighbours is 4, not 2
    p = Policy(complete_graph(Domain.ordered(4)), [CountConstraint((0, 1), 1)], n=2)
    f = histogram_query(p)
    assert enumerate_sensitivity(p, f).value == 4
    # Laplace at the unconstrained scale 2/eps is not (eps, P)-Blowfish (loss 2 eps on the induced neighbours);
    # by Theorem 4.5 it cannot be Pufferfish under the conditioned product priors, and the auditor finds a prior
    naive = audit_blowfish_laplace(p, f, 2.0, extra_priors=20)
    assert naive.loss > 1.0 + 0.5
    calibrated = audit_blowfish_laplace(p, f, 4.0, extra_priors=20)
    assert calibrated.loss <= 1.0  # consistent with the paper's conjectured converse on this family


def test_release_records_and_secure_default():
    p = Policy(line_graph(Domain.ordered(6)))
    r = release_cumulative([0, 2, 2, 5], p, epsilon=1.0)
    assert r.secure and r.scale == 1.0 and r.value.shape == (6,)
    s = release_linear_sum([0, 2, 2, 5], p, epsilon=0.5, random_state=3)
    assert not s.secure and s.scale == 2.0 and "NOT FOR PRODUCTION" in s.explain()
    with pytest.raises(PolicyError, match="another policy"):
        laplace_mechanism(1.0, Policy(complete_graph(Domain.ordered(6))), epsilon=1.0, sensitivity=cumulative_sensitivity(p))
    with pytest.raises(ValueError, match="epsilon"):
        laplace_mechanism(1.0, p, epsilon=0.0, sensitivity=1.0)


def test_sequential_and_parallel_composition_in_the_accountant():
    p = Policy(line_graph(Domain.ordered(5)))
    acc = PrivacyAccountant(budget=2.0)
    laplace_mechanism(1.0, p, epsilon=0.5, sensitivity=1.0, random_state=0, accountant=acc)
    laplace_mechanism(1.0, p, epsilon=0.25, sensitivity=1.0, random_state=0, accountant=acc)
    assert acc.total == pytest.approx(0.75) and acc.theorem == THEOREM_BLOWFISH  # Theorem 4.1
    # Theorem 4.2: disjoint subsets of individuals cost the max
    laplace_mechanism(1.0, p, epsilon=0.5, sensitivity=1.0, random_state=0, accountant=acc, subset={0, 1})
    laplace_mechanism(1.0, p, epsilon=0.5, sensitivity=1.0, random_state=0, accountant=acc, subset={2, 3})
    assert acc.total == pytest.approx(1.25)
    laplace_mechanism(1.0, p, epsilon=0.25, sensitivity=1.0, random_state=0, accountant=acc, subset={1})
    assert acc.total == pytest.approx(1.5)
    other = PrivacyAccountant()
    other.charge(laplace_mechanism(1.0, p, epsilon=0.25, sensitivity=1.0, random_state=0))  # the generic entry point routes Blowfish
    assert other.total == pytest.approx(0.25) and other.theorem == THEOREM_BLOWFISH
    with pytest.raises(BudgetError):
        laplace_mechanism(1.0, p, epsilon=0.6, sensitivity=1.0, random_state=0, accountant=acc)
    assert acc.total == pytest.approx(1.5) and len(acc.entries) == 5  # nothing recorded
    with pytest.raises(CompositionError, match="different policies"):
        laplace_mechanism(1.0, Policy(complete_graph(Domain.ordered(5))), epsilon=0.1, sensitivity=4.0, random_state=0, accountant=acc)


def test_parallel_composition_refused_under_count_constraints_and_kinds_do_not_mix():
    p = Policy(complete_graph(Domain.ordered(3)), [CountConstraint((0,), 1)], n=3)
    acc = PrivacyAccountant()
    with pytest.raises(CompositionError, match="Theorem 4.2"):
        laplace_mechanism(1.0, p, epsilon=0.5, sensitivity=2.0, random_state=0, accountant=acc, subset={0})
    laplace_mechanism(1.0, p, epsilon=0.5, sensitivity=2.0, random_state=0, accountant=acc)
    from puffgm.core.curve import curve_from_points
    from puffgm.mechanisms.laplace import release_laplace
    from puffgm.mechanisms.pufferfish import pufferfish_laplace
    from puffgm.networks.calibration import calibrate

    cal = calibrate("example:cancer", epsilon=1.0)
    with pytest.raises(CompositionError):
        release_laplace(1.0, cal, accountant=acc, random_state=0)
    with pytest.raises(CompositionError):
        pufferfish_laplace(1.0, curve_from_points({1: 0.1}, n_entries=3, fingerprint="c"), epsilon=1.0,
                           accountant=acc, random_state=0)
    mqm = PrivacyAccountant()
    release_laplace(1.0, cal, accountant=mqm, random_state=0)
    with pytest.raises(CompositionError, match="another kind"):
        laplace_mechanism(1.0, Policy(line_graph(Domain.ordered(3))), epsilon=0.5, sensitivity=1.0, random_state=0, accountant=mqm)
    assert np.isclose(mqm.total, 1.0)
