"""``puffgm release``: calibrate and release from a CSV file, under a durable ledger; one-line errors."""

import json

import pytest

import puffgm

RECORD = {"asia": "no", "tub": "no", "smoke": "yes", "lung": "no", "bronc": "yes", "either": "no", "xray": "no",
          "dysp": "yes"}
TRACE = ["0", "1", "1", "0", "0", "1", "0", "0"]
CHAIN = {"transition": [[0.9, 0.1], [0.3, 0.7]], "initial": "stationary", "length": len(TRACE)}
COUNT_YES = '{"count": "yes"}'


@pytest.fixture
def files(tmp_path):
    """asia.csv (one record), trace.csv (one trace), chain.json, and bad files."""
    f = {k: tmp_path / k for k in ("asia.csv", "trace.csv", "chain.json", "two_rows.csv", "two_columns.csv",
                                   "typo.csv", "empty.csv", "record.json")}
    header, row = ",".join(RECORD), ",".join(RECORD.values())
    f["asia.csv"].write_text(f"{header}\n{row}\n")
    f["two_rows.csv"].write_text(f"{header}\n{row}\n{row}\n")
    f["typo.csv"].write_text("asia,tub,smokes\nno,no,yes\n")
    f["empty.csv"].write_text("")
    f["trace.csv"].write_text("state\n" + "\n".join(TRACE) + "\n")
    f["two_columns.csv"].write_text("a,b\n" + "\n".join(f"{s},{s}" for s in TRACE) + "\n")
    f["chain.json"].write_text(json.dumps(CHAIN))
    f["record.json"].write_text(json.dumps(RECORD))
    return f


def _json(cli, *argv):
    code, out, err = cli("release", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_network_from_a_one_row_csv_equals_the_api(cli, files):
    d = _json(cli, "example:asia", "--data", files["asia.csv"], "--query", COUNT_YES, "--method", "optimal-laplace",
              "--epsilon", "1", "--seed", "4")
    cal = puffgm.calibrate_query("example:asia", {"count": "yes"}, epsilon=1.0, method="optimal-laplace")
    assert d["value"] == puffgm.release(cal, RECORD, random_state=4).value
    assert d["release"]["kind"] == "QueryRelease" and d["remaining"] == 0.0 and d["total"] == 1.0
    assert "1-Pufferfish private" in d["guarantee"] and "closed to further releases" in d["guarantee"]
    assert _json(cli, "example:asia", "--data", files["record.json"], "--query", COUNT_YES, "--method",
                 "optimal-laplace", "--epsilon", "1", "--seed", "4")["value"] == d["value"]


def test_chain_from_a_one_column_csv_equals_the_api(cli, files):
    d = _json(cli, files["chain.json"], "--data", files["trace.csv"], "--query", '{"count": "1"}', "--method",
              "wasserstein", "--epsilon", "1", "--seed", "2")
    cal = puffgm.calibrate_query(str(files["chain.json"]), {"count": "1"}, epsilon=1.0)
    assert d["value"] == puffgm.release(cal, TRACE, random_state=2).value


def test_text_output_and_a_workload(cli, files):
    code, out, err = cli("release", "example:asia", "--data", files["asia.csv"], "--query", '{"histogram": {}}',
                         "--method", "optimal-laplace", "--epsilon", "1", "--seed", "0", "--budget", "2")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("released: yes ") and ", no " in lines[0]
    assert "NOT FOR PRODUCTION" in lines[1]
    assert lines[2].startswith("guarantee: 1 release(s): 1-Pufferfish private (the ledger is closed to further "
                               "releases: a query-specific release is held alone)")
    assert lines[3] == "remaining budget: none (the ledger is closed to further releases; budget 2)"


def test_optimal_noise_release(cli, files):
    d = _json(cli, "example:asia", "--data", files["asia.csv"], "--query", COUNT_YES, "--method", "optimal-noise",
              "--epsilon", "1", "--seed", "1")
    assert d["release"]["kind"] == "OptimalNoiseRelease"


def test_the_ledger_and_its_budget_last_across_runs(cli, files, tmp_path):
    ledger = tmp_path / "budget.db"
    mqm = ("example:asia", "--answer", "3", "--epsilon", "1", "--ledger", ledger)
    assert _json(cli, *mqm, "--budget", "2", "--label", "first")["remaining"] == 1.0
    d = _json(cli, *mqm)  # the budget stored in the ledger
    assert d["remaining"] == 0.0 and d["total"] == 2.0 and d["budget"] == 2.0
    code, out, err = cli("release", *mqm)
    assert code == 2 and out == "" and err.count("\n") == 1 and "over the budget of 2" in err
    code, out, err = cli("release", *mqm, "--budget", "3")
    assert code == 2 and err.count("\n") == 1 and "must agree" in err
    code, out, err = cli("ledger", "show", ledger, "--json")
    assert code == 0 and [e["label"] for e in json.loads(out)["entries"]] == ["first", None]


def test_a_query_specific_release_is_held_alone_in_the_ledger(cli, files, tmp_path):
    query = ("example:asia", "--data", files["asia.csv"], "--query", COUNT_YES, "--method", "wasserstein",
             "--epsilon", "1", "--ledger", tmp_path / "q.db", "--budget", "5")
    d = _json(cli, *query)
    assert d["remaining"] == 0.0 and d["budget"] == 5.0 and "closed to further releases" in d["guarantee"]
    code, out, err = cli("release", *query)
    assert code == 2 and err.count("\n") == 1 and "cannot compose" in err


@pytest.mark.parametrize("argv, match", [
    (["--data", "two_rows.csv", "--query", COUNT_YES, "--method", "wasserstein"],
     "2 data rows, but a calibration covers one database"),
    (["--data", "typo.csv", "--query", COUNT_YES, "--method", "wasserstein"], "'smokes', which is not a node"),
    (["--data", "empty.csv", "--query", COUNT_YES, "--method", "wasserstein"], "is empty"),
    (["--data", "nope.csv", "--query", COUNT_YES, "--method", "wasserstein"], "no data file"),
    (["--query", COUNT_YES, "--method", "wasserstein"], "give --data FILE"),
    (["--data", "asia.csv", "--query", COUNT_YES, "--method", "wasserstein", "--answer", "3"], "not --answer"),
    (["--data", "asia.csv"], "cannot compute its answer from --data"),
    ([], "give the exact answer of your query as --answer"),
    (["--answer", "3", "--query", COUNT_YES], "--query needs a query-specific method"),
    (["--answer", "3", "--budget", "-1"], "budget"),
    (["--answer", "3", "--search-budget", "-1"], "puffgm release"),
])
def test_network_errors_are_one_line(cli, files, argv, match):
    argv = [str(files.get(a, a)) for a in argv]
    code, out, err = cli("release", "example:asia", "--epsilon", "1", *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and match in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("data, match", [
    ("two_columns.csv", "2 columns, but a calibration covers one database"),
    ("asia.csv", "8 columns"),
])
def test_chain_errors_are_one_line(cli, files, data, match):
    code, out, err = cli("release", files["chain.json"], "--data", files[data], "--query", '{"count": 0}',
                         "--method", "wasserstein", "--epsilon", "1")
    assert code == 2 and err.count("\n") == 1 and match in err, err
