"""Bai et al. Theorems 4-5: the necessary conditions for composition, checked by LP and by brute force."""

import itertools
import math

import numpy as np
import pytest
from _nets import count_utility
from _nets import random_pgmpy_network as random_network

from puffgm.api import influence_curve
from puffgm.exceptions import AuditError, ParameterError
from puffgm.framework.audit import audit_finite
from puffgm.framework.cautionary import bai_example_4_1, bai_example_4_2, bai_example_4_3
from puffgm.framework.composition_conditions import (
    check_composition_conditions,
    nfc_value,
    repeated_release_loss,
)
from puffgm.framework.instantiation import Instantiation, Secret
from puffgm.mechanisms.pufferfish import PufferfishExponential, PufferfishTopK
from puffgm.networks.priors import PriorClass

CASES = [bai_example_4_1, lambda: bai_example_4_2(3), lambda: bai_example_4_2(4), bai_example_4_3]


def one_bit():
    return Instantiation([np.array([0.5, 0.5])], [(Secret.value("X", 0), Secret.value("X", 1))],
                         nodes=["X"], states=[2])


def soft(case, lam):
    tab = np.exp(case.mechanism.log_table(case.inst))
    return (1 - lam) * tab + lam / tab.shape[1]


@pytest.mark.parametrize("make", CASES)
def test_collapse_examples_fail_with_infinite_value(make):
    case = make()
    r = check_composition_conditions(case.inst, case.mechanism)
    single = audit_finite(case.inst, case.mechanism).loss
    assert r.epsilon == pytest.approx(single)
    assert not r.holds and not r.dp_holds
    assert r.nfc_value == math.inf and r.n_violations == r.n_checks > 0
    w = r.worst
    assert w.blocking_output is not None and w.n_candidates == 0
    assert w.pair[0] in [p.name for pair in case.inst.pairs for p in pair]
    text = r.explain()
    assert "FAIL" in text and "violating pair" in text and w.pair[1] in text
    d = r.to_dict()
    assert d["holds"] is False and d["nfc_value"] is None


@pytest.mark.parametrize("make", CASES)
@pytest.mark.parametrize("lam", [0.05, 0.5])
def test_softened_collapse_fails_and_composition_really_breaks(make, lam):
    """Mixing with uniform noise makes every value finite; Theorem 4 still fails, and r runs show it."""
    case = make()
    tab = soft(case, lam)
    r = check_composition_conditions(case.inst, tab)
    assert math.isfinite(r.nfc_value) and r.nfc_value > r.epsilon + 1e-3 and not r.holds
    assert r.dp_value >= r.nfc_value - 1e-9
    # the dual certifies the LP value: min over candidates of alpha . (log p* - log p_l) = v
    w = r.worst
    inst = case.inst
    logm = np.log(tab.reshape(inst.n_databases, -1))
    assigns = list(inst.iter_assignments())
    star = assigns.index(dict(w.dataset))
    out_index = {o: k for k, o in enumerate(range(logm.shape[1]))}
    alpha = np.zeros(logm.shape[1])
    for o, a in w.alpha:
        alpha[out_index[o]] = a
    s1, s2 = w.pair
    t = inst.prior_names.index(w.prior)
    partners = np.flatnonzero(inst.mask(s2).ravel() & (inst.log_priors[t].ravel() > -np.inf))
    lower = min(float(alpha @ (logm[star] - logm[p])) for p in partners)
    assert lower == pytest.approx(w.value, abs=1e-7)
    # composition really fails: r runs with output counts ~ r * alpha exceed r * epsilon
    pair_idx = next(k for k, (a, b) in enumerate(inst.pairs) if {a.name, b.name} == {s1, s2})
    rr = 400
    counts = np.round(rr * (0.999 * alpha + 0.001 / alpha.size))
    loss = repeated_release_loss(inst, tab, counts, prior=t, pair=pair_idx)
    assert loss > counts.sum() * r.epsilon


def brute_force_value(logm, star, partners):
    """Exact min over beta = (g, 1 - g) of a max of lines in g: attained at 0, 1 or a crossing of two lines."""
    sup = logm[star] > -np.inf
    a, b = logm[partners[0], sup], logm[partners[1], sup]
    p = logm[star, sup]
    # f_w(g) = p_w - g a_w - (1 - g) b_w = (p_w - b_w) + g (b_w - a_w)
    c0, c1 = p - b, b - a
    gs = {0.0, 1.0}
    for i, j in itertools.combinations(range(p.size), 2):
        if c1[i] != c1[j]:
            g = (c0[j] - c0[i]) / (c1[i] - c1[j])
            if 0 <= g <= 1:
                gs.add(float(g))
    return min(float(np.max(c0 + g * c1)) for g in gs)


@pytest.mark.parametrize("seed", range(4))
def test_lp_value_matches_brute_force_on_random_mechanisms(seed):
    rng = np.random.default_rng(seed)
    # one binary secret node S and a nuisance node U with 2 states: two partners per D*
    joint = rng.dirichlet(np.ones(4)).reshape(2, 2)
    inst = Instantiation([joint], [(Secret.value("S", 0), Secret.value("S", 1))], nodes=["S", "U"], states=[2, 2])
    tab = rng.dirichlet(np.ones(3), size=4)
    r = check_composition_conditions(inst, tab, epsilon=0.0)
    logm = np.log(tab)
    expect = 0.0
    for star, partners in ((0, [2, 3]), (1, [2, 3]), (2, [0, 1]), (3, [0, 1])):
        expect = max(expect, brute_force_value(logm, star, partners))
    assert r.nfc_value == pytest.approx(expect, abs=1e-8)
    dp = max(min(float(np.max(logm[s] - logm[p])) for p in ps)
             for s, ps in ((0, [2, 3]), (1, [2, 3]), (2, [0, 1]), (3, [0, 1])))
    assert r.dp_value == pytest.approx(dp, abs=1e-12)


