"""`puffgm curve` and `puffgm translate`."""

import json
import sys

import pytest

from puffgm.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_curve_json(capsys):
    code, out, _ = run(capsys, "curve", "example:cancer", "--json")
    assert code == 0
    d = json.loads(out)
    assert [p["b"] for p in d["points"]] == [1, 2, 3, 4, 5]
    assert d["points"][-1]["a"] == 0.0 and len(d["witnesses"]) == 5
    assert all(x["a"] >= y["a"] for x, y in zip(d["points"], d["points"][1:]))


def test_curve_several_priors_and_chain_spec(capsys, tmp_path):
    spec = tmp_path / "chain.json"
    spec.write_text(json.dumps({"transition": [[0.9, 0.1], [0.3, 0.7]], "length": 50}))
    code, out, _ = run(capsys, "curve", "example:cancer", str(spec), "--max-b", "4", "--json")
    assert code == 0
    d = json.loads(out)
    assert len(d["curves"]) == 2 and d["curves"][1]["method"] == "chain"
    assert len(d["curves"][1]["points"]) == 4
    code, out, _ = run(capsys, "curve", "example:asia")
    assert code == 0 and "b=1" in out and "a=inf" in out


def test_translate_both_ways(capsys):
    code, out, _ = run(capsys, "translate", "example:cancer", "--epsilon-puffer", "4", "--json")
    d = json.loads(out)
    assert code == 0 and d["direction"] == "puffer_to_dp" and d["point"]["b"] >= 1
    e_dp = d["epsilon_dp"]
    code, out, _ = run(capsys, "translate", "example:cancer", "--epsilon-dp", str(e_dp), "--json")
    assert json.loads(out)["epsilon_puffer"] <= 4 + 1e-9
    code, out, _ = run(capsys, "translate", "example:cancer", "--epsilon-puffer", "2")
    assert "point used" in out


def test_errors_are_one_line(capsys):
    code, _, err = run(capsys, "curve", "example:cancer", "--max-b", "0")
    assert code == 2 and err.count("\n") == 1 and "max-b" in err
    code, _, err = run(capsys, "translate", "example:cancer", "--epsilon-puffer", "-1")
    assert code == 2 and "epsilon-puffer" in err
    code, _, err = run(capsys, "curve", "example:nosuchnet")
    assert code == 2 and err.count("\n") == 1


def test_plot(capsys, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    png = tmp_path / "c.png"
    code, out, _ = run(capsys, "curve", "example:cancer", "example:asia", "--plot", str(png))
    assert code == 0 and png.stat().st_size > 1000


def test_plot_without_matplotlib(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    code, _, err = run(capsys, "curve", "example:cancer", "--plot", str(tmp_path / "x.png"))
    assert code == 2 and "puffgm[plot]" in err and err.count("\n") == 1
