"""Optimal additive noise for one query: the program, its exact audit, the release.

The checks are independent of puffgm.mechanisms.optimal_noise's own code: conditional laws by
enumerating the joint (puffgm.framework.Instantiation), a second linear program written output by
output in plain probability space (tails summed term by term, HiGHS's interior-point method), an
audit by plain convolution over a window far wider than the program's, and a grid search over a
two-parameter noise family.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from _nets import random_network
from scipy.optimize import linprog

from puffgm.core.laws import QueryLaws
from puffgm.core.query import SumQuery
from puffgm.exceptions import ParameterError
from puffgm.framework import Instantiation
from puffgm.framework.audit import grouped_law
from puffgm.mechanisms.optimal_noise import (
    AUDIT_GUARD,
    SAMPLER,
    NoiseLaw,
    OptimalNoise,
    OptimalNoiseOptions,
    discrete_laplace,
    noise_loss_of,
    noise_losses,
    optimal_noise_of,
    release_optimal_noise,
    sample_noise,
    tail_losses,
)
from puffgm.mechanisms.query import laplace_losses
from puffgm.networks.priors import PriorClass, load_prior_class
from puffgm.networks.query_laws import group_sensitivity, network_query_laws
from puffgm.networks.secrets import SecretSpec

EPS = 1.0


def query_laws(pc, query) -> QueryLaws:
    q = SumQuery(query).bind(pc.nodes, pc.states)
    return QueryLaws(query=q, laws=tuple(network_query_laws(pc, q, SecretSpec())), n_priors=len(pc.priors),
                     group_sensitivity=group_sensitivity(pc, q), prior_name="test")


def two_prior_class(seed, n=3, max_card=3):
    rng = np.random.default_rng(seed)
    first, dag = random_network(rng, n=n, max_card=max_card, p_edge=0.7, zero_prob=0.1, name="a")
    second, _ = random_network(rng, n=n, dag=dag, zero_prob=0.1, name="b")
    return PriorClass([first, second])


def weighted_query(pc):
    """Scores 0, 1, 2, ... by state index on every node (a weighted sum)."""
    return {"scores": {v: list(range(len(pc.states[v]))) for v in pc.nodes}}


def enumerated_pair_laws(pc, laws: QueryLaws):
    """The laws of G given each secret of each audited pair, by enumerating the joint."""
    q = laws.query
    inst = Instantiation.bayesian_network_default(pc)
    def grid_sum(x):
        return sum(q.scores[k][pc.states[v].index(x[v])] for k, v in enumerate(q.nodes))
    g = inst.evaluate(grid_sum)
    out = []
    for t, a, b in inst.active():
        pair = []
        for s in (a, b):
            vals, logw = grouped_law(inst.conditional(t, s.name), g)
            p = np.zeros(q.total + 1)
            p[vals.astype(int)] = np.exp(logw)
            pair.append(p)
        out.append(tuple(pair))
    return out


def pair_laws_of(laws: QueryLaws):
    rows, pairs, _ = laws.stacked()
    p = np.exp(rows)
    assert np.all((p > 1e-290) | (rows == -np.inf)), "plain-space checks need no underflow"
    return [(p[a], p[b]) for a, b in pairs]


def plain_noise(law: NoiseLaw, extra: int):
    """P(Z = k) for k = -K-extra .. K+extra, tails written out term by term."""
    z, r = law.probabilities, law.tail_ratio
    left = [z[0] * r ** j for j in range(extra, 0, -1)]
    right = [z[-1] * r ** j for j in range(1, extra + 1)]
    return np.concatenate([left, z, right]) / law.total()


def plain_loss(pair_laws, law: NoiseLaw, extra: int = 120):
    """Loss of G + Z by plain convolution; and the log ratios at the far ends of the exact outputs."""
    n = len(pair_laws[0][0])
    z = plain_noise(law, extra)
    K = law.half_width
    lo, hi = -K - extra + n - 1, K + extra                   # outputs whose every term is in the window
    sl = slice(lo - (-K - extra), hi - (-K - extra) + 1)
    best, ends = 0.0, []
    for pa, pb in pair_laws:
        qa, qb = np.convolve(pa, z)[sl], np.convolve(pb, z)[sl]
        both = (qa > 0) & (qb > 0)
        if np.any((qa > 0) != (qb > 0)):
            return math.inf, ends
        d = np.abs(np.log(qa[both]) - np.log(qb[both]))
        best = max(best, float(d.max()))
        ends.append((math.log(qa[-1] / qb[-1]), math.log(qa[-2] / qb[-2]), math.log(qa[0] / qb[0]),
                     math.log(qa[1] / qb[1])))
    return best, ends


def independent_program(pair_laws, K, r, eps, extra=40, objective="abs"):
    """The program written output by output in plain space, tails summed to 4000 terms; HiGHS IPM."""
    n = len(pair_laws[0][0])
    J = np.arange(0, 4000)
    tail_norm = float(np.sum(r ** J))
    tail_cost = float(np.sum((K + J) ** (1 if objective == "abs" else 2) * r ** J))
    cost = np.abs(np.arange(-K, K + 1)).astype(float) ** (1 if objective == "abs" else 2)
    cost[0] = cost[-1] = tail_cost
    norm = np.ones(2 * K + 1)
    norm[0] = norm[-1] = tail_norm
    rows = []
    for pa, pb in pair_laws:
        for p, q in ((pa, pb), (pb, pa)):
            for y in range(-K - n + 1 - extra, K + n + extra):
                row = np.zeros(2 * K + 1)
                for g in range(n):
                    v = y - g
                    i = min(max(v, -K), K) + K
                    row[i] += (p[g] - math.exp(eps) * q[g]) * r ** max(0, abs(v) - K)
                rows.append(row)
    res = linprog(cost, A_ub=np.array(rows), b_ub=np.zeros(len(rows)), A_eq=norm[None, :], b_eq=[1.0],
                  bounds=(0, None), method="highs-ipm")
    assert res.status == 0, res.message
    return res.fun


# ------------------------------------------------------------------ the program against brute force


@pytest.mark.parametrize("seed", [3, 11])
def test_program_matches_an_independent_formulation_on_tiny_networks(seed):
    pc = two_prior_class(seed, n=3)
    laws = query_laws(pc, weighted_query(pc))
    res = optimal_noise_of(laws, epsilon=EPS)
    assert res.lp_value is not None and not res.status.startswith("fallback")
    pair_laws = enumerated_pair_laws(pc, laws)
    ref = independent_program(pair_laws, res.half_width, res.tail_ratio, res.epsilon_lp)
    assert res.lp_value == pytest.approx(ref, rel=1e-6)
    assert res.expected_abs_error == pytest.approx(ref, rel=1e-6)
    # the search over r: no other tail ratio in the searched range does better than what was found
    r_min = min(r for r, _ in res.search)
    for f in (0.8, 0.6):
        other = independent_program(pair_laws, res.half_width, r_min ** f, res.epsilon_lp)
        assert res.lp_value <= other * (1 + 1e-4)


def test_program_beats_every_feasible_member_of_a_two_parameter_family():
    """Grid search over P(Z = k) proportional to w [k = 0] + (1 - w) rho^|k|, each audited by convolution."""
    pc = two_prior_class(5, n=3, max_card=2)
    laws = query_laws(pc, {"count": 0})
    res = optimal_noise_of(laws, epsilon=EPS)
    pair_laws = enumerated_pair_laws(pc, laws)
    K = res.half_width
    best = math.inf
    for rho in np.linspace(0.3, 0.95, 27):
        for w in np.linspace(0.0, 0.9, 19):
            z = (1 - w) * discrete_laplace(K, rho).probabilities
            z[K] += w                                                        # a point mass at 0
            law = NoiseLaw(z, rho)
            if plain_loss(pair_laws, law, extra=60)[0] <= EPS:
                best = min(best, law.moment(1))
    assert math.isfinite(best)
    assert res.expected_abs_error <= best * (1 + 1e-6)


def test_tail_condition_is_the_loss_at_far_outputs_and_decides_r():
    pc = two_prior_class(7, n=3)
    laws = query_laws(pc, weighted_query(pc))
    rows, pairs, _ = laws.stacked()
    res = optimal_noise_of(laws, epsilon=EPS)
    r = res.tail_ratio
    pair_laws = enumerated_pair_laws(pc, laws)
    loss, ends = plain_loss(pair_laws, res.law, extra=150)
    # beyond the window the log ratio is constant: the last two exact outputs agree, the first two too
    for last, before, first, second in ends:
        assert last == pytest.approx(before, abs=1e-9) and first == pytest.approx(second, abs=1e-9)
    far = max(max(abs(e[0]), abs(e[2])) for e in ends)
    assert float(tail_losses(rows, pairs, r).max()) == pytest.approx(far, abs=1e-9)
    assert float(tail_losses(rows, pairs, r).max()) <= EPS
    # it is the limit w -> +-inf of the Laplace loss at scale -1/log r (part of that loss)
    lap, _ = laplace_losses(rows, pairs, -1.0 / math.log(r))
    assert np.all(tail_losses(rows, pairs, r) <= lap + 1e-12)
    # a lighter tail than the smallest r searched breaks the condition; the audit sees it at +-inf
    r_min = min(x for x, _ in res.search)
    lighter = r_min ** 1.3
    limit = float(tail_losses(rows, pairs, lighter).max())
    assert limit > EPS
    loss_bad, witness, _ = noise_loss_of(laws, discrete_laplace(res.half_width, lighter))
    assert loss_bad >= limit - 1e-12 and loss_bad > EPS


# ------------------------------------------------------------------ the audit


@pytest.mark.parametrize("seed", range(6))
def test_audit_never_exceeds_epsilon_on_random_networks_with_two_priors(seed):
    pc = two_prior_class(100 + seed, n=4)
    laws = query_laws(pc, weighted_query(pc) if seed % 2 else {"count": 0})
    eps = [1.0, 0.5, 2.0][seed % 3]
    res = optimal_noise_of(laws, epsilon=eps)
    assert res.loss <= eps - AUDIT_GUARD
    # an independent audit: enumerated laws, plain convolution over a far wider window
    check, _ = plain_loss(enumerated_pair_laws(pc, laws), res.law, extra=150)
    assert check == pytest.approx(res.loss, abs=1e-9)
    assert check <= eps
    # never more expected error than the optimal Laplace scale, nor than discrete Laplace at it
    b = res.laplace_scale
    assert res.expected_abs_error < b
    assert res.expected_abs_error <= (1 / math.sinh(1 / b)) * (1 + 1e-5)


def test_noise_losses_match_plain_convolution_for_an_arbitrary_law():
    pc = two_prior_class(21, n=3)
    laws = query_laws(pc, weighted_query(pc))
    rows, pairs, _ = laws.stacked()
    rng = np.random.default_rng(0)
    law = NoiseLaw(rng.random(9) * (rng.random(9) > 0.2) + 1e-3, 0.6)
    loss, where = noise_losses(rows, pairs, law)
    check, _ = plain_loss(pair_laws_of(laws), law, extra=150)
    assert float(loss.max()) == pytest.approx(check, abs=1e-9)
    assert np.all(loss >= 0)


def test_noise_law_moments_match_term_by_term_sums():
    law = NoiseLaw(np.array([0.05, 0.1, 0.4, 0.2, 0.08]), 0.7)
    extra = 400
    z = plain_noise(law, extra)
    k = np.arange(-2 - extra, 3 + extra)
    assert law.mean() == pytest.approx(float((k * z).sum()), rel=1e-12)
    assert law.moment(1) == pytest.approx(float((np.abs(k) * z).sum()), rel=1e-12)
    assert law.moment(2) == pytest.approx(float((k ** 2 * z).sum()), rel=1e-12)
    left, right = law.tail_masses()
    assert right == pytest.approx(float(z[k > 2].sum()) * law.total(), rel=1e-12)
    assert left == pytest.approx(float(z[k < -2].sum()) * law.total(), rel=1e-12)
    dl = discrete_laplace(30, math.exp(-1 / 3.0))
    assert dl.moment(1) == pytest.approx(1 / math.sinh(1 / 3.0), rel=1e-12) and abs(dl.mean()) < 1e-15


def test_discrete_laplace_at_the_optimal_scale_is_feasible_and_below_it():
    pc = two_prior_class(8, n=4)
    laws = query_laws(pc, weighted_query(pc))
    res = optimal_noise_of(laws, epsilon=EPS)
    b = res.laplace_scale
    law = discrete_laplace(res.half_width, math.exp(-1 / b))
    assert noise_loss_of(laws, law).loss <= EPS + 1e-12
    assert law.moment(1) == pytest.approx(1 / math.sinh(1 / b), rel=1e-3)  # K truncates nothing material
    assert law.moment(1) < b


# ------------------------------------------------------------------ the bundled networks


@pytest.mark.parametrize("name", ["asia", "child", "alarm"])
def test_bundled_networks_count_query(name):
    pc = load_prior_class(f"example:{name}")
    laws = query_laws(pc, {"count": 0})
    res = optimal_noise_of(laws, epsilon=EPS)
    assert res.loss <= EPS - AUDIT_GUARD
    check, _ = plain_loss(pair_laws_of(laws), res.law, extra=60)
    assert check == pytest.approx(res.loss, abs=1e-9)
    assert res.expected_abs_error < res.laplace_scale
    assert res.expected_abs_error <= (1 / math.sinh(1 / res.laplace_scale)) * (1 + 1e-5)
    d = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    noise = d["noise"]
    assert len(noise["values"]) == len(noise["probabilities"]) == 2 * res.half_width + 1
    assert noise["values"][0] == -res.half_width and noise["tail_ratio"] == res.tail_ratio
    assert d["expected_abs_error"] == res.expected_abs_error and d["loss"] == res.loss


def test_child_close_to_an_independent_solution():
    pc = load_prior_class("example:child")
    laws = query_laws(pc, {"count": 0})
    res = optimal_noise_of(laws, epsilon=EPS)
    ref = independent_program(pair_laws_of(laws), res.half_width, res.tail_ratio, res.epsilon_lp, extra=5)
    assert res.lp_value == pytest.approx(ref, rel=1e-5)
    assert res.expected_abs_error < 0.7 * res.laplace_scale      # a third less than optimal Laplace


def test_square_objective():
    pc = load_prior_class("example:asia")
    laws = query_laws(pc, {"count": 0})
    sq = optimal_noise_of(laws, epsilon=EPS, objective="square")
    ab = optimal_noise_of(laws, epsilon=EPS)
    assert sq.loss <= EPS - AUDIT_GUARD
    assert sq.expected_square_error <= ab.expected_square_error * (1 + 1e-6)
    assert ab.expected_abs_error <= sq.expected_abs_error * (1 + 1e-6)
    assert sq.expected_square_error < 2 * sq.laplace_scale ** 2          # the variance of Laplace(b*)


# ------------------------------------------------------------------ repair, fallback, limits


def test_repair_and_fallback_keep_the_audit_below_epsilon():
    """At margin 0 the program's binding constraints audit at epsilon (up to the solver's tolerance),
    above epsilon - AUDIT_GUARD: a repair solves again inside; without repairs discrete Laplace is released."""
    pc = load_prior_class("example:child")
    laws = query_laws(pc, {"count": 0})
    repaired = optimal_noise_of(laws, epsilon=EPS, options=OptimalNoiseOptions(margin=0.0, repairs=3))
    assert repaired.loss <= EPS - AUDIT_GUARD
    assert repaired.notes and repaired.epsilon_lp < EPS and repaired.lp_value is not None
    fallback = optimal_noise_of(laws, epsilon=EPS, options=OptimalNoiseOptions(margin=0.0, repairs=0))
    assert fallback.status.startswith("fallback") and fallback.lp_value is None
    assert fallback.loss <= EPS - AUDIT_GUARD
    assert fallback.expected_abs_error < fallback.laplace_scale
    assert repaired.expected_abs_error < fallback.expected_abs_error


def test_no_noise_when_the_exact_answer_is_private():
    rng = np.random.default_rng(1)
    net, _ = random_network(rng, n=2, max_card=2, p_edge=0.0, zero_prob=0.0)
    laws = query_laws(PriorClass([net]), {"scores": {"V1": [0, 1]}})   # independent of V0's secret
    laws = dataclasses.replace(laws, laws=tuple(nl for nl in laws.laws if nl.node == "V0"))
    res = optimal_noise_of(laws, epsilon=EPS)
    assert res.expected_abs_error == 0.0 and res.half_width == 0 and res.loss <= 1e-12
    assert "no noise needed" in res.status


def test_options_and_refusals():
    pc = load_prior_class("example:asia")
    laws = query_laws(pc, {"count": 0})
    with pytest.raises(ParameterError):
        optimal_noise_of(laws, epsilon=EPS, objective="max")
    with pytest.raises(ParameterError, match="max_half_width"):
        optimal_noise_of(laws, epsilon=EPS, options=OptimalNoiseOptions(max_half_width=5))
    with pytest.raises(ParameterError):
        optimal_noise_of(laws, epsilon=-1.0)
    with pytest.raises(TypeError):
        optimal_noise_of(laws, 1.0)
    with pytest.raises(ParameterError):
        optimal_noise_of(dataclasses.replace(laws, exact=False), epsilon=EPS)
    fixed = optimal_noise_of(laws, epsilon=EPS, options=OptimalNoiseOptions(half_width=12))
    assert fixed.half_width == 12 and fixed.loss <= EPS - AUDIT_GUARD
    with pytest.raises(ParameterError):
        NoiseLaw(np.array([0.5, -0.1, 0.6]), 0.5)
    with pytest.raises(ParameterError):
        NoiseLaw(np.array([0.5, 0.1, 0.4]), 1.0)


# ------------------------------------------------------------------ sampling and release


def scripted(values):
    it = iter(values)

    def randbelow(n):
        v = next(it)
        assert 0 <= v < n
        return v
    return randbelow


def test_sampler_inverse_cdf_is_exact():
    law = NoiseLaw(np.array([0.25, 0.5, 0.25]), 0.5)    # tails of mass 0.25 each: weights 1 1 2 1 1 (of 6)
    assert sample_noise(law, scripted([1])) == -1
    assert sample_noise(law, scripted([2])) == 0 and sample_noise(law, scripted([3])) == 0
    assert sample_noise(law, scripted([4])) == 1
    assert sample_noise(law, scripted([5, 1])) == 2                 # right tail, first Bernoulli(1/2) fails
    assert sample_noise(law, scripted([5, 0, 0, 1])) == 4           # two successes, then a failure
    assert sample_noise(law, scripted([0, 1])) == -2
    with pytest.raises(AssertionError):
        sample_noise(law, scripted([6]))


def test_sampler_frequencies_follow_the_law():
    law = discrete_laplace(3, 0.6)
    rng = np.random.default_rng(5)
    from puffgm.core.noise import SeededNoise
    src = SeededNoise(rng)
    draws = np.array([sample_noise(law, src.randbelow) for _ in range(10000)])
    for k in range(-5, 6):
        p = math.exp(float(law.log_mass(np.array([k]))[0])) / law.total()
        freq = float(np.mean(draws == k))
        assert abs(freq - p) < 5 * math.sqrt(p * (1 - p) / len(draws)) + 1e-4
    assert np.mean(np.abs(draws)) == pytest.approx(law.moment(1), rel=0.05)


def test_uniform_integers_of_both_noise_sources():
    from puffgm.core.noise import SecureNoise, SeededNoise
    for src in (SecureNoise(), SeededNoise(2)):
        big = 2 ** 70 + 3
        assert all(0 <= src.randbelow(big) < big for _ in range(50))
        assert src.randbelow(1) == 0
        draws = [src.randbelow(3) for _ in range(3000)]
        assert set(draws) == {0, 1, 2} and abs(np.mean(draws) - 1.0) < 0.1
        for bad in (0, -1, 2.5, True):
            with pytest.raises(ParameterError):
                src.randbelow(bad)
    assert SeededNoise(4).randbelow(10 ** 30) == SeededNoise(4).randbelow(10 ** 30)


def test_release():
    pc = load_prior_class("example:asia")
    laws = query_laws(pc, {"count": 0})
    res = optimal_noise_of(laws, epsilon=EPS)
    rel = release_optimal_noise(3, res, random_state=7)
    assert rel.value == round(rel.value) and not rel.secure and type(rel.composition).__name__ == "HeldAlone"
    d = json.loads(json.dumps(rel.to_dict(), allow_nan=False))
    assert "true_value" not in d and d["epsilon"] == EPS
    assert "NOT FOR PRODUCTION" in rel.explain()
    secure = release_optimal_noise(3, res)
    assert secure.secure and secure.noise == SAMPLER
    with pytest.raises(ParameterError):
        release_optimal_noise(3.5, res, random_state=1)
    with pytest.raises(ParameterError):
        release_optimal_noise(float("nan"), res, random_state=1)
    with pytest.raises(ParameterError):
        release_optimal_noise(3, "not a result", random_state=1)


def test_release_consults_the_accountant_before_drawing():
    from puffgm.accounting import PrivacyAccountant
    from puffgm.exceptions import CompositionError
    from puffgm.mechanisms.laplace import release_laplace
    from puffgm.networks.calibration import calibrate

    pc = load_prior_class("example:asia")
    res = optimal_noise_of(query_laws(pc, {"count": 0}), epsilon=EPS)
    acc = PrivacyAccountant(budget=5.0)
    release_optimal_noise(2, res, random_state=3, accountant=acc)
    assert [e.kind for e in acc.entries] == ["HeldAlone"] and acc.total == EPS
    with pytest.raises(CompositionError, match="one query"):  # refused before any draw: nothing recorded
        release_optimal_noise(2, res, random_state=3, accountant=acc)
    assert len(acc.entries) == 1
    busy = PrivacyAccountant()
    release_laplace(1.0, calibrate("example:asia", epsilon=1.0), random_state=0, accountant=busy)
    with pytest.raises(CompositionError, match="cannot compose"):
        release_optimal_noise(2, res, random_state=3, accountant=busy)
    assert len(busy.entries) == 1


def test_result_is_frozen_and_explains():
    pc = load_prior_class("example:asia")
    res = optimal_noise_of(query_laws(pc, {"count": 0}), epsilon=EPS)
    assert isinstance(res, OptimalNoise)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.loss = 0.0
    text = res.explain()
    assert "optimal noise" in text and "audited loss" in text and f"K = {res.half_width}" in text
