"""Policy-specific sensitivity (Definition 5.1): every closed form equals brute-force enumeration."""

import networkx as nx
import numpy as np
import pytest

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
    graph_from_networkx,
    grid_partition_blocks,
    histogram_query,
    histogram_sensitivity,
    line_graph,
    linear_query,
    linear_sum_sensitivity,
    partition_graph,
)


def _policies():
    g = Domain.grid({"a": 3, "b": 3})
    o = Domain.ordered(5)
    return [
        Policy(complete_graph(g)), Policy(attribute_graph(g)), Policy(distance_threshold_graph(g, 1)),
        Policy(distance_threshold_graph(g, 2)), Policy(partition_graph(g, grid_partition_blocks(g, [3, 1]))),
        Policy(complete_graph(o)), Policy(line_graph(o)), Policy(distance_threshold_graph(o, 2)),
        Policy(partition_graph(o, [[0, 1], [2, 3, 4]])), Policy(graph_from_networkx(o, nx.star_graph(4))),
        Policy(partition_graph(o, [[0, 4]])),
    ]


@pytest.mark.parametrize("policy", _policies(), ids=lambda p: p.graph.kind)
def test_linear_and_histogram_closed_forms_equal_enumeration(policy):
    rng = np.random.default_rng(len(policy.domain.values))
    vals = rng.normal(size=(policy.domain.size, 2))
    for n in (1, 2):
        assert linear_sum_sensitivity(policy, vals).value == pytest.approx(
            enumerate_sensitivity(policy, linear_query(policy, vals), n=n).value, abs=1e-12)
        assert histogram_sensitivity(policy).value == enumerate_sensitivity(policy, histogram_query(policy), n=n).value
    if policy.domain.is_metric:
        assert linear_sum_sensitivity(policy).value == enumerate_sensitivity(policy, linear_query(policy), n=2).value
    coarse = [list(policy.domain.values[: 2]), list(policy.domain.values[3:])]  # value 2 uncounted
    assert histogram_sensitivity(policy, coarse).value == enumerate_sensitivity(
        policy, histogram_query(policy, coarse), n=2).value


@pytest.mark.parametrize("policy", [p for p in _policies() if p.domain.kind == "ordered"], ids=lambda p: p.graph.kind)
def test_cumulative_closed_form_equals_enumeration(policy):
    assert cumulative_sensitivity(policy).value == enumerate_sensitivity(policy, cumulative_query(policy), n=2).value


def test_paper_values_of_section_5_and_7():
    d = Domain.ordered(50)
    assert cumulative_sensitivity(Policy(complete_graph(d))).value == 49  # |T| - 1
    assert cumulative_sensitivity(Policy(line_graph(d))).value == 1
    assert cumulative_sensitivity(Policy(distance_threshold_graph(d, 7))).value == 7
    w = np.linspace(-2, 3, 4)
    assert linear_sum_sensitivity(Policy(distance_threshold_graph(d, 7)), weights=w).value == 7 * 3
    # the histogram of the partition's own blocks is free under G_P (section 5)
    blocks = [list(range(0, 25)), list(range(25, 50))]
    p = Policy(partition_graph(d, blocks))
    assert histogram_sensitivity(p, blocks).value == 0
    assert histogram_sensitivity(p).value == 2


def test_weights_scale_the_linear_sum_like_enumeration():
    p = Policy(line_graph(Domain.ordered(4)))
    w = [0.5, -3.0]
    assert linear_sum_sensitivity(p, weights=w).value == enumerate_sensitivity(p, linear_query(p, weights=w), n=2).value


def test_histogram_sensitivity_under_count_constraints_by_induced_neighbours():
    d = Domain.ordered(4)
    free = Policy(complete_graph(d), n=3)
    known = Policy(complete_graph(d), [CountConstraint((0, 1), 1)], n=3)
    assert enumerate_sensitivity(free, histogram_query(free)).value == 2
    # with #{0, 1} public, moving an individual out of {0, 1} forces another one in:
    # (0, 2, 2) and (3, 1, 2) are neighbours and the histogram moves by 4
    s = enumerate_sensitivity(known, histogram_query(known))
    assert s.value == 4 and s.details["induced_neighbours"]
    assert sorted(np.abs(np.subtract(*[np.bincount(np.array(x), minlength=4) for x in s.witness.pair]))) == [1, 1, 1, 1]
    known0 = Policy(complete_graph(d), [CountConstraint((0,), 1)], n=3)
    # the closed form refuses constrained policies instead of answering 2
    with pytest.raises(PolicyError, match="without constraints"):
        histogram_sensitivity(known0)
    # a marginal fixing every count: the histogram is public, sensitivity 0
    fixed = Policy(complete_graph(d), [CountConstraint((v,), 1) for v in range(3)], n=3)
    assert enumerate_sensitivity(fixed, histogram_query(fixed)).value == 0


def test_enumeration_refuses_large_domains_clearly():
    p = Policy(complete_graph(Domain.ordered(100)))
    with pytest.raises(PolicyError, match="1000000 databases"):
        enumerate_sensitivity(p, histogram_query(p), n=3)
    with pytest.raises(PolicyError, match="needs the number of tuples"):
        enumerate_sensitivity(p, histogram_query(p))
