"""Network files in every format pgmpy reads: BIF, XMLBIF, Hugin NET, GeNIe XDSL, UAI, XBN.

The same network (pgmpy's bundled ASIA) in each format must give the same tables, the same
sigma_max and the same influence curve, under the file's own node and state names; a malformed
file of each format, and a file that is not a network, exit 2 with one line.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil

import numpy as np
import pytest

from puffgm import calibrate, influence_curve
from puffgm.exceptions import PriorError
from puffgm.networks.formats import SUPPORTED_FORMATS, detect_format, read_network_file
from puffgm.networks.priors import NetworkPrior, load_network, load_prior_class

ASIA = load_network("example:asia")
GENIE = os.path.join(os.path.dirname(__file__), os.pardir, "data", "asia_genie.xdsl")
#: file name -> the pgmpy writer that makes it (None: the hand-made GeNIe file of tests/data)
FILES = {
    "asia.bif": "BIFWriter",
    "asia.xmlbif": "XMLBIFWriter",
    "asia.net": "NETWriter",
    "asia.uai": "UAIWriter",
    "asia.xdsl": None,
    "asia_pgmpy.xdsl": "XDSLWriter",
    "asia.xbn": "XBNWriter",
}
#: sigma_max of ASIA at epsilon 4 (README, puffgm.calibrate's docstring)
SIGMA_AT_4 = 1.7873062873199623


@pytest.fixture(scope="module")
def asia_dir(tmp_path_factory):
    """ASIA written once in every format: pgmpy's writers, and the GeNIe-style fixture."""
    import pgmpy.readwrite as readwrite

    d = tmp_path_factory.mktemp("asia_formats")
    model = ASIA.to_pgmpy()
    for name, writer in FILES.items():
        if writer is None:
            shutil.copy(GENIE, d / name)
        else:
            getattr(readwrite, writer)(model).write(str(d / name))
    return d


def _uai_names(net: NetworkPrior) -> dict:
    """var_i -> node name for a file of pgmpy's UAIWriter (variables sorted by (cardinality text, name))."""
    order = sorted(net.nodes, key=lambda n: (str(len(net.states[n])), n))
    return {f"var_{i}": n for i, n in enumerate(order)}


def _renamed(net: NetworkPrior, names: dict, like: NetworkPrior) -> NetworkPrior:
    """``net`` with its nodes renamed by ``names`` and the state names of ``like`` (same positions)."""
    return NetworkPrior([names[n] for n in net.nodes], {names[n]: like.states[names[n]] for n in net.nodes},
                        {names[n]: tuple(names[p] for p in net.parents[n]) for n in net.nodes},
                        {names[n]: net.cpts[n] for n in net.nodes}, name=net.name)


def _as_asia(net: NetworkPrior, names: dict | None = None) -> NetworkPrior:
    if names is not None:
        net = _renamed(net, names, ASIA)
    assert set(net.nodes) == set(ASIA.nodes) and net.states == {n: ASIA.states[n] for n in net.nodes}
    return net.reordered(ASIA.states, ASIA.parents)


def _assert_same_tables(got: NetworkPrior, want: NetworkPrior = ASIA):
    for n in want.nodes:
        np.testing.assert_allclose(got.cpts[n], want.cpts[n], rtol=0, atol=1e-15)


def _uai_layout_of_the_format(net: NetworkPrior) -> str:
    """A UAI file as the format specifies it: scope (parents..., child), the last variable varying fastest."""
    index = {n: i for i, n in enumerate(net.nodes)}
    lines = ["BAYES", str(len(net.nodes)), " ".join(str(len(net.states[n])) for n in net.nodes), str(len(net.nodes))]
    lines += [" ".join(map(str, [len(net.parents[n]) + 1] + [index[p] for p in net.parents[n]] + [index[n]]))
              for n in net.nodes]
    for n in net.nodes:
        table = np.moveaxis(net.cpts[n], 0, -1)
        lines += ["", str(table.size), " ".join(f"{v:.17e}" for v in table.ravel())]
    return "\n".join(lines) + "\n"


