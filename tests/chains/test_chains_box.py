"""Infinite chain classes (ChainParameterBox): certified suprema for every calibration."""

import json

import numpy as np
import pytest

from puffgm.chains import ChainParameterBox, ChainPrior, ChainPriorClass, MQMApprox, MQMExact, gk16, group_dp
from puffgm.chains.baselines import gk16_gamma
from puffgm.chains.box import _cell_upper, _quilt_table, box_influence_bounds, certified_mqm_exact, gk16_gamma_bounds
from puffgm.chains.exact import _Member
from puffgm.chains.spec import chain_class_from_spec
from puffgm.exceptions import ParameterError, PriorError


def exact_tables(p0, p1, nmax):
    """A, B (and C for "any") of equation (5) from the generic MQMExact member tables."""
    m = _Member(ChainPrior(ChainParameterBox.transition(p0, p1), "any", nmax + 2), False)
    m.ensure(nmax)
    return m.A_full, m.B


@pytest.mark.parametrize("seed", [0, 1])
def test_enclosures_contain_the_exact_tables(seed):
    rng = np.random.default_rng(seed)
    nmax = 40
    lo = rng.uniform(0.05, 0.9, size=(6, 2))
    w = rng.uniform(0.0, 0.08, size=(6, 2))
    cells = np.column_stack([lo[:, 0], lo[:, 0] + w[:, 0], lo[:, 1], lo[:, 1] + w[:, 1]])
    tab = box_influence_bounds(cells, nmax)
    pairs = ((0, 1), (1, 0))
    for c, cell in enumerate(cells):
        for _ in range(4):
            p0, p1 = rng.uniform(cell[0], cell[1]), rng.uniform(cell[2], cell[3])
            A, B = exact_tables(p0, p1, nmax)
            logpi = np.log([1 - p1, 1 - p0])  # pi proportional to (r, q)
            for n in range(1, nmax + 1):
                for j, (x, y) in enumerate(pairs):
                    assert B[n][x, y] <= tab["B"][c, n, j] + 1e-12
                    for m in range(1, nmax + 1):  # "any": marginal term of node m + 1 is A_m with the pair swapped
                        assert A[n][x, y] + A[m][y, x] <= tab["A"][c, n, j] + tab["C_any"][c, m, j] + 1e-12
                    # stationary: A + log pi(x') / pi(x); the l terms cancel, so C is 0 in the tables
                    assert A[n][x, y] + logpi[y] - logpi[x] <= tab["A"][c, n, j] + 1e-12


def test_point_cell_upper_bound_is_the_exact_sigma():
    box = ChainParameterBox((0.1, 0.9), (0.1, 0.9), length=40)
    for initial in ("any", "stationary"):
        b = ChainParameterBox((0.1, 0.9), (0.1, 0.9), length=40, initial=initial)
        for p0, p1, eps in [(0.85, 0.8, 1.0), (0.3, 0.6, 0.2), (0.15, 0.2, 5.0)]:
            r = MQMExact(b.member(p0, p1), per_node=True).calibrate(epsilon=eps)
            up = _cell_upper(b, np.array([[p0, p0, p1, p1]]), _quilt_table(r, 40)[None], eps)[0]
            assert r.sigma_max <= up <= r.sigma_max * (1 + 1e-7)
    assert box.k == 2


@pytest.mark.parametrize("initial,eps", [("any", 1.0), ("stationary", 0.5), ("any", 5.0)])
def test_certified_sigma_bounds_every_chain_of_the_box(initial, eps):
    box = ChainParameterBox((0.2, 0.7), (0.3, 0.8), initial=initial, length=24)
    res = MQMExact(box).calibrate(epsilon=eps)
    assert res.details["complete"]
    assert res.details["lower_bound"] <= res.sigma_max <= res.details["lower_bound"] * (1 + 1e-3) + 1e-12
    rng = np.random.default_rng(3)
    pts = [(a, b) for a in np.linspace(0.2, 0.7, 11) for b in np.linspace(0.3, 0.8, 11)]
    pts += [tuple(x) for x in rng.uniform([0.2, 0.3], [0.7, 0.8], size=(40, 2))]
    sig = [MQMExact(box.member(a, b)).calibrate(epsilon=eps).sigma_max for a, b in pts]
    assert max(sig) <= res.sigma_max
    assert max(sig) >= res.sigma_max / (1 + 2e-3)  # and close to it


