"""`puffgm curve` and `puffgm translate`."""

import itertools
import json
import sys

import pytest


def test_curve_json(cli):
    code, out, _ = cli("curve", "example:cancer", "--json")
    assert code == 0
    d = json.loads(out)
    assert [p["b"] for p in d["points"]] == [1, 2, 3, 4, 5]
    assert d["points"][-1]["a"] == 0.0 and len(d["witnesses"]) == 5
    assert all(x["a"] >= y["a"] for x, y in itertools.pairwise(d["points"]))


def test_curve_several_priors_and_chain_spec(tmp_path, cli):
    spec = tmp_path / "chain.json"
    spec.write_text(json.dumps({"transition": [[0.9, 0.1], [0.3, 0.7]], "length": 50}))
    code, out, _ = cli("curve", "example:cancer", str(spec), "--max-b", "4", "--json", "--each")
    assert code == 0
    d = json.loads(out)
    assert len(d["curves"]) == 2 and d["curves"][1]["method"] == "chain"
    assert len(d["curves"][1]["points"]) == 4
    code, out, _ = cli("curve", "example:asia")
    assert code == 0 and "b=1" in out and "a=inf" in out


def test_translate_both_ways(cli):
    code, out, _ = cli("translate", "example:cancer", "--epsilon", "4", "--json")
    d = json.loads(out)
    assert code == 0 and d["direction"] == "puffer_to_dp" and d["point"]["b"] >= 1
    e_dp = d["epsilon_dp"]
    code, out, _ = cli("translate", "example:cancer", "--epsilon-dp", str(e_dp), "--json")
    assert json.loads(out)["epsilon_puffer"] <= 4 + 1e-9
    code, out, _ = cli("translate", "example:cancer", "--epsilon", "2")
    assert "point used" in out


def test_errors_are_one_line(cli):
    code, _, err = cli("curve", "example:cancer", "--max-b", "0")
    assert code == 2 and err.count("\n") == 1 and "max-b" in err
    code, _, err = cli("translate", "example:cancer", "--epsilon", "-1")
    assert code == 2 and "epsilon" in err
    code, _, err = cli("curve", "example:nosuchnet")
    assert code == 2 and err.count("\n") == 1


def test_plot(tmp_path, monkeypatch, cli):
    pytest.importorskip("matplotlib")
    png = tmp_path / "c.png"
    code, out, _ = cli("curve", "example:cancer", "example:asia", "--each", "--plot", str(png))
    assert code == 0 and png.stat().st_size > 1000


def test_plot_without_matplotlib(tmp_path, monkeypatch, cli):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    code, _, err = cli("curve", "example:cancer", "--plot", str(tmp_path / "x.png"))
    assert code == 2 and "puffgm[plot]" in err and err.count("\n") == 1


# -- one pooling convention: several PRIORs form one class Theta (as in calibrate) ----------

_BIF = """network n {{ }}
variable A {{ type discrete [ 2 ] {{ a0, a1 }}; }}
variable B {{ type discrete [ 2 ] {{ b0, b1 }}; }}
variable C {{ type discrete [ 2 ] {{ c0, c1 }}; }}
probability ( A ) {{ table {pa}, {qa}; }}
probability ( B | A ) {{ (a0) {b0}, {b0c}; (a1) {b1}, {b1c}; }}
probability ( C | B ) {{ (b0) {c0}, {c0c}; (b1) {c1}, {c1c}; }}
"""


def _bif(path, pa, b0, b1, c0, c1):
    path.write_text(_BIF.format(pa=pa, qa=round(1 - pa, 10), b0=b0, b0c=round(1 - b0, 10), b1=b1,
                                b1c=round(1 - b1, 10), c0=c0, c0c=round(1 - c0, 10), c1=c1, c1c=round(1 - c1, 10)))
    return str(path)


def _two_nets(tmp_path):
    return (_bif(tmp_path / "n1.bif", 0.3, 0.9, 0.2, 0.8, 0.1),
            _bif(tmp_path / "n2.bif", 0.6, 0.6, 0.05, 0.7, 0.4))


def _two_chains(tmp_path):
    s1, s2 = tmp_path / "c1.json", tmp_path / "c2.json"
    s1.write_text(json.dumps({"transition": [[0.9, 0.1], [0.3, 0.7]], "initial": [1, 0], "length": 12}))
    s2.write_text(json.dumps({"transition": [[0.6, 0.4], [0.05, 0.95]], "initial": "stationary", "length": 12}))
    return str(s1), str(s2)


