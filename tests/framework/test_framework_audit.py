"""Tests of the exact Pufferfish auditor against brute force and closed forms."""

import itertools
import math

import numpy as np
import pytest

from puffgm.exceptions import AuditError, PriorError, SecretError
from puffgm.framework import (
    FiniteMechanism,
    Instantiation,
    Secret,
    audit_composition,
    audit_exponential,
    audit_finite,
    audit_laplace,
    audit_vector_laplace,
)


def _random_joint(rng, shape, zeros=0):
    p = rng.dirichlet(np.full(int(np.prod(shape)), 0.7)).reshape(shape)
    if zeros:
        flat = p.ravel()
        flat[rng.choice(flat.size, zeros, replace=False)] = 0.0
        p = flat.reshape(shape) / flat.sum()
    return p


def _value_pairs(nodes, shape):
    pairs = []
    for n, c in zip(nodes, shape, strict=True):
        for a, b in itertools.combinations(range(c), 2):
            pairs.append((Secret.value(n, a), Secret.value(n, b)))
    return pairs


# ---------------------------------------------------------------- brute-force references (probability space)


def _brute_conditional(joint, mask):
    p = joint * mask
    return p / p.sum()


def _brute_laplace_density(cond, qtab, w, b):
    # plain sums over databases, no grouping, no log space
    return np.array([(cond * np.exp(-np.abs(x - qtab) / b)).sum() / (2 * b) for x in w])


# ---------------------------------------------------------------- Laplace


@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0])
def test_laplace_dp_closed_form_independent_records(scale):
    """Theorem 6.1 special case: independent records, sum query, loss = sensitivity / scale exactly."""
    rng = np.random.default_rng(1)
    nodes = ["A", "B", "C", "D"]
    priors = []
    for _ in range(3):
        ps = rng.uniform(0.05, 0.95, size=4)
        joint = np.ones(())
        for p in ps:
            joint = np.multiply.outer(joint, np.array([1 - p, p]))
        priors.append(joint)
    inst = Instantiation(priors, _value_pairs(nodes, (2,) * 4), nodes=nodes, states=[2] * 4)
    r = audit_laplace(inst, lambda x: sum(x.values()), scale)
    assert r.loss == pytest.approx(1.0 / scale, rel=1e-12, abs=1e-12)
    # the ratio is constant (= e^{+-1/scale}) beyond the extreme query values 0 and 4
    assert r.witness.output in (math.inf, -math.inf, 0.0, 4.0)
    assert r.satisfies(epsilon=1.0 / scale) and not r.satisfies(epsilon=0.99 / scale)


def test_laplace_matches_dense_grid_on_correlated_prior():
    rng = np.random.default_rng(7)
    shape = (3, 3, 2)
    nodes = ["X", "Y", "Z"]
    joint = _random_joint(rng, shape)
    qtab = rng.integers(-3, 4, size=shape).astype(float)
    scale = 1.3
    pairs = _value_pairs(nodes, shape)
    inst = Instantiation([joint], pairs, nodes=nodes, states=list(shape))
    r = audit_laplace(inst, qtab, scale)
    # brute force on a dense grid (includes every breakpoint) plus far tails
    w = np.concatenate([np.linspace(-40, 40, 16001), np.unique(qtab)])
    best = 0.0
    for a, b in pairs:
        fa = _brute_laplace_density(_brute_conditional(joint, inst.mask(a.name)), qtab, w, scale)
        fb = _brute_laplace_density(_brute_conditional(joint, inst.mask(b.name)), qtab, w, scale)
        best = max(best, np.max(np.abs(np.log(fa) - np.log(fb))))
    assert best <= r.loss + 1e-9
    assert best == pytest.approx(r.loss, abs=1e-7)  # the tails at |w| = 40 are within 1e-7 of the limit


