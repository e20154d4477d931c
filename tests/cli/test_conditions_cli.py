"""``puffgm conditions``: Bai et al. Theorems 4-5 on a mechanism given as JSON; a failing check exits 0."""

import json
import math
import pathlib
import re

import numpy as np
import pytest

from puffgm.framework import Instantiation, Secret
from puffgm.framework.composition_conditions import check_composition_conditions

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _spec(tmp_path, mechanism=None, **extra):
    spec = {"nodes": ["X"], "states": {"X": [0, 1]}, "priors": [{"table": [0.5, 0.5]}],
            "pairs": [[{"node": "X", "value": 0}, {"node": "X", "value": 1}]]}
    if mechanism is not None:
        spec["mechanism"] = mechanism
    spec.update(extra)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(spec))
    return path


def test_randomised_response_holds_then_fails_below_its_loss(cli):
    path = EXAMPLES / "conditions_randomised_response.json"
    code, out, err = cli("conditions", path, "--json")
    assert code == 0 and err == ""
    d = json.loads(out)
    assert d["holds"] is True and d["dp_holds"] is True and d["epsilon_source"] == "exact single-run audit"
    assert d["nfc_value"] == pytest.approx(math.log(3)) and d["instantiation"]
    # the same answer as the Python function
    inst = Instantiation([np.array([0.5, 0.5]), np.array([0.8, 0.2])],
                         [(Secret.value("X", 0), Secret.value("X", 1))], nodes=["X"], states=[2])
    ref = check_composition_conditions(inst, np.array([[0.75, 0.25], [0.25, 0.75]]))
    assert d["nfc_value"] == pytest.approx(ref.nfc_value) and d["n_checks"] == ref.n_checks
    code, out, err = cli("conditions", path, "--epsilon", "0.5", "--json")
    assert code == 0 and err == ""  # a failing check is a result, not an error
    d = json.loads(out)
    assert d["holds"] is False and d["epsilon"] == 0.5 and d["n_violations"] > 0 and d["worst"]["pair"]
    code, out, err = cli("conditions", path, "--epsilon", "0.5")
    assert code == 0 and out.splitlines()[0].endswith("FAIL at epsilon 0.5 (given)")


def test_collapse_example_fails_with_infinite_value(cli):
    code, out, err = cli("conditions", EXAMPLES / "conditions_collapse.json", "--json")
    assert code == 0 and err == ""
    d = json.loads(out)
    assert d["holds"] is False and d["nfc_value"] is None and d["worst"]["value"] is None  # inf as null
    assert d["epsilon"] == pytest.approx(0.0, abs=1e-12)  # zero leakage alone (Bai et al. Example 4.1)
    code, out, _ = cli("conditions", EXAMPLES / "conditions_collapse.json")
    assert code == 0 and "FAIL" in out and "privacy collapse" in out


def test_several_mechanisms(cli, tmp_path):
    rr = {"type": "finite", "table": [[0.75, 0.25], [0.25, 0.75]]}
    path = _spec(tmp_path, mechanisms=[rr, {"table": [[0.6, 0.4], [0.4, 0.6]]}])
    code, out, err = cli("conditions", path, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["holds"] is True and any("Several mechanisms" in n for n in d["notes"])


@pytest.mark.parametrize("mechanism, extra, message", [
    ({"type": "laplace", "scale": 1.0}, {}, "finite-range mechanisms"),
    ({"type": "finite", "table": [[0.5, 0.6], [0.5, 0.5]]}, {}, "sums to 1.1"),
    ({"type": "finite", "table": [[0.5, 0.5]]}, {}, "shape"),
    ({"type": "finite", "table": [["a", "b"], [1, 0]]}, {}, "array of numbers"),
    ({"type": "finite", "table": [[1, 0], [0, 1]]}, {}, "not Pufferfish private for any finite epsilon"),
    ({"type": "finite", "table": [[0.5, 0.5], [0.5, 0.5]], "runs": 2}, {}, "'runs' does not apply"),
    ({"table": [[0.5, 0.5], [0.5, 0.5]]}, {"mechanisms": []}, "not both"),
    (None, {"mechanisms": []}, "non-empty list"),
    (None, {}, "'mechanism' or 'mechanisms'"),
    ({"table": [[0.5, 0.5], [0.5, 0.5]]}, {"pairs": [1, 2]}, "list of \\[secret, secret\\] pairs"),
    ({"table": [[0.5, 0.5], [0.5, 0.5]]}, {"priors": {}}, "non-empty list"),
])
def test_bad_inputs_exit_2_with_one_line(cli, tmp_path, mechanism, extra, message):
    code, out, err = cli("conditions", _spec(tmp_path, mechanism, **extra))
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("puffgm: error: ")
    assert re.search(message, err), err


def test_bad_epsilon_and_files(cli, tmp_path):
    path = EXAMPLES / "conditions_randomised_response.json"
    for eps in ("-1", "nan", "inf"):
        code, _, err = cli("conditions", path, "--epsilon", eps)
        assert code == 2 and len(err.splitlines()) == 1 and "epsilon" in err
    code, _, err = cli("conditions", tmp_path / "missing.json")
    assert code == 2 and len(err.splitlines()) == 1
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = cli("conditions", bad)
    assert code == 2 and "not valid JSON" in err and len(err.splitlines()) == 1


def test_help_documents_the_exit_status():
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "puffgm", "conditions", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "Exit status: 0 when the check ran, whether the conditions hold or fail" in text and "'holds'" in text
