"""Blowfish policies, neighbours (Definition 4.1) and the graph-distance guarantee."""

import math

import networkx as nx
import numpy as np
import pytest

from puffgm.blowfish import (
    CountConstraint,
    Domain,
    Policy,
    PolicyError,
    are_neighbours,
    attribute_graph,
    complete_graph,
    distance_guarantee,
    distance_threshold_graph,
    graph_from_networkx,
    grid_partition_blocks,
    line_graph,
    marginal_constraints,
    neighbour_pairs,
    partition_graph,
    policy_from_dict,
)
from puffgm.blowfish.pufferfish import audit_blowfish_laplace


def _graphs():
    g = Domain.grid({"a": 3, "b": 3})
    o = Domain.ordered(6)
    return [
        complete_graph(g), attribute_graph(g), distance_threshold_graph(g, 2), distance_threshold_graph(g, 1.5),
        partition_graph(g, grid_partition_blocks(g, [2, 3])), complete_graph(o), line_graph(o),
        distance_threshold_graph(o, 3), partition_graph(o, [[0, 1, 2], [4, 5]]),
        graph_from_networkx(o, nx.cycle_graph(6)),
    ]


@pytest.mark.parametrize("graph", _graphs(), ids=lambda g: g.kind)
def test_closed_form_graph_distances_equal_networkx_shortest_paths(graph):
    nxg = graph.to_networkx()
    assert nxg.number_of_edges() == graph.n_edges
    for x in graph.domain.values:
        lengths = nx.single_source_shortest_path_length(nxg, x)
        for y in graph.domain.values:
            assert graph.distance(x, y) == lengths.get(y, math.inf)
            assert graph.has_edge(x, y) == nxg.has_edge(x, y)


def test_structured_graphs_have_the_paper_edges():
    g = Domain.grid({"a": 3, "b": 4})
    assert complete_graph(g).n_edges == 12 * 11 // 2
    # attribute: differ in exactly one attribute
    assert attribute_graph(g).n_edges == 4 * 3 + 3 * 6
    assert distance_threshold_graph(g, 1).n_edges == 2 * 3 * 4 - 3 - 4
    assert line_graph(Domain.ordered(7)).n_edges == 6


def test_unconstrained_neighbours_are_single_moves_along_edges():
    p = Policy(line_graph(Domain.ordered(3)))
    assert are_neighbours(p, [0, 2], [1, 2])
    assert not are_neighbours(p, [0, 2], [2, 2])  # not an edge
    assert not are_neighbours(p, [0, 1], [1, 2])  # two tuples change
    # Definition 4.1's generic check (condition 3 against every D3) agrees with the closed form
    dbs, pairs = neighbour_pairs(p, 3)
    for j1, j2 in pairs:
        diff = np.flatnonzero(dbs[j1] != dbs[j2])
        assert len(diff) == 1 and abs(dbs[j1][diff[0]] - dbs[j2][diff[0]]) == 1
    # 3 individuals x 4 ordered adjacent value pairs x 3^2 values of the others
    assert len(pairs) == 3 * 4 * 9


def test_generic_condition_3_matches_closed_form_without_constraints():
    # a trivially true constraint keeps I_Q = I_n but forces the generic Definition 4.1 path
    d = Domain.ordered(3)
    p = Policy(distance_threshold_graph(d, 1), n=2)
    q = Policy(distance_threshold_graph(d, 1), [CountConstraint((0, 1, 2), 2)], n=2)
    a = {tuple(map(tuple, (x, y))) for x, y in (lambda dp: [(dp[0][i], dp[0][j]) for i, j in dp[1]])(neighbour_pairs(p))}
    b = {tuple(map(tuple, (x, y))) for x, y in (lambda dp: [(dp[0][i], dp[0][j]) for i, j in dp[1]])(neighbour_pairs(q))}
    assert a == b and len(a) == 2 * 2 * 3 * 2


def test_induced_neighbours_under_a_count_constraint_swap_two_tuples():
    # Kifer-Machanavajjhala style: the number of 0s is public, complete graph
    p = Policy(complete_graph(Domain.ordered(3)), [CountConstraint((0,), 1)], n=2)
    assert are_neighbours(p, [0, 1], [1, 0])  # the only way to change individual 0's value
    assert are_neighbours(p, [0, 1], [0, 2])
    assert not are_neighbours(p, [0, 1], [1, 1])  # violates the constraint


