r"""Necessary conditions for Pufferfish mechanisms to compose (Bai et al. section 5).

Bai, He, Gu, Kifer and Maeng ("Composition for Pufferfish privacy", Theorem 4):
if finite-range mechanisms :math:`M_1, \dots, M_m` are each :math:`\epsilon`-Pufferfish for
:math:`(S, \Theta)` and compose *linearly* (any :math:`r` runs, with repetition, are
:math:`r \epsilon`-Pufferfish), then for every ordered secret pair :math:`(s_1, s_2)` and every
dataset :math:`D^*` where :math:`s_1` holds there is a convex combination :math:`\beta` of datasets :math:`D_l`
where :math:`s_2` holds with, for every mechanism and every output :math:`w`,

$$
\log P(M(D^*) = w) \le \epsilon + \sum_l \beta_l \log P(M(D_l) = w). \qquad \text{(NfC, Eq. 1)}
$$

Differential-privacy constraints are the special case of a :math:`\beta` with one
non-zero entry; Theorem 5 shows that a non-redundant set of NfC constraints is
invariant under post-processing iff every constraint is of that DP style.

What is computed
----------------
For each prior :math:`\theta`, ordered pair :math:`(s_1, s_2)` audited under :math:`\theta` and dataset :math:`D^*`
with :math:`P(D^* \mid s_1, \theta) > 0`, the smallest :math:`\epsilon` for which Eq. 1 holds is the
value of the linear program (the dual in the proof of Theorem 4)

$$
v(D^*) = \min_{\beta \in \mathrm{simplex}(A)} \max_{w \,:\, P(w \mid D^*) > 0} \left[ \log P(w \mid D^*) - \sum_l
  \beta_l \log P(w \mid D_l) \right],
$$

where :math:`A` is the set of datasets :math:`D_l` with :math:`P(D_l \mid s_2, \theta) > 0` whose output
support contains that of :math:`D^*` (a :math:`D_l` that gives probability 0 to an output :math:`D^*`
can produce has :math:`\log P = -\infty` and cannot carry weight); :math:`v = +\infty` if :math:`A` is empty.
The conditions hold at :math:`\epsilon` iff ``nfc_value`` :math:`= \max v \le \epsilon`.  Its
DP-style restriction (:math:`\beta` a vertex of the simplex, Theorem 5) is

$$
v_{DP}(D^*) = \min_{l \in A} \max_w \log \frac{P(w \mid D^*)}{P(w \mid D_l)} \ge v(D^*).
$$

The optimal dual variables :math:`\alpha` (a distribution over outputs) are the attack
of the proof: output sequences whose empirical frequencies are :math:`\alpha` (mixed
with a vanishing share of every output of :math:`M(D^*)`) make the :math:`r`-fold Pufferfish
loss grow like :math:`r\, v(D^*)`, so linear composition fails as soon as :math:`v > \epsilon`.
:func:`repeated_release_loss` computes that :math:`r`-fold loss exactly.

Support refinement (documented in docs/framework/composition_conditions.md):
the theorem as printed quantifies over every dataset where :math:`s_1` is true and lets
:math:`\beta` range over every dataset where :math:`s_2` is true.  Its proof takes limits of
sums weighted by :math:`P(D \mid s, \theta)`, so only datasets with positive probability
under the prior enter; datasets that no prior produces impose no necessary
condition.  The check is therefore run per prior on its support, which is what
the proof establishes (and coincides with the printed statement for priors of
full support).

References
----------
Bai, He, Gu, Kifer, Maeng. Composition for Pufferfish Privacy. Section 5,
Theorems 4 and 5; proof in appendix C.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import linprog
from scipy.special import logsumexp

from puffgm.core.results import json_float
from puffgm.core.validation import check_nonnegative_finite, check_positive_int
from puffgm.exceptions import AuditError, ParameterError
from puffgm.framework.audit import as_finite, audit_finite
from puffgm.framework.instantiation import Instantiation

__all__ = [
    "NfcCheck",
    "CompositionConditions",
    "check_composition_conditions",
    "nfc_value",
    "repeated_release_loss",
    "THEOREM4",
]

THEOREM4 = "Bai-He-Gu-Kifer-Maeng Theorem 4 (necessary condition for composition), Theorem 5 (DP-style constraints)"

#: Tolerance of the decision ``nfc_value <= epsilon`` (the LP is solved by HiGHS to ~1e-9).
DEFAULT_TOL = 1e-7


@dataclass(frozen=True)
class NfcCheck:
    r"""One NfC linear program: prior, ordered secret pair and dataset D*.

    Attributes
    ----------
    prior : str
        Name of the prior :math:`\theta`.
    pair : tuple of str
        The ordered pair :math:`(s_1, s_2)`: :math:`D^*` satisfies :math:`s_1`, the combination is over :math:`s_2`.
    dataset : dict
        :math:`D^*` as ``{node: state}``.
    value : float
        :math:`v(D^*)`: the smallest :math:`\epsilon` for which Eq. 1 holds at :math:`D^*` (``inf`` if no
        :math:`s_2`-dataset can produce every output of :math:`D^*`).
    beta : tuple of (dict, float)
        The optimal convex combination (datasets :math:`D_l` with their weights :math:`> 10^{-9}`).
    alpha : tuple of (label, float)
        The optimal dual: output frequencies of the attack (weights :math:`> 10^{-9}`).
    dp_value : float
        :math:`v_{DP}(D^*)`: the best single partner (DP-style constraint, Theorem 5).
    dp_partner : dict or None
        That partner dataset.
    n_candidates : int
        :math:`|A|`: :math:`s_2`-datasets whose output support contains that of :math:`D^*`.
    blocking_output : label or None
        When ``value`` is infinite: an output of :math:`D^*` that rules out a partner
        (one per :math:`s_2`-dataset is needed; the first one found is reported).
    """

    prior: str
    pair: tuple
    dataset: Mapping
    value: float
    beta: tuple
    alpha: tuple
    dp_value: float
    dp_partner: Any
    n_candidates: int
    blocking_output: Any = None

    def to_dict(self) -> dict:
        return {
            "prior": self.prior,
            "pair": list(self.pair),
            "dataset": {str(k): _plain(v) for k, v in self.dataset.items()},
            "value": json_float(self.value),
            "beta": [{"dataset": {str(k): _plain(v) for k, v in d.items()}, "weight": w} for d, w in self.beta],
            "alpha": [{"output": _plain(o), "weight": w} for o, w in self.alpha],
            "dp_value": json_float(self.dp_value),
            "dp_partner": None if self.dp_partner is None else {str(k): _plain(v) for k, v in self.dp_partner.items()},
            "n_candidates": self.n_candidates,
            "blocking_output": _plain(self.blocking_output),
        }

    def explain(self) -> str:
        s1, s2 = self.pair
        head = f"prior {self.prior}, pair ({s1} -> {s2}), D* = {_fmt(self.dataset)}: "
        if not math.isfinite(self.value):
            return (head + f"v = inf: no dataset where {s2} holds can produce every output of D* "
                    f"(e.g. output {self.blocking_output!r} rules out some of them), so no convex "
                    "combination satisfies Eq. 1 for any finite epsilon")
        parts = ", ".join(f"{w:.3g} x {_fmt(d)}" for d, w in self.beta[:4])
        more = "" if len(self.beta) <= 4 else f", ... ({len(self.beta)} datasets)"
        att = ", ".join(f"{o!r}: {w:.3g}" for o, w in self.alpha[:4])
        return (head + f"v = {self.value:.6g} with beta = [{parts}{more}]; "
                f"best DP-style partner gives {self.dp_value:.6g}; attack output frequencies {{{att}}}")


@dataclass(frozen=True)
class CompositionConditions:
    r"""Result of :func:`check_composition_conditions`.

    Attributes
    ----------
    epsilon : float
        The Pufferfish parameter the conditions are checked at.
    epsilon_source : str
        ``"given"`` or ``"exact single-run audit"`` (the largest single-run loss of the mechanisms).
    nfc_value : float
        :math:`\max v(D^*)` over (prior, ordered pair, :math:`D^*`): the smallest :math:`\epsilon` at which
        Theorem 4's necessary conditions hold (``inf`` if none does).
    dp_value : float
        The same with DP-style constraints only (Theorem 5); ``>= nfc_value``.
    holds : bool
        ``nfc_value <= epsilon + tol``.  False means the mechanisms cannot compose
        linearly at :math:`\epsilon` (Theorem 4); True is necessary, not sufficient.
    dp_holds : bool
        ``dp_value <= epsilon + tol``: a post-processing-invariant set of DP-style
        constraints holds.
    worst : NfcCheck or None
        The check attaining ``nfc_value`` (the violating pair when ``holds`` is False).
    violations : tuple of NfcCheck
        Up to ``max_reported`` checks with :math:`v > \epsilon + \mathrm{tol}`, worst first.
    n_checks, n_violations : int
    mechanism : str
    tol : float
    notes : tuple of str
    theorem : str
    """

    epsilon: float
    epsilon_source: str
    nfc_value: float
    dp_value: float
    holds: bool
    dp_holds: bool
    worst: NfcCheck | None
    violations: tuple
    n_checks: int
    n_violations: int
    mechanism: str
    tol: float = DEFAULT_TOL
    notes: tuple = ()
    theorem: str = THEOREM4

    def satisfies(self, *, epsilon: float) -> bool:
        r"""Whether the necessary conditions hold at another :math:`\epsilon`."""
        return self.nfc_value <= float(epsilon) + self.tol

    def to_dict(self) -> dict:
        return {
            "epsilon": json_float(self.epsilon),
            "epsilon_source": self.epsilon_source,
            "nfc_value": json_float(self.nfc_value),
            "dp_value": json_float(self.dp_value),
            "holds": self.holds,
            "dp_holds": self.dp_holds,
            "worst": None if self.worst is None else self.worst.to_dict(),
            "violations": [v.to_dict() for v in self.violations],
            "n_checks": self.n_checks,
            "n_violations": self.n_violations,
            "mechanism": self.mechanism,
            "tol": self.tol,
            "notes": list(self.notes),
            "theorem": self.theorem,
        }

    def explain(self) -> str:
        verdict = "HOLD" if self.holds else "FAIL"
        lines = [
            f"{self.mechanism}: necessary conditions for linear composition {verdict} at epsilon "
            f"{self.epsilon:.6g} ({self.epsilon_source})",
            f"NfC value {_num(self.nfc_value)} (smallest epsilon at which Eq. 1 holds); "
            f"DP-style value {_num(self.dp_value)} ({'holds' if self.dp_holds else 'fails'})",
            f"{self.n_checks} linear programs, {self.n_violations} violated",
        ]
        if not self.holds and self.worst is not None:
            lines.append("violating pair: " + self.worst.explain())
            if math.isfinite(self.nfc_value):
                lines.append("consequence: repeated runs whose outputs follow the attack frequencies make the "
                             f"Pufferfish loss grow like r x {_num(self.nfc_value)} > r x {self.epsilon:.6g} "
                             "(Theorem 4's proof): the mechanisms do not compose linearly")
            else:
                lines.append("consequence: finitely many runs can produce outputs that no dataset of the other "
                             "secret explains, an infinite loss (privacy collapse, Bai et al. section 4)")
        elif self.worst is not None:
            lines.append("tightest check: " + self.worst.explain())
        lines.append(f"relies on: {self.theorem}")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def _num(x: float) -> str:
    return "inf" if not math.isfinite(x) else f"{x:.6g}"


def _plain(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, tuple):
        return [_plain(u) for u in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


def _fmt(d: Mapping) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in d.items()) + "}"


def _stack(inst: Instantiation, mechanisms):
    """log P(w | D) over the union of the mechanisms' ranges (disjoint by construction)."""
    if isinstance(mechanisms, (list, tuple)):
        mechs = [as_finite(m) for m in mechanisms]
    else:
        mechs = [as_finite(mechanisms)]
    if not mechs:
        raise ParameterError("check_composition_conditions needs at least one mechanism.")
    tables: list[np.ndarray] = []
    labels: list[Any] = []  # a mechanism's output labels, or (mechanism index, label) pairs
    for j, m in enumerate(mechs):
        t = m.log_table(inst)
        tables.append(t)
        labels.extend((m.label(k) if len(mechs) == 1 else (j, m.label(k))) for k in range(t.shape[1]))
    return mechs, np.concatenate(tables, axis=1), labels


