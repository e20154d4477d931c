"""States in their natural order and by name: months numerically, bins by their left edge with clean labels;
scores and counts name states; a value that is no state of its node is refused, never read as an index."""

import numpy as np
import pandas as pd
import pytest

import puffgm
from puffgm.core.query import SumQuery
from puffgm.core.records import RecordLayout
from puffgm.core.states import match_state, natural_order
from puffgm.exceptions import ParameterError, PriorError
from puffgm.networks.fit import bin_columns


def test_natural_order_of_numbers_intervals_and_names():
    assert natural_order(["1", "10", "11", "12", "2"]) == ["1", "2", "10", "11", "12"]
    assert natural_order(["(0.478, 8.0]", "(15.5, 23.0]", "(8.0, 15.5]"]) == \
        ["(0.478, 8.0]", "(8.0, 15.5]", "(15.5, 23.0]"]
    assert natural_order([pd.Interval(2, 3), pd.Interval(-1, 2)]) == [pd.Interval(-1, 2), pd.Interval(2, 3)]
    assert natural_order(["b", "10", "a", "2", "[0, 1)"]) == ["2", "10", "[0, 1)", "a", "b"]


def test_bins_are_ordered_by_left_edge_with_clean_labels():
    x = pd.Series([9.709000000000001, 17.193, 30.0, 0.478, 12.0, 25.5, 3.0, 21.0, 5.0])
    cut = bin_columns(pd.DataFrame({"x": x}), {"x": 3}, quantiles=True)["x"]
    labels = list(cut.cat.categories)
    assert cut.cat.ordered and len(labels) == 3
    assert all(len(edge) <= 5 for lab in labels for edge in lab[1:-1].split(", ")), labels
    assert natural_order(reversed(labels)) == labels
    named = bin_columns(pd.DataFrame({"x": x}), {"x": 3}, labels={"x": ["low", "mid", "high"]})["x"]
    assert list(named.cat.categories) == ["low", "mid", "high"] and named[3] == "low" and named[2] == "high"
    with pytest.raises(PriorError, match="Column 'x' is cut into 3 bins, so it needs 3 distinct labels; got 2"):
        bin_columns(pd.DataFrame({"x": x}), {"x": 3}, labels={"x": ["low", "high"]})


def test_fit_keeps_month_and_bin_order(tmp_path):
    rng = np.random.default_rng(0)
    month = rng.integers(1, 13, 300)
    frame = pd.DataFrame({"month": month.astype(str), "x": rng.normal(size=300) + month})
    frame = bin_columns(frame, {"x": 4})
    pc = puffgm.fit_network(frame, dag=[("month", "x")])
    assert pc.states["month"] == tuple(str(m) for m in range(1, 13))    # '1', '2', ..., not '1', '10', ...
    assert pc.states["x"] == tuple(frame["x"].cat.categories)
    path = tmp_path / "months.json"
    puffgm.save_prior(pc, path)
    assert puffgm.load_prior_class(path).states == pc.states
    frame.to_csv(tmp_path / "months.csv", index=False)                  # written and read back: same order
    again = puffgm.fit_network(pd.read_csv(tmp_path / "months.csv"), dag=[("month", "x")])
    assert again.states == pc.states and again.fingerprint == pc.fingerprint


def test_a_number_names_a_numeric_state_and_is_never_an_index():
    rate = ("1", "2", "3", "4", "5")
    assert match_state(3.0, rate, "rate") == match_state("3.0", rate, "rate") == "3"
    with pytest.raises(ParameterError, match="Node 'rate' has no state 0; its states are 1, 2, 3, 4, 5."):
        match_state(0, rate, "rate")
    assert match_state(0, ("yes", "no"), "rain") == "yes"     # positions only where names are not numbers
    layout = RecordLayout(nodes=("rate", "rain"), states=(rate, ("yes", "no")))
    assert layout.read({"rate": np.float64(5.0), "rain": "no"}) == {"rate": "5", "rain": "no"}
    with pytest.raises(ParameterError, match="Node 'rate' has no state 0"):
        layout.read({"rate": 0, "rain": "no"})


def test_scores_and_counts_name_states():
    states = {"rate": ("1", "2", "3", "4", "5"), "rain": ("yes", "no")}
    bound = SumQuery({"scores": {"rate": {"4": 1, 5: 2}, "rain": {"no": 1}}}).bind(["rate", "rain"], states)
    assert bound.evaluate({"rate": "5", "rain": "no"}) == 3 and bound.evaluate({"rate": 1.0, "rain": "yes"}) == 0
    with pytest.raises(ParameterError, match=r"Node 'rate' has no state '6'; its states are 1, 2, 3, 4, 5."):
        SumQuery({"scores": {"rate": {"6": 1}}}).bind(["rate"], states)
    with pytest.raises(ParameterError, match="scores the state '4' of node 'rate' twice"):
        SumQuery({"scores": {"rate": {"4": 1, 4.0: 2}}}).bind(["rate"], states)
    count = SumQuery({"count": 1}).bind(["rate"], states)     # the state "1", not the index 1 (state "2")
    assert count.scores == ((1, 0, 0, 0, 0),)
    with pytest.raises(ParameterError, match="counts 0, which is not a state of node 'rate'"):
        SumQuery({"count": 0}).bind(["rate"], states)
    assert SumQuery({"count": 0}).bind(["rain"], states).scores == ((1, 0),)
