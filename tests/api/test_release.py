"""``puffgm.release``: one release function for every calibration, the true value computed from the data."""

import dataclasses

import numpy as np
import pytest

import puffgm
from puffgm.accounting.accountant import THEOREM_7
from puffgm.api.release import true_value
from puffgm.blowfish import Domain, Policy, distance_threshold_graph
from puffgm.blowfish.calibration import BlowfishCalibration
from puffgm.blowfish.mechanisms import laplace_mechanism, release_cumulative, release_histogram, release_linear_sum
from puffgm.exceptions import CompositionError, ParameterError
from puffgm.mechanisms.laplace import release_laplace
from puffgm.mechanisms.optimal_noise import release_optimal_noise
from puffgm.mechanisms.pufferfish import pufferfish_laplace
from puffgm.mechanisms.query import release_query
from puffgm.mechanisms.workload import release_workload

pd = pytest.importorskip("pandas")

#: One record of ASIA: 3 nodes in state "yes" (smoke, bronc, dysp).
RECORD = {"asia": "no", "tub": "no", "smoke": "yes", "lung": "no", "bronc": "yes", "either": "no", "xray": "no",
          "dysp": "yes"}
HALVES = [{"count": "yes", "nodes": ["asia", "tub", "smoke", "lung"], "name": "first"},
          {"count": "yes", "nodes": ["bronc", "either", "xray", "dysp"], "name": "second"}]
TRACE = [0, 1, 1, 0, 0, 1, 0, 0]
#: A Blowfish policy on an ordered domain of 10 values, and a data set of 6 individuals.
POLICY = Policy(distance_threshold_graph(Domain.ordered(10), 2))
DATA_SET = [0, 3, 3, 7, 9, 9]


@pytest.fixture(scope="module")
def cals():
    """Query calibrations of ASIA's count of "yes" by each query method."""
    return {m: puffgm.calibrate_query("example:asia", {"count": "yes"}, epsilon=1.0, method=m)
            for m in ("wasserstein", "optimal-laplace", "optimal-noise")}


@pytest.fixture(scope="module")
def chain():
    return puffgm.ChainPriorClass.from_matrices([[0.9, 0.1], [0.3, 0.7]], initial="stationary", length=len(TRACE))


# ------------------------------------------------------------------ each calibration type, both roads agree


@pytest.mark.parametrize("method", ["wasserstein", "optimal-laplace"])
def test_query_release_equals_the_manual_road(cals, method):
    cal = cals[method]
    rel = puffgm.release(cal, RECORD, random_state=7)
    assert rel.value == release_query(3.0, cal, random_state=7).value
    assert type(rel).__name__ == "QueryRelease" and not rel.secure


def test_optimal_noise_release_equals_the_manual_road(cals):
    cal = cals["optimal-noise"]
    rel = puffgm.release(cal, RECORD, random_state=7)
    assert rel.value == release_optimal_noise(3.0, cal.optimal_noise, random_state=7).value
    assert type(rel).__name__ == "OptimalNoiseRelease"


def test_workload_release_equals_the_manual_road():
    cal = puffgm.calibrate_workload("example:asia", HALVES, epsilon=1.0)
    assert true_value(cal, RECORD) == (1.0, 2.0)
    rel = puffgm.release(cal, RECORD, random_state=3)
    assert rel.value == release_workload([1.0, 2.0], cal, random_state=3).value
    assert len(rel.value) == 2


def test_workload_of_one_and_histogram_compute_their_values():
    one = puffgm.calibrate_workload("example:asia", [HALVES[0]], epsilon=1.0)
    assert true_value(one, RECORD) == (1.0,)
    hist = puffgm.calibrate_workload("example:asia", {"histogram": {}}, epsilon=1.0)
    assert hist.names == ("yes", "no") and true_value(hist, RECORD) == (3.0, 5.0)


def test_mqm_release_takes_the_answer():
    cal = puffgm.calibrate("example:asia", epsilon=4.0)
    rel = puffgm.release(cal, answer=3.0, random_state=0)
    assert rel.value == release_laplace(3.0, cal, random_state=0).value
    vec = puffgm.release(cal, answer=[1.0, 2.0], random_state=0)
    assert np.array_equal(vec.value, release_laplace([1.0, 2.0], cal, random_state=0).value)


@pytest.mark.parametrize("lipschitz", [None, 2.5])
def test_translation_release_equals_the_manual_road(lipschitz):
    curve = puffgm.influence_curve("example:asia")
    t = puffgm.translate(curve, epsilon=4.0)
    assert t.curve is curve and "curve" not in t.to_dict() and "curve=" not in repr(t)
    rel = puffgm.release(t, answer=3.0, lipschitz=lipschitz, random_state=5)
    manual = pufferfish_laplace(3.0, curve, epsilon=4.0, lipschitz=lipschitz or 1.0, random_state=5)
    assert rel == manual and rel.epsilon_dp == t.epsilon_dp and rel.curve_point == t.point
    assert type(rel).__name__ == "PufferfishRelease" and not rel.secure
    vec = puffgm.release(t, answer=[1.0, 2.0], random_state=5)
    assert np.array_equal(vec.value, pufferfish_laplace([1.0, 2.0], curve, epsilon=4.0, random_state=5).value)


