"""The accountant cannot be talked into a guarantee no theorem gives, and no release shows its exact answer.

Every refusal has a test here: a caller-named key does not exist, keys are derived from the release
(quilt sets and the options that define them, secrets, curve, policy), only releases the accountant
charged are recorded, each once, and every epsilon, scale and answer is checked before anything is
released.
"""

import dataclasses
import math
import pickle

import numpy as np
import pytest

import puffgm
from puffgm.accounting import PrivacyAccountant
from puffgm.chains import ChainPriorClass
from puffgm.core.release import Release
from puffgm.exceptions import CompositionError, ParameterError
from puffgm.mechanisms.laplace import MarkovQuiltRelease, release_laplace
from puffgm.mechanisms.optimal_noise import release_optimal_noise
from puffgm.mechanisms.query import release_query

# These tests hand the accountant records directly (charge, record, make_release): the user vouches for them.
pytestmark = pytest.mark.usefixtures("honest_but_curious")

CHAIN = ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], initial="stationary", length=50)


@pytest.fixture(scope="module")
def asia_query():
    return puffgm.calibrate_query("example:asia", {"count": 0}, epsilon=1.0, method="optimal-laplace")


@pytest.fixture(scope="module")
def asia_noise():
    return puffgm.calibrate_query("example:asia", {"count": 0}, epsilon=1.0, method="optimal-noise")


def test_releases_protecting_smoke_and_lung_do_not_compose():
    smoke = puffgm.calibrate("example:asia", epsilon=1.0, protected=["smoke"])
    lung = puffgm.calibrate("example:asia", epsilon=1.0, protected=["lung"])
    acc = PrivacyAccountant()
    first = release_laplace(1.0, smoke, accountant=acc, random_state=0)
    with pytest.raises(CompositionError, match="different instantiations or quilt sets"):
        release_laplace(1.0, lung, accountant=acc, random_state=1)
    second = release_laplace(1.0, lung, random_state=1)
    with pytest.raises(CompositionError, match="different instantiations or quilt sets"):
        acc.check(second)
    with pytest.raises(TypeError):
        acc.record(second, quilt_key=first.quilt_key)  # no caller names a key
    assert len(acc.entries) == 1 and acc.total == 1.0


def test_chain_quilt_sets_enter_the_key():
    trivial = puffgm.calibrate(CHAIN, epsilon=1.0, max_length=3)
    default = puffgm.calibrate(CHAIN, epsilon=1.0)
    assert trivial.sigma_max > default.sigma_max
    acc = PrivacyAccountant()
    release_laplace(1.0, trivial, accountant=acc, random_state=0)
    with pytest.raises(CompositionError, match="different instantiations or quilt sets"):
        release_laplace(1.0, default, accountant=acc, random_state=0)
    # one set of options at two epsilons: the same quilt sets, K * max epsilon (Song et al. remark after Thm 4.4)
    half = puffgm.calibrate(CHAIN, epsilon=0.5)
    same = PrivacyAccountant()
    release_laplace(1.0, default, accountant=same, random_state=0)
    release_laplace(1.0, half, accountant=same, random_state=0)
    assert same.total == pytest.approx(2.0)
    # options that only change speed or display do not change the quilt sets
    assert (release_laplace(1.0, puffgm.calibrate(CHAIN, epsilon=1.0, per_node=True), random_state=0).quilt_key
            == release_laplace(1.0, default, random_state=0).quilt_key)


def test_calibrations_made_outside_the_dispatch_compose_only_with_themselves():
    from puffgm.chains import MQMExact

    a, b = MQMExact(CHAIN).calibrate(epsilon=1.0), MQMExact(CHAIN, max_length=3).calibrate(epsilon=1.0)
    assert a.options is None and b.options is None
    acc = PrivacyAccountant()
    release_laplace(1.0, a, accountant=acc, random_state=0)
    release_laplace(1.0, a, accountant=acc, random_state=1)
    with pytest.raises(CompositionError, match="different instantiations or quilt sets"):
        release_laplace(1.0, b, accountant=acc, random_state=0)
    assert acc.total == pytest.approx(2.0)


def test_only_releases_the_accountant_charged_are_recorded_each_once():
    cal = puffgm.calibrate("example:asia", epsilon=1.0)
    acc = PrivacyAccountant()
    rel = release_laplace(1.0, cal, accountant=acc, random_state=0)
    forged = MarkovQuiltRelease(value=1.0, mechanism="m", epsilon=1.0, scale=0.001, secure=True, noise="none",
                                fingerprint=cal.fingerprint, theorem="t", details={"quilt_key": rel.quilt_key})
    unaccounted = release_laplace(1.0, cal, random_state=0)
    for bad in (forged, dataclasses.replace(rel, scale=0.001), pickle.loads(pickle.dumps(rel)), unaccounted):
        for target in (acc, PrivacyAccountant()):
            with pytest.raises(CompositionError, match="charged before their noise was drawn"):
                target.record(bad)
    with pytest.raises(CompositionError, match="already recorded"):
        acc.record(rel)
    assert acc.total == 1.0 and rel.composition.key == rel.quilt_key


