"""save_prior / load_prior_class on chain classes and parameter boxes: exact round trips, same calibrations;
fit_chain's natural state order and its matching of observed values to given states."""

import json

import numpy as np
import pandas as pd
import pytest

import puffgm
from puffgm.api.persist import prior_to_dict
from puffgm.exceptions import PriorError


def _close(a, b):
    assert abs(a - b) <= 1e-12 * max(abs(a), 1.0), (a, b)


@pytest.fixture(scope="module")
def months():
    rng = np.random.default_rng(2)
    month = (np.arange(60) % 12) + 1
    month[rng.random(60) < 0.1] = 0       # a few "0" observations: a state like any other
    return pd.Series(month.astype(float))  # floats, as pandas reads a CSV column with gaps


def test_fitted_chain_round_trips_exactly(months, tmp_path):
    cc = puffgm.fit_chain(months, length=8)
    assert cc.states == tuple(str(m) for m in range(13))  # numeric order, not '0', '1', '10', '11', '12', '2'
    path = tmp_path / "months.json"
    assert puffgm.save_prior(cc, path) == cc.fingerprint
    back = puffgm.load_prior_class(path)
    assert back.fingerprint == cc.fingerprint and back.states == cc.states
    assert back.notes == cc.notes and back.length_source == cc.length_source == "given"
    assert back.members[0].transition.tobytes() == cc.members[0].transition.tobytes()
    assert back.members[0].stationary.tobytes() == cc.members[0].stationary.tobytes()
    _close(puffgm.calibrate(cc, epsilon=1.0).sigma_max, puffgm.calibrate(str(path), epsilon=1.0).sigma_max)
    q = {"count": "12"}
    _close(puffgm.calibrate_query(cc, q, epsilon=1.0).scale, puffgm.calibrate_query(path, q, epsilon=1.0).scale)


def test_family_with_vector_and_any_initials_round_trips(tmp_path):
    third = 1 / 3
    cc = puffgm.ChainPriorClass.from_family([[[0.9, 0.1], [0.4, 0.6]], [[third, 1 - third], [0.5, 0.5]]],
                                            initials=[[0.7, 0.3], "any"], length=6, states=["lo", "hi ü"])
    data = json.loads(json.dumps(prior_to_dict(cc)))
    assert data["kind"] == "markov-chain" and data["members"][1]["initial"] == "any"
    back = puffgm.load_prior_class(data)
    assert back.fingerprint == cc.fingerprint and [m.initial_kind for m in back.members] == ["vector", "any"]
    for method in ("exact", "approx"):
        _close(puffgm.calibrate(cc, epsilon=2.0, method=method).sigma_max,
               puffgm.calibrate(back, epsilon=2.0, method=method).sigma_max)


def test_parameter_box_round_trips(tmp_path):
    box = puffgm.ChainParameterBox(p0=(0.2, 0.8), p1=(0.3, 0.7), initial="any", length=20, states=["off", "on"])
    path = tmp_path / "box.json"
    puffgm.save_prior(box, path)
    back = puffgm.load_prior_class(path)
    assert isinstance(back, puffgm.ChainParameterBox) and back.fingerprint == box.fingerprint
    assert back.states == ("off", "on")
    for method in ("exact", "approx"):
        _close(puffgm.calibrate(box, epsilon=1.0, method=method).sigma_max,
               puffgm.calibrate(path, epsilon=1.0, method=method).sigma_max)


def test_a_renormalised_row_is_refused_on_reading():
    cc = puffgm.ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], length=3)
    data = prior_to_dict(cc)
    data["members"][0]["transition"][0][0] = 0.9 + 1e-9
    del data["fingerprint"]
    with pytest.raises(PriorError, match="off 1 by .*: a saved chain holds normalised rows"):
        puffgm.load_prior_class(data)


def test_observed_values_match_given_states_by_number():
    cc = puffgm.fit_chain([1.0, 2.0, 3.0, 1.0], states=["1", "2", "3"], tau=0)
    assert cc.members[0].transition[0].tolist() == [0.0, 1.0, 0.0]
    with pytest.raises(PriorError, match=r"Observed state 0 is not in the given state list \(1, 2, 3\)"):
        puffgm.fit_chain([0, 1, 2], states=["1", "2", "3"])
    with pytest.raises(PriorError, match="Observed state 0 is not in the given state list"):
        puffgm.fit_chain([0, 1], states=["a", "b"])     # an integer is never read as a position here


def test_saved_classes_pool_into_one(tmp_path):
    a = puffgm.ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], length=4)
    b = puffgm.ChainPriorClass.from_matrices([[0.7, 0.3], [0.2, 0.8]], length=4)
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for cls, path in zip((a, b), paths, strict=True):
        puffgm.save_prior(cls, path)
    pooled = puffgm.load_prior_class(paths)
    assert len(pooled) == 2 and pooled.members[1].fingerprint == b.members[0].fingerprint
    assert puffgm.as_prior([str(p) for p in paths]).fingerprint == pooled.fingerprint
    puffgm.save_prior(puffgm.load_prior_class("example:asia"), tmp_path / "asia.json")
    with pytest.raises(PriorError, match="not of one kind"):
        puffgm.load_prior_class([paths[0], tmp_path / "asia.json"])
