"""SuLQ k-means under Blowfish (section 6): exact sensitivities vs brute force, exact audit, the Lemma 6.1 slip."""

import numpy as np
import pytest

from puffgm.accounting import PrivacyAccountant
from puffgm.blowfish import (
    Domain,
    Policy,
    PolicyError,
    attribute_graph,
    complete_graph,
    distance_threshold_graph,
    enumerate_sensitivity,
    grid_partition_blocks,
    line_graph,
    linear_sum_sensitivity,
    partition_graph,
)
from puffgm.blowfish import kmeans as km
from puffgm.blowfish.pufferfish import audit_blowfish_laplace


def _policies():
    d = Domain.grid({"x": 3, "y": 3})
    return [Policy(complete_graph(d)), Policy(attribute_graph(d)), Policy(distance_threshold_graph(d, 1)),
            Policy(partition_graph(d, grid_partition_blocks(d, [2, 2]))), Policy(line_graph(Domain.ordered(6)))]


@pytest.mark.parametrize("policy", _policies(), ids=lambda p: p.graph.kind)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_iteration_sensitivities_equal_enumeration(policy, seed, monkeypatch):
    dim = policy.domain.coords().shape[1]
    cents = np.random.default_rng(seed).uniform(0, 2, size=(2 + seed % 2, dim))
    f = km.iteration_query(policy, cents)
    K = len(cents)
    s_count, s_sum = km.kmeans_sensitivities(policy, cents)
    assert s_count == enumerate_sensitivity(policy, lambda db: f(db)[:K], n=2).value
    assert s_sum == pytest.approx(enumerate_sensitivity(policy, lambda db: f(db)[K:], n=2).value, abs=1e-12)
    # the clique path (used for huge complete / partition graphs) gives the same numbers
    if policy.graph.cliques() is not None:
        monkeypatch.setattr(km, "_EDGE_LIMIT", 0)
        km._EDGES.clear()
        assert km.kmeans_sensitivities(policy, cents) == pytest.approx((s_count, s_sum))
        km._EDGES.clear()


def test_lemma_6_1_slip_sum_sensitivity_exceeds_the_max_edge_length():
    # line graph on 0..9, centroids 2 and 7: moving a point 4 -> 5 crosses the boundary
    p = Policy(line_graph(Domain.ordered(10)))
    cents = np.array([[2.0], [7.0]])
    paper = linear_sum_sensitivity(p).value  # max_{(x,y) in E} d(x, y) = 1, the paper's S(q_sum, P)
    f = km.iteration_query(p, cents)
    brute = enumerate_sensitivity(p, lambda db: f(db)[2:], n=1).value
    assert paper == 1 and brute == 4 == km.kmeans_sensitivities(p, cents)[1]


def test_one_iteration_passes_the_exact_audit_and_fails_at_a_smaller_scale():
    p = Policy(distance_threshold_graph(Domain.ordered(5), 1))
    cents = np.array([[0.5], [3.2]])
    s_count, s_sum = km.kmeans_sensitivities(p, cents)
    eps_q = 0.5
    f = km.iteration_query(p, cents)
    scales = np.array([s_count / eps_q] * 2 + [s_sum / eps_q] * 2)
    ok = audit_blowfish_laplace(p, f, scales, n=2)
    assert ok.loss <= 2 * eps_q + 1e-9  # counts and sums, eps_q each (Theorem 4.1)
    bad = audit_blowfish_laplace(p, f, scales * 0.5, n=2)
    assert bad.loss > 2 * eps_q + 0.1
    # the paper's sum sensitivity (1) is not enough: the audit exceeds the claimed budget
    paper = np.array([s_count / eps_q] * 2 + [1.0 / eps_q] * 2)
    assert audit_blowfish_laplace(p, f, paper, n=2).loss > 2 * eps_q + 0.1


def test_sulq_kmeans_runs_and_records_its_budget():
    rng = np.random.default_rng(0)
    d = Domain.grid({"x": 8, "y": 8})
    pts = np.concatenate([rng.integers(0, 3, size=(40, 2)), rng.integers(5, 8, size=(40, 2))])
    data = np.ravel_multi_index(pts.T, d.shape)
    acc = PrivacyAccountant(budget=5.0)
    res = km.sulq_kmeans(data, Policy(distance_threshold_graph(d, 1)), 2, epsilon=4.0,
                         options=km.KMeansOptions(iterations=5, init=[[1.0, 6.0], [6.0, 1.0]]), random_state=1,
                         accountant=acc)
    assert res.centroids.shape == (2, 2) and len(res.sensitivities) == 5 and not res.secure
    assert acc.total == pytest.approx(4.0) and res.details["guarantee"]
    assert res.objective == pytest.approx(km.kmeans_objective(pts, res.centroids))
    with pytest.raises(PolicyError, match="outside the domain"):
        km.sulq_kmeans(np.array([99]), Policy(complete_graph(d)), 2, epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        km.sulq_kmeans(data, Policy(complete_graph(d)), 2, epsilon=-1.0)
