"""save_prior / load_prior_class: network classes (bootstrap members, interval and odd state names) and
linear-Gaussian classes round-trip exactly: same fingerprint, same CPD bits, same calibrations."""

import json

import numpy as np
import pandas as pd
import pytest

import puffgm
from puffgm.api.persist import FORMAT, is_saved_prior, prior_to_dict
from puffgm.exceptions import PriorError
from puffgm.networks.fit import bin_columns

ODD = ('ja, "sí" ü', "nein\t[x] {}")


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(5)
    n = 600
    smoke = rng.random(n) < 0.4
    lung = rng.random(n) < np.where(smoke, 0.3, 0.05)
    age = rng.normal(40, 12, n) + 10 * lung
    frame = pd.DataFrame({"smoke": np.where(smoke, *ODD), "lung": lung.astype(int) + 1, "age": age})
    frame = bin_columns(frame, {"age": 3}, quantiles=True)
    return puffgm.fit_network(frame, dag=[("smoke", "lung"), ("lung", "age")], bootstrap=2, random_state=11)


@pytest.fixture(scope="module")
def saved(fitted, tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "survey.json"
    fp = puffgm.save_prior(fitted, path)
    return path, fp


def test_the_file_is_the_documented_format(fitted, saved):
    path, fp = saved
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == FORMAT and data["version"] == 1 and data["kind"] == "bayesian-network"
    assert data["fingerprint"] == fp == fitted.fingerprint
    assert data["states"]["smoke"] == list(fitted.states["smoke"]) and set(data["states"]["smoke"]) == set(ODD)
    assert data["states"]["age"][0].startswith("(") and len(data["members"]) == 3
    assert is_saved_prior(path) and is_saved_prior(str(path)) and is_saved_prior(data)


def test_round_trip_is_exact_member_by_member(fitted, saved):
    back = puffgm.load_prior_class(saved[0])
    assert back.fingerprint == fitted.fingerprint and back.nodes == fitted.nodes
    assert back.states == fitted.states and back.parents == fitted.parents
    assert back.notes == fitted.notes and any("seed: random_state=11" in n for n in back.notes)
    for a, b in zip(fitted.priors, back.priors, strict=True):
        assert a.name == b.name and a.notes == b.notes and a.fingerprint == b.fingerprint
        for node in a.nodes:
            assert a.cpts[node].tobytes() == b.cpts[node].tobytes()


def test_round_trip_gives_the_same_calibrations(fitted, saved):
    path = saved[0]
    a = puffgm.calibrate(fitted, epsilon=2.0)
    b = puffgm.calibrate(str(path), epsilon=2.0)
    assert abs(a.sigma_max - b.sigma_max) <= 1e-12 * a.sigma_max
    q = {"count": "2", "nodes": ["lung"]}
    qa = puffgm.calibrate_query(fitted, q, epsilon=1.0)
    qb = puffgm.calibrate_query(path, q, epsilon=1.0)
    assert abs(qa.scale - qb.scale) <= 1e-12 * qa.scale
    assert puffgm.as_prior(str(path)).fingerprint == fitted.fingerprint


def test_bins_and_integers_keep_their_natural_order(fitted):
    age = fitted.states["age"]
    lefts = [float(s[1:].split(",")[0]) for s in age]
    assert lefts == sorted(lefts) and fitted.states["lung"] == ("1", "2")


def test_a_changed_file_is_refused(saved, tmp_path):
    data = json.loads(saved[0].read_text(encoding="utf-8"))
    cpd = data["members"][1]["cpds"]["smoke"]
    cpd[0], cpd[1] = cpd[1], cpd[0]               # P(smoke) of bootstrap 1 swapped
    bad = tmp_path / "changed.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(PriorError, match="fingerprint .* but its contents give"):
        puffgm.load_prior_class(bad)
    del data["fingerprint"]                       # accepted once the fingerprint is dropped
    assert len(puffgm.load_prior_class(data)) == 3
    cpd[0] += 1e-9
    with pytest.raises(PriorError, match="off 1 by .*: a saved network holds normalised CPDs"):
        puffgm.load_prior_class(data)


@pytest.mark.parametrize(("change", "message"), [
    ({"version": 7}, "has format version 7; this puffgm reads version 1 to 1"),
    ({"kind": "hmm"}, "has the kind 'hmm'; kinds: bayesian-network, linear-gaussian, markov-chain, chain-box"),
    ({"members": []}, "The 'members' of the saved prior must be a non-empty list of objects"),
])
def test_bad_files_are_one_sentence(saved, change, message):
    data = json.loads(saved[0].read_text(encoding="utf-8")) | change
    with pytest.raises(PriorError, match=message):
        puffgm.load_prior_class(data)


def test_a_bundled_network_round_trips():
    asia = puffgm.load_prior_class("example:asia")
    back = puffgm.load_prior_class(json.dumps(prior_to_dict(asia)))
    assert back.fingerprint == asia.fingerprint


def test_linear_gaussian_class_round_trips(tmp_path):
    from puffgm.gaussian.networks import GaussianPriorClass, LinearGaussianPrior

    def member(coef, name):
        return LinearGaussianPrior(["A", "B"], {"B": ["A"]}, {"B": [coef]}, {"A": 0.1}, {"A": 1.0, "B": 0.5},
                                   (-3.0, 3.0), 0.5, name=name)

    cls = GaussianPriorClass([member(0.6, "low"), member(0.1 + 0.2, "odd float")])
    path = tmp_path / "gauss.json"
    assert puffgm.save_prior(cls, path) == cls.fingerprint
    back = puffgm.load_prior_class(path)
    assert isinstance(back, GaussianPriorClass) and back.fingerprint == cls.fingerprint
    assert back.priors[1].coefficients["B"] == (0.1 + 0.2,)
    a, b = puffgm.calibrate(cls, epsilon=2.0), puffgm.calibrate(path, epsilon=2.0)
    assert abs(a.sigma_max - b.sigma_max) <= 1e-12 * a.sigma_max
