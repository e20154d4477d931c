"""Chain priors: validation, fitting with gaps and smoothing, pgmpy conversion, JSON spec, CLI support."""

import json

import numpy as np
import pytest

from puffgm import calibrate as calibrate_specs
from puffgm.chains import ChainPriorClass, load_chain_spec
from puffgm.chains.priors import smooth_transition
from puffgm.exceptions import ParameterError, PriorError

P1 = [[0.9, 0.1], [0.4, 0.6]]


def test_validation_messages():
    with pytest.raises(PriorError, match="Row 1 of the transition matrix.*off 1 by more than 1e-06"):
        ChainPriorClass.from_matrices([[0.5, 0.5], [0.5, 0.501]], "any", 5)
    with pytest.raises(PriorError, match="negative"):
        ChainPriorClass.from_matrices([[1.5, -0.5], [0.5, 0.5]], "any", 5)
    with pytest.raises(PriorError, match="NaN"):
        ChainPriorClass.from_matrices([[np.nan, 1], [0.5, 0.5]], "any", 5)
    with pytest.raises(PriorError, match="length T .* integer >= 1"):
        ChainPriorClass.from_matrices(P1, "any", 0)
    with pytest.raises(PriorError, match="3 entries, expected 2"):
        ChainPriorClass.from_matrices(P1, [0.2, 0.3, 0.5], 5)
    with pytest.raises(PriorError, match="square"):
        ChainPriorClass.from_matrices([[0.5, 0.5]], "any", 5)
    with pytest.raises(PriorError, match="'stationary' or 'any'"):
        ChainPriorClass.from_matrices(P1, "uniform", 5)
    with pytest.raises(PriorError, match="not unique"):
        ChainPriorClass.from_matrices([[1, 0], [0, 1]], "stationary", 5)


def test_small_slips_renormalised_and_recorded():
    cc = ChainPriorClass.from_matrices([[0.9, 0.1 + 5e-7], [0.4, 0.6]], [1, 0], 5)
    assert np.allclose(cc.members[0].transition.sum(axis=1), 1.0, atol=1e-15)
    assert any("renormalised 1 row" in n for n in cc.notes)


def test_fingerprint_stable_and_sensitive():
    a = ChainPriorClass.from_matrices(P1, [1, 0], 100)
    assert a.fingerprint == ChainPriorClass.from_matrices(P1, [1, 0], 100).fingerprint
    assert a.fingerprint != ChainPriorClass.from_matrices(P1, [1, 0], 101).fingerprint
    assert a.fingerprint != ChainPriorClass.from_matrices(P1, "stationary", 100).fingerprint


def test_fit_with_gaps_and_smoothing():
    seq = [0, 0, 1, None, 1, 1, float("nan"), 0, 2]
    cc = ChainPriorClass.fit(seq, length=10, tau=0.0)
    P = cc.members[0].transition
    # transitions: 0->0, 0->1, 1->1, 0->2 (none across gaps); state 2 never left -> uniform row
    assert P[0] == pytest.approx([1 / 3, 1 / 3, 1 / 3])
    assert P[1] == pytest.approx([0, 1, 0])
    assert P[2] == pytest.approx([1 / 3, 1 / 3, 1 / 3])
    sm = ChainPriorClass.fit([seq, [1, 0]], length=10).members[0].transition
    assert sm[1, 0] == pytest.approx(0.5 - 5e-6) and sm[1, 2] == pytest.approx(1e-5) and np.all(sm > 0) and np.allclose(sm.sum(axis=1), 1)
    S = smooth_transition([[0.5, 0.0, 0.5]], 1e-5)
    assert S[0] == pytest.approx([0.5 - 5e-6, 1e-5, 0.5 - 5e-6])


def test_to_pgmpy_unrolls():
    cc = ChainPriorClass.from_matrices(P1, [1, 0], 4)
    m = cc.to_pgmpy()
    assert sorted(m.edges()) == [("X1", "X2"), ("X2", "X3"), ("X3", "X4")]
    cpd = m.get_cpds("X3")
    assert np.allclose(cpd.values, np.asarray(P1).T)
    with pytest.raises(PriorError, match="infinite family"):
        ChainPriorClass.from_matrices(P1, "any", 4).to_pgmpy()
    fam = ChainPriorClass.from_family([P1, P1], [[1, 0], "stationary"], 3)
    assert len(fam.to_pgmpy()) == 2


