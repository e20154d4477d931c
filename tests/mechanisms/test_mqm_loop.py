"""One Markov Quilt Mechanism loop (puffgm.mechanisms.mqm_loop) serves every prior kind, with one clock."""

import math

import pytest

import puffgm
import puffgm.chains.approx as chains_approx
import puffgm.chains.budget as chains_budget
import puffgm.chains.exact as chains_exact
import puffgm.mechanisms.mqm_loop as mqm_loop
import puffgm.networks.calibration as net_calibration
from puffgm.chains import ChainPriorClass, MQMApprox, MQMExact
from puffgm.core.results import QuiltChoice
from puffgm.core.witness import Witness
from puffgm.exceptions import ParameterError, TimeLimitError
from puffgm.gaussian.networks import LinearGaussianPrior, gaussian_calibrate


def _choice(node, score, witness=None):
    witness = Witness(prior=0, node=node) if witness is None else witness
    return QuiltChoice(node=node, quilt=(), nearby=(node,), remote=(), max_influence=0.0, score=score,
                       witness=witness)


@pytest.fixture
def loop_calls(monkeypatch):
    """Every call of the loop's group-DP baseline (one per run_mqm), whoever calls the loop."""
    calls = []
    original = mqm_loop.group_dp_sigma

    def spy(largest_group, *, epsilon):
        calls.append((largest_group, epsilon))
        return original(largest_group, epsilon=epsilon)

    monkeypatch.setattr(mqm_loop, "group_dp_sigma", spy)
    return calls


def test_the_three_kinds_calibrate_through_the_one_loop(loop_calls):
    net = net_calibration.calibrate("example:asia", epsilon=1.0)
    chain = MQMExact(ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], initial=[1, 0], length=30)).calibrate(
        epsilon=1.0)
    approx = MQMApprox(ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], length=30)).calibrate(epsilon=1.0)
    lg = LinearGaussianPrior(["A", "B"], {"B": ["A"]}, {"B": [0.5]}, {}, {"A": 1.0, "B": 1.0}, (-3, 3), delta=0.5)
    gauss = gaussian_calibrate(lg, epsilon=10.0)
    assert loop_calls == [(8, 1.0), (30, 1.0), (30, 1.0), (2, 10.0)]
    for res, (group, eps) in zip((net, chain, approx, gauss), loop_calls, strict=True):
        assert res.groupdp_sigma == group / eps
        assert res.sigma_max == max(c.score for c in (res.per_node or (res.worst,)))
    # the kinds hold no loop of their own: the same function object everywhere
    assert net_calibration.run_mqm is chains_exact.run_mqm is chains_approx.run_mqm is mqm_loop.run_mqm


def test_one_clock_and_one_clear_excess():
    assert chains_budget.ChainClock is mqm_loop.MQMClock
    assert isinstance(net_calibration.network_clock(10.0, 5, "net"), mqm_loop.MQMClock)
    for module in (net_calibration, chains_budget, chains_exact):
        assert not hasattr(module, "_CLEAR_EXCESS")
    clock = mqm_loop.MQMClock(0.0001, "Calibrating network 'n'", "protect fewer nodes", total=3)
    while clock.elapsed <= clock.limit:
        pass
    with pytest.raises(TimeLimitError, match=r"Calibrating network 'n' would take .*protect fewer nodes"):
        clock.check_nodes()  # the engines' check and the node count share the one budget
    with pytest.raises(TimeLimitError, match=r"over the time limit of 0\.0001 s; protect fewer nodes"):
        clock.check()


