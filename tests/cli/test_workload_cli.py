"""``puffgm calibrate --query '[...]'``: a workload's JSON (scales, loss), its side-by-side table, one-line errors."""

import json

HALVES = json.dumps([{"count": 0, "nodes": ["asia", "tub", "smoke", "lung"], "name": "first"},
                     {"count": 0, "nodes": ["bronc", "either", "xray", "dysp"], "name": "second"}])


def test_json_has_scales_and_loss_in_workload_order(cli):
    code, out, err = cli("calibrate", "example:asia", "--epsilon", "1", "--query", HALVES, "--method",
                         "optimal-laplace", "--json", "--weights", "1,2")
    assert code == 0, err
    d = json.loads(out)
    assert d["names"] == ["first", "second"] and len(d["scales"]) == 2
    assert d["scales"][1] == 2 * d["scales"][0] and d["loss"] <= 1.0
    assert set(d["comparison"]) == {"group_dp", "mqm", "single", "joint"}
    assert d["comparison"]["single"]["valid_release"] is False
    assert d["comparison"]["joint"]["total"] == sum(d["scales"])


def test_text_sets_the_table_beside_group_dp_and_mqm(cli, tmp_path):
    f = tmp_path / "w.json"
    f.write_text(HALVES)
    code, out, err = cli("calibrate", "example:asia", "--epsilon", "1", "--query", str(f), "--method",
                         "optimal-laplace")
    assert code == 0, err
    for name in ("group DP", "MQM", "each alone (not valid)", "joint optimal Laplace", "first", "second"):
        assert name in out


def test_chain_histogram(cli, tmp_path):
    c = tmp_path / "c.json"
    c.write_text(json.dumps({"transition": [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.1, 0.2, 0.7]],
                             "initial": "stationary", "length": 6}))
    code, out, err = cli("calibrate", str(c), "--epsilon", "1", "--query", '{"histogram": {}}', "--method",
                         "optimal-laplace", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["names"] == ["0", "1", "2"] and d["loss"] <= 1.0 and all(s > 0 for s in d["scales"])


def test_errors_are_one_line(cli):
    cases = [
        (["--query", HALVES, "--method", "wasserstein"], "--method optimal-laplace"),
        (["--query", '{"count": 0}', "--method", "optimal-laplace", "--weights", "1"], "--weights applies to a workload"),
        (["--query", HALVES, "--method", "optimal-laplace", "--weights", "1,x"], "comma-separated numbers"),
        (["--query", HALVES, "--method", "optimal-laplace", "--weights", "1,2,3"], "needs 2 weights"),
        (["--query", HALVES, "--method", "optimal-laplace", "--weights", "1,-2"], "'weights'"),
        (["--query", HALVES, "--method", "optimal-laplace", "--max-joint-length", "10"], "over the limit of 10"),
        (["--query", "[]", "--method", "optimal-laplace"], "non-empty list"),
        (["--query", '{"histogram": {"nodes": ["nope"]}}', "--method", "optimal-laplace"], "not a node"),
    ]
    for extra, needle in cases:
        code, out, err = cli("calibrate", "example:asia", "--epsilon", "1", *extra)
        assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, (extra, err)


def test_optimal_weights_lower_the_total_error_and_keep_epsilon(cli):
    runs = {}
    for weights in ("1,1", "optimal"):
        code, out, err = cli("calibrate", "example:asia", "--epsilon", "1", "--query", HALVES, "--method",
                             "optimal-laplace", "--json", "--weights", weights)
        assert code == 0, err
        runs[weights] = json.loads(out)
    equal, best = runs["1,1"], runs["optimal"]
    assert best["loss"] <= 1.0 and best["comparison"]["joint"]["total"] <= equal["comparison"]["joint"]["total"]
    assert any("search" in n for n in best["notes"])
