"""Exact joint audits of composed Markov Quilt Mechanism releases (Song, Wang and Chaudhuri 2017, Theorem 4.4).

The accountant composes K MQM releases over one instantiation and its quilt sets as
(K * max_k epsilon_k)-Pufferfish private.  This module checks that claim exactly and
independently of puffgm's own loss code: it enumerates the full joint law of small
models (Bayesian networks with <= 10 binary/ternary nodes, Markov chains with k^T <= 729
sequences), releases K queries through ``release_laplace(..., accountant=acc)``, and computes
for every prior of the class, every node X_i and every pair a != b of its values with
positive probability the exact privacy loss of the joint output

    Y = (F_1(X) + Z_1, ..., F_K(X) + Z_K),   Z_k ~ Laplace(b_k) independent,
    loss = sup_y | log p(y | X_i = a) - log p(y | X_i = b) |,

which must stay within ``acc.total``.  Run with ``-s`` to see the margins
(exact joint loss / reported total) of every case.

Margins measured (2026-11-26; 14 model/method pairs, K = 2 and 3, 546 composed cases): no violation;
exact joint loss / acc.total from 0.09 (strongly dependent hand-made network, different epsilons) to 0.96
(weakly dependent 2-state chain, T = 6, method "exact", the count released twice at epsilon 8: loss
15.363 for a total of 16).  Equal epsilons: 0.15-0.96; different epsilons (total K * max epsilon_k):
0.09-0.59.  The loss grows by about epsilon - e(X_Q | X_i) per release, as in the proof of Theorem 4.4
(K epsilon - (K - 1) e), so K * epsilon is approached only where the active quilts' max-influence is
small; where MQM falls back to the trivial quilt (strong dependence: asia and the skewed network at
epsilon <= 1) single releases already sit at about half of epsilon.  Single releases (K = 1): 0.22 to
0.99993 (the same weak chain at epsilon 8, loss 7.9994).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from functools import cache, lru_cache

import numpy as np
import pytest
from scipy.special import logsumexp

import puffgm
from puffgm.chains import ChainPrior, ChainPriorClass
from puffgm.exceptions import CompositionError
from puffgm.mechanisms.laplace import release_laplace

TOL = 1e-9


# =====================================================================================================
# The auditor (numpy/scipy only; no puffgm code)
# =====================================================================================================
#
# Why the supremum sits on a finite grid.  Fix the output's cell: on each axis j, y_j lies between two
# consecutive atom coordinates (or beyond the last one), so for every atom m the sign of y_j - A_mj is
# fixed and exp(-|y_j - A_mj| / b_j) is either exp(-y_j / b_j) * exp(A_mj / b_j) or
# exp(-y_j / b_j) * exp(2 y_j / b_j) * exp(-A_mj / b_j).  Dividing numerator and denominator by the
# common factor prod_j exp(-y_j / b_j), each of p(y | a) and p(y | b) becomes a positive multilinear
# function of u_j = exp(2 y_j / b_j) (affine in each u_j when the others are fixed).  A ratio
# (alpha + beta u) / (gamma + delta u) with a positive denominator is monotone in u (its derivative has
# the constant sign of beta gamma - alpha delta), so moving one coordinate at a time to an end of its
# interval never lowers (for the sup) or raises (for the inf) the ratio: both are reached at a corner of
# a cell.  The corners of all cells are the grid (atom coordinates on each axis, plus -inf and +inf).
# At y_j -> +inf every atom is to the left, the factor exp(-y_j / b_j) cancels, and what is left is the
# weight exp(+A_mj / b_j); at y_j -> -inf it is exp(-A_mj / b_j).  (Beyond the outermost atom on an axis
# the ratio is therefore constant along that axis, so the limits equal the values at the outermost
# coordinates; ``test_limits_equal_outermost_coordinates`` checks the limit code against that.)


def merge_atoms(values):
    """Distinct atoms (rows of ``values``, shape (N, K)) and, per configuration, the index of its atom."""
    atoms, inverse = np.unique(np.asarray(values, float), axis=0, return_inverse=True)
    return atoms, np.asarray(inverse).reshape(-1)


def grid_log_kernel(atoms, scales):
    """log of prod_j exp(-|y_j - A_mj| / b_j) on every grid point, the +/-inf limits taken in log space.

    Returns ``(E, points)``: ``E`` of shape (G, M) (G grid points, M atoms), and the grid points (G, K),
    with -inf/+inf where an axis sits at a limit (the factor that cancels there is left out).
    """
    atoms = np.asarray(atoms, float)
    scales = np.asarray(scales, float)
    m, k = atoms.shape
    kernel = None
    axes = []
    for j in range(k):
        a = atoms[:, j]
        coords = np.unique(a)
        finite = -np.abs(coords[:, None] - a[None, :]) / scales[j]
        t = np.vstack([-a[None, :] / scales[j], finite, a[None, :] / scales[j]])  # -inf, coords..., +inf
        axes.append(np.concatenate([[-np.inf], coords, [np.inf]]))
        kernel = t if kernel is None else (kernel[:, None, :] + t[None, :, :]).reshape(-1, m)
    points = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, k)
    return kernel, points


def _log(w):
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(w, float))


def pair_extremes(kernel, wa, wb):
    """(max, min) over the grid of log p(y | a) - log p(y | b), mixtures with weights wa, wb over the atoms."""
    d = logsumexp(kernel + _log(wa)[None, :], axis=1) - logsumexp(kernel + _log(wb)[None, :], axis=1)
    return float(d.max()), float(d.min())


def direct_log_ratio(atoms, wa, wb, scales, ys):
    """log p(y | a) - log p(y | b) at arbitrary finite outputs ``ys`` (P, K): the brute-force reference."""
    e = -(np.abs(np.asarray(ys, float)[:, None, :] - np.asarray(atoms, float)[None, :, :])
          / np.asarray(scales, float)).sum(axis=2)
    return logsumexp(e + _log(wa)[None, :], axis=1) - logsumexp(e + _log(wb)[None, :], axis=1)


@dataclass(frozen=True)
class Model:
    """A fully enumerated prior class: configurations X (N, n) of state indices, one law per prior."""

    name: str
    nodes: tuple
    X: np.ndarray
    laws: tuple  # one array (N,) of probabilities per prior

    def index(self, node) -> int:
        return self.nodes.index(node)


@dataclass
class Audit:
    loss: float
    worst: tuple  # (prior, node, a, b)
    per_node: dict = field(default_factory=dict)


def exact_joint_audit(model: Model, values, scales) -> Audit:
    """The exact loss of releasing ``values`` (N, K) + independent Laplace(scales) noise, over every prior,
    node and pair of values with positive probability (both directions of each pair)."""
    values = np.asarray(values, float).reshape(len(model.X), -1)
    atoms, inv = merge_atoms(values)
    kernel, _ = grid_log_kernel(atoms, scales)
    m = len(atoms)
    best = Audit(-np.inf, ())
    for t, law in enumerate(model.laws):
        for i, node in enumerate(model.nodes):
            col = model.X[:, i]
            logmix = {}
            for s in np.unique(col):
                sel = col == s
                mass = law[sel].sum()
                if mass <= 0:
                    continue
                w = np.bincount(inv[sel], weights=law[sel], minlength=m) / mass
                logmix[int(s)] = logsumexp(kernel + _log(w)[None, :], axis=1)
            for a, b in itertools.combinations(sorted(logmix), 2):
                d = logmix[a] - logmix[b]
                loss = float(max(d.max(), -d.min()))
                best.per_node[(t, node)] = max(best.per_node.get((t, node), 0.0), loss)
                if loss > best.loss:
                    best.loss, best.worst = loss, (t, node, a, b)
    return best


# ------------------------------------------------------------------------- enumeration of the models
def enumerate_pgmpy(models, name) -> Model:
    """Every configuration of pgmpy networks sharing a DAG and states, with each network's probability."""
    first = models[0]
    nodes = tuple(first.nodes())
    own = {c.variable: c for c in first.get_cpds()}
    states = {v: list(own[v].state_names[v]) for v in nodes}
    X = np.array(list(itertools.product(*[range(len(states[v])) for v in nodes])), dtype=int)
    laws = []
    for model in models:
        p = np.ones(len(X))
        for cpd in model.get_cpds():
            vs = list(cpd.variables)
            idx = []
            for v in vs:  # the CPD's own state order, through the state names
                perm = np.array([list(cpd.state_names[v]).index(s) for s in states[v]])
                idx.append(perm[X[:, nodes.index(v)]])
            table = np.asarray(cpd.get_values(), float).reshape([len(states[v]) for v in vs])
            p *= table[tuple(idx)]
        assert abs(p.sum() - 1) < 1e-9
        laws.append(p)
    return Model(name, nodes, X, tuple(laws))


