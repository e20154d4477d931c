"""Validation at the door, second half (issue 44, item 6): ``PriorKind.calibrate`` returns the engine's
CalibrationResult itself.  Every engine records the options and the graph when it builds its result (the
kinds pass the user's options down), so nothing rewrites a result after the fact, and the composition
key of MQM releases is what it was: the same options give the same key, different options another."""

from __future__ import annotations

import pathlib

import pytest

import puffgm
import puffgm.chains.kind as chain_kind
import puffgm.gaussian.kind as gaussian_kind
import puffgm.networks.kind as network_kind
from puffgm.chains import ChainParameterBox, ChainPriorClass, MQMApprox, MQMExact
from puffgm.core.release import quilt_set_key
from puffgm.gaussian.networks import gaussian_calibrate, load_gaussian_class

CHAIN = ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], [1, 0], 12)
BOX = ChainParameterBox(p0=(0.2, 0.8), p1=(0.3, 0.7), initial="any", length=6)
GAUSS = str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "gaussian_sensors.json")


def _spy(monkeypatch, owner, name):
    """Wrap ``owner.name`` (a function or a method) so that every result it returns is kept."""
    made = []
    original = getattr(owner, name)

    def spy(*args, **kwargs):
        made.append(original(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(owner, name, spy)
    return made


# (prior, method, options, where the engine lives, its name)
ROADS = [
    ("example:asia", "exact", {"protected": ["smoke", "lung"]}, network_kind, "calibrate"),
    (CHAIN, "exact", {"max_length": 4}, MQMExact, "calibrate"),
    (CHAIN, "approx", {"use_reversible": False, "time_limit": 30}, MQMApprox, "calibrate"),
    (CHAIN, "groupdp", {"time_limit": 30}, chain_kind, "group_dp"),
    (CHAIN, "gk16", {}, chain_kind, "gk16"),
    (BOX, "exact", {"rtol": 0.01, "time_limit": 60}, chain_kind, "certified_mqm_exact"),
    (BOX, "approx", {}, MQMApprox, "calibrate"),
    (GAUSS, "exact", {"protected": ["S1", "S2"]}, gaussian_kind, "gaussian_calibrate"),
]


@pytest.mark.parametrize(("prior", "method", "options", "owner", "name"), ROADS,
                         ids=[f"{type(r[0]).__name__}-{r[1]}" for r in ROADS])
def test_calibrate_returns_the_engines_result_itself(monkeypatch, prior, method, options, owner, name):
    made = _spy(monkeypatch, owner, name)
    result = puffgm.calibrate(prior, epsilon=2.0, method=method, **options)
    assert len(made) >= 1 and result is made[-1]  # the object the engine built, not a copy
    assert result.options is not None and result.graph is not None


def test_the_engines_record_the_options_and_the_graph():
    for method, options in [("exact", {"max_length": 4, "per_node": True}), ("approx", {"time_limit": 30}),
                            ("groupdp", {}), ("gk16", {"time_limit": 5})]:
        r = puffgm.calibrate(CHAIN, epsilon=2.0, method=method, **options)
        assert r.options == tuple(sorted(options.items())), method
        assert r.graph.kind == "chain" and r.graph.length == 12
    other = ChainPriorClass.from_matrices([[0.8, 0.2], [0.3, 0.7]], "stationary", 12)
    family = puffgm.calibrate([CHAIN, other], epsilon=2.0, mixing=False)
    assert family.options == (("mixing", False),) and family.graph.length == 12
    box = puffgm.calibrate(BOX, epsilon=2.0, rtol=0.01)
    assert box.options == (("rtol", 0.01),) and box.graph.kind == "chain" and box.graph.length == 6
    asia = puffgm.calibrate("example:asia", epsilon=2.0, max_quilt_states=64)
    assert dict(asia.options)["max_quilt_states"] == 64  # the network engine records its quilt-set options
    assert asia.graph.kind == "dag" and ("smoke", "lung") in asia.graph.edges and len(asia.graph.nodes) == 8
    gauss = puffgm.calibrate(GAUSS, epsilon=40.0, protected=["S1"])
    theta = load_gaussian_class(GAUSS)
    assert gauss.options == (("protected", ["S1"]),)
    assert gauss.graph.kind == "dag" and set(gauss.graph.edges) == set(theta.priors[0].dag.edges)
    assert gauss.graph.nodes == tuple(theta.nodes)


def test_a_direct_engine_call_records_what_it_is_given():
    # the same options recorded by the engine or by puffgm.calibrate: one composition key
    direct = MQMExact(CHAIN, max_length=4).calibrate(epsilon=2.0, options={"max_length": 4})
    assert quilt_set_key(direct) == quilt_set_key(puffgm.calibrate(CHAIN, epsilon=2.0, max_length=4))
    assert quilt_set_key(direct) != quilt_set_key(puffgm.calibrate(CHAIN, epsilon=2.0))
    # nothing recorded: a key of its own, not the key of the same calibration made through puffgm.calibrate
    bare = MQMExact(CHAIN, max_length=4).calibrate(epsilon=2.0)
    assert bare.options is None and bare.graph.length == 12
    assert quilt_set_key(bare) != quilt_set_key(direct)
    # the linear-Gaussian engine records its own keywords (those given)
    assert gaussian_calibrate(GAUSS, epsilon=40.0, delta=0.25).options == (("delta", 0.25),)


def test_options_decide_the_key_as_before():
    key = {name: quilt_set_key(puffgm.calibrate(CHAIN, epsilon=2.0, method="approx", **opts))
           for name, opts in [("none", {}), ("again", {}), ("limit", {"time_limit": 30}),
                              ("irreversible", {"use_reversible": False})]}
    assert key["none"] == key["again"]
    assert len({key["none"], key["limit"], key["irreversible"]}) == 3
    display = puffgm.calibrate(CHAIN, epsilon=2.0, per_node=True)  # an execution option: the same quilt sets
    assert quilt_set_key(display) == quilt_set_key(puffgm.calibrate(CHAIN, epsilon=2.0))
