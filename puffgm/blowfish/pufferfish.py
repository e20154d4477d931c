r"""Blowfish as Pufferfish (He, Machanavajjhala and Ding, section 4.2, Theorems 4.4 and 4.5).

**Theorem 4.4.** For a policy :math:`P = (T, G, I_n)` without constraints, let
:math:`S_{\mathrm{pairs}}^G = \{(s_x^i, s_y^i) : i \text{ an individual}, (x, y) \in E\}` with
:math:`s_x^i` = ":math:`x_i = x`", and :math:`D^*` the set of all product distributions
:math:`\prod_i f_i(x_i)` over :math:`T^n`.  A mechanism is
:math:`\epsilon`-Pufferfish(:math:`S, S_{\mathrm{pairs}}^G, D^*`) private iff it is
:math:`(\epsilon, P)`-Blowfish private.

**Theorem 4.5.** With constraints :math:`Q`, let
:math:`D^*_Q = \{\theta \text{ conditioned on } I_Q : \theta \in D^*, P_\theta(I_Q) > 0\}`.  A mechanism that is
:math:`\epsilon`-Pufferfish(:math:`S, S_{\mathrm{pairs}}^G, D^*_Q`) private is :math:`(\epsilon, P)`-Blowfish private
(the paper conjectures, but does not prove, the converse).

For the exact auditor (:mod:`puffgm.framework.audit`) :math:`\Theta` must be finite.
:func:`pufferfish_instantiation` uses, for an unconstrained policy, the
**extreme product priors**: individual :math:`i` uniform on :math:`T`, every other individual a
point mass, for every :math:`i` and every value of the others (:math:`n |T|^{n-1}` priors).
They attain the supremum over :math:`D^*`: given :math:`s_x^i` and a product prior the output
law is the mixture :math:`\sum_{x_{-i}} P(x_{-i}) P[M(x, x_{-i}) = w]` with the *same* mixing
weights for :math:`x` and :math:`y`, and a ratio of two mixtures with common weights never
exceeds the largest ratio of its components, which a point mass on :math:`x_{-i}`
attains.  So the auditor's loss over these priors *equals* the Blowfish loss
max over neighbours of the log-ratio (tested against brute force).

For a constrained policy the instantiation conditions product priors on :math:`I_Q`
(Theorem 4.5's :math:`D^*_Q`); here finitely many priors give only a lower bound on the
Pufferfish loss over :math:`D^*_Q`, and Theorem 4.5 goes one way only, so audits under it
are reported, not used as a certificate.
"""

from __future__ import annotations

import itertools

import numpy as np

from puffgm.blowfish.neighbours import resolve_n
from puffgm.blowfish.policy import Policy, PolicyError
from puffgm.framework.audit import AuditResult, audit_laplace, audit_vector_laplace
from puffgm.framework.instantiation import Instantiation, Secret

__all__ = ["pufferfish_instantiation", "audit_blowfish_laplace", "THEOREM_4_4", "THEOREM_4_5"]

THEOREM_4_4 = ("He, Machanavajjhala and Ding 2014, Theorem 4.4 "
               "(unconstrained Blowfish = Pufferfish with product priors)")
THEOREM_4_5 = ("He, Machanavajjhala and Ding 2014, Theorem 4.5 "
               "(Pufferfish with conditioned product priors implies Blowfish)")

#: Largest number of priors the bridge builds.
MAX_PRIORS = 4096


