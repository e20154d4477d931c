"""Every release record derives from puffgm.core.release.Release and explains and serialises itself;
the accountant composes by the ``release.composition`` object and refuses anything else."""

import dataclasses
import importlib
import inspect
import json
import math
import pkgutil
from types import SimpleNamespace

import numpy as np
import pytest

import puffgm
from puffgm.accounting import THEOREM_7, THEOREM_BLOWFISH, THEOREM_MQM, PrivacyAccountant
from puffgm.blowfish import Domain, Policy, line_graph
from puffgm.blowfish.mechanisms import BlowfishComposition, BlowfishRelease, laplace_mechanism, release_histogram
from puffgm.core.composition import Composition, HeldAlone, Uncomposable
from puffgm.core.curve import curve_from_points
from puffgm.core.release import CalibratedRelease, Release, jsonable
from puffgm.exceptions import CompositionError, PuffgmError
from puffgm.framework.cautionary import flu_clique
from puffgm.framework.continuous import (
    ContinuousRelease,
    release_aggregate_sum,
    release_relative_error,
    release_sum_absolute_error,
)
from puffgm.framework.wasserstein import WassersteinRelease, calibrate_wasserstein, release_wasserstein
from puffgm.mechanisms.laplace import MarkovQuiltComposition, MarkovQuiltRelease, release_laplace
from puffgm.mechanisms.optimal_noise import OptimalNoiseRelease
from puffgm.mechanisms.panel import PanelMarkovQuiltRelease, PanelRelease
from puffgm.mechanisms.pufferfish import CurveComposition, PufferfishLaplace, PufferfishRelease, PufferfishTopK
from puffgm.mechanisms.query import QueryRelease
from puffgm.mechanisms.workload import WorkloadRelease
from puffgm.networks.calibration import calibrate

# These tests hand the accountant records directly (charge, record, make_release): the user vouches for them.
pytestmark = pytest.mark.usefixtures("honest_but_curious")

CURVE = curve_from_points({1: 2.0, 2: 0.8, 3: 0.3, 4: 0.05}, n_entries=30, fingerprint="toy")
RELEASE_CLASSES = {MarkovQuiltRelease: MarkovQuiltComposition, PufferfishRelease: CurveComposition,
                   BlowfishRelease: BlowfishComposition, ContinuousRelease: Uncomposable, QueryRelease: HeldAlone,
                   OptimalNoiseRelease: HeldAlone, WorkloadRelease: HeldAlone, PanelRelease: HeldAlone,
                   PanelMarkovQuiltRelease: MarkovQuiltComposition}
#: The composition class of each kind of release made by ``_releases``.
COMPOSITION_OF = {"markov quilt": MarkovQuiltComposition, "pufferfish laplace": CurveComposition,
                  "pufferfish top-k": CurveComposition, "blowfish laplace": BlowfishComposition,
                  "blowfish histogram": BlowfishComposition, "blowfish without scale": BlowfishComposition,
                  "continuous sum": Uncomposable, "continuous relative": Uncomposable,
                  "continuous aggregate": Uncomposable, "wasserstein": HeldAlone}


@pytest.fixture(scope="module")
def mqm_calibration():
    return calibrate("example:cancer", epsilon=1.0)


@pytest.fixture(scope="module")
def wasserstein_calibration():
    inst, count = flu_clique()
    return calibrate_wasserstein(inst, count, epsilon=1.0)


