"""Every positive finite epsilon gets a sound answer or one clear sentence, on every road.

For epsilons from 1e-300 to 1e300 and every method (MQM exact, MQMApprox, group DP, GK16, the
query-specific methods, translation), on a network and on chains (5, 100 and 10^6 steps, stationary
and fixed starts, a GK16-applicable chain, a parameter box), the CLI either prints a result whose
reported loss is at most epsilon (to 1e-9 relative) and whose scale is a finite positive number (or
a GK16 result that says it does not apply), or refuses with exit code 2 and one line on stderr that
says what is out of range and what range works.  Never a traceback, a NaN, "math domain error",
"please report" or the generic "cannot be carried out".
"""

from __future__ import annotations

import json
import math
import re

import pytest

import puffgm
from puffgm.api import as_prior
from puffgm.api.query import query_calibration
from puffgm.chains import ChainPriorClass, MQMApprox, MQMExact
from puffgm.exceptions import NumericalError
from puffgm.mechanisms.query import RESOLUTION_FACTOR, loss_resolution

EPSILONS = ("1e-300", "1e-20", "1e-13", "1e-8", "1e-3", "100", "1000", "1e6", "1e300")
CHAIN = {"transition": [[0.9, 0.1], [0.4, 0.6]], "initial": "stationary", "length": 5}
#: The chain specs besides CHAIN, each calibrated by the chain methods of CHAIN_ROADS.
CHAINS = {
    "chain-100": dict(CHAIN, length=100),
    "chain-1e6": dict(CHAIN, length=10**6),
    "chain-fixed": dict(CHAIN, initial=[1, 0], length=100),
    "chain-gk16": {"transition": [[0.6, 0.4], [0.4, 0.6]], "initial": "stationary", "length": 100},
    "box": {"box": {"p0": [0.1, 0.9], "p1": [0.1, 0.9]}, "initial": "any", "length": 100},
}
CHAIN_ROADS = ("approx", "groupdp", "gk16")
QUERY = '{"count": 0}'

#: The refusals this file accepts: each names the range that works.
REFUSAL = re.compile(
    r"^puffgm: error: (epsilon = \S+ is (below|above) what .* double precision.*(at least|up to about) \S+"
    r"|epsilon = \S+ is too small for this query: .* epsilon must be at least about \S+"
    r"|The optimal-noise program would need K = \d+ .* epsilon from about \S+ up fits.*"
    r"|The noise scale overflows .*use a smaller Lipschitz constant or a larger epsilon"
    r"|MQMApprox's noise scale at epsilon = \S+ is above the largest double .*; epsilon of at least about \S+ works\.)"
)
NEVER = ("please report", "math domain", "Traceback", "nan", "Infinity", "cannot be carried out")


def _roads(prior):
    out = {m: ["calibrate", prior, "--method", m] for m in ("exact", "groupdp", "approx", "gk16")}
    out.update({m: ["calibrate", prior, "--method", m, "--query", QUERY]
                for m in ("wasserstein", "optimal-laplace", "optimal-noise")})
    out["translate"] = ["translate", prior]
    return out


@pytest.fixture(scope="module")
def chain_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("chain") / "chain.json"
    path.write_text(json.dumps(CHAIN))
    return str(path)


@pytest.fixture(scope="module")
def chain_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chains")
    for name, spec in CHAINS.items():
        (folder / f"{name}.json").write_text(json.dumps(spec))
    return {name: str(folder / f"{name}.json") for name in CHAINS}


def _check(cli, argv, eps: str) -> str:
    flag = "--epsilon-puffer" if argv[0] == "translate" else "--epsilon"
    code, out, err = cli(*argv, flag, eps, "--json")
    text = out + err
    assert not any(bad in text for bad in NEVER), text
    if code != 0:
        assert code == 2 and out == "", (code, out, err)
        assert len(err.strip().splitlines()) == 1 and REFUSAL.match(err.strip()), err
        return "refused"
    res = json.loads(out)
    e = float(eps)
    if argv[0] == "translate":
        assert 0 < res["epsilon_dp"] <= res["epsilon_puffer"] * (1 + 1e-9) and res["epsilon_puffer"] == e, res
        return "answered"
    assert res["epsilon"] == e
    assert res["scale"] is None or (math.isfinite(res["scale"]) and res["scale"] > 0), res
    if res["scale"] is None and res.get("method") in CHAIN_ROADS + ("exact",):  # a Laplace method without a scale
        assert res["method"] == "gk16" and res["applicable"] is False and res["notes"], res  # says it does not apply
    if res.get("method") == "approx":  # never above group DP's T / epsilon (the trivial quilt), by one ulp at most
        assert res["sigma_max"] <= math.nextafter(res["groupdp_sigma"], math.inf), res
    if res.get("loss") is not None:
        assert res["loss"] <= e * (1 + 1e-9), (res["loss"], e)
    return "answered"


@pytest.mark.parametrize(("prior", "road"), [(p, r) for p in ("example:asia", "chain") for r in _roads(p)
                                             if p == "chain" or r not in ("groupdp", "approx", "gk16")])  # chains only
