"""``puffgm leakage``: JSON keys, agreement with an independent computation, budgets, one-line errors."""

import json
import subprocess
import sys

import numpy as np
import pytest
from chains.test_leakage import random_matrix, straightforward

KEYS = {"bpl", "fpl", "tpl", "max_tpl", "sup_tpl"}


def write(tmp_path, name, spec):
    path = tmp_path / name
    path.write_text(json.dumps(spec))
    return str(path)


def test_json_matches_an_independent_computation_on_random_chains(cli, tmp_path):
    rng = np.random.default_rng(21)
    for trial in range(6):
        k = 2 + trial % 3
        P = random_matrix(rng, k, zeros=0.0)
        T = int(rng.integers(2, 25))
        path = write(tmp_path, f"c{trial}.json", {"transition": P.tolist(), "length": 100})
        eps = float(rng.uniform(0.1, 1.0))
        code, out, err = cli("leakage", path, "--epsilon", repr(eps), "--length", T, "--json")
        assert code == 0 and err == ""
        d = json.loads(out)
        assert KEYS <= set(d) and len(d["tpl"]) == T
        for key, ref in zip(("bpl", "fpl", "tpl"), straightforward(P, [eps] * T), strict=True):
            np.testing.assert_allclose(d[key], ref, rtol=1e-9, atol=1e-12)
        assert d["max_tpl"] == pytest.approx(max(d["tpl"])) and d["sup_tpl"] >= d["max_tpl"]
        budgets = rng.uniform(0.1, 1.0, T)
        code, out, _ = cli("leakage", path, "--epsilons", ",".join(repr(float(e)) for e in budgets), "--json")
        d = json.loads(out)
        assert code == 0 and d["sup_tpl"] is None and "constant budget" in d["sup_tpl_reason"]
        np.testing.assert_allclose(d["tpl"], straightforward(P, budgets)[2], rtol=1e-9, atol=1e-12)


def test_length_defaults_to_the_spec(cli, tmp_path):
    path = write(tmp_path, "c.json", {"transition": [[0.8, 0.2], [0.1, 0.9]], "length": 7})
    code, out, _ = cli("leakage", path, "--epsilon", "0.2", "--json")
    assert code == 0 and len(json.loads(out)["bpl"]) == 7
    code, out, _ = cli("leakage", path, "--epsilon", "0.2")
    assert code == 0 and "max TPL" in out and "time reversal" in out and "supremum" in out


def test_target_gives_the_largest_constant_budget(cli, tmp_path):
    P = [[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]]
    path = write(tmp_path, "c.json", {"transition": P, "length": 40})
    code, out, _ = cli("leakage", path, "--target", "1.5", "--json")
    assert code == 0
    d = json.loads(out)
    assert KEYS | {"epsilon_step", "ends"} <= set(d)
    eps = d["epsilon_step"]
    tpl = straightforward(np.array(P), [eps] * 40)[2]
    assert max(tpl) <= 1.5 * (1 + 1e-12) and d["max_tpl"] <= 1.5
    assert max(straightforward(np.array(P), [1.01 * eps] * 40)[2]) > 1.5  # within 1% of the largest
    assert d["ends"]["applicable"] and d["ends"]["max_tpl"] <= 1.5
    assert d["ends"]["epsilon_first"] > d["ends"]["epsilon_middle"]


def test_infinite_supremum_is_null_with_a_reason(cli, tmp_path):
    path = write(tmp_path, "p.json", {"transition": [[0.0, 1.0], [1.0, 0.0]], "length": 5})
    code, out, _ = cli("leakage", path, "--epsilon", "0.3", "--json")
    d = json.loads(out)
    assert code == 0 and d["sup_tpl"] is None and "disjoint supports" in d["sup_tpl_reason"]
    assert d["tpl"] == pytest.approx([1.5] * 5)  # L(a) = a: TPL_t = T epsilon
    code, out, _ = cli("leakage", path, "--target", "1", "--json")
    assert code == 0 and json.loads(out)["ends"]["applicable"] is False