def test_the_accountant_has_no_public_back_doors():
    public = {name for name in dir(PrivacyAccountant) if not name.startswith("_")}
    assert public == {"check", "charge", "record", "entries", "total", "guarantee", "theorem", "remaining", "report"}


@pytest.mark.parametrize("epsilon", [-5.0, 0.0, math.nan, math.inf])
def test_an_edited_epsilon_is_refused_on_every_road(epsilon, asia_query, asia_noise):
    cal = puffgm.calibrate("example:asia", epsilon=1.0)
    for release in (lambda acc: release_laplace(1.0, dataclasses.replace(cal, epsilon=epsilon), accountant=acc),
                    lambda acc: release_query(3.0, dataclasses.replace(asia_query, epsilon=epsilon), accountant=acc),
                    lambda acc: release_optimal_noise(3.0, dataclasses.replace(asia_noise.optimal_noise,
                                                                               epsilon=epsilon), accountant=acc)):
        for acc in (None, PrivacyAccountant()):
            with pytest.raises(ParameterError, match="'epsilon'"):
                release(acc)
            assert acc is None or acc.entries == ()
    rel = release_laplace(1.0, cal, random_state=0)
    with pytest.raises(ParameterError, match="'epsilon'"):
        PrivacyAccountant().check(dataclasses.replace(rel, epsilon=epsilon))


def test_a_query_release_refuses_a_zero_scale_and_answers_outside_the_range(asia_query, asia_noise):
    with pytest.raises(ParameterError, match="finite scale > 0"):
        release_query(3.0, dataclasses.replace(asia_query, scale=0.0))
    for answer in (-1.0, 9.0, 1e300):
        for release in (lambda: release_query(answer, asia_query),
                        lambda: release_optimal_noise(answer, asia_noise.optimal_noise)):
            with pytest.raises(ParameterError, match=r"outside the calibrated query's range \[0, 8\]"):
                release()


def test_an_answer_too_large_for_the_noise_is_refused():
    cal = puffgm.calibrate("example:asia", epsilon=1.0)
    acc = PrivacyAccountant()
    for answer in (1e300, [1.0, 1e20]):
        with pytest.raises(ParameterError, match="rounding would swallow the noise"):
            release_laplace(answer, cal, accountant=acc, random_state=0)
    assert acc.entries == ()
    assert release_laplace(1e6, cal, random_state=0).value != 1e6


def _differs_only_in_one_float(a: bytes, b: bytes) -> bool:
    """True if the two byte strings have equal length and all their differences lie in 8 consecutive bytes."""
    if len(a) != len(b):
        return False
    diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    return not diff or diff[-1] - diff[0] < 8


def _pair(kind, answers, asia_query, asia_noise):
    """Two releases of two exact answers with the same seeded noise."""
    cal = puffgm.calibrate("example:asia", epsilon=1.0)
    make = {"mqm": lambda v: release_laplace(v, cal, random_state=3),
            "query": lambda v: release_query(v, asia_query, random_state=3),
            "optimal noise": lambda v: release_optimal_noise(v, asia_noise.optimal_noise, random_state=3)}[kind]
    return make(answers[0]), make(answers[1])


@pytest.mark.parametrize("kind", ["mqm", "query", "optimal noise"])
def test_no_release_shows_its_exact_answer(kind, asia_query, asia_noise):
    """Two exact answers, the same noise: the records differ only in the noisy value, so no field,
    repr, str, to_dict or pickle carries the exact answer."""
    r1, r2 = _pair(kind, (3.0, 5.0), asia_query, asia_noise)
    assert r1.value != r2.value
    assert _differs_only_in_one_float(pickle.dumps(r1), pickle.dumps(r2))
    for show in (repr, str, lambda r: str(r.to_dict())):
        assert show(r1).replace(repr(r1.value), "V") == show(r2).replace(repr(r2.value), "V")


def test_no_release_record_has_a_field_for_the_exact_answer():
    import importlib
    import pkgutil

    for info in pkgutil.walk_packages(puffgm.__path__, "puffgm."):
        if info.name.endswith("__main__") or ".cli" in info.name or ".experiments" in info.name:
            continue
        for obj in vars(importlib.import_module(info.name)).values():
            if isinstance(obj, type) and issubclass(obj, Release) and dataclasses.is_dataclass(obj):
                names = {f.name for f in dataclasses.fields(obj)}
                assert not {n for n in names if "true" in n or "exact" in n or "answer" in n}, obj


def test_a_refused_release_draws_no_noise_and_records_nothing():
    from puffgm.core.noise import SeededNoise

    class Counting(SeededNoise):
        draws = 0

        def laplace(self, values, scale):
            Counting.draws += 1
            return super().laplace(values, scale)

    cal = puffgm.calibrate("example:asia", epsilon=1.0)
    acc = PrivacyAccountant(budget=1.5)
    release_laplace(1.0, cal, accountant=acc, random_state=Counting(0))
    with pytest.raises(Exception, match="over the budget"):
        release_laplace(np.array([1.0, 2.0]), cal, accountant=acc, random_state=Counting(0))
    assert Counting.draws == 1 and len(acc.entries) == 1


