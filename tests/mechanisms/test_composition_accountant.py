"""Theorem 7 accounting (Bai et al.) in the PrivacyAccountant, next to its MQM accounting."""

import pytest

from puffgm.accounting import THEOREM_7, THEOREM_MQM, PrivacyAccountant
from puffgm.api import influence_curve
from puffgm.core.curve import curve_from_points
from puffgm.core.noise import NoiseSource, SeededNoise
from puffgm.exceptions import BudgetError, CompositionError
from puffgm.mechanisms.pufferfish import PufferfishExponential, PufferfishLaplace, PufferfishTopK

# These tests hand the accountant records directly (charge, record, make_release): the user vouches for them.
pytestmark = pytest.mark.usefixtures("honest_but_curious")

CURVE = curve_from_points({1: 2.0, 2: 0.8, 3: 0.3, 4: 0.05}, n_entries=30, fingerprint="toy")


class CountingNoise(NoiseSource):
    """Seeded noise that counts draws (to prove nothing is drawn on refusal)."""

    secure = False
    description = "counting test noise"

    def __init__(self):
        self.inner = SeededNoise(0)
        self.draws = 0

    def laplace(self, values, scale):
        self.draws += 1
        return self.inner.laplace(values, scale)

    def gumbel_argmax(self, scores, scale):
        self.draws += 1
        return self.inner.gumbel_argmax(scores, scale)


def test_theorem7_total_and_report():
    acc = PrivacyAccountant()
    rels = [PufferfishLaplace(CURVE, epsilon=1.0).release(3.0, random_state=0, accountant=acc),
            PufferfishExponential(CURVE, epsilon=2.0).release([1, 2, 3], random_state=0, accountant=acc),
            PufferfishTopK(CURVE, epsilon=0.5, k=2).release([1, 2, 3], random_state=0, accountant=acc)]
    pts = [(r.epsilon_puffer, r.a) for r in rels]
    expected = max(a for _, a in pts) + sum(e - a for e, a in pts)
    assert acc.total == pytest.approx(expected)
    assert acc.total < sum(e for e, _ in pts) or all(a == 0 for _, a in pts)
    rep = acc.report()
    assert rep.theorem == THEOREM_7 and "Theorem 7" in rep.explain() and rep.n_releases == 3
    assert [e.kind for e in rep.entries] == ["CurveComposition"] * 3 and rep.entries[0].composition.a == rels[0].a


def test_budget_refusal_draws_no_noise():
    acc = PrivacyAccountant(budget=2.0)
    noise = CountingNoise()
    PufferfishLaplace(CURVE, epsilon=1.5).release(1.0, random_state=noise, accountant=acc)
    assert noise.draws == 1
    before = acc.total
    with pytest.raises(BudgetError, match="nothing was released"):
        PufferfishExponential(CURVE, epsilon=1.5).release([1, 2], random_state=noise, accountant=acc)
    assert noise.draws == 1 and acc.total == before and len(acc.entries) == 1


def test_bare_pufferfish_release_is_refused_with_reason():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Bare:
        value: float
        epsilon: float
        mechanism: str = "Wasserstein mechanism"
        secure: bool = True

    acc = PrivacyAccountant(budget=5.0)
    with pytest.raises(CompositionError, match="section 4"):
        acc.record(Bare(1.0, 0.5))
    from puffgm.framework.continuous import release_sum_absolute_error

    rel = release_sum_absolute_error([1.0, 2.0], k=1.0, epsilon=1.0, random_state=0)  # composition "none"
    with pytest.raises(CompositionError, match=r"Laplace sum .*section 4"):
        acc.record(rel)
    assert acc.entries == ()


