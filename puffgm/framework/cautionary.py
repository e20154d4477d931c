r"""The papers' cautionary cases, as runnable mechanisms with exact audits.

* :func:`flu_clique` -- the flu example of Song et al. section 3 (Wasserstein W = 2, group DP 4).
* :func:`bai_example_4_1`, :func:`bai_example_4_2`, :func:`bai_example_4_3` -- privacy
  collapse (Bai, He, Gu, Kifer, Maeng, "Composition for Pufferfish privacy",
  section 4, Theorems 1-3): zero (or finite) leakage in one run, infinite in two.
* :func:`expected_runs_to_reveal` -- the exact expected number of independent
  runs until the database (or the secret) is determined by the outputs, by
  dynamic programming over the set of distinct outputs seen; and
  :func:`simulate_runs_to_reveal`, the seeded Monte Carlo counterpart.
* :func:`exam_order` -- Kifer-Machanavajjhala Examples 9.1/9.2: under the exam-order
  constraint the Laplace mechanism (:math:`\epsilon`-DP) is not :math:`\epsilon`-Pufferfish.
* :func:`dp_as_pufferfish` -- Kifer-Machanavajjhala Theorems 6.1/6.2: Laplace at
  :math:`\text{sensitivity}/\epsilon` passes the audit for independent records (presence/absence
  secrets) and fails it for a correlated prior.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from puffgm.core.validation import check_positive_finite, check_positive_int
from puffgm.exceptions import AuditError, ParameterError
from puffgm.framework.audit import FiniteMechanism
from puffgm.framework.instantiation import Instantiation, Secret

__all__ = [
    "flu_clique",
    "CollapseCase",
    "bai_example_4_1",
    "bai_example_4_2",
    "bai_example_4_3",
    "theorem_3_epsilon",
    "expected_runs_to_reveal",
    "simulate_runs_to_reveal",
    "exam_order",
    "exam_order_laplace_loss",
    "dp_as_pufferfish",
    "present_sum",
]


# --------------------------------------------------------------------------- flu (Song et al. section 3)

FLU_COUNTS = (0.1, 0.15, 0.5, 0.15, 0.1)


def flu_clique(count_law: Sequence[float] = FLU_COUNTS):
    r"""The flu example of Song et al. section 3: a clique of 4 people, exchangeable prior.

    :math:`P(X = x) = P(N = |x|) / \binom{4}{|x|}` with :math:`P(N = j)` = ``count_law[j]``; pairs
    :math:`(X_i = 0, X_i = 1)` for every person; the query is :math:`N`, the number infected.

    Returns
    -------
    (Instantiation, ndarray)
        The instantiation (one group: the clique) and the table of N.
    """
    law = np.asarray(count_law, dtype=float)
    n = law.size - 1
    if n < 1 or abs(law.sum() - 1) > 1e-9 or np.any(law < 0):
        raise ParameterError("The law of N must be a probability vector of length >= 2.")
    shape = (2,) * n
    joint = np.zeros(shape)
    count = np.zeros(shape)
    for x in itertools.product((0, 1), repeat=n):
        joint[x] = law[sum(x)] / math.comb(n, sum(x))
        count[x] = sum(x)
    nodes = [f"X{i + 1}" for i in range(n)]
    inst = Instantiation.bayesian_network_default(
        [joint], nodes=nodes, states=[2] * n, edges=list(itertools.combinations(nodes, 2)),
        prior_names=["flu clique"])
    return inst, count


# --------------------------------------------------------------------------- expected runs


def _support_sets(inst: Instantiation, logm: np.ndarray, theta: int):
    lp = inst.log_priors[theta].ravel()
    pos = np.flatnonzero(lp > -np.inf)
    outs = [frozenset(np.flatnonzero(logm[x] > -np.inf).tolist()) for x in range(inst.n_databases)]
    return lp, pos, outs


def expected_runs_to_reveal(inst: Instantiation, mechanism, *, target: str = "database", theta: int = 0,
                            pair: int = 0, max_states: int = 200000) -> dict:
    r"""Exact expected number of independent runs until the outputs reveal the database or the secret.

    After runs with distinct outputs :math:`O`, the adversary knows the database lies in
    :math:`\mathrm{supp}(O) = \{x : P(x \mid \theta) > 0,\ P(M(x) = o) > 0 \text{ for every } o \in O\}`.  The
    database is revealed when :math:`\mathrm{supp}(O)` is a single database; the secret of pair
    ``pair`` is revealed when :math:`\mathrm{supp}(O)` lies inside one of its two secrets.  Given
    the true database :math:`x` the set :math:`O` evolves as a Markov chain, and
    :math:`E[T \mid O] = \left(1 + \sum_{o \notin O} p_o E[T \mid O + o]\right) / \left(1 - \sum_{o \in O} p_o\right)`
    for unrevealing :math:`O`; :math:`E[T] = \sum_x P(x \mid \theta)\, E[T \mid x, O = \emptyset]`.

    Returns
    -------
    dict
        ``expected`` (``inf`` if some database is never revealed), ``per_database``
        (list of (assignment, P(x), E[T | x]) for databases of positive probability).
    """
    if target not in ("database", "secret"):
        raise ParameterError("target must be 'database' or 'secret'.")
    mech = mechanism if isinstance(mechanism, FiniteMechanism) else FiniteMechanism.from_table(mechanism)
    logm = mech.log_table(inst)
    lp, pos, outs = _support_sets(inst, logm, theta)
    if target == "secret":
        a, b = inst.pairs[pair]
        ma, mb = inst.mask(a.name).ravel(), inst.mask(b.name).ravel()
    out_to_dbs: dict = {}
    for x in pos:
        for o in outs[x]:
            out_to_dbs.setdefault(o, set()).add(int(x))
    all_pos = frozenset(int(x) for x in pos)

    def revealed(support):
        if target == "database":
            return len(support) == 1
        idx = list(support)
        return bool(np.all(ma[idx])) or bool(np.all(mb[idx]))

    total, per_db = 0.0, []
    assigns = list(inst.iter_assignments())
    n_states = 0
    for x in pos:
        x = int(x)
        probs = {o: math.exp(logm[x, o]) for o in outs[x]}
        memo: dict = {}

        def expect(seen: frozenset, support: frozenset, memo=memo, probs=probs) -> float:  # this x's, bound now
            nonlocal n_states
            if revealed(support):
                return 0.0
            if seen in memo:
                return memo[seen]
            n_states += 1
            if n_states > max_states:
                raise AuditError("The expected-runs recursion visits too many output sets.")
            stay = sum(probs[o] for o in seen)
            if stay >= 1 - 1e-15:
                memo[seen] = math.inf
                return math.inf
            acc = 1.0
            for o, p in probs.items():
                if o not in seen:
                    acc += p * expect(seen | {o}, support & out_to_dbs[o])
            memo[seen] = acc / (1 - stay)
            return memo[seen]

        e = expect(frozenset(), all_pos)
        px = math.exp(lp[x])
        per_db.append((assigns[x], px, e))
        total += px * e if e < math.inf else math.inf
    return {"expected": total, "per_database": per_db, "target": target}


def simulate_runs_to_reveal(inst: Instantiation, mechanism, *, target: str = "database", theta: int = 0,
                            pair: int = 0, n_sim: int = 2000, max_runs: int = 10000, random_state=0) -> dict:
    r"""Seeded Monte Carlo estimate of the expected number of runs until revelation.

    Draws the database from :math:`\theta`, runs the mechanism until the support of the
    outputs (see :func:`expected_runs_to_reveal`) reveals the target.  Seeded numpy
    randomness (reproducible research, not a release).

    Returns
    -------
    dict
        ``mean``, ``stderr``, ``n_sim``.
    """
    rng = np.random.default_rng(random_state)
    mech = mechanism if isinstance(mechanism, FiniteMechanism) else FiniteMechanism.from_table(mechanism)
    logm = mech.log_table(inst)
    lp, pos, outs = _support_sets(inst, logm, theta)
    probs_db = np.exp(lp[pos] - logsumexp(lp[pos]))
    consistent = np.exp(logm[pos]) > 0  # (n_pos, n_out)
    if target == "secret":
        a, b = inst.pairs[pair]
        ma, mb = inst.mask(a.name).ravel()[pos], inst.mask(b.name).ravel()[pos]
    runs = np.empty(n_sim)
    for r in range(n_sim):
        xi = rng.choice(pos.size, p=probs_db)
        p = np.exp(logm[pos[xi]])
        support = np.ones(pos.size, dtype=bool)
        for k in range(1, max_runs + 1):  # noqa: B007 -- k is read after the loop (the revealing run)
            o = rng.choice(p.size, p=p / p.sum())
            support &= consistent[:, o]
            if target == "database":
                done = support.sum() == 1
            else:
                done = not np.any(support & ~ma) or not np.any(support & ~mb)
            if done:
                break
        runs[r] = k
    return {"mean": float(runs.mean()), "stderr": float(runs.std(ddof=1) / math.sqrt(n_sim)), "n_sim": n_sim}


# --------------------------------------------------------------------------- Bai et al. section 4


@dataclass(frozen=True)
class CollapseCase:
    """A privacy-collapse example: instantiation, mechanism, and the theorem's numbers."""

    name: str
    inst: Instantiation
    mechanism: FiniteMechanism
    expected_runs_theorem: float
    theorem: str
    target: str = "database"
    details: dict = field(default_factory=dict)


