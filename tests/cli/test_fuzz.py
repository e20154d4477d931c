"""Fuzzing with Hypothesis: CLI inputs never give a traceback, calibrated mechanisms never exceed epsilon.

* The ``puffgm`` command on generated chain specs, parameter boxes, linear-Gaussian networks,
  Blowfish policies, sum queries for ``--method wasserstein|optimal-laplace`` and BIF files with
  broken tables: every input either succeeds (exit 0, strict JSON with ``--json``) or exits 2
  with exactly one line on stderr.
* On random small Bayesian networks (classes of one or two members, some nodes protected),
  the exact audit (:mod:`puffgm.framework`) of the calibrated Markov Quilt Mechanism and of the
  query-specific calibrations (``optimal-laplace``, ``wasserstein``) never exceeds epsilon.
"""

import json
import math
import re

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from _nets import random_network  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

FUZZ = settings(max_examples=50, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
FEW = settings(FUZZ, max_examples=25)
#: For inputs that take seconds each (a linear-Gaussian certificate, pgmpy's BIF reader).
SLOW = settings(FUZZ, max_examples=10)

# --------------------------------------------------------------------------- JSON building blocks

junk = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats() | st.text(max_size=4),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    max_leaves=6,
)
number = st.one_of(st.sampled_from([0.0, 0.05, 0.1, 0.5, 0.9, 1.0]), st.floats(-1, 2), st.floats())


edge = st.sampled_from([0, -1, 2, 0.5, 1e308, -1e-300, float("nan"), float("inf"), "", "x", None, [], {}, True,
                        10**20, [0.5, 0.5], [[1.0]]])


