"""``puffgm fit``: a survey fitted in Python or on the shell gives one prior, one calibration and one release;
states in their natural order; a value that is no state is refused the same way in Python and on the CLI."""

import json

import numpy as np
import pandas as pd
import pytest

import puffgm
from puffgm.exceptions import ParameterError


@pytest.fixture(scope="module")
def survey(tmp_path_factory):
    rng = np.random.default_rng(1)
    n = 400
    smoke = rng.random(n) < 0.4
    lung = rng.random(n) < np.where(smoke, 0.3, 0.05)
    rate = np.clip(np.round(3 + 2 * lung - smoke + rng.normal(0, 0.7, n)), 1, 5).astype(int)
    age = rng.normal(40, 12, n) + 10 * lung
    frame = pd.DataFrame({"smoke": np.where(smoke, "yes", "no"), "lung": lung.astype(int), "rate": rate,
                          "age": age.round(1)})
    path = tmp_path_factory.mktemp("survey") / "survey.csv"
    frame.to_csv(path, index=False)
    return path


def _python_fit(path):
    from puffgm.networks.fit import bin_columns

    frame = bin_columns(pd.read_csv(path), {"age": 3}, quantiles=True)
    return puffgm.fit_network(frame, dag=[("smoke", "lung"), ("lung", "rate"), ("lung", "age")], bootstrap=2,
                              random_state=4)


def test_shell_and_python_fits_agree(cli, survey, tmp_path):
    out_file = tmp_path / "prior.json"
    code, out, err = cli("fit", "--data", survey, "--dag", "smoke->lung, lung->rate, lung->age", "--bins", "age=3",
                         "--quantiles", "--bootstrap", "2", "--seed", "4", "-o", out_file)
    assert code == 0 and err == ""
    pc = _python_fit(survey)
    assert f"fingerprint: {pc.fingerprint}" in out
    assert out.startswith("fitted: a Bayesian-network prior class of 3 member(s) (fit (all rows), bootstrap 1, "
                          "bootstrap 2), 4 nodes, 3 edge(s)")
    assert "  rate: 5 states (1, 2, 3, 4, 5); parents: lung" in out and f"saved: {out_file}" in out
    assert puffgm.load_prior_class(out_file).fingerprint == pc.fingerprint
    code, out, _ = cli("calibrate", out_file, "--epsilon", "1", "--json", "--quiet")
    assert code == 0 and json.loads(out)["sigma_max"] == puffgm.calibrate(pc, epsilon=1.0).sigma_max


def test_a_release_reads_3_0_as_the_state_3_and_refuses_0(cli, survey, tmp_path):
    prior = tmp_path / "prior.json"
    pc = _python_fit(survey)
    puffgm.save_prior(pc, prior)
    young = pc.states["age"][0]
    query = {"scores": {"rate": {"4": 1, "5": 2}, "lung": {"1": 1}}}
    record = tmp_path / "record.csv"
    record.write_text(f'smoke,lung,rate,age\nno,1.0,5.0,"{young}"\n', encoding="utf-8")
    code, out, err = cli("release", prior, "--epsilon", "1", "--method", "wasserstein", "--query", json.dumps(query),
                         "--data", record, "--seed", "3", "--json")
    assert code == 0, err
    value = json.loads(out)["value"]
    cal = puffgm.calibrate_query(prior, query, epsilon=1.0, method="wasserstein")
    rel = puffgm.release(cal, {"smoke": "no", "lung": 1.0, "rate": 5.0, "age": young}, random_state=3)
    assert rel.value == value
    record.write_text(f'smoke,lung,rate,age\nno,1,0,"{young}"\n', encoding="utf-8")
    code, _, err = cli("release", prior, "--epsilon", "1", "--method", "wasserstein", "--query", json.dumps(query),
                       "--data", record, "--seed", "3")
    message = "Node 'rate' has no state '0'; its states are 1, 2, 3, 4, 5."
    assert code == 2 and err.strip() == f"puffgm: error: {message}"
    with pytest.raises(ParameterError, match="Node 'rate' has no state 0; its states are 1, 2, 3, 4, 5."):
        puffgm.release(cal, {"smoke": "no", "lung": 1, "rate": 0, "age": young}, random_state=3)


