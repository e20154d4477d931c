"""Every chain road answers or refuses within its budget, for every length up to 10**18.

The refusals are one sentence naming the projected time (or memory) and the limit; the
memory is bounded before the work starts (checked in a subprocess whose address space is
capped at 2 GiB); and the answers on moderate lengths are today's.
"""

import math
import subprocess
import sys
import textwrap
import time
from fractions import Fraction

import numpy as np
import pytest

from puffgm.api import as_prior
from puffgm.api.query import query_calibration
from puffgm.chains import ChainParameterBox, ChainPriorClass, MQMExact
from puffgm.chains.baselines import GK16_SOLVE_LIMIT, _gk16_middle_row, gk16, gk16_gamma, group_dp
from puffgm.chains.budget import MAX_LENGTH
from puffgm.chains.exact import stationary_error
from puffgm.chains.kind import chain_kind
from puffgm.exceptions import InferenceLimitError, PriorError, PuffgmError, TimeLimitError

P = [[0.9, 0.1], [0.4, 0.6]]
SIGMA_FIXED = 12.934051086186495  # MQMExact of P from X1 = 0 at epsilon 1, every length >= 100 (doc example)
BUDGET, MARGIN = 1.5, 4.0  # seconds: the limit given, and the slack allowed for the machine


def _one_sentence(msg: str) -> None:
    assert "\n" not in msg and msg.endswith(".") and msg.count(". ") == 0, msg


def _within(fn):
    """(result or exception, seconds)."""
    start = time.monotonic()
    try:
        out = fn()
    except PuffgmError as exc:
        out = exc
    return out, time.monotonic() - start


@pytest.mark.parametrize("T", [10**12, 10**15, 10**18])
def test_a_fixed_start_answers_exactly_at_any_length(T):
    cc = ChainPriorClass.from_matrices(P, [1, 0], T)
    res, secs = _within(lambda: MQMExact(cc, time_limit=BUDGET).calibrate(epsilon=1.0))
    assert not isinstance(res, Exception), res
    assert secs < BUDGET + MARGIN
    assert res.sigma_max == pytest.approx(SIGMA_FIXED, rel=1e-12)
    assert res.details["exact_optimum"] and res.details["exact"]
    assert res.worst.n_remote > 0 and len(res.worst.remote) == 0  # the remote set is described, not built


def test_the_stationary_error_bound_holds_and_is_infinite_without_a_positive_power():
    Pm = np.array(P)
    pi = np.array([0.8, 0.2]) * (1 + np.array([3e-16, -5e-16]))  # a computed law a few ulps off the exact one
    exact = [Fraction(4, 5), Fraction(1, 5)]
    r = [math.log(Fraction(float(pi[j])) / exact[j]) for j in range(2)]
    assert stationary_error(Pm, pi) >= max(r) - min(r)
    assert stationary_error(Pm, pi) < 1e-13
    assert stationary_error(np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([0.5, 0.5])) == math.inf


def _roads(T):
    fixed = ChainPriorClass.from_matrices(P, [1, 0], T)
    return {
        "fixed": lambda: MQMExact(fixed, time_limit=BUDGET).calibrate(epsilon=1.0),
        "stationary": lambda: MQMExact(ChainPriorClass.from_matrices(P, "stationary", T),
                                       time_limit=BUDGET).calibrate(epsilon=1.0),
        "any": lambda: MQMExact(ChainPriorClass.from_matrices(P, "any", T), time_limit=BUDGET).calibrate(epsilon=1.0),
        "family": lambda: MQMExact(ChainPriorClass.from_family([P, [[0.5, 0.5], [0.3, 0.7]]], [[1, 0], [0.2, 0.8]], T),
                                   time_limit=BUDGET).calibrate(epsilon=1.0),
        "mixing off": lambda: MQMExact(fixed, mixing=False, time_limit=BUDGET).calibrate(epsilon=1.0),
        "per node": lambda: MQMExact(fixed, per_node=True, time_limit=BUDGET).calibrate(epsilon=1.0),
        "periodic": lambda: MQMExact(ChainPriorClass.from_matrices([[0, 1], [1, 0]], "any", T),
                                     time_limit=BUDGET).calibrate(epsilon=1.0),
        "slow": lambda: MQMExact(ChainPriorClass.from_matrices([[0.999, 0.001], [0.001, 0.999]], [1, 0], T),
                                 time_limit=BUDGET).calibrate(epsilon=0.1),
        "approx": lambda: chain_kind(fixed).calibrate(epsilon=1.0, method="approx", time_limit=BUDGET),
        "groupdp": lambda: chain_kind(fixed).calibrate(epsilon=1.0, method="groupdp", time_limit=BUDGET),
        "gk16": lambda: chain_kind(ChainPriorClass.from_matrices([[0.55, 0.45], [0.45, 0.55]], [1, 0], T)).calibrate(
            epsilon=1.0, method="gk16", time_limit=BUDGET),
        "box": lambda: chain_kind(ChainParameterBox((0.3, 0.7), (0.3, 0.7), initial="any", length=T)).calibrate(
            epsilon=1.0, method="exact", time_limit=BUDGET),
        "curve": lambda: chain_kind(fixed).influence_curve(max_b=5),
        "wasserstein": lambda: query_calibration(chain_kind(fixed), {"count": 0}, epsilon=1.0, time_limit=BUDGET),
        "optimal-laplace": lambda: query_calibration(chain_kind(fixed), {"count": 0}, epsilon=1.0,
                                                     method="optimal-laplace", time_limit=BUDGET),
        "optimal-noise": lambda: query_calibration(chain_kind(fixed), {"count": 0}, epsilon=1.0,
                                                   method="optimal-noise", time_limit=BUDGET),
    }


