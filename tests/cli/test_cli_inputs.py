"""What a new user types first: ``--version``, misspelt names, inline JSON, progress bars on a terminal only.

Every refusal is one line on stderr with exit code 2, and a name close to a known one is suggested.
"""

import io
import json
import subprocess
import sys

import pytest

import puffgm
from puffgm.core.validation import did_you_mean, progress_enabled, read_json_argument
from puffgm.exceptions import ParameterError, PriorError

CHAIN = {"transition": [[0.9, 0.1], [0.4, 0.6]], "length": 5}
POLICY = {"domain": {"kind": "ordered", "size": 10}, "graph": {"kind": "distance", "theta": 2}}


def _run(*argv):
    return subprocess.run([sys.executable, "-m", "puffgm", *argv], capture_output=True, text=True)


# ----------------------------------------------------------------- --version and --help
def test_version_prints_the_package_version_and_exits_0():
    proc = _run("--version")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.strip() == f"puffgm {puffgm.__version__}"


def test_help_and_version_do_not_import_pgmpy():
    code = ("import sys\nfrom puffgm.cli import main\n"
            "for argv in (['--help'], ['--version'], ['calibrate', '--help']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print('pgmpy' in sys.modules, file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stderr.strip() == "False"


# ----------------------------------------------------------------- did you mean
def test_did_you_mean_names_the_closest_choice_or_nothing():
    assert did_you_mean("alram", ["asia", "alarm", "child"]) == " (did you mean 'alarm'?)"
    assert did_you_mean("qqqq", ["asia", "alarm"]) == ""
    assert did_you_mean("x", []) == ""


def _one_line_error(argv, message):
    proc = _run(*argv)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(lines) == 1 and lines[0].startswith("puffgm: error: ")
    assert message in lines[0], lines[0]


@pytest.mark.parametrize("argv,message", [
    (["calibrate", "example:alram", "--epsilon", "1"],
     "There is no bundled network named 'alram' (did you mean 'alarm'?); bundled networks: "),
    (["calibrate", "example:asia", "--epsilon", "1", "--protected", "smok"],
     "The protected node 'smok' is not a node of the prior (did you mean 'smoke'?)."),
    (["calibrate", "example:asia", "--epsilon", "1", "--method", "wasserstein", "--query", '{"cont": 0}'],
     'A query has exactly one of the keys "scores" and "count" (did you mean \'count\'?).'),
    (["calibrate", "example:asia", "--epsilon", "1", "--method", "wasserstein", "--query",
      '{"count": 0, "node": ["smoke"]}'],
     "Unknown key(s) 'node' in the query (did you mean 'nodes'?); a count query takes count, nodes."),
    (["calibrate", "example:asia", "--epsilon", "1", "--method", "wasserstein", "--query",
      '{"count": 0, "nodes": ["smok"]}'],
     "The count query names 'smok', which is not a node of the prior (did you mean 'smoke'?)."),
    (["calibrate", "example:asia", "--epsilon", "1", "--method", "wasserstein", "--query",
      '{"scores": {"smok": [0, 1]}}'],
     "The query scores 'smok', which is not a node of the prior (did you mean 'smoke'?)."),
    (["calibrate", "example:asia", "--epsilon", "1", "--method", "wasserstein", "--query", '{"count": "yess"}'],
     "No node of the prior has the counted state 'yess' (did you mean 'yes'?)."),
    (["calibrate", "example:asia", "--epsilon", "1", "--method", "optimal-laplace", "--query",
      '{"querys": [{"count": 0}]}'],
     "Unknown key(s) 'querys' in the workload (did you mean 'queries'?); it takes \"queries\""),
    (["calibrate", "example:asia", "--epsilon", "1", "--method", "optimal-laplace", "--query",
      '{"queries": [{"count": 0}], "descripton": "x"}'],
     "Unknown key(s) 'descripton' in the workload (did you mean 'description'?)"),
    (["calibrate", "example:asia", "--epsilon", "1", "--method", "optimal-laplace", "--query",
      '{"histogram": {"node": ["smoke"]}}'],
     "Unknown key(s) 'node' in the histogram (did you mean 'nodes'?)"),
    (["calibrate", "example:asia", "--epsilon", "1", "--method", "optimal-laplace", "--query",
      '{"histogram": {"nodes": ["smok"]}}'],
     "The histogram names 'smok', which is not a node of the prior (did you mean 'smoke'?)."),
    (["calibrate", "example:asia", "--epsilon", "1", "--method", "optimal-laplace", "--query",
      '{"histogram": {"states": ["yess"]}}'],
     "The histogram counts state 'yess', which its nodes do not have (did you mean 'yes'?) (their states: yes, no)."),
    (["calibrate", json.dumps({"transiton": [[0.9, 0.1], [0.4, 0.6]], "length": 5}), "--epsilon", "1"],
     "The inline chain spec has unknown key(s) ['transiton'] (did you mean 'transition'?)."),
    (["blowfish", "sensitivity", "--policy", json.dumps({"domian": POLICY["domain"], "graph": POLICY["graph"]})],
     "The policy has unknown field(s) ['domian'] (did you mean 'domain'?)."),
    (["blowfish", "sensitivity", "--policy", json.dumps({"domain": {"kind": "orderd", "size": 3},
                                                         "graph": POLICY["graph"]})],
     "Unknown domain kind 'orderd' (did you mean 'ordered'?); use 'categorical', 'ordered' or 'grid'."),
    (["blowfish", "sensitivity", "--policy", json.dumps({"domain": POLICY["domain"], "graph": {"kind": "lines"}})],
     "Unknown graph kind 'lines' (did you mean 'line'?); use complete, attribute, partition, distance, line or edges."),
    (["blowfish", "sensitivity", "--policy", json.dumps(POLICY), "--query", '{"kind": "cumulatve"}'],
     "The query needs a 'kind' among histogram, cumulative, linear, ordered, ordered_hierarchical "
     "(did you mean 'cumulative'?)."),
])
def test_a_misspelt_name_is_one_line_with_a_suggestion(argv, message):
    _one_line_error(argv, message)


def test_a_misspelt_state_of_a_record_is_suggested():
    from puffgm.core.query import SumQuery

    bound = SumQuery({"count": "yes"}).bind(["A"], {"A": ("yes", "no")})
    with pytest.raises(ParameterError, match=r"Node 'A' has no state 'yse' \(did you mean 'yes'\?\); its states"):
        bound.evaluate({"A": "yse"})


def test_a_misspelt_discriminative_value_is_suggested(asia):
    from puffgm.exceptions import SecretError
    from puffgm.networks.secrets import SecretSpec

    spec = SecretSpec(pairs={"smoke": [("yes", "nope")]})
    with pytest.raises(SecretError, match=r"Node 'smoke' has no value 'nope' \(did you mean 'no'\?\)"):
        spec.value_pairs(asia, "smoke")


def test_a_misspelt_option_of_a_kind_is_suggested():
    with pytest.raises(ParameterError, match=r"Option\(s\) protect do not apply .* \(did you mean 'protected'\?\)"):
        puffgm.calibrate("example:asia", epsilon=1.0, protect=["smoke"])


# ----------------------------------------------------------------- inline JSON or a path
def test_inline_chain_json_is_a_prior(tmp_path):
    path = tmp_path / "walk.json"
    path.write_text(json.dumps(CHAIN))
    inline = _run("calibrate", json.dumps(CHAIN), "--epsilon", "1", "--json")
    from_file = _run("calibrate", str(path), "--epsilon", "1", "--json")
    assert inline.returncode == 0 and from_file.returncode == 0, inline.stderr
    assert json.loads(inline.stdout)["sigma_max"] == json.loads(from_file.stdout)["sigma_max"]


def test_inline_chain_json_does_not_import_pgmpy():
    code = ("import sys\nfrom puffgm.cli import main\n"
            f"main(['calibrate', {json.dumps(CHAIN)!r}, '--epsilon', '1'])\n"
            "print('pgmpy' in sys.modules, file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stderr.strip().splitlines()[-1] == "False"


def test_a_dict_is_a_chain_spec_in_python():
    assert puffgm.calibrate(dict(CHAIN), epsilon=1.0).sigma_max == puffgm.calibrate(
        json.dumps(CHAIN), epsilon=1.0).sigma_max
    assert puffgm.load_chain_spec(CHAIN).length == 5


def test_inline_chain_json_for_leakage(cli):
    code, out, err = cli("leakage", json.dumps(CHAIN), "--epsilon", "1", "--json")
    assert code == 0 and err == "" and len(json.loads(out)["tpl"]) == 5


def test_invalid_inline_chain_json_is_one_line():
    _one_line_error(["calibrate", json.dumps(CHAIN)[:-1], "--epsilon", "1"],
                    "The inline chain spec is not valid JSON (Expecting ',' delimiter at line 1, column ")


def test_missing_chain_file_is_one_line():
    _one_line_error(["calibrate", "nosuch.json", "--epsilon", "1"],
                    "The chain spec file 'nosuch.json' does not exist (give a JSON file or inline JSON text).")


@pytest.mark.parametrize("form", ["path", "@path", "inline"])
def test_blowfish_policy_as_path_at_path_or_inline(tmp_path, cli, form):
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(POLICY))
    arg = {"path": str(path), "@path": f"@{path}", "inline": json.dumps(POLICY)}[form]
    code, out, err = cli("blowfish", "sensitivity", "--policy", arg, "--query", '{"kind": "cumulative"}', "--json")
    assert code == 0 and err == "" and json.loads(out)["sensitivity"] == 2


def test_blowfish_data_and_query_as_paths(tmp_path, cli):
    (tmp_path / "q.json").write_text('{"kind": "histogram"}')
    (tmp_path / "d.json").write_text("[1, 2, 2]")
    code, out, err = cli("blowfish", "release", "--policy", json.dumps(POLICY), "--query", tmp_path / "q.json",
                         "--data", tmp_path / "d.json", "--epsilon", "1", "--seed", "0", "--json")
    assert code == 0 and err == ""


def test_missing_policy_file_is_one_line():
    _one_line_error(["blowfish", "sensitivity", "--policy", "nosuch-policy.json"],
                    "The policy file 'nosuch-policy.json' does not exist (give a JSON file or inline JSON text).")


def test_read_json_argument_labels():
    assert read_json_argument('[1, 2]', "data") == ([1, 2], "inline data")
    with pytest.raises(PriorError, match="^The chain spec file 'x.json' does not exist"):
        read_json_argument("@x.json", "chain spec", PriorError)


# ----------------------------------------------------------------- progress bars
class _Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self._tty = tty

    def isatty(self):
        return self._tty


def test_progress_bars_only_on_a_terminal_unless_asked():
    assert progress_enabled(None, _Stream(True)) is True
    assert progress_enabled(None, _Stream(False)) is False
    assert progress_enabled(True, _Stream(False)) is True
    assert progress_enabled(False, _Stream(True)) is False


def test_redirected_stderr_gets_no_bar_from_the_network_calibration():
    code = ("import puffgm\nfrom puffgm.networks import calibration as c\n"
            "pc = puffgm.load_prior_class('example:asia')\n"
            "print(c._progress_bar(None, 8, pc) is None, c._progress_bar(True, 8, pc) is not None)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "True True", proc.stderr
