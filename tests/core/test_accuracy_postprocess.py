"""Accuracy statements and post-processing of releases (puffgm.core.accuracy, puffgm.core.postprocess).

Exact checks: the Laplace half-width is the quantile of |Lap(b)|, the half-width of a law on the
integers is the least t with P(|Z| <= t) >= 1 - alpha by enumeration, every projection equals a
brute-force solution of its quadratic program (enumeration of the active sets), and
post-processing never changes the charged record nor charges the accountant again.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from puffgm.core.accuracy import integer_half_width, laplace_half_width, laplace_rows
from puffgm.core.postprocess import (
    clamp,
    postprocess,
    project_box_total,
    project_simplex,
    relative_frequencies,
    round_values,
)
from puffgm.exceptions import NotApplicableError, ParameterError

ALPHAS = (0.5, 0.1, 0.05, 0.01, 1e-6)


# ------------------------------------------------------------------ accuracy


@pytest.mark.parametrize("scale", [1e-3, 0.5, 1.0, 8.0, 1234.5])
@pytest.mark.parametrize("alpha", ALPHAS)
def test_laplace_half_width_is_the_quantile_of_the_absolute_noise(scale, alpha):
    t = laplace_half_width(scale, alpha)
    assert t == pytest.approx(scale * math.log(1 / alpha), rel=1e-15)
    assert math.exp(-t / scale) == pytest.approx(alpha, rel=1e-13)  # P(|Lap(b)| > t) = exp(-t / b)


def test_laplace_half_width_edges_and_refusals():
    assert laplace_half_width(0.0, 0.05) == 0.0
    assert laplace_half_width(math.inf, 0.05) == math.inf
    for alpha in (0, 1, -0.1, 1.5, math.nan, "0.05", True):
        with pytest.raises(ParameterError, match="alpha"):
            laplace_half_width(1.0, alpha)
    with pytest.raises(ParameterError, match="scale"):
        laplace_half_width(-1.0, 0.05)


def _brute_half_width(p, r, alpha, reach=3000):
    """The least t with P(|Z| <= t) >= 1 - alpha, the tails written out far beyond any answer."""
    K = (len(p) - 1) // 2
    mass = {k: p[k + K] for k in range(-K, K + 1)}
    for j in range(1, reach):
        mass[K + j] = p[-1] * r ** j
        mass[-K - j] = p[0] * r ** j
    total = math.fsum(mass.values())
    for t in range(K + reach):
        inside = math.fsum(v for k, v in mass.items() if abs(k) <= t)
        if inside >= (1 - alpha) * total - 1e-15:
            return t
    raise AssertionError("reach too small")


@pytest.mark.parametrize("seed", range(6))
def test_integer_half_width_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    K = int(rng.integers(0, 4))
    p = rng.random(2 * K + 1) + 0.01
    r = float(rng.choice([0.0, 0.3, 0.8, 0.95]))
    for alpha in ALPHAS[:-1]:
        assert integer_half_width(p, r, alpha) == _brute_half_width(list(p), r, alpha)


def test_accuracy_of_the_optimal_noise_law_is_its_exact_quantile():
    import puffgm

    cal = puffgm.calibrate_query("example:asia", {"count": 0}, epsilon=1.0, method="optimal-noise")
    law, unit = cal.optimal_noise.law, cal.optimal_noise.unit
    (row,) = cal.accuracy(0.05)
    assert row.scale is None and row.statistic == "value"
    t = round(row.half_width * unit)
    assert t == _brute_half_width(list(law.probabilities), law.tail_ratio, 0.05)
    assert row.expected_abs_error == pytest.approx(cal.optimal_noise.expected_abs_error)


def test_every_calibration_states_its_scales(asia):
    import puffgm
    from puffgm.mechanisms.laplace import release_laplace

    cal = puffgm.calibrate(asia, epsilon=1.0, lipschitz=2.0, progress=False)
    (row,) = cal.accuracy(0.1)
    assert row.scale == cal.scale and row.half_width == pytest.approx(cal.scale * math.log(10), rel=1e-15)
    rel = release_laplace([1.0, 2.0, 3.0], cal, random_state=0)
    assert [a.statistic for a in rel.accuracy()] == ["[0]", "[1]", "[2]"]
    lo, hi = rel.accuracy()[1].interval(rel.value[1])
    assert hi - lo == pytest.approx(2 * cal.scale * math.log(20))
    query = puffgm.calibrate_query(asia, {"count": 0}, epsilon=1.0, method="optimal-laplace")
    assert query.accuracy()[0].scale == query.scale
    table = puffgm.calibrate_workload(asia, {"histogram": {"nodes": ["asia", "smoke"]}}, epsilon=1.0)
    assert [(a.statistic, a.scale) for a in table.accuracy()] == list(zip(table.names, table.scales, strict=True))


def test_blowfish_calibrations_and_releases_state_their_scale():
    from puffgm.blowfish import Domain, Policy, line_graph
    from puffgm.blowfish.calibration import BlowfishCalibration
    from puffgm.blowfish.mechanisms import laplace_mechanism

    cal = BlowfishCalibration(Policy(line_graph(Domain.ordered(5))), epsilon=1.0, query="cumulative")
    (row,) = cal.accuracy(0.05)
    assert row.scale == cal.scale == 1.0 and row.half_width == pytest.approx(math.log(20), rel=1e-15)
    rel = laplace_mechanism([1.0, 2.0], Policy(line_graph(Domain.ordered(5))), epsilon=1.0, sensitivity=2.0,
                            random_state=0)
    assert [a.scale for a in rel.accuracy()] == [rel.scale, rel.scale]


def test_releases_without_additive_noise_refuse_to_state_a_half_width():
    from puffgm import influence_curve
    from puffgm.mechanisms.pufferfish import pufferfish_exponential, pufferfish_laplace

    curve = influence_curve("example:cancer")
    lap = pufferfish_laplace(1.0, curve, epsilon=2.0, random_state=0)
    assert lap.accuracy()[0].scale == pytest.approx(lap.details["scale"])
    pick = pufferfish_exponential(np.array([1.0, 2.0, 0.5]), curve, epsilon=2.0, sensitivity=1.0, random_state=0)
    with pytest.raises(NotApplicableError, match="half-width"):
        pick.accuracy()


def test_multiplicative_rows_give_a_multiplicative_interval():
    (row,) = laplace_rows(("value",), (0.5,), 0.05, multiplicative=True)
    lo, hi = row.interval(10.0)
    assert lo == pytest.approx(10 * math.exp(-row.half_width)) and hi == pytest.approx(10 * math.exp(row.half_width))


# ------------------------------------------------------------------ post-processing: the operations


def test_clamp_and_round_semantics():
    assert clamp([-63.0, 4.5, 25.0], 0, 20).tolist() == [0.0, 4.5, 20.0]
    assert clamp([-1.0, 5.0], [0, 6], [1, 7]).tolist() == [0.0, 6.0]
    assert clamp([3.0], None, 2).tolist() == [2.0]
    assert round_values([0.5, 1.5, 2.5, -0.5, 2.49]).tolist() == [0.0, 2.0, 2.0, -0.0, 2.0]  # halves to even
    assert round_values([3.4, 3.3, 3.3], total=10).tolist() == [4.0, 3.0, 3.0]
    assert round_values([0.5, 0.5], total=1).tolist() == [1.0, 0.0]  # ties by position
    with pytest.raises(ParameterError, match="lower <= upper"):
        clamp([1.0], 2, 1)
    with pytest.raises(ParameterError, match="not to the total"):
        round_values([1.0, 1.0], total=5)


def _brute_box_total(v, total, lo, hi):
    """argmin ||x - v||^2 on {lo <= x <= hi, sum x = total}: enumerate which coordinates sit at a bound."""
    n, best = len(v), None
    for states in itertools.product((0, 1, 2), repeat=n):  # 0 at lo, 1 free, 2 at hi
        x = np.array([lo[i] if s == 0 else hi[i] if s == 2 else np.nan for i, s in enumerate(states)])
        free = [i for i, s in enumerate(states) if s == 1]
        if any(not math.isfinite(x[i]) for i in range(n) if i not in free):
            continue
        fixed = sum(x[i] for i in range(n) if i not in free)
        if free:
            lam = (sum(v[i] for i in free) - (total - fixed)) / len(free)
            for i in free:
                x[i] = v[i] - lam
        elif abs(fixed - total) > 1e-9:
            continue
        if np.all(x >= lo - 1e-9) and np.all(x <= hi + 1e-9) and abs(x.sum() - total) < 1e-9:
            d = float(((x - v) ** 2).sum())
            if best is None or d < best[0] - 1e-12:
                best = (d, x)
    return best[1]


@pytest.mark.parametrize("seed", range(25))
def test_simplex_projection_solves_its_quadratic_program(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    v = rng.normal(0, 2, n)
    total = float(rng.choice([1.0, 3.0, 10.0]))
    x = project_simplex(v, total)
    expected = _brute_box_total(v, total, np.zeros(n), np.full(n, np.inf))
    np.testing.assert_allclose(x, expected, atol=1e-12)
    assert np.all(x >= 0) and x.sum() == pytest.approx(total, abs=1e-12)


@pytest.mark.parametrize("seed", range(25))
def test_box_total_projection_solves_its_quadratic_program(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 5))
    lo = rng.integers(-3, 2, n).astype(float)
    hi = lo + rng.integers(0, 6, n)
    v = rng.normal(0, 4, n)
    total = float(rng.uniform(lo.sum(), hi.sum()))
    np.testing.assert_allclose(project_box_total(v, total, lo, hi), _brute_box_total(v, total, lo, hi), atol=1e-12)


def test_projections_refuse_what_cannot_be_met():
    with pytest.raises(ParameterError, match="sum to the total"):
        project_box_total([1.0, 2.0], 10.0, 0, 3)
    with pytest.raises(ParameterError, match="> 0"):
        project_simplex([1.0], 0.0)


def test_relative_frequencies():
    np.testing.assert_allclose(relative_frequencies([6.0, -1.0, 2.0], total=10), [0.7, 0.0, 0.3], atol=1e-15)
    f = relative_frequencies([6.0, -1.0, 2.0])  # total estimated by the positive counts, 8
    np.testing.assert_allclose(f, project_simplex(np.array([6.0, -1.0, 2.0]) / 8), atol=1e-15)
    assert f.sum() == pytest.approx(1.0) and np.all(f >= 0)


# ------------------------------------------------------------------ post-processing a release


def test_postprocess_returns_a_new_value_and_leaves_the_charged_record_alone(asia):
    import puffgm
    from puffgm.accounting import PrivacyAccountant
    from puffgm.mechanisms.workload import release_workload

    table = puffgm.calibrate_workload(asia, {"histogram": {"nodes": ["asia", "smoke", "either"]}}, epsilon=1.0)
    acc = PrivacyAccountant()
    rel = release_workload([1, 2], table, random_state=3, accountant=acc)
    before, spent = rel.to_dict(), acc.report().total
    post = rel.postprocess(clamp=True, total=3, round=True)
    assert post.release is rel and rel.to_dict() == before and acc.report().total == spent
    assert sum(post.value) == 3 and all(0 <= v <= 3 and v == int(v) for v in post.value)
    freq = rel.postprocess(simplex=True, total=3)
    assert sum(freq.value) == pytest.approx(1.0) and min(freq.value) >= 0
    assert post.epsilon == rel.epsilon and "Theorem 5.1" in post.theorem
    json.dumps(post.to_dict(), allow_nan=False)


def test_postprocess_refusals(asia):
    import puffgm
    from puffgm.mechanisms.laplace import release_laplace

    rel = release_laplace(3.0, puffgm.calibrate(asia, epsilon=1.0, progress=False), random_state=0)
    with pytest.raises(ParameterError, match="range"):
        rel.postprocess(clamp=True)
    with pytest.raises(ParameterError, match="Nothing"):
        rel.postprocess()
    with pytest.raises(ParameterError, match="rounded"):
        rel.postprocess(simplex=True, round=True)
    assert rel.postprocess(clamp=(0, 8), round=True).value in set(range(9))


# ------------------------------------------------------------------ the command line


def test_cli_release_states_accuracy_and_post_processes(cli, tmp_path):
    data = tmp_path / "asia.csv"
    data.write_text("asia,tub,smoke,lung,bronc,either,xray,dysp\nyes,no,yes,no,yes,no,no,yes\n")
    code, out, err = cli("release", "example:asia", "--data", data, "--query", '{"count": "yes"}',
                         "--method", "optimal-laplace", "--epsilon", "1", "--seed", "1", "--alpha", "0.1",
                         "--clamp", "--round", "--json")
    assert code == 0, err
    d = json.loads(out)
    (row,) = d["accuracy"]
    scale = d["release"]["calibration"]["scale"]
    assert row["scale"] == scale and row["half_width"] == pytest.approx(scale * math.log(10), rel=1e-15)
    assert d["postprocessed"]["value"] == min(max(round(d["value"]), 0), 8)
    code, out, err = cli("release", "example:asia", "--answer", "3", "--epsilon", "1", "--seed", "1", "--clamp")
    assert code == 2 and "--clamp LO,HI" in err and out == ""


def test_cli_calibrate_json_has_the_accuracy_key(cli):
    code, out, _ = cli("calibrate", "example:asia", "--epsilon", "1", "--json", "--quiet", "--alpha", "0.01")
    d = json.loads(out)
    assert d["accuracy"][0]["half_width"] == pytest.approx(d["scale"] * math.log(100), rel=1e-15)
    code, _, err = cli("calibrate", "example:asia", "--epsilon", "1", "--alpha", "1")
    assert code == 2 and "alpha" in err


# ------------------------------------------------------------------ the guarantee survives post-processing


def _laplace_cdf(x, b):
    x = np.asarray(x, dtype=float)
    return np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0) / b), 1 - 0.5 * np.exp(-np.maximum(x, 0) / b))


def test_exact_audit_of_a_clamped_and_rounded_release(asia):
    """The output law of round(clamp(F + Lap(b))) given each secret, enumerated exactly: its loss is at most
    the release's exact loss (Kifer and Machanavajjhala, Theorem 5.1), and the post-processed values are
    the ones ``postprocess`` computes."""
    import puffgm
    from puffgm.api import as_prior

    kind = as_prior(asia)
    cal = puffgm.calibrate_query(kind, {"count": 0}, epsilon=1.0, method="optimal-laplace", baselines=False)
    laws = kind.query_laws({"count": 0})
    rows, pairs, _ = laws.stacked()
    q = laws.query
    assert q.unit == 1 and q.offset == 0  # a count: grid value g is the answer
    lo, hi, b = 0.0, float(q.total), cal.scale
    grid = np.arange(q.total + 1)
    outs = np.arange(q.total + 1)  # the post-processed outputs: integers of the range
    # preimage of v under round-half-even o clamp: [v - 1/2, v + 1/2) inside the range, the ends take the tails
    left = np.where(outs == lo, -np.inf, outs - 0.5)
    right = np.where(outs == hi, np.inf, outs + 0.5)
    mass = _laplace_cdf(right[None, :] - grid[:, None], b) - _laplace_cdf(left[None, :] - grid[:, None], b)
    out_law = np.exp(rows) @ mass  # P(output = v | secret), one row per conditional law
    assert np.allclose(out_law.sum(axis=1), 1.0, atol=1e-12)
    loss = float(np.max(np.abs(np.log(out_law[pairs[:, 0]]) - np.log(out_law[pairs[:, 1]]))))
    assert 0 < loss <= cal.loss + 1e-12 <= 1.0 + 1e-9
    # the function audited is the one postprocess applies (ties at the half-integers have probability 0)
    for y in (-3.2, 0.49, 0.5, 1.5, 2.5000001, 7.6, 11.0):
        value = postprocess(_Released(y, cal), clamp=True, round=True).value
        assert value == float(np.clip(np.rint(y), lo, hi))
        v = int(value)
        assert left[v] <= y <= right[v]


class _Released:
    """A stand-in for a release of ``value`` under ``calibration`` (postprocess reads these two)."""

    def __init__(self, value, calibration):
        self.value, self.calibration = value, calibration


def test_continuous_releases_state_additive_and_multiplicative_accuracy():
    from puffgm.framework.continuous import release_relative_error, release_sum_absolute_error

    add = release_sum_absolute_error([1.0, 2.0, 3.0], 0.5, epsilon=1.0, random_state=0)
    (row,) = add.accuracy(0.1)
    assert not row.multiplicative and row.half_width == pytest.approx(add.scale * math.log(10), rel=1e-15)
    prod = release_relative_error([1.0, 2.0, 3.0], 0.9, epsilon=1.0, statistic="product", random_state=0)
    (row,) = prod.accuracy(0.1)
    lo, hi = row.interval(prod.value)
    assert row.multiplicative and hi / prod.value == pytest.approx(math.exp(prod.scale * math.log(10)))
    assert lo * hi == pytest.approx(prod.value ** 2)
