r"""The Wasserstein Mechanism (Song, Wang and Chaudhuri, SIGMOD 2017, section 3, Algorithm 1).

For a real-valued query :math:`F` and an instantiation :math:`(S, Q, \Theta)`, let
:math:`\mu_{i,\theta} = P(F(X) = \cdot \mid s_i, \theta)`.  The mechanism computes

$$
W = \sup_{(s_i, s_j) \in Q,\ \theta \in \Theta,\ P(s_i \mid \theta), P(s_j \mid \theta) > 0}
  W_\infty(\mu_{i,\theta}, \mu_{j,\theta})
$$

and releases :math:`F(D) + \mathrm{Lap}(W / \epsilon)`.  It is :math:`\epsilon`-Pufferfish private
(Theorem 3.2) and :math:`W` never exceeds the global sensitivity of F in the group-DP
framework whose groups are the sets of correlated records (Theorem 3.3).

:math:`W_\infty`, the :math:`\infty`-Wasserstein distance (Definition 3.1), is the smallest
:math:`w` such that some coupling of :math:`\mu` and :math:`\nu` never moves mass farther than :math:`w`.  On
the real line the optimal coupling is the quantile (monotone) coupling, so

$$
W_\infty(\mu, \nu) = \operatorname{ess\,sup}_{u \in (0, 1)} \left|F_\mu^{-1}(u) - F_\nu^{-1}(u)\right|,
$$

which for finite supports is a maximum over the intervals between consecutive
values of the two cumulative distribution functions (:func:`w_inf`).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np

from puffgm.core.accuracy import laplace_rows
from puffgm.core.noise import resolve_noise
from puffgm.core.release import make_release
from puffgm.core.validation import check_positive_finite
from puffgm.core.witness import Witness
from puffgm.exceptions import AuditError, ParameterError
from puffgm.framework.audit import AuditResult, audit_laplace, grouped_law, pair_laws
from puffgm.framework.instantiation import Instantiation
from puffgm.mechanisms.query import QueryRelease

__all__ = [
    "w_inf",
    "WassersteinCalibration",
    "WassersteinRelease",
    "calibrate_wasserstein",
    "release_wasserstein",
    "group_dp_sensitivity",
]

def _exact_cdf(p) -> list:
    """Cumulative sums of the given probabilities as exact rationals, normalised to end at 1."""
    fr = [Fraction(float(x)) for x in p]
    total = sum(fr)
    out, acc = [], Fraction(0)
    for x in fr:
        acc += x
        out.append(acc / total)
    return out


#: A quantile interval shorter than this whose two ends come from *different* CDFs is a rounding
#: artefact between breakpoints that coincide in exact arithmetic (see :func:`w_inf`).
CDF_TOL = 1e-12


def w_inf(values_a, probs_a, values_b, probs_b, *, tol: float = CDF_TOL) -> float:
    r"""Infinity-Wasserstein distance between two finitely supported laws on the real line.

    :math:`W_\infty(\mu, \nu) = \operatorname{ess\,sup}_{u \in (0, 1)} |F_\mu^{-1}(u) - F_\nu^{-1}(u)|`, the largest
    gap between the quantile functions (Song et al., section 3.1).

    Parameters
    ----------
    values_a, probs_a : array_like
        Support points and probabilities of :math:`\mu` (probabilities sum to 1; zeros allowed).
    values_b, probs_b : array_like
        The same for :math:`\nu`.
    tol : float
        See Notes.

    Returns
    -------
    float
        :math:`W_\infty(\mu, \nu)`: the least largest shift of a coupling of the two laws.

    Notes
    -----
    The cumulative sums are exact rationals of the given floating-point
    probabilities, so the breakpoints of both CDFs are exact.  On each interval
    between consecutive breakpoints both quantile functions are constant.

    * An interval bounded by two breakpoints of the *same* CDF is an atom of that
      law and always counts, however small its probability (an essential
      supremum ignores only sets of measure zero; dropping a 1e-13 atom would
      understate W and the noise).
    * An interval shorter than ``tol`` whose ends come from *different* CDFs
      is rounding between breakpoints that coincide in exact arithmetic
      (conditional laws computed in floating point); it is skipped.  Counting
      it would pair an atom of one law with a neighbouring atom of the other and
      overstate W beyond the group-DP sensitivity (Theorem 3.3).

    Examples
    --------
    The flu example of Song et al. section 3 (conditionals of :math:`N` given :math:`X_i`):

    >>> w_inf(range(5), [0.2, 0.225, 0.5, 0.075, 0.0], range(5), [0.0, 0.075, 0.5, 0.225, 0.2])
    2.0
    >>> w_inf([0, 10], [1 - 1e-13, 1e-13], [0], [1.0])   # a tiny atom still counts
    10.0
    """
    va, pa = _clean(values_a, probs_a)
    vb, pb = _clean(values_b, probs_b)
    ca, cb = _exact_cdf(pa), _exact_cdf(pb)
    zero = Fraction(0)
    ends_a, ends_b = set(ca) | {zero}, set(cb) | {zero}
    tol_q = Fraction(tol)
    best, lo = 0.0, zero
    for hi in sorted(ends_a | ends_b):
        if hi > lo:  # on (lo, hi] both quantile functions are constant
            same_law = (lo in ends_a and hi in ends_a) or (lo in ends_b and hi in ends_b)
            if same_law or hi - lo > tol_q:
                qa = va[bisect_left(ca, hi)]
                qb = vb[bisect_left(cb, hi)]
                best = max(best, abs(float(qa) - float(qb)))
        lo = hi
    return best


def _clean(values, probs):
    v = np.asarray(values, dtype=float).ravel()
    p = np.asarray(probs, dtype=float).ravel()
    if v.shape != p.shape or v.size == 0:
        raise ParameterError("Support points and probabilities must be non-empty arrays of the same length.")
    if not np.all(np.isfinite(v)) or not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ParameterError("Support points must be finite and probabilities finite and >= 0.")
    if abs(p.sum() - 1.0) > 1e-6:
        raise ParameterError(f"Probabilities sum to {p.sum()!r}, not 1.")
    keep = p > 0
    v, p = v[keep], p[keep] / p[keep].sum()
    order = np.argsort(v, kind="stable")
    v, p = v[order], p[order]
    uniq, inv = np.unique(v, return_inverse=True)
    return uniq, np.bincount(np.asarray(inv).ravel(), weights=p, minlength=uniq.size)


@dataclass(frozen=True)
class WassersteinCalibration:
    r"""Outcome of Algorithm 1: :math:`W`, the Laplace scale :math:`W / \epsilon`, and what justifies it.

    Attributes
    ----------
    epsilon : float
    W : float
        :math:`\sup` over audited (pair, :math:`\theta`) of :math:`W_\infty` between the conditional laws of :math:`F`.
    scale : float
        :math:`W / \epsilon`.
    witness : Witness or None
        ``prior`` (theta index) and ``pair`` :math:`(s_i, s_j)` attaining :math:`W`.
    per_pair : tuple
        ``(theta index, (s_i, s_j), W_inf)`` for every audited combination.
    skipped : tuple
        Combinations skipped by the technical condition :math:`P(s \mid \theta) > 0`.
    group_dp_sensitivity : float or None
        The group-DP baseline (Theorem 3.3 says :math:`W` is at most it), when groups are known.
    audit : AuditResult or None
        Exact audit of the released Laplace mechanism (loss :math:`\le \epsilon` by Theorem 3.2).
    theorem : str
    notes : tuple of str
    """

    epsilon: float
    W: float
    scale: float
    witness: Witness | None
    per_pair: tuple
    skipped: tuple
    group_dp_sensitivity: float | None = None
    audit: AuditResult | None = None
    theorem: str = "Song-Wang-Chaudhuri 2017, Algorithm 1 and Theorem 3.2 (Wasserstein privacy)"
    notes: tuple = ()

    #: The query-specific method this calibration is (names the mechanism of its release).
    method: ClassVar[str] = "wasserstein"

    @property
    def prior(self) -> str:
        """The instantiation the calibration audited, through W and its witness."""
        where = "" if self.witness is None else f", attained at prior {self.witness.prior} on the pair " \
                                                f"{tuple(self.witness.pair or ())}"
        return f"the instantiation (S, Q, Theta) given to calibrate_wasserstein (W = {self.W:.6g}{where})"

    def accuracy(self, alpha: float = 0.05) -> tuple:
        r"""Laplace scale :math:`W / \epsilon` and its :math:`(1-\alpha)` half-width (:mod:`puffgm.core.accuracy`)."""
        return laplace_rows(("value",), (self.scale,), alpha)

    def to_dict(self) -> dict:
        d = {
            "epsilon": self.epsilon,
            "W": self.W,
            "scale": self.scale,
            "witness": None if self.witness is None else self.witness.to_dict(),
            "group_dp_sensitivity": self.group_dp_sensitivity,
            "group_dp_scale": None if self.group_dp_sensitivity is None else self.group_dp_sensitivity / self.epsilon,
            "audited_loss": None if self.audit is None else self.audit.to_dict()["loss"],
            "theorem": self.theorem,
            "notes": list(self.notes),
        }
        return d

    def explain(self) -> str:
        lines = [f"Wasserstein mechanism: W = {self.W:.10g}, Laplace scale W/epsilon = {self.scale:.10g} (epsilon "
                 f"{self.epsilon:g})"]
        if self.group_dp_sensitivity is not None:
            lines.append(f"group-DP baseline: sensitivity {self.group_dp_sensitivity:.10g}, scale "
                         f"{self.group_dp_sensitivity / self.epsilon:.10g}")
        if self.audit is not None:
            lines.append(f"exact audit of the release: loss {self.audit.loss:.10g} <= epsilon")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


#: The release record of the Wasserstein mechanism: the query-specific record of
#: :mod:`puffgm.mechanisms.query` (one record for one mechanism, held alone by the accountant).
WassersteinRelease = QueryRelease


def group_dp_sensitivity(inst: Instantiation, query, groups: Sequence[Sequence] | None = None) -> float:
    r"""Global sensitivity of :math:`F` in the group-DP framework (the baseline of Theorem 3.3).

    :math:`\max |F(x) - F(x')|` over groups :math:`G` and databases :math:`x, x'` that differ only on :math:`G`,
    by enumeration.  Groups are the sets of correlated records; by default the
    connected components of the instantiation's dependency graph
    (``inst.groups()``: the DAG's components for Bayesian-network priors, all
    nodes for explicit joint tables).
    """
    q = inst.evaluate(query, what="query").reshape(inst.shape)
    groups = inst.groups() if groups is None else [tuple(g) for g in groups]
    best = 0.0
    for g in groups:
        axes = tuple(inst.axis[n] for n in g)
        spread = q.max(axis=axes) - q.min(axis=axes)
        best = max(best, float(np.max(spread)))
    return best


def calibrate_wasserstein(inst: Instantiation, query, *, epsilon: float, groups=None,
                          audit: bool = True) -> WassersteinCalibration:
    r"""Algorithm 1 of Song et al.: :math:`W = \sup W_\infty(\mu_i, \mu_j)`, Laplace scale :math:`W / \epsilon`.

    Parameters
    ----------
    inst : Instantiation
        :math:`(S, Q, \Theta)` over a small database.
    query : callable or array
        The scalar query F (``F(assignment) -> float`` or a table of shape ``inst.shape``).
    epsilon : float
    groups : sequence of node sets, optional
        Groups of correlated records for the group-DP comparison (default
        ``inst.groups()``).
    audit : bool
        Also run the exact Laplace audit of the calibrated release.

    Returns
    -------
    WassersteinCalibration
        :math:`W`, the Laplace scale :math:`W / \epsilon`, the witness pair and the exact audit of the release.

    Notes
    -----
    :math:`W = 0` (the query's law does not depend on any secret) gives scale 0: the
    query is released exactly and the audit confirms loss 0.

    Examples
    --------
    >>> from puffgm.framework.cautionary import flu_clique
    >>> inst, count = flu_clique()
    >>> cal = calibrate_wasserstein(inst, count, epsilon=1.0)
    >>> cal.W, cal.group_dp_sensitivity
    (2.0, 4.0)
    """
    epsilon = check_positive_finite(epsilon, "epsilon", "calibrate_wasserstein")
    q = inst.evaluate(query, what="query")
    if q.ndim != 1 or not np.all(np.isfinite(q)):
        raise AuditError("The Wasserstein mechanism needs a finite scalar query.")
    per_pair, best, witness = [], 0.0, None
    for t, a, b, (va, la), (vb, lb) in pair_laws(inst, lambda cond: grouped_law(cond, q)):
        w = w_inf(va, np.exp(la), vb, np.exp(lb))
        per_pair.append((t, (a.name, b.name), w))
        if witness is None or w > best:
            best, witness = w, Witness(prior=t, pair=(a.name, b.name))
    gs = group_dp_sensitivity(inst, q, groups)
    scale = best / epsilon
    notes = list(inst.notes)
    result = None
    if audit:
        if scale > 0:
            result = audit_laplace(inst, q, scale)
        else:
            notes.append("W = 0: the query's law does not depend on any secret; it is released without noise.")
    if result is not None and result.loss > epsilon * (1 + 1e-9):
        raise AuditError(
            f"The exact audit of the calibrated Wasserstein release gives loss {result.loss:.6g} > epsilon "
            f"{epsilon:g}; refusing to calibrate (Theorem 3.2 should prevent this: please report it)."
        )
    if best > gs + 1e-12:  # would contradict Theorem 3.3
        notes.append(f"W = {best} exceeds the group-DP sensitivity {gs} (groups do not cover all correlations).")
    return WassersteinCalibration(
        epsilon=epsilon, W=best, scale=scale, witness=witness, per_pair=tuple(per_pair),
        skipped=inst.skipped, group_dp_sensitivity=gs, audit=result, notes=tuple(notes),
    )


def release_wasserstein(calibration: WassersteinCalibration, true_value: float, random_state=None, *,
                        accountant=None, label: str | None = None) -> QueryRelease:
    r"""Release :math:`F(D) + \mathrm{Lap}(W / \epsilon)` (secure OpenDP noise by default).

    Parameters
    ----------
    calibration : WassersteinCalibration
    true_value : float
        The exact answer F(D).
    random_state : None, int or numpy Generator
        None (default) uses OpenDP's secure sampler; a seed gives reproducible, not-for-production noise.
    accountant : PrivacyAccountant, optional
        Charged before any noise is drawn; it holds the release only alone (no composition theorem
        covers a release calibrated for one query by its exact laws).
    label : str, optional
        The release's name in the accountant's ledger.

    Returns
    -------
    QueryRelease
        The query-specific release record (:data:`WassersteinRelease`).
    """
    if not isinstance(calibration, WassersteinCalibration):
        raise ParameterError(f"release_wasserstein needs a WassersteinCalibration (from calibrate_wasserstein); "
                             f"got {type(calibration).__name__}.")
    noise = resolve_noise(random_state)
    v = float(true_value)
    if not math.isfinite(v):
        raise ParameterError("The query answer must be finite.")
    planned = QueryRelease(value=None, calibration=calibration, secure=noise.secure, noise=noise.description)

    def draw():
        return v if calibration.scale == 0 else float(noise.laplace(v, calibration.scale))

    return make_release(planned, draw, accountant=accountant, label=label)
