"""fit_chain / ChainPriorClass.fit read data as values: lists, arrays, Series, data frames, gaps, T."""

import numpy as np
import pandas as pd
import pytest

import puffgm
from puffgm.chains import ChainPriorClass
from puffgm.chains.data import discretise, read_traces
from puffgm.exceptions import PriorError

WORDS = ["up", "down", "flat", "up", "up", "down", "flat", "flat", "up", "down"]


def hand_counts(runs, states):
    c = np.zeros((len(states), len(states)))
    for r in runs:
        for a, b in zip(r[:-1], r[1:], strict=True):
            c[states.index(a), states.index(b)] += 1
    return c


def rows(counts):
    k = counts.shape[0]
    s = counts.sum(axis=1, keepdims=True)
    return np.where(s > 0, counts / np.where(s > 0, s, 1), 1 / k)


def test_series_of_strings_fits_the_chain_over_the_strings():
    cc = puffgm.fit_chain(pd.Series(WORDS), tau=0)
    assert cc.states == ("down", "flat", "up")
    # by hand: up->down 3, down->flat 2, flat->up 2, up->up 1, flat->flat 1 (9 steps)
    expected = np.array([[0, 2, 0], [0, 1, 2], [3, 0, 1]], dtype=float)
    assert hand_counts([WORDS], list(cc.states)).tolist() == expected.tolist()
    np.testing.assert_array_equal(cc.members[0].transition, rows(expected))
    assert cc.length == len(WORDS) and cc.length_source == "longest trace"


def test_classmethod_shares_the_code():
    a = ChainPriorClass.fit(pd.Series(WORDS), tau=0)
    b = puffgm.fit_chain(WORDS, tau=0)
    assert a.fingerprint == b.fingerprint and a.notes[1:] == b.notes[1:]


def test_numeric_series_and_nan_gaps_split_runs():
    s = pd.Series([0, 1, 1, np.nan, 0, 0, 2, np.nan, np.nan, 1, 0])
    cc = puffgm.fit_chain(s, tau=0)
    assert cc.states == ("0", "1", "2")
    runs = [[0, 1, 1], [0, 0, 2], [1, 0]]
    counts = hand_counts(runs, [0, 1, 2])
    assert counts.sum() == 5                              # 1->0 across the gap is not counted
    np.testing.assert_array_equal(cc.members[0].transition, rows(counts))
    assert cc.length == 11                                # the whole trace, gaps included
    assert any("longest gap-free run has 3" in n for n in cc.notes)


def test_leading_and_trailing_gaps_do_not_count_in_T():
    cc = puffgm.fit_chain([None, "a", "b", None, "a", None, None], tau=0)
    assert cc.length == 4


def test_length_given_is_reported():
    cc = puffgm.fit_chain(WORDS, length=50)
    assert cc.length == 50 and cc.length_source == "given"
    assert any(n.startswith("T = 50 records, given") for n in cc.notes)


def test_wide_data_frame_one_trace_per_column():
    df = pd.DataFrame({"a": ["x", "y", "y", "x"], "b": ["y", "y", None, "x"]})
    cc = puffgm.fit_chain(df, tau=0)
    counts = hand_counts([["x", "y", "y", "x"], ["y", "y"], ["x"]], ["x", "y"])
    np.testing.assert_array_equal(cc.members[0].transition, rows(counts))
    assert cc.length == 4 and "one trace per column (2)" in cc.notes[0]


def test_long_data_frame_by_id_and_order():
    df = pd.DataFrame({"who": ["p", "q", "p", "q", "p"], "t": [3, 1, 1, 2, 2], "state": ["b", "a", "a", "a", "b"]})
    tr = read_traces(df, id_column="who", order_column="t")
    assert tr.traces == (("a", "b", "b"), ("a", "a"))
    cc = puffgm.fit_chain(df, id_column="who", order_column="t", tau=0)
    np.testing.assert_array_equal(cc.members[0].transition, rows(hand_counts(tr.traces, ["a", "b"])))
    assert cc.length == 3


def test_long_frame_needs_the_value_column_when_ambiguous():
    df = pd.DataFrame({"who": [1, 1], "s": ["a", "b"], "extra": [0, 1]})
    with pytest.raises(PriorError, match="value_column="):
        puffgm.fit_chain(df, id_column="who")
    assert puffgm.fit_chain(df, id_column="who", value_column="s").states == ("a", "b")
    with pytest.raises(PriorError, match="'nope' is not a column"):
        puffgm.fit_chain(df, id_column="nope")


def test_list_array_and_list_of_traces():
    assert puffgm.fit_chain(np.array(["a", "b", "a"])).states == ("a", "b")
    assert puffgm.fit_chain([["a", "b"], ["c", "a"]]).k == 3
    assert puffgm.fit_chain([pd.Series(["a", "b"]), np.array(["b", "c"])]).k == 3
    assert puffgm.fit_chain(np.array([[0, 1, 1], [1, 0, 0]]), tau=0).length == 3   # one trace per row


@pytest.mark.parametrize("bad, msg", [
    ("updownflat", "A string is one state"),
    (["a", ["b", "c"]], "mixes traces"),
    ({"a", "b"}, "A set has no order"),
    ([None, np.nan], "No observed states"),
    (pd.Series([0.5, 1.25, 2.0]), "non-integral numbers"),
    ([["ab"], "cd"], "mixes traces"),
])
def test_refusals_are_one_sentence(bad, msg):
    with pytest.raises(PriorError, match=msg) as e:
        puffgm.fit_chain(bad)
    assert "\n" not in str(e.value)


def test_column_options_need_a_frame():
    with pytest.raises(PriorError, match="columns of a pandas DataFrame"):
        puffgm.fit_chain(["a", "b"], id_column="id")


def test_measurements_binned_with_gaps():
    x = pd.Series([1.0, 2.5, np.nan, 9.0, 8.5, 1.2])
    s = discretise(x, 3)
    assert np.isnan(s[2]) and s[[0, 1, 3, 4, 5]].tolist() == [0, 0, 2, 2, 0]
    cc = puffgm.fit_chain(s, states=range(3))          # state 1 is never observed: list the states
    assert cc.states == ("0", "1", "2") and cc.length == 6


def test_states_given_and_unknown_value():
    cc = puffgm.fit_chain(["a", "b"], states=["b", "a", "c"])
    assert cc.states == ("b", "a", "c")
    with pytest.raises(PriorError, match="'z' is not in the given state list"):
        puffgm.fit_chain(["a", "z"], states=["a", "b"])


def test_fitted_chain_calibrates():
    cc = puffgm.fit_chain(pd.Series(WORDS * 3), length=20)
    res = puffgm.calibrate(cc, epsilon=1.0)
    assert res.sigma_max > 0


def test_dataframe_given_as_prior_is_refused_with_the_fitters():
    df = pd.DataFrame({"mean_radius": [1, 2]})
    with pytest.raises(PriorError, match=r"fit_network\(frame\)"):
        puffgm.calibrate(df, epsilon=1.0)
    with pytest.raises(PriorError, match=r"fit_chain\(series\)"):
        puffgm.influence_curve(df["mean_radius"])
