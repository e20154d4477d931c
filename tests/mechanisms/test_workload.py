"""Workloads (a table of sum queries released with independent Laplace noise) against brute force.

Every reference here is independent of puffgm's workload code: the joint law of (F_1, ..., F_k)
given X_i = a is built by enumerating every configuration of the model (asia read by pgmpy's own
BIF reader, the random networks from their raw CPD arrays, the chains from (q, P)), the queries are
evaluated from their specs with exact rationals, and the loss of independent Laplace noise is
computed by the auditor below with numpy/scipy only.  puffgm is used for what is under test: its
joint laws (``WorkloadLaws``), its vertex loss (``joint_loss_of``), ``calibrate_workload`` and
``release_workload``.

There is no public accessor for a workload's joint laws: ``puffgm.api.workload._joint_laws`` is
private, so :func:`puffgm_laws` builds them as that function does (the encoded query of the bound
workload through the public ``PriorKind.query_laws``, wrapped in ``WorkloadLaws``).

Why the supremum over outputs sits on the grid (the auditor relies on it).  Fix a cell of the product
grid formed, on each axis j, by the atom coordinates (every value the statistic can take; the outer
intervals unbounded).  Inside the cell the sign of y_j - g_j is fixed for every atom g, so
exp(-|y_j - g_j| / b_j) is exp(-y_j / b_j) exp(g_j / b_j) or exp(-y_j / b_j) u_j exp(-g_j / b_j) with
u_j = exp(2 y_j / b_j).  Dividing both densities f_a, f_b by the common prod_j exp(-y_j / b_j) leaves
multilinear functions of (u_1, ..., u_k) with non-negative coefficients; with the other coordinates
fixed, the ratio (alpha + beta u_j) / (gamma + delta u_j) is monotone in u_j (its derivative has the
sign of beta gamma - alpha delta), so both the sup and the inf of the ratio over the closed cell are
reached by moving one coordinate at a time to an end of its interval: at a vertex.  An unbounded end
adds nothing: beyond the largest coordinate n_j every atom is on one side, the factor
exp(-(y_j - n_j) / b_j) is common to all terms of both densities and cancels, so the ratio is constant
there and equal to its value at y_j = n_j (likewise below the smallest).  Any finer grid (here every
value min_j + g / unit_j, g = 0..n_j) contains those vertices, so the max over it is the supremum.
On the grid, f(y) = sum_g mu(g) prod_j exp(-|y_j - g_j| / b_j) / (2 b_j) factorises axis by axis:
the auditor smooths one axis at a time with a log-space kernel (logsumexp of non-negative terms).

Measured (2026-11-26; 9 cases x epsilon 0.5, 1, 2): the audited loss at ``cal.scales`` is epsilon times
1 - 6e-9 .. 1 - 7.7e-7, and equals ``cal.loss`` to 1e-9; at 0.99 x the scales it is 1.0094 .. 1.0110
epsilon, at (1 - 1e-5) x the scales 1 + 8.6e-6 .. 1 + 1.04e-5 epsilon.  Joint laws: 9 cases, every
audited row equal to the enumeration to 1e-9 in log space, the -inf cells identical.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import itertools
import json
import math
import os
import pickle
import zlib
from dataclasses import dataclass
from fractions import Fraction

import _nets
import numpy as np
import pytest
from scipy.special import logsumexp

import puffgm
from puffgm.accounting import PrivacyAccountant
from puffgm.api import as_prior
from puffgm.chains import ChainPriorClass
from puffgm.core.workload import load_workload
from puffgm.exceptions import CompositionError, InferenceLimitError, ParameterError
from puffgm.mechanisms.laplace import release_laplace
from puffgm.mechanisms.query import release_query
from puffgm.mechanisms.workload import WorkloadLaws, joint_loss_of, release_workload
from puffgm.networks.priors import NetworkPrior, PriorClass

EPSILONS = (0.5, 1.0, 2.0)


# =====================================================================================================
# Enumeration of the models (no puffgm inference)
# =====================================================================================================


@dataclass(frozen=True)
class Model:
    """Every configuration X (N, n) of state indices, and its probability under each prior."""

    nodes: tuple
    states: dict  # node -> tuple of state names
    X: np.ndarray
    probs: tuple  # one array (N,) per prior


@functools.lru_cache(maxsize=2)
def enumerate_bif(path) -> Model:
    """A BIF network read by pgmpy's own reader (not puffgm's), every configuration enumerated."""
    from pgmpy.readwrite import BIFReader

    with gzip.open(path, "rt") as fh:
        model = BIFReader(string=fh.read()).get_model()
    cpds = {c.variable: c for c in model.get_cpds()}
    nodes = tuple(cpds)
    states = {v: tuple(cpds[v].state_names[v]) for v in nodes}
    X = np.array(list(itertools.product(*[range(len(states[v])) for v in nodes])), dtype=int)
    p = np.ones(len(X))
    for cpd in cpds.values():
        idx = [np.array([list(cpd.state_names[v]).index(s) for s in states[v]])[X[:, nodes.index(v)]]
               for v in cpd.variables]
        table = np.asarray(cpd.get_values(), float).reshape([len(states[v]) for v in cpd.variables])
        p = p * table[tuple(idx)]
    assert abs(p.sum() - 1) < 1e-12
    return Model(nodes, states, X, (p,))


def enumerate_networks(priors, raw) -> Model:
    """Networks on one DAG from the raw CPD arrays drawn for them: ``raw[t][v]`` has shape (card_v, *parent cards)."""
    first = priors[0]
    nodes = tuple(first.nodes)
    states = {v: tuple(first.states[v]) for v in nodes}
    X = np.array(list(itertools.product(*[range(len(states[v])) for v in nodes])), dtype=int)
    probs = []
    for t, prior in enumerate(priors):
        p = np.ones(len(X))
        for v in nodes:
            cols = (X[:, nodes.index(v)],) + tuple(X[:, nodes.index(u)] for u in prior.parents[v])
            p = p * np.asarray(raw[t][v], float)[cols]
        assert abs(p.sum() - 1) < 1e-12
        probs.append(p)
    return Model(nodes, states, X, tuple(probs))


def _stationary(P):
    vals, vecs = np.linalg.eig(np.asarray(P, float).T)
    v = np.real(vecs[:, np.argmin(np.abs(vals - 1))])
    return v / v.sum()


def enumerate_chains(members, T, states) -> Model:
    """Every path of length T of each chain (P, q); q may be "stationary"."""
    k = len(states)
    X = np.array(list(itertools.product(range(k), repeat=T)), dtype=int)
    probs = []
    for P, q in members:
        P = np.asarray(P, float)
        q = _stationary(P) if isinstance(q, str) else np.asarray(q, float)
        p = q[X[:, 0]].copy()
        for t in range(1, T):
            p = p * P[X[:, t - 1], X[:, t]]
        assert abs(p.sum() - 1) < 1e-12
        probs.append(p)
    return Model(tuple(f"X{t}" for t in range(1, T + 1)), {f"X{t}": tuple(states) for t in range(1, T + 1)},
                 X, tuple(probs))


# =====================================================================================================
# The queries, evaluated from their specs with exact rationals
# =====================================================================================================


def _frac(x) -> Fraction:
    return Fraction(x).limit_denominator(10**4)


def reference_scores(spec, model: Model) -> list:
    """[(per-node exact scores {node: [Fraction per state]})] for each statistic (the forms used here)."""
    if isinstance(spec, dict) and "histogram" in spec:
        h = spec["histogram"]
        chosen = h.get("nodes", model.nodes)
        space = model.states[chosen[0]]
        return [{n: [Fraction(int(s == c)) for s in space] for n in chosen} for c in h.get("states", space)]
    if isinstance(spec, dict):
        spec = spec["queries"]
    out = []
    for q in spec:
        if "count" in q:
            c = q["count"]
            chosen = q.get("nodes", model.nodes)
            out.append({n: [Fraction(int(s == c if isinstance(c, str) else j == c))
                            for j, s in enumerate(model.states[n])] for n in chosen})
        else:
            out.append({n: [_frac(x) for x in v] for n, v in q["scores"].items()})
    return out


@dataclass(frozen=True)
class Axis:
    """Statistic j on its own grid: values low + g / unit, g = 0..n."""

    low: Fraction
    unit: int
    n: int

    @property
    def values(self) -> np.ndarray:
        return np.array([float(self.low + Fraction(g, self.unit)) for g in range(self.n + 1)])


def reference_laws(model: Model, spec):
    """({(prior, node, state name): log joint law, shape (n_1 + 1, ..., n_k + 1)}, pairs, axes) by enumeration.

    ``pairs`` holds (prior, node, a, b), a before b in the node's state order, both of positive probability.
    """
    axes, grid = [], []
    for scores in reference_scores(spec, model):
        unit = math.lcm(*[x.denominator for s in scores.values() for x in s])
        low = sum(min(s) for s in scores.values())
        n = int(sum((max(s) - min(s)) * unit for s in scores.values()))
        g = np.zeros(len(model.X), dtype=int)
        for node, s in scores.items():
            table = np.array([int((x - min(s)) * unit) for x in s])
            g += table[model.X[:, model.nodes.index(node)]]
        axes.append(Axis(low, unit, n))
        grid.append(g)
    dims = tuple(a.n + 1 for a in axes)
    laws, pairs = {}, []
    for t, p in enumerate(model.probs):
        for i, node in enumerate(model.nodes):
            positive = []
            for s, name in enumerate(model.states[node]):
                sel = (model.X[:, i] == s) & (p > 0)
                if not sel.any():
                    continue
                law = np.zeros(dims)
                np.add.at(law, tuple(g[sel] for g in grid), p[sel])
                with np.errstate(divide="ignore"):
                    laws[(t, node, name)] = np.log(law / law.sum())
                positive.append(name)
            pairs.extend((t, node, a, b) for a, b in itertools.combinations(positive, 2))
    return laws, pairs, axes


# =====================================================================================================
# The auditor (numpy/scipy only)
# =====================================================================================================


def smoothed(logrows: np.ndarray, axes, scales) -> np.ndarray:
    """log sum_g mu(g) prod_j exp(-|y_j - g_j| / b_j) at every grid vertex y, for each row (rows, *dims)."""
    out = np.asarray(logrows, float)
    for j, (ax, b) in enumerate(zip(axes, scales, strict=True)):
        v = ax.values
        kernel = -np.abs(v[:, None] - v[None, :]) / b  # (y, g)
        moved = np.moveaxis(out, j + 1, -1)
        out = np.moveaxis(logsumexp(moved[..., None, :] + kernel, axis=-1), -1, j + 1)
    return out


def audit(laws, pairs, axes, scales):
    """(exact loss, worst pair): max over pairs and grid vertices of |log f_a(y) - log f_b(y)|."""
    keys = sorted({(t, node, s) for t, node, a, b in pairs for s in (a, b)})
    row = {key: r for r, key in enumerate(keys)}
    dens = smoothed(np.stack([laws[key] for key in keys]), axes, scales).reshape(len(keys), -1)
    best, worst = 0.0, None
    for t, node, a, b in pairs:
        d = float(np.max(np.abs(dens[row[(t, node, a)]] - dens[row[(t, node, b)]])))
        if d > best:
            best, worst = d, (t, node, a, b)
    return best, worst


def log_densities_at(ys, rows, axes, scales):
    """log sum_g mu(g) prod_j exp(-|y_j - g_j| / b_j) at arbitrary outputs ys (P, k), for each log law of
    ``rows`` (R, *dims), summing over every atom: the brute force.  Shape (P, R).

    Each output's largest kernel term and each law's largest mass are factored out before exponentiating,
    so every sum is of non-negative terms at most 1 with at least one near 1 (no cancellation; an underflow
    would show as -inf, which the callers reject)."""
    coords = np.stack(np.meshgrid(*[ax.values for ax in axes], indexing="ij"), axis=-1).reshape(-1, len(axes))
    kernel = -(np.abs(ys[:, None, :] - coords[None, :, :]) / np.asarray(scales)).sum(axis=2)
    top = kernel.max(axis=1, keepdims=True)
    laws = np.asarray(rows, float).reshape(len(rows), -1)
    peak = laws.max(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        out = top + np.log(np.exp(kernel - top) @ np.exp(laws - peak).T) + peak.T
    assert np.all(np.isfinite(out))
    return out


# =====================================================================================================
# puffgm's side
# =====================================================================================================


def puffgm_laws(prior, workload, **options) -> WorkloadLaws:
    """The workload's joint laws as ``puffgm.api.workload._joint_laws`` builds them (no public accessor)."""
    kind = as_prior(prior)
    bound = load_workload(workload).bind(*kind.query_domain())
    return WorkloadLaws(workload=bound, encoded=kind.query_laws(bound.encoded(), **options), group_l1=0.0)


