"""``puffgm calibrate --query``: JSON keys, the side-by-side text, one-line errors."""

import json


def test_json_keys_and_side_by_side(cli):
    code, out, err = cli(*["calibrate", "example:asia", "--epsilon", "1", "--query", '{"count": 0}',
                          "--method", "wasserstein", "--json"])
    assert code == 0, err
    d = json.loads(out)
    assert d["wasserstein"] == 5.0 and d["scale"] == 5.0 and d["loss"] <= 1.0
    assert set(d["comparison"]) == {"group_dp", "mqm", "wasserstein", "optimal_laplace"}
    assert d["comparison"]["group_dp"]["scale"] == 8.0
    code, out, err = cli(*["calibrate", "example:asia", "--epsilon", "1", "--query", '{"count": 0}',
                          "--method", "optimal-laplace"])
    assert code == 0, err
    for name in ("group DP", "MQM", "Wasserstein", "optimal Laplace"):
        assert name in out


def test_query_file_and_chain(cli, tmp_path):
    q = tmp_path / "q.json"
    q.write_text(json.dumps({"scores": [0, 1]}))
    c = tmp_path / "c.json"
    c.write_text(json.dumps({"transition": [[0.9, 0.1], [0.3, 0.7]], "initial": "stationary", "length": 8}))
    code, out, err = cli(*["calibrate", str(c), "--epsilon", "1", "--query", str(q), "--method", "optimal-laplace",
                          "--json"])
    assert code == 0, err
    d = json.loads(out)
    assert 0 < d["scale"] <= d["wasserstein"] and d["loss"] <= 1.0


def test_errors_are_one_line(cli):
    cases = [
        (["--method", "wasserstein"], "give --query"),
        (["--query", '{"count": 0}'], "needs a query-specific method"),
        (["--method", "wasserstein", "--query", '{"scores": {"nope": [1, 0]}}'], "not a node"),
        (["--method", "wasserstein", "--query", '{"count": 0}', "--search-budget", "3"], "does not apply"),
        (["--method", "wasserstein", "--query", '{"count": 0}', "--max-sum-length", "2"], "max_sum_length"),
        (["--method", "wasserstein", "--query", '{"count": 0}', "--lipschitz", "2"], "--lipschitz"),
        (["--method", "wasserstein", "--query", "{oops"], "neither"),
    ]
    for extra, msg in cases:
        code, out, err = cli(*["calibrate", "example:asia", "--epsilon", "1"] + extra)
        assert code == 2 and out == "" and msg in err and err.count("\n") == 1, (extra, err)


def test_optimal_noise_json_keys(cli):
    code, out, err = cli("calibrate", "example:asia", "--epsilon", "1", "--query", '{"count": 0}',
                         "--method", "optimal-noise", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["loss"] <= 1.0 and d["scale"] is None
    noise = d["noise"]
    assert len(noise["values"]) == len(noise["probabilities"]) and 0 < noise["tail_ratio"] < 1
    assert d["expected_abs_error"] < d["comparison"]["optimal_laplace"]["scale"]
    assert d["comparison"]["optimal_noise"]["expected_abs_error"] == d["expected_abs_error"]
    code, out, err = cli("calibrate", "example:asia", "--epsilon", "1", "--query", '{"count": 0}',
                         "--method", "wasserstein", "--objective", "square")
    assert code == 2 and "--objective" in err