def test_distance_guarantee_is_attained_by_a_linear_sum_on_the_line():
    p = Policy(line_graph(Domain.ordered(5)))
    eps = 0.7
    assert distance_guarantee(p, 0, 3, epsilon=eps) == pytest.approx(3 * eps)
    # Laplace on the sum at scale 1/eps: databases differing 0 -> 3 in one tuple have loss exactly 3 eps
    r = audit_blowfish_laplace(Policy(complete_graph(Domain.ordered(5))), lambda db: float(sum(db)), 1 / eps, n=1)
    assert r.loss == pytest.approx(4 * eps)  # the pair (0, 4) at distance 4 on the line
    assert distance_guarantee(Policy(partition_graph(Domain.ordered(4), [[0, 1], [2, 3]])), 0, 3, epsilon=1.0) == math.inf


@pytest.mark.parametrize("make, message", [
    (lambda: Domain.ordered(0), "empty"),
    (lambda: Domain.categorical([]), "empty"),
    (lambda: Domain.grid({}), "empty"),
    (lambda: Domain.categorical(["a", "a"]), "twice"),
    (lambda: Domain.grid((256, 256, 256)), "more coarsely"),
    (lambda: partition_graph(Domain.ordered(3), [[0, 7]]), "not in the domain"),
    (lambda: partition_graph(Domain.ordered(3), [[0, 1], [1, 2]]), "two blocks"),
    (lambda: graph_from_networkx(Domain.ordered(3), nx.path_graph(5)), "not a domain value"),
    (lambda: distance_threshold_graph(Domain.categorical(list("xyz")), 1), "ordered or grid"),
    (lambda: distance_threshold_graph(Domain.ordered(3), 0), "theta"),
    (lambda: distance_threshold_graph(Domain.ordered(3), math.inf), "theta"),
    (lambda: attribute_graph(Domain.ordered(3)), "grid"),
    (lambda: line_graph(Domain.grid((2, 2))), "ordered"),
    (lambda: Policy(complete_graph(Domain.ordered(3)), [CountConstraint((0, 1), 2), CountConstraint((0,), 3)], n=3),
     "contradictory"),
    (lambda: Policy(complete_graph(Domain.ordered(3)), [CountConstraint((0, 1), 2), CountConstraint((0, 1, 2), 1)]),
     "contradictory"),
    (lambda: Policy(complete_graph(Domain.ordered(3)), [CountConstraint((0,), 4)], n=3), "contradictory"),
    (lambda: Policy(complete_graph(Domain.ordered(3)), [CountConstraint((9,), 1)]), "not in the domain"),
    (lambda: CountConstraint((0,), -1), "integer >= 0"),
    (lambda: marginal_constraints(Domain.grid({"a": 2, "b": 2}), ["c"], {}), "unknown attribute"),
    (lambda: Policy(complete_graph(Domain.ordered(3)), n=0), "n must be"),
])
def test_invalid_policies_fail_with_one_clear_sentence(make, message):
    with pytest.raises(PolicyError, match=message):
        make()


def test_marginals_expand_to_count_constraints_and_are_checked():
    d = Domain.grid({"sex": ["f", "m"], "age": 3})
    cons = marginal_constraints(d, ["sex"], {"f": 2, "m": 1})
    assert sorted(c.count for c in cons) == [1, 2]
    Policy(attribute_graph(d), cons, n=3)
    with pytest.raises(PolicyError, match="contradictory"):
        Policy(attribute_graph(d), cons, n=4)


def test_policy_json_round_trip_and_keys():
    spec = {"domain": {"kind": "grid", "attributes": {"a": 3, "b": 2}}, "graph": {"kind": "partition", "cell": [3, 1]},
            "constraints": [{"values": [[0, 0], [1, 0]], "count": 1}], "n": 2}
    p = policy_from_dict(spec)
    assert p.graph.n_edges == 2 * 3 and len(p.constraints) == 1
    assert policy_from_dict(p.to_dict()).key == p.key
    assert Policy(line_graph(Domain.ordered(4))).key != Policy(complete_graph(Domain.ordered(4))).key