def assert_laws_match(laws: WorkloadLaws, ref, ref_pairs, axes):
    rows, pairs, labels = laws.stacked()
    assert rows.shape[1:] == tuple(ax.n + 1 for ax in axes)
    got = {(w.prior, w.node, frozenset(w.pair)) for w in labels}
    assert got == {(t, node, frozenset((a, b))) for t, node, a, b in ref_pairs}
    assert len(labels) == len(ref_pairs)
    for q, ax in zip(laws.workload.to_dict()["queries"], axes, strict=True):
        assert (q["min_value"], q["max_value"]) == (float(ax.low), float(ax.low + Fraction(ax.n, ax.unit)))
    checked = 0
    for w, (ra, rb) in zip(labels, pairs, strict=True):
        t, node, (a, b) = w.prior, w.node, w.pair
        for name, r in ((a, ra), (b, rb)):
            want, have = ref[(t, node, name)], rows[r]
            finite = np.isfinite(want)
            assert np.array_equal(finite, np.isfinite(have)), (t, node, name)
            assert np.all(have[~finite] == -np.inf)
            err = np.abs(have[finite] - want[finite]) / np.maximum(1.0, np.abs(want[finite]))
            assert err.max() <= 1e-9, (t, node, name, float(err.max()))
            checked += 1
    assert checked == 2 * len(ref_pairs)