def _a(points):
    return [p["a"] for p in points]


@pytest.mark.parametrize("kind", ["networks", "chains"])
def test_several_priors_form_one_class(tmp_path, kind, cli):
    p1, p2 = (_two_nets if kind == "networks" else _two_chains)(tmp_path)
    code, out, _ = cli("curve", p1, p2, "--json")
    assert code == 0
    pooled = json.loads(out)
    assert "curves" not in pooled and pooled["priors"] == [p1, p2] and pooled["prior"] == f"{p1} + {p2}"
    code, out, _ = cli("curve", p1, p2, "--json", "--each")
    each = json.loads(out)["curves"]
    assert [c["prior"] for c in each] == [p1, p2]
    # the class curve is the pointwise max of the members' own curves (Pufferfish is per prior)
    assert _a(pooled["points"]) == [max(x, y) for x, y in zip(_a(each[0]["points"]), _a(each[1]["points"]), strict=True)]
    assert _a(each[0]["points"]) != _a(each[1]["points"])  # the test can tell the members apart
    # the same class through the library
    from puffgm.api import influence_curve
    if kind == "networks":
        lib = influence_curve([p1, p2])
    else:
        from puffgm.chains import ChainPriorClass
        from puffgm.chains.spec import load_chain_spec
        lib = influence_curve(ChainPriorClass([m for p in (p1, p2) for m in load_chain_spec(p).members]))
    assert pooled["fingerprint"] == lib.fingerprint and _a(pooled["points"]) == _a(lib.to_dict()["points"])
    # --theta is an accepted no-op alias of the default
    code, out, _ = cli("curve", p1, p2, "--json", "--theta")
    alias = json.loads(out)
    for d in (alias, pooled):
        d["details"].pop("seconds", None)
    assert code == 0 and alias == pooled


def test_translate_pools_like_calibrate(tmp_path, cli):
    p1, p2 = _two_nets(tmp_path)
    from puffgm.api import influence_curve
    from puffgm.mechanisms.translation import dp_epsilon
    code, out, _ = cli("translate", p1, p2, "--epsilon", "3", "--json")
    d = json.loads(out)
    assert code == 0 and d["priors"] == [p1, p2]
    assert d["epsilon_dp"] == dp_epsilon(influence_curve([p1, p2]), epsilon=3.0).epsilon_dp
    code, out, _ = cli("translate", p1, p2, "--epsilon", "3", "--json", "--each")
    each = json.loads(out)["translations"]
    assert [t["prior"] for t in each] == [p1, p2]
    # one class can never translate to more than its most demanding member allows
    assert d["epsilon_dp"] <= min(t["epsilon_dp"] for t in each) + 1e-12
    code, out, _ = cli("translate", p1, p2, "--epsilon-dp", "0.2", "--json")
    back = json.loads(out)
    code, out, _ = cli("translate", p1, p2, "--epsilon-dp", "0.2", "--json", "--each")
    assert back["epsilon_puffer"] >= max(t["epsilon_puffer"] for t in json.loads(out)["translations"]) - 1e-12


def test_pooling_errors_are_one_line(tmp_path, cli):
    p1, _ = _two_nets(tmp_path)
    c1, _ = _two_chains(tmp_path)
    for cmd in (["curve", p1, c1], ["translate", p1, c1, "--epsilon-dp", "1"]):
        code, _, err = cli(*cmd)
        assert code == 2 and err.count("\n") == 1 and "--each" in err
    code, _, err = cli("curve", p1, c1, "--each", "--theta")
    assert code == 2 and err.count("\n") == 1 and "--each" in err
    code, _, err = cli("curve", "example:cancer", "example:asia")  # different graphs: not one class
    assert code == 2 and err.count("\n") == 1


def test_plot_pooled_class(tmp_path, cli):
    pytest.importorskip("matplotlib")
    p1, p2 = _two_nets(tmp_path)
    png = tmp_path / "pooled.png"
    code, out, _ = cli("curve", p1, p2, "--plot", str(png))
    assert code == 0 and png.stat().st_size > 1000 and f"{p1} + {p2}:" in out and out.count("b=1") == 1