def test_translation_from_a_prior_and_from_epsilon_dp_release_at_its_guarantee():
    t = puffgm.translate("example:asia", epsilon_dp=0.5)
    rel = puffgm.release(t, answer=3.0, random_state=1)
    assert rel.epsilon_puffer == t.epsilon_puffer and rel.epsilon_dp == pytest.approx(0.5, rel=1e-12)


def test_two_translation_releases_compose_by_theorem_7(tmp_path):
    t = puffgm.translate("example:asia", epsilon=2.0)
    acc = puffgm.PrivacyAccountant(budget=10.0, ledger=tmp_path / "curve.db")
    puffgm.release(t, answer=3.0, accountant=acc, label="count", random_state=0)
    puffgm.release(t, answer=[1.0, 2.0], lipschitz=2.0, accountant=acc, label="halves", random_state=1)
    assert acc.theorem == THEOREM_7 and [e.label for e in acc.entries] == ["count", "halves"]
    assert 2.0 < acc.total <= 4.0 + 1e-12  # Theorem 7: at most the sum, at least one release


@pytest.mark.parametrize("query, manual, extra", [
    ("histogram", release_histogram, {}),
    ("histogram", release_histogram, {"partition": [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]}),
    ("cumulative", release_cumulative, {}),
    ("linear_sum", release_linear_sum, {}),
])
def test_blowfish_release_from_the_data_set_equals_the_manual_road(query, manual, extra):
    cal = BlowfishCalibration(POLICY, epsilon=1.0, query=query, **extra)
    rel = puffgm.release(cal, DATA_SET, random_state=4)
    want = manual(DATA_SET, POLICY, epsilon=1.0, random_state=4, **extra)
    assert np.array_equal(rel.value, want.value) and rel.scale == want.scale == cal.scale
    assert "Blowfish" in rel.mechanism and "Blowfish" in rel.prior


def test_blowfish_release_of_an_answer_equals_laplace_mechanism(tmp_path):
    cal = BlowfishCalibration(POLICY, epsilon=0.5, sensitivity=2.0)
    acc = puffgm.PrivacyAccountant(budget=2.0, ledger=tmp_path / "blowfish.db")
    rel = puffgm.release(cal, answer=[4.0, 1.0], accountant=acc, random_state=2)
    want = laplace_mechanism([4.0, 1.0], POLICY, epsilon=0.5, sensitivity=2.0, random_state=2)
    assert np.array_equal(rel.value, want.value) and rel.scale == cal.scale == 4.0
    assert "Blowfish" in acc.theorem and "Blowfish" in acc.report().explain() and acc.total == 0.5


def test_chain_query_release_equals_the_manual_road(chain):
    cal = puffgm.calibrate_query(chain, {"count": "1"}, epsilon=1.0, method="optimal-laplace")
    assert cal.layout.trace and cal.layout.nodes[0] == "X1"
    rel = puffgm.release(cal, TRACE, random_state=5)
    assert rel.value == release_query(3.0, cal, random_state=5).value


# ------------------------------------------------------------------ the true value


def test_asia_record_in_every_form(cals):
    cal = cals["wasserstein"]
    assert true_value(cal, RECORD) == 3.0
    assert true_value(cal, pd.Series(RECORD)) == 3.0
    assert true_value(cal, pd.DataFrame([RECORD])) == 3.0
    by_index = {n: 0 if s == "yes" else 1 for n, s in RECORD.items()}  # state 0 is "yes"
    assert true_value(cal, by_index) == 3.0
    assert true_value(cal, {n: np.int64(v) for n, v in by_index.items()}) == 3.0


def test_scores_query_on_a_record():
    scores = {"scores": {"smoke": [2.5, 0], "dysp": [1, 0], "xray": [0, 4]}}
    cal = puffgm.calibrate_query("example:asia", scores, epsilon=1.0, baselines=False)
    assert true_value(cal, RECORD) == 2.5 + 1 + 4


def test_chain_trace_in_every_form(chain):
    cal = puffgm.calibrate_query(chain, {"scores": [0, 2]}, epsilon=1.0, baselines=False)
    want = 2.0 * sum(TRACE)
    for data in (TRACE, tuple(TRACE), np.array(TRACE), pd.Series(TRACE), pd.DataFrame({"state": TRACE}),
                 [float(x) for x in TRACE], [str(x) for x in TRACE]):
        assert true_value(cal, data) == want