# =====================================================================================================
# Cases
# =====================================================================================================


def _pgmpy_example(name):
    import pgmpy

    return os.path.join(os.path.dirname(pgmpy.__file__), "utils", "example_models", f"{name}.bif.gz")


ASIA_WORKLOAD = [
    {"count": "yes", "nodes": ["asia", "tub", "smoke", "lung", "either"], "name": "yes-early"},
    {"scores": {"smoke": [0.5, 0], "lung": [1, 0], "bronc": [0, 1.5], "dysp": [2, 0]}, "name": "risk"},
    {"count": "no", "nodes": ["smoke", "bronc", "xray", "dysp"], "name": "no-late"},
]


def asia_case():
    return "example:asia", enumerate_bif(_pgmpy_example("asia")), ASIA_WORKLOAD, (1.0, 2.0, 0.5)


def drawn_network(rng, **kw):
    """``_nets.random_network`` with the raw CPD arrays it hands to NetworkPrior (caught on the way in)."""
    caught = {}
    real = _nets.NetworkPrior

    def spy(nodes, states, parents, cpds, name):
        caught.update({v: np.array(t, dtype=float) for v, t in cpds.items()})
        return real(nodes, states, parents, cpds, name=name)

    _nets.NetworkPrior = spy
    try:
        prior, dag = _nets.random_network(rng, **kw)
    finally:
        _nets.NetworkPrior = real
    return prior, dag, caught


