"""``puffgm blowfish``: sensitivity and release modes; every bad input exits 2 with one line."""

import json

import pytest

LINE = '{"domain": {"kind": "ordered", "size": 10}, "graph": {"kind": "line"}}'
CONSTRAINED = ('{"domain": {"kind": "ordered", "size": 4}, "graph": {"kind": "complete"}, '
               '"constraints": [{"values": [0, 1], "count": 1}], "n": 3}')




def test_sensitivity_closed_form_and_enumeration_agree(cli):
    for q, expect in (('{"kind": "cumulative"}', 1.0), ('{"kind": "histogram"}', 2.0), ('{"kind": "linear"}', 1.0)):
        code, out, _ = cli("blowfish", "sensitivity", "--policy", LINE, "--query", q, "--json")
        assert code == 0 and json.loads(out)["sensitivity"] == expect
        code, out, _ = cli("blowfish", "sensitivity", "--policy", LINE, "--query", q, "--method",
                            "enumerate", "--n", "2", "--json")
        assert code == 0 and json.loads(out)["sensitivity"] == expect


def test_constrained_policy_uses_induced_neighbours(cli):
    code, out, _ = cli("blowfish", "sensitivity", "--policy", CONSTRAINED, "--json")
    d = json.loads(out)
    assert code == 0 and d["sensitivity"] == 4.0 and d["induced_neighbours"]
    code, out, _ = cli("blowfish", "release", "--policy", CONSTRAINED, "--data", "[0, 2, 2]",
                        "--epsilon", "1", "--seed", "0", "--json")
    assert code == 0 and json.loads(out)["scale"] == 4.0


def test_release_modes(tmp_path, cli):
    data = tmp_path / "data.json"
    data.write_text("[1, 2, 2, 3, 9]")
    for q in ('{"kind": "ordered", "ranges": [[2, 5]]}', '{"kind": "histogram"}', '{"kind": "cumulative"}',
              '{"kind": "linear"}'):
        code, out, _ = cli("blowfish", "release", "--policy", LINE, "--query", q, "--data", f"@{data}",
                            "--epsilon", "0.5", "--seed", "1", "--json")
        d = json.loads(out)
        assert code == 0 and d["secure"] is False and d["epsilon"] == 0.5
    theta = '{"domain": {"kind": "ordered", "size": 10}, "graph": {"kind": "distance", "theta": 3}}'
    code, out, _ = cli("blowfish", "release", "--policy", theta, "--query",
                        '{"kind": "ordered_hierarchical", "ranges": [[0, 4]]}', "--data", "[1, 2]", "--epsilon", "1",
                        "--seed", "2")
    assert code == 0 and "ordered hierarchical" in out and "range [0, 4]" in out


@pytest.mark.parametrize("policy, extra, message", [
    ('{"domain": {"kind": "ordered", "size": 0}, "graph": {"kind": "complete"}}', [], "empty"),
    ('{"domain": {"kind": "categorical", "values": []}, "graph": {"kind": "complete"}}', [], "empty"),
    ('{"domain": {"kind": "ordered", "size": 3}, "graph": {"kind": "edges", "edges": [[0, 5]]}}', [],
     "not a domain value"),
    ('{"domain": {"kind": "ordered", "size": 3}, "graph": {"kind": "partition", "blocks": [[0, 9]]}}', [],
     "not in the domain"),
    ('{"domain": {"kind": "ordered", "size": 3}, "graph": {"kind": "complete"}, '
     '"constraints": [{"values": [0], "count": 2}, {"values": [0, 1], "count": 1}]}', [], "contradictory"),
    ('{"domain": {"kind": "ordered", "size": 3}, "graph": {"kind": "complete"}, '
     '"constraints": [{"values": [0], "count": 5}], "n": 2}', [], "contradictory"),
    ('{"domain": {"kind": "ordered", "size": 3}, "graph": {"kind": "distance", "theta": -1}}', [], "theta"),
    ('{"domain": {"kind": "ordered", "size": 3}, "graph": {"kind": "wheel"}}', [], "Unknown graph kind"),
    ('{"domain": {"kind": "tree"}, "graph": {"kind": "complete"}}', [], "Unknown domain kind"),
    ('{"domain": {"kind": "ordered", "size": 3}}', [], "'graph'"),
    ('{"domain": {"kind": "ordered"', [], "not valid JSON"),
    ('[1, 2]', [], "JSON object"),
    ('{"domain": {"kind": "ordered", "size": 3}, "graph": {"kind": "complete"}, "colour": 1}', [], "unknown field"),
    ('{"domain": {"kind": "categorical", "values": ["a", "b"]}, "graph": {"kind": "attribute"}}', [], "grid"),
    (LINE, ["--query", '{"kind": "median"}'], "'kind'"),
    (LINE, ["--method", "enumerate"], "needs the number of tuples"),
    (LINE, ["--method", "enumerate", "--n", "9"], "max_databases"),
    (CONSTRAINED, ["--method", "closed"], "without constraints"),
    ("@/nonexistent/policy.json", [], "does not exist"),
])
def test_bad_policies_and_queries_exit_2_with_one_line(policy, extra, message, cli):
    code, out, err = cli("blowfish", "sensitivity", "--policy", policy, *extra)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("puffgm: error: ") and message in err


@pytest.mark.parametrize("extra, message", [
    (["--data", "[]"], "non-empty"),
    (["--data", "[1, 42]"], "not in the domain"),
    (["--data", "[1]", "--epsilon", "0"], "epsilon"),
    (["--data", "[1]", "--epsilon", "inf"], "epsilon"),
    (["--data", "[1]", "--query", '{"kind": "histogram", "ranges": [[0, 1]]}'], "cumulative releases"),
])
def test_bad_release_inputs_exit_2_with_one_line(extra, message, cli):
    argv = ["blowfish", "release", "--policy", LINE, "--seed", "0"]
    if "--epsilon" not in extra:
        argv += ["--epsilon", "1"]
    code, out, err = cli(*argv, *extra)
    assert code == 2 and err.count("\n") == 1 and message in err


def test_constrained_release_refuses_data_outside_the_constraints(cli):
    code, _, err = cli("blowfish", "release", "--policy", CONSTRAINED, "--data", "[2, 2, 2]",
                        "--epsilon", "1")
    assert code == 2 and "constraints" in err
