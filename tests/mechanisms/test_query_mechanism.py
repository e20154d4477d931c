"""The lattice W_inf, the exact Laplace-mixture loss, query releases and the accountant."""

import json

import numpy as np
import pytest
from scipy.special import logsumexp

import puffgm
from puffgm.core.query import SumQuery, load_query
from puffgm.exceptions import CompositionError, NotApplicableError, ParameterError
from puffgm.framework.wasserstein import w_inf
from puffgm.mechanisms.laplace import release_laplace
from puffgm.mechanisms.query import laplace_losses, release_query, w_inf_lattice, w_inf_near


def _random_law(rng, n):
    p = rng.dirichlet(np.full(n, 0.4))
    p[rng.random(n) < 0.3] = 0.0
    if p.sum() == 0:
        p[0] = 1.0
    with np.errstate(divide="ignore"):
        return np.log(p / p.sum())


def test_w_inf_lattice_matches_the_quantile_coupling():
    rng = np.random.default_rng(0)
    for _ in range(400):
        n = int(rng.integers(2, 12))
        a, b = _random_law(rng, n), _random_law(rng, n)
        ref = w_inf(np.arange(n), np.exp(a), np.arange(n), np.exp(b))
        assert int(w_inf_lattice(a, b)) == ref
        assert all(w_inf_near(a, b, g) == ref for g in range(n))


def test_w_inf_sees_atoms_below_double_precision():
    a = np.array([0.0, -np.inf, -np.inf, -np.inf])
    b = np.array([0.0, -np.inf, -np.inf, -1500.0])  # a mass of e^-1500 at 3
    assert int(w_inf_lattice(a, b)) == 3
    assert int(w_inf_lattice(a, a)) == 0


def test_laplace_loss_is_the_supremum_over_outputs():
    rng = np.random.default_rng(1)
    n = 9
    rows = np.array([_random_law(rng, n) for _ in range(4)])
    pairs = np.array([[0, 1], [2, 3], [1, 2]])
    g = np.arange(n)
    for scale in (0.4, 1.3, 6.0):
        loss, where = laplace_losses(rows, pairs, scale)
        pts = np.concatenate([np.linspace(-40, n + 40, 4001), g])
        for (i, j), v in zip(pairs, loss, strict=True):
            fa = logsumexp(rows[i][None] - np.abs(pts[:, None] - g) / scale, axis=1)
            fb = logsumexp(rows[j][None] - np.abs(pts[:, None] - g) / scale, axis=1)
            dense = np.max(np.abs(fa - fb))
            assert dense <= v + 1e-9  # no output beats the reported supremum
            assert v - dense < 0.05 or not np.isfinite(v)  # and it is approached on a fine grid


def test_query_forms():
    nodes, states = ["A", "B"], {"A": ("x", "y", "z"), "B": ("x", "w")}
    assert SumQuery({"count": "x"}).bind(nodes, states).total == 2
    assert SumQuery({"count": "z"}).bind(nodes, states).notes
    assert SumQuery({"count": 1, "nodes": ["B"]}).bind(nodes, states).nodes == ("B",)
    assert SumQuery({"scores": {"A": [0, -1, 2]}}).bind(nodes, states).offset == -1
    assert load_query(json.dumps({"count": 0})).spec == {"count": 0}
    for bad, msg in [({"count": 0, "scores": [1]}, "exactly one"), ({"scores": []}, "non-empty"),
                     ({"scores": [1, float("nan")]}, "finite"), ({"count": True}, "names a state"),
                     ({"count": 0, "extra": 1}, "Unknown key")]:
        with pytest.raises(ParameterError, match=msg):
            SumQuery(bad)
    with pytest.raises(ParameterError, match="3 states"):
        SumQuery({"scores": [1, 0]}).bind(nodes, states)
    with pytest.raises(ParameterError, match="neither"):
        load_query("{not json")