def network_case(seed):
    """Two priors on one random DAG of 5-8 nodes; 2 or 3 queries over overlapping node sets, one score a half."""
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(5, 9))
    first, dag, raw1 = drawn_network(rng, n=n, max_card=2 if n > 6 else 3, name="a")
    second, _, raw2 = drawn_network(rng, n=n, dag=dag, name="b")
    nodes = list(first.nodes)
    k = 2 + seed % 2
    workload = []
    cells = 1
    for j in range(k):
        chosen = sorted(rng.choice(nodes, size=int(rng.integers(3, min(n, 5) + 1)), replace=False).tolist(),
                        key=nodes.index)
        if j == 0:
            q = {"count": "s0", "nodes": chosen}
            top = len(chosen)
        else:
            scores = {v: [float(x) for x in rng.integers(0, 3, size=len(first.states[v]))] for v in chosen}
            scores[chosen[0]][0] = 1.0
            scores[chosen[0]][-1] = 0.0
            if j == 1:
                scores[chosen[-1]][0] = 0.5  # a fractional score: the grid unit is 2
            q = {"scores": scores}
            top = int(sum((max(s) - min(s)) * (2 if j == 1 else 1) for s in scores.values()))
        cells *= top + 1
        workload.append(q)
    assert cells <= 4000
    overlap = [set(q.get("nodes") or q["scores"]) for q in workload]
    assert any(a & b for a, b in itertools.combinations(overlap, 2))
    weights = tuple(float(w) for w in rng.choice([0.5, 1.0, 2.0, 3.0], size=k))
    model = enumerate_networks([first, second], [raw1, raw2])
    return PriorClass([first, second]), model, workload, weights


def chain_case(name):
    P1 = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]])
    P2 = np.array([[0.8, 0.2, 0.0], [0.1, 0.7, 0.2], [0.3, 0.1, 0.6]])  # an exact zero
    q = np.array([0.5, 0.3, 0.2])
    states = ("0", "1", "2")
    if name == "fixed-T8":
        members, T = [(P1, q)], 8
        cc = ChainPriorClass.from_matrices(P1, initial=q, length=T)
    elif name == "stationary-T6":
        members, T = [(P2, "stationary")], 6
        cc = ChainPriorClass.from_matrices(P2, initial="stationary", length=T)
    elif name == "class-T5":
        members, T = [(P1, q), (P2, "stationary")], 5
        cc = ChainPriorClass.from_family([P1, P2], initials=[q, "stationary"], length=T)
    else:
        raise KeyError(name)
    return cc, enumerate_chains(members, T, states), {"histogram": {}}, None


def chain_mixed_case():
    """A chain with a histogram over some positions' two states and a fractional weighted sum."""
    P = np.array([[0.7, 0.2, 0.1], [0.3, 0.4, 0.3], [0.1, 0.2, 0.7]])
    T = 6
    cc = ChainPriorClass.from_matrices(P, initial="stationary", length=T)
    workload = [{"count": "0", "nodes": ["X1", "X2", "X3", "X4"], "name": "zeros"},
                {"scores": {"X3": [0, 0.5, 1], "X4": [0, 0.5, 1], "X5": [0, 0.5, 1], "X6": [1.5, 0, 0]}}]
    return cc, enumerate_chains([(P, "stationary")], T, ("0", "1", "2")), workload, (1.0, 0.5)


CASES = ["asia", "net0", "net1", "net2", "net3", "chain:fixed-T8", "chain:stationary-T6", "chain:class-T5",
         "chain:mixed"]


def make_case(name):
    if name == "asia":
        return asia_case()
    if name.startswith("net"):
        return network_case(int(name[3:]))
    if name == "chain:mixed":
        return chain_mixed_case()
    return chain_case(name.split(":")[1])


# =====================================================================================================
# 1. Joint laws equal brute-force enumeration
# =====================================================================================================


@pytest.mark.parametrize("case", CASES)
def test_joint_laws_match_enumeration(case):
    prior, model, workload, _ = make_case(case)
    kind = as_prior(prior)
    nodes, states = kind.query_domain()
    assert set(nodes) == set(model.nodes)
    assert all(tuple(states[n]) == model.states[n] for n in nodes)  # the same state order as the reference
    ref, ref_pairs, axes = reference_laws(model, workload)
    laws = puffgm_laws(prior, workload)
    assert laws.n_priors == len(model.probs)
    assert_laws_match(laws, ref, ref_pairs, axes)


# =====================================================================================================
# 2. The released scales pass an exact audit, and are the least ones
# =====================================================================================================


@pytest.mark.parametrize("case", CASES)
def test_calibrated_scales_pass_the_exact_audit_and_are_least(case):
    prior, model, workload, weights = make_case(case)
    ref, ref_pairs, axes = reference_laws(model, workload)
    for epsilon in EPSILONS:
        cal = puffgm.calibrate_workload(prior, workload, epsilon=epsilon, weights=weights,
                                        baselines=(epsilon == 1.0))
        assert cal.k == len(axes) and cal.t > 0
        w = weights or (1.0,) * cal.k
        assert cal.scales == pytest.approx([cal.t * x for x in w], rel=1e-15)
        loss, worst = audit(ref, ref_pairs, axes, cal.scales)
        assert loss <= epsilon * (1 + 1e-9), (case, epsilon, loss, worst)
        assert loss == pytest.approx(cal.loss, rel=1e-9, abs=1e-12)  # the reported loss is the exact one
        below, _ = audit(ref, ref_pairs, axes, [0.99 * s for s in cal.scales])
        assert below > epsilon, (case, epsilon, below)
        # the least to the bisection's 1e-6: 1 - 1e-5 of the scales already fails
        tight, _ = audit(ref, ref_pairs, axes, [(1 - 1e-5) * s for s in cal.scales])
        assert tight > epsilon, (case, epsilon, tight)


