"""a(b)-influence curves of Bayesian networks through the quilt machinery (Bai et al. Definition 7)."""

import itertools
import math

import numpy as np
import pytest
from _nets import random_pgmpy_network as random_network
from scipy.special import logsumexp

from puffgm.api import influence_curve
from puffgm.core.curve import InfluenceCurve, curve_from_points
from puffgm.exceptions import ParameterError
from puffgm.networks.priors import PriorClass
from puffgm.networks.quilts import remote_nodes


def leakage_through(theta, node, low):
    """Definition 7 by brute force: max over priors, value pairs, x_L of log P(x_L|a)/P(x_L|b)."""
    best = 0.0
    nodes = list(theta.nodes)
    i = nodes.index(node)
    keep = sorted(nodes.index(v) for v in low)
    for prior in theta.priors:
        lj = prior.log_joint_table()
        # marginal over (X_i, X_L)
        drop = tuple(k for k in range(len(nodes)) if k != i and k not in keep)
        m = logsumexp(lj, axis=drop) if drop else lj
        axes_left = [k for k in range(len(nodes)) if k not in drop]
        m = np.moveaxis(m, axes_left.index(i), 0)
        cond = m - logsumexp(m.reshape(m.shape[0], -1), axis=1).reshape((-1,) + (1,) * (m.ndim - 1))
        for a, b in itertools.permutations(range(m.shape[0]), 2):
            la, lb = cond[a], cond[b]
            both = np.isfinite(la) & np.isfinite(lb)
            if np.any(np.isfinite(la) != np.isfinite(lb)):
                return math.inf
            if both.any():
                best = max(best, float(np.max(la[both] - lb[both])))
    return best


@pytest.fixture(scope="module")
def small_curves():
    out = []
    for seed in range(3):
        theta = PriorClass.from_pgmpy([random_network(seed, n=4 + seed % 2)])
        out.append((theta, influence_curve(theta, per_node=True)))
    return out


def test_curves_non_increasing_and_zero_at_n(small_curves):
    for theta, c in small_curves:
        assert all(x >= y for x, y in zip(c.a, c.a[1:], strict=False))  # consecutive pairs
        assert c.a[-1] == 0.0 and c.max_b == len(theta.nodes) == c.n_entries
        assert c.a_at(c.n_entries) == 0.0


def test_bundled_networks_non_increasing():
    for name in ("cancer", "asia"):
        c = influence_curve(f"example:{name}")
        assert all(x >= y for x, y in zip(c.a, c.a[1:], strict=False)) and c.a[-1] == 0.0  # consecutive pairs
        d = c.to_dict()
        assert [p["b"] for p in d["points"]] == list(range(1, c.n_entries + 1))
        assert len(d["witnesses"]) == c.n_entries


def test_witnesses_give_the_stated_leakage_by_brute_force(small_curves):
    """Each point's witness (node, quilt) splits H = X_N, L = X_Q u X_R with exactly that leakage."""
    for theta, c in small_curves:
        for b, a, w in zip(c.b, c.a, c.witnesses, strict=True):
            node, quilt = w.node, w.quilt
            remote = remote_nodes(theta.dag, node, frozenset(quilt))
            low = set(quilt) | set(remote)
            nearby = set(theta.nodes) - low
            assert node in nearby and len(nearby) <= b
            assert leakage_through(theta, node, low) == pytest.approx(a, rel=1e-9, abs=1e-9)


def test_curve_upper_bounds_the_optimum_of_definition7(small_curves):
    """Quilt complements are a subset of all splits: a(b) >= inf over every H with |H| <= b."""
    for theta, c in small_curves:
        nodes = list(theta.nodes)
        for node in nodes:
            others = [v for v in nodes if v != node]
            per = c.details["per_node"][node]
            for b in range(1, len(nodes) + 1):
                best = math.inf
                for size in range(b):
                    for extra in itertools.combinations(others, size):
                        low = set(others) - set(extra)
                        best = min(best, leakage_through(theta, node, low))
                assert per[b - 1] >= best - 1e-9
            assert max(c.details["per_node"][v][-1] for v in nodes) == 0.0


def test_curve_from_points_and_validation():
    c = curve_from_points({2: 1.5, 4: 0.5}, n_entries=10)
    assert c.a == (math.inf, 1.5, 1.5, 0.5)
    assert c.a_at(9) == 0.5 and c.a_at(10) == 0.0
    with pytest.raises(ParameterError, match="max_b"):
        influence_curve("example:cancer", max_b=0)
    with pytest.raises(ParameterError, match="b values"):
        InfluenceCurve(b=(2, 3), a=(1.0, 0.5), witnesses=None, n_entries=3, method="x", fingerprint="f")
    with pytest.raises(ParameterError, match="b=1 must be a number >= 0"):
        curve_from_points([(1, float("nan"))], n_entries=3)


def test_max_b_truncates_and_keeps_trivial_point():
    c = influence_curve("example:cancer", max_b=2)
    full = influence_curve("example:cancer")
    assert c.a == full.a[:2]
    assert c.candidate_points()[-1][:2] == (5, 0.0)