def test_bound_query_evaluates_a_record_in_query_units():
    nodes, states = ["A", "B", "C"], {"A": ("x", "y", "z"), "B": ("x", "w"), "C": ("u", "v")}
    q = SumQuery({"scores": {"A": [0.5, -1, 2], "B": [1, 1], "C": [0, 0.25]}}).bind(nodes, states)
    assert q.unit == 4 and q.nodes == ("A", "C")  # B scores a constant
    assert q.evaluate({"A": "z", "B": "w", "C": "v"}) == 2 + 1 + 0.25
    assert q.evaluate({"A": 1, "C": 0, "B": 0}) == -1 + 1 + 0
    for v in range(3):
        for c in range(2):
            value = q.evaluate({"A": v, "C": c})
            grid = q.offset + q.scores[0][v] + q.scores[1][c]
            assert value == grid / q.unit and q.offset / q.unit <= value <= (q.offset + q.total) / q.unit
    with pytest.raises(ParameterError, match="no value for the scored node 'C'"):
        q.evaluate({"A": "x"})
    with pytest.raises(ParameterError, match="no state 'q'"):
        q.evaluate({"A": "q", "C": "u"})


def test_release_and_accountant_refuse_composition():
    cal = puffgm.calibrate_query("example:asia", {"count": 0}, epsilon=1.0, method="optimal-laplace")
    acc = puffgm.PrivacyAccountant(budget=3.0)
    rel = release_query(4.0, cal, random_state=0, accountant=acc)
    assert not rel.secure and "true_value" not in rel.to_dict()
    assert acc.total == 1.0
    with pytest.raises(CompositionError, match="one query"):
        release_query(4.0, cal, random_state=1, accountant=acc)
    with pytest.raises(CompositionError, match="query-specific"):
        release_laplace(4.0, puffgm.calibrate("example:asia", epsilon=1.0), random_state=1, accountant=acc)
    other = puffgm.PrivacyAccountant()
    release_laplace(4.0, puffgm.calibrate("example:asia", epsilon=1.0), random_state=1, accountant=other)
    with pytest.raises(CompositionError, match="cannot compose"):
        release_query(4.0, cal, random_state=0, accountant=other)
    assert len(other.entries) == 1
    secure = release_query(4.0, cal)
    assert secure.secure


def test_dispatch_errors():
    with pytest.raises(ParameterError, match=r"call puffgm\.calibrate_query\(prior, query"):
        puffgm.calibrate("example:asia", epsilon=1.0, method="wasserstein")
    with pytest.raises(ParameterError, match=r"calibrated by puffgm\.calibrate_query"):
        puffgm.calibrate("example:asia", epsilon=1.0, query={"count": 0})
    with pytest.raises(ParameterError, match="epsilon"):
        puffgm.calibrate_query("example:asia", {"count": 0}, epsilon=0.0)
    with pytest.raises(ParameterError, match="do not apply"):
        puffgm.calibrate_query("example:asia", {"count": 0}, epsilon=1.0, max_quilt_states=3)
    spec = {"format": "puffgm-linear-gaussian", "nodes": {"A": {"mean": 0, "variance": 1}}}
    try:
        with pytest.raises(NotApplicableError, match="Query-specific"):
            puffgm.calibrate_query(spec, {"count": 0}, epsilon=1.0)
    except puffgm.exceptions.PuffgmError:
        pytest.skip("the linear-Gaussian spec form differs")


def test_optimal_noise_through_calibrate_and_release():
    from puffgm.mechanisms.optimal_noise import release_optimal_noise

    cal = puffgm.calibrate_query("example:asia", {"count": 0}, epsilon=1.0, method="optimal-noise")
    assert cal.scale is None and cal.optimal_noise.loss <= 1.0
    assert cal.optimal_noise.expected_abs_error < cal.optimal_laplace_scale
    with pytest.raises(ParameterError, match="release_optimal_noise"):
        release_query(3.0, cal)
    acc = puffgm.PrivacyAccountant()
    rel = release_optimal_noise(3.0, cal.optimal_noise, random_state=0, accountant=acc)
    assert float(rel.value).is_integer() and acc.total == 1.0