def test_every_epsilon_is_answered_or_refused_in_one_sentence(cli, chain_file, prior, road):
    p = chain_file if prior == "chain" else prior
    seen = {eps: _check(cli, _roads(p)[road], eps) for eps in EPSILONS}
    # what must be answered: ordinary epsilons everywhere, and any epsilon on the roads without an audit
    assert seen["1e-8"] == seen["100"] == "answered" or road == "optimal-noise"
    if road in ("exact", "groupdp", "approx", "gk16", "translate"):
        assert set(seen.values()) == {"answered"}, seen
    if road in ("wasserstein", "optimal-laplace"):
        assert seen["1e-300"] == seen["1e-20"] == "refused" and seen["1e300"] == "answered", seen


def test_small_epsilon_refusal_names_the_resolution():
    """Below RESOLUTION_FACTOR times the loss's rounding the query methods refuse, above it they answer."""
    kind = as_prior("example:asia")
    laws = kind.query_laws({"count": 0})
    floor = RESOLUTION_FACTOR * loss_resolution(laws)
    assert 1e-15 < floor < 1e-8
    with pytest.raises(NumericalError, match=r"^epsilon = 1e-20 is below .* at least \S+e-1\d\): .*MQM"):
        query_calibration(kind, {"count": 0}, epsilon=1e-20, method="optimal-laplace", baselines=False)
    cal = query_calibration(kind, {"count": 0}, epsilon=2 * floor, method="optimal-laplace", baselines=False)
    assert cal.loss <= 2 * floor * (1 - 0.5 / RESOLUTION_FACTOR)  # the rounding is kept as a margin
    assert math.isfinite(cal.scale)


def test_large_epsilon_optimal_noise_refusal_names_what_works():
    """The optimal-noise law's mass off zero, about exp(-1/b*), must stay representable; the bound quoted works."""
    kind = as_prior("example:asia")
    with pytest.raises(NumericalError, match=r"above what the optimal-noise law can represent") as info:
        query_calibration(kind, {"count": 0}, epsilon=1e6, method="optimal-noise", baselines=False)
    works = float(re.search(r"epsilon up to about (\S+) works", str(info.value)).group(1))
    cal = query_calibration(kind, {"count": 0}, epsilon=0.9 * works, method="optimal-noise", baselines=False)
    assert cal.loss <= 0.9 * works


@pytest.mark.parametrize(("spec", "road"), [(c, r) for c in CHAINS for r in CHAIN_ROADS])
def test_chain_methods_answer_every_epsilon(cli, chain_files, spec, road):
    """MQMApprox, group DP and GK16 on longer chains, a fixed start and a box: an answer at every epsilon."""
    seen = {eps: _check(cli, ["calibrate", chain_files[spec], "--method", road], eps) for eps in EPSILONS}
    assert set(seen.values()) == {"answered"}, seen


@pytest.mark.parametrize("initial", ["stationary", [1, 0]])
@pytest.mark.parametrize("T", [5, 100, 10**6])
def test_approx_api_is_sound_and_tends_to_the_smallest_quilt(initial, T):
    """puffgm.calibrate(method="approx"): finite, at most T / epsilon, at least MQMExact, and epsilon * sigma_max
    falls to the smallest quilt's size as epsilon grows (7 nodes here: a = b = 4 >= t0 = 2 log 5)."""
    cc = ChainPriorClass.from_matrices(CHAIN["transition"], initial, T)
    scaled = []
    for eps in map(float, EPSILONS):
        res = puffgm.calibrate(cc, epsilon=eps, method="approx")
        assert math.isfinite(res.sigma_max) and 0 < res.sigma_max <= math.nextafter(T / eps, math.inf)
        if T <= 100:
            assert res.sigma_max >= MQMExact(cc).calibrate(epsilon=eps).sigma_max
        scaled.append(eps * res.sigma_max)
        for m in ("groupdp", "gk16"):
            other = puffgm.calibrate(cc, epsilon=eps, method=m)
            assert (math.isfinite(other.sigma_max) and other.sigma_max > 0) or not other.applicable
    assert all(b <= a * (1 + 1e-12) for a, b in zip(scaled, scaled[1:], strict=False)), scaled  # epsilon * sigma never rises
    assert scaled[-1] == pytest.approx(min(T, 7), rel=1e-12) and scaled[-1] >= min(T, 7)


@pytest.mark.parametrize(("T", "eps"), [(5, 5e-324), (100, 1e-310), (10**6, 1e-306), (10**18, 1e-306)])
def test_approx_refusal_names_an_epsilon_that_works(T, eps):
    """Where sigma_max is above every double, one sentence quotes an epsilon from which it is finite."""
    m = MQMApprox(ChainPriorClass.from_matrices(CHAIN["transition"], "stationary", T))
    with pytest.raises(NumericalError, match=r"^MQMApprox's noise scale at epsilon = \S+ is above the largest double"
                                             r" .*; epsilon of at least about \S+ works\.$") as info:
        m.calibrate(epsilon=eps)
    quoted = re.search(r"at least about (\S+) works", str(info.value))
    assert quoted is not None
    works = float(quoted.group(1))
    assert eps < works <= 1.01 * T / 1.7976931348623157e308
    res = m.calibrate(epsilon=works)
    assert math.isfinite(res.sigma_max) and res.sigma_max > 0
