"""fit_network: a prior class from a data frame sampled from ASIA (bundled with pgmpy, no download)."""

import numpy as np
import pandas as pd
import pytest

import puffgm
from puffgm.exceptions import ParameterError, PriorError
from puffgm.networks.fit import MAX_STATES, bin_columns


@pytest.fixture(scope="module")
def truth():
    return puffgm.load_prior_class("example:asia").priors[0]


@pytest.fixture(scope="module")
def frame(truth):
    return truth.to_pgmpy().simulate(5000, seed=0, show_progress=False)


def config_counts(frame, truth, node):
    """Rows per parent configuration of ``node``, in the order of the columns of its CPD."""
    pa = list(truth.parents[node])
    if not pa:
        return np.array([len(frame)])
    keys = pd.MultiIndex.from_product([list(truth.states[p]) for p in pa], names=pa)
    return frame.groupby(pa, observed=False).size().reindex(keys if len(pa) > 1 else keys.levels[0]).to_numpy()


def test_given_dag_recovers_the_cpds(truth, frame):
    pc = puffgm.fit_network(frame, dag=truth.to_pgmpy())
    assert len(pc) == 1 and set(pc.dag.edges()) == set(truth.edges)
    fit = pc.priors[0].reordered(truth.states, truth.parents)
    checked = 0
    for node in truth.nodes:
        diff = np.abs(fit.cpts[node] - truth.cpts[node]).reshape(len(truth.states[node]), -1)
        for j, n in enumerate(config_counts(frame, truth, node)):
            if n >= 100:                              # 2.5 / sqrt(n) >= 5 standard errors, 5 / n: BDeu's pull
                assert diff[:, j].max() < 2.5 / np.sqrt(n) + 5 / n, (node, j, n)
                checked += 1
    assert checked >= 12
    assert fit.n_zero_entries == 0                    # the Bayesian estimator smooths: no impossible value
    assert any("BayesianEstimator, BDeu" in n for n in pc.notes)
    assert any("fitted to 5000 rows and 8 columns" in n for n in pc.notes)


def test_structure_learning_gives_a_dag_over_the_columns(frame):
    pc = puffgm.fit_network(frame)
    assert set(pc.nodes) == set(frame.columns)
    assert any(n.startswith("DAG learned: hill climb") for n in pc.notes)
    assert len(pc.dag.edges()) >= 5


def test_bootstrap_gives_b_plus_one_members_sharing_the_dag(truth, frame):
    pc = puffgm.fit_network(frame, dag=sorted(truth.edges), bootstrap=3, random_state=7)
    assert len(pc) == 4 and [p.name for p in pc.priors] == ["fit (all rows)", "bootstrap 1", "bootstrap 2",
                                                              "bootstrap 3"]
    assert all(p.edges == truth.edges for p in pc.priors)
    assert len({p.fingerprint for p in pc.priors}) == 4
    again = puffgm.fit_network(frame, dag=sorted(truth.edges), bootstrap=3, random_state=7)
    assert again.fingerprint == pc.fingerprint
    assert any("3 bootstrap refit(s)" in n and "seeded" in n for n in pc.notes)


def test_the_class_calibrates_and_answers_a_query(truth, frame):
    pc = puffgm.fit_network(frame, dag=sorted(truth.edges), bootstrap=2, random_state=0)
    res = puffgm.calibrate(pc, epsilon=1)
    assert 0 < res.sigma_max <= len(pc.nodes)
    cal = puffgm.calibrate_query(pc, {"count": 0}, epsilon=1, method="optimal-laplace")
    assert cal.loss <= 1.0 and 0 < cal.scale <= cal.group_dp_scale


def test_ml_keeps_zeros_and_says_so(truth, frame):
    pc = puffgm.fit_network(frame.iloc[:300], dag=sorted(truth.edges), estimator="ml")
    assert pc.priors[0].n_zero_entries > 0
    assert any("zero CPD entries" in n for n in pc.notes)


def test_missing_rows_dropped_and_isolated_columns_kept():
    df = pd.DataFrame({"a": ["x", "y", None, "x", "y"] * 10, "b": [1, 2, 1, 1, np.nan] * 10, "c": [True, False] * 25})
    pc = puffgm.fit_network(df, dag=[("a", "b")])
    assert set(pc.nodes) == {"a", "b", "c"} and pc.states["b"] == ("1", "2")
    assert any("30 rows (20 with a missing value dropped)" in n for n in pc.notes)
    assert any("independent nodes): c" in n for n in pc.notes)


def test_non_discrete_column_is_refused_by_name_and_binned_on_request():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"mean_radius": rng.normal(14, 3, 200), "malignant": rng.integers(0, 2, 200)})
    with pytest.raises(PriorError, match="Column 'mean_radius' holds .* non-integral numbers") as e:
        puffgm.fit_network(df)
    assert "\n" not in str(e.value)
    binned = bin_columns(df, {"mean_radius": 3})
    pc = puffgm.fit_network(binned, dag=[("mean_radius", "malignant")])
    assert len(pc.states["mean_radius"]) == 3
    with pytest.raises(PriorError, match=f"more than {MAX_STATES} states"):
        puffgm.fit_network(pd.DataFrame({"id": range(500), "y": [0, 1] * 250}))


@pytest.mark.parametrize("kwargs, err, msg", [
    ({"estimator": "mle"}, ParameterError, "'estimator' parameter of fit_network must be one of"),
    ({"prior_type": "dirichlet"}, ParameterError, "'prior_type'"),
    ({"bootstrap": -1}, ParameterError, "'bootstrap'"),
    ({"equivalent_sample_size": 0}, ParameterError, "'equivalent_sample_size'"),
    ({"structure": "pc"}, ParameterError, "'structure'"),
    ({"dag": [("a", "zz")]}, PriorError, "node 'zz' is not a column"),
    ({"dag": [("a", "b"), ("b", "a")]}, PriorError, "directed cycle"),
])
def test_bad_options_refused(kwargs, err, msg):
    df = pd.DataFrame({"a": ["x", "y"] * 5, "b": ["u", "v", "v", "u", "u"] * 2})
    with pytest.raises(err, match=msg):
        puffgm.fit_network(df, **kwargs)


def test_not_a_frame_refused():
    with pytest.raises(PriorError, match="takes a pandas DataFrame"):
        puffgm.fit_network([["a", "b"]])


def test_tree_structure(frame):
    pc = puffgm.fit_network(frame, structure="tree")
    assert len(pc.dag.edges()) == len(frame.columns) - 1