def bai_example_4_1(joint=None, nodes=("A", "B"), states=None, secret: Secret | None = None) -> CollapseCase:
    r"""Example 4.1: :math:`M^*(D) = (D, D')` if :math:`s_1(D)`, else :math:`(D', D)`.

    In the first case :math:`D' \sim P(\cdot \mid s_2)`, in the second :math:`D' \sim P(\cdot \mid s_1)`.

    Default: two binary records with joint ``[[0.1, 0.2], [0.3, 0.4]]`` and :math:`s_1` = "A = 1"
    (so :math:`U_1` and :math:`U_2` each hold two datasets).  One run leaks nothing (Theorem 1);
    two differing runs reveal the dataset.  Theorem 1's bound on the expected number
    of runs is :math:`1 + 1 / (1 - \max_D \max_s P(D \mid s))`; the exact value is

    $$
    1 + \sum_s P(s) \sum_{D' \in U_{\mathrm{other}}} \frac{P(D' \mid \mathrm{other})}{1 - P(D' \mid \mathrm{other})}.
    $$
    """
    joint = np.array([[0.1, 0.2], [0.3, 0.4]]) if joint is None else np.asarray(joint, dtype=float)
    states = [2] * joint.ndim if states is None else states
    s1 = secret or Secret.value(nodes[0], 1, name="s1")
    s2 = Secret.predicate(lambda a, _s=s1, _n=nodes: not _evaluate(_s, a), name="s2")
    inst = Instantiation([joint], [(s1, s2)], nodes=list(nodes), states=states, prior_names=["theta*"])
    lp = inst.log_priors[0].ravel()
    m1, m2 = inst.mask("s1").ravel(), inst.mask("s2").ravel()
    u1 = np.flatnonzero(m1 & (lp > -np.inf))
    u2 = np.flatnonzero(m2 & (lp > -np.inf))
    if u1.size < 2 or u2.size < 2:
        raise ParameterError("Example 4.1 needs at least two datasets of positive probability on each side.")
    c1 = np.exp(lp[u1] - logsumexp(lp[u1]))  # P(D | s1)
    c2 = np.exp(lp[u2] - logsumexp(lp[u2]))  # P(D | s2)
    outputs = [(int(a), int(b)) for a in u1 for b in u2]
    index = {o: k for k, o in enumerate(outputs)}
    table = np.zeros((inst.n_databases, len(outputs)))
    for x in range(inst.n_databases):
        if m1[x]:
            d1 = x if x in u1 else int(u1[0])  # zero-probability inputs: any valid output law
            for b, p in zip(u2, c2, strict=True):
                table[x, index[(d1, int(b))]] = p
        else:
            d2 = x if x in u2 else int(u2[0])
            for a, p in zip(u1, c1, strict=True):
                table[x, index[(int(a), d2)]] = p
    assigns = list(inst.iter_assignments())
    labels = [(tuple(assigns[a].values()), tuple(assigns[b].values())) for a, b in outputs]
    mech = FiniteMechanism.from_table(table, outputs=labels, name="Bai et al. Example 4.1 M*")
    bound = 1 + 1 / (1 - max(c1.max(), c2.max()))
    p1 = float(np.exp(logsumexp(lp[u1])))
    exact = 1 + p1 * float(np.sum(c2 / (1 - c2))) + (1 - p1) * float(np.sum(c1 / (1 - c1)))
    return CollapseCase("Bai et al. Example 4.1", inst, mech, bound, "Bai et al. Theorem 1 (bound)",
                        details={"exact_expected_runs": exact, "bound": bound})