# =====================================================================================================
# 3. Vertex theorem against dense random outputs
# =====================================================================================================


def _random_outputs(rng, axes, scales, size):
    """Uniform over the atoms' box widened by 6 scales, far tails (up to 1e3 scales out, per axis or all),
    and every vertex nudged by 1e-9 (the supremum is approached)."""
    lo = np.array([ax.values[0] for ax in axes])
    hi = np.array([ax.values[-1] for ax in axes])
    b = np.asarray(scales)
    k = len(axes)
    box = lo - 6 * b + rng.random((size, k)) * (hi - lo + 12 * b)
    far = box[: size // 4].copy()
    mask = rng.random(far.shape) < 0.5
    out = 10.0 ** rng.uniform(0, 3, size=far.shape) * b
    far = np.where(mask, np.where(rng.random(far.shape) < 0.5, lo - out, hi + out), far)
    coords = np.stack(np.meshgrid(*[ax.values for ax in axes], indexing="ij"), axis=-1).reshape(-1, k)
    near = coords + rng.uniform(-1e-9, 1e-9, size=coords.shape)
    return np.vstack([box, far, near])


@pytest.mark.parametrize("case", ["asia", "net0", "net1", "chain:class-T5", "chain:mixed"])
def test_vertex_maximum_bounds_dense_outputs(case):
    prior, model, workload, _ = make_case(case)
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    ref, ref_pairs, axes = reference_laws(model, workload)
    laws = puffgm_laws(prior, workload)
    units = [ax.unit for ax in axes]
    _, p_pairs, labels = laws.stacked()
    # a few pairs per case (all of them cost too much at 1e4 outputs): the worst one and random others
    picks = rng.choice(len(ref_pairs), size=min(4, len(ref_pairs)), replace=False)
    for trial in range(3):
        scales = [float(x) for x in rng.uniform(0.3, 4.0, size=len(axes))]
        puff, witness, _ = joint_loss_of(laws, [s * u for s, u in zip(scales, units, strict=True)])
        mine, worst = audit(ref, ref_pairs, axes, scales)
        assert puff == pytest.approx(mine, rel=1e-9, abs=1e-12), (case, trial, puff, mine)
        chosen = [ref_pairs[i] for i in picks] + ([worst] if worst else [])
        ys = _random_outputs(rng, axes, scales, 10_000)
        dens = log_densities_at(ys, [ref[(t, node, s)] for t, node, a, b in chosen for s in (a, b)], axes, scales)
        for p, (t, node, a, b) in enumerate(chosen):
            d = np.abs(dens[:, 2 * p] - dens[:, 2 * p + 1])
            pair_vertex, _ = audit(ref, [(t, node, a, b)], axes, scales)
            assert d.max() <= pair_vertex * (1 + 1e-9) + 1e-10, (case, node, a, b, float(d.max()), pair_vertex)
            assert d.max() <= puff * (1 + 1e-9) + 1e-10
            assert d.max() >= pair_vertex - 1e-6  # attained at (next to) a vertex
    assert len(p_pairs) == len(ref_pairs)


def test_joint_loss_of_agrees_with_the_auditor_without_noise_on_a_tiny_table():
    """All scales 0: the loss of the exact table is the max log-ratio of the atoms (inf where supports differ)."""
    prior, model, workload, _ = make_case("asia")
    ref, ref_pairs, axes = reference_laws(model, workload)
    laws = puffgm_laws(prior, workload)
    loss, _, _ = joint_loss_of(laws, [0.0] * len(axes))
    want = 0.0
    for t, node, a, b in ref_pairs:
        la, lb = ref[(t, node, a)], ref[(t, node, b)]
        with np.errstate(invalid="ignore"):
            d = np.abs(la - lb)  # inf where one support has the atom and the other not
        d = np.where(np.isnan(d), 0.0, d)  # nan where neither has it: no output there
        want = max(want, float(d.max()))
    assert loss == want


# =====================================================================================================
# 4. A workload of one reproduces today's numbers
# =====================================================================================================


def _alarm_like():
    rng = np.random.default_rng(77)
    prior, _ = _nets.random_network(rng, n=14, p_edge=0.3, max_card=4, max_parents=3, name="alarm-like")
    return prior


@pytest.mark.parametrize("case", ["asia", "alarm", "alarm-like", "chain"])
def test_workload_of_one_is_the_single_query(case):
    if case == "asia":
        prior, q = "example:asia", {"scores": {"smoke": [1, 0], "lung": [0.5, 0], "dysp": [0, 2], "either": [1, 0]}}
    elif case == "alarm":
        prior, q = "example:alarm", {"count": 0, "nodes": ["HR", "CO", "BP", "HRBP", "HREKG", "HRSAT"]}
    elif case == "alarm-like":
        prior, q = _alarm_like(), {"count": "s1"}
    else:
        prior = ChainPriorClass.from_matrices([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]],
                                              initial=[0.5, 0.3, 0.2], length=7)
        q = {"scores": [0, 1, 2.5]}
    for epsilon in (0.5, 2.0):
        single = puffgm.calibrate_query(prior, q, epsilon=epsilon, method="optimal-laplace")
        one = puffgm.calibrate_workload(prior, [q], epsilon=epsilon)
        assert one.scales[0] == pytest.approx(single.scale, rel=1e-9)
        joint = puffgm.calibrate_workload(prior, [q], epsilon=epsilon, baselines=False)
        assert joint.single_scales is None  # the joint engine ran, not the single-query shortcut
        assert joint.scales[0] == pytest.approx(single.scale, rel=1e-5), (case, joint.scales[0], single.scale)
        assert joint.loss <= epsilon


