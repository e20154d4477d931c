"""One witness type (puffgm.core.witness): the results name where their maximum is attained by field, print
and serialise it as before, and give outputs in the query's own units."""

import math

import pytest

import puffgm
from puffgm.core.curve import InfluenceCurve
from puffgm.core.query import SumQuery
from puffgm.core.witness import NodeId, Witness


def test_forms_of_a_witness():
    w = Witness(prior=1, node="tub", pair=("yes", "no"), output=math.inf)
    assert str(w) == "node tub (yes vs no), prior 1"
    assert w.to_dict() == {"prior": 1, "node": "tub", "a": "yes", "b": "no", "output": "+inf"}
    assert Witness(prior=0, pair=("s1", "s2"), output=3).to_dict() == {"prior": 0, "pair": ["s1", "s2"], "output": 3}
    assert Witness(node="X3", quilt=("X2", "X4")).to_dict() == {"node": "X3", "quilt": ["X2", "X4"]}
    assert w.node_id == NodeId(1, "tub") and Witness(pair=(0, 1)).node_id is None
    assert NodeId(0, "tub").detail() == "tub" and NodeId(2, "tub").detail() == (2, "tub")


def test_grid_outputs_in_query_units():
    q = SumQuery({"scores": {"A": [1, 3], "B": [0.5, 1]}}).bind(["A", "B"], {"A": ["0", "1"], "B": ["0", "1"]})
    g = 2  # a grid sum: F = (offset + g) / unit
    assert Witness(output=g).in_units((q,)).output == (q.offset + g) / q.unit
    assert Witness(output=-math.inf).in_units((q,)).output == -math.inf
    assert Witness(output=(g, 0)).in_units((q, q)).output == ((q.offset + g) / q.unit, q.offset / q.unit)


def test_query_witness_output_is_an_output_of_the_query():
    """Shifting every score by a constant shifts F and its released value, so the output where the loss is
    attained moves by the same constant (in the query's units) while the node, pair and scale stay."""
    base = {"lung": [0, 2], "either": [0, 1]}
    cals = [puffgm.calibrate_query("example:asia", {"scores": {n: [s + c for s in v] for n, v in base.items()}},
                                   epsilon=1.0, method="optimal-laplace", baselines=False) for c in (0, 10)]
    a, b = (c.witness for c in cals)
    assert (a.prior, a.node, a.pair) == (b.prior, b.node, b.pair)
    assert cals[0].scale == pytest.approx(cals[1].scale, rel=1e-12)
    assert math.isinf(a.output) or b.output == pytest.approx(a.output + 20, abs=1e-9)
    lo, hi = cals[1].query["min_value"], cals[1].query["max_value"]
    assert math.isinf(b.output) or lo <= b.output <= hi
    assert cals[1].to_dict()["witness"] == b.to_dict() and f"decided at {b}" in cals[1].explain()


def test_curve_points_hold_witness_records():
    c = InfluenceCurve(b=(1, 2), a=(2.0, 1.0), witnesses=[("X1", ("X2",)), None], n_entries=3, method="x",
                       fingerprint="f")
    assert c.witnesses[0] == Witness(node="X1", quilt=("X2",)) and c.witnesses[1] is None
    assert c.to_dict()["witnesses"][0] == {"b": 1, "node": "X1", "quilt": ["X2"]}
    trivial = c.candidate_points()[-1][2]
    assert (trivial.node, c.candidate_points()[-1][:2]) == ("*", (3, 0.0))


def test_audit_and_blowfish_witnesses_are_records():
    from puffgm.blowfish import Domain, Policy, line_graph
    from puffgm.blowfish.sensitivity import cumulative_sensitivity

    s = cumulative_sensitivity(Policy(line_graph(Domain.ordered(5))))
    assert isinstance(s.witness, Witness) and s.to_dict()["witness"] == list(s.witness.pair)
    assert f"attained at {s.witness.pair!r}" in s.explain()