def _containers(value, out):
    """Every (container, key) inside a JSON value, for mutations."""
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((value, k))
            _containers(v, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append((value, i))
            _containers(v, out)
    return out


@st.composite
def mutated(draw, base):
    """A value of ``base`` with one or two entries replaced by edge values or junk, deleted, or added."""
    value = draw(base)
    for _ in range(draw(st.integers(1, 2))):
        places = _containers(value, [])
        if not places:
            return draw(junk)
        container, key = draw(st.sampled_from(places))
        action = draw(st.sampled_from(["edge", "edge", "junk", "delete", "add"]))
        if action == "delete":
            del container[key]
        elif action == "add" and isinstance(container, dict):
            container[draw(st.text(max_size=6))] = draw(junk)
        else:
            container[key] = draw(edge if action != "junk" else junk)
    return value


def valid_or_mutated(base):
    """Valid inputs half of the time, mutated ones otherwise."""
    return st.one_of(base, mutated(base))


def _rows(k, normalise):
    row = st.lists(number, min_size=k, max_size=k)
    if normalise:
        row = st.lists(st.floats(0.01, 1.0), min_size=k, max_size=k).map(lambda r: [x / sum(r) for x in r])
    return st.lists(row, min_size=k, max_size=k)


matrix = st.one_of(st.tuples(st.integers(1, 3), st.booleans()).flatmap(lambda kb: _rows(*kb)), junk)


def _invoke(cli, capsys, *argv):
    """(code, out, err) of the command in this process; argparse's usage errors (SystemExit 2) included."""
    try:
        return cli(*argv)
    except SystemExit as exc:
        out = capsys.readouterr()
        return exc.code, out.out, out.err


def _assert_clean(code, out, err, *, json_out=False):
    """Success (strict JSON when asked) or exit 2 with one line on stderr; never a traceback."""
    assert "Traceback" not in err, err
    hypothesis.event(f"exit {code}" + (f": {err.strip()[15:70]}" if code else ""))
    if code == 0:
        if json_out:
            json.loads(out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"non-strict JSON {c}")))
        return
    assert code == 2, (code, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("puffgm: error: "), err


def _write(tmp_path, name, obj):
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return path


# --------------------------------------------------------------------------- chains and boxes

def _law(k):
    return st.lists(st.one_of(st.just(0.0), st.floats(0.01, 1.0)), min_size=k, max_size=k).map(
        lambda r: [x / sum(r) for x in r] if sum(r) > 0 else [1.0] + [0.0] * (len(r) - 1))


@st.composite
def chain_spec(draw):
    k = draw(st.integers(1, 3))
    spec = {"transition": draw(st.lists(_law(k), min_size=k, max_size=k)),
            "initial": draw(st.one_of(st.sampled_from(["stationary", "any"]), _law(k))),
            "length": draw(st.integers(1, 12))}
    if draw(st.booleans()):
        m = draw(st.integers(1, 2))
        spec = {"transitions": [spec["transition"]] + draw(st.lists(st.lists(_law(k), min_size=k, max_size=k),
                                                                    min_size=m - 1, max_size=m - 1)),
                "initials": draw(st.lists(_law(k), min_size=m, max_size=m)), "length": spec["length"]}
    return spec


chain_methods = st.sampled_from(["exact", "approx", "groupdp", "gk16"])


@FUZZ
@given(spec=st.one_of(valid_or_mutated(chain_spec()), st.fixed_dictionaries({"transition": matrix}), junk),
       method=chain_methods,
       epsilon=st.sampled_from(["1", "0.2", "3"]))
def test_fuzz_chain_specs(cli, capsys, tmp_path, spec, method, epsilon):
    path = _write(tmp_path, "chain.json", spec)
    code, out, err = _invoke(cli, capsys, "calibrate", path, "--epsilon", epsilon, "--method", method, "--json")
    _assert_clean(code, out, err, json_out=True)


interval = st.tuples(st.floats(0.01, 0.5), st.floats(0.5, 0.99)).map(list)
box_spec = st.fixed_dictionaries({"box": st.fixed_dictionaries({"p0": interval, "p1": interval}),
                                  "initial": st.sampled_from(["any", "stationary"]), "length": st.integers(1, 6)})


@FUZZ
@given(spec=valid_or_mutated(box_spec), method=chain_methods)
def test_fuzz_box_specs(cli, capsys, tmp_path, spec, method):
    path = _write(tmp_path, "box.json", spec)
    code, out, err = _invoke(cli, capsys, "calibrate", path, "--epsilon", "1", "--method", method, "--json")
    _assert_clean(code, out, err, json_out=True)


# --------------------------------------------------------------------------- linear-Gaussian networks

@st.composite
def gauss_spec(draw):
    nodes = {"A": {"intercept": draw(st.floats(-1, 1)), "variance": draw(st.floats(0.2, 2.0))}}
    for name, cands in (("B", ["A"]), ("C", ["A", "B"])):
        if draw(st.booleans()):
            parents = draw(st.lists(st.sampled_from(cands), unique=True, max_size=2))
            nodes[name] = {"parents": parents, "coefficients": draw(st.lists(st.floats(-0.9, 0.9),
                                                                              min_size=len(parents),
                                                                              max_size=len(parents))),
                           "variance": draw(st.floats(0.2, 2.0))}
    return {"format": "puffgm-linear-gaussian", "bounds": [-3, 3], "delta": draw(st.sampled_from([0.5, 1.0])),
            "nodes": nodes}


@pytest.mark.slow  # a valid linear-Gaussian network takes about a second to certify
@SLOW
@given(spec=valid_or_mutated(gauss_spec()))
def test_fuzz_gaussian_specs(cli, capsys, tmp_path, spec):
    path = _write(tmp_path, "gauss.json", spec)
    code, out, err = _invoke(cli, capsys, "calibrate", path, "--epsilon", "1", "--json")
    _assert_clean(code, out, err, json_out=True)


# --------------------------------------------------------------------------- Blowfish policies

@st.composite
def blowfish_case(draw):
    """A consistent policy, query and data set: {"policy": ..., "query": ..., "data": [...]}."""
    size = draw(st.integers(2, 5))
    dom = draw(st.sampled_from(["ordered", "categorical", "grid"]))
    if dom == "ordered":
        domain, values = {"kind": "ordered", "size": size}, list(range(size))
        kinds = ["complete", "line", "distance", "partition"]
    elif dom == "categorical":
        values = [f"v{i}" for i in range(size)]
        domain, kinds = {"kind": "categorical", "values": values}, ["complete", "partition"]
    else:
        b = draw(st.integers(1, 2))
        domain, values = {"kind": "grid", "attributes": {"a": 2, "b": b}}, [[i, j] for i in range(2) for j in range(b)]
        kinds = ["complete", "attribute"] if b > 1 else ["complete"]
    g = draw(st.sampled_from(kinds))
    graph = {"kind": g}
    if g == "distance":
        graph["theta"] = draw(st.integers(1, 3))
    if g == "partition":
        cut = draw(st.integers(1, len(values)))
        graph["blocks"] = [values[:cut], values[cut:]] if cut < len(values) else [values]
    pol = {"domain": domain, "graph": graph}
    if draw(st.booleans()):
        pol["n"] = draw(st.integers(1, 3))
    query = draw(st.sampled_from([{"kind": "histogram"}, {"kind": "cumulative"}, {"kind": "linear"}]))
    if query["kind"] == "linear" and draw(st.booleans()):
        query["values"] = draw(st.lists(st.integers(-2, 4), min_size=len(values), max_size=len(values)))
    data = draw(st.lists(st.sampled_from(values), min_size=1, max_size=4))
    return {"policy": pol, "query": query, "data": data}


@FUZZ
@given(case=valid_or_mutated(blowfish_case()), method=st.sampled_from(["auto", "closed", "enumerate"]))
def test_fuzz_blowfish_policies(cli, capsys, case, method):
    code, out, err = _invoke(cli, capsys, "blowfish", "sensitivity", "--policy", json.dumps(case.get("policy")),
                             "--query", json.dumps(case.get("query")), "--method", method, "--json")
    _assert_clean(code, out, err, json_out=True)


@FUZZ
@given(case=valid_or_mutated(blowfish_case()))
def test_fuzz_blowfish_releases(cli, capsys, case):
    code, out, err = _invoke(cli, capsys, "blowfish", "release", "--policy", json.dumps(case.get("policy")),
                             "--query", json.dumps(case.get("query")), "--data", json.dumps(case.get("data")),
                             "--epsilon", "1", "--seed", "0", "--json")
    _assert_clean(code, out, err, json_out=True)


# --------------------------------------------------------------------------- queries for --query

ASIA = ("asia", "tub", "smoke", "lung", "bronc", "either", "xray", "dysp")
score_list = st.lists(st.integers(-3, 3), min_size=2, max_size=2)
query = st.one_of(
    st.fixed_dictionaries({"scores": st.dictionaries(st.sampled_from(ASIA), score_list, min_size=1, max_size=3)}),
    st.fixed_dictionaries({"scores": score_list}),
    st.fixed_dictionaries({"count": st.sampled_from(["yes", "no", 0, 1])}),
)


@FUZZ
@given(q=valid_or_mutated(query), method=st.sampled_from(["wasserstein", "optimal-laplace"]))
def test_fuzz_query_json(cli, capsys, q, method):
    code, out, err = _invoke(cli, capsys, "calibrate", "example:asia", "--epsilon", "1", "--method", method,
                             "--query", json.dumps(q), "--max-sum-length", "4096", "--json")
    _assert_clean(code, out, err, json_out=True)


# --------------------------------------------------------------------------- BIF text with broken tables

token = st.one_of(number.map(lambda x: repr(x) if math.isfinite(x) else str(x)),
                  st.sampled_from(["0.5", "0.25", "1", "0", "-0.1", "x", "", ";", "1e400", "nan"]))


@st.composite
def _table(draw, k):
    """``k`` BIF numbers: a probability law half of the time, broken entries otherwise."""
    if draw(st.booleans()):
        law = draw(_law(k))
        return [repr(x) for x in law]
    return draw(st.lists(token, min_size=max(k - 1, 0), max_size=k + 1))


@st.composite
def bif_text(draw):
    """A two-node BIF (A -> B) whose declarations and tables are broken in some examples."""
    ka, kb = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    declared = draw(st.sampled_from([ka, ka, ka + 1, max(ka - 1, 0)]))
    a_states = ", ".join(f"a{i}" for i in range(ka))
    b_states = ", ".join(f"b{i}" for i in range(kb))
    rows = [f"  (a{i}) {', '.join(draw(_table(kb)))};" for i in range(draw(st.sampled_from([ka, ka, ka - 1, ka + 1])))]
    text = (f"network fuzz {{ }}\nvariable A {{ type discrete [ {declared} ] {{ {a_states} }}; }}\n"
            f"variable B {{ type discrete [ {kb} ] {{ {b_states} }}; }}\n"
            f"probability ( A ) {{ table {', '.join(draw(_table(ka)))}; }}\n"
            "probability ( B | A ) {\n" + "\n".join(rows) + "\n}\n")
    if draw(st.integers(0, 4)) == 0:  # cut short
        text = text[:draw(st.integers(0, len(text)))]
    return text


@pytest.mark.slow  # pgmpy's BIF reader, the fallback for broken files, takes seconds per file
@SLOW
@given(text=bif_text())
def test_fuzz_bif_tables(cli, capsys, tmp_path, text):
    path = _write(tmp_path, "net.bif", text)
    code, out, err = _invoke(cli, capsys, "calibrate", path, "--epsilon", "1", "--json")
    _assert_clean(code, out, err, json_out=True)


# --------------------------------------------------------------------------- mechanisms


def _network_class(seed, two):
    from puffgm.networks.priors import PriorClass

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    net, dag = random_network(rng, n=n, p_edge=0.6, zero_prob=0.15,
                              concentration=float(rng.choice([0.5, 1.0, 20.0])))
    members = [net, random_network(rng, dag=dag, n=n, zero_prob=0.15)[0]] if two else [net]
    return PriorClass(members), rng


@FUZZ
@given(seed=st.integers(0, 10**6), two=st.booleans(), epsilon=st.sampled_from([0.3, 1.0, 2.5]),
       protect_all=st.booleans())
def test_fuzz_mqm_release_never_exceeds_epsilon(seed, two, epsilon, protect_all):
    from puffgm.framework import Instantiation, audit_laplace
    from puffgm.networks.calibration import calibrate

    theta, rng = _network_class(seed, two)
    nodes = list(theta.nodes)
    protected = None if protect_all else sorted(rng.choice(nodes, size=int(rng.integers(1, len(nodes) + 1)),
                                                           replace=False).tolist())
    cal = calibrate(theta, epsilon=epsilon, lipschitz=1.0, protected=protected)
    inst = Instantiation.bayesian_network_default(theta, protected=protected)
    q = lambda x: float(sum(1 for v in x.values() if v == "s0"))  # noqa: E731 - a 1-Lipschitz count
    audit = audit_laplace(inst, q, cal.scale)
    assert audit.loss <= epsilon * (1 + 1e-9), (audit.loss, epsilon, audit.witness)


@FUZZ
@given(seed=st.integers(0, 10**6), two=st.booleans(), epsilon=st.sampled_from([0.3, 1.0, 2.5]),
       method=st.sampled_from(["optimal-laplace", "wasserstein"]))
def test_fuzz_query_calibration_never_exceeds_epsilon(seed, two, epsilon, method):
    import puffgm
    from puffgm.framework import Instantiation, audit_laplace

    theta, rng = _network_class(seed, two)
    scores = {n: [int(s) for s in rng.integers(0, 3, size=len(theta.states[n]))] for n in theta.nodes
              if rng.random() < 0.8}
    if not scores:
        scores = {theta.nodes[0]: [0] + [1] * (len(theta.states[theta.nodes[0]]) - 1)}
    cal = puffgm.calibrate_query(theta, {"scores": scores}, epsilon=epsilon, method=method, baselines=False)
    if not cal.scale > 0:  # a query that does not depend on any secret needs no noise
        return
    inst = Instantiation.bayesian_network_default(theta)
    index = {n: {s: i for i, s in enumerate(theta.states[n])} for n in theta.nodes}

    def q(x):
        return float(sum(scores[n][index[n][v]] for n, v in x.items() if n in scores))

    audit = audit_laplace(inst, q, cal.scale)
    assert audit.loss <= epsilon * (1 + 1e-9), (audit.loss, epsilon, method, audit.witness)


# --------------------------------------------------------------------------- what the fuzzing found


def test_found_by_fuzzing_clear_one_line_errors(cli, capsys, tmp_path):
    """Inputs the fuzzers found with unclear messages (numpy's words, or a contradiction); now one clear sentence."""
    found = {
        # Blowfish: ragged query values gave numpy's "setting an array element with a sequence"
        "ragged values": (("blowfish", "sensitivity", "--policy",
                           '{"domain": {"kind": "ordered", "size": 4}, "graph": {"kind": "line"}}',
                           "--query", '{"kind": "linear", "values": [1, [0.5, 0.5], 2, 3]}'),
                          "one row of equal length per domain value"),
        # chains: a matrix as the initial law gave "has 1 entries, expected 1"
        "matrix initial": (("calibrate", _write(tmp_path, "c1.json", {"transition": [[1.0]], "initial": [[1.0]],
                                                                       "length": 3}), "--epsilon", "1"),
                           "initial distribution of chain 'chain' must be a non-empty vector; got shape \\(1, 1\\)"),
        # chains: a vector as the transition matrix gave "sums to 0, off 1"
        "vector transition": (("calibrate", _write(tmp_path, "c2.json", {"transition": [], "initial": "any",
                                                                          "length": 3}), "--epsilon", "1"),
                              "must be square k x k; got shape \\(0,\\)"),
        # BIF: wrong counts reached pgmpy's reader, whose numpy errors were passed on
        "bif rows": (("calibrate", _write(tmp_path, "n.bif", "network x { }\n"
                                          "variable A { type discrete [ 2 ] { a0, a1 }; }\n"
                                          "variable B { type discrete [ 2 ] { b0, b1 }; }\n"
                                          "probability ( A ) { table 0.5, 0.5; }\n"
                                          "probability ( B | A ) {\n  (a0) 0.5, 0.5;\n  (a1) 0.5;\n}\n"),
                      "--epsilon", "1"),
                     "BIFReader failed: the row \\(a1\\) of the CPD of 'B' has 1 entries, expected 2 \\(one per state\\)\\.$"),
    }
    for name, (argv, message) in found.items():
        code, out, err = _invoke(cli, capsys, *argv)
        assert code == 2 and len(err.strip().splitlines()) == 1, (name, err)
        assert re.search(message, err), (name, err)
