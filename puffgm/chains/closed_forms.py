r"""The closed-form a(b)-influence curve of a binary stationary chain, checked against the exact one.

Binary stationary chain (Bai, He, Gu, Kifer and Maeng, Example 6.1 / Theorem 8)
------------------------------------------------------------------------------
Transition matrix :math:`P = \begin{pmatrix} p & 1-p \\ 1-q & q \end{pmatrix}`, :math:`0 < p, q < 1`, started from its
stationary law :math:`\pi = ((1-q), (1-p)) / (2-p-q)`; :math:`\lambda = p + q - 1`.  The paper's
closed form (appendix B version, with absolute values) is

$$
a^*(b) = \left|\log \frac{\pi_s + \lambda^{d_L} (1-\pi_s)}{\pi_s - \lambda^{d_L} \pi_s}\right|
  + \left|\log \frac{\pi_s + \lambda^{d_R} (1-\pi_s)}{\pi_s - \lambda^{d_R} \pi_s}\right|,
$$

:math:`s = 0` if :math:`q > p` else 1, :math:`d_L = \lfloor (b+1)/2 \rfloor`, :math:`d_R = \lceil (b+1)/2 \rceil`.

The *general* computation (:func:`binary_chain_curve_exact`) takes the same
quilt-based definition the library uses everywhere: for the quilt
:math:`\{X_{i-d_L}, X_{i+d_R}\}` (:math:`d_L + d_R - 1 = \mathrm{card}(X_N) \le b`) the exact max-influence is

$$
e(d_L, d_R) = \max_{(x, x')} \left[\max_l \log \frac{P^{d_L}[x, l]}{P^{d_L}[x', l]}
  + \max_r \log \frac{P^{d_R}[x, r]}{P^{d_R}[x', r]}\right]
$$

over ordered value pairs :math:`(x, x')` (the two quilt nodes are independent given :math:`X_i`, and the stationary
two-state chain is reversible), and :math:`a(b) = \min_{d_L + d_R - 1 \le b} e(d_L, d_R)`.  The
:math:`d`-step matrices are products of non-negative matrices (no cancellation), and
the logs are taken of them directly.

Where the closed form fails (checked on a grid covering the whole open square,
see ``tests/gaussian/test_curves_closed_forms.py`` and ``docs/curves.md``):

1. The main-text version of Theorem 8 (section 6.3) has no absolute values.
   When :math:`\lambda < 0` (:math:`p + q < 1`) and :math:`d_L` or :math:`d_R` is odd, :math:`\lambda^d < 0` and its log
   terms are *negative*: it understates the leakage (a privacy bug), and can
   even be negative.
2. The appendix version (absolute values) adds |.| of the two sides
   separately, while the worst ordered value pair must be the same for both
   sides: when :math:`\lambda < 0` and :math:`d_L, d_R` have different parities (:math:`b` even) the two
   signed terms disagree and the closed form overstates the leakage.
3. The "balanced split" (midpoint convexity) is not optimal when :math:`\lambda < 0`:
   the log-ratio is not convex in :math:`d` (odd :math:`d` leaks more than even :math:`d` at the same
   :math:`|\lambda|^d`), so an unbalanced split with two even distances can leak less
   (e.g. :math:`b = 5`: (2, 4) beats (3, 3)); the closed form is then not tight.
4. Floating point: for :math:`p, q` close to 1, :math:`1 - \lambda^d` cancels catastrophically
   and the closed form evaluated as written loses digits (it can land on
   either side of the truth, or divide by zero).

The appendix form is never below the exact value mathematically (items 2-3
only make it larger), but items 1 and 4 can make the *evaluated* closed form
understate, so :func:`binary_chain_curve` always returns the general exact
computation and records in its notes where the closed form would differ.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from puffgm.core.curve import InfluenceCurve
from puffgm.core.validation import check_positive_finite, check_positive_int
from puffgm.exceptions import ParameterError

__all__ = [
    "stationary_distribution",
    "theorem8_curve",
    "binary_chain_curve_exact",
    "binary_chain_curve",
    "closed_form_disagreement",
]

THEOREM8 = "Bai-He-Gu-Kifer-Maeng Theorem 8 (binary stationary chain, Example 6.1)"


def _check_pq(p, q, where):
    p = check_positive_finite(p, "p", where)
    q = check_positive_finite(q, "q", where)
    for name, v in (("p", p), ("q", q)):
        if not v < 1:
            raise ParameterError(f"The '{name}' parameter of {where} must be in the open interval (0, 1). Got {v!r} "
                                 "instead.")
    return p, q


def stationary_distribution(p: float, q: float) -> tuple:
    r"""The stationary law :math:`(\pi_0, \pi_1) = (1-q, 1-p) / (2-p-q)` of the binary chain.

    Its transition matrix is :math:`P = \begin{pmatrix} p & 1-p \\ 1-q & q \end{pmatrix}`.
    """
    p, q = _check_pq(p, q, "stationary_distribution")
    s = (1 - q) + (1 - p)
    return ((1 - q) / s, (1 - p) / s)


def theorem8_curve(p: float, q: float, max_b: int, *, absolute: bool = True) -> np.ndarray:
    r"""Theorem 8's closed form evaluated as written, for :math:`b = 1, \dots,` ``max_b``.

    ``absolute=True`` is the appendix-B statement (:math:`|\log|` terms); ``absolute=False``
    the main-text statement (section 6.3), which understates when :math:`\lambda < 0`.
    Returns a float array (may contain inf or negative values: use
    :func:`binary_chain_curve` for a safe curve).
    """
    p, q = _check_pq(p, q, "theorem8_curve")
    max_b = check_positive_int(max_b, "max_b", "theorem8_curve")
    pi0, pi1 = stationary_distribution(p, q)
    lam = p + q - 1
    pi = pi0 if q > p else pi1
    b = np.arange(1, max_b + 1)
    dl = (b + 1) // 2
    dr = b + 1 - dl
    out = np.empty(max_b)
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in range(max_b):
            terms = []
            for d in (dl[k], dr[k]):
                ld = lam ** int(d)
                t = math.log((pi + ld * (1 - pi)) / (pi - ld * pi)) if pi - ld * pi > 0 else math.inf
                terms.append(abs(t) if absolute else t)
            out[k] = terms[0] + terms[1]
    return out


def _log_powers(p, q, dmax):
    """log P^d for d = 1..dmax, shape (dmax, 2, 2), by repeated products of non-negative matrices."""
    P = np.array([[p, 1 - p], [1 - q, q]])
    out = np.empty((dmax, 2, 2))
    M = P.copy()
    for d in range(dmax):
        if d:
            M = M @ P
            M /= M.sum(axis=1, keepdims=True)  # stay stochastic (rounding only)
        out[d] = np.log(M)
    return out


def binary_chain_curve_exact(p: float, q: float, max_b: int) -> tuple:
    r"""Exact quilt-based :math:`a(b)` of the stationary binary chain (long chain, middle node).

    Returns ``(a, splits)``: a float array for :math:`b = 1, \dots,` ``max_b`` and the (dL, dR)
    attaining each point.
    """
    p, q = _check_pq(p, q, "binary_chain_curve_exact")
    max_b = check_positive_int(max_b, "max_b", "binary_chain_curve_exact")
    L = _log_powers(p, q, max_b)
    # m[d-1, pair] = max_l log P^d[x, l] - log P^d[x', l] for pair (x, x') = (0, 1), (1, 0)
    diff01 = L[:, 0, :] - L[:, 1, :]
    m = np.stack([diff01.max(axis=1), (-diff01).max(axis=1)], axis=1)
    a = np.full(max_b, math.inf)
    splits: list[tuple[int, int] | None] = [None] * max_b
    best, best_split = math.inf, None
    for b in range(1, max_b + 1):
        # splits with card(X_N) = dL + dR - 1 = b exactly; smaller ones already seen
        for dl in range(1, b + 1):
            dr = b + 1 - dl
            e = float(np.max(m[dl - 1] + m[dr - 1]))
            if e < best - 1e-15:
                best, best_split = e, (dl, dr)
        a[b - 1] = max(best, 0.0)
        splits[b - 1] = best_split
    return a, tuple(splits)


def closed_form_disagreement(p: float, q: float, max_b: int, *, absolute: bool = True, tol: float = 1e-9) -> dict:
    """Compare Theorem 8 with the exact curve at (p, q).

    Returns a dict with ``max_under`` (largest amount by which the closed form is
    below the exact value: a privacy bug where > tol), ``max_over`` (how much it
    overstates), and the b values concerned.
    """
    exact, _ = binary_chain_curve_exact(p, q, max_b)
    closed = theorem8_curve(p, q, max_b, absolute=absolute)
    with np.errstate(invalid="ignore"):
        diff = closed - exact
    diff = np.where(np.isnan(diff), np.inf, diff)
    scale = np.maximum(1.0, np.abs(exact))
    under = np.flatnonzero(diff < -tol * scale) + 1
    over = np.flatnonzero(diff > tol * scale) + 1
    return {
        "p": p, "q": q,
        "max_under": float(max(0.0, -np.min(diff))),
        "max_over": float(max(0.0, np.max(diff))),
        "under_b": under.tolist(),
        "over_b": over.tolist(),
    }


def binary_chain_curve(p: float, q: float, max_b: int = 50, *, length: int | None = None) -> InfluenceCurve:
    r"""The a(b)-influence curve of Example 6.1, safe: the exact quilt-based computation.

    Theorem 8's closed form is evaluated alongside; where it disagrees with the
    exact value (see the module docstring) the exact value is used and the
    notes say so.  ``length`` (:math:`T`) is the chain length; the curve assumes
    :math:`T \ge 2\, \mathrm{max\_b} + 1` so that the middle node sees both quilt nodes
    (:math:`a(T) = 0` is the trivial point).
    """
    exact, splits = binary_chain_curve_exact(p, q, max_b)
    T = length if length is not None else 2 * max_b + 1
    T = check_positive_int(T, "length", "binary_chain_curve")
    if T < 2 * max_b + 1:
        raise ParameterError(
            "binary_chain_curve assumes a long chain: "
            f"length must be >= 2 * max_b + 1 = {2 * max_b + 1}. Got {T} instead."
        )
    closed = theorem8_curve(p, q, max_b)
    notes = []
    with np.errstate(invalid="ignore"):
        d = closed - exact
    d = np.where(np.isnan(d), np.inf, d)
    under = np.flatnonzero(d < -1e-9 * np.maximum(1, exact)) + 1
    over = np.flatnonzero(d > 1e-9 * np.maximum(1, exact)) + 1
    if under.size:
        notes.append(f"Theorem 8's closed form understates a(b) at b = {under.tolist()[:10]} (numerical "
                     "cancellation); the exact value is used")
    if over.size:
        notes.append(f"Theorem 8's closed form overstates a(b) at b = {over.tolist()[:10]} (not tight); "
                     "the exact value is used")
    wit = tuple(("X_i", (f"X_(i-{s[0]})", f"X_(i+{s[1]})")) for s in splits)
    fp = hashlib.sha256(f"binary-chain|{p!r}|{q!r}|{T}".encode()).hexdigest()[:16]
    return InfluenceCurve(b=range(1, max_b + 1), a=exact.tolist(), witnesses=wit, n_entries=T,
                          method="binary-chain-exact", fingerprint=fp,
                          theorem=THEOREM8 + ", checked by the exact quilt computation",
                          notes=tuple(notes), details={"closed_form": tuple(closed.tolist())})
