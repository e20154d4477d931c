"""``puffgm release --unit``: a panel from a CSV file, the aggregate or one release per unit, under a ledger."""

import json

import pytest

import puffgm

pytest.importorskip("pandas")

CHAIN = {"transition": [[0.8, 0.2], [0.3, 0.7]], "initial": "stationary", "length": 5, "states": ["a", "b"]}
ROWS = [("1", 2, "b"), ("1", 1, "a"), ("1", 3, "a"), ("2", 1, "b"), ("2", 2, "b"), ("2", 3, "b"), ("2", 4, "a"),
        ("3", 1, "a"), ("3", 2, "a"), ("3", 3, "b"), ("3", 4, "a"), ("3", 5, "b")]


@pytest.fixture
def files(tmp_path):
    f = {k: tmp_path / k for k in ("chain.json", "long.csv", "gap.csv", "wide.csv")}
    f["chain.json"].write_text(json.dumps(CHAIN))
    f["long.csv"].write_text("id,t,s\n" + "\n".join(f"{u},{t},{s}" for u, t, s in ROWS) + "\n")
    f["gap.csv"].write_text("id,t,s\n1,1,a\n1,2,\n1,3,b\n2,1,a\n2,2,b\n")
    f["wide.csv"].write_text("id,X1,X2,X3,X4,X5\n1,a,b,a,,\n2,b,b,b,a,\n3,a,a,b,a,b\n")
    return f


def _run(cli, *argv):
    code, out, err = cli("release", *argv)
    assert code == 0, err
    return out


def test_aggregate_histogram_json_matches_python(cli, files):
    argv = [files["chain.json"], "--data", files["long.csv"], "--unit", "id", "--time", "t", "--query",
            '{"histogram": {}}', "--method", "optimal-laplace", "--epsilon", "1", "--seed", "3", "--relative"]
    d = json.loads(_run(cli, *argv, "--json"))
    assert d["units"] == 3 and set(d["values"]) == {"a", "b"} and set(d["scales"]) == {"a", "b"}
    assert d["lengths"] == {"3": 1, "4": 1, "5": 1} and d["entries"] == 12
    assert "independent only under the prior" in d["guarantee"]
    assert set(d["comparison"]) == {"user_level_dp", "group_dp", "mqm", "query_specific"}
    w = puffgm.calibrate_workload(puffgm.ChainPriorClass.from_matrices(CHAIN["transition"], "stationary", 5,
                                                                       states=["a", "b"]),
                                  {"histogram": {}}, epsilon=1.0)
    import pandas as pd

    frame = pd.read_csv(files["long.csv"], dtype=str)
    frame["t"] = frame["t"].astype(int)
    rel = puffgm.release(w, frame, unit="id", time="t", relative=True, random_state=3)
    assert d["values"] == pytest.approx(rel.as_dict(), rel=1e-12)
    text = _run(cli, *argv)
    assert "user-level DP" in text and "query-specific per unit" in text and "each length calibrated once" in text


def test_each_and_aggregate_compose_per_unit_under_one_ledger(cli, files, tmp_path):
    ledger = tmp_path / "l.db"
    base = [files["chain.json"], "--data", files["wide.csv"], "--unit", "id", "--query", '{"count": "a"}',
            "--method", "exact", "--epsilon", "0.5", "--ledger", ledger, "--budget", "1", "--seed", "1", "--json"]
    d = json.loads(_run(cli, *base, "--each"))
    assert [r["unit"] for r in d["releases"]] == ["1", "2", "3"] and d["total"] == 0.5
    d = json.loads(_run(cli, *base))
    assert d["total"] == 1.0 and d["remaining"] == 0.0
    code, out, err = cli("release", *base)
    assert code == 2 and "over the budget" in err and err.count("\n") == 1


@pytest.mark.parametrize("extra, match", [
    (["--unit", "who"], "'who' is not a column"),
    (["--unit", "id", "--time", "t"], "has a gap"),
])
def test_bad_panels_exit_2_in_one_line(cli, files, extra, match):
    code, out, err = cli("release", files["chain.json"], "--data", files["gap.csv"], *extra, "--query",
                         '{"count": "a"}', "--method", "wasserstein", "--epsilon", "1")
    assert code == 2 and match in err and err.count("\n") == 1 and out == ""


def test_gaps_split_says_so(cli, files):
    d = json.loads(_run(cli, files["chain.json"], "--data", files["gap.csv"], "--unit", "id", "--time", "t",
                        "--gaps", "split", "--each", "--query", '{"count": "a"}', "--method", "wasserstein",
                        "--epsilon", "1", "--seed", "0", "--json"))
    assert [r["unit"] for r in d["releases"]] == ["1#1", "1#2", "2"]
    assert any("split" in n for n in d["notes"])


def test_survey_of_respondents_releases_one_count_with_the_noise_of_one_respondent(cli, tmp_path):
    path = tmp_path / "asia.csv"
    path.write_text("who,asia,tub,smoke,lung,bronc,either,xray,dysp\nr1,no,no,yes,no,yes,no,no,yes\n"
                    "r2,yes,no,no,no,no,no,no,no\nr3,no,no,yes,yes,yes,yes,yes,yes\n")
    d = json.loads(_run(cli, "example:asia", "--data", path, "--unit", "who", "--query", '{"count": "yes"}',
                        "--method", "optimal-laplace", "--epsilon", "1", "--seed", "0", "--json"))
    single = puffgm.calibrate_query("example:asia", {"count": "yes"}, epsilon=1.0, method="optimal-laplace")
    assert d["units"] == 3 and isinstance(d["value"], float) and d["scale"] == pytest.approx(single.scale, rel=1e-9)
    assert d["comparison"]["user_level_dp"]["total"] == 8.0   # one respondent's 8 answers can all change
    code, out, err = cli("release", "example:asia", "--data", path, "--unit", "who", "--gaps", "split", "--query",
                         '{"count": "yes"}', "--method", "wasserstein", "--epsilon", "1")
    assert code == 2 and "cannot be split" in err and err.count("\n") == 1