def test_from_pgmpy_markov_chain():
    from pgmpy.factors.discrete import State
    from pgmpy.models import MarkovChain

    mc = MarkovChain(["w"], [2])
    mc.add_transition_model("w", {0: {0: 0.9, 1: 0.1}, 1: {0: 0.4, 1: 0.6}})
    cc = ChainPriorClass.from_pgmpy(mc, length=10)
    assert cc.members[0].initial == pytest.approx([0.5, 0.5]) and any("uniform" in n for n in cc.notes)
    mc.set_start_state([State("w", 1)])
    cc = ChainPriorClass.from_pgmpy(mc, length=10)
    assert cc.members[0].initial == pytest.approx([0, 1]) and any("point mass" in n for n in cc.notes)
    mc2 = MarkovChain(["a", "b"], [2, 2])
    mc2.add_transition_model("a", {0: {0: 0.9, 1: 0.1}, 1: {0: 0.4, 1: 0.6}})
    mc2.add_transition_model("b", {0: {0: 0.5, 1: 0.5}, 1: {0: 0.2, 1: 0.8}})
    cc2 = ChainPriorClass.from_pgmpy(mc2, length=5, initial="stationary")
    assert cc2.k == 4 and cc2.states[1] == "a=0,b=1"
    assert np.allclose(cc2.members[0].transition, np.kron(P1, [[0.5, 0.5], [0.2, 0.8]]))


def test_specs_calibrate_through_the_prior_interface(tmp_path):
    p = tmp_path / "t1.json"
    p.write_text(json.dumps({"transition": P1, "initial": [1, 0], "length": 100}))
    r = calibrate_specs([str(p)], epsilon=1.0)
    assert r.sigma_max == pytest.approx(12.9341, abs=5e-5) and r.worst.quilt == ("X1", "X13")
    assert r.groupdp_sigma == pytest.approx(100.0) and len(r.per_node) == 100 and "l" in r.details
    rp = calibrate_specs([str(p)], epsilon=1.0, paper_convention=True)
    assert rp.sigma_max == pytest.approx(13.0219, abs=5e-5)
    q = tmp_path / "t2.json"
    q.write_text(json.dumps({"transitions": [[[0.8, 0.2], [0.3, 0.7]]], "initials": [[0.9, 0.1]], "length": 100}))
    both = calibrate_specs([str(p), str(q)], epsilon=1.0)
    assert both.sigma_max >= r.sigma_max - 1e-9
    a = calibrate_specs([str(p)], epsilon=1.0, method="approx")
    assert a.sigma_max >= r.sigma_max and a.details["pi_min"] == pytest.approx(0.2)
    g = calibrate_specs([str(p)], epsilon=1.0, method="gk16")
    assert not g.applicable
    assert calibrate_specs([str(p)], epsilon=2.0, method="groupdp").sigma_max == pytest.approx(50)
    json.dumps(r.to_dict(per_node=True))
    with pytest.raises(ParameterError, match="Method 'fast' does not apply to Markov-chain priors"):
        calibrate_specs([str(p)], epsilon=1.0, method="fast")


@pytest.mark.parametrize(
    "spec,msg",
    [
        ({"transition": P1}, "no 'length'"),
        ({"transition": P1, "length": 0}, "integer >= 1"),
        ({"transition": P1, "transitions": [P1], "length": 3}, "exactly one"),
        ({"transition": [[0.5, 0.6], [0.5, 0.5]], "length": 3}, "off 1"),
        ({"transition": P1, "length": 3, "foo": 1}, "unknown key"),
    ],
)
def test_spec_errors(tmp_path, spec, msg):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(spec))
    with pytest.raises(PriorError, match=msg):
        load_chain_spec(p)


def test_spec_file_errors(tmp_path):
    with pytest.raises(PriorError, match="does not exist"):
        load_chain_spec(tmp_path / "none.json")
    p = tmp_path / "x.json"
    p.write_text("{not json")
    with pytest.raises(PriorError, match="not valid JSON"):
        load_chain_spec(p)


def test_real_series_and_discretise():
    import numpy as np

    from puffgm.chains.data import discretise, load_real_series

    x, source = load_real_series()  # pmdarima's electricity series if installed, else El Nino
    assert len(x) > 500 and np.all(np.isfinite(x)) and source
    s = discretise(x, 51)
    assert s.min() == 0 and s.max() == 50 and len(s) == len(x)
    assert list(discretise([0.0, 0.5, 1.0], 2)) == [0, 1, 1]