def _releases(mqm_calibration, wasserstein_calibration, seed):
    """One real release of every kind, from seeded (not-for-production) noise."""
    policy = Policy(line_graph(Domain.ordered(10)))
    return {
        "markov quilt": release_laplace([3.0, 4.0], mqm_calibration, random_state=seed, label="counts"),
        "pufferfish laplace": PufferfishLaplace(CURVE, epsilon=1.0).release(3.0, random_state=seed),
        "pufferfish top-k": PufferfishTopK(CURVE, epsilon=1.5, k=2).release(
            [4.0, 1.0, 3.0], candidates=["a", "b", "c"], random_state=seed),
        "blowfish laplace": laplace_mechanism(3.0, policy, epsilon=1.0, sensitivity=1.0, random_state=seed),
        "blowfish histogram": release_histogram([0, 1, 1, 7], policy, epsilon=0.5, random_state=seed),
        "blowfish without scale": BlowfishRelease(np.zeros(2), "SuLQ k-means", 1.0, math.nan, math.nan, False,
                                                  "test", policy.key, False, None, "He et al. 2014, section 6"),
        "continuous sum": release_sum_absolute_error([1.0, 2.0], k=1.0, epsilon=1.0, random_state=seed),
        "continuous relative": release_relative_error([1.0, 2.0, 4.0], c=0.5, epsilon=1.0, random_state=seed),
        "continuous aggregate": release_aggregate_sum([1.0, 2.0], delta=1.0, epsilon=1.0, random_state=seed),
        "wasserstein": release_wasserstein(wasserstein_calibration, 2.0, random_state=seed),
    }


def _release_classes_in_puffgm():
    found = set()
    for info in pkgutil.walk_packages(puffgm.__path__, "puffgm."):
        if info.name.endswith("__main__") or ".cli" in info.name or ".experiments" in info.name:
            continue
        mod = importlib.import_module(info.name)
        found |= {obj for name, obj in vars(mod).items()
                  if inspect.isclass(obj) and name.endswith("Release") and obj.__module__ == mod.__name__
                  and obj not in (Release, CalibratedRelease)}
    return found


def test_every_release_class_derives_from_release_and_names_its_composition(mqm_calibration,
                                                                           wasserstein_calibration):
    assert _release_classes_in_puffgm() == set(RELEASE_CLASSES)
    assert WassersteinRelease is QueryRelease  # one record for the Wasserstein mechanism
    for cls in RELEASE_CLASSES:
        assert issubclass(cls, Release) and dataclasses.is_dataclass(cls)
        assert cls.__dataclass_params__.frozen and isinstance(inspect.getattr_static(cls, "composition"), property)
    for kind, rel in _releases(mqm_calibration, wasserstein_calibration, 0).items():
        comp = rel.composition
        assert type(comp) is COMPOSITION_OF[kind] and isinstance(comp, Composition), kind
        assert dataclasses.is_dataclass(comp) and comp.__dataclass_params__.frozen and comp.epsilon == rel.epsilon
        assert type(comp) is RELEASE_CLASSES[type(rel)] and comp.units is None


@pytest.mark.parametrize("kind", ["markov quilt", "pufferfish laplace", "pufferfish top-k", "blowfish laplace",
                                  "blowfish histogram", "blowfish without scale", "continuous sum",
                                  "continuous relative", "continuous aggregate", "wasserstein"])
def test_to_dict_is_json_and_reproducible_and_explain_works(kind, mqm_calibration, wasserstein_calibration):
    rel = _releases(mqm_calibration, wasserstein_calibration, 7)[kind]
    d = rel.to_dict()
    text = json.dumps(d, allow_nan=False)
    assert {"kind", "value", "epsilon", "mechanism", "prior", "theorem"} <= set(d)
    assert d["kind"] == type(rel).__name__ and d["epsilon"] == rel.epsilon > 0
    assert isinstance(d["prior"], str) and d["prior"] and d["prior"] == rel.prior
    assert isinstance(d["theorem"], str) and d["theorem"] and isinstance(d["mechanism"], str)
    assert "true_value" not in d and not any("true" in f.name for f in dataclasses.fields(rel))  # no exact answer
    assert json.dumps(_releases(mqm_calibration, wasserstein_calibration, 7)[kind].to_dict(),
                      allow_nan=False) == text  # the same seed gives the same record
    line = rel.explain()
    assert isinstance(line, str) and "\n" not in line and str(rel) == line
    assert "NOT FOR PRODUCTION" in line and rel.secure is False