def _solve(logm: np.ndarray, star: int, cands: np.ndarray):
    """v(D*) and (beta, alpha) for candidates ``cands`` (all of whose supports contain D*'s)."""
    sup = np.flatnonzero(logm[star] > -np.inf)
    p_star = logm[star, sup]
    L = logm[np.ix_(cands, sup)]  # finite by construction
    # DP-style: best single partner
    dp_each = np.max(p_star[None, :] - L, axis=1)
    j_dp = int(np.argmin(dp_each))
    dp_val = float(dp_each[j_dp])
    if cands.size == 1:
        k = int(np.argmax(p_star - L[0]))
        alpha = np.zeros(sup.size)
        alpha[k] = 1.0
        return max(dp_val, 0.0), np.array([1.0]), alpha, max(dp_val, 0.0), j_dp
    # variables x = (t, beta_1..beta_m); minimise t
    m = cands.size
    c = np.zeros(m + 1)
    c[0] = 1.0
    # p*_w - sum_l beta_l L_lw <= t   <=>   -t - sum_l beta_l L_lw <= -p*_w
    A_ub = np.hstack([-np.ones((sup.size, 1)), -L.T])
    b_ub = -p_star
    A_eq = np.zeros((1, m + 1))
    A_eq[0, 1:] = 1.0
    bounds = [(None, None)] + [(0.0, None)] * m
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=[1.0], bounds=bounds, method="highs")
    if res.status != 0:
        raise AuditError(f"The NfC linear program failed: {res.message}")
    beta = np.clip(res.x[1:], 0.0, None)
    beta /= beta.sum()
    # the value of beta, recomputed exactly (never trust the solver's objective alone)
    val = float(np.max(p_star - beta @ L))
    alpha = -np.asarray(res.ineqlin.marginals, dtype=float)
    alpha = np.clip(alpha, 0.0, None)
    alpha = alpha / alpha.sum() if alpha.sum() > 0 else np.full(sup.size, 1.0 / sup.size)
    return max(min(val, dp_val), 0.0), beta, alpha, max(dp_val, 0.0), j_dp