def test_worst_prior_per_node_ties_keep_the_earlier_prior_and_witnesses_name_the_prior():
    searches = {0: {"a": _choice("a", 2.0), "b": _choice("b", 1.0)},
                1: {"a": _choice("a", 2.0, Witness(prior=0, node="a", pair=("x", "z"))),
                     "b": _choice("b", 3.0, Witness(prior=0, node="b", pair=("y", "z")))}}
    out = mqm_loop.run_mqm(["p0", "p1"], ["a", "b"], lambda t, _: searches[t], epsilon=0.5, largest_group=2)
    assert out.best["a"].witness == Witness(prior=0, node="a") and out.prior_of["a"] == 0  # a tie: the earlier prior
    assert out.best["b"].witness == Witness(prior=1, node="b", pair=("y", "z")) and out.prior_of["b"] == 1
    assert out.worst.node == "b" and out.worst_prior == 1 and out.sigma_max == 3.0
    assert out.per_prior == (2.0, 3.0) and out.groupdp_sigma == 4.0 and not out.no_gain


def test_worst_node_is_canonical_and_sigma_max_is_the_exact_largest():
    # b's score is a rounding above a's: the worst node is the first in node order, sigma_max the largest
    search = {"a": _choice("a", 0.1 + 0.2), "b": _choice("b", 0.3 + 1e-16 * 3)}
    assert search["b"].score > search["a"].score
    out = mqm_loop.run_mqm(["p"], ["a", "b"], lambda t, _: search, epsilon=1.0, largest_group=1)
    assert out.worst.node == "a" and out.sigma_max == search["b"].score
    # nodes reported only by the search (a chain's shortcut) are ordered by node_key
    out = mqm_loop.run_mqm(["p"], None, lambda t, _: {"X10": _choice("X10", 1.0), "X9": _choice("X9", 1.0)},
                           epsilon=1.0, largest_group=10, node_key=lambda n: int(n[1:]))
    assert out.worst.node == "X9" and tuple(out.best) == ("X9", "X10")


def test_the_progress_bar_is_closed_when_a_search_fails():
    class Bar:
        closed = False

        def close(self):
            self.closed = True

    def fail(t, prior):
        raise TimeLimitError("stop")

    bar = Bar()
    with pytest.raises(TimeLimitError):
        mqm_loop.run_mqm(["p"], ["a"], fail, epsilon=1.0, largest_group=1, bar=bar)
    assert bar.closed


def test_best_quilt_is_the_least_score_and_stops_at_the_card_bound():
    seen = []

    def influence(q, nb):
        seen.append(q)
        return {"": 0.0, "q1": 0.6, "q2": 0.1, "q3": 0.0}[q]

    cands = [("", ("v",) * 4, ()), ("q1", ("v",), ()), ("q2", ("v",) * 2, ()), ("q3", ("v",) * 5, ())]
    cands.sort(key=lambda c: len(c[1]))
    best = mqm_loop.best_quilt(cands, influence, lambda q, nb, rm, e, s: _choice(q, s), epsilon=1.0)
    assert best.node == "q2" and best.score == 2 / 0.9  # beats 1 / (1 - 0.6) = 2.5 and 4 / 1
    assert seen == ["q1", "q2"]  # 4 / epsilon >= 2 / 0.9: the later candidates cannot win
    with pytest.raises(ParameterError, match="at least one candidate"):
        mqm_loop.best_quilt([], influence, lambda *a: None, epsilon=1.0)


def test_public_calibrate_goes_through_the_loop_for_every_kind(loop_calls):
    lg = LinearGaussianPrior(["A", "B"], {"B": ["A"]}, {"B": [0.5]}, {}, {"A": 1.0, "B": 1.0}, (-3, 3), delta=0.5)
    chain = ChainPriorClass.from_family([[[0.9, 0.1], [0.4, 0.6]], [[0.8, 0.2], [0.3, 0.7]]], length=12)
    results = [puffgm.calibrate(p, epsilon=2.0) for p in ("example:asia", chain, lg)]
    assert len(loop_calls) == 3
    family = results[1]
    assert family.sigma_max == max(family.details["per_member_sigma"])
    assert family.worst.score == max(c.score for c in family.per_node)
    assert all(math.isfinite(r.sigma_max) for r in results)