def test_fitted_chain_reads_states_by_name():
    # states named "1" and "2" (str of the values): the value 1 is the state "1", not the index 1
    observed = [1, 2, 2, 1, 1, 2, 1, 1, 2, 2]
    cc = puffgm.fit_chain(observed)
    assert cc.states == ("1", "2")
    cal = puffgm.calibrate_query(cc, {"count": "2"}, epsilon=1.0, baselines=False)
    assert true_value(cal, observed) == 5.0


def test_chain_workload_histogram(chain):
    cal = puffgm.calibrate_workload(chain, {"histogram": {}}, epsilon=1.0, baselines=False)
    assert true_value(cal, TRACE) == (5.0, 3.0)


# ------------------------------------------------------------------ refusals, one sentence each


@pytest.mark.parametrize("data, match", [
    (pd.DataFrame([RECORD, RECORD]), "2 rows, but a calibration covers one database"),
    ([RECORD], "one record"),
    ({**RECORD, "smoker": "yes"}, "'smoker', which is not a node"),
    ({**RECORD, "smoke": "maybe"}, "no state 'maybe'"),
    ({**RECORD, "smoke": None}, "a gap"),
    ({**RECORD, "smoke": 5}, "no state 5"),
    ({k: v for k, v in RECORD.items() if k != "smoke"}, "no value for the scored node 'smoke'"),
    (None, "give one database, one record"),
])
def test_bad_records_are_refused(cals, data, match):
    with pytest.raises(ParameterError, match=match):
        puffgm.release(cals["wasserstein"], data)


@pytest.mark.parametrize("data, match", [
    (pd.DataFrame({"a": TRACE, "b": TRACE}), "2 columns, but a calibration covers one database"),
    (np.array([TRACE, TRACE]), "2 dimensions"),
    ([TRACE, TRACE], "several traces"),
    (TRACE[:-1], "7 state"),
    ("01100100", "one trace"),
    ({"X1": 0}, "one trace"),
    (TRACE[:-1] + [7], "no state 7"),
])
def test_bad_traces_are_refused(chain, data, match):
    cal = puffgm.calibrate_query(chain, {"count": "1"}, epsilon=1.0, baselines=False)
    with pytest.raises(ParameterError, match=match):
        puffgm.release(cal, data)


def test_a_query_calibration_refuses_a_typed_answer(cals):
    with pytest.raises(ParameterError, match="computed from the data"):
        puffgm.release(cals["wasserstein"], RECORD, answer=3.0)


def test_mqm_refuses_data_and_needs_an_answer():
    cal = puffgm.calibrate("example:asia", epsilon=4.0)
    with pytest.raises(ParameterError, match="any L-Lipschitz query, so puffgm cannot compute the answer from data"):
        puffgm.release(cal, RECORD)
    with pytest.raises(ParameterError, match="answer="):
        puffgm.release(cal)


def test_wrong_types_name_the_right_function(cals):
    mqm = puffgm.calibrate("example:asia", epsilon=4.0)
    workload = puffgm.calibrate_workload("example:asia", HALVES, epsilon=1.0, baselines=False)
    with pytest.raises(ParameterError, match=r"release it with release_query\(answer, cal\) or puffgm\.release"):
        release_laplace(3.0, cals["wasserstein"])
    with pytest.raises(ParameterError, match=r"release it with release_workload\(answers, cal\)"):
        release_laplace(3.0, workload)
    with pytest.raises(ParameterError, match=r"release it with release_laplace\(answer, cal\)"):
        release_query(3.0, mqm)
    with pytest.raises(ParameterError, match=r"release it with release_workload\(answers, cal\)"):
        release_query(3.0, workload)
    with pytest.raises(ParameterError, match=r"release it with release_query\(answer, cal\)"):
        release_workload([3.0], cals["wasserstein"])
    with pytest.raises(ParameterError, match=r"release it with release_laplace\(answer, cal\)"):
        release_workload([3.0], mqm)
    with pytest.raises(ParameterError, match="puffgm.calibrate_query"):
        release_query(3.0, 3.0)


@pytest.mark.parametrize("obj, match", [
    (3.0, "takes a calibration .*got float"),
    ({"scale": 1.0}, "got dict"),
    (None, "got NoneType"),
])
def test_release_refuses_what_is_no_calibration(obj, match):
    with pytest.raises(ParameterError, match=match):
        puffgm.release(obj, answer=1.0)