def _hugin_text(net: NetworkPrior) -> str:
    """A Hugin .net file as Hugin saves it: a net block, labels, positions and % comments in the tables."""
    out = ["% written by the tests in the layout of Hugin's .net files", "net", "{", '    node_size = (80 40);', "}"]
    for k, n in enumerate(net.nodes):
        states = " ".join(f'"{s}"' for s in net.states[n])
        out += ["", f"node {n}", "{", f'    label = "{n.title()} (100%)";', f"    position = ({40 * k} 60);",
                f"    states = ({states});", "}"]
    for n in net.nodes:
        pa = net.parents[n]
        cards = [len(net.states[p]) for p in pa]
        rows = []
        for idx in np.ndindex(*cards):
            values = " ".join(repr(float(v)) for v in net.cpts[n][(slice(None),) + idx])
            opens = sum(1 for k in range(len(idx)) if all(i == 0 for i in idx[k:]))
            closes = sum(1 for k in range(len(idx)) if all(i == c - 1 for i, c in zip(idx[k:], cards[k:], strict=True)))
            rows.append(("(" * opens + f"( {values} )" + ")" * closes,
                         "  ".join(f"{p}={net.states[p][i]}" for p, i in zip(pa, idx, strict=True))))
        lines = [body + (";" if k == len(rows) - 1 else "") + (f"\t%  {cfg}" if cfg else "")
                 for k, (body, cfg) in enumerate(rows)]
        head = f"potential ( {n} | {' '.join(pa)} )" if pa else f"potential ( {n} )"
        out += ["", head, "{", "    data = " + "\n\t    ".join(lines), "}"]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ same network, same answers
@pytest.mark.parametrize("name", sorted(FILES))
def test_asia_in_every_format_has_the_tables_and_names_of_the_file(asia_dir, name):
    net = load_network(asia_dir / name)
    if name.endswith(".uai"):  # UAI keeps no names: var_i and states 0, 1, ... as pgmpy names them
        assert sorted(net.nodes) == sorted(f"var_{i}" for i in range(8))
        assert all(s == ("0", "1") for s in net.states.values())
        assert any("pgmpy's UAIWriter" in note for note in net.notes)
        _assert_same_tables(_as_asia(net, _uai_names(ASIA)))
    else:
        assert not net.notes
        _assert_same_tables(_as_asia(net))


@pytest.mark.parametrize("name", ["asia.xdsl", "asia.net", "asia.uai", "asia.xmlbif", "asia.bif", "asia.xbn"])
def test_cli_gives_sigma_max_8_at_epsilon_1_in_every_format(cli, asia_dir, name):
    code, out, err = cli("calibrate", asia_dir / name, "--epsilon", "1", "--json", "--quiet")
    assert code == 0, err
    assert json.loads(out)["sigma_max"] == 8.0
    code, out, err = cli("calibrate", asia_dir / name, "--epsilon", "4", "--json", "--quiet")
    res = json.loads(out)
    assert res["sigma_max"] == pytest.approx(SIGMA_AT_4, rel=1e-12)
    names = _uai_names(ASIA) if name.endswith(".uai") else {n: n for n in ASIA.nodes}
    assert names[res["worst_node"]] == "either"  # the file's own name of the node
    assert {names[q] for q in res["quilt"]["quilt"]} == {"asia", "bronc"}


@pytest.mark.parametrize("name", sorted(FILES))
def test_influence_curve_is_the_same_in_every_format(asia_dir, name):
    want = influence_curve("example:asia")
    got = influence_curve(str(asia_dir / name))
    assert got.a == pytest.approx(want.a, rel=1e-12)
    names = _uai_names(ASIA) if name.endswith(".uai") else {n: n for n in ASIA.nodes}
    node, quilt = got.witnesses[2].node, got.witnesses[2].quilt
    assert (names[node], {names[q] for q in quilt}) == (want.witnesses[2].node, set(want.witnesses[2].quilt))