def stationary(P):
    P = np.asarray(P, float)
    vals, vecs = np.linalg.eig(P.T)
    v = np.real(vecs[:, np.argmin(np.abs(vals - 1))])
    return v / v.sum()


def enumerate_chains(members, T, name) -> Model:
    """Every sequence of k states of length T, with its probability under each (P, q) (q "stationary" ok)."""
    k = len(members[0][0])
    X = np.array(list(itertools.product(range(k), repeat=T)), dtype=int)
    laws = []
    for P, q in members:
        P = np.asarray(P, float)
        q = stationary(P) if isinstance(q, str) else np.asarray(q, float)
        p = q[X[:, 0]].copy()
        for t in range(T - 1):
            p *= P[X[:, t], X[:, t + 1]]
        assert abs(p.sum() - 1) < 1e-9
        laws.append(p)
    return Model(name, tuple(f"X{t}" for t in range(1, T + 1)), X, tuple(laws))


# =====================================================================================================
# Self-checks of the auditor
# =====================================================================================================
def _random_mixture(rng, m, k, integer=True):
    atoms = rng.integers(0, 6, size=(m, k)).astype(float) if integer else rng.normal(0, 2, size=(m, k))
    atoms, _ = merge_atoms(atoms)
    wa = rng.dirichlet(np.ones(len(atoms)) * 0.7)
    wb = rng.dirichlet(np.ones(len(atoms)) * 0.7)
    wb[rng.random(len(atoms)) < 0.2] = 0.0  # some atoms impossible under b
    return atoms, wa, wb / wb.sum()