def test_release_points_curves_policies_and_noise_laws_to_their_form(cals):
    curve = puffgm.influence_curve("example:asia")
    with pytest.raises(ParameterError, match=r"translate it first, puffgm\.release\(puffgm\.translate\(curve, epsilon=E\)"):
        puffgm.release(curve, answer=1.0)
    with pytest.raises(ParameterError, match=r"BlowfishCalibration\(policy, epsilon=E, query='histogram'\)"):
        puffgm.release(POLICY, [1, 2])
    with pytest.raises(ParameterError, match=r"the QueryCalibration whose optimal_noise"):
        puffgm.release(cals["optimal-noise"].optimal_noise, RECORD)
    rel = puffgm.release(cals["wasserstein"], RECORD, random_state=0)
    with pytest.raises(ParameterError, match="already a release"):
        puffgm.release(rel, RECORD)


def test_wrong_combinations_with_translations_and_blowfish_name_the_right_form(cals):
    curve = puffgm.influence_curve("example:asia")
    t = puffgm.translate(curve, epsilon=4.0)
    hist = BlowfishCalibration(POLICY, epsilon=1.0, query="histogram")
    own = BlowfishCalibration(POLICY, epsilon=1.0, sensitivity=1.0)
    cases = [
        (lambda: puffgm.release(t, RECORD), r"cannot compute the answer from data: .*answer=\.\.\., lipschitz=L"),
        (lambda: puffgm.release(t), r"give the exact answer of your query as answer="),
        (lambda: puffgm.release(dataclasses.replace(t, curve=None), answer=1.0),
         r"pufferfish_laplace\(answer, curve, epsilon=4, lipschitz=L\)"),
        (lambda: puffgm.release(cals["wasserstein"], RECORD, lipschitz=2.0), "lipschitz= applies to a Translation"),
        (lambda: puffgm.release(puffgm.calibrate("example:asia", epsilon=4.0), answer=1.0, lipschitz=2.0),
         "lipschitz= applies to a Translation"),
        (lambda: puffgm.release(hist, answer=3.0), r"computed from the data: .*puffgm\.release\(cal, data_set\)"),
        (lambda: puffgm.release(hist), "give the data set"),
        (lambda: puffgm.release(hist, DATA_SET, lipschitz=2.0), "lipschitz= applies to a Translation"),
        (lambda: puffgm.release(own, DATA_SET), r"cannot compute the answer from data: .*answer=\.\.\."),
        (lambda: puffgm.release(own), "give the exact answer"),
    ]
    for call, match in cases:
        with pytest.raises(ParameterError, match=match):
            call()


@pytest.mark.parametrize("kwargs, match", [
    ({}, "exactly one of query= .* and sensitivity="),
    ({"query": "histogram", "sensitivity": 1.0}, "exactly one of query="),
    ({"query": "median"}, r"must be one of \('histogram', 'cumulative', 'linear_sum'\)\. Got 'median'"),
    ({"query": "cumulative", "partition": [[0], [1]]}, "needs query='histogram'"),
    ({"query": "histogram", "values": [1.0] * 10}, "needs query='linear_sum'"),
    ({"query": "histogram", "epsilon": -1.0}, "epsilon"),
    ({"sensitivity": -2.0}, "sensitivity"),
])
def test_bad_blowfish_calibrations_are_refused(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        BlowfishCalibration(POLICY, **{"epsilon": 1.0, **kwargs})
    with pytest.raises(ParameterError, match="must be a Blowfish Policy"):
        BlowfishCalibration("policy", epsilon=1.0, query="histogram")


def test_a_calibration_without_its_query_names_the_manual_road(cals):
    bare = dataclasses.replace(cals["wasserstein"], bound=None)
    with pytest.raises(ParameterError, match=r"release_query\(answer, cal\)"):
        puffgm.release(bare, RECORD)


# ------------------------------------------------------------------ accounting, records


def test_the_accountant_is_charged_with_the_label(cals, tmp_path):
    acc = puffgm.PrivacyAccountant(budget=1.0, ledger=tmp_path / "l.db")
    puffgm.release(cals["optimal-laplace"], RECORD, accountant=acc, label="count of yes", random_state=0)
    assert [e.label for e in acc.entries] == ["count of yes"] and acc.total == 1.0
    with pytest.raises(CompositionError):
        puffgm.release(cals["wasserstein"], RECORD, accountant=acc)  # a query-specific release is held alone


def test_the_bound_query_stays_out_of_records(cals):
    cal = cals["wasserstein"]
    assert "bound" not in cal.to_dict() and "layout" not in cal.to_dict()
    assert "bound=" not in repr(cal)
    assert cal == dataclasses.replace(cal, bound=None, layout=None)  # not compared


def test_the_frame_to_table_example_runs():
    import pathlib
    import subprocess
    import sys

    pytest.importorskip("statsmodels")
    script = pathlib.Path(__file__).resolve().parents[2] / "examples" / "frame_to_table.py"
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "joint optimal Laplace" in proc.stdout and "released: {'Democratic answers'" in proc.stdout
    assert "1-Pufferfish private" in proc.stdout
