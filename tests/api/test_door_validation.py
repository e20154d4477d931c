"""Validation at the door (issue 44, item 6): the public functions check epsilon, the Lipschitz constant,
the method and the options before any engine runs, and their messages name the function the user
called, never an engine (``MQMExact.calibrate``, ``gk16``, ``group_dp``) the user did not call."""

import pytest

import puffgm
from puffgm.exceptions import ParameterError

CHAIN = {"transition": [[0.9, 0.1], [0.2, 0.8]], "initial": "stationary", "length": 6}
BOX = {"box": {"p0": [0.2, 0.3], "p1": [0.6, 0.7]}, "initial": "any", "length": 5}
ENGINES = ("MQMExact", "MQMApprox", "gk16", "group_dp", "certified", "'calibrate'", "of calibrate ")


@pytest.fixture
def no_engine(monkeypatch):
    """Every chain engine fails the test if it is reached."""
    import puffgm.chains.kind as kind

    def reached(*args, **kwargs):
        raise AssertionError("an engine ran on input the door should have refused")

    for name in ("MQMExact", "MQMApprox", "gk16", "group_dp", "certified_mqm_exact"):
        monkeypatch.setattr(kind, name, reached)


def _refused(match, call, *args, **kwargs) -> str:
    with pytest.raises(ParameterError, match=match) as info:
        call(*args, **kwargs)
    text = str(info.value)
    assert not any(e in text for e in ENGINES), text
    return text


@pytest.mark.parametrize("method", ["exact", "approx", "groupdp", "gk16"])
@pytest.mark.parametrize("epsilon", [-1, 0, float("nan"), float("inf"), "1", True])
def test_a_chains_bad_epsilon_names_puffgm_calibrate(no_engine, method, epsilon):
    _refused(r"^The 'epsilon' parameter of puffgm\.calibrate must be a finite number > 0\. Got",
             puffgm.calibrate, CHAIN, epsilon=epsilon, method=method)


@pytest.mark.parametrize("prior", [CHAIN, "example:asia"])
def test_lipschitz_and_method_are_checked_at_the_door(no_engine, prior):
    _refused(r"'lipschitz' parameter of puffgm\.calibrate", puffgm.calibrate, prior, epsilon=1.0, lipschitz=-2)
    _refused(r"'method' parameter of puffgm\.calibrate must be a string", puffgm.calibrate, prior, epsilon=1.0,
             method=5)
    _refused(r"do not apply to method 'exact'", puffgm.calibrate, prior, epsilon=1.0, no_such_option=1)


def test_a_box_and_a_network_name_puffgm_calibrate(no_engine):
    _refused(r"of puffgm\.calibrate must", puffgm.calibrate, BOX, epsilon=-1)
    _refused(r"of puffgm\.calibrate must", puffgm.calibrate, "example:asia", epsilon=-1)


def test_the_other_doors_name_themselves(no_engine):
    _refused(r"'max_b' parameter of puffgm\.influence_curve", puffgm.influence_curve, CHAIN, max_b=0)
    _refused(r"'epsilon' parameter of puffgm\.translate", puffgm.translate, CHAIN, epsilon=-1)
    _refused(r"'epsilon_dp' parameter of puffgm\.translate", puffgm.translate, CHAIN, epsilon_dp=float("nan"))
    _refused(r"'epsilon' parameter of puffgm\.calibrate_query", puffgm.calibrate_query, "example:asia",
             {"count": "yes"}, epsilon=-1)
    _refused(r"'epsilon' parameter of puffgm\.calibrate_workload", puffgm.calibrate_workload, "example:asia",
             {"histogram": {}}, epsilon=-1)


def test_translate_checks_epsilon_before_computing_a_curve(monkeypatch):
    import puffgm.api.dispatch as dispatch

    monkeypatch.setattr(dispatch, "influence_curve", lambda *a, **k: pytest.fail("a curve was computed"))
    _refused(r"puffgm\.translate", puffgm.translate, "example:asia", epsilon=-1)
    _refused(r"exactly one of 'epsilon'", puffgm.translate, "example:asia")