def _refusal_cases():
    """(name, releases recorded first, the refused release, the pattern of its one-sentence refusal)."""
    from puffgm.blowfish import Domain, Policy, line_graph
    from puffgm.blowfish.mechanisms import laplace_mechanism
    from puffgm.core.curve import curve_from_points
    from puffgm.framework.continuous import release_sum_absolute_error
    from puffgm.mechanisms.pufferfish import PufferfishLaplace

    cal = puffgm.calibrate("example:asia", epsilon=1.0)
    mqm = lambda: release_laplace(1.0, cal, random_state=0)  # noqa: E731
    curve = curve_from_points({1: 0.5, 2: 0.1}, n_entries=8, fingerprint="toy")
    dp = lambda c=curve: PufferfishLaplace(c, epsilon=1.0).release(1.0, random_state=0)  # noqa: E731
    line = Policy(line_graph(Domain.ordered(5)))
    blow = lambda p=line, **kw: laplace_mechanism(1.0, p, epsilon=0.5, sensitivity=1.0, random_state=0, **kw)  # noqa: E731
    query = puffgm.calibrate_query("example:asia", {"count": 0}, epsilon=1.0, method="optimal-laplace")
    single = lambda: release_query(3.0, query, random_state=0)  # noqa: E731

    class Unknown(MarkovQuiltRelease):
        composition = "my-theorem"

    unknown = Unknown(**{f.name: getattr(mqm(), f.name) for f in dataclasses.fields(MarkovQuiltRelease)})
    other_curve = curve_from_points({1: 0.5}, n_entries=8, fingerprint="other")
    other_policy = Policy(line_graph(Domain.ordered(6)))
    return [
        ("not a release", [], lambda: 3.0, r"not a puffgm release record"),
        ("no theorem", [], lambda: release_sum_absolute_error([1.0], k=1.0, epsilon=1.0, random_state=0),
         r"section 4"),
        ("unknown rule", [], lambda: unknown, r"declares the composition rule 'my-theorem'"),
        ("not charged", [], lambda: dataclasses.replace(mqm(), epsilon=0.5), r"charged before their noise"),
        ("bad epsilon", [], lambda: dataclasses.replace(mqm(), epsilon=-1.0), r"'epsilon'"),
        ("bad point a", [], lambda: dataclasses.replace(dp(), a=2.0), r"a < epsilon_puffer"),
        ("bad point b", [], lambda: dataclasses.replace(dp(), b=0), r"integer >= 1"),
        ("bad epsilon_dp", [], lambda: dataclasses.replace(dp(), epsilon_dp=math.nan), r"epsilon_DP"),
        ("empty subset", [], lambda: dataclasses.replace(blow(), subset=frozenset()), r"subset .* is empty"),
        ("constrained parallel", [], lambda: dataclasses.replace(blow(), subset=frozenset({1}), constrained=True),
         r"Theorem 4.2"),
        ("two MQM keys", [mqm], lambda: release_laplace(1.0, puffgm.calibrate("example:asia", epsilon=1.0,
                                                                             protected=["lung"]), random_state=0),
         r"different instantiations or quilt sets"),
        ("two curves", [dp], lambda: dp(other_curve), r"different prior classes or secrets"),
        ("two policies", [blow], lambda: blow(other_policy), r"different policies"),
        ("MQM then curve", [mqm], dp, r"covers this mix"),
        ("curve then MQM", [dp], mqm, r"covers this mix"),
        ("Blowfish then MQM", [blow], mqm, r"holds Blowfish releases.*another kind"),
        ("MQM then Blowfish", [mqm], blow, r"refuses a Blowfish release"),
        ("after a single", [single], mqm, r"holds a query-specific release"),
        ("single after", [mqm], single, r"cannot compose .* with the 1 release"),
        ("two singles", [single], single, r"cannot compose .* with the 1 release"),
    ]


@pytest.mark.parametrize("case", range(20))
def test_every_refusal_of_the_accountant_is_one_sentence_and_records_nothing(case):
    name, first, refused, pattern = _refusal_cases()[case]
    acc = PrivacyAccountant()
    for make in first:
        acc.charge(make())
    with pytest.raises((CompositionError, ParameterError), match=pattern) as info:
        (acc.record if name == "not charged" else acc.charge)(refused())
    msg = str(info.value)
    assert "\n" not in msg and msg.endswith(".") and len(acc.entries) == len(first), name


def test_the_budget_refusal_names_the_theorem():
    cal = puffgm.calibrate("example:asia", epsilon=1.0)
    acc = PrivacyAccountant(budget=1.5)
    release_laplace(1.0, cal, accountant=acc, random_state=0)
    with pytest.raises(Exception, match=r"to 2 \(Song, Wang and Chaudhuri 2017, Theorem 4.4.*over the budget of 1.5"):
        release_laplace(1.0, cal, accountant=acc, random_state=1)
    assert len(acc.entries) == 1