def test_to_dict_keeps_the_release_facts(mqm_calibration, wasserstein_calibration):
    rels = _releases(mqm_calibration, wasserstein_calibration, 0)
    mqm = rels["markov quilt"].to_dict()
    assert mqm["value"] == list(rels["markov quilt"].value) and mqm["details"]["quilt_key"] == rels["markov quilt"].quilt_key
    assert mqm_calibration.fingerprint in mqm["prior"]
    top = rels["pufferfish top-k"].to_dict()
    assert set(top["value"]) <= {"a", "b", "c"} and top["epsilon_puffer"] == 1.5 and "toy" in top["prior"]
    assert rels["blowfish without scale"].to_dict()["scale"] is None  # NaN becomes null
    assert "Blowfish policy" in rels["blowfish laplace"].to_dict()["prior"]
    assert rels["wasserstein"].to_dict()["calibration"]["W"] == wasserstein_calibration.W
    assert "independent records" in rels["continuous sum"].prior
    assert rels["continuous aggregate"].prior.startswith("every prior;")


def test_jsonable_makes_plain_json():
    x = {"a": np.arange(3), "b": (1.5, math.inf), "c": frozenset({"y", "x"}), 4: np.float64(-math.nan),
         "d": np.int64(2), "e": curve_from_points({1: 0.5}, n_entries=2, fingerprint="f")}
    out = jsonable(x)
    json.dumps(out, allow_nan=False)
    assert out["a"] == [0, 1, 2] and out["b"] == [1.5, None] and out["c"] == ["x", "y"] and out["4"] is None
    assert out["d"] == 2 and out["e"]["fingerprint"] == "f"


def test_accountant_dispatches_on_composition(mqm_calibration, wasserstein_calibration):
    rels = _releases(mqm_calibration, wasserstein_calibration, 1)
    acc = PrivacyAccountant()
    acc.charge(rels["pufferfish laplace"])
    acc.charge(rels["pufferfish top-k"])
    assert acc.theorem == THEOREM_7 and [e.kind for e in acc.entries] == ["CurveComposition"] * 2
    mqm = PrivacyAccountant()
    first = release_laplace([3.0, 4.0], mqm_calibration, accountant=mqm, random_state=1)  # carries its quilt sets
    release_laplace(1.0, mqm_calibration, accountant=mqm, random_state=2)
    assert mqm.theorem == THEOREM_MQM and mqm.total == pytest.approx(2.0)
    with pytest.raises(CompositionError, match="already recorded"):
        mqm.record(first)
    blow = PrivacyAccountant()
    blow.charge(rels["blowfish laplace"])
    assert blow.theorem == THEOREM_BLOWFISH and blow.total == pytest.approx(1.0)
    with pytest.raises(CompositionError, match="section 4"):
        PrivacyAccountant().charge(rels["continuous sum"])
    alone = PrivacyAccountant()
    release_wasserstein(wasserstein_calibration, 2.0, random_state=1, accountant=alone)
    assert alone.total == 1.0 and alone.report().closed == (None,)
    with pytest.raises(CompositionError, match="cannot compose Wasserstein Mechanism"):
        release_wasserstein(wasserstein_calibration, 2.0, random_state=2, accountant=alone)


@pytest.mark.parametrize("obj", [SimpleNamespace(epsilon=1.0, mechanism="a homemade mechanism", secure=True),
                                 3.0, {"epsilon": 1.0}])
def test_accountant_refuses_what_is_not_a_release_in_one_line(obj):
    acc = PrivacyAccountant(budget=5.0)
    with pytest.raises(CompositionError) as info:
        acc.record(obj)
    msg = str(info.value)
    assert isinstance(info.value, PuffgmError) and "\n" not in msg and "Release" in msg and type(obj).__name__ in msg
    assert acc.entries == ()


def test_accountant_budget_is_keyword_only():
    with pytest.raises(TypeError):
        PrivacyAccountant(8.0)
    assert PrivacyAccountant(budget=8.0).budget == 8.0