# =====================================================================================================
# 5. Release and safety
# =====================================================================================================


@pytest.fixture(scope="module")
def asia_cal():
    return puffgm.calibrate_workload("example:asia", ASIA_WORKLOAD, epsilon=1.0, weights=(1.0, 2.0, 0.5))


def _without_value(rel):
    return dataclasses.replace(rel, value=None)


def test_release_is_held_alone_by_the_accountant(asia_cal):
    acc = PrivacyAccountant(budget=10.0)
    rel = release_workload([3, 2.5, 1], asia_cal, random_state=0, accountant=acc)
    assert len(rel.value) == 3 and not rel.secure and rel.epsilon == 1.0
    assert set(rel.as_dict()) == {"yes-early", "risk", "no-late"}
    assert len(acc.entries) == 1
    single = puffgm.calibrate_query("example:asia", {"count": 0}, epsilon=1.0, method="optimal-laplace")
    for again in (lambda: release_workload([3, 2.5, 1], asia_cal, random_state=1, accountant=acc),
                  lambda: release_query(4.0, single, random_state=1, accountant=acc),
                  lambda: release_laplace(4.0, puffgm.calibrate("example:asia", epsilon=1.0), random_state=1,
                                          accountant=acc)):
        with pytest.raises(CompositionError):
            again()
    assert len(acc.entries) == 1
    # and a workload release is refused by an accountant that already holds something else
    other = PrivacyAccountant()
    release_laplace(4.0, puffgm.calibrate("example:asia", epsilon=1.0), random_state=1, accountant=other)
    with pytest.raises(CompositionError):
        release_workload([3, 2.5, 1], asia_cal, random_state=0, accountant=other)
    assert len(other.entries) == 1


def test_release_refuses_bad_answers(asia_cal):
    acc = PrivacyAccountant()
    ranges = asia_cal.ranges
    assert ranges == ((0.0, 5.0), (0.0, 5.0), (0.0, 4.0))
    for bad, msg in [([6, 1, 1], "outside"), ([3, -0.5, 1], "outside"), ([3, 1, 4.5], "outside"),
                     ([3, 1], "3 answers"), ([3, 1, 1, 1], "3 answers"), ([3, float("nan"), 1], "finite"),
                     ({"yes-early": 1, "risk": 1}, "exactly the statistics"), (7, "3 answers")]:
        with pytest.raises(ParameterError, match=msg):
            release_workload(bad, asia_cal, random_state=0, accountant=acc)
    assert len(acc.entries) == 0  # nothing was recorded
    by_name = release_workload({"risk": 2.5, "no-late": 1, "yes-early": 3}, asia_cal, random_state=0)
    by_order = release_workload([3, 2.5, 1], asia_cal, random_state=0)
    assert by_name.value == by_order.value


def test_exact_answers_never_appear_in_the_record(asia_cal):
    a1, a2 = [3.0, 2.5, 1.0], [1.0, 4.5, 3.0]
    r1 = release_workload(a1, asia_cal, random_state=0)
    r2 = release_workload(a2, asia_cal, random_state=0)
    # the same seed draws the same noise: the values differ by the answers, nothing else does
    assert np.allclose(np.subtract(r2.value, r1.value), np.subtract(a2, a1), rtol=0, atol=1e-12)
    assert repr(_without_value(r1)) == repr(_without_value(r2))
    assert str(r1) == str(r2)
    d1, d2 = r1.to_dict(), r2.to_dict()
    assert d1.pop("value") != d2.pop("value") and json.dumps(d1, sort_keys=True) == json.dumps(d2, sort_keys=True)
    assert pickle.dumps(_without_value(r1)) == pickle.dumps(_without_value(r2))
    p1, p2 = pickle.dumps(r1), pickle.dumps(r2)
    assert p1 != p2
    # swapping in the other release's noisy values makes the pickles identical
    assert pickle.dumps(dataclasses.replace(r1, value=r2.value)) == p2
    assert pickle.loads(p1).value == r1.value


# =====================================================================================================
# 6. Bad input: one clear sentence each
# =====================================================================================================


def _mixed_states_network():
    return NetworkPrior(["A", "B", "C"], {"A": ("x", "y"), "B": ("x", "y", "z"), "C": ("x", "y")},
                        {"A": (), "B": ("A",), "C": ("B",)},
                        {"A": [0.4, 0.6], "B": [[0.5, 0.2], [0.3, 0.3], [0.2, 0.5]],
                         "C": [[0.9, 0.5, 0.1], [0.1, 0.5, 0.9]]}, name="mixed")