def _evaluate(secret: Secret, assignment) -> bool:
    if secret.kind == "predicate":
        assert secret.func is not None  # a predicate secret carries its function
        return bool(secret.func(assignment))
    v = assignment[secret.node]
    if secret.kind in ("value", "in_set"):
        return v in secret.values
    lo, hi = secret.values
    return lo <= float(v) < hi


def bai_example_4_2(n: int) -> CollapseCase:
    r"""Example 4.2: :math:`n \ge 3` fair coin bits and two kinds of output.

    With prob. 1/2 output :math:`(x_2 \oplus x_1, \dots, x_n \oplus x_1)` (xor), otherwise the parity of all
    bits (:math:`n` odd) or of bits :math:`2, \dots, n` (:math:`n` even).

    One run leaks nothing about any bit (Theorem 2); the two output types together
    reveal the database; the expected number of runs is 3.
    """
    n = check_positive_int(n, "n", "bai_example_4_2")
    if n < 3:
        raise ParameterError(f"The 'n' parameter of bai_example_4_2 must be an integer >= 3. Got {n} instead.")
    nodes = [f"x{i + 1}" for i in range(n)]
    joint = np.full((2,) * n, 2.0 ** -n)
    inst = Instantiation.bayesian_network_default([joint], nodes=nodes, states=[2] * n, prior_names=["fair coins"])
    tuples = list(itertools.product((0, 1), repeat=n - 1))
    labels = [("A",) + t for t in tuples] + [("B", 0), ("B", 1)]
    tindex = {t: k for k, t in enumerate(tuples)}
    table = np.zeros((inst.n_databases, len(labels)))
    for k, x in enumerate(itertools.product((0, 1), repeat=n)):
        a = tuple(x[i] ^ x[0] for i in range(1, n))
        parity = (sum(x) if n % 2 == 1 else sum(x[1:])) % 2
        table[k, tindex[a]] += 0.5
        table[k, len(tuples) + parity] += 0.5
    mech = FiniteMechanism.from_table(table, outputs=labels, name=f"Bai et al. Example 4.2 M* (n={n})")
    return CollapseCase(f"Bai et al. Example 4.2 (n={n})", inst, mech, 3.0, "Bai et al. Theorem 2")