def test_a_class_may_mix_formats(asia_dir):
    theta = load_prior_class([asia_dir / "asia.bif", asia_dir / "asia.xdsl", asia_dir / "asia.net"])
    assert len(theta) == 3
    assert calibrate(theta, epsilon=4.0).sigma_max == pytest.approx(SIGMA_AT_4, rel=1e-12)


# ------------------------------------------------------------- by content, gzipped
@pytest.mark.parametrize("name", sorted(FILES))
def test_gzipped_unnamed_and_misnamed_files_are_read_by_content(asia_dir, tmp_path, name):
    data = (asia_dir / name).read_bytes()
    stem, ext = os.path.splitext(name)
    (tmp_path / f"{name}.gz").write_bytes(gzip.compress(data))
    (tmp_path / f"{stem}_gz").write_bytes(gzip.compress(data))  # gzip by magic bytes, no extension
    (tmp_path / stem).write_bytes(data)
    wrong = ".net" if ext != ".net" else ".bif"
    (tmp_path / f"{stem}{wrong}").write_bytes(data)
    want = load_network(asia_dir / name)
    for f in (f"{name}.gz", f"{stem}_gz", stem, f"{stem}{wrong}"):
        got = load_network(tmp_path / f)
        assert got.fingerprint == want.fingerprint
        misnamed = f == f"{stem}{wrong}"
        assert any("by its content (its extension names" in n for n in got.notes) == misnamed


def test_detect_format_by_content():
    assert detect_format(b"// made by hand\n/* BIF */ network unknown {\n}").key == "bif"
    assert detect_format(b'<?xml version="1.0"?>\n<!DOCTYPE BIF [\n<!ELEMENT BIF (NETWORK)*>\n]>\n<BIF>').key == "xmlbif"
    assert detect_format(b"\xef\xbb\xbf<!-- GeNIe -->\n<smile version='1.0'>").key == "xdsl"
    assert detect_format(b"<ANALYSISNOTEBOOK NAME='x'>").key == "xbn"
    assert detect_format(b"% Hugin\nnet\n{\n}").key == "net"
    assert detect_format(b"node a\n{\n}").key == "net"
    assert detect_format(b"# comment\nBAYES\n3\n").key == "uai"
    for other in (b"net Network1\n{\n}", b"// ~->[DNET-1]->~\nbnet x {}", b"<pomdpx/>", b"{}", b"", b"\x89PNG\r\n"):
        assert detect_format(other) is None


