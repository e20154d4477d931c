"""DP-based Pufferfish mechanisms (Bai et al. section 6.4), checked by exact audits on small networks."""

import itertools
import math

import numpy as np
import pytest
from _nets import count_utility
from _nets import random_pgmpy_network as random_network
from scipy.special import logsumexp

from puffgm.api import influence_curve
from puffgm.core.noise import SeededNoise
from puffgm.exceptions import ParameterError
from puffgm.framework.audit import audit_composition, audit_exponential, audit_finite, audit_laplace
from puffgm.framework.instantiation import Instantiation
from puffgm.mechanisms.pufferfish import (
    PufferfishExponential,
    PufferfishLaplace,
    PufferfishTopK,
    PufferfishWrapper,
    exponential_log_probabilities,
    pufferfish_top_k,
)
from puffgm.networks.priors import PriorClass


def setup(seed, n=4, card=2):
    model = random_network(seed, n=n, card=card, extra_edges=1)
    theta = PriorClass.from_pgmpy([model])
    inst = Instantiation.bayesian_network_default(list(theta.priors))
    return theta, inst, influence_curve(theta)


def _state_index(theta, v, s):
    st = theta.states[v]
    return st.index(s) if s in st else int(s)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("eps", [0.5, 2.0, 6.0])
def test_exponential_mechanism_exact_audit(seed, eps):
    theta, inst, curve = setup(seed, n=4, card=3)
    mech = PufferfishExponential(curve, epsilon=eps, sensitivity=1.0)
    u = count_utility(theta)
    # the mechanism's own output law, audited exactly
    res = audit_finite(inst, lambda a: mech.log_probabilities(u(a)))
    assert res.loss <= eps + 1e-9
    # and the auditor's independent exponential mechanism at the same scale agrees
    ref = audit_exponential(inst, u, scale=2 * mech.sensitivity / mech.epsilon_dp)
    assert ref.loss == pytest.approx(res.loss, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", [3, 4])
def test_top_k_exact_audit(seed):
    theta, inst, curve = setup(seed, n=4, card=3)
    eps = 1.5
    mech = PufferfishTopK(curve, epsilon=eps, k=2)
    u = count_utility(theta)
    outs = list(itertools.permutations(range(3), 2))

    def law(a):
        return [mech.log_probability(u(a), s) for s in outs]

    res = audit_finite(inst, law)
    assert res.loss <= eps + 1e-9
    # law sums to one
    assert logsumexp(law(next(inst.iter_assignments()))) == pytest.approx(0.0, abs=1e-12)


def test_laplace_exact_audit():
    theta, inst, curve = setup(5, n=5, card=2)
    for eps in (0.7, 3.0):
        mech = PufferfishLaplace(curve, epsilon=eps, lipschitz=1.0)
        count = lambda a: float(sum(_state_index(theta, v, a[v]) for v in theta.nodes))
        res = audit_laplace(inst, count, mech.scale)
        assert res.loss <= eps + 1e-9


def test_theorem7_composition_exact_audit():
    """Two exponential releases and a top-2 on one network: loss <= max a + sum (eps - a)."""
    from puffgm.accounting import PrivacyAccountant

    theta, inst, curve = setup(6, n=4, card=3)
    u = count_utility(theta)
    mechs = [PufferfishExponential(curve, epsilon=1.0), PufferfishExponential(curve, epsilon=2.5),
             PufferfishTopK(curve, epsilon=1.5, k=2)]
    acc = PrivacyAccountant()
    for m in mechs:
        if isinstance(m, PufferfishTopK):
            m.release([3, 1, 2], random_state=0, accountant=acc)
        else:
            m.release([3, 1, 2], random_state=0, accountant=acc)
    outs = list(itertools.permutations(range(3), 2))
    laws = [lambda a, m=mechs[0]: m.log_probabilities(u(a)),
            lambda a, m=mechs[1]: m.log_probabilities(u(a)),
            lambda a, m=mechs[2]: [m.log_probability(u(a), s) for s in outs]]
    res = audit_composition(inst, laws)
    bound = max(m.translation.a for m in mechs) + sum(m.epsilon_puffer - m.translation.a for m in mechs)
    assert acc.total == pytest.approx(bound)
    assert res.loss <= bound + 1e-9


def test_sampling_follows_the_exact_law_and_seeded_is_marked():
    curve = setup(7, n=3, card=2)[2]
    mech = PufferfishExponential(curve, epsilon=4.0, sensitivity=0.5)
    u = [2.0, 0.0, 1.0, -1.0]
    p = np.exp(mech.log_probabilities(u))
    rng = np.random.default_rng(1)
    draws = [mech.release(u, random_state=rng).value for _ in range(4000)]
    freq = np.bincount(draws, minlength=4) / 4000
    assert np.max(np.abs(freq - p)) < 0.03
    rel = mech.release(u, random_state=3)
    assert rel.secure is False and "NOT for production" in rel.noise
    assert rel.curve_point == mech.point and rel.epsilon_dp == mech.epsilon_dp


def test_secure_by_default_and_vector_laplace():
    curve = setup(8, n=3, card=2)[2]
    rel = PufferfishLaplace(curve, epsilon=2.0, lipschitz=2.0).release([1.0, 2.0, 3.0])
    assert rel.secure is True and rel.value.shape == (3,)
    with pytest.raises(ValueError):
        rel.value[0] = 0.0  # immutable
    top = pufferfish_top_k([5, 9, 1, 7], 3, curve, epsilon=3.0, candidates=["a", "b", "c", "d"])
    assert top.secure and len(set(top.value)) == 3 and set(top.value) <= {"a", "b", "c", "d"}


def test_wrapper_passes_epsilon_dp_and_noise():
    curve = setup(9, n=3, card=2)[2]
    seen = {}

    def rr(data, epsilon_dp, noise):
        seen["eps"] = epsilon_dp
        seen["noise"] = noise
        return float(noise.laplace(sum(data), 1.0 / epsilon_dp))

    w = PufferfishWrapper(curve, epsilon=1.5, mechanism=rr)
    rel = w.release([1, 0, 1], random_state=0)
    assert seen["eps"] == w.epsilon_dp == rel.epsilon_dp and isinstance(seen["noise"], SeededNoise)
    assert "rr" in rel.mechanism and rel.b == w.translation.b


def test_bad_inputs():
    curve = setup(10, n=3, card=2)[2]
    with pytest.raises(ParameterError, match="'sensitivity' parameter of PufferfishExponential"):
        PufferfishExponential(curve, epsilon=1.0, sensitivity=0)
    with pytest.raises(ParameterError, match="NaN"):
        PufferfishExponential(curve, epsilon=1.0).release([1.0, float("nan")])
    with pytest.raises(ParameterError, match="at least 3 candidates"):
        PufferfishTopK(curve, epsilon=1.0, k=3).release([1.0, 2.0])
    with pytest.raises(ParameterError, match="callable"):
        PufferfishWrapper(curve, epsilon=1.0, mechanism=3)
    with pytest.raises(ParameterError, match="'epsilon' parameter of PufferfishLaplace"):
        PufferfishLaplace(curve, epsilon=float("inf"))
    lp = exponential_log_probabilities([0.0, -math.inf, 1.0], epsilon_dp=1.0, sensitivity=1.0)
    assert lp[1] == -math.inf and logsumexp(lp) == pytest.approx(0.0)


def test_strong_correlation_negative_control():
    """On near-copies a naive eps-DP exponential mechanism breaks eps-Pufferfish; the curve-based one does not."""
    from _nets import markov_chain_network

    model = markov_chain_network(4, [[0.97, 0.03], [0.05, 0.95]], [0.6, 0.4])
    theta = PriorClass.from_pgmpy([model])
    inst = Instantiation.bayesian_network_default(list(theta.priors))
    curve = influence_curve(theta)
    u = lambda a: [sum(1 for v in theta.nodes if _state_index(theta, v, a[v]) == r) for r in range(2)]
    for eps in (1.0, 3.0):
        naive = audit_exponential(inst, u, epsilon=eps)
        assert naive.loss > eps  # the audit can fail
        mech = PufferfishExponential(curve, epsilon=eps)
        assert audit_finite(inst, lambda a: mech.log_probabilities(u(a))).loss <= eps + 1e-9
        top = PufferfishTopK(curve, epsilon=eps, k=2)
        outs = [(0, 1), (1, 0)]
        assert audit_finite(inst, lambda a: [top.log_probability(u(a), s) for s in outs]).loss <= eps + 1e-9


def test_top_k_log_probability_rejects_invalid_selections_and_zeroes_repeats():
    import math as _math

    from puffgm.exceptions import ParameterError as _PE
    from puffgm.mechanisms.pufferfish import top_k_log_probability

    u = [1.0, 2.0, 3.0]
    for bad in ([3], [-1], [0.5]):
        with pytest.raises(_PE, match="outside 0..2"):
            top_k_log_probability(u, bad, epsilon_dp=1.0, sensitivity=1.0)
    assert top_k_log_probability(u, [1, 1], epsilon_dp=1.0, sensitivity=1.0) == -_math.inf
