"""Linear-Gaussian networks: file format, validation, moral-graph quilts, MQM calibration, curves, CLI."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import integrate, stats

from puffgm.exceptions import ParameterError, PriorError
from puffgm.gaussian.leakage import region_leakage
from puffgm.gaussian.networks import (
    FORMAT,
    LinearGaussianPrior,
    gaussian_calibrate,
    gaussian_influence_curve,
    gaussian_quilts,
    load_gaussian_class,
    load_linear_gaussian,
)

CHAIN = {
    "format": FORMAT, "name": "chain", "bounds": [-3, 3], "delta": 0.5,
    "nodes": {"A": {"variance": 1.0},
              "B": {"parents": ["A"], "coefficients": [0.5], "variance": 0.75},
              "C": {"parents": ["B"], "coefficients": [0.5], "variance": 0.75, "intercept": 0.1}},
}


def test_joint_gaussian_matches_pgmpy_and_roundtrips():
    p = load_linear_gaussian(CHAIN)
    m = p.to_pgmpy()
    mean, cov = m.to_joint_gaussian()
    order = [list(m.nodes()).index(v) for v in p.nodes]
    np.testing.assert_allclose(np.asarray(cov)[np.ix_(order, order)], p.cov, atol=1e-12)
    np.testing.assert_allclose(np.asarray(mean).ravel()[order], p.mean, atol=1e-12)
    q = LinearGaussianPrior.from_pgmpy(m, (-3, 3), 0.5)
    np.testing.assert_allclose(q.cov[np.ix_([q.nodes.index(v) for v in p.nodes], [q.nodes.index(v) for v in p.nodes])],
                               p.cov, atol=1e-12)
    assert load_linear_gaussian(p.to_dict()).fingerprint == p.fingerprint


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d["nodes"]["B"].update(variance=0.0), "variance of node 'B' must be > 0"),
    (lambda d: d["nodes"]["B"].update(variance=-1), "variance of node 'B' must be > 0"),
    (lambda d: d["nodes"]["B"].update(parents=["Z"]), "unknown parent 'Z'"),
    (lambda d: d["nodes"]["A"].update(parents=["C"], coefficients=[0.2]), "cycle"),
    (lambda d: d["nodes"]["B"].update(coefficients=[0.5, 0.1]), "1 parents but 2 coefficients"),
    (lambda d: d["nodes"]["B"].pop("variance"), "no 'variance'"),
    (lambda d: d.pop("bounds"), "needs 'bounds'"),
    (lambda d: d.update(delta=4.0), "too short"),
    (lambda d: d.update(delta=0), "delta"),
    (lambda d: d.update(extra=1), "unknown key 'extra'"),
    (lambda d: d["nodes"]["A"].update(mean=1), "unknown key 'mean'"),
    (lambda d: d["nodes"]["B"].update(coefficients=["x"]), "finite number"),
    (lambda d: d.update(bounds=[3, -3]), "upper > lower"),
    (lambda d: d.update(format="other"), "format"),
])
def test_strict_validation(mutate, message):
    d = json.loads(json.dumps(CHAIN))
    mutate(d)
    with pytest.raises((PriorError, ParameterError), match=message):
        load_linear_gaussian(d)


@pytest.mark.slow
def test_collider_truncation_breaks_d_separation():
    """A -> C <- B: A and B are independent in the Gaussian, but not once C is truncated; quilts use the moral graph."""
    d = {"format": FORMAT, "bounds": [-1.5, 1.5], "delta": 0.3,
         "nodes": {"A": {"variance": 1.0}, "B": {"variance": 1.0},
                   "C": {"parents": ["A", "B"], "coefficients": [1.0, 1.0], "variance": 0.1}}}
    p = load_linear_gaussian(d)
    assert abs(p.cov[0, 1]) < 1e-15
    # leakage of A through B with C truncated and integrated: positive (exact value by integration)
    g, delta = 1.5, 0.3
    s = math.sqrt(0.1)

    def log_p_given_b(r, b):  # log P(A in [r, r+delta], C in box | B = b), A ~ N(0,1), C | A,B ~ N(A + b, 0.1)
        f = lambda a: stats.norm.pdf(a) * (stats.norm.cdf((g - a - b) / s) - stats.norm.cdf((-g - a - b) / s))
        return math.log(integrate.quad(f, r, r + delta, epsabs=0, epsrel=1e-11)[0])

    lr = [log_p_given_b(g - delta, b) - log_p_given_b(-g, b) for b in (-g, g)]
    assert abs(lr[0] - lr[1]) > 1.0  # B's value changes the posterior of A: dependent given truncation
    for q, nb, _ in gaussian_quilts(p, "A"):
        if "B" not in q:
            assert "B" in nb  # B is never remote from A unless it is in the quilt
    res = region_leakage(p.cov, -g, g, delta, 0, [1], [2], mean=p.mean)
    assert res.value >= abs(lr[0] - lr[1]) / 2 - 1e-9  # symmetric pair: half the spread is a lower bound


@pytest.mark.slow
def test_calibration_is_min_over_quilts_and_max_over_class():
    p = load_linear_gaussian(CHAIN)
    eps = 30.0
    res = gaussian_calibrate(p, epsilon=eps)
    m = p.region_model
    idx = {v: k for k, v in enumerate(p.nodes)}
    worst = 0.0
    for v in p.nodes:
        best = math.inf
        for q, nb, _ in gaussian_quilts(p, v):
            e = 0.0 if not q else m.leakage(idx[v], [idx[u] for u in q], [idx[u] for u in nb if u != v]).value
            if e < eps:
                best = min(best, len(nb) / (eps - e))
        worst = max(worst, best)
    assert res.sigma_max == pytest.approx(worst, rel=1e-12)
    assert res.method == "mqm-gaussian" and res.sigma_max <= res.groupdp_sigma
    d2 = json.loads(json.dumps(CHAIN))
    d2["nodes"]["B"]["coefficients"] = [0.8]
    p2 = load_linear_gaussian(d2)
    both = gaussian_calibrate([p, p2], epsilon=eps)
    assert both.sigma_max == pytest.approx(max(res.sigma_max, gaussian_calibrate(p2, epsilon=eps).sigma_max), rel=1e-12)
    with pytest.raises(ParameterError, match="epsilon"):
        gaussian_calibrate(p, epsilon=-1.0)
    with pytest.raises(ParameterError, match="'Z' is not a node"):
        gaussian_calibrate(p, epsilon=1.0, protected=["Z"])


@pytest.mark.slow
def test_public_api_and_class_checks():
    import puffgm
    from puffgm.api import influence_curve
    from puffgm.mechanisms.translation import translate_curve

    p = load_linear_gaussian(CHAIN)
    res = puffgm.calibrate(p, epsilon=30.0)
    assert res.method == "mqm-gaussian"
    c = influence_curve(p)
    assert c.a[-1] == 0.0 and all(x >= y for x, y in zip(c.a, c.a[1:], strict=False))
    assert c.a == gaussian_influence_curve(p).a
    t = translate_curve(c, epsilon=40.0)
    assert t.epsilon_dp == pytest.approx(max((40.0 - a) / b for b, a in c.points if a < 40.0) if c.a[0] < 40 else
                                         max((40.0 - a) / b for b, a in c.points if a < 40.0))
    d2 = json.loads(json.dumps(CHAIN))
    d2["delta"] = 0.25
    with pytest.raises(PriorError, match="same region width"):
        load_gaussian_class([CHAIN, d2])


@pytest.mark.slow
def test_mqm_release_exact_audit_two_nodes():
    """Release x_A + x_B + Laplace(scale) for a two-node network; the privacy loss of region secrets on A,
    by numerical integration over the truncated prior, is at most epsilon."""
    g, delta, rho_coef = 2.0, 0.5, 0.5
    d = {"format": FORMAT, "bounds": [-g, g], "delta": delta,
         "nodes": {"A": {"variance": 1.0}, "B": {"parents": ["A"], "coefficients": [rho_coef], "variance": 0.75}}}
    p = load_linear_gaussian(d)
    eps = 8.0
    lip = 2 * g  # one node moving anywhere in its box changes the sum by at most 2 g
    res = gaussian_calibrate(p, epsilon=eps, lipschitz=lip)
    scale = res.scale
    sB = math.sqrt(0.75)

    def density(w, r):
        # p(w | A in [r, r+delta]) up to the common truncation normaliser: integral over a, b in the box
        def inner(a):
            f = lambda b: stats.norm.pdf(b, rho_coef * a, sB) * math.exp(-abs(w - a - b) / scale) / (2 * scale)
            return stats.norm.pdf(a) * integrate.quad(f, -g, g, points=[w - a] if -g < w - a < g else None,
                                                      epsabs=0, epsrel=1e-10, limit=200)[0]

        num = integrate.quad(inner, r, r + delta, epsabs=0, epsrel=1e-9)[0]
        den = integrate.quad(lambda a: stats.norm.pdf(a) * (stats.norm.cdf((g - rho_coef * a) / sB)
                                                            - stats.norm.cdf((-g - rho_coef * a) / sB)),
                             r, r + delta, epsabs=0, epsrel=1e-12)[0]
        return num / den

    rs = [-g, -g + delta, 0.0, g - 2 * delta, g - delta]
    ws = np.linspace(-2 * g - 1, 2 * g + 1, 9)
    loss = 0.0
    for w in ws:
        vals = [math.log(density(w, r)) for r in rs]
        loss = max(loss, max(vals) - min(vals))
    assert 0.0 < loss <= eps + 1e-6


@pytest.mark.slow
def test_cli_calibrate_curve_translate(tmp_path):
    f = tmp_path / "net.json"
    f.write_text(json.dumps(CHAIN))
    run = lambda *a: subprocess.run([sys.executable, "-m", "puffgm", *a], capture_output=True, text=True)
    out = run("calibrate", str(f), "--epsilon", "30", "--json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["method"] == "mqm-gaussian" and d["sigma_max"] > 0
    out = run("curve", str(f), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["points"][-1]["a"] == 0.0
    out = run("translate", str(f), "--epsilon", "40")
    assert out.returncode == 0 and "epsilon_DP" in out.stdout
    bad = tmp_path / "bad.json"
    d = json.loads(json.dumps(CHAIN))
    d["nodes"]["B"]["variance"] = -1
    bad.write_text(json.dumps(d))
    out = run("calibrate", str(bad), "--epsilon", "1")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "variance of node 'B'" in out.stderr
    out = run("calibrate", str(f), "--epsilon", "1", "--method", "approx")
    assert out.returncode == 2 and "Traceback" not in out.stderr


def test_pgmpy_models_and_classes_through_the_public_api():
    import puffgm

    p = load_linear_gaussian(CHAIN)
    model = p.to_pgmpy()
    with pytest.raises(ParameterError, match="needs 'bounds' and 'delta'"):
        puffgm.calibrate(model, epsilon=30.0)
    wrapped = LinearGaussianPrior.from_pgmpy(model, (-3.0, 3.0), 0.5)
    a = puffgm.calibrate(wrapped, epsilon=30.0)
    b = puffgm.calibrate(p, epsilon=30.0)
    assert a.sigma_max == pytest.approx(b.sigma_max, rel=1e-9)
    d2 = json.loads(json.dumps(CHAIN))
    d2["nodes"]["C"]["coefficients"] = [0.9]
    cls = puffgm.calibrate([CHAIN, d2], epsilon=30.0)
    assert cls.details["n_priors"] == 2 and cls.sigma_max >= b.sigma_max


def test_secret_spec_selects_protected_nodes():
    import puffgm
    from puffgm.exceptions import SecretError
    from puffgm.networks.secrets import SecretSpec

    p = load_linear_gaussian(CHAIN)
    res = puffgm.calibrate(p, epsilon=30.0, secrets=SecretSpec(protected=["A"]))
    assert res.details["protected"] == 1 and res.worst_node == "A"
    with pytest.raises(ParameterError, match="Value pairs do not apply"):
        puffgm.calibrate(p, epsilon=30.0, secrets=SecretSpec(pairs={"A": [("0", "1")]}))
    with pytest.raises(SecretError, match="'Z'"):
        gaussian_influence_curve(p, secrets=SecretSpec(protected=["Z"]))