def pufferfish_instantiation(policy: Policy, n: int | None = None, *, extra_priors: int = 0,
                             random_state: int = 0) -> Instantiation:
    r"""The Pufferfish instantiation :math:`(S, S_{\mathrm{pairs}}^G, \Theta)` equivalent to a policy on n individuals.

    Parameters
    ----------
    policy : Policy
    n : int, optional
        Number of individuals (default ``policy.n``).
    extra_priors : int
        Additional random full-support product priors (Dirichlet(1) marginals, seeded by
        ``random_state``); for constrained policies these, conditioned on :math:`I_Q`, together with
        the uniform prior conditioned on :math:`I_Q`, form :math:`\Theta`.

    Returns
    -------
    Instantiation
        Nodes ``r0 .. r{n-1}`` (individuals) with states = domain indices 0..|T|-1; pairs
        (":math:`r_i = x`", ":math:`r_i = y`") for every individual and every edge :math:`(x, y)` of :math:`G`.

    Examples
    --------
    >>> from puffgm.blowfish import Domain, Policy, line_graph
    >>> inst = pufferfish_instantiation(Policy(line_graph(Domain.ordered(3))), n=2)
    >>> inst.n_databases, inst.n_priors, len(inst.pairs)
    (9, 6, 4)
    """
    if not isinstance(policy, Policy):
        raise PolicyError(f"Expected a Blowfish Policy; got {type(policy).__name__}.")
    n = resolve_n(policy, n)
    k = policy.domain.size
    if k**n > 2**16:
        raise PolicyError(f"The bridge enumerates {k}^{n} = {k ** n} databases, more than 65536; use a smaller domain "
                          "or n.")
    nodes = [f"r{i}" for i in range(n)]
    u, v = policy.graph.edge_arrays()
    if len(u) == 0:
        raise PolicyError("The secret graph has no edges: there is no discriminative pair to protect.")
    pairs = [(Secret.value(nodes[i], int(a)), Secret.value(nodes[i], int(b))) for i in range(n)
             for a, b in zip(u.tolist(), v.tolist(), strict=True)]
    rng = np.random.default_rng(random_state)
    uniform = np.full(k, 1.0 / k)

    def product(marginals):
        t = marginals[0]
        for m in marginals[1:]:
            t = np.multiply.outer(t, m)
        return np.asarray(t, dtype=float).reshape((k,) * n)

    priors, names = [], []
    if policy.unconstrained:
        if n * k ** (n - 1) > MAX_PRIORS:
            raise PolicyError(f"The extreme product priors number {n * k ** (n - 1)}, more than {MAX_PRIORS}.")
        for i in range(n):
            for others in itertools.product(range(k), repeat=n - 1):
                marg = []
                it = iter(others)
                for j in range(n):
                    if j == i:
                        marg.append(uniform)
                    else:
                        e = np.zeros(k)
                        e[next(it)] = 1.0
                        marg.append(e)
                priors.append(product(marg))
                names.append(f"r{i} uniform, others {others}")
    else:
        priors.append(product([uniform] * n))
        names.append("uniform")
    for r in range(extra_priors):
        priors.append(product([rng.dirichlet(np.ones(k)) for _ in range(n)]))
        names.append(f"random product #{r}")
    if not policy.unconstrained:
        dbs = np.array(list(itertools.product(range(k), repeat=n)), dtype=np.int64)
        mask = policy.valid_mask(dbs).reshape((k,) * n)
        conditioned = []
        for t in priors:
            t = np.where(mask, t, 0.0)
            z = t.sum()
            if z <= 0:
                raise PolicyError("A prior gives the constraint set I_Q probability zero.")
            conditioned.append(t / z)
        priors = conditioned
        names = [f"{nm} | I_Q" for nm in names]
    return Instantiation(priors, pairs, nodes=nodes, states={nd: tuple(range(k)) for nd in nodes},
                         prior_names=names)


def audit_blowfish_laplace(policy: Policy, query, scale, n: int | None = None, *, extra_priors: int = 0,
                           max_points: int = 2**18) -> AuditResult:
    r"""Exact Pufferfish loss of ``f(D) + Lap(scale)`` under the instantiation of :func:`pufferfish_instantiation`.

    ``query`` maps a database (tuple of domain values) to a number or a vector;
    ``scale`` is one Laplace scale or one per coordinate.  For an unconstrained
    policy the loss equals the :math:`(\epsilon, P)`-Blowfish loss (Theorem 4.4).
    """
    inst = pufferfish_instantiation(policy, n, extra_priors=extra_priors)
    vals = policy.domain.values
    nodes = inst.nodes

    def f(assign):
        return query(tuple(vals[assign[nd]] for nd in nodes))

    sample = np.asarray(f({nd: 0 for nd in nodes}), dtype=float)
    if sample.ndim == 0 or sample.size == 1 and np.ndim(scale) == 0:
        return audit_laplace(inst, lambda a: float(np.asarray(f(a), dtype=float).ravel()[0]), float(scale))
    return audit_vector_laplace(inst, lambda a: np.asarray(f(a), dtype=float).ravel(), scale, max_points=max_points)
