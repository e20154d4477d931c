"""Query-specific calibration on Markov chains against enumeration."""

import itertools
import json

import numpy as np
import pytest

import puffgm
from puffgm.chains.priors import ChainPriorClass
from puffgm.chains.query_laws import chain_query_laws
from puffgm.core.laws import QueryLaws
from puffgm.core.query import SumQuery
from puffgm.exceptions import NotApplicableError
from puffgm.framework.wasserstein import w_inf
from puffgm.mechanisms.query import wasserstein_of


def _enumerated(q, P, T, scores):
    """{(t, a): law of F as an array} by enumerating every path of the chain."""
    k = len(q)
    top = T * max(scores)
    out = {}
    for x in itertools.product(range(k), repeat=T):
        p = q[x[0]] * np.prod([P[x[i], x[i + 1]] for i in range(T - 1)])
        f = sum(scores[v] for v in x)
        for t in range(T):
            out.setdefault((t, x[t]), np.zeros(top + 1))[f] += p
    return out


def _bind(cc, scores):
    return SumQuery({"scores": scores}).bind(cc.nodes, {n: cc.members[0].states for n in cc.nodes})


@pytest.mark.parametrize("seed,k,T", [(0, 2, 6), (1, 3, 5), (2, 3, 4), (3, 2, 3)])
def test_laws_and_w_match_enumeration(seed, k, T):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(k), size=k)
    P[0, -1] = 0.0
    P[0] /= P[0].sum()
    q = rng.dirichlet(np.ones(k))
    scores = [int(s) for s in rng.integers(0, 3, size=k)]
    scores[0] = 2
    cc = ChainPriorClass.from_matrices(P, initial=q, length=T)
    bq = _bind(cc, scores)
    laws, _, exact = chain_query_laws(cc, bq)
    assert exact
    ref = _enumerated(q, P, T, scores)
    ref_w = 0.0
    for nl in laws:
        t = int(nl.node[1:]) - 1
        for a in range(k):
            r = ref[(t, a)][T * min(scores):]  # the grid is shifted so that the least value is 0
            r = r[: bq.total + 1] / r.sum()
            with np.errstate(divide="ignore"):
                assert np.allclose(np.exp(nl.log_cond[a]), r, rtol=1e-12, atol=1e-15)
        for a, b in itertools.combinations(range(k), 2):
            ra, rb = ref[(t, a)], ref[(t, b)]
            ref_w = max(ref_w, w_inf(np.arange(ra.size), ra / ra.sum(), np.arange(rb.size), rb / rb.sum()))
    W, _, _ = wasserstein_of(QueryLaws(query=bq, laws=tuple(laws), n_priors=1, group_sensitivity=0))
    assert W == ref_w


def test_two_member_class_and_exact_audit(tmp_path):
    from puffgm.framework import Instantiation, Secret, audit_laplace

    T, P1, P2 = 5, [[0.8, 0.2], [0.3, 0.7]], [[0.6, 0.4], [0.1, 0.9]]
    spec = {"transitions": [P1, P2], "initials": [[0.5, 0.5], "stationary"], "length": T}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(spec))
    cal = puffgm.calibrate_query(str(path), {"scores": [0, 1]}, epsilon=1.0, method="optimal-laplace")
    cc = puffgm.load_chain_spec(str(path))
    joints = []
    for m in cc.members:
        q, P = m.initial_vector, m.transition
        j = np.zeros((2,) * T)
        for x in itertools.product(range(2), repeat=T):
            j[x] = q[x[0]] * np.prod([P[x[i], x[i + 1]] for i in range(T - 1)])
        joints.append(j)
    nodes = [f"X{t}" for t in range(1, T + 1)]
    inst = Instantiation(joints, [(Secret.value(n, 0), Secret.value(n, 1)) for n in nodes], nodes=nodes,
                         states=[2] * T)
    table = np.indices((2,) * T).sum(axis=0).astype(float)
    assert audit_laplace(inst, table, cal.scale).loss <= 1.0
    assert audit_laplace(inst, table, cal.scale * 0.99).loss > 1.0
    assert cal.loss == pytest.approx(audit_laplace(inst, table, cal.scale).loss, rel=1e-9)
    assert cal.comparison()["mqm"]["scale"] is not None


def test_long_chains_get_a_certified_bound_at_least_the_exact_w():
    cc = ChainPriorClass.from_matrices([[0.9, 0.1], [0.3, 0.7]], length=120)
    bq = _bind(cc, [1, 0])
    laws, _, _ = chain_query_laws(cc, bq)
    exact_w = wasserstein_of(QueryLaws(query=bq, laws=tuple(laws), n_priors=1, group_sensitivity=0))[0]
    _, bounds, exact = chain_query_laws(cc, bq, max_exact_length=10)
    assert not exact and len(bounds) == 120
    assert max(b[-1] for b in bounds) >= exact_w
    per_t = {}
    for nl in laws:
        w = wasserstein_of(QueryLaws(query=bq, laws=(nl,), n_priors=1, group_sensitivity=0))[0]
        per_t[nl.node] = w
    assert all(b[-1] >= per_t[b[1]] for b in bounds)
    cal = puffgm.calibrate_query(cc, {"scores": [1, 0]}, epsilon=1.0, max_exact_length=10)
    assert not cal.exact and cal.loss is None and cal.optimal_laplace_scale is None
    with pytest.raises(puffgm.exceptions.ParameterError, match="exact laws"):
        puffgm.calibrate_query(cc, {"scores": [1, 0]}, epsilon=1.0, method="optimal-laplace", max_exact_length=10)


@pytest.mark.slow
def test_long_chain_works():
    # bench/query_calibration.py runs T = 10^4 (about 30 s on 2 cores); the suite runs 1500
    cc = ChainPriorClass.from_matrices([[0.9, 0.1], [0.3, 0.7]], length=1500)
    cal = puffgm.calibrate_query(cc, {"scores": [1, 0]}, epsilon=1.0, baselines=False)
    assert not cal.exact and 0 < cal.wasserstein <= 10 and cal.group_dp_scale == 1500


def test_refusals():
    anyinit = ChainPriorClass.from_matrices([[0.9, 0.1], [0.3, 0.7]], initial="any", length=5)
    with pytest.raises(NotApplicableError, match="'any'"):
        puffgm.calibrate_query(anyinit, {"scores": [1, 0]}, epsilon=1.0)
    box = puffgm.ChainParameterBox([0.2, 0.8], [0.2, 0.8], length=5)
    with pytest.raises(NotApplicableError, match="parameter boxes"):
        puffgm.calibrate_query(box, {"scores": [1, 0]}, epsilon=1.0)
    with pytest.raises(puffgm.exceptions.ParameterError, match="2 states"):
        puffgm.calibrate_query(anyinit, {"scores": [1, 0, 2]}, epsilon=1.0)