def test_different_curves_and_mixing_with_mqm_refused():
    from puffgm.mechanisms.laplace import release_laplace
    from puffgm.networks.calibration import calibrate

    other = curve_from_points({1: 2.0}, n_entries=30, fingerprint="other")
    acc = PrivacyAccountant()
    PufferfishLaplace(CURVE, epsilon=1.0).release(1.0, random_state=0, accountant=acc)
    with pytest.raises(CompositionError, match="different prior classes"):
        PufferfishLaplace(other, epsilon=1.0).release(1.0, random_state=0, accountant=acc)
    cal = calibrate("example:cancer", epsilon=1.0)
    with pytest.raises(CompositionError):
        release_laplace(1.0, cal, accountant=acc, random_state=0)
    assert len(acc.entries) == 1
    # and MQM releases still compose on a fresh accountant
    acc2 = PrivacyAccountant(budget=2.0)
    release_laplace(1.0, cal, accountant=acc2, random_state=0)
    release_laplace(2.0, cal, accountant=acc2, random_state=1)
    assert acc2.total == pytest.approx(2.0) and acc2.report().theorem == THEOREM_MQM
    with pytest.raises(CompositionError):
        PufferfishLaplace(CURVE, epsilon=0.5).release(1.0, random_state=0, accountant=acc2)


def test_the_curve_point_is_validated():
    import dataclasses

    acc = PrivacyAccountant()
    rel = PufferfishLaplace(CURVE, epsilon=1.0).release(1.0, random_state=0)
    with pytest.raises(CompositionError, match="a < epsilon_puffer"):
        acc.check(dataclasses.replace(rel, a=1.0))
    with pytest.raises(CompositionError, match="integer >= 1"):
        acc.check(dataclasses.replace(rel, b=0))
    assert acc.check(rel) == pytest.approx(1.0) and acc.entries == ()


def test_real_network_curve_composes():
    c = influence_curve("example:cancer")
    acc = PrivacyAccountant(budget=3.0)
    PufferfishLaplace(c, epsilon=1.0).release(10.0, random_state=0, accountant=acc)
    PufferfishTopK(c, epsilon=1.5, k=2).release([4, 1, 3], random_state=0, accountant=acc)
    assert acc.total <= 2.5 + 1e-12


def test_mixing_mqm_and_curve_refusal_names_the_missing_theorem():
    """MQM then curve, and curve then MQM: refused, and the message says why (no theorem covers the mix)."""
    from puffgm.mechanisms.laplace import release_laplace
    from puffgm.networks.calibration import calibrate

    cal = calibrate("example:cancer", epsilon=1.0)
    mqm = PrivacyAccountant()
    release_laplace(1.0, cal, accountant=mqm, random_state=0)
    with pytest.raises(CompositionError, match=r"no theorem in Song, Wang and Chaudhuri 2017 or in Bai et al\. "
                                               r"covers this mix.*Theorem 4\.4.*Theorem 7.*Nothing was released"):
        PufferfishLaplace(CURVE, epsilon=1.0).release(1.0, random_state=0, accountant=mqm)
    curve = PrivacyAccountant()
    PufferfishLaplace(CURVE, epsilon=1.0).release(1.0, random_state=0, accountant=curve)
    with pytest.raises(CompositionError, match=r"holds DP-based releases.*refuses a Markov Quilt Mechanism release: "
                                               r"no theorem in Song.*covers this mix"):
        release_laplace(1.0, cal, accountant=curve, random_state=0)
    assert len(mqm.entries) == 1 and len(curve.entries) == 1


def test_blowfish_report_says_blowfish_under_its_policy():
    from puffgm.blowfish.mechanisms import laplace_mechanism
    from puffgm.blowfish.policy import Domain, Policy, line_graph

    acc = PrivacyAccountant()
    p = Policy(line_graph(Domain.ordered(5)))
    laplace_mechanism(1.0, p, epsilon=0.5, sensitivity=1.0, random_state=0, accountant=acc)
    laplace_mechanism(2.0, p, epsilon=0.25, sensitivity=1.0, random_state=0, accountant=acc)
    rep = acc.report()
    assert acc.guarantee == rep.guarantee == "Blowfish"
    text = rep.explain()
    assert "(0.75, P)-Blowfish private under their policy P" in text and p.key in text
    assert "line secret graph" in text and "-Pufferfish private" not in text
    assert PrivacyAccountant().report().guarantee == "Pufferfish"
    with pytest.raises(CompositionError, match="is not Pufferfish privacy for a prior class"):
        PufferfishLaplace(CURVE, epsilon=1.0).release(1.0, random_state=0, accountant=acc)