@pytest.mark.parametrize("road", sorted(_roads(10).keys()))
def test_every_road_answers_or_refuses_within_its_budget_at_length_1e18(road):
    out, secs = _within(_roads(10**18)[road])
    assert secs < BUDGET + MARGIN, (road, secs)
    if isinstance(out, Exception):
        assert isinstance(out, (TimeLimitError, InferenceLimitError, PuffgmError))
        _one_sentence(str(out))
        if isinstance(out, TimeLimitError):
            assert "time limit of 1.5 s" in str(out) and " s" in str(out)
    elif hasattr(out, "sigma_max"):
        assert out.sigma_max > 0 and not math.isnan(out.sigma_max)


@pytest.mark.parametrize("T", [10**5, 10**6])
@pytest.mark.parametrize("method", ["wasserstein", "optimal-laplace", "optimal-noise"])
def test_query_methods_on_long_chains_refuse_within_the_budget(T, method):
    kind = chain_kind(ChainPriorClass.from_matrices(P, [1, 0], T))
    out, secs = _within(lambda: query_calibration(kind, {"count": 0}, epsilon=1.0, method=method, time_limit=BUDGET))
    assert secs < BUDGET + MARGIN
    assert isinstance(out, TimeLimitError), out
    _one_sentence(str(out))
    assert "would take about" in str(out) and "over the time limit of 1.5 s" in str(out)


def test_lengths_above_1e18_are_refused_in_one_sentence():
    cc = ChainPriorClass.from_matrices(P, [1, 0], 10**400)
    for fn in (lambda: MQMExact(cc).calibrate(epsilon=1.0), lambda: group_dp(cc, epsilon=1.0),
               lambda: gk16(cc, epsilon=1.0), lambda: chain_kind(cc).calibrate(epsilon=1.0, method="approx")):
        with pytest.raises(PriorError, match=r"401 digits, above 10\*\*18") as err:
            fn()
        _one_sentence(str(err.value))
    assert MAX_LENGTH == 10**18


def test_gk16_closed_form_agrees_with_the_tridiagonal_solve_and_bounds_it():
    g = gk16_gamma([[0.55, 0.45], [0.45, 0.55]])
    for T in (3, 10, 11, 1000, GK16_SOLVE_LIMIT):
        solved = gk16(ChainPriorClass.from_matrices([[0.55, 0.45], [0.45, 0.55]], [1, 0], T), epsilon=1.0).sigma_max
        closed = 2.0 * _gk16_middle_row(g, T)
        assert solved <= closed <= solved * (1 + 1e-13)


_MEMORY_SCRIPT = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
    from puffgm.api.query import query_calibration
    from puffgm.chains import ChainPriorClass, MQMExact
    from puffgm.chains.kind import chain_kind
    from puffgm.exceptions import InferenceLimitError
    P = [[0.9, 0.1], [0.4, 0.6]]
    cc = ChainPriorClass.from_matrices(P, [1, 0], 10**18)
    runs = [lambda: query_calibration(chain_kind(cc), {"count": 0}, epsilon=1.0),
            lambda: MQMExact(cc, per_node=True).calibrate(epsilon=1.0),
            lambda: MQMExact(cc, mixing=False).calibrate(epsilon=1.0),
            lambda: MQMExact(ChainPriorClass.from_matrices([[0.999, 0.001], [0.001, 0.999]], [1, 0], 10**18)
                             ).calibrate(epsilon=0.1)]
    for run in runs:  # no time limit: the memory projections refuse before allocating
        try:
            run()
            print("answered")
        except InferenceLimitError as exc:
            print("refused", str(exc).count("GiB"))
""")


def test_without_a_time_limit_memory_is_refused_before_it_is_allocated():
    proc = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[:4] == ["refused 2"] * 4


@pytest.mark.parametrize("q,T", [([1, 0], 1000), ([0.2, 0.8], 10**9), ("any", 10**6)])
def test_moderate_lengths_keep_their_answers(q, T):
    # values of the release before the time budgets (commit 267af29), bit for bit
    want = {(1000, "[1, 0]"): SIGMA_FIXED}
    res = MQMExact(ChainPriorClass.from_matrices(P, q, T)).calibrate(epsilon=1.0)
    if (T, str(q)) in want:
        assert res.sigma_max == want[(T, str(q))]
    assert res.sigma_max == MQMExact(ChainPriorClass.from_matrices(P, q, T), time_limit=60).calibrate(
        epsilon=1.0).sigma_max


def test_query_methods_keep_their_answers_on_moderate_lengths(tmp_path):
    spec = tmp_path / "c.json"
    spec.write_text('{"transition": [[0.9, 0.1], [0.4, 0.6]], "initial": [1, 0], "length": 60}')
    a = query_calibration(as_prior(str(spec)), {"count": 0}, epsilon=1.0, method="optimal-laplace")
    b = query_calibration(as_prior(str(spec)), {"count": 0}, epsilon=1.0, method="optimal-laplace", time_limit=60)
    assert a.scale == b.scale and a.wasserstein == b.wasserstein
