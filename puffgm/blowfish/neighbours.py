r"""Neighbouring databases under a Blowfish policy (Definition 4.1) and the graph-distance guarantee.

Databases are sequences of :math:`n` tuples :math:`x_1, \ldots, x_n` (individual :math:`i` holds :math:`x_i`),
the set of individuals and :math:`n` are public (section 2).  For :math:`D_1, D_2 \in I_Q`
(reconstructed from He, Machanavajjhala and Ding, section 4):

* :math:`T(D_1, D_2) = \{(i, x, y) : x_i(D_1) = x,\ x_i(D_2) = y,\ (x, y) \in E\}`, the
  discriminative pairs :math:`D_1` and :math:`D_2` tell apart;
* :math:`\Delta(D_1, D_2) = (D_1 \setminus D_2) \cup (D_2 \setminus D_1)`, the differing
  (individual, value) tuples.

:math:`D_1` and :math:`D_2` are **neighbours** (Definition 4.1) iff

1. :math:`D_1, D_2 \in I_Q`;
2. :math:`T(D_1, D_2)` is not empty;
3. there is no :math:`D_3 \in I_Q` with (a) :math:`\emptyset \ne T(D_1, D_3) \subsetneq T(D_1, D_2)`,
   or (b) :math:`T(D_1, D_3) = T(D_1, D_2)` and :math:`\Delta(D_1, D_3) \subsetneq \Delta(D_1, D_2)`.

(The "non-empty" in 3(a) is implicit in the paper: without it :math:`D_3 = D_1` would
rule out every pair.)  With no constraints, :math:`D_1` and :math:`D_2` are neighbours iff they
differ in one individual, whose value moves along an edge of :math:`G`.

A mechanism :math:`M` is :math:`(\epsilon, P)`-Blowfish private (Definition 4.2) iff
:math:`P[M(D_1) \in S] \le e^\epsilon P[M(D_2) \in S]` for every neighbours :math:`(D_1, D_2)` and
output set :math:`S`.  For an unconstrained policy and databases differing in one
tuple :math:`x \to y`, chaining along a shortest path gives
:math:`P[M(D_1) \in S] \le e^{\epsilon d_G(x, y)} P[M(D_2) \in S]` (section 4, after
Definition 4.2): :func:`distance_guarantee`.
"""

from __future__ import annotations

import itertools
import math
from typing import cast

import numpy as np

from puffgm.blowfish.policy import Policy, PolicyError

__all__ = [
    "MAX_DATABASES",
    "enumerate_databases",
    "neighbour_pairs",
    "are_neighbours",
    "distance_guarantee",
    "resolve_n",
]

#: Largest number of databases |I_Q| enumerated for induced neighbours.
MAX_DATABASES = 20_000


def resolve_n(policy: Policy, n=None) -> int:
    r"""The number of tuples n of the databases: ``n`` if given, else ``policy.n``, validated.

    Raises
    ------
    PolicyError
        If neither gives :math:`n`, or :math:`n` is not an integer :math:`\ge 1`.
    """
    n = policy.n if n is None else n
    if n is None:
        raise PolicyError("Enumerating databases needs the number of tuples n (give n or set it in the policy).")
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise PolicyError(f"The number of tuples n must be an integer >= 1; got {n!r}.")
    return int(n)


def enumerate_databases(policy: Policy, n: int | None = None, *, max_databases: int = MAX_DATABASES) -> np.ndarray:
    """Every database of :math:`I_Q` as an (m, n) array of value indices.

    Raises PolicyError (naming the size) when :math:`|T|^n` exceeds ``max_databases``.
    """
    n = resolve_n(policy, n)
    k = policy.domain.size
    total = k**n
    if total > max_databases:
        raise PolicyError(
            f"Enumerating databases of {n} tuples over {k} values means {total} databases, more than "
            f"max_databases={max_databases}; use a smaller domain or n."
        )
    dbs = np.array(list(itertools.product(range(k), repeat=n)), dtype=np.int64).reshape(-1, n)
    return dbs[policy.valid_mask(dbs)] if policy.constraints else dbs