def setup(seed, n=3, card=3):
    model = random_network(seed, n=n, card=card, extra_edges=1)
    theta = PriorClass.from_pgmpy([model])
    inst = Instantiation.bayesian_network_default(list(theta.priors))
    return theta, inst, influence_curve(theta)


@pytest.mark.parametrize("seed,eps", [(0, 0.5), (1, 3.0)])
def test_dp_based_pufferfish_mechanisms_pass(seed, eps):
    """Theorem 7 mechanisms compose linearly, so Theorem 4's conditions must hold at epsilon_puffer."""
    theta, inst, curve = setup(seed)
    u = count_utility(theta)
    expo = PufferfishExponential(curve, epsilon=eps)
    r = check_composition_conditions(inst, lambda a: expo.log_probabilities(u(a)), epsilon=eps)
    assert r.holds and r.dp_holds and r.n_violations == 0
    # the exponential mechanism is epsilon_DP-DP per entry: a one-entry neighbour is a DP-style partner
    assert r.dp_value <= expo.epsilon_dp + 1e-9
    topk = PufferfishTopK(curve, epsilon=eps, k=2)
    outs = list(itertools.permutations(range(3), 2))
    law = lambda a: [topk.log_probability(u(a), s) for s in outs]  # noqa: E731
    r2 = check_composition_conditions(inst, law, epsilon=eps)
    assert r2.holds and r2.dp_holds and r2.dp_value <= topk.epsilon_dp + 1e-9
    both = check_composition_conditions(inst, [lambda a: expo.log_probabilities(u(a)), law], epsilon=eps)
    assert both.holds and both.nfc_value == pytest.approx(max(r.nfc_value, r2.nfc_value), abs=1e-9)
    assert "HOLD" in both.explain()


def test_randomised_response_and_edge_cases():
    inst = one_bit()
    rr = np.array([[0.75, 0.25], [0.25, 0.75]])
    r = check_composition_conditions(inst, rr)
    assert r.holds and r.nfc_value == pytest.approx(math.log(3), abs=1e-12)
    assert not r.satisfies(epsilon=1.0) and r.satisfies(epsilon=1.1)
    assert nfc_value(inst, rr) == pytest.approx(math.log(3), abs=1e-12)
    # a constant mechanism: value 0, holds at epsilon 0
    r0 = check_composition_conditions(inst, np.array([[0.3, 0.7], [0.3, 0.7]]), epsilon=0.0)
    assert r0.holds and r0.nfc_value == pytest.approx(0.0, abs=1e-12)
    # releasing the bit: infinite single-run loss is refused when epsilon is left to the audit
    reveal = np.eye(2)
    with pytest.raises(AuditError, match="not Pufferfish private"):
        check_composition_conditions(inst, reveal)
    assert not check_composition_conditions(inst, reveal, epsilon=5.0).holds


def test_zero_probability_datasets_impose_no_condition():
    """The support refinement: a mechanism may do anything on datasets no prior produces."""
    joint = np.array([[0.5, 0.0], [0.0, 0.5]])  # S = U always
    inst = Instantiation([joint], [(Secret.value("S", 0), Secret.value("S", 1))], nodes=["S", "U"], states=[2, 2])
    # on the possible datasets (0,0) and (1,1): randomised response; on the impossible ones: reveal S
    tab = np.array([[0.75, 0.25], [1.0, 0.0], [0.0, 1.0], [0.25, 0.75]])
    r = check_composition_conditions(inst, tab)
    assert r.holds and r.nfc_value == pytest.approx(math.log(3), abs=1e-12)
    assert r.n_checks == 2  # only the two datasets of positive probability


def test_skipped_pairs_are_vacuous_and_bad_inputs_raise():
    joint = np.array([1.0, 0.0])
    inst = Instantiation([joint], [(Secret.value("X", 0), Secret.value("X", 1))], nodes=["X"], states=[2])
    r = check_composition_conditions(inst, np.eye(2), epsilon=0.0)
    assert r.holds and r.n_checks == 0 and any("vacuous" in n for n in r.notes)
    inst = one_bit()
    rr = np.array([[0.75, 0.25], [0.25, 0.75]])
    with pytest.raises(ParameterError, match="'epsilon' parameter"):
        check_composition_conditions(inst, rr, epsilon=-1.0)
    with pytest.raises(ParameterError, match="'epsilon' parameter"):
        check_composition_conditions(inst, rr, epsilon=math.inf)
    with pytest.raises(ParameterError, match="Instantiation"):
        check_composition_conditions("asia", rr)
    with pytest.raises(ParameterError, match="at least one mechanism"):
        check_composition_conditions(inst, [])
    with pytest.raises(AuditError):
        check_composition_conditions(inst, np.array([[0.5, 0.6], [0.5, 0.5]]))
    with pytest.raises(ParameterError, match="counts"):
        repeated_release_loss(inst, rr, [1, -1])
    with pytest.raises(AuditError, match="impossible under both"):
        repeated_release_loss(inst, np.array([[1.0, 0.0], [1.0, 0.0]]), [0, 3])