# ------------------------------------------------------------------------- failures
MALFORMED = {
    "bad.bif": ("network x {\n}\nvariable a {\n  type discrete [ 2 ] { y, n };\n}\n"
                "probability ( a ) {\n  table 0.5, 0.4 0.1;\n}\n", "pgmpy's BIFReader"),
    "bad.xml": ('<?xml version="1.0"?>\n<BIF VERSION="0.3"><NETWORK><NAME>x</NAME><VARIABLE TYPE="nature">'
                "<NAME>a</NAME><OUTCOME>y</OUTCOME><OUTCOME>n</OUTCOME></VARIABLE><DEFINITION><FOR>a</FOR>"
                "<TABLE>0.5 0.3 0.2</TABLE></DEFINITION></NETWORK></BIF>", "pgmpy's XMLBIFReader"),
    "bad.net": ('net {\n}\nnode a {\n  states = ("y" "n");\n}\npotential (a | b) {\n  data = (0.5 0.5);\n}\n',
                "pgmpy's NETReader"),
    "bad.xdsl": ('<?xml version="1.0"?>\n<smile id="x"><nodes><cpt id="a"><state id="y"/>'
                 "<probabilities>0.5 0.5", "pgmpy's XDSLReader"),
    "bad.uai": ("BAYES\n2\n2 2\n2\n1 0\n2 0 1\n\n2\n0.5 0.5\n4\n0.5 0.5 0.5\n", "puffgm's UAI reader"),
    "bad.xbn": ('<ANALYSISNOTEBOOK><BNMODEL><VARIABLES><VAR NAME="a"><STATENAME>y</STATENAME></VAR>'
                "</VARIABLES></BNMODEL></ANALYSISNOTEBOOK>", "pgmpy's XBNReader"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_file_of_each_format_exits_2_with_one_line_naming_its_reader(cli, tmp_path, name):
    text, reader = MALFORMED[name]
    (tmp_path / name).write_text(text)
    code, out, err = cli("calibrate", tmp_path / name, "--epsilon", "1")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"Reading '{name}' with {reader} failed: " in err


@pytest.mark.parametrize("name,content,hint", [
    ("notes.txt", "Meeting notes\n- calibrate the asia network\n", None),
    ("notes.net", "Meeting notes\n", "does not look like Hugin NET"),
    ("empty.bif", "", "the file is empty"),
    ("chain.txt", '{"transitions": [[0.9, 0.1], [0.2, 0.8]]}', "looks like JSON"),
    ("asia.dne", "// ~->[DNET-1]->~\nbnet asia {\n}\n", "Netica"),
    ("model.xml", "<pomdpx version='1.0'/>", "<pomdpx>"),
])
def test_a_file_that_is_not_a_network_exits_2_naming_the_formats(cli, tmp_path, name, content, hint):
    (tmp_path / name).write_text(content)
    code, out, err = cli("calibrate", tmp_path / name, "--epsilon", "1")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"'{name}' is not a Bayesian network in a format puffgm reads ({SUPPORTED_FORMATS})" in err
    assert hint is None or hint in err
    code, _, err2 = cli("curve", tmp_path / name)
    assert code == 2 and err2 == err


def test_validation_applies_to_every_format(tmp_path):
    import pgmpy.readwrite as readwrite
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    for slip, ok in ((1e-3, False), (5e-7, True)):
        model = DiscreteBayesianNetwork([("A", "B")])
        model.add_cpds(TabularCPD("A", 2, [[0.3], [0.7 + slip]], state_names={"A": ["a0", "a1"]}),
                       TabularCPD("B", 2, [[0.9, 0.2], [0.1, 0.8]], evidence=["A"], evidence_card=[2],
                                  state_names={"B": ["b0", "b1"], "A": ["a0", "a1"]}))
        for writer, ext in (("BIFWriter", "bif"), ("XMLBIFWriter", "xmlbif"), ("NETWriter", "net"),
                            ("UAIWriter", "uai"), ("XDSLWriter", "xdsl"), ("XBNWriter", "xbn")):
            path = tmp_path / f"slip{ok}.{ext}"
            getattr(readwrite, writer)(model).write(str(path))
            if ok:
                net = load_network(path)
                assert any("renormalised 1 CPD column(s)" in n for n in net.notes), ext
                assert net.cpts[net.nodes[0]].sum() == pytest.approx(1.0, abs=1e-15)
            else:
                with pytest.raises(PriorError, match=r"sums to 1\.001, off 1 by more than 1e-06"):
                    load_network(path)


# ------------------------------------------------------------------ the readers' details
def test_uai_is_read_in_the_layout_of_the_format(tmp_path):
    path = tmp_path / "asia_spec.uai"
    path.write_text(_uai_layout_of_the_format(ASIA))
    net = load_network(path)
    assert not net.notes  # the format's own layout: no note
    _assert_same_tables(_as_asia(net, {f"var_{i}": n for i, n in enumerate(ASIA.nodes)}))
    # the two-parent nodes keep their parents in scope order, whatever the hash seed
    either = f"var_{ASIA.nodes.index('either')}"
    assert net.parents[either] == tuple(f"var_{ASIA.nodes.index(p)}" for p in ASIA.parents["either"])


def test_a_uai_markov_network_is_refused(tmp_path):
    path = tmp_path / "grid.uai"
    path.write_text("MARKOV\n2\n2 2\n1\n2 0 1\n\n4\n1 2 3 4\n")
    with pytest.raises(PriorError, match=r"^'grid.uai' is a UAI Markov network \(type MARKOV\), not a Bayesian"):
        load_network(path)


def test_genie_deterministic_nodes_and_line_breaks_are_read(tmp_path):
    with open(GENIE, encoding="latin-1", newline="") as fh:  # GeNIe writes CRLF line ends
        text = fh.read()
    cpt = ("<cpt id=\"either\">\r\n\t\t\t<state id=\"yes\" />\r\n\t\t\t<state id=\"no\" />\r\n"
           "\t\t\t<parents>tub lung</parents>\r\n\t\t\t<probabilities>1 0 1 0 1 0 0 1</probabilities>\r\n\t\t</cpt>")
    assert cpt in text
    det = ("<deterministic id=\"either\">\r\n\t\t\t<state id=\"yes\" />\r\n\t\t\t<state id=\"no\" />\r\n"
           "\t\t\t<parents>\n tub\n lung </parents>\r\n\t\t\t<resultingstates>yes yes yes no</resultingstates>\r\n"
           "\t\t</deterministic>")
    text = text.replace(cpt, det).replace("0.9 0.1 0.7 0.3", "0.9\n  0.1\t0.7 0.3")
    (tmp_path / "asia_det.xdsl").write_text(text, encoding="latin-1", newline="")
    _assert_same_tables(_as_asia(load_network(tmp_path / "asia_det.xdsl")))
    (tmp_path / "asia_nm.xdsl").write_text(text.replace("deterministic", "noisymax"), encoding="latin-1", newline="")
    with pytest.raises(PriorError, match="node 'either' is a noisy-MAX node, and puffgm reads chance nodes"):
        load_network(tmp_path / "asia_nm.xdsl")


def test_hugin_files_with_comments_labels_and_nested_tables(tmp_path):
    path = tmp_path / "asia_hugin.net"
    path.write_text(_hugin_text(ASIA))
    net = load_network(path)
    assert net.nodes == ASIA.nodes
    _assert_same_tables(_as_asia(net))


def test_hugin_state_names_with_spaces_and_commas_are_kept(tmp_path):
    path = tmp_path / "pollution.net"
    path.write_text('net\n{\n}\nnode A\n{\n    label = "Pollution";\n    states = ("very low" "high, or worse");\n}\n'
                    'node B\n{\n    states = ("no" "yes");\n}\npotential ( A )\n{\n    data = ( 0.3 0.7 );\n}\n'
                    'potential ( B | A )\n{\n    data = (( 0.9 0.1 )\t%  A=very low\n'
                    '\t    ( 0.2 0.8 ));\t%  A=high, or worse\n}\n')
    net = load_network(path)
    assert net.states == {"A": ("very low", "high, or worse"), "B": ("no", "yes")}
    np.testing.assert_array_equal(net.cpts["B"], [[0.9, 0.2], [0.1, 0.8]])


def test_files_are_cached_per_path_and_modification_time(asia_dir, tmp_path):
    path = tmp_path / "asia.net"
    shutil.copy(asia_dir / "asia.net", path)
    first = load_network(path)
    assert load_network(str(path)) is first
    text = path.read_text().replace("(0.01 0.99)", "(0.02 0.98)")
    path.write_text(text)
    os.utime(path, (os.path.getatime(path), os.path.getmtime(path) + 10))
    again = load_network(path)
    assert again is not first and again.cpts["asia"][0] == 0.02


def test_read_network_file_names_the_file_in_errors(tmp_path):
    with pytest.raises(PriorError, match=r"^Cannot read network file 'broken.bif.gz': its gzip data is corrupt"):
        (tmp_path / "broken.bif.gz").write_bytes(gzip.compress(b"network x {}")[:12])
        read_network_file(tmp_path / "broken.bif.gz")