def test_learned_structure_and_chain_fits(cli, survey, tmp_path):
    code, out, _ = cli("fit", "--data", survey, "--columns", "smoke,lung,rate", "--learn", "tree", "-o",
                       tmp_path / "tree.json")
    assert code == 0 and "note: DAG learned: Chow-Liu tree" in out and "3 nodes, 2 edge(s)" in out
    series = tmp_path / "months.csv"
    month = (np.arange(36) % 12) + 1
    pd.DataFrame({"unit": np.repeat(["b", "a"], 18), "t": np.tile(np.arange(18)[::-1], 2),
                  "month": month.astype(float)}).to_csv(series, index=False)
    code, out, err = cli("fit", "--chain", "--data", series, "--unit", "unit", "--time", "t", "--state", "month",
                         "-o", tmp_path / "chain.json")
    assert code == 0, err
    assert out.startswith("fitted: a Markov-chain prior class of 1 chain(s), 12 states (1, 2, 3, 4, 5, 6, ..., 12), "
                          "T = 18 (longest trace), initial distribution stationary")
    cc = puffgm.fit_chain(pd.read_csv(series), id_column="unit", order_column="t", value_column="month")
    assert puffgm.load_prior_class(tmp_path / "chain.json").fingerprint == cc.fingerprint
    code, out, _ = cli("fit", "--chain", "--data", series, "--unit", "unit", "--time", "t", "--state", "month",
                       "--states", *map(str, range(1, 14)), "--length", "5", "-o", tmp_path / "chain13.json")
    assert code == 0 and "13 states" in out and "T = 5 (given)" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["--dag", "smoke>lung"], "--dag takes comma-separated PARENT->CHILD edges (or a prior file); 'smoke>lung' is "
                              "not an edge."),
    (["--columns", "smoke,lung", "--dag", "smoke->cancer"], "The DAG's node 'cancer' is not a column of the data frame"),
    (["--bins", "age"], "--bins takes COL=K; got 'age'."),
    (["--bins", "age=two"], "--bins takes COL=K with K a whole number of bins; got 'age=two'."),
    (["--columns", "smoke", "--learn", "magic"], "The 'structure' parameter of fit_network must be 'hill-climb'"),
    (["--columns", "smoke", "--bootstrap", "-1"], "The 'bootstrap' parameter of fit_network"),
    ([], "Column 'age' holds 239 non-integral numbers (e.g. 31.2), not discrete states: bin it first"),
    (["--chain", "--dag", "a->b"], "--dag does not apply to --chain: it is an option of networks."),
    (["--dag", "smoke->lung", "--learn", "tree"], "--dag gives the DAG and --learn learns one: give one of them."),
    (["--states", "1", "2"], "--states does not apply to a network (no --chain): it is an option of chains"),
    (["--columns", "smoke,weight"], "--columns names 'weight', which is not a column of the data"),
])
def test_errors_are_one_line_exit_2(cli, survey, tmp_path, argv, message):
    code, out, err = cli("fit", "--data", survey, "-o", tmp_path / "x.json", *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("puffgm: error: " + message), err
    assert not (tmp_path / "x.json").exists()


def test_a_missing_or_empty_file_is_one_line(cli, tmp_path):
    code, _, err = cli("fit", "--data", tmp_path / "none.csv", "-o", tmp_path / "x.json")
    assert code == 2 and err.strip() == f"puffgm: error: There is no data file '{tmp_path / 'none.csv'}'."
    (tmp_path / "empty.csv").write_text("", encoding="utf-8")
    code, _, err = cli("fit", "--data", tmp_path / "empty.csv", "-o", tmp_path / "x.json")
    assert code == 2 and "is not a CSV file with a header row" in err and len(err.strip().splitlines()) == 1