def test_laplace_query_given_as_callable_or_table_agree():
    rng = np.random.default_rng(3)
    joint = _random_joint(rng, (2, 3))
    inst = Instantiation([joint], _value_pairs(["A", "B"], (2, 3)), nodes=["A", "B"], states=[2, 3])
    tab = np.array([[0.0, 1.0, 2.0], [1.0, 2.0, 3.0]])
    r1 = audit_laplace(inst, tab, 0.7)
    r2 = audit_laplace(inst, lambda x: x["A"] + x["B"], 0.7)
    assert r1.loss == r2.loss and r1.witness == r2.witness


def test_laplace_rejects_bad_scale_and_vector_query():
    inst = Instantiation([np.full(2, 0.5)], [(("X", 0), ("X", 1))], nodes=["X"], states=[2])
    with pytest.raises(ValueError, match="'scale' parameter of audit_laplace"):
        audit_laplace(inst, [0.0, 1.0], -1.0)
    with pytest.raises(AuditError, match="scalar query"):
        audit_laplace(inst, [[0.0, 1.0], [1.0, 0.0]], 1.0)


# ---------------------------------------------------------------- vector Laplace


def test_vector_laplace_one_coordinate_equals_scalar():
    rng = np.random.default_rng(11)
    joint = _random_joint(rng, (3, 2, 2))
    inst = Instantiation([joint], _value_pairs(["A", "B", "C"], (3, 2, 2)), nodes=["A", "B", "C"], states=[3, 2, 2])
    q = rng.normal(size=(3, 2, 2))
    assert audit_vector_laplace(inst, q[..., None], 0.9).loss == pytest.approx(audit_laplace(inst, q, 0.9).loss, abs=1e-12)


def test_vector_laplace_matches_2d_grid():
    rng = np.random.default_rng(5)
    shape = (2, 2, 2)
    nodes = ["A", "B", "C"]
    joint = _random_joint(rng, shape)
    q = np.stack([rng.integers(0, 3, size=shape), rng.integers(0, 2, size=shape)], axis=-1).astype(float)
    scales = (0.8, 1.5)
    pairs = _value_pairs(nodes, shape)
    inst = Instantiation([joint], pairs, nodes=nodes, states=list(shape))
    r = audit_vector_laplace(inst, q, scales)
    g1, g2 = np.meshgrid(np.linspace(-30, 32, 621), np.linspace(-40, 41, 811), indexing="ij")
    best = 0.0
    qf = q.reshape(-1, 2)
    for a, b in pairs:
        dens = []
        for s in (a, b):
            c = _brute_conditional(joint, inst.mask(s.name)).ravel()
            f = np.zeros(g1.shape)
            for k in range(c.size):
                f += c[k] * np.exp(-np.abs(g1 - qf[k, 0]) / scales[0] - np.abs(g2 - qf[k, 1]) / scales[1])
            dens.append(f)
        best = max(best, np.max(np.abs(np.log(dens[0]) - np.log(dens[1]))))
    assert best <= r.loss + 1e-9
    assert best == pytest.approx(r.loss, abs=1e-6)


def test_vector_laplace_dp_closed_form():
    # independent records, histogram-like query (x_A, x_A + x_B): L1 sensitivity in A is 2 at scale 1 each
    joint = np.multiply.outer(np.array([0.3, 0.7]), np.array([0.6, 0.4]))
    inst = Instantiation([joint], [(("A", 0), ("A", 1))], nodes=["A", "B"], states=[2, 2])
    r = audit_vector_laplace(inst, lambda x: [x["A"], x["A"] + x["B"]], [1.0, 2.0])
    assert r.loss == pytest.approx(1.0 + 0.5, abs=1e-12)


# ---------------------------------------------------------------- finite outputs


def _rr(keep):
    return np.array([[keep, 1 - keep], [1 - keep, keep]])