def check_composition_conditions(inst: Instantiation, mechanisms, *, epsilon: float | None = None,
                                 tol: float = DEFAULT_TOL, max_reported: int = 10) -> CompositionConditions:
    r"""Decide Bai et al.'s necessary conditions for composition (Theorem 4) and their DP-style form (Theorem 5).

    Parameters
    ----------
    inst : Instantiation
        :math:`(S, \Theta)` over a small discrete database; every pair is checked in both orders.
    mechanisms : FiniteMechanism, array or callable, or a sequence of them
        Output laws :math:`P(M(D) = w)` (see :func:`puffgm.framework.audit_finite`).  A sequence is the
        set :math:`M_1, \dots, M_m` of Theorem 4: its ranges are taken disjoint and checked together.
    epsilon : float, optional
        The Pufferfish parameter (:math:`\ge 0`).  Default: the largest exact single-run
        loss of the mechanisms (:func:`~puffgm.framework.audit_finite`), i.e. the
        best :math:`\epsilon` they are Pufferfish at.
    tol : float
        Tolerance of ``nfc_value <= epsilon``.
    max_reported : int
        How many violating checks to keep.

    Returns
    -------
    CompositionConditions
        Which conditions hold, with the witnesses of those that fail.

    Notes
    -----
    :math:`v(D^*) = \min_\beta \max_w [\log P(w \mid D^*) - \sum_l \beta_l \log P(w \mid D_l)]` is solved with
    scipy's ``linprog`` (HiGHS); see the module docstring for the support rules.
    One LP per (prior, ordered pair, :math:`D^*` in the support of :math:`s_1`), cached on
    (:math:`D^*`, candidate set).

    Examples
    --------
    Randomised response on one bit composes (it is log 3-DP):

    >>> import numpy as np
    >>> from puffgm.framework import Instantiation, Secret
    >>> inst = Instantiation([np.array([0.5, 0.5])], [(Secret.value("X", 0), Secret.value("X", 1))],
    ...                      nodes=["X"], states=[2])
    >>> r = check_composition_conditions(inst, np.array([[0.75, 0.25], [0.25, 0.75]]))
    >>> r.holds, round(r.nfc_value, 6) == round(float(np.log(3)), 6)
    (True, True)
    """
    if not isinstance(inst, Instantiation):
        raise ParameterError("The 'inst' parameter of check_composition_conditions must be an Instantiation.")
    tol = check_nonnegative_finite(tol, "tol", "check_composition_conditions")
    max_reported = check_positive_int(max_reported, "max_reported", "check_composition_conditions")
    mechs, logm, labels = _stack(inst, mechanisms)
    name = " + ".join(m.name for m in mechs)
    if epsilon is None:
        eps = max(audit_finite(inst, m).loss for m in mechs)
        source = "exact single-run audit"
        if not math.isfinite(eps):
            raise AuditError(f"{name} is not Pufferfish private for any finite epsilon (single-run loss inf); "
                             "the composition conditions are moot.")
    else:
        eps = check_nonnegative_finite(epsilon, "epsilon", "check_composition_conditions")
        source = "given"
    support = logm > -np.inf
    assigns = list(inst.iter_assignments())
    cache: dict = {}
    checks = []
    n_checks = 0
    ordered = []
    for t, a, b in inst.active():
        ordered.append((t, a, b))
        ordered.append((t, b, a))
    for t, s1, s2 in ordered:
        lp = inst.log_priors[t].ravel()
        stars = np.flatnonzero(inst.mask(s1.name).ravel() & (lp > -np.inf))
        partners = np.flatnonzero(inst.mask(s2.name).ravel() & (lp > -np.inf))
        for star in stars:
            n_checks += 1
            # partners whose output support contains D*'s
            contains = ~np.any(support[star][None, :] & ~support[partners], axis=1)
            cands = partners[contains]
            key = (int(star), cands.tobytes())
            if key not in cache:
                if cands.size == 0:
                    # report an output of D* that some partner cannot produce
                    blk: np.ndarray | list[int] = (np.flatnonzero(support[star] & ~support[partners[0]])
                                                   if partners.size else [])
                    cache[key] = (math.inf, (), (), math.inf, None, 0,
                                  labels[int(blk[0])] if len(blk) else None)
                else:
                    v, beta, alpha, dpv, j_dp = _solve(logm, int(star), cands)
                    sup = np.flatnonzero(support[star])
                    beta_t = tuple((assigns[int(cands[i])], float(w)) for i, w in
                                   sorted(enumerate(beta), key=lambda kv: -kv[1]) if w > 1e-9)
                    alpha_t = tuple((labels[int(sup[i])], float(w)) for i, w in
                                    sorted(enumerate(alpha), key=lambda kv: -kv[1]) if w > 1e-9)
                    cache[key] = (v, beta_t, alpha_t, dpv, assigns[int(cands[j_dp])], int(cands.size), None)
            v, beta_t, alpha_t, dpv, partner, ncand, blocking = cache[key]
            checks.append(NfcCheck(prior=inst.prior_names[t], pair=(s1.name, s2.name), dataset=assigns[int(star)],
                                   value=v, beta=beta_t, alpha=alpha_t, dp_value=dpv, dp_partner=partner,
                                   n_candidates=ncand, blocking_output=blocking))
    notes = list(inst.notes)
    if not checks:
        notes.append("Every (prior, pair) combination was skipped: the conditions are vacuous.")
        return CompositionConditions(eps, source, 0.0, 0.0, True, True, None, (), 0, 0, name, tol, tuple(notes))
    values = np.array([c.value for c in checks])
    k = int(np.argmax(values))
    nfc = float(values[k])
    dpv = float(max(c.dp_value for c in checks))
    bad = [c for c in checks if c.value > eps + tol]
    bad.sort(key=lambda c: -c.value)
    if len(mechs) > 1:
        notes.append("Several mechanisms: their ranges are taken disjoint and checked together (Theorem 4).")
    return CompositionConditions(
        epsilon=float(eps), epsilon_source=source, nfc_value=nfc, dp_value=dpv, holds=nfc <= eps + tol,
        dp_holds=dpv <= eps + tol, worst=checks[k], violations=tuple(bad[:max_reported]), n_checks=n_checks,
        n_violations=len(bad), mechanism=name, tol=tol, notes=tuple(notes))