def neighbour_pairs(policy: Policy, n: int | None = None, *, max_databases: int = MAX_DATABASES,
                    max_work: int = 400_000_000):
    r"""All neighbouring pairs (Definition 4.1) over :math:`I_Q`.

    Returns
    -------
    dbs : ndarray (m, n)
        The databases of :math:`I_Q` (value indices).
    pairs : ndarray (p, 2)
        Row indices (j1, j2) into ``dbs`` of every ordered neighbouring pair
        (D1, D2) (condition 3 is evaluated from D1's side).

    Notes
    -----
    Unconstrained policies use the closed form (one tuple moved along an edge);
    constrained ones check condition 3 against every :math:`D_3 \in I_Q`, refused above
    ``max_work`` = :math:`m^2 \times \text{candidates} \times n` elementary comparisons.
    """
    dbs = enumerate_databases(policy, n, max_databases=max_databases)
    m, nn = dbs.shape
    adj = policy.graph.adjacency()
    if policy.unconstrained:
        # dbs is the full product in lexicographic order: row = sum_i x_i k^(n-1-i); move one tuple along an edge
        k = policy.domain.size
        u, v = policy.graph.edge_arrays()
        src = np.concatenate([u, v])
        dst = np.concatenate([v, u])
        rows = np.arange(m)
        j1s, j2s = [], []
        for pos in range(nn):
            weight = k ** (nn - 1 - pos)
            for a, b in zip(src.tolist(), dst.tolist(), strict=True):
                sel = rows[dbs[:, pos] == a]
                j1s.append(sel)
                j2s.append(sel + (b - a) * weight)
        if not j1s:
            return dbs, np.zeros((0, 2), dtype=np.int64)
        return dbs, np.stack([np.concatenate(j1s), np.concatenate(j2s)], axis=1)
    out: list = []
    for j1 in range(m):
        x1 = dbs[j1]
        t = np.where(adj[x1[None, :], dbs], dbs, -1)  # (m, n): T(D1, D) as per-individual target values
        has_t = cast(np.ndarray, (t >= 0).any(axis=1))  # t is 2-D: any(axis=1) is an array
        cand = np.flatnonzero(has_t)
        if cand.size == 0:
            continue
        work = cand.size * m * nn
        if work * m > max_work:
            raise PolicyError(
                f"Checking induced neighbours over {m} databases needs about {work * m} comparisons, more than "
                f"max_work={max_work}; use a smaller domain or n."
            )
        t2 = t[cand][:, None, :]  # (c, 1, n)
        t3 = t[None, :, :]  # (1, m, n)
        sub = np.all((t3 == -1) | (t3 == t2), axis=2)  # T3 subset of T2
        eq_t = np.all(t3 == t2, axis=2)
        cond_a = sub & ~eq_t & has_t[None, :]
        x2 = dbs[cand][:, None, :]
        x3 = dbs[None, :, :]
        dsub = np.all((x3 == x1) | (x3 == x2), axis=2)  # Delta3 subset of Delta2
        deq = np.all(x3 == x2, axis=2)
        cond_b = eq_t & dsub & ~deq
        ok = ~(cond_a | cond_b).any(axis=1)
        out.extend((j1, int(j2)) for j2 in cand[ok])
    return dbs, np.array(out, dtype=np.int64).reshape(-1, 2)


def are_neighbours(policy: Policy, d1, d2, *, max_databases: int = MAX_DATABASES) -> bool:
    """True iff databases d1, d2 (sequences of domain values) are neighbours under the policy."""
    a, b = policy.domain.indices(d1), policy.domain.indices(d2)
    if len(a) != len(b):
        raise PolicyError("Neighbouring databases have the same number of tuples (the cardinality is public).")
    if not (policy.satisfies(d1) and policy.satisfies(d2)):
        return False
    if policy.unconstrained:
        diff = np.flatnonzero(a != b)
        return diff.size == 1 and policy.graph.has_edge_index(int(a[diff[0]]), int(b[diff[0]]))
    dbs, pairs = neighbour_pairs(policy, len(a), max_databases=max_databases)
    row = {tuple(r): j for j, r in enumerate(dbs.tolist())}
    return (row[tuple(a.tolist())], row[tuple(b.tolist())]) in {tuple(p) for p in pairs.tolist()}


def distance_guarantee(policy: Policy, x, y, *, epsilon: float) -> float:
    r"""The bound :math:`\epsilon\, d_G(x, y)` for :math:`D_1, D_2` differing in one tuple :math:`x \to y`.

    It bounds :math:`|\log P[M(D_1) \in S] / P[M(D_2) \in S]|`.
    Valid for unconstrained policies (section 4, after Definition 4.2); inf when
    :math:`x` and :math:`y` lie in different connected components (the adversary may tell them apart).

    Parameters
    ----------
    policy : Policy
        An unconstrained policy.
    x, y : domain values
        The tuple's value in D1 and in D2.
    epsilon : float
        The mechanism's :math:`(\epsilon, P)`-Blowfish parameter.
    """
    from puffgm.core.validation import check_positive_finite

    epsilon = check_positive_finite(epsilon, "epsilon", "distance_guarantee")
    if not policy.unconstrained:
        raise PolicyError("The graph-distance guarantee holds for policies without constraints.")
    d = policy.graph.distance(x, y)
    return 0.0 if d == 0 else (math.inf if math.isinf(d) else epsilon * d)