def test_randomised_response_on_correlated_bits_brute_force():
    rng = np.random.default_rng(2)
    shape = (2, 2, 2)
    nodes = ["A", "B", "C"]
    joints = [_random_joint(rng, shape) for _ in range(3)]
    # mechanism: randomised response on the parity of the database
    keep = 0.8
    table = np.zeros(shape + (2,))
    for x in itertools.product(range(2), repeat=3):
        table[x] = _rr(keep)[sum(x) % 2]
    pairs = _value_pairs(nodes, shape)
    inst = Instantiation(joints, pairs, nodes=nodes, states=list(shape))
    r = audit_finite(inst, table)
    best = 0.0
    for joint in joints:
        for a, b in pairs:
            pa = np.tensordot(_brute_conditional(joint, inst.mask(a.name)), table, axes=3)
            pb = np.tensordot(_brute_conditional(joint, inst.mask(b.name)), table, axes=3)
            best = max(best, np.max(np.abs(np.log(pa / pb))))
    assert r.loss == pytest.approx(best, rel=1e-12)
    assert r.loss <= math.log(4) + 1e-12  # never worse than the mechanism's own DP guarantee on the parity
    assert r.n_outputs == 2 and len(r.per_prior) == 3


def test_finite_callable_log_probabilities_and_labels():
    inst = Instantiation([np.array([0.2, 0.8])], [(("X", 0), ("X", 1))], nodes=["X"], states=[2])
    mech = FiniteMechanism.from_log_callable(lambda x: np.log(_rr(0.75)[x["X"]]), outputs=("no", "yes"))
    r = audit_finite(inst, mech)
    assert r.loss == pytest.approx(math.log(3), abs=1e-12)
    assert r.witness.output in ("no", "yes")


def test_deterministic_release_has_infinite_loss():
    inst = Instantiation([np.array([0.5, 0.5])], [(("X", 0), ("X", 1))], nodes=["X"], states=[2])
    r = audit_finite(inst, np.eye(2))
    assert r.loss == math.inf


def test_both_zero_outputs_are_skipped():
    inst = Instantiation([np.array([0.5, 0.5])], [(("X", 0), ("X", 1))], nodes=["X"], states=[2])
    r = audit_finite(inst, np.array([[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]]))
    assert r.loss == pytest.approx(math.log(2), abs=1e-12)


def test_mechanism_rows_must_sum_to_one():
    inst = Instantiation([np.array([0.5, 0.5])], [(("X", 0), ("X", 1))], nodes=["X"], states=[2])
    with pytest.raises(AuditError, match="sums to"):
        audit_finite(inst, np.array([[0.5, 0.6], [0.5, 0.5]]))
    with pytest.raises(AuditError, match="negative"):
        audit_finite(inst, np.array([[1.5, -0.5], [0.5, 0.5]]))


# ---------------------------------------------------------------- composition


def test_composition_multisets_equal_full_sequences_and_brute_force():
    rng = np.random.default_rng(9)
    joint = _random_joint(rng, (2, 3))
    table = rng.dirichlet(np.ones(3), size=6).reshape(2, 3, 3)
    inst = Instantiation([joint], _value_pairs(["A", "B"], (2, 3)), nodes=["A", "B"], states=[2, 3])
    r_multi = audit_composition(inst, table, k=3)
    r_seq = audit_composition(inst, [table, table, table])
    assert r_multi.loss == pytest.approx(r_seq.loss, rel=1e-12)
    # brute force over sequences in probability space
    best = 0.0
    flat = table.reshape(6, 3)
    for a, b in inst.pairs:
        ca = _brute_conditional(joint, inst.mask(a.name)).ravel()
        cb = _brute_conditional(joint, inst.mask(b.name)).ravel()
        for seq in itertools.product(range(3), repeat=3):
            pr = np.prod(flat[:, list(seq)], axis=1)
            best = max(best, abs(math.log((ca * pr).sum() / (cb * pr).sum())))
    assert r_multi.loss == pytest.approx(best, rel=1e-12)


