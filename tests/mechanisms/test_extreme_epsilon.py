"""Every positive finite epsilon gets a sound answer or one clear sentence, on every road.

For epsilons from 1e-300 to 1e300 and every method (MQM exact, group DP, the query-specific
methods, translation), the CLI either prints a result whose reported loss is at most epsilon (to
1e-9 relative) and whose scale is a finite positive number, or refuses with exit code 2 and one
line on stderr that says what is out of range and what range works.  Never a traceback, a NaN,
"math domain error" or "please report".
"""

from __future__ import annotations

import json
import math
import re

import pytest

from puffgm.api import as_prior
from puffgm.api.query import query_calibration
from puffgm.exceptions import NumericalError
from puffgm.mechanisms.query import RESOLUTION_FACTOR, loss_resolution

EPSILONS = ("1e-300", "1e-20", "1e-8", "100", "1000", "1e6", "1e300")
CHAIN = {"transition": [[0.9, 0.1], [0.4, 0.6]], "initial": "stationary", "length": 5}
QUERY = '{"count": 0}'

#: The refusals this file accepts: each names the range that works.
REFUSAL = re.compile(
    r"^puffgm: error: (epsilon = \S+ is (below|above) what .* double precision.*(at least|up to about) \S+"
    r"|epsilon = \S+ is too small for this query: .* epsilon must be at least about \S+"
    r"|The optimal-noise program would need K = \d+ .* epsilon from about \S+ up fits.*"
    r"|The noise scale overflows .*use a smaller Lipschitz constant or a larger epsilon)"
)
NEVER = ("please report", "math domain", "Traceback", "nan", "cannot be carried out")


def _roads(prior):
    out = {m: ["calibrate", prior, "--method", m] for m in ("exact", "groupdp")}
    out.update({m: ["calibrate", prior, "--method", m, "--query", QUERY]
                for m in ("wasserstein", "optimal-laplace", "optimal-noise")})
    out["translate"] = ["translate", prior]
    return out


@pytest.fixture(scope="module")
def chain_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("chain") / "chain.json"
    path.write_text(json.dumps(CHAIN))
    return str(path)


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
    if res.get("loss") is not None:
        assert res["loss"] <= e * (1 + 1e-9), (res["loss"], e)
    return "answered"


@pytest.mark.parametrize(("prior", "road"), [(p, r) for p in ("example:asia", "chain") for r in _roads(p)
                                             if (p, r) != ("example:asia", "groupdp")])  # group DP: chains only
def test_every_epsilon_is_answered_or_refused_in_one_sentence(cli, chain_file, prior, road):
    p = chain_file if prior == "chain" else prior
    seen = {eps: _check(cli, _roads(p)[road], eps) for eps in EPSILONS}
    # what must be answered: ordinary epsilons everywhere, and any epsilon on the roads without an audit
    assert seen["1e-8"] == seen["100"] == "answered" or road == "optimal-noise"
    if road in ("exact", "groupdp", "translate"):
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