def test_certified_result_passes_the_exact_audit_for_sampled_chains():
    from puffgm.framework import Instantiation, audit_laplace

    T, eps = 6, 1.0
    box = ChainParameterBox((0.25, 0.75), (0.25, 0.75), initial="any", length=T)
    cal = MQMExact(box).calibrate(epsilon=eps)
    rng = np.random.default_rng(5)
    members = [ChainPrior(box.transition(*rng.uniform(0.25, 0.75, 2)), list(rng.dirichlet([1, 1])), T)
               for _ in range(3)]
    members += [ChainPrior(box.transition(a, b), [1.0, 0.0], T) for a, b in box.corners()]
    inst = Instantiation.bayesian_network_default([m.to_pgmpy() for m in members])

    def ones(x):
        return float(sum(1 for v in x.values() if str(v) == "1"))

    assert audit_laplace(inst, ones, cal.scale).loss <= eps * (1 + 1e-9)


def test_budget_exhaustion_is_still_an_upper_bound():
    box = ChainParameterBox((0.15, 0.85), (0.15, 0.85), length=20)
    res = certified_mqm_exact(box, epsilon=5.0, rtol=1e-9, max_evaluations=12)
    assert not res.details["complete"] and any("budget" in n for n in res.notes)
    grid = np.linspace(0.15, 0.85, 8)
    assert max(MQMExact(box.member(a, b)).calibrate(epsilon=5.0).sigma_max for a in grid for b in grid) <= res.sigma_max


def test_approx_uses_closed_form_extremes():
    box = ChainParameterBox((0.2, 0.9), (0.1, 0.6), length=200)
    mb = box.mixing_bounds()
    grid = np.linspace(0, 1, 41)
    pis, lams = [], []
    for a in 0.2 + 0.7 * grid:
        for b in 0.1 + 0.5 * grid:
            q, r = 1 - a, 1 - b
            pis.append(min(q, r) / (q + r))
            lams.append(abs(a + b - 1))
    assert mb["pi_min"] == pytest.approx(min(pis), abs=1e-12)
    assert mb["gap_rev"] == pytest.approx(2 * (1 - max(lams)), abs=1e-12)
    res = MQMApprox(box).calibrate(epsilon=1.0)
    assert res.details["pi_min"] == mb["pi_min"] and res.details["n_chains"] == "box"
    for a, b in [(0.2, 0.1), (0.9, 0.6), (0.5, 0.4)]:
        assert MQMApprox(box.member(a, b)).calibrate(epsilon=1.0).sigma_max <= res.sigma_max + 1e-9
        assert MQMExact(box.member(a, b)).calibrate(epsilon=1.0).sigma_max <= res.sigma_max + 1e-9


def test_gk16_gamma_bracket_and_applicability():
    lo, hi = gk16_gamma_bounds((0.1, 0.9), (0.1, 0.9))
    rng = np.random.default_rng(0)
    pts = rng.uniform(0.1, 0.9, size=(2000, 2))
    vals = [gk16_gamma(ChainParameterBox.transition(a, b)) for a, b in pts]
    assert max(vals) <= hi and lo <= hi <= lo + 1e-8
    for alpha, applies in [(0.2, False), (0.4, True)]:
        box = ChainParameterBox((alpha, 1 - alpha), (alpha, 1 - alpha), length=100)
        r = gk16(box, epsilon=1.0)
        assert r.applicable is applies
        corners = ChainPriorClass.from_family([box.transition(a, b) for a, b in box.corners()], "any", 100)
        if applies:  # the supremum is at a corner for these boxes: same noise as the corner family
            assert r.sigma_max == pytest.approx(gk16(corners, epsilon=1.0).sigma_max, rel=1e-7)
            assert r.sigma_max >= gk16(corners, epsilon=1.0).sigma_max