def test_composition_under_dp_adds_up():
    inst = Instantiation([np.array([0.3, 0.7])], [(("X", 0), ("X", 1))], nodes=["X"], states=[2])
    assert audit_composition(inst, _rr(0.75), k=4).loss == pytest.approx(4 * math.log(3), abs=1e-12)
    assert audit_composition(inst, [_rr(0.75), _rr(0.9)]).loss == pytest.approx(math.log(3) + math.log(9), abs=1e-12)


def test_composition_with_zero_probabilities():
    inst = Instantiation([np.array([0.5, 0.5])], [(("X", 0), ("X", 1))], nodes=["X"], states=[2])
    table = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
    r = audit_composition(inst, table, k=2)
    assert r.loss == math.inf
    assert r.witness.output != (1, 1)


# ---------------------------------------------------------------- exponential


def test_exponential_equals_softmax_table_and_dp_bound():
    rng = np.random.default_rng(4)
    joint = np.multiply.outer(np.array([0.4, 0.6]), np.array([0.5, 0.2, 0.3]))
    inst = Instantiation([joint], _value_pairs(["A", "B"], (2, 3)), nodes=["A", "B"], states=[2, 3])
    u = rng.uniform(0, 1, size=(2, 3, 4))  # sensitivity <= 1
    r = audit_exponential(inst, u, epsilon=0.5)
    z = u / 4.0
    table = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    assert r.loss == pytest.approx(audit_finite(inst, table).loss, rel=1e-12)
    assert r.loss <= 0.5 + 1e-12
    with pytest.raises(ValueError, match="exactly one"):
        audit_exponential(inst, u)


# ---------------------------------------------------------------- instantiation


def test_skipped_pairs_are_reported():
    joint = np.array([[0.5, 0.0], [0.5, 0.0]])  # B is never 1
    pairs = [(("A", 0), ("A", 1)), (("B", 0), ("B", 1))]
    inst = Instantiation([joint], pairs, nodes=["A", "B"], states=[2, 2])
    assert len(inst.skipped) == 1
    t, pair, reason = inst.skipped[0]
    assert pair == ("B=0", "B=1") and "B=1" in reason
    r = audit_laplace(inst, lambda x: x["A"], 1.0)
    assert r.skipped == inst.skipped and r.loss == pytest.approx(1.0)


def test_all_skipped_gives_vacuous_note():
    inst = Instantiation([np.array([1.0, 0.0])], [(("X", 0), ("X", 1))], nodes=["X"], states=[2])
    r = audit_finite(inst, _rr(0.5))
    assert r.loss == 0.0 and r.witness is None and any("vacuous" in n for n in r.notes)


def test_size_limit_names_the_size():
    nodes = [f"X{i}" for i in range(17)]
    with pytest.raises(AuditError, match="131072 joint states"):
        Instantiation([np.full((2,) * 17, 2.0**-17)], [(("X0", 0), ("X0", 1))], nodes=nodes, states=[2] * 17)


def test_prior_validation():
    with pytest.raises(PriorError, match="sums to"):
        Instantiation([np.array([0.5, 0.6])], [(("X", 0), ("X", 1))], nodes=["X"], states=[2])
    with pytest.raises(PriorError, match="negative"):
        Instantiation([np.array([1.5, -0.5])], [(("X", 0), ("X", 1))], nodes=["X"], states=[2])
    inst = Instantiation([np.array([0.5, 0.5 + 1e-8])], [(("X", 0), ("X", 1))], nodes=["X"], states=[2])
    assert any("renormalised" in n for n in inst.notes)
    with pytest.raises(SecretError, match="does not have"):
        Instantiation([np.array([0.5, 0.5])], [(("X", 0), ("X", 5))], nodes=["X"], states=[2])
    with pytest.raises(SecretError, match="unknown node"):
        Instantiation([np.array([0.5, 0.5])], [(("Y", 0), ("X", 1))], nodes=["X"], states=[2])


