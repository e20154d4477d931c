"""The papers' cautionary cases: privacy collapse, the exam-order constraint, DP as Pufferfish."""

import math

import numpy as np
import pytest

from puffgm.framework import audit_composition, audit_finite, audit_laplace
from puffgm.framework.cautionary import (
    bai_example_4_1,
    bai_example_4_2,
    bai_example_4_3,
    dp_as_pufferfish,
    exam_order,
    exam_order_laplace_loss,
    expected_runs_to_reveal,
    present_sum,
    simulate_runs_to_reveal,
    theorem_3_epsilon,
)


def test_example_4_1_zero_leakage_then_collapse():
    case = bai_example_4_1()
    assert audit_finite(case.inst, case.mechanism).loss == pytest.approx(0.0, abs=1e-12)
    two = audit_composition(case.inst, case.mechanism, k=2)
    assert two.loss == math.inf
    (o1, o2) = two.witness.output
    assert o1 != o2  # two different outputs reveal the data
    ex = expected_runs_to_reveal(case.inst, case.mechanism)
    # exact value (Theorem 1's proof, before the bound): 1 + sum_s P(s) sum_D' P(D'|other)/(1 - P(D'|other))
    # joint [[0.1, 0.2], [0.3, 0.4]]: P(.|A=1) = (3/7, 4/7), P(.|A=0) = (1/3, 2/3)
    exact = 1 + 0.7 * ((1 / 3) / (2 / 3) + (2 / 3) / (1 / 3)) + 0.3 * ((3 / 7) / (4 / 7) + (4 / 7) / (3 / 7))
    assert ex["expected"] == pytest.approx(exact, rel=1e-12) == pytest.approx(case.details["exact_expected_runs"])
    assert ex["expected"] <= case.details["bound"] + 1e-12  # Theorem 1's bound, 1 + 1/(1 - 2/3) = 4
    sim = simulate_runs_to_reveal(case.inst, case.mechanism, n_sim=1500, random_state=1)
    assert abs(sim["mean"] - exact) < 4 * sim["stderr"]


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 8])
def test_example_4_2_zero_leakage_then_collapse(n):
    case = bai_example_4_2(n)
    assert audit_finite(case.inst, case.mechanism).loss == pytest.approx(0.0, abs=1e-12)
    assert audit_composition(case.inst, case.mechanism, k=2).loss == math.inf
    ex = expected_runs_to_reveal(case.inst, case.mechanism)
    assert ex["expected"] == pytest.approx(3.0, rel=1e-12)


def test_example_4_2_simulation():
    case = bai_example_4_2(5)
    sim = simulate_runs_to_reveal(case.inst, case.mechanism, n_sim=1500, random_state=2)
    assert abs(sim["mean"] - 3.0) < 4 * sim["stderr"]


@pytest.mark.parametrize("bounds", [(0.3, 0.6, 0.2, 0.5), (0.1, 0.2, 0.1, 0.2), (0.45, 0.55, 0.4, 0.6), (0.5, 0.5, 0.5, 0.5)])
def test_example_4_3_theorem_3_epsilon_is_exact(bounds):
    case = bai_example_4_3(*bounds)
    one = audit_finite(case.inst, case.mechanism)
    assert one.loss == pytest.approx(theorem_3_epsilon(*bounds), rel=1e-12, abs=1e-12)
    assert audit_composition(case.inst, case.mechanism, k=2).loss == math.inf
    ex = expected_runs_to_reveal(case.inst, case.mechanism, target="secret")
    assert ex["expected"] == pytest.approx(3.0, rel=1e-12)
    for t in range(case.inst.n_priors):
        assert expected_runs_to_reveal(case.inst, case.mechanism, target="secret", theta=t)["expected"] == pytest.approx(3.0)


def test_exam_order_laplace_is_dp_but_not_pufferfish():
    eps = 1.0
    for n in (2, 3, 6, 10):
        inst = exam_order(n)
        r = audit_laplace(inst, lambda a: sum(a.values()), 1 / eps)
        assert r.loss == pytest.approx(exam_order_laplace_loss(n, epsilon=eps), rel=1e-12)
        assert r.loss > eps
        # Example 9.2's pair (r1=0, r1=1) and the output region beyond n
        assert r.witness.pair == ("r1=0", "r1=1") and r.witness.output >= n
        i1 = math.log(np.mean(np.exp(eps * np.arange(1, n + 1))))
        assert r.loss == pytest.approx(i1, rel=1e-12)
        # Equation 18: distinguishing D_0 from D_n needs scale n / eps
        assert audit_laplace(inst, lambda a: sum(a.values()), n / eps).loss <= eps + 1e-12


def test_exam_order_with_several_priors():
    inst = exam_order(4, f1=[[0.5] * 4, [0.9, 0.9, 0.1, 0.1]])
    assert inst.n_priors == 2
    assert audit_laplace(inst, lambda a: sum(a.values()), 1.0).loss > 1.0


def test_theorem_6_1_independent_priors_pass_6_2_correlated_fail():
    eps = 0.7
    ind = dp_as_pufferfish(3, n_priors=4)
    r = audit_laplace(ind, present_sum, 1 / eps)
    assert r.loss == pytest.approx(eps, rel=1e-12)  # tight: pair (present=1, absent)
    cor = dp_as_pufferfish(3, correlated=True)
    r2 = audit_laplace(cor, present_sum, 1 / eps)
    assert r2.loss > eps + 0.1


def test_dp_pufferfish_randomised_response_on_presence():
    # finite-output DP mechanism (randomised response on "record 1 present with value 1") under both Theta
    ind = dp_as_pufferfish(2, n_priors=3)
    keep = 0.75
    table = np.zeros(ind.shape + (2,))
    for idx in np.ndindex(ind.shape):
        bit = 1 if ind.states["h1"][idx[0]] == 1 else 0
        table[idx] = [keep, 1 - keep] if bit == 0 else [1 - keep, keep]
    assert audit_finite(ind, table).loss <= math.log(3) + 1e-12
