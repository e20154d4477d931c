"""`puffgm calibrate` for networks: JSON fields, human summary, and one test per bad input."""

import json
import subprocess
import sys

import pytest


def test_json_fields(cli):
    code, out, err = cli("calibrate", "example:asia", "--epsilon", "2", "--lipschitz", "3", "--json")
    assert code == 0 and err == ""
    d = json.loads(out)
    for key in ("epsilon", "lipschitz", "method", "sigma_max", "scale", "groupdp_sigma", "worst_node", "quilt"):
        assert key in d
    assert d["scale"] == pytest.approx(3 * d["sigma_max"])
    assert d["method"] == "exact" and d["epsilon"] == 2.0
    assert set(d["quilt"]) >= {"node", "quilt", "nearby", "max_influence"}
    assert d["quilt"]["node"] == d["worst_node"]
    assert "per_node" not in d


def test_per_node_and_summary(cli):
    code, out, _ = cli("calibrate", "example:asia", "--epsilon", "2", "--json", "--per-node")
    assert code == 0 and len(json.loads(out)["per_node"]) == 8
    code, out, _ = cli("calibrate", "example:asia", "--epsilon", "2")
    assert code == 0 and "worst node" in out and "Laplace scale" in out


def test_protect_and_theta(tmp_path, cli):
    code, out, _ = cli("calibrate", "example:asia", "example:asia", "--epsilon", "1",
                       "--protected", "smoke", "--json", "--per-node")
    d = json.loads(out)
    assert code == 0 and [q["node"] for q in d["per_node"]] == ["smoke"]


@pytest.mark.parametrize("argv,message", [
    (["calibrate", "missing.bif", "--epsilon", "1"], "There is no network file 'missing.bif'."),
    (["calibrate", "example:asia", "--epsilon", "0"], "'epsilon' parameter of puffgm calibrate must be a finite number > 0"),
    (["calibrate", "example:asia", "--epsilon", "inf"], "must be a finite number > 0. Got inf"),
    (["calibrate", "example:asia", "--epsilon", "abc"], "'abc' is not a number"),
    (["calibrate", "example:asia", "--epsilon", "1", "--lipschitz", "-2"], "'lipschitz' parameter"),
    (["calibrate", "example:asia", "example:cancer", "--epsilon", "1"], "does not share the graph"),
    (["calibrate", "example:nosuch", "--epsilon", "1"], "no bundled network named 'nosuch'"),
    (["calibrate", "example:asia", "--epsilon", "1", "--method", "approx"], "does not apply to Bayesian-network priors; they take 'exact'"),
    (["calibrate", "example:asia", "--epsilon", "1", "--protected", "nosuch"], "protected node 'nosuch' is not a node"),
    (["calibrate", "example:asia", "--epsilon", "1", "--max-quilt-states", "0"], "'max-quilt-states' parameter"),
    (["calibrate", "example:asia"], "the following arguments are required: --epsilon"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message):
    proc = subprocess.run([sys.executable, "-m", "puffgm", *argv], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("puffgm: error: ")
    assert message in lines[0]


def test_unparseable_file(tmp_path, cli):
    bad = tmp_path / "net.bif"
    bad.write_text("network x { } variable A { type discrete [ 2 ] { a, b }; } probability ( A ) { table 0.5, 0.6; }")
    code, out, err = cli("calibrate", str(bad), "--epsilon", "1")
    assert code == 2 and "off 1 by more than 1e-06" in err and len(err.strip().splitlines()) == 1


def test_help_does_not_import_pgmpy():
    code = ("import sys; from puffgm.cli import build_parser; build_parser(); "
            "print('pgmpy' in sys.modules, 'opendp' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "False False"


def test_bundled_network_calibration_does_not_need_pgmpy():
    code = ("import sys; from puffgm.networks.calibration import calibrate; calibrate('example:asia', epsilon=1.0); "
            "print('pgmpy' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "False"


def test_every_output_says_which_time_limit_applied(cli, tmp_path):
    import json as _json

    code, out, err = cli("calibrate", "example:asia", "--epsilon", "1", "--json", "--quiet")
    assert code == 0, err
    d = _json.loads(out)
    assert d["time_limit"] == 120 and "default of puffgm calibrate" in d["time_limit_source"]
    assert "Python API applies none" in d["time_limit_source"]
    code, out, err = cli("calibrate", "example:asia", "--epsilon", "1", "--query", '{"count": 0}', "--method",
                         "optimal-laplace", "--time-limit", "0")
    assert code == 0, err
    assert out.strip().splitlines()[-1] == "time limit: none (--time-limit)"
    code, out, err = cli("calibrate", "example:asia", "--epsilon", "1", "--time-limit", "30", "--quiet")
    assert "time limit: 30 s (--time-limit)" in out
