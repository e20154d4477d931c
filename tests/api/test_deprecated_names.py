"""Every deprecated name still works for one release: it warns, naming the new name, and gives the same result."""

import json
import subprocess
import sys

import pytest

import puffgm
from puffgm.chains.leakage import allocate_budget
from puffgm.core.curve import curve_from_points
from puffgm.exceptions import ParameterError
from puffgm.mechanisms import pufferfish as pf
from puffgm.mechanisms import translation as tr


def _untimed(d):
    """The JSON value without its timings (they differ between two runs)."""
    if isinstance(d, dict):
        return {k: _untimed(v) for k, v in d.items() if k not in ("seconds", "time", "elapsed")}
    if isinstance(d, list):
        return [_untimed(v) for v in d]
    return d


CURVE = curve_from_points({1: 0.4, 2: 0.1}, n_entries=4, fingerprint="deprecated-names")


@pytest.mark.parametrize("call", [
    lambda **e: tr.dp_epsilon(CURVE, **e),
    lambda **e: tr.translate_curve(CURVE, **e),
    lambda **e: puffgm.translate(CURVE, **e),
    lambda **e: pf.PufferfishLaplace(CURVE, **e).translation,
    lambda **e: pf.PufferfishExponential(CURVE, **e).translation,
    lambda **e: pf.PufferfishTopK(CURVE, k=2, **e).translation,
    lambda **e: pf.pufferfish_laplace(3.0, CURVE, random_state=0, **e).value,
    lambda **e: pf.pufferfish_exponential([1.0, 2.0], CURVE, random_state=0, **e).value,
    lambda **e: pf.pufferfish_top_k([1.0, 2.0, 3.0], 2, CURVE, random_state=0, **e).value,
])
def test_epsilon_puffer_is_a_deprecated_alias_of_epsilon(call):
    with pytest.warns(DeprecationWarning, match="'epsilon_puffer' parameter .* use 'epsilon'"):
        old = call(epsilon_puffer=2.0)
    assert old == call(epsilon=2.0)


def test_giving_both_names_is_refused():
    with pytest.raises(ParameterError, match="both 'epsilon' and its deprecated name 'epsilon_puffer'"):
        tr.dp_epsilon(CURVE, epsilon=1.0, epsilon_puffer=1.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'epsilon_pufer'"):
        tr.dp_epsilon(CURVE, epsilon_pufer=1.0)


def test_target_is_a_deprecated_alias_of_epsilon():
    P = [[0.8, 0.2], [0.1, 0.9]]
    with pytest.warns(DeprecationWarning, match="'target' parameter of allocate_budget .* use 'epsilon'"):
        old = allocate_budget(P, target=1.0, length=20)
    assert old.to_dict() == allocate_budget(P, epsilon=1.0, length=20).to_dict()


def test_the_old_translate_is_a_deprecated_alias():
    with pytest.warns(DeprecationWarning, match="use puffgm.translate or .*translate_curve"):
        old = tr.translate(CURVE, epsilon_dp=0.5)
    assert old == tr.translate_curve(CURVE, epsilon_dp=0.5) == puffgm.translate(CURVE, epsilon_dp=0.5)


def test_calibrate_with_a_query_warns_and_names_the_right_function():
    with pytest.warns(DeprecationWarning, match=r"use puffgm\.calibrate_query\(prior, query"):
        old = puffgm.calibrate("example:asia", epsilon=1.0, method="optimal-laplace", query={"count": "yes"})
    new = puffgm.calibrate_query("example:asia", {"count": "yes"}, epsilon=1.0, method="optimal-laplace")
    assert _untimed(old.to_dict()) == _untimed(new.to_dict())
    with pytest.warns(DeprecationWarning, match=r"use puffgm\.calibrate_workload"):
        old = puffgm.calibrate("example:asia", epsilon=1.0, method="optimal-laplace", query={"histogram": {}},
                               baselines=False)
    new = puffgm.calibrate_workload("example:asia", {"histogram": {}}, epsilon=1.0, baselines=False)
    assert _untimed(old.to_dict()) == _untimed(new.to_dict())


@pytest.mark.parametrize("result", ["calibration", "query", "curve"])
def test_a_result_given_as_a_prior_names_the_right_function(result):
    made = {"calibration": lambda: puffgm.calibrate("example:cancer", epsilon=4.0),
            "query": lambda: puffgm.calibrate_query("example:cancer", {"count": 0}, epsilon=1.0),
            "curve": lambda: puffgm.influence_curve("example:cancer")}[result]()
    expected = {"calibration": r"release_laplace\(answer, cal\)", "query": r"release_query\(answer, cal\)",
                "curve": r"puffgm\.translate\(curve"}[result]
    for call in (lambda: puffgm.calibrate(made, epsilon=1.0), lambda: puffgm.influence_curve(made),
                 lambda: puffgm.calibrate_query(made, {"count": 0}, epsilon=1.0)):
        with pytest.raises(puffgm.exceptions.PriorError, match=expected):
            call()
    if result != "curve":
        with pytest.raises(puffgm.exceptions.PriorError, match=expected):
            puffgm.translate(made, epsilon=1.0)


def _cli(*argv):
    return subprocess.run([sys.executable, "-m", "puffgm", *argv], capture_output=True, text=True, check=False)


@pytest.mark.parametrize("new,old,argv", [
    ("--protected", "--protect", ["calibrate", "example:asia", "--epsilon", "4", "--json", "{flag}", "smoke"]),
    ("--protected", "--protect", ["curve", "example:cancer", "--json", "{flag}", "Smoker"]),
    ("--epsilon", "--epsilon-puffer", ["translate", "example:cancer", "--json", "{flag}", "2"]),
])
def test_a_deprecated_flag_works_and_says_its_new_name(new, old, argv):
    fresh = _cli(*[new if a == "{flag}" else a for a in argv])
    stale = _cli(*[old if a == "{flag}" else a for a in argv])
    assert fresh.returncode == stale.returncode == 0, stale.stderr
    assert stale.stderr.strip() == f"puffgm: warning: {old} is deprecated; use {new}."
    assert _untimed(json.loads(stale.stdout)) == _untimed(json.loads(fresh.stdout))