def theorem_3_epsilon(LT: float, UT: float, LF: float, UF: float) -> float:
    r"""The :math:`\epsilon` of Bai et al. Theorem 3 (max of :math:`|\log|` of the eight endpoint ratios)."""
    for name, v in (("LT", LT), ("UT", UT), ("LF", LF), ("UF", UF)):
        if not (0 < v < 1):
            raise ParameterError(f"The '{name}' parameter of theorem_3_epsilon must be in (0, 1). Got {v!r} instead.")
    if LT > UT or LF > UF:
        raise ParameterError("Need LT <= UT and LF <= UF.")
    ratios = [UT / LF, LT / UF, (1 - UT) / UF, (1 - LT) / LF, LT / (1 - LF), UT / (1 - UF),
              (1 - UT) / (1 - LF), (1 - LT) / (1 - UF)]
    return max(abs(math.log(r)) for r in ratios)


def bai_example_4_3(
    LT: float = 0.3, UT: float = 0.6, LF: float = 0.2, UF: float = 0.5, p_s1: float = 0.5
) -> CollapseCase:
    r"""Example 4.3: one secret pair :math:`(s_1, \neg s_1)` and a box of priors :math:`\Theta`.

    :math:`\Theta` has :math:`P(U_T \mid s_1) \in [\mathrm{LT}, \mathrm{UT}]` and
    :math:`P(U_F \mid \neg s_1) \in [\mathrm{LF}, \mathrm{UF}]`.  The database is two binary records
    :math:`(S, U)`: :math:`s_1 = \{S = 1\}`, :math:`U_T = \{S=1, U=1\}`, :math:`U_F = \{S=0, U=1\}`.
    :math:`\Theta` holds the four corner priors :math:`P(U=1 \mid S=1) \in \{\mathrm{LT}, \mathrm{UT}\}`,
    :math:`P(U=1 \mid S=0) \in \{\mathrm{LF}, \mathrm{UF}\}` (with :math:`P(S=1)` = ``p_s1``): every log-ratio
    is monotone in these two conditionals, so the corners attain the sup over the whole box and
    the exact audit equals Theorem 3's :math:`\epsilon`.  Two runs reveal the secret; the
    expected number of runs is 3.
    """
    eps = theorem_3_epsilon(LT, UT, LF, UF)
    priors, names = [], []
    for t in (LT, UT):
        for f in (LF, UF):
            priors.append(np.array([[(1 - p_s1) * (1 - f), (1 - p_s1) * f], [p_s1 * (1 - t), p_s1 * t]]))
            names.append(f"P(U_T|s1)={t:g}, P(U_F|~s1)={f:g}")
    pair = (Secret.value("S", 1, name="s1"), Secret.value("S", 0, name="not s1"))
    inst = Instantiation(priors, [pair], nodes=["S", "U"], states=[2, 2], prior_names=names)
    labels = [("1a", "2a"), ("1a", "2b"), ("1b", "2a"), ("1b", "2b")]
    table = np.zeros((2, 2, 4))
    table[1, 1] = [0.5, 0.5, 0, 0]  # case 1a: s1, D in U_T
    table[1, 0] = [0, 0, 0.5, 0.5]  # case 1b
    table[0, 1] = [0.5, 0, 0.5, 0]  # case 2a: not s1, D in U_F
    table[0, 0] = [0, 0.5, 0, 0.5]  # case 2b
    mech = FiniteMechanism.from_table(table, outputs=labels, name="Bai et al. Example 4.3 M*")
    return CollapseCase("Bai et al. Example 4.3", inst, mech, 3.0, "Bai et al. Theorem 3", target="secret",
                        details={"theorem_3_epsilon": eps, "LT": LT, "UT": UT, "LF": LF, "UF": UF})