def nfc_value(inst: Instantiation, mechanisms) -> float:
    r"""The smallest :math:`\epsilon` at which Theorem 4's necessary conditions hold (``inf`` if none)."""
    return check_composition_conditions(inst, mechanisms, epsilon=0.0).nfc_value


def repeated_release_loss(inst: Instantiation, mechanism, counts, *, prior: int = 0, pair: int = 0) -> float:
    r"""Exact Pufferfish loss of one output multiset of repeated runs, for one prior and pair.

    For independent runs of ``mechanism`` on the same data whose outputs occur
    ``counts[w]`` times (:math:`c_w`),

    $$
    \left| \log \sum_D P(D \mid s_1, \theta) \prod_w P(w \mid D)^{c_w}
      - \log \sum_D P(D \mid s_2, \theta) \prod_w P(w \mid D)^{c_w} \right|
    $$

    (the multinomial coefficient cancels).  Used to exhibit the failure of linear
    composition predicted by a violated NfC check: take counts proportional to
    the check's ``alpha``.

    Returns
    -------
    float
        The log-ratio (``inf`` when the multiset is possible under one secret only).

    Raises
    ------
    AuditError
        If the multiset is impossible under both secrets.
    """
    mech = as_finite(mechanism)
    logm = mech.log_table(inst)
    c = np.asarray(counts, dtype=float)
    if c.shape != (logm.shape[1],) or np.any(c < 0) or not np.all(np.isfinite(c)):
        raise ParameterError(f"The 'counts' parameter must be {logm.shape[1]} non-negative finite numbers.")
    if not (0 <= int(pair) < len(inst.pairs)) or not (0 <= int(prior) < inst.n_priors):
        raise ParameterError("The 'prior' or 'pair' index is out of range.")
    used = c > 0
    safe = np.where(np.isfinite(logm), logm, 0.0)
    seq = safe[:, used] @ c[used]
    seq[np.any(~np.isfinite(logm[:, used]), axis=1)] = -np.inf
    a, b = inst.pairs[int(pair)]
    for s in (a, b):
        if inst.log_prob_secret(int(prior), s.name) == -math.inf:
            raise ParameterError(f"The secret {s.name!r} has probability 0 under prior {inst.prior_names[int(prior)]}.")
    la = inst.conditional(int(prior), a.name) + seq
    lb = inst.conditional(int(prior), b.name) + seq
    with np.errstate(invalid="ignore"):
        xa = logsumexp(la) if np.any(la > -np.inf) else -np.inf
        xb = logsumexp(lb) if np.any(lb > -np.inf) else -np.inf
    if xa == -np.inf and xb == -np.inf:
        raise AuditError("The output multiset is impossible under both secrets of the pair.")
    if xa == -np.inf or xb == -np.inf:
        return math.inf
    return float(abs(xa - xb))