def test_backward_matrix_and_families(cli, tmp_path):
    fam = {"transitions": [[[0.8, 0.2], [0.1, 0.9]], [[0.6, 0.4], [0.3, 0.7]]], "length": 6,
           "backward": [[[0.7, 0.3], [0.2, 0.8]], [[0.5, 0.5], [0.4, 0.6]]]}
    code, out, _ = cli("leakage", write(tmp_path, "f.json", fam), "--epsilon", "0.4", "--json")
    d = json.loads(out)
    assert code == 0 and [m["backward"] for m in d["members"]] == ["given", "given"]
    refs = [straightforward(np.array(P), [0.4] * 6, np.array(B)) for P, B in zip(fam["transitions"], fam["backward"], strict=True)]
    np.testing.assert_allclose(d["tpl"], np.maximum(refs[0][2], refs[1][2]), rtol=1e-9)


@pytest.mark.parametrize("spec, args, fragment", [
    ({"box": {"p0": [0.1, 0.9], "p1": [0.1, 0.9]}, "length": 10}, ["--epsilon", "1"], "parameter box"),
    ({"transition": [[0.8, 0.2], [0.1, 0.9]], "length": 5}, ["--epsilon", "-1"], "'epsilon'"),
    ({"transition": [[0.8, 0.2], [0.1, 0.9]], "length": 5}, ["--epsilon", "nan"], "'epsilon'"),
    ({"transition": [[0.8, 0.2], [0.1, 0.9]], "length": 5}, ["--epsilons", "0.1,-2"], "budget 2"),
    ({"transition": [[0.8, 0.2], [0.1, 0.9]], "length": 5}, ["--epsilons", "0.1,x"], "comma-separated"),
    ({"transition": [[0.8, 0.2], [0.1, 0.9]], "length": 5}, ["--epsilon", "1", "--length", "0"], "'length'"),
    ({"transition": [[0.8, 0.2], [0.1, 0.9]], "length": 5}, ["--epsilon", "1", "--target", "2"], "not allowed"),
    ({"transition": [[0.8, 0.2], [0.1, 0.9]], "length": 5}, ["--target", "0"], "'target'"),
    ({"transition": [[0.8, 0.2], [0.1, 0.9]], "length": 5}, [], "required"),
    ({"transition": [[0.8, 0.2], [0.1, 0.9]], "backward": [[0.5, 0.6], [0.1, 0.9]], "length": 5},
     ["--epsilon", "1"], "'backward'"),
    ({"transition": [[0.5, 0.5], [0.0, 1.0]], "length": 5}, ["--epsilon", "1"], "transient"),
    ({"transition": [[0.8, 0.2], [0.1, 0.9]], "length": 5, "extra": 1}, ["--epsilon", "1"], "unknown key"),
])
def test_bad_input_exits_2_with_one_line(cli, capsys, tmp_path, spec, args, fragment):
    try:
        code, out, err = cli("leakage", write(tmp_path, "bad.json", spec), *args)
    except SystemExit as exc:  # argparse's usage errors (one line, exit 2) end the process
        code, (out, err) = exc.code, capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("puffgm: error:") and fragment in err
    assert "Traceback" not in err


def test_missing_file_and_no_pgmpy(tmp_path):
    code = ("import sys; from puffgm.cli import main; "
            f"rc = main(['leakage', {write(tmp_path, 'c.json', {'transition': [[0.9, 0.1], [0.4, 0.6]], 'length': 20})!r}, "
            "'--epsilon', '0.5', '--json']); print(rc, 'pgmpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "0 False"
    proc = subprocess.run([sys.executable, "-m", "puffgm", "leakage", str(tmp_path / "none.json"), "--epsilon", "1"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "does not exist" in proc.stderr