# --------------------------------------------------------------------------- Kifer-Machanavajjhala 9.1/9.2


def exam_order(n: int, f1=None) -> Instantiation:
    r"""Example 9.1: :math:`n` students take an exam in ID order; Data is :math:`D_0, \dots, D_n`.

    :math:`D_k`: the first :math:`k` took it.

    The prior is Equation 17 with :math:`\pi_i = 1`: independent records with
    :math:`P(r_i = 1)` = ``f1[i]`` (default 0.5, making :math:`D_0, \dots, D_n` equally likely)
    conditioned on the constraint :math:`Q`.  Pairs: :math:`(r_i = 0, r_i = 1)` for each student
    (Equation 16 with every record present).  A list of ``f1`` vectors gives a :math:`\Theta`
    with several priors.
    """
    n = check_positive_int(n, "n", "exam_order")
    if n > 16:
        raise AuditError(f"The exam-order database with n={n} has 2^{n} states; at most 2^16 are enumerated.")
    f1s = [np.full(n, 0.5)] if f1 is None else [np.asarray(v, dtype=float) for v in (f1 if np.ndim(f1) == 2 else [f1])]
    priors = []
    for f in f1s:
        if f.shape != (n,) or np.any(f <= 0) or np.any(f >= 1):
            raise ParameterError("Each f1 vector must have n entries in (0, 1).")
        joint = np.zeros((2,) * n)
        for k in range(n + 1):
            x = (1,) * k + (0,) * (n - k)
            joint[x] = np.prod(np.where(np.array(x) == 1, f, 1 - f))
        priors.append(joint / joint.sum())
    nodes = [f"r{i + 1}" for i in range(n)]
    return Instantiation.bayesian_network_default(priors, nodes=nodes, states=[2] * n)