def test_groupdp_and_validation():
    box = ChainParameterBox((0.3, 0.4), 0.5, length=10)
    assert box.p1 == (0.5, 0.5) and group_dp(box, epsilon=2.0).sigma_max == 5.0
    for bad, msg in [(dict(p0=(0.0, 0.5), p1=(0.2, 0.3)), "0 < low"), (dict(p0=(0.6, 0.5), p1=(0.2, 0.3)), "0 < low"),
                     (dict(p0=(0.2,), p1=(0.2, 0.3)), "pair"), (dict(p0=(0.2, "x"), p1=(0.2, 0.3)), "finite"),
                     (dict(p0=(0.2, 0.3), p1=(0.2, 0.3), initial=[1, 0]), "initial")]:
        with pytest.raises(PriorError, match=msg):
            ChainParameterBox(length=5, **bad)
    with pytest.raises(ParameterError, match="parameter box"):
        MQMExact(box, paper_convention=True)
    with pytest.raises(ParameterError, match="outside"):
        box.member(0.5, 0.5)


def test_spec_round_trip_and_strict_validation(tmp_path):
    box = ChainParameterBox((0.2, 0.8), (0.3, 0.7), initial="stationary", length=30)
    again = chain_class_from_spec(json.loads(json.dumps(box.to_spec())))
    assert again.fingerprint == box.fingerprint
    assert chain_class_from_spec({"box": {"p0": [0.2, 0.8], "p1": [0.3, 0.7]}, "length": 30}).initial_kind == "any"
    for spec, msg in [
        ({"box": {"p0": [0.2, 0.8]}, "length": 30}, "exactly the keys"),
        ({"box": {"p0": [0.2, 0.8], "p1": 0.5}, "length": 30}, "list"),
        ({"box": [0.2, 0.8], "length": 30}, "object"),
        ({"box": {"p0": [0.2, 0.8], "p1": [0.3, 0.7]}, "transition": [[1, 0], [0, 1]], "length": 30}, "cannot also"),
        ({"box": {"p0": [0.2, 0.8], "p1": [0.3, 1.2]}, "length": 30}, "0 < low"),
    ]:
        with pytest.raises(PriorError, match=msg):
            chain_class_from_spec(spec)


def test_cli_calibrates_a_box(tmp_path, capsys):
    from puffgm.cli import main

    path = tmp_path / "box.json"
    path.write_text(json.dumps({"box": {"p0": [0.3, 0.7], "p1": [0.3, 0.7]}, "initial": "any", "length": 20}))
    assert main(["calibrate", str(path), "--epsilon", "1", "--method", "exact", "--json"]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["sigma_max"] >= out["details"]["lower_bound"]
    assert main(["calibrate", str(path), str(path), "--epsilon", "1"]) == 2
    assert "cannot be pooled" in capsys.readouterr().err


def test_figure4_box_certificate_against_a_fine_grid():
    # the class of Song et al.'s Figure 4 at alpha = 0.3, T = 100: no chain of a 25 x 25 grid
    # (nor random chains) needs more noise than the certified sigma, which is within rtol of the best
    box = ChainParameterBox((0.3, 0.7), (0.3, 0.7), initial="any", length=100)
    res = MQMExact(box).calibrate(epsilon=1.0)
    grid = np.linspace(0.3, 0.7, 25)
    rng = np.random.default_rng(11)
    pts = [(a, b) for a in grid for b in grid] + [tuple(x) for x in rng.uniform(0.3, 0.7, size=(50, 2))]
    best = max(MQMExact(box.member(a, b), per_node=False).calibrate(epsilon=1.0).sigma_max for a, b in pts)
    assert best <= res.sigma_max <= best * (1 + 1e-3)