BAD = [
    ("example:asia", [], {}, "non-empty list"),
    ("example:asia", {"queries": []}, {}, "non-empty list"),
    ("example:asia", [{"count": 0}, 3], {}, "Query 2 of the workload is not a JSON object"),
    ("example:asia", [{"count": 0, "name": "a"}, {"count": 1, "name": "a"}], {}, "names of the workload's queries"),
    ("example:asia", [{"count": 0}, {"count": 1, "name": "F1"}], {}, "names of the workload's queries"),
    ("mixed", {"histogram": {}}, {}, "share one state space"),
    ("mixed", {"histogram": {"nodes": ["A", "B"]}}, {}, "share one state space"),
    ("example:asia", {"histogram": {"nodes": ["asia", "zzz"]}}, {}, "'zzz', which is not a node"),
    ("example:asia", [{"count": 0, "nodes": ["asia", "zzz"]}], {}, "'zzz', which is not a node"),
    ("example:asia", [{"scores": {"zzz": [0, 1]}}], {}, "'zzz', which is not a node"),
    ("example:asia", [{"count": 0}, {"count": 1}], {"weights": [1.0]}, "needs 2 weights"),
    ("example:asia", [{"count": 0}, {"count": 1}], {"weights": [1.0, 2.0, 3.0]}, "needs 2 weights"),
    ("example:asia", [{"count": 0}, {"count": 1}], {"weights": [1.0, 0.0]}, "'weights' parameter"),
    ("example:asia", [{"count": 0}, {"count": 1}], {"weights": [1.0, -2.0]}, "'weights' parameter"),
    ("example:asia", [{"count": 0}, {"count": 1}], {"weights": "12"}, "needs 2 weights"),
    ("example:asia", [{"count": 0}, {"count": 1}], {"max_joint_length": 80}, "81 cells.*over the limit of 80"),
    ("example:asia", {"queries": [{"count": 0}], "extra": 1}, {}, "Unknown key"),
    ("example:asia", {"histogram": {"nodes": ["asia"], "bins": 3}}, {}, "Unknown key"),
    ("example:asia", {"histogram": {"states": ["maybe"]}}, {}, "counts state 'maybe'"),
    ("example:asia", "{not json", {}, "not valid JSON"),
]


@pytest.mark.parametrize("prior,workload,options,message", BAD)
def test_bad_workloads_raise_one_clear_sentence(prior, workload, options, message):
    prior = _mixed_states_network() if prior == "mixed" else prior
    with pytest.raises(ParameterError, match=message) as info:
        puffgm.calibrate_workload(prior, workload, epsilon=1.0, **options)
    text = str(info.value)
    assert "\n" not in text and text.endswith(".") and text[0].isupper(), text


def test_chain_histogram_over_the_joint_limit_names_the_cells():
    cc = ChainPriorClass.from_matrices([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]], length=8)
    with pytest.raises(ParameterError, match=r"729 cells \(9 x 9 x 9\), over the limit of 700"):
        puffgm.calibrate_workload(cc, {"histogram": {}}, epsilon=1.0, max_joint_length=700)


def test_workload_forms_agree():
    """A list, {"queries": ...} and JSON text are one workload; a histogram is its count queries."""
    qs = [{"count": "yes", "nodes": ["asia", "tub", "smoke"]}, {"count": "no", "nodes": ["asia", "tub", "smoke"]}]
    a = puffgm.calibrate_workload("example:asia", qs, epsilon=1.0, baselines=False)
    b = puffgm.calibrate_workload("example:asia", {"queries": qs}, epsilon=1.0, baselines=False)
    c = puffgm.calibrate_workload("example:asia", json.dumps(qs), epsilon=1.0, baselines=False)
    h = puffgm.calibrate_workload("example:asia", {"histogram": {"nodes": ["asia", "tub", "smoke"]}}, epsilon=1.0,
                                  baselines=False)
    assert a.scales == b.scales == c.scales == h.scales
    assert h.names == ("yes", "no") and a.names == ("F1", "F2")


# =====================================================================================================
# 7. The grid of partial sums (what calibrate_workload uses) and the pruned search of the scale
# =====================================================================================================


def grid_laws(prior, workload, **options) -> WorkloadLaws:
    """The joint laws on the grid of partial sums, one axis per statistic (``PriorKind.workload_laws``)."""
    kind = as_prior(prior)
    bound = load_workload(workload).bind(*kind.query_domain())
    return WorkloadLaws(workload=bound, joint=kind.workload_laws(bound, **options), group_l1=0.0)


@pytest.mark.parametrize("case", CASES)
def test_grid_laws_match_enumeration_and_the_encoded_laws(case):
    """The grid road equals the enumeration (1e-9) and the encoded road (1e-12 in log space, the same exact zeros)."""
    prior, model, workload, _ = make_case(case)
    ref, ref_pairs, axes = reference_laws(model, workload)
    grid = grid_laws(prior, workload)
    assert grid.n_priors == len(model.probs)
    assert_laws_match(grid, ref, ref_pairs, axes)
    rows, pairs, labels = grid.stacked()
    enc_rows, enc_pairs, enc_labels = puffgm_laws(prior, workload).stacked()
    assert labels == enc_labels and np.array_equal(pairs, enc_pairs)
    finite = np.isfinite(enc_rows)
    assert np.array_equal(finite, np.isfinite(rows))
    err = np.abs(rows[finite] - enc_rows[finite]) / np.maximum(1.0, np.abs(enc_rows[finite]))
    assert err.max() <= 1e-12, float(err.max())


