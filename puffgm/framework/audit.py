r"""Exact Pufferfish audits of mechanisms on small databases.

Given an instantiation :math:`(S, Q, \Theta)` (:class:`~puffgm.framework.instantiation.Instantiation`)
and a mechanism :math:`M` whose output law given the database is known in closed form,
the auditors compute the exact worst-case Pufferfish loss

$$
L(M) = \sup_{\theta \in \Theta} \sup_{(s_i, s_j) \in Q,\ P(s_i \mid \theta), P(s_j \mid \theta) > 0} \sup_w \left|
  \log P(M(\mathrm{Data}) = w \mid s_i, \theta) - \log P(M(\mathrm{Data}) = w \mid s_j, \theta) \right|,
$$

with :math:`P(M(\mathrm{Data}) = w \mid s, \theta) = \sum_x P(x \mid s, \theta)\, P(M(x) = w)`
(Kifer-Machanavajjhala Definition 3.1, Song-Wang-Chaudhuri Definition 2.1).
:math:`M` is :math:`\epsilon\text{-Pufferfish}(S, Q, \Theta)` private iff :math:`L(M) \le \epsilon`.

Every quantity is computed in log space (``logsumexp`` with max shifting);
databases are enumerated, so the instantiation must be small (at most 2**16
joint states by default; larger ones raise :class:`~puffgm.exceptions.AuditError`).
The reported loss is the exact maximum; its witness (prior, pair, output) is the
first, in the instantiation's order of priors and pairs and then in output order,
whose value ties with it (:mod:`puffgm.core.ties`), never a last-bit choice.

Auditors
--------
* :func:`audit_finite`: finite output space, output law a table or a callable
  returning log-probabilities.
* :func:`audit_composition`: k independent runs of finite-output mechanisms
  (product laws; identical runs are enumerated as multisets of outputs).
* :func:`audit_laplace`: ``q(Data) + Lap(scale)`` for a real query.  Between two
  consecutive query values the ratio of the two Laplace mixtures is a Moebius
  function of ``t = exp(2w/scale)`` and hence monotone, so the supremum over w is
  attained at a query value or at w -> +-inf; all of them are evaluated exactly.
* :func:`audit_vector_laplace`: independent Laplace noise on each coordinate of
  a vector query; in every grid cell the ratio is monotone in each coordinate
  separately, so the supremum is attained at a vertex of the (extended) grid of
  query values; exact for small grids.
* :func:`audit_exponential`: the exponential mechanism over a finite candidate set.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
from scipy.special import logsumexp

from puffgm.core.ties import RunningBest, canonical_argmax
from puffgm.core.validation import check_positive_finite, check_positive_int
from puffgm.core.witness import Witness
from puffgm.exceptions import AuditError, ParameterError
from puffgm.framework.instantiation import Instantiation

__all__ = [
    "AuditResult",
    "FiniteMechanism",
    "audit_finite",
    "audit_composition",
    "audit_laplace",
    "audit_vector_laplace",
    "audit_exponential",
    "as_finite",
    "grouped_law",
    "pair_laws",
    "MAX_CELLS",
]

#: Largest (databases x outputs) table an auditor builds.
MAX_CELLS = 2**24
_ROW_TOL = 1e-6


def _json(x):
    if isinstance(x, float):
        return x if math.isfinite(x) else (None if math.isnan(x) else ("inf" if x > 0 else "-inf"))
    if isinstance(x, (np.floating,)):
        return _json(float(x))
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (list, tuple)):
        return [_json(v) for v in x]
    if isinstance(x, Mapping):
        return {str(k): _json(v) for k, v in x.items()}
    return x


@dataclass(frozen=True)
class AuditResult:
    r"""The exact worst-case Pufferfish loss of a mechanism under an instantiation.

    Attributes
    ----------
    loss : float
        :math:`\sup` over :math:`\theta`, audited pairs and outputs of the absolute log-ratio
        (``inf`` if some output is possible under one secret and impossible under
        the other; 0.0 if every pair was skipped, see ``skipped``).
    witness : Witness or None
        ``prior`` (theta index), ``pair`` (secret_i name, secret_j name) and ``output`` attaining the
        loss (the output is an index/label, a real :math:`w`, ``inf``/``-inf``, or a tuple).
    skipped : tuple
        ``(theta index, pair, reason)`` for every combination skipped because a
        secret has prior probability zero (the Pufferfish technical condition).
    mechanism : str
        A description of the audited mechanism.
    n_databases, n_priors, n_pairs, n_outputs : int
        Sizes of the enumeration (``n_outputs`` = number of outputs/candidate
        points examined).
    per_prior : tuple of float
        The loss restricted to each :math:`\theta`.
    notes : tuple of str
    details : Mapping
    """

    loss: float
    witness: Witness | None
    skipped: tuple
    mechanism: str
    n_databases: int
    n_priors: int
    n_pairs: int
    n_outputs: int
    per_prior: tuple = ()
    notes: tuple = ()
    details: Mapping = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))
        object.__setattr__(self, "skipped", tuple(self.skipped))
        object.__setattr__(self, "per_prior", tuple(self.per_prior))
        object.__setattr__(self, "notes", tuple(self.notes))

    def satisfies(self, *, epsilon: float, tol: float = 1e-9) -> bool:
        r"""True iff the mechanism is :math:`\epsilon`-Pufferfish private (loss :math:`\le \epsilon + \mathrm{tol}`)."""
        return self.loss <= epsilon + tol

    def to_dict(self) -> dict:
        return _json({
            "loss": float(self.loss),
            "witness": None if self.witness is None else {
                "prior": self.witness.prior, "pair": list(self.witness.pair or ()), "output": self.witness.output},
            "mechanism": self.mechanism,
            "n_databases": self.n_databases,
            "n_priors": self.n_priors,
            "n_pairs": self.n_pairs,
            "n_outputs": self.n_outputs,
            "per_prior": [float(v) for v in self.per_prior],
            "skipped": [{"prior": t, "pair": list(p), "reason": r} for t, p, r in self.skipped],
            "notes": list(self.notes),
            "details": dict(self.details),
        })

    def explain(self) -> str:
        lines = [f"{self.mechanism}: exact Pufferfish loss {self.loss:.10g}"]
        if self.witness is not None:
            w = self.witness
            a, b = w.pair or (None, None)
            lines.append(f"witness: prior #{w.prior}, pair ({a}, {b}), output {w.output!r}")
        lines.append(f"{self.n_databases} databases, {self.n_priors} priors, {self.n_pairs} pairs, "
                     f"{len(self.skipped)} (prior, pair) combinations skipped")
        for t, p, r in self.skipped[:5]:
            lines.append(f"skipped: prior #{t}, pair {p}: {r}")
        for n in self.notes:
            lines.append(f"note: {n}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


# --------------------------------------------------------------------------- finite outputs


class FiniteMechanism:
    """A mechanism with a finite output space, by its output law given the database.

    Build it with :meth:`from_table` (probabilities, shape ``inst.shape + (n_out,)``
    or ``(n_databases, n_out)``) or :meth:`from_log_callable`
    (``f(assignment) -> log-probabilities over the outputs``).

    Parameters
    ----------
    source : array or callable
    log : bool
        ``source`` gives log-probabilities.
    outputs : sequence, optional
        Labels of the outputs (witnesses report labels instead of indices).
    name : str
    """

    def __init__(self, source, *, log: bool, outputs: Sequence | None = None, name: str = "finite mechanism"):
        self.source = source
        self.log = bool(log)
        self.outputs = None if outputs is None else tuple(outputs)
        self.name = name

    @classmethod
    def from_table(cls, table, outputs=None, name="finite mechanism", log=False) -> FiniteMechanism:
        return cls(np.asarray(table, dtype=float), log=log, outputs=outputs, name=name)

    @classmethod
    def from_log_callable(cls, func, outputs=None, name="finite mechanism") -> FiniteMechanism:
        return cls(func, log=True, outputs=outputs, name=name)

    def log_table(self, inst: Instantiation) -> np.ndarray:
        r""":math:`\log P(M(x) = w)`, shape ``(n_databases, n_outputs)``, validated."""
        arr = inst.evaluate(self.source, what="mechanism")
        if arr.ndim != 2:
            raise AuditError(f"The output law of {self.name} must give one vector per database; got shape {arr.shape}.")
        n_out = arr.shape[1]
        if self.outputs is not None and len(self.outputs) != n_out:
            raise AuditError(f"{self.name} has {n_out} outputs but {len(self.outputs)} labels.")
        if inst.n_databases * n_out > MAX_CELLS:
            raise AuditError(f"The output table of {self.name} has {inst.n_databases * n_out} cells, more than "
                             f"{MAX_CELLS}.")
        if self.log:
            if np.any(np.isnan(arr)) or np.any(arr == np.inf):
                raise AuditError(f"The log output law of {self.name} has a NaN or +inf entry.")
            tot = logsumexp(arr, axis=1)
            bad = np.flatnonzero(~(np.abs(np.expm1(tot)) <= _ROW_TOL))
            if bad.size:
                raise AuditError(f"The output law of {self.name} for database #{bad[0]} sums to "
                                 f"{float(np.exp(tot[bad[0]]))!r}, not 1.")
            return arr - tot[:, None]
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise AuditError(f"The output law of {self.name} has a negative, NaN or infinite entry.")
        tot = arr.sum(axis=1)
        bad = np.flatnonzero(np.abs(tot - 1) > _ROW_TOL)
        if bad.size:
            raise AuditError(f"The output law of {self.name} for database #{bad[0]} sums to {float(tot[bad[0]])!r}, "
                             "not 1.")
        with np.errstate(divide="ignore"):
            return np.log(arr / tot[:, None])

    def label(self, k):
        return k if self.outputs is None else self.outputs[k]


def as_finite(mechanism) -> FiniteMechanism:
    """``mechanism`` as a :class:`FiniteMechanism`.

    Parameters
    ----------
    mechanism : FiniteMechanism, array or callable
        A FiniteMechanism is returned as is; a callable is read as
        ``assignment -> log-probabilities of the outputs``; anything else as the
        table of output probabilities (see :func:`audit_finite`).

    Returns
    -------
    FiniteMechanism
        The mechanism as a table of output probabilities for every database.
    """
    if isinstance(mechanism, FiniteMechanism):
        return mechanism
    if callable(mechanism):
        return FiniteMechanism.from_log_callable(mechanism)
    return FiniteMechanism.from_table(mechanism)


def _log_ratio_max(la: np.ndarray, lb: np.ndarray):
    """max_w |la(w) - lb(w)| over outputs with mass under either law, and its argmax.

    Outputs impossible under both are skipped; possible under exactly one -> inf.  The
    value is the exact max; the index is the first output that ties with it
    (:func:`puffgm.core.ties.canonical_argmax`).
    """
    both_zero = (la == -np.inf) & (lb == -np.inf)
    with np.errstate(invalid="ignore"):
        d = np.abs(la - lb)
    d[both_zero] = -np.inf
    d[np.isnan(d)] = np.inf  # cannot happen after masking, kept as a guard
    return float(d.max()), canonical_argmax(d)


def _audit_log_table(inst: Instantiation, logm: np.ndarray, label, mechanism: str, notes=(), details=None):
    """Core: conditional output laws by logsumexp over databases, then the sup of log-ratios."""
    worst = RunningBest("max")  # pairs in the instantiation's order: the first of the ties
    per_prior = [0.0] * inst.n_priors
    def output_law(cond):
        idx = np.flatnonzero(cond > -np.inf)
        return logsumexp(cond[idx, None] + logm[idx], axis=0)

    any_active = False
    for t, a, b, law_a, law_b in pair_laws(inst, output_law):
        any_active = True
        val, k = _log_ratio_max(law_a, law_b)
        if val > per_prior[t]:
            per_prior[t] = val
        worst.offer(val, Witness(prior=t, pair=(a.name, b.name), output=label(k)))
    all_notes = list(inst.notes) + list(notes)
    if not any_active:
        all_notes.append("Every (prior, pair) combination was skipped: the loss is vacuous.")
    return AuditResult(
        loss=0.0 if worst.empty else float(worst.value), witness=worst.witness, skipped=inst.skipped,
        mechanism=mechanism,
        n_databases=inst.n_databases, n_priors=inst.n_priors, n_pairs=len(inst.pairs),
        n_outputs=int(logm.shape[1]), per_prior=tuple(per_prior), notes=tuple(all_notes),
        details=details or {},
    )


def audit_finite(inst: Instantiation, mechanism) -> AuditResult:
    r"""Exact Pufferfish loss of a finite-output mechanism.

    Parameters
    ----------
    inst : Instantiation
    mechanism : FiniteMechanism, array or callable
        An array is the table of output probabilities P(M(x) = w), shape
        ``inst.shape + (n_out,)`` or ``(n_databases, n_out)``; a callable maps an
        assignment ``{node: state}`` to the *log*-probabilities of the outputs.

    Returns
    -------
    AuditResult
        The loss :math:`\max_\theta \max_{(s_i, s_j)} \max_w |\log P(w \mid s_i, \theta) - \log P(w \mid s_j, \theta)|`
        with :math:`P(w \mid s, \theta) = \sum_x P(x \mid s, \theta)\, P(M(x) = w)`.

    Examples
    --------
    Randomised response on one bit with keep-probability 3/4 has loss :math:`\log 3`:

    >>> import numpy as np
    >>> from puffgm.framework import Instantiation, Secret, audit_finite
    >>> inst = Instantiation([np.array([0.5, 0.5])], [(Secret.value("X", 0), Secret.value("X", 1))],
    ...                      nodes=["X"], states=[2])
    >>> r = audit_finite(inst, np.array([[0.75, 0.25], [0.25, 0.75]]))
    >>> bool(abs(r.loss - np.log(3)) < 1e-12)
    True
    """
    mech = as_finite(mechanism)
    logm = mech.log_table(inst)
    return _audit_log_table(inst, logm, mech.label, mech.name)


def audit_composition(inst: Instantiation, mechanisms, k: int | None = None) -> AuditResult:
    r"""Exact Pufferfish loss of independent runs of finite-output mechanisms on the same data.

    The joint output law is the product :math:`P(M_1(x) = w_1) \cdots P(M_k(x) = w_k)`.

    Parameters
    ----------
    inst : Instantiation
    mechanisms : FiniteMechanism/array/callable, or a sequence of them
        With ``k`` given, one mechanism run ``k`` times; otherwise each mechanism of
        the sequence is run once.  Identical runs are exchangeable: the loss of an
        output sequence depends only on its multiset (the multinomial coefficient
        cancels in the ratio), so ``k`` runs of one mechanism with ``m`` outputs
        examine ``C(m + k - 1, k)`` multisets.
    k : int, optional

    Returns
    -------
    AuditResult
        The witness output is a tuple of output labels.
    """
    if k is not None:
        k = check_positive_int(k, "k", "audit_composition")
        mech = as_finite(mechanisms)
        logm = mech.log_table(inst)
        m = logm.shape[1]
        n_multi = math.comb(m + k - 1, k)
        if inst.n_databases * n_multi > MAX_CELLS:
            raise AuditError(f"{k} runs of {mech.name} have {n_multi} output multisets; too many for an exact audit.")
        combos = list(itertools.combinations_with_replacement(range(m), k))
        counts = np.zeros((len(combos), m))
        for r, c in enumerate(combos):
            for o in c:
                counts[r, o] += 1
        # log P(sequence) = sum_o count_o * log p_o ; count 0 * (-inf) must be 0.
        safe = np.where(np.isfinite(logm), logm, 0.0)
        joint = safe @ counts.T
        impossible = (~np.isfinite(logm)).astype(float) @ (counts.T > 0).astype(float) > 0
        joint[impossible] = -np.inf
        labels = [tuple(mech.label(o) for o in c) for c in combos]
        return _audit_log_table(inst, joint, lambda j: labels[j], f"{k}-fold composition of {mech.name}",
                                details={"k": k, "n_multisets": n_multi})
    mechs = [as_finite(mm) for mm in mechanisms]
    if not mechs:
        raise AuditError("audit_composition needs at least one mechanism.")
    tables = [mm.log_table(inst) for mm in mechs]
    n_out = math.prod(t.shape[1] for t in tables)
    if inst.n_databases * n_out > MAX_CELLS:
        raise AuditError(f"The composition has {n_out} joint outputs; too many for an exact audit.")
    joint = tables[0]
    for t in tables[1:]:
        joint = (joint[:, :, None] + t[:, None, :]).reshape(inst.n_databases, -1)
    shapes = [t.shape[1] for t in tables]

    def label(j):
        idx = np.unravel_index(j, shapes)
        return tuple(mm.label(int(i)) for mm, i in zip(mechs, idx, strict=True))

    return _audit_log_table(inst, joint, label, "composition of " + ", ".join(mm.name for mm in mechs),
                            details={"k": len(mechs)})


def audit_exponential(inst: Instantiation, utility, *, epsilon: float | None = None, scale: float | None = None,
                      sensitivity: float = 1.0, candidates: Sequence | None = None) -> AuditResult:
    r"""Exact Pufferfish loss of the exponential mechanism.

    :math:`P(M(x) = r) = \exp(u(x, r) / b) / \sum_{r'} \exp(u(x, r') / b)` with :math:`b` the scale,
    :math:`b = 2 \Delta_u / \epsilon` (:math:`\Delta_u` the sensitivity) when ``epsilon`` is given
    (McSherry-Talwar; Song et al. use it as a baseline).

    Parameters
    ----------
    utility : array or callable
        Scores :math:`u(x, r)`: table of shape ``inst.shape + (n_candidates,)`` or a callable
        ``assignment -> scores``.  ``-inf`` scores are never selected.
    epsilon, scale : float
        Exactly one of them.
    sensitivity : float
        Sensitivity of the utility (used with ``epsilon``).
    candidates : sequence, optional
        Labels of the candidates.
    """
    if (epsilon is None) == (scale is None):
        raise ParameterError("Give exactly one of 'epsilon' and 'scale' to audit_exponential.")
    if scale is None:
        epsilon = check_positive_finite(epsilon, "epsilon", "audit_exponential")
        sensitivity = check_positive_finite(sensitivity, "sensitivity", "audit_exponential")
        scale = 2.0 * sensitivity / epsilon
    scale = check_positive_finite(scale, "scale", "audit_exponential")
    u = inst.evaluate(utility, what="utility")
    if np.any(np.isnan(u)) or np.any(u == np.inf):
        raise AuditError("The utility of the exponential mechanism has a NaN or +inf score.")
    if np.any(np.all(u == -np.inf, axis=1)):
        raise AuditError("Some database gives every candidate of the exponential mechanism score -inf.")
    # shift each row by its max before dividing: exponents stay <= 0 (no overflow for tiny
    # scales) and the softmax is unchanged
    with np.errstate(invalid="ignore", over="ignore"):
        z = (u - u.max(axis=1, keepdims=True)) / scale
    logm = z - logsumexp(z, axis=1, keepdims=True)
    mech = FiniteMechanism(logm, log=True, outputs=candidates, name=f"exponential mechanism (scale {scale:g})")
    return _audit_log_table(inst, mech.log_table(inst), mech.label, mech.name, details={"scale": scale})


# --------------------------------------------------------------------------- Laplace


def _laplace_mixture_log(log_w: np.ndarray, vals: np.ndarray, points: np.ndarray, scale: float,
                         center: float = 0.0) -> np.ndarray:
    """log sum_k w_k exp(-|p - v_k| / scale) at each point p (up to the common 1/(2 scale)).

    At p = +inf / -inf the common factor exp(-|p - center|/scale) is dropped: the
    value is log sum_k w_k exp(+-(v_k - center) / scale), which is what the limit of
    a ratio needs.  Both laws of a ratio must use the same ``center`` (it cancels);
    centring the values keeps the exponents from overflowing.
    """
    out = np.empty(points.shape)
    fin = np.isfinite(points)
    with np.errstate(over="ignore", invalid="ignore"):
        if fin.any():
            out[fin] = logsumexp(log_w[None, :] - np.abs(points[fin, None] - vals[None, :]) / scale, axis=1)
        if (points == np.inf).any():
            out[points == np.inf] = logsumexp(log_w + (vals - center) / scale)
        if (points == -np.inf).any():
            out[points == -np.inf] = logsumexp(log_w - (vals - center) / scale)
    return out


def _abs_log_ratio(la: np.ndarray, lb: np.ndarray) -> np.ndarray:
    """|la - lb| with an undefined difference (inf - inf after an overflow) reported as +inf,
    so an audit can over-report but never silently drop a (prior, pair)."""
    with np.errstate(invalid="ignore"):
        d = np.abs(la - lb)
    return np.where(np.isnan(d), np.inf, d)


def grouped_law(cond: np.ndarray, q: np.ndarray):
    r"""The law of q(Data) given a secret, as (distinct values, log-probabilities).

    Parameters
    ----------
    cond : ndarray (n,)
        :math:`\log P(\mathrm{Data} = x \mid s, \theta)` over the flattened databases (``-inf`` outside :math:`s`),
        as returned by :meth:`Instantiation.conditional`.
    q : ndarray (n,) or (n, d)
        The query's value on every database: scalars or vectors.

    Returns
    -------
    values : ndarray
        The distinct values of q on the databases of positive probability, sorted
        (rows for a vector query).
    log_weights : ndarray
        :math:`\log P(q(\mathrm{Data}) = \text{value} \mid s, \theta)` of each.
    """
    idx = np.flatnonzero(cond > -np.inf)
    vals, inv = np.unique(q[idx], axis=0, return_inverse=True)
    inv = np.asarray(inv).ravel()
    logw = np.array([logsumexp(cond[idx][inv == j]) for j in range(vals.shape[0])])
    return vals, logw


def pair_laws(inst: Instantiation, law_of):
    r"""Yield (:math:`\theta`, :math:`s_i`, :math:`s_j`, law_i, law_j) for every audited (prior, pair).

    Parameters
    ----------
    inst : Instantiation
        The combinations are those of :meth:`Instantiation.active` (the technical
        condition :math:`P(s_i \mid \theta), P(s_j \mid \theta) > 0` holds for each).
    law_of : callable
        Maps :math:`\log P(\mathrm{Data} = x \mid s, \theta)` over the databases to the law the auditor
        needs (e.g. ``lambda cond: grouped_law(cond, q)``); each (:math:`\theta`, secret) law
        is computed once and shared by every pair.
    """
    cache = {}
    for t, a, b in inst.active():
        laws = []
        for s in (a, b):
            key = (t, s.name)
            if key not in cache:
                cache[key] = law_of(inst.conditional(t, s.name))
            laws.append(cache[key])
        yield t, a, b, laws[0], laws[1]


def audit_laplace(inst: Instantiation, query, scale: float) -> AuditResult:
    r"""Exact Pufferfish loss of the scalar Laplace mechanism ``q(Data) + Lap(scale)``.

    Given :math:`s` and :math:`\theta` the output density is the Laplace mixture
    :math:`f_s(w) = \sum_v P(q = v \mid s, \theta) \exp(-|w - v| / b) / (2b)` (:math:`b` the scale).  On an
    interval between consecutive breakpoints :math:`f_s(w) = A e^{-w/b} + B e^{w/b}`, so
    :math:`f_i / f_j = (A_i + B_i t) / (A_j + B_j t)` with :math:`t = e^{2w/b}`: a Moebius
    function, monotone in :math:`w`.  The supremum of :math:`|\log f_i / f_j|` is therefore attained
    at a query value :math:`v` (of either conditional law) or in the limits :math:`w \to \pm\infty`,
    where the ratio tends to :math:`\sum_v P(v \mid s_i)\, e^{\pm v/b} / \sum_v P(v \mid s_j)\, e^{\pm v/b}`.
    All these points are evaluated exactly in log space.

    Parameters
    ----------
    inst : Instantiation
    query : callable or array
        ``q(assignment) -> float`` or a table of shape ``inst.shape``.
    scale : float
        The Laplace scale :math:`b`.

    Returns
    -------
    AuditResult
        The witness output is the maximising :math:`w` (a query value or :math:`\pm\infty`).

    Examples
    --------
    Under DP (independent records) Laplace with scale :math:`\Delta / \epsilon` (:math:`\Delta` the
    sensitivity) has loss exactly :math:`\epsilon`:

    >>> import numpy as np
    >>> from puffgm.framework import Instantiation, Secret, audit_laplace
    >>> joint = np.full((2, 2), 0.25)
    >>> inst = Instantiation([joint], [(Secret.value("A", 0), Secret.value("A", 1))],
    ...                      nodes=["A", "B"], states=[2, 2])
    >>> r = audit_laplace(inst, lambda x: x["A"] + x["B"], scale=2.0)
    >>> abs(r.loss - 0.5) < 1e-12
    True
    """
    scale = check_positive_finite(scale, "scale", "audit_laplace")
    q = inst.evaluate(query, what="query")
    if q.ndim != 1:
        raise AuditError(f"audit_laplace needs a scalar query; got {q.shape[1:]} values per database "
                         "(use audit_vector_laplace).")
    if not np.all(np.isfinite(q)):
        raise AuditError("The query takes a NaN or infinite value on some database.")
    worst = RunningBest("max")  # pairs in the instantiation's order, outputs in grid order
    per_prior = [0.0] * inst.n_priors
    n_points = 0
    for t, a, b, (va, wa), (vb, wb) in pair_laws(inst, lambda cond: grouped_law(cond, q)):
        points = np.concatenate([np.union1d(va, vb), [-np.inf, np.inf]])
        n_points = max(n_points, points.size)
        both = np.concatenate([va, vb])
        center = 0.5 * (float(both.min()) + float(both.max()))
        d = _abs_log_ratio(_laplace_mixture_log(wa, va, points, scale, center),
                           _laplace_mixture_log(wb, vb, points, scale, center))
        k, val = canonical_argmax(d), float(d.max())
        per_prior[t] = max(per_prior[t], val)
        worst.offer(val, Witness(prior=t, pair=(a.name, b.name), output=float(points[k])))
    return AuditResult(
        loss=0.0 if worst.empty else worst.value, witness=worst.witness, skipped=inst.skipped,
        mechanism=f"Laplace mechanism (scale {scale:g})",
        n_databases=inst.n_databases, n_priors=inst.n_priors, n_pairs=len(inst.pairs), n_outputs=n_points,
        per_prior=tuple(per_prior), notes=inst.notes, details={"scale": scale},
    )


def audit_vector_laplace(inst: Instantiation, query, scale, *, max_points: int = 2**18) -> AuditResult:
    r"""Exact Pufferfish loss of :math:`q(D) + (\mathrm{Lap}(b_1), \dots, \mathrm{Lap}(b_d))` (independent coordinates).

    Given :math:`s` and :math:`\theta` the output density is
    :math:`f_s(w) = \sum_v P(q = v \mid s, \theta) \prod_d \exp(-|w_d - v_d| / b_d) / (2 b_d)`.  In a cell of the
    grid formed by the query values of each coordinate, fixing every coordinate but :math:`w_d` makes the
    ratio :math:`f_i / f_j` a Moebius function of :math:`\exp(2 w_d / b_d)`, hence monotone in :math:`w_d`.
    A function monotone in each coordinate on a box attains its supremum at a
    vertex, so the supremum over :math:`\mathbb{R}^d` is attained at a point of the product grid
    :math:`\prod_d (\mathrm{values}_d \cup \{-\infty, +\infty\})` (limits at infinite coordinates).  Exact, but
    the grid has :math:`\prod_d (m_d + 2)` points: refused above ``max_points``.

    Parameters
    ----------
    query : callable or array
        ``q(assignment) -> vector`` or a table of shape ``inst.shape + (d,)``.
    scale : float or sequence of float
        Per-coordinate Laplace scales (one float for all).
    """
    q = inst.evaluate(query, what="query")
    if q.ndim == 1:
        q = q[:, None]
    if q.ndim != 2:
        raise AuditError(f"audit_vector_laplace needs a vector query; got shape {q.shape[1:]} per database.")
    if not np.all(np.isfinite(q)):
        raise AuditError("The query takes a NaN or infinite value on some database.")
    dim = q.shape[1]
    scales = np.broadcast_to(np.asarray(scale, dtype=float), (dim,)).copy()
    for s in scales:
        check_positive_finite(float(s), "scale", "audit_vector_laplace")
    worst = RunningBest("max")  # pairs in the instantiation's order, outputs in grid order
    per_prior = [0.0] * inst.n_priors
    n_points = 0
    for t, a, b, (va, wa), (vb, wb) in pair_laws(inst, lambda cond: grouped_law(cond, q)):
        axes = [np.concatenate([np.union1d(va[:, d], vb[:, d]), [-np.inf, np.inf]]) for d in range(dim)]
        size = math.prod(ax.size for ax in axes)
        if size > max_points:
            raise AuditError(f"The grid of candidate outputs has {size} points, more than max_points={max_points}.")
        n_points = max(n_points, size)
        grid = np.array(list(itertools.product(*axes)))  # (P, d)

        both = np.concatenate([va, vb])
        center = 0.5 * (both.min(axis=0) + both.max(axis=0))  # per coordinate, common to both laws

        def logf(vals, lw, grid=grid, center=center):  # this pair's grid, bound now
            # per coordinate: finite -> -|w_d - v_d|/b_d ; +-inf -> +-(v_d - c_d)/b_d (c_d cancels)
            g = grid[:, None, :]
            v = vals[None, :, :]
            with np.errstate(invalid="ignore", over="ignore"):
                e = np.where(np.isfinite(g), -np.abs(g - v), np.sign(g) * (v - center)) / scales
                return logsumexp(lw[None, :] + e.sum(axis=2), axis=1)

        d = _abs_log_ratio(logf(va, wa), logf(vb, wb))
        k, val = canonical_argmax(d), float(d.max())
        per_prior[t] = max(per_prior[t], val)
        worst.offer(val, Witness(prior=t, pair=(a.name, b.name), output=tuple(float(x) for x in grid[k])))
    return AuditResult(
        loss=0.0 if worst.empty else worst.value, witness=worst.witness, skipped=inst.skipped,
        mechanism=f"vector Laplace mechanism (scales {', '.join(f'{s:g}' for s in scales)})",
        n_databases=inst.n_databases, n_priors=inst.n_priors, n_pairs=len(inst.pairs), n_outputs=n_points,
        per_prior=tuple(per_prior), notes=inst.notes, details={"scales": [float(s) for s in scales]},
    )