@pytest.mark.parametrize("seed", range(4))
def test_k1_vertex_max_against_a_dense_grid(seed):
    rng = np.random.default_rng(seed)
    atoms, wa, wb = _random_mixture(rng, 7, 1, integer=seed % 2 == 0)
    b = [0.4, 1.0, 2.5, 0.7][seed]
    hi, lo = pair_extremes(grid_log_kernel(atoms, [b])[0], wa, wb)
    ys = np.linspace(atoms.min() - 8 * b, atoms.max() + 8 * b, 200_001)[:, None]
    dense = direct_log_ratio(atoms, wa, wb, [b], ys)
    step = ys[1, 0] - ys[0, 0]
    assert dense.max() <= hi + 1e-12 and dense.min() >= lo - 1e-12
    # the log-ratio is (2/b)-Lipschitz in y, so the dense grid comes within 2 * step / b of the supremum
    assert hi - dense.max() <= 2 * step / b + 1e-12 and dense.min() - lo <= 2 * step / b + 1e-12


@pytest.mark.parametrize("seed", range(4))
def test_k2_vertex_extremes_bound_random_outputs(seed):
    rng = np.random.default_rng(100 + seed)
    atoms, wa, wb = _random_mixture(rng, 12, 2, integer=seed < 2)
    b = np.array([[0.5, 1.5], [1.0, 1.0], [0.3, 2.0], [2.0, 0.6]][seed])
    hi, lo = pair_extremes(grid_log_kernel(atoms, b)[0], wa, wb)
    n = 10_000
    centre = atoms[rng.integers(len(atoms), size=n)]
    ys = np.vstack([
        centre[: n // 2] + rng.normal(0, 1, size=(n // 2, 2)) * b,              # near the atoms
        rng.uniform(-60, 60, size=(n // 4, 2)) * b,                             # far tails
        np.column_stack([rng.choice([-1, 1], n // 4) * rng.uniform(10, 200, n // 4) * b[0],
                         centre[: n // 4, 1] + rng.normal(0, 1, n // 4) * b[1]]),  # one axis far out
    ])
    r = direct_log_ratio(atoms, wa, wb, b, ys)
    assert np.all(np.isfinite(r))
    assert r.max() <= hi + 1e-12 and r.min() >= lo - 1e-12
    # and the grid's finite points are themselves attainable outputs
    kernel, points = grid_log_kernel(atoms, b)
    fin = np.all(np.isfinite(points), axis=1)
    at_grid = direct_log_ratio(atoms, wa, wb, b, points[fin])
    d = logsumexp(kernel + _log(wa), axis=1) - logsumexp(kernel + _log(wb), axis=1)
    np.testing.assert_allclose(at_grid, d[fin], rtol=0, atol=1e-12)


def _node_mixtures(model, values, t, i, a, b):
    """Atoms and the weights P(atom | X_i = a), P(atom | X_i = b) under prior t (for the self-checks)."""
    atoms, inv = merge_atoms(np.asarray(values, float).reshape(len(model.X), -1))
    law, col = model.laws[t], model.X[:, i]
    ws = [np.bincount(inv[col == s], weights=law[col == s], minlength=len(atoms)) / law[col == s].sum()
          for s in (a, b)]
    return atoms, ws[0], ws[1]


def test_model_pairs_against_dense_outputs():
    """The grid extremes of real mixtures (asia, a correlated chain) bound dense and random outputs."""
    asia = asia_model()
    count = (asia.X == 0).sum(axis=1)
    atoms, wa, wb = _node_mixtures(asia, count, 0, asia.index("lung"), 0, 1)
    hi, lo = pair_extremes(grid_log_kernel(atoms, [3.9])[0], wa, wb)
    ys = np.linspace(-40, 48, 100_001)[:, None]
    dense = direct_log_ratio(atoms, wa, wb, [3.9], ys)
    assert dense.max() <= hi + 1e-12 and hi - dense.max() <= 2 * (ys[1, 0] - ys[0, 0]) / 3.9 + 1e-12
    assert dense.min() >= lo - 1e-12 and dense.min() - lo <= 2 * (ys[1, 0] - ys[0, 0]) / 3.9 + 1e-12
    chain = enumerate_chains([(WEAK3, "stationary")], 6, "weak3")
    values = np.column_stack([(chain.X == 0).sum(axis=1), chain.X[:, 2] == 2])
    atoms, wa, wb = _node_mixtures(chain, values, 0, 2, 0, 2)
    b = np.array([0.5, 0.3])
    hi, lo = pair_extremes(grid_log_kernel(atoms, b)[0], wa, wb)
    rng = np.random.default_rng(5)
    ys = np.vstack([rng.normal([3, 0.5], [3, 1], size=(5000, 2)), rng.uniform(-80, 80, size=(5000, 2))])
    r = direct_log_ratio(atoms, wa, wb, b, ys)
    assert r.max() <= hi + 1e-12 and r.min() >= lo - 1e-12
    assert hi - r.max() < 0.5  # random points do come near the supremum


def test_limits_equal_outermost_coordinates():
    """Beyond the last atom on an axis the ratio is constant, so each limit equals its neighbour's value."""
    rng = np.random.default_rng(7)
    atoms, wa, wb = _random_mixture(rng, 10, 2)
    b = np.array([0.8, 1.3])
    kernel, points = grid_log_kernel(atoms, b)
    d = (logsumexp(kernel + _log(wa), axis=1) - logsumexp(kernel + _log(wb), axis=1))
    g0, g1 = len(np.unique(atoms[:, 0])) + 2, len(np.unique(atoms[:, 1])) + 2
    d = d.reshape(g0, g1)
    np.testing.assert_allclose(d[0], d[1], atol=1e-12)
    np.testing.assert_allclose(d[-1], d[-2], atol=1e-12)
    np.testing.assert_allclose(d[:, 0], d[:, 1], atol=1e-12)
    np.testing.assert_allclose(d[:, -1], d[:, -2], atol=1e-12)
    assert np.isinf(points[0, 0]) and np.isinf(points[-1, 1])


@pytest.mark.parametrize("coefs,scales", [([1.0], [0.5]), ([3.0], [2.0]), ([1.0, -2.0], [0.5, 1.5]),
                                          ([1.0, 1.0, 0.5], [1.0, 2.0, 0.25])])
def test_single_binary_node_is_differential_privacy(coefs, scales):
    """One binary node: sum_k |F_k(1) - F_k(0)| / b_k exactly, for any prior with both values possible."""
    model = Model("one node", ("X",), np.array([[0], [1]]), (np.array([0.3, 0.7]), np.array([0.9, 0.1])))
    values = np.outer(model.X[:, 0], coefs)
    audit = exact_joint_audit(model, values, scales)
    assert audit.loss == pytest.approx(sum(abs(c) / s for c, s in zip(coefs, scales, strict=True)), rel=1e-12)


@pytest.mark.parametrize("scales", [[1.0], [0.7, 2.0]])
def test_independent_nodes_count_loss_is_the_sum_of_inverse_scales(scales):
    """Independent nodes: the count released K times loses exactly sum_k 1/b_k (reached as y -> +inf)."""
    model = enumerate_chains([(np.full((2, 2), 0.5), [0.5, 0.5])], 5, "iid")
    count = (model.X == 1).sum(axis=1)
    audit = exact_joint_audit(model, np.column_stack([count] * len(scales)), scales)
    assert audit.loss == pytest.approx(sum(1 / s for s in scales), rel=1e-12)


def test_the_audit_sees_too_little_noise():
    """Halving the MQM scale of a correlated chain must show a loss above epsilon (the audit is sharp)."""
    P = [[0.9, 0.1], [0.4, 0.6]]
    model = enumerate_chains([(P, [0.5, 0.5])], 5, "chain")
    cal = puffgm.calibrate(ChainPriorClass.from_matrices(P, [0.5, 0.5], 5), epsilon=1.0)
    count = (model.X == 0).sum(axis=1)
    assert exact_joint_audit(model, count, [cal.scale]).loss <= 1.0 * (1 + TOL)
    assert exact_joint_audit(model, count, [cal.scale / 2]).loss > 1.0


# =====================================================================================================
# The models, their calibrations, the queries
# =====================================================================================================
HAND_EDGES = [("A", "B"), ("A", "C"), ("B", "D"), ("C", "D"), ("D", "E"), ("B", "F"), ("E", "G"), ("F", "G")]
HAND_CARD = {"A": 2, "B": 3, "C": 2, "D": 2, "E": 3, "F": 2, "G": 2}  # 288 configurations


def hand_network(seed, concentration=0.8):
    """A 7-node pgmpy network (two ternary nodes), seeded: strongly skewed CPDs with a small concentration
    (strong dependence, MQM falls back to the trivial quilt), nearly flat ones with a large concentration
    (weak dependence, the active quilts are small and the noise well below group DP's)."""
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    rng = np.random.default_rng(seed)
    model = DiscreteBayesianNetwork(HAND_EDGES)
    for v in "ABCDEFG":
        parents = sorted(model.get_parents(v))
        cols = int(np.prod([HAND_CARD[p] for p in parents])) if parents else 1
        table = rng.dirichlet(np.full(HAND_CARD[v], concentration), size=cols).T
        table = 0.98 * table + 0.02 / HAND_CARD[v]  # keep every value possible
        model.add_cpds(TabularCPD(v, HAND_CARD[v], table, evidence=parents or None,
                                  evidence_card=[HAND_CARD[p] for p in parents] or None))
    assert model.check_model()
    return model


#: ASIA (Lauritzen and Spiegelhalter 1988) as bundled with pgmpy, written out here (pgmpy's BIF parser takes
#: seconds); ``test_asia_tables_are_the_bundled_network`` checks it is the network "example:asia" loads.
ASIA = {  # node: (parents, P(node = yes | parents) for parent states in row-major yes/no order)
    "asia": ((), [0.01]), "tub": (("asia",), [0.05, 0.01]), "smoke": ((), [0.5]),
    "lung": (("smoke",), [0.1, 0.01]), "bronc": (("smoke",), [0.6, 0.3]),
    "either": (("lung", "tub"), [1.0, 1.0, 1.0, 0.0]), "xray": (("either",), [0.98, 0.05]),
    "dysp": (("bronc", "either"), [0.9, 0.8, 0.7, 0.1]),
}


@lru_cache(maxsize=1)
def asia_pgmpy():
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    model = DiscreteBayesianNetwork([(p, v) for v, (ps, _) in ASIA.items() for p in ps])
    for v, (ps, yes) in ASIA.items():
        names = {u: ["yes", "no"] for u in (v, *ps)}
        model.add_cpds(TabularCPD(v, 2, [yes, [round(1 - y, 12) for y in yes]], evidence=list(ps) or None,
                                  evidence_card=[2] * len(ps) or None, state_names=names))
    assert model.check_model()
    return model


@lru_cache(maxsize=1)
def asia_model():
    return enumerate_pgmpy([asia_pgmpy()], "asia")


CHAIN_SPEC = {"transition": [[0.9, 0.1], [0.4, 0.6]], "initial": [0.5, 0.5], "length": 5}
P3 = [[0.7, 0.2, 0.1], [0.15, 0.7, 0.15], [0.1, 0.3, 0.6]]
PAIR = [([[0.9, 0.1], [0.4, 0.6]], [1.0, 0.0]), ([[0.8, 0.2], [0.3, 0.7]], [0.9, 0.1])]  # X1 = 1 impossible
WEAK = [[0.6, 0.4], [0.45, 0.55]]                                   # weak dependence: small active quilts
WEAK3 = [[0.5, 0.3, 0.2], [0.3, 0.4, 0.3], [0.25, 0.25, 0.5]]

#: name -> (prior given to puffgm.calibrate, calibration method, independent enumeration); built lazily
MODELS = ["asia", "hand-net", "two-nets", "weak-net", "two-weak-nets", "chain-spec/exact", "chain-spec/approx",
          "chain3/exact", "chain3/approx", "two-chains/exact", "two-chains/approx", "weak-chain/exact",
          "weak-chain/approx", "weak3/exact"]


@cache
def model_setup(name, spec_dir):
    base, _, method = name.partition("/")
    method = method or "exact"
    if base == "asia":
        return "example:asia", method, asia_model()
    if base == "hand-net":
        net = hand_network(1)
        return net, method, enumerate_pgmpy([net], "hand-net")
    if base == "two-nets":
        nets = [hand_network(1), hand_network(2)]
        return nets, method, enumerate_pgmpy(nets, "two-nets")
    if base == "weak-net":
        net = hand_network(3, concentration=20.0)
        return net, method, enumerate_pgmpy([net], "weak-net")
    if base == "two-weak-nets":
        nets = [hand_network(3, concentration=20.0), hand_network(4, concentration=20.0)]
        return nets, method, enumerate_pgmpy(nets, "two-weak-nets")
    if base == "chain-spec":  # the JSON road of the command line
        path = f"{spec_dir}/chain.json"
        with open(path, "w") as fh:
            json.dump(CHAIN_SPEC, fh)
        members = [(CHAIN_SPEC["transition"], CHAIN_SPEC["initial"])]
        return path, method, enumerate_chains(members, CHAIN_SPEC["length"], "chain-spec")
    if base == "chain3":
        return (ChainPriorClass.from_matrices(P3, "stationary", 6), method,
                enumerate_chains([(P3, "stationary")], 6, "chain3"))
    if base in ("weak-chain", "weak3"):
        P = WEAK if base == "weak-chain" else WEAK3
        return (ChainPriorClass.from_matrices(P, "stationary", 6), method,
                enumerate_chains([(P, "stationary")], 6, base))
    if base == "two-chains":
        cc = ChainPriorClass([ChainPrior(P, q, 5, name=f"c{j}") for j, (P, q) in enumerate(PAIR)])
        return cc, method, enumerate_chains(PAIR, 5, "two-chains")
    raise KeyError(name)


@pytest.fixture(scope="module")
def spec_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("joint_audit"))


@cache
def calibration(name, spec_dir, epsilon):
    prior, method, _ = model_setup(name, spec_dir)
    return puffgm.calibrate(prior, epsilon=epsilon, method=method)


def queries(model: Model, worst_node):
    """1-Lipschitz queries (one node's change moves each by at most 1) on the enumerated configurations."""
    X = model.X
    n = X.shape[1]
    w = model.index(worst_node)
    half = list(range(n // 2 + 1))
    score = np.array([0.0, 0.5, 1.0])[X].sum(axis=1) if X.max() >= 2 else (X == 1).sum(axis=1)
    return {
        "count": (X == 0).sum(axis=1).astype(float),                     # nodes in their first state
        "count-half": (X[:, half] == 0).sum(axis=1).astype(float),       # another count (first half)
        "score": score.astype(float),                                   # sum of scores in [0, 1]
        "indicator": (X[:, w] == 0).astype(float),                      # the worst node's indicator
    }


QUERY_SETS = {
    2: [("count", "count"), ("count", "count-half"), ("count", "indicator"), ("score", "indicator")],
    3: [("count", "count", "count"), ("count", "count-half", "indicator"), ("count", "score", "indicator")],
}
EPSILONS = {2: [(1.0, 1.0), (2.0, 2.0), (1.0, 2.0), (2.0, 0.5), (8.0, 8.0), (8.0, 2.0)],
            3: [(1.0, 1.0, 1.0), (2.0, 2.0, 2.0), (0.5, 1.0, 2.0), (4.0, 4.0, 4.0), (2.0, 4.0, 8.0)]}

CASES = [(m, q, e) for m in MODELS for k in (2, 3) for q in QUERY_SETS[k] for e in EPSILONS[k]]


# =====================================================================================================
# The audits
# =====================================================================================================
def test_asia_tables_are_the_bundled_network(spec_dir):
    from puffgm.networks.priors import load_prior_class

    assert load_prior_class(asia_pgmpy()).fingerprint == load_prior_class("example:asia").fingerprint
    assert calibration("asia", spec_dir, 1.0).fingerprint == load_prior_class("example:asia").fingerprint


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0, 8.0])
def test_single_mqm_release_is_epsilon_private(name, epsilon, spec_dir):
    """K = 1: the exact loss of one MQM release of each query stays within epsilon."""
    cal = calibration(name, spec_dir, epsilon)
    model = model_setup(name, spec_dir)[2]
    worst = 0.0
    for label, values in queries(model, cal.worst_node).items():
        acc = puffgm.PrivacyAccountant()
        rel = release_laplace(float(values[0]), cal, accountant=acc, random_state=0)
        assert acc.total == pytest.approx(epsilon)
        audit = exact_joint_audit(model, values, [rel.scale])
        assert audit.loss <= acc.total * (1 + TOL), (name, label, audit)
        worst = max(worst, audit.loss / acc.total)
    print(f"[K=1] {name:18s} eps={epsilon:<4g} scale={cal.scale:.4g} max margin {worst:.3f}")


def test_composition_is_not_free():
    """The K in K * epsilon is needed: two releases of the count on the weak chain lose far more than one."""
    model = model_setup("weak-chain/exact", "")[2]
    cal = calibration("weak-chain/exact", "", 8.0)
    count = (model.X == 0).sum(axis=1)
    one = exact_joint_audit(model, count, [cal.scale]).loss
    two = exact_joint_audit(model, np.column_stack([count, count]), [cal.scale] * 2).loss
    assert one <= 8.0 * (1 + TOL) and 1.5 * 8.0 < two <= 16.0 * (1 + TOL)


@pytest.mark.parametrize("name,query_set,epsilons", CASES)
def test_composed_mqm_releases_stay_within_the_reported_total(name, query_set, epsilons, spec_dir):
    """K = 2, 3 releases of one prior class and method: exact joint loss <= acc.total (Theorem 4.4)."""
    model = model_setup(name, spec_dir)[2]
    cals = [calibration(name, spec_dir, e) for e in epsilons]
    qs = queries(model, cals[-1].worst_node)
    acc = puffgm.PrivacyAccountant()
    scales, columns = [], []
    for k, (q, cal) in enumerate(zip(query_set, cals, strict=True)):
        try:
            rel = release_laplace(float(qs[q][0]), cal, accountant=acc, random_state=k)
        except CompositionError as err:  # refused: nothing more to audit (a refusal is never unsafe)
            print(f"[refused] {name} {query_set} {epsilons}: {err}")
            break
        scales.append(rel.scale)
        columns.append(qs[q])
    assert scales, "the first release of an empty accountant is always accepted"
    total = acc.total
    assert total == pytest.approx(len(scales) * max(epsilons[: len(scales)]))
    audit = exact_joint_audit(model, np.column_stack(columns), scales)
    print(f"[K={len(scales)}] {name:18s} {'+'.join(query_set):28s} eps={epsilons} total={total:g} "
          f"loss={audit.loss:.4f} margin={audit.loss / total:.3f} worst={audit.worst}")
    assert audit.loss <= total * (1 + TOL), (name, query_set, epsilons, scales, audit.loss, audit.worst)