@pytest.mark.parametrize("case", ["asia", "net1", "chain:class-T5", "chain:mixed"])
def test_pruned_search_equals_the_search_over_every_pair(case):
    """Dropping the pairs below the target at failing scales changes nothing: the same t, loss, witness,
    losses per prior and number of evaluations, bit for bit, as the plain bisection over every pair."""
    from puffgm.mechanisms.query import least_passing
    from puffgm.mechanisms.workload import joint_loss_resolution, optimal_workload_scale

    prior, _, workload, weights = make_case(case)
    laws = grid_laws(prior, workload)
    units = [q.unit for q in laws.workload.queries]
    w = weights or (1.0,) * len(units)
    for epsilon in (0.5, 2.0):
        target = epsilon - joint_loss_resolution(laws, epsilon=epsilon)

        def full(t, epsilon=epsilon):
            return joint_loss_of(laws, [t * x * u for x, u in zip(w, units, strict=True)])

        hi, best, evals = least_passing(full, threshold=target, start=1.0, rtol=1e-6, refusal="none")
        got = optimal_workload_scale(laws, epsilon=epsilon, weights=w, start=1.0)
        assert got == (hi, best.loss, best.witness, best.per_prior, evals + 1)


def test_pruned_search_falls_back_to_every_pair_when_a_dropped_pair_fails(monkeypatch):
    """If the returned t fails over every pair (a dropped pair over the target by rounding alone), the
    search is redone over every pair, so the reported loss is always that of every pair."""
    from puffgm.mechanisms import workload as mw

    prior, _, workload, _ = make_case("asia")
    laws = grid_laws(prior, workload)
    plain = mw.optimal_workload_scale(laws, epsilon=1.0, weights=(1.0, 1.0, 1.0), start=1.0)
    real, calls = mw._PrunedLoss.every_pair, []

    def fails(self, t):
        calls.append(t)
        return real(self, t)._replace(loss=math.inf)

    monkeypatch.setattr(mw._PrunedLoss, "every_pair", fails)
    again = mw.optimal_workload_scale(laws, epsilon=1.0, weights=(1.0, 1.0, 1.0), start=1.0)
    assert again == plain and calls == [plain.scale]


def test_grid_refusals_name_the_grid():
    with pytest.raises(InferenceLimitError, match=r"grid of partial sums \(81 cells, 9 x 9\)"):
        puffgm.calibrate_workload("example:asia", [{"count": 0}, {"count": 1}], epsilon=1.0, max_table_entries=100)
    with pytest.raises(InferenceLimitError, match="9 entries, over the limit max_sum_length = 8"):
        puffgm.calibrate_workload("example:asia", [{"count": 0}, {"count": 1}], epsilon=1.0, max_sum_length=8)


def test_the_limits_count_the_grids_cells_exactly():
    """max_joint_length bounds prod_j (n_j + 1) and max_table_entries a clique times those cells: both pass
    at the exact count and refuse one below it (asia's largest clique has 8 states, two counts 9 x 9 cells)."""
    two = [{"count": 0}, {"count": 1}]
    at_limit = [puffgm.calibrate_workload("example:asia", two, epsilon=1.0, baselines=False, **limit).scales
                for limit in ({"max_joint_length": 81}, {"max_table_entries": 8 * 81}, {})]
    assert at_limit[0] == at_limit[1] == at_limit[2]
    with pytest.raises(ParameterError, match=r"81 cells \(9 x 9\), over the limit of 80"):
        puffgm.calibrate_workload("example:asia", two, epsilon=1.0, max_joint_length=80)
    with pytest.raises(InferenceLimitError, match=r"81 cells, 9 x 9\) exceeds max_table_entries = 647"):
        puffgm.calibrate_workload("example:asia", two, epsilon=1.0, max_table_entries=8 * 81 - 1)


def test_a_chain_histogram_is_limited_by_its_grid_cells():
    """A 3-state histogram of T positions has (T + 1)^3 cells: T = 4 fits 125 cells and T = 5 does not."""
    P = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]]
    fits = puffgm.calibrate_workload(ChainPriorClass.from_matrices(P, length=4), {"histogram": {}}, epsilon=1.0,
                                     max_joint_length=125, baselines=False)
    assert fits.workload["joint_cells"] == 125
    with pytest.raises(ParameterError, match=r"216 cells \(6 x 6 x 6\), over the limit of 125"):
        puffgm.calibrate_workload(ChainPriorClass.from_matrices(P, length=5), {"histogram": {}}, epsilon=1.0,
                                  max_joint_length=125)


def test_a_chain_past_max_exact_length_is_refused_on_the_grid():
    cc = ChainPriorClass.from_matrices([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]], length=6)
    with pytest.raises(ParameterError, match="at most max_exact_length = 3; this one has T = 6"):
        puffgm.calibrate_workload(cc, {"histogram": {}}, epsilon=1.0, max_exact_length=3)