def exam_order_laplace_loss(n: int, *, epsilon: float) -> float:
    r"""Closed form of the exact loss of :math:`\mathrm{Lap}(1/\epsilon)` on the count, uniform exam-order prior.

    For pair :math:`i`, :math:`r_i = 1` means the count is uniform on :math:`\{i, \dots, n\}`, :math:`r_i = 0` on
    :math:`\{0, \dots, i-1\}`; beyond the extreme counts the ratio of the Laplace mixtures is constant, so the
    loss is

    $$
    \max_i \max\left(\log \operatorname{mean}_{j \ge i} e^{\epsilon j}
      - \log \operatorname{mean}_{j < i} e^{\epsilon j},
      \log \operatorname{mean}_{j < i} e^{-\epsilon j} - \log \operatorname{mean}_{j \ge i} e^{-\epsilon j}\right).
    $$

    For :math:`i = 1` the first term is :math:`\log\left(\frac{1}{n} \sum_{j=1}^n e^{\epsilon j}\right)` (Example 9.2).
    """
    epsilon = check_positive_finite(epsilon, "epsilon", "exam_order_laplace_loss")
    j = np.arange(n + 1, dtype=float)
    best = 0.0
    for i in range(1, n + 1):
        hi, lo = j[i:], j[:i]
        up = (logsumexp(epsilon * hi) - math.log(hi.size)) - (logsumexp(epsilon * lo) - math.log(lo.size))
        down = (logsumexp(-epsilon * lo) - math.log(lo.size)) - (logsumexp(-epsilon * hi) - math.log(hi.size))
        best = max(best, abs(up), abs(down))
    return float(best)


# --------------------------------------------------------------------------- Theorems 6.1 / 6.2


ABSENT = "absent"


def dp_as_pufferfish(n: int = 3, *, correlated: bool = False, n_priors: int = 3, stickiness: float = 0.9,
                     random_state: int = 0) -> Instantiation:
    r"""The instantiation of Kifer-Machanavajjhala Theorem 6.1 on :math:`n` records with tuple domain :math:`\{0, 1\}`.

    Each record has states ``("absent", 0, 1)``; secrets :math:`\sigma_{(i,t)}` = "record :math:`i` is
    present with value :math:`t`" and :math:`\neg\sigma_i` = "record :math:`i` is absent"; pairs
    :math:`(\sigma_{(i,t)}, \neg\sigma_i)` (Equations 5-6).

    * ``correlated=False``: :math:`\Theta` holds ``n_priors`` random priors of the form of
      Equation 7 (independent records, :math:`P(\text{present}) = \pi_i`, value law :math:`f_i`).
    * ``correlated=True``: :math:`\Theta` holds one Markov chain over the records whose
      state (absent/0/1) is kept from one record to the next with probability
      ``stickiness`` (Theorem 6.2: a prior outside :math:`D^*`).
    """
    n = check_positive_int(n, "n", "dp_as_pufferfish")
    rng = np.random.default_rng(random_state)
    nodes = [f"h{i + 1}" for i in range(n)]
    states = {v: (ABSENT, 0, 1) for v in nodes}
    priors = []
    if not correlated:
        for _ in range(n_priors):
            joint: np.ndarray = np.ones(())
            for _i in range(n):
                pi = rng.uniform(0.1, 0.9)
                f1 = rng.uniform(0.1, 0.9)
                joint = np.multiply.outer(joint, np.array([1 - pi, pi * (1 - f1), pi * f1]))
            priors.append(joint)
    else:
        s = float(stickiness)
        if not (0 < s < 1):
            raise ParameterError("The 'stickiness' parameter must be in (0, 1).")
        trans = np.full((3, 3), (1 - s) / 2) + np.eye(3) * (s - (1 - s) / 2)
        joint = np.full(3, 1 / 3)
        for _i in range(1, n):
            joint = _chain_step(joint, trans)
        priors.append(joint)
    pairs = []
    for v in nodes:
        for t in (0, 1):
            pairs.append((Secret.value(v, t, name=f"{v} present={t}"), Secret.value(v, ABSENT, name=f"{v} absent")))
    return Instantiation(priors, pairs, nodes=nodes, states=states)


def _chain_step(joint, trans):
    last = joint.ndim - 1
    shape = [1] * (joint.ndim + 1)
    shape[last], shape[last + 1] = 3, 3
    return joint[..., None] * trans.reshape(shape)


def present_sum(assignment) -> float:
    """The query of :func:`dp_as_pufferfish`: sum of the values of the present records."""
    return float(sum(v for v in assignment.values() if v != ABSENT))