def test_secret_kinds():
    joint = np.full((4, 2), 1 / 8)
    inst = Instantiation(
        [joint],
        [(Secret.in_set("V", [0, 1]), Secret.in_set("V", [2, 3])),
         (Secret.region("V", 0, 1.5), Secret.region("V", 1.5)),
         (Secret.predicate(lambda x: x["V"] + x["W"] >= 3, "sum>=3"), Secret.predicate(lambda x: x["V"] + x["W"] < 3, "sum<3"))],
        nodes=["V", "W"], states={"V": (0, 1, 2, 3), "W": (0, 1)},
    )
    assert inst.mask("V in {0, 1}").sum() == 4
    assert inst.mask("0<=V<1.5").sum() == 4
    assert inst.mask("sum>=3").sum() == 3
    assert math.exp(inst.log_prob_secret(0, "sum>=3")) == pytest.approx(3 / 8)


def _chain_model(p0, stay):
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    m = DiscreteBayesianNetwork([("X1", "X2"), ("X2", "X3")])
    m.add_cpds(
        TabularCPD("X1", 2, [[p0], [1 - p0]]),
        TabularCPD("X2", 2, [[stay, 1 - stay], [1 - stay, stay]], evidence=["X1"], evidence_card=[2]),
        TabularCPD("X3", 2, [[stay, 1 - stay], [1 - stay, stay]], evidence=["X2"], evidence_card=[2]),
    )
    return m


def test_pgmpy_network_prior_and_default_instantiation():
    m = _chain_model(0.3, 0.9)
    inst = Instantiation.bayesian_network_default([m, _chain_model(0.5, 0.6)])
    assert inst.nodes == ("X1", "X2", "X3") and len(inst.pairs) == 3 and inst.n_priors == 2
    p = np.exp(inst.log_priors[0])
    assert p[0, 0, 1] == pytest.approx(0.3 * 0.9 * 0.1)
    assert p.sum() == pytest.approx(1.0)
    only = Instantiation.bayesian_network_default([m], protected=["X2"])
    assert [(a.name, b.name) for a, b in only.pairs] == [("X2=0", "X2=1")]
    # correlated chain: Laplace at scale 1 on the sum leaks more than 1 per record
    r = audit_laplace(inst, lambda x: sum(x.values()), 1.0)
    assert r.loss > 1.0 and r.witness.prior == 0


class _DuckNetworkPrior:
    """Stands in for puffgm.networks.priors.NetworkPrior (same attributes)."""

    def __init__(self, table, nodes, states):
        self._t, self.nodes, self.states = table, tuple(nodes), states

    def log_joint_table(self):
        return np.log(self._t)


class _DuckPriorClass:
    def __init__(self, priors):
        self.priors = tuple(priors)


def test_network_prior_and_prior_class_duck_types():
    rng = np.random.default_rng(0)
    t1, t2 = _random_joint(rng, (2, 3)), _random_joint(rng, (2, 3))
    states = {"A": ("a0", "a1"), "B": ("b0", "b1", "b2")}
    pc = _DuckPriorClass([_DuckNetworkPrior(t1, "AB", states), _DuckNetworkPrior(t2, "AB", states)])
    inst = Instantiation.bayesian_network_default(pc)
    ref = Instantiation([t1, t2], inst.pairs, nodes=["A", "B"], states=states)
    q = np.arange(6.0).reshape(2, 3)
    assert audit_laplace(inst, q, 1.0).loss == pytest.approx(audit_laplace(ref, q, 1.0).loss, rel=1e-13)


def test_docstring_examples():
    import doctest

    import puffgm.framework.adversaries as adv
    import puffgm.framework.audit as aud
    import puffgm.framework.instantiation as ins
    import puffgm.framework.wasserstein as was

    for mod in (adv, aud, ins, was):
        assert doctest.testmod(mod).failed == 0
