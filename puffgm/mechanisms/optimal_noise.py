r"""Optimal additive noise for one sum query: a linear program under the exact Pufferfish constraints.

For a sum query with grid sum :math:`G` on :math:`0, \dots, n-1` (:mod:`puffgm.core.query`) and the
conditional laws :math:`p_a(g) = P(G = g \mid s_a, \theta)` of every secret and prior
(:class:`puffgm.mechanisms.query.QueryLaws`), the mechanism :math:`G + Z` with noise :math:`Z`
on the integers, independent of the data, is :math:`\epsilon`-Pufferfish private iff for
every audited pair :math:`(a, b)`, both directions, and every output :math:`y`,

$$
q_a(y) = \sum_k p_a(y - k)\, z_k \le e^{\epsilon} \sum_k p_b(y - k)\, z_k = e^{\epsilon} q_b(y),
$$

with :math:`z_k = P(Z = k)` (Kifer and Machanavajjhala, Definition 3.1).  Every
constraint is linear in :math:`z`, so the least-error noise is a linear program, as for
differential privacy, where its solution is the staircase mechanism (Geng and
Viswanath, "The Optimal Noise-Adding Mechanism in Differential Privacy", IEEE
Trans. Inf. Theory 62(2), 2016).  Here the "sensitivity" is replaced by the
conditional laws of Song, Wang and Chaudhuri ("Pufferfish Privacy Mechanisms for
Correlated Data", SIGMOD 2017, arXiv:1603.03977, section 3).

**The program.**  Unknowns :math:`z_k` for :math:`|k| \le K`; beyond, geometric tails
:math:`z_{K+j} = z_K r^j` and :math:`z_{-K-j} = z_{-K} r^j` (:math:`j \ge 1`) with one ratio :math:`r \in (0, 1)`.
The outputs :math:`y` in the window :math:`-K-(n-1), \dots, K+(n-1)` give one linear constraint each
(the tails enter the coefficients of :math:`z_{\pm K}` in closed form).  Beyond the window
every term is in one tail: for :math:`y \ge K + n - 1`,
:math:`q_a(y) = z_K r^{y-K} M_a^+(r)` with :math:`M_a^+(r) = \sum_g p_a(g) r^{-g}`, and for
:math:`y \le -K-(n-1)`, :math:`q_a(y) = z_{-K} r^{-K-y} M_a^-(r)` with :math:`M_a^-(r) = \sum_g p_a(g) r^g`.
So all the outputs in the tails reduce to one **tail condition** on :math:`r` per pair:

$$
\left|\log M_a^+(r) - \log M_b^+(r)\right| \le \epsilon \quad \text{and} \quad
\left|\log M_a^-(r) - \log M_b^-(r)\right| \le \epsilon
$$

(independent of :math:`z`; :func:`tail_losses`).  It is the limit :math:`w \to \pm\infty` of the loss
of the Laplace mechanism at scale :math:`-1/\log r`, so it holds at the tail ratio
:math:`r^* = e^{-1/b^*}` of the optimal Laplace scale :math:`b^*`.  The objective is
:math:`\mathbb{E}|Z| = \sum |k| z_k + (z_K + z_{-K}) \sum_{j \ge 1} (K + j) r^j` (or :math:`\mathbb{E}[Z^2]`),
the constraint :math:`\sum z_k + (z_K + z_{-K}) r / (1 - r) = 1` makes :math:`z` a law; the tail sums
are in closed form.

**Laplace is feasible.**  The discrete Laplace law :math:`z_k \propto (r^*)^{|k|}` is
the :math:`\mathrm{Laplace}(b^*)` density at the integers, so its output laws are the Laplace
mixtures of :func:`puffgm.mechanisms.query.laplace_losses` at integer outputs:
its loss is at most that of :math:`\mathrm{Laplace}(b^*)`, hence at most :math:`\epsilon`, for every :math:`K`.
Its :math:`\mathbb{E}|Z| = 2 r / (1 - r^2) = 1 / \sinh(1/b^*) < b^*`, so the optimum of the program
never has a larger expected error than the optimal Laplace scale.

**Choice of K and r.**  :math:`K = \lceil b^* \log(1/\mathrm{tail\_tol}) \rceil`: the Laplace mass beyond
:math:`K` is ``tail_tol``.  For :math:`r`: the tail loss is 0 at :math:`r = 1` and grows as :math:`r` falls on every
instance seen, so the smallest admissible ratio :math:`r_{\min} = e^{-u_{\max}}` is found by
bisection on :math:`u = -\log r` (each candidate :math:`r` is checked again before its program
is solved).  The program is solved at :math:`u = f u_{\max}` for :math:`f` on a grid
(:attr:`OptimalNoiseOptions.r_grid`) and at the :math:`f` of :math:`r^*` (so the result is not
worse than discrete Laplace at :math:`b^*`, up to the margin), then a golden-section search refines :math:`f`
around the best grid point.  The result reports :math:`K`, :math:`r` and every (:math:`r`, value) tried.

**Solving.**  HiGHS through :func:`scipy.optimize.linprog`, by constraint
generation: the program starts with the pairs that bind for the discrete Laplace
law, and after each solve every pair is checked in log space; the violated ones
join.  Columns are scaled by :math:`r^{|k|}` (:math:`z_k = r^{|k|} x_k`, so :math:`x` is of order one)
and each constraint row is divided by its largest coefficient, computed in log
space (the conditional laws hold masses like :math:`10^{-300}`, and LP tolerances are
absolute).  The LP's feasibility is never trusted.

**Exact audit.**  :func:`noise_losses` recomputes the loss of :math:`G + Z` from the
conditional laws and the noise law, in log space: every output of the window by a
log-space convolution, and the tails in closed form (the ratio is constant
beyond the window), so nothing is truncated.  The program is solved at
:math:`\epsilon` - margin; if the audited loss exceeds :math:`\epsilon` - ``AUDIT_GUARD`` the margin
grows tenfold and the program is solved again, and as a last resort the
discrete Laplace law at the optimal Laplace scale (audited too) is returned.
A law whose audited loss exceeds :math:`\epsilon` is never returned.

**Sampling.**  :func:`release_optimal_noise` samples exactly the reported law:
the float probabilities are dyadic rationals, the tail masses :math:`z_{\pm K} r / (1 - r)`
rationals, so an inverse CDF on exact integer weights with a uniform integer
from the operating system's cryptographic generator (Python's ``secrets``)
picks the centre value or a tail, and a tail offset is a geometric count of
exact :math:`\mathrm{Bernoulli}(r)` trials (:math:`r` is a dyadic rational too).  The law sampled is
proportional to the law audited; the audit itself is floating-point arithmetic
(log-sum-exps, relative error of a few ulps per term), which AUDIT_GUARD covers.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from puffgm.core.accuracy import Accuracy, check_alpha, integer_half_width
from puffgm.core.laws import QueryLaws
from puffgm.core.noise import resolve_noise
from puffgm.core.release import jsonable, make_release
from puffgm.core.validation import check_positive_finite
from puffgm.core.witness import Witness
from puffgm.exceptions import AuditError, NumericalError, ParameterError, TimeLimitError
from puffgm.mechanisms.query import (
    ExactLoss,
    QueryRelease,
    answer_in_range,
    exact_stacked,
    optimal_laplace_of,
    wasserstein_of,
    worst_loss,
)

__all__ = [
    "NoiseLaw", "OptimalNoiseOptions", "OptimalNoise", "OptimalNoiseRelease", "optimal_noise_of",
    "release_optimal_noise", "noise_losses", "noise_loss_of", "tail_losses", "discrete_laplace", "sample_noise",
    "OBJECTIVES", "AUDIT_GUARD", "THEOREM_OPTIMAL_NOISE", "SAMPLER",
]

#: The objectives: expected absolute error, expected squared error.
OBJECTIVES = ("abs", "square")

#: Audited losses must be at most epsilon - AUDIT_GUARD: the audit's own floating-point error
#: (log-sum-exps of at most a few thousand terms) is far below it.
AUDIT_GUARD = 1e-10
#: Largest 1/b* (b* the optimal Laplace scale in grid units) the program takes: its noise puts mass
#: about exp(-1/b*) off zero, and exp(-300) keeps the squares of those masses within the double range.
MAX_TAIL_EXPONENT = 300.0

THEOREM_OPTIMAL_NOISE = ("least-error additive noise by linear programming under the exact Pufferfish "
                         "constraints (Kifer and Machanavajjhala, Definition 3.1; staircase analogue of "
                         "Geng and Viswanath 2016), audited exactly from the conditional laws of F")

SAMPLER = ("exact inverse CDF on integer weights over the OS cryptographic RNG (Python secrets); "
           "geometric tails by exact Bernoulli(r) trials")


# ------------------------------------------------------------------ the noise law


def _tail_sums(K: int, r: float):
    """sum_{j>=1} r^j, sum_{j>=1} (K+j) r^j and sum_{j>=1} (K+j)^2 r^j, in closed form."""
    if r <= 0.0:
        return 0.0, 0.0, 0.0
    s0 = r / (1.0 - r)
    s1 = r / (1.0 - r) ** 2
    s2 = r * (1.0 + r) / (1.0 - r) ** 3
    return s0, K * s0 + s1, K * K * s0 + 2 * K * s1 + s2


@dataclass(frozen=True)
class NoiseLaw:
    r"""A law on the integers: probabilities on :math:`-K, \dots, K` and geometric tails of ratio :math:`r`.

    :math:`P(Z = k)` = ``probabilities[k + K]`` for :math:`|k| \le K`, :math:`P(Z = K + j) = P(Z = K)\, r^j`
    and :math:`P(Z = -K - j) = P(Z = -K)\, r^j` for :math:`j \ge 1` (:math:`r = 0`: no tails), on both sides.

    Attributes
    ----------
    probabilities : ndarray (2K + 1,)
        Non-negative; with the tails they sum to one (up to rounding).
    tail_ratio : float
        r in [0, 1).
    """

    probabilities: np.ndarray
    tail_ratio: float

    def __post_init__(self):
        p = np.asarray(self.probabilities, dtype=float)
        r = float(self.tail_ratio)
        if p.ndim != 1 or p.size % 2 != 1 or not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
            raise ParameterError("A noise law needs 2K+1 finite, non-negative probabilities with a positive sum.")
        if not 0.0 <= r < 1.0:
            raise ParameterError(f"The tail ratio of a noise law must lie in [0, 1). Got {r!r} instead.")
        object.__setattr__(self, "probabilities", p)
        object.__setattr__(self, "tail_ratio", r)

    @property
    def half_width(self) -> int:
        """K: the probabilities are those of -K..K."""
        return (self.probabilities.size - 1) // 2

    @property
    def values(self) -> np.ndarray:
        """The integers -K..K."""
        K = self.half_width
        return np.arange(-K, K + 1)

    def tail_masses(self) -> tuple:
        """(P(Z < -K), P(Z > K))."""
        s0, _, _ = _tail_sums(self.half_width, self.tail_ratio)
        return float(self.probabilities[0] * s0), float(self.probabilities[-1] * s0)

    def total(self) -> float:
        """The total mass (1 for a normalised law)."""
        return float(self.probabilities.sum() + sum(self.tail_masses()))

    def normalised(self) -> NoiseLaw:
        """The same law scaled to total mass one."""
        return NoiseLaw(self.probabilities / self.total(), self.tail_ratio)

    def moment(self, power: int) -> float:
        r""":math:`\mathbb{E}|Z|` (power 1) or :math:`\mathbb{E}[Z^2]` (power 2) of the normalised law.

        The tails are summed in closed form.
        """
        K, p = self.half_width, self.probabilities
        tail = _tail_sums(K, self.tail_ratio)[power]
        return float((np.abs(self.values) ** power * p).sum() + (p[0] + p[-1]) * tail) / self.total()

    def mean(self) -> float:
        r""":math:`\mathbb{E}[Z]` of the normalised law (the release's bias; the program does not force it to 0)."""
        K, p = self.half_width, self.probabilities
        _, tail, _ = _tail_sums(K, self.tail_ratio)
        return float((self.values * p).sum() + (p[-1] - p[0]) * tail) / self.total()

    def log_mass(self, k) -> np.ndarray:
        r""":math:`\log P(Z = k)` (up to the common normalisation) for integers :math:`k`, ``-inf`` for 0."""
        k = np.asarray(k, dtype=np.int64)
        K, p = self.half_width, self.probabilities
        lr = math.log(self.tail_ratio) if self.tail_ratio > 0 else -math.inf
        with np.errstate(divide="ignore", invalid="ignore"):
            lp = np.log(p)
            inner = lp[np.clip(k, -K, K) + K]
            excess = np.abs(k) - K
            tail = np.where(excess > 0, inner + np.where(excess > 0, excess, 0) * lr, inner)
        return np.where(np.isnan(tail), -np.inf, tail)

    def to_dict(self) -> dict:
        """``values``, ``probabilities``, ``tail_ratio`` (grid units), and ``tail_masses``."""
        return {"values": self.values.tolist(), "probabilities": self.probabilities.tolist(),
                "tail_ratio": self.tail_ratio, "tail_masses": list(self.tail_masses())}


def discrete_laplace(half_width: int, tail_ratio: float) -> NoiseLaw:
    r"""The discrete Laplace law :math:`P(Z = k) \propto r^{|k|}`, as a :class:`NoiseLaw`.

    With :math:`r = e^{-1/b}` it is the Laplace(:math:`b`) density at the integers;
    :math:`\mathbb{E}|Z| = 2r / (1 - r^2) = 1 / \sinh(1/b)`.
    """
    r = float(tail_ratio)
    k = np.arange(-half_width, half_width + 1)
    return NoiseLaw(np.exp(np.abs(k) * math.log(r)), r).normalised()


# ------------------------------------------------------------------ the exact audit


def _log_outputs(rows: np.ndarray, law: NoiseLaw):
    """log q(y) = log sum_g p(g) P(Z = y - g) for every row and every y of the window, and the window."""
    K, n = law.half_width, rows.shape[1]
    ys = np.arange(-K - n + 1, K + n)
    vmin = ys[0] - (n - 1)
    lz = law.log_mass(np.arange(vmin, ys[-1] + 1))
    lq = np.full((rows.shape[0], ys.size), -np.inf)
    with np.errstate(invalid="ignore"):
        for g in range(n):
            lq = np.logaddexp(lq, rows[:, g:g + 1] + lz[ys - g - vmin][None, :])
    return lq, ys


def _log_mgf(rows: np.ndarray, log_r: float):
    """log M^+(r) = log sum_g p(g) r^{-g} and log M^-(r) = log sum_g p(g) r^g of every row."""
    g = np.arange(rows.shape[1])
    with np.errstate(invalid="ignore"):
        up = np.logaddexp.reduce(rows - g * log_r, axis=1)
        down = np.logaddexp.reduce(rows + g * log_r, axis=1)
    return up, down


def _directed(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x - y with -inf - -inf (both outputs impossible) as -inf and a finite x over -inf as +inf."""
    with np.errstate(invalid="ignore"):
        d = x - y
    return np.where(np.isnan(d), -np.inf, d)


def tail_losses(rows: np.ndarray, pairs: np.ndarray, tail_ratio: float) -> np.ndarray:
    r"""The tail condition: the privacy loss of :math:`G + Z` at outputs beyond the window, for each pair.

    For :math:`y \ge K + n - 1` every noise value :math:`y - g` is in the right tail, so
    :math:`q_a(y) / q_b(y) = M_a^+(r) / M_b^+(r)` with :math:`M^+(r) = \sum_g p(g)\, r^{-g}`; on the
    left :math:`M^-(r) = \sum_g p(g)\, r^g`.  The loss there is

    $$
    \max\left(\left|\log M_a^+(r) - \log M_b^+(r)\right|, \left|\log M_a^-(r) - \log M_b^-(r)\right|\right),
    $$

    whatever the noise law (as long as its tails have ratio r and positive mass).

    Parameters
    ----------
    rows : ndarray (n_rows, n)
        Log-probabilities of the conditional laws on 0..n-1.
    pairs : ndarray of int (n_pairs, 2)
    tail_ratio : float
        r in (0, 1).

    Returns
    -------
    ndarray of shape (n_pairs,)
        The largest loss beyond the window, for each pair.
    """
    return _tail_losses_log(rows, pairs, math.log(tail_ratio))


def _tail_losses_log(rows: np.ndarray, pairs: np.ndarray, log_ratio: float) -> np.ndarray:
    """:func:`tail_losses` from log r (no exp/log round trip, so r may lie below the float range)."""
    up, down = _log_mgf(rows, log_ratio)
    a, b = pairs[:, 0], pairs[:, 1]
    both = np.stack([_directed(up[a], up[b]), _directed(up[b], up[a]),
                     _directed(down[a], down[b]), _directed(down[b], down[a])])
    return both.max(axis=0)


def _directed_losses(rows: np.ndarray, ordered: np.ndarray, law: NoiseLaw):
    """For each ordered pair (a, b): max over outputs of log q_a(y) - log q_b(y), and the output."""
    lq, ys = _log_outputs(rows, law)
    d = _directed(lq[ordered[:, 0]], lq[ordered[:, 1]])
    outputs = [ys.astype(float)]
    left, right = law.tail_masses()
    if law.tail_ratio > 0:
        up, down = _log_mgf(rows, math.log(law.tail_ratio))
        a, b = ordered[:, 0], ordered[:, 1]
        if right > 0:
            d = np.concatenate([d, _directed(up[a], up[b])[:, None]], axis=1)
            outputs.append(np.array([np.inf]))
        if left > 0:
            d = np.concatenate([d, _directed(down[a], down[b])[:, None]], axis=1)
            outputs.append(np.array([-np.inf]))
    k = np.argmax(d, axis=1)
    return d[np.arange(len(k)), k], np.concatenate(outputs)[k]


def noise_losses(rows: np.ndarray, pairs: np.ndarray, law: NoiseLaw):
    r"""Exact Pufferfish loss of :math:`G + Z` for each pair of conditional laws, and where it is attained.

    :math:`\mathrm{loss}(a, b) = \sup_y |\log q_a(y) / q_b(y)|` over all integer outputs :math:`y`, with
    :math:`q_a(y) = \sum_g p_a(g)\, P(Z = y - g)`.  The outputs of the window
    :math:`-K-(n-1), \dots, K+(n-1)` are computed by a log-space convolution; beyond it the
    ratio is the constant of :func:`tail_losses` (reported at output :math:`\pm\infty`), so
    the supremum is exact: nothing is truncated.

    Parameters
    ----------
    rows : ndarray (n_rows, n)
        Log-probabilities of the conditional laws on the grid 0..n-1.
    pairs : ndarray of int (n_pairs, 2)
    law : NoiseLaw

    Returns
    -------
    loss : ndarray (n_pairs,)
        The exact loss of G + Z for each ordered pair.
    where : ndarray (n_pairs,)
        The maximising output in grid units (+-inf for the tails).
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    ordered = np.concatenate([pairs, pairs[:, ::-1]])
    d, where = _directed_losses(rows, ordered, law)
    m = len(pairs)
    second = d[m:] > d[:m]
    loss = np.where(second, d[m:], d[:m])
    return np.maximum(loss, 0.0), np.where(second, where[m:], where[:m])


def noise_loss_of(laws: QueryLaws, law: NoiseLaw):
    """Exact loss of F + Z over the class (Z in grid units).

    Returns
    -------
    ExactLoss
        (loss, witness, per_prior); witness is a :class:`~puffgm.core.witness.Witness` (prior, node, pair, output in
        grid units, may be +-inf).
    """
    rows, pairs, labels = exact_stacked(laws)
    if not len(pairs):
        return ExactLoss(0.0, None, (0.0,) * laws.n_priors)
    loss, where = noise_losses(rows, pairs, law)
    return worst_loss(labels, loss, where, laws.n_priors)


# ------------------------------------------------------------------ the linear program


@dataclass(frozen=True)
class OptimalNoiseOptions:
    r"""Settings of :func:`optimal_noise_of` (the defaults suit the bundled networks).

    Attributes
    ----------
    tail_tol : float
        :math:`K = \lceil b^* \log(1/\mathrm{tail\_tol}) \rceil`, :math:`b^*` the optimal Laplace scale
        (grid units): Laplace(:math:`b^*`) puts mass ``tail_tol`` beyond :math:`K`.
    half_width : int, optional
        :math:`K` itself (overrides ``tail_tol``).
    max_half_width : int
        Refuse (ParameterError) when :math:`K` would exceed it: the program has :math:`2K+1` unknowns.
    r_grid : tuple of float
        Fractions :math:`f` of :math:`u_{\max}` (:math:`u = -\log r`) at which the program is solved first.
    refine : int
        Golden-section steps around the best grid point.
    margin : float
        The program is solved at :math:`\epsilon - \mathrm{margin}` (grown tenfold after a failed audit).
    repairs : int
        Solves at a larger margin before falling back to discrete Laplace.
    pairs_per_round : int
        Pairs added to the program per round of constraint generation.
    laplace_scale : float, optional
        The optimal Laplace scale in grid units, if already known (else computed).
    time_limit : float, optional
        Seconds; TimeLimitError beyond.
    """

    tail_tol: float = 1e-4
    half_width: int | None = None
    max_half_width: int = 2000
    r_grid: tuple = (1.0, 0.95, 0.85, 0.7, 0.5)
    refine: int = 4
    margin: float = 1e-7
    repairs: int = 4
    pairs_per_round: int = 8
    laplace_scale: float | None = None
    time_limit: float | None = None


@dataclass
class _Program:
    """The data of the program at one tail ratio: laws, ordered pairs, K, r, the epsilon inside."""

    rows: np.ndarray
    ordered: np.ndarray
    K: int
    r: float
    epsilon: float
    objective: str
    deadline: float | None
    cache: dict = field(default_factory=dict)
    solves: int = 0

    def coef_logs(self, i: int) -> np.ndarray:
        """log of the coefficient of z_k in q_i(y), y in the window, k in -K..K (tails folded in)."""
        if i in self.cache:
            return self.cache[i]
        lp, K, n, lr = self.rows[i], self.K, self.rows.shape[1], math.log(self.r)
        ys = np.arange(-K - n + 1, K + n)
        g = ys[:, None] - np.arange(-K, K + 1)[None, :]
        L = np.where((g >= 0) & (g < n), lp[np.clip(g, 0, n - 1)], -np.inf)
        gs = np.arange(n)
        with np.errstate(invalid="ignore"):
            e = ys[:, None] - K - gs[None, :]           # z_K r^e reaches y from g
            L[:, -1] = np.logaddexp.reduce(np.where(e >= 0, lp[None, :] + e * lr, -np.inf), axis=1)
            e = gs[None, :] - ys[:, None] - K           # z_{-K} r^e reaches y from g
            L[:, 0] = np.logaddexp.reduce(np.where(e >= 0, lp[None, :] + e * lr, -np.inf), axis=1)
        L = L + np.abs(np.arange(-K, K + 1)) * lr       # column scaling z_k = r^{|k|} x_k
        self.cache[i] = L
        return L

    def block(self, a: int, b: int) -> np.ndarray:
        """The constraints q_a(y) <= e^eps q_b(y), one row per y, each divided by its largest term."""
        la, lb = self.coef_logs(a), self.coef_logs(b) + self.epsilon
        m = np.maximum(la.max(axis=1), lb.max(axis=1))
        keep = np.isfinite(m)
        with np.errstate(invalid="ignore"):
            blk = np.exp(la[keep] - m[keep, None]) - np.exp(lb[keep] - m[keep, None])
        blk = np.where(np.isnan(blk), 0.0, blk)
        return blk[(blk > 0).any(axis=1)]               # rows with no positive entry hold for every x >= 0

    def costs(self):
        """Objective and normalisation coefficients on x (tails in closed form)."""
        K, r = self.K, self.r
        ks = np.abs(np.arange(-K, K + 1)).astype(float)
        s0, s_abs, s_sq = _tail_sums(K, r)
        c = ks.copy() if self.objective == "abs" else ks ** 2
        c[0] += s_abs if self.objective == "abs" else s_sq
        c[-1] = c[0]
        e = np.ones(2 * K + 1)
        e[0] += s0
        e[-1] += s0
        scale = np.exp(ks * math.log(r))
        return c * scale, e * scale, scale


def _check_time(deadline):
    if deadline is not None and time.monotonic() > deadline:
        raise TimeLimitError("The time limit passed while solving the optimal-noise program; "
                             "use the optimal Laplace scale (--method optimal-laplace).")


def _linprog(prog: _Program, active: list):
    """Solve the program restricted to the ordered pairs ``active``: (x or None, value, message)."""
    from scipy.optimize import linprog

    _check_time(prog.deadline)
    blocks = [prog.block(*prog.ordered[j]) for j in active]
    A = np.concatenate(blocks) if blocks else np.zeros((0, 2 * prog.K + 1))
    c, e, _ = prog.costs()
    opts = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
    if prog.deadline is not None:
        opts["time_limit"] = max(1.0, prog.deadline - time.monotonic())
    res = linprog(c, A_ub=A if len(A) else None, b_ub=np.zeros(len(A)) if len(A) else None,
                  A_eq=e[None, :], b_eq=[1.0], bounds=(0, None), method="highs", options=opts)
    prog.solves += 1
    if res.status != 0 or res.x is None:
        return None, math.inf, str(res.message)
    return res.x, float(res.fun), str(res.message)


def _law_of(prog: _Program, x: np.ndarray) -> NoiseLaw:
    _, _, scale = prog.costs()
    z = np.clip(x, 0.0, None) * scale
    return NoiseLaw(z, prog.r).normalised()


def _solve_at(prog: _Program, active: list, per_round: int, gen_tol: float):
    """Constraint generation: solve on ``active``, add the violated ordered pairs, until none is.

    Returns (law or None, value, message, active pairs).
    """
    active = list(active)
    while True:
        x, value, msg = _linprog(prog, active)
        if x is None:
            return None, value, msg, active
        law = _law_of(prog, x)
        d, _ = _directed_losses(prog.rows, prog.ordered, law)
        d[active] = -np.inf
        worst = np.argsort(-d)[:per_round]
        new = [int(j) for j in worst if d[j] > prog.epsilon + gen_tol]
        if not new:
            return law, value, msg, active
        active.extend(new)


def _initial_pairs(prog: _Program, count: int) -> list:
    """The ordered pairs that bind most for the discrete Laplace law of ratio r."""
    d, _ = _directed_losses(prog.rows, prog.ordered, discrete_laplace(prog.K, prog.r))
    return [int(j) for j in np.argsort(-d)[:count]]


def _u_max(rows: np.ndarray, pairs: np.ndarray, epsilon: float, u0: float) -> float:
    """The largest u = -log r (smallest r) meeting the tail condition, by bisection from u0."""
    def ok(u):
        return float(_tail_losses_log(rows, pairs, -u).max()) <= epsilon

    lo = min(u0, 40.0)                                  # r < 1e-17: the tails are immaterial
    while not ok(lo):
        lo /= 2.0
        if lo < 1e-12:
            raise AuditError("No tail ratio r < 1 meets the tail condition.")
    hi = lo
    while ok(hi):
        lo, hi = hi, hi * 2.0
        if hi > 40.0:                                   # r < 1e-17: the tails are immaterial
            return lo
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
        if hi - lo <= 1e-12 * hi:
            break
    return lo


# ------------------------------------------------------------------ the search over r


@dataclass(frozen=True)
class _Candidate:
    """A solved program: its tail ratio, objective value, law and solver message."""

    tail_ratio: float
    value: float
    law: NoiseLaw
    message: str


@dataclass
class _Search:
    """The search over f = u / u_max: every evaluation, the best, the active pairs carried along."""

    rows: np.ndarray
    ordered: np.ndarray
    K: int
    u_max: float
    epsilon: float
    objective: str
    opts: OptimalNoiseOptions
    deadline: float | None
    anchor: float = 1.0
    tried: list = field(default_factory=list)
    best: _Candidate | None = None
    active: list = field(default_factory=list)
    solves: int = 0

    def value(self, f: float) -> float:
        r = math.exp(-f * self.u_max)
        if float(tail_losses(self.rows, self.ordered, r).max()) > self.epsilon:
            self.tried.append((r, math.inf))            # the tail condition fails: no law with these tails
            return math.inf
        prog = _Program(self.rows, self.ordered, self.K, r, self.epsilon, self.objective, self.deadline)
        start = self.active or _initial_pairs(prog, self.opts.pairs_per_round)
        law, value, msg, active = _solve_at(prog, start, self.opts.pairs_per_round, self.opts.margin / 10)
        self.solves += prog.solves
        self.tried.append((r, value))
        if law is not None:
            self.active = active
            if self.best is None or value < self.best.value:
                self.best = _Candidate(r, value, law, msg)
        return value


def _search_r(search: _Search):
    """Grid over f in opts.r_grid and the anchor, then golden-section refinement around the best grid point.

    The anchor is the f of r* = e^{-1/b*}, where discrete Laplace at the optimal Laplace scale is feasible:
    the best value found is never above its E|Z| = 1 / sinh(1/b*) (up to the margin).
    """
    grid = sorted({round(float(f), 9) for f in (*search.opts.r_grid, search.anchor) if 0 < f <= 1.0}, reverse=True)
    vals = [search.value(f) for f in grid]
    k = int(np.argmin(vals))
    lo = grid[min(k + 1, len(grid) - 1)]
    hi = grid[max(k - 1, 0)]
    if hi == lo:
        return
    phi = (math.sqrt(5.0) - 1.0) / 2.0
    x1, x2 = hi - phi * (hi - lo), lo + phi * (hi - lo)
    f1, f2 = search.value(x1), search.value(x2)
    for _ in range(max(0, search.opts.refine - 2)):
        if f1 <= f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - phi * (hi - lo)
            f1 = search.value(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + phi * (hi - lo)
            f2 = search.value(x2)


# ------------------------------------------------------------------ the result


@dataclass(frozen=True)
class OptimalNoise:
    r"""The least-error additive noise found for one query and prior class, with its exact audit.

    Noise values and the program's values are in grid units (the integers of
    the grid sum G); ``unit`` converts: an answer F is released as
    :math:`F + Z / \mathrm{unit}`.  Errors are reported in the query's own units.

    Attributes
    ----------
    epsilon : float
    objective : str
        ``"abs"`` (:math:`\mathbb{E}|Z|` minimised) or ``"square"`` (:math:`\mathbb{E}[Z^2]`).
    law : NoiseLaw
        The noise law released (grid units).
    unit : int
        Grid units per query unit.
    loss : float
        The audited Pufferfish loss of :math:`F + Z` (at most :math:`\epsilon`).
    witness : Witness or None
        Where the audited loss is attained (prior, node, pair, output in query units).
    per_prior : tuple of float
        Audited loss per prior.
    half_width, tail_ratio : int, float
        :math:`K` and :math:`r` of the program whose solution is released.
    lp_value : float or None
        The program's optimum (grid units) at ``epsilon_lp``; None for the fallback.
    epsilon_lp : float or None
        The :math:`\epsilon` inside the program (:math:`\epsilon` minus the margin).
    status : str
        The solver's message, or what replaced the program.
    laplace_scale : float
        The optimal Laplace scale (query units) = the expected |error| of Laplace noise at it.
    search : tuple of (float, float)
        Every (:math:`r`, program value) tried (grid units; inf where infeasible).
    solves : int
        Linear programs solved.
    prior, secrets : str
    query : dict
    seconds : dict
    notes : tuple of str
    theorem : str
    """

    epsilon: float
    objective: str
    law: NoiseLaw
    unit: int
    loss: float
    witness: Witness | None
    per_prior: tuple
    half_width: int
    tail_ratio: float
    lp_value: float | None
    epsilon_lp: float | None
    status: str
    laplace_scale: float
    search: tuple = ()
    solves: int = 0
    prior: str = ""
    secrets: str = ""
    query: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)
    notes: tuple = ()
    theorem: str = THEOREM_OPTIMAL_NOISE

    @property
    def expected_abs_error(self) -> float:
        r""":math:`\mathbb{E}|Z| / \mathrm{unit}`: the expected absolute error of the release, in query units."""
        return self.law.moment(1) / self.unit

    @property
    def expected_square_error(self) -> float:
        r""":math:`\mathbb{E}[Z^2] / \mathrm{unit}^2`, in squared query units."""
        return self.law.moment(2) / self.unit ** 2

    @property
    def bias(self) -> float:
        r""":math:`\mathbb{E}[Z] / \mathrm{unit}`: the release's mean error in query units (the law may be skewed)."""
        return self.law.mean() / self.unit

    @property
    def noise(self) -> dict:
        r"""``values`` (grid units, :math:`-K..K`), ``probabilities``, ``tail_ratio`` :math:`r` and ``tail_masses``."""
        return self.law.to_dict()

    @property
    def gain_over_laplace(self) -> float | None:
        """Optimal Laplace scale / expected |error| (> 1: less error than the best Laplace noise)."""
        e = self.expected_abs_error
        return self.laplace_scale / e if e > 0 else None

    def accuracy(self, alpha: float = 0.05) -> tuple:
        r"""The :math:`(1-\alpha)` half-width of the noise :math:`Z / \mathrm{unit}`, from its exact law.

        The least multiple :math:`t` of :math:`1/\mathrm{unit}` with :math:`P(|Z / \mathrm{unit}| \le t) \ge 1 - \alpha`
        (integer_half_width), the geometric tails summed in closed form; one row, ``scale`` None (the law
        is not Laplace).
        """
        a = check_alpha(alpha, "OptimalNoise.accuracy")
        t = integer_half_width(self.law.probabilities, self.law.tail_ratio, a) / self.unit
        return (Accuracy("value", "optimal noise (exact law on a grid)", None, a, t, self.expected_abs_error),)

    def to_dict(self) -> dict:
        """JSON-ready: ``expected_abs_error``, ``noise``, ``unit``, ``loss``, ``half_width``, ``tail_ratio``, ..."""
        return jsonable({
            "method": "optimal-noise", "epsilon": self.epsilon, "objective": self.objective,
            "expected_abs_error": self.expected_abs_error, "expected_square_error": self.expected_square_error,
            "bias": self.bias, "noise": self.noise, "unit": self.unit, "loss": self.loss, "witness": self.witness,
            "per_prior_loss": list(self.per_prior), "half_width": self.half_width, "tail_ratio": self.tail_ratio,
            "lp_value": self.lp_value, "epsilon_lp": self.epsilon_lp, "status": self.status,
            "optimal_laplace_scale": self.laplace_scale, "gain_over_optimal_laplace": self.gain_over_laplace,
            "search": [list(x) for x in self.search], "solves": self.solves, "prior": self.prior,
            "secrets": self.secrets, "query": self.query, "seconds": self.seconds, "notes": list(self.notes),
            "theorem": self.theorem,
        })

    def explain(self) -> str:
        """A few lines: the error beside optimal Laplace, the program (K, r), the audit."""
        g = self.gain_over_laplace
        gain = "" if g is None else f" (x{g:.3g} less than optimal Laplace, scale {self.laplace_scale:.6g})"
        lines = [f"optimal noise ({self.objective} objective): expected |error| {self.expected_abs_error:.6g}{gain}",
                 f"noise on -K..K with K = {self.half_width} grid steps, geometric tails of ratio "
                 f"r = {self.tail_ratio:.8g}; unit {self.unit}; {self.solves} program(s) solved: {self.status}",
                 f"audited loss {self.loss:.10g} <= epsilon {self.epsilon:g}"]
        if self.witness:
            lines.append(f"decided at {self.witness}, output {self.witness.to_dict()['output']}")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


# ------------------------------------------------------------------ the calibration


def _unique(rows: np.ndarray, pairs: np.ndarray):
    """Distinct laws and the distinct pairs of distinct laws between them, in both orders."""
    urows, inv = np.unique(rows, axis=0, return_inverse=True)
    inv = np.asarray(inv).ravel()
    p = np.sort(inv[pairs], axis=1)
    p = np.unique(p[p[:, 0] != p[:, 1]], axis=0).reshape(-1, 2)
    return urows, p, np.concatenate([p, p[:, ::-1]])


def _half_width(b_star: float, opts: OptimalNoiseOptions, epsilon: float) -> int:
    K = opts.half_width
    if K is None:
        K = max(2, int(math.ceil(b_star * math.log(1.0 / opts.tail_tol))))
    if K > opts.max_half_width:
        raise ParameterError(f"The optimal-noise program would need K = {K} > max_half_width = "
                             f"{opts.max_half_width} noise values on each side (the optimal Laplace scale is "
                             f"{b_star:.6g} grid units; epsilon from about {epsilon * K / opts.max_half_width:.2g} "
                             "up fits); use the optimal Laplace scale (--method optimal-laplace).")
    return int(K)


def _check_representable(b_star: float, epsilon: float, unit: int) -> None:
    """Refuse a noise law whose mass off zero, about exp(-1/b*), lies below what doubles can hold."""
    if 1.0 / b_star > MAX_TAIL_EXPONENT:
        raise NumericalError(
            f"epsilon = {epsilon:g} is above what the optimal-noise law can represent in double precision: "
            f"at the optimal Laplace scale {b_star / unit:.3g} its mass off zero is about "
            f"exp(-{1.0 / b_star:.3g}), below exp(-{MAX_TAIL_EXPONENT:g}); epsilon up to about "
            f"{epsilon * MAX_TAIL_EXPONENT * b_star:.3g} works, or use the optimal Laplace scale "
            "(--method optimal-laplace).")


def _laplace_scale(laws: QueryLaws, epsilon: float, opts: OptimalNoiseOptions, deadline) -> float:
    if opts.laplace_scale is not None:
        return float(opts.laplace_scale)
    w, _, _ = wasserstein_of(laws)
    return float(optimal_laplace_of(laws, epsilon=epsilon, upper=w / epsilon, deadline=deadline).scale)


@dataclass
class _Outcome:
    law: NoiseLaw
    loss: ExactLoss
    lp_value: float | None
    epsilon_lp: float | None
    status: str
    notes: list


def _repair(laws, search: _Search, epsilon: float, b_star: float, deadline) -> _Outcome:
    """Audit the best law; on failure re-solve at a tenfold margin, at last fall back to discrete Laplace."""
    opts = search.opts
    assert search.best is not None  # the caller falls back when the program was infeasible
    best = search.best
    r, value, law, msg = best.tail_ratio, best.value, best.law, best.message
    margin, notes = min(opts.margin, epsilon / 2), list[str]()
    for attempt in range(opts.repairs + 1):
        audit = noise_loss_of(laws, law)
        if audit.loss <= epsilon - AUDIT_GUARD:
            return _Outcome(law, audit, value, epsilon - margin, msg, notes)
        notes.append(f"the solution at epsilon - {margin:.1e} audits at {audit.loss:.15g} > epsilon - "
                     f"{AUDIT_GUARD:g}")
        if attempt == opts.repairs:
            break
        margin = min(max(10 * margin, 1e-9), epsilon / 2)
        eps_lp = epsilon - margin
        u = _u_max(search.rows, search.ordered[: len(search.ordered) // 2], eps_lp, -math.log(r))
        r = max(r, math.exp(-u))
        prog = _Program(search.rows, search.ordered, search.K, r, eps_lp, search.objective, deadline)
        law, value, msg, _ = _solve_at(prog, search.active, opts.pairs_per_round, margin / 10)
        search.solves += prog.solves
        if law is None:
            break
    return _fallback(laws, search.K, b_star, epsilon, notes)


def _fallback(laws, K: int, b_star: float, epsilon: float, notes: list) -> _Outcome:
    """Discrete Laplace at (slightly above) the optimal Laplace scale: feasible for the program, audited."""
    for k in range(8):
        law = discrete_laplace(K, math.exp(-1.0 / (b_star * (1.0 + 1e-6 * 10 ** k))))
        audit = noise_loss_of(laws, law)
        if audit.loss <= epsilon - AUDIT_GUARD:
            notes.append("the program's solutions failed the audit or the program was infeasible: discrete "
                         "Laplace at the optimal Laplace scale is released instead")
            return _Outcome(law, audit, None, None, "fallback: discrete Laplace", notes)
    raise AuditError("Neither the optimal-noise program nor discrete Laplace passed the exact audit "
                     f"at epsilon {epsilon:g}.")


def optimal_noise_of(laws: QueryLaws, *, epsilon: float, objective: str = "abs",
                     options: OptimalNoiseOptions | None = None) -> OptimalNoise:
    r"""The least-error additive noise for the query of ``laws`` under exact :math:`\epsilon`-Pufferfish constraints.

    Solves the linear program of the module docstring (unknowns :math:`z_k`, :math:`|k| \le K`,
    geometric tails of ratio :math:`r`; for every pair :math:`(a, b)`, both orders, and every
    output :math:`y`: :math:`\sum_k p_a(y-k)\, z_k \le e^\epsilon \sum_k p_b(y-k)\, z_k`), searching :math:`r`,
    then audits the solution exactly (:func:`noise_losses`) and never returns
    a law whose audited loss exceeds :math:`\epsilon` (Kifer and Machanavajjhala,
    Definition 3.1; Geng and Viswanath 2016 for the differential-privacy
    analogue).

    Parameters
    ----------
    laws : QueryLaws
        Exact conditional laws of the query (``laws.exact``).
    epsilon : float
    objective : {"abs", "square"}
        Minimise :math:`\mathbb{E}|Z|` or :math:`\mathbb{E}[Z^2]`.
    options : OptimalNoiseOptions, optional

    Returns
    -------
    OptimalNoise
        The noise law, its expected error beside optimal Laplace, and its exact audit.

    Raises
    ------
    ParameterError
        Laws not exact, a bad objective, or K beyond ``max_half_width``.
    TimeLimitError
        ``options.time_limit`` passed.
    """
    t0 = time.monotonic()
    eps = check_positive_finite(epsilon, "epsilon", "optimal_noise_of")
    if objective not in OBJECTIVES:
        raise ParameterError(f"The 'objective' parameter of optimal_noise_of must be one of {OBJECTIVES}. "
                             f"Got {objective!r} instead.")
    opts = options or OptimalNoiseOptions()
    if not laws.exact:
        raise ParameterError("Optimal noise needs the exact conditional laws, which were not computed.")
    deadline = None if opts.time_limit is None else t0 + float(opts.time_limit)
    rows, pairs, _ = laws.stacked()
    b_star = _laplace_scale(laws, eps, opts, deadline)
    t1 = time.monotonic()
    common: dict[str, Any] = dict(epsilon=eps, objective=objective, unit=laws.query.unit,
                                  laplace_scale=b_star / laws.query.unit, prior=laws.prior_name,
                                  secrets=laws.secrets, query=laws.query.to_dict())
    if not len(pairs) or b_star == 0.0:
        law = NoiseLaw(np.ones(1), 0.0)
        audit = noise_loss_of(laws, law)
        if audit.loss > eps:
            raise AuditError(f"The exact answer audits at {audit.loss:.12g} > epsilon although the optimal "
                             "Laplace scale given is 0.")
        at = None if audit.witness is None else audit.witness.in_units((laws.query,))
        return OptimalNoise(law=law, loss=audit.loss, witness=at, per_prior=audit.per_prior,
                            half_width=0, tail_ratio=0.0, lp_value=0.0, epsilon_lp=eps,
                            status="no noise needed: the exact answer is epsilon-Pufferfish private",
                            seconds={"laplace": t1 - t0, "total": time.monotonic() - t0}, **common)
    urows, upairs, ordered = _unique(rows, pairs)
    _check_representable(b_star, eps, laws.query.unit)
    K = _half_width(b_star, opts, eps)
    eps_lp = eps - min(opts.margin, eps / 2)
    u_max = _u_max(urows, upairs, eps_lp, 1.0 / b_star)
    search = _Search(urows, ordered, K, u_max, eps_lp, objective, opts, deadline,
                     anchor=min(1.0, 1.0 / (b_star * u_max)))
    _search_r(search)
    t2 = time.monotonic()
    if search.best is None:
        out = _fallback(laws, K, b_star, eps, ["the program was infeasible at every tail ratio tried"])
    else:
        out = _repair(laws, search, eps, b_star, deadline)
    loss, witness, per_prior = out.loss
    if loss > eps - AUDIT_GUARD:                         # unreachable: _repair and _fallback audit
        raise NumericalError("internal: an unaudited noise law reached the result")
    at = None if witness is None else witness.in_units((laws.query,))
    return OptimalNoise(law=out.law, loss=loss, witness=at, per_prior=per_prior,
                        half_width=out.law.half_width, tail_ratio=out.law.tail_ratio, lp_value=out.lp_value,
                        epsilon_lp=out.epsilon_lp, status=out.status,
                        search=tuple(sorted(search.tried)), solves=search.solves,
                        seconds={"laplace": t1 - t0, "program": t2 - t1, "audit": time.monotonic() - t2,
                                 "total": time.monotonic() - t0},
                        notes=tuple(out.notes), **common)


# ------------------------------------------------------------------ the release


def _integer_weights(law: NoiseLaw) -> list:
    """Cumulative integer weights of (left tail, -K, ..., K, right tail), exactly proportional to the law.

    Each float probability is a dyadic rational and r / (1 - r) a rational, so
    the weights are exact: the law sampled is the law audited.
    """
    r = Fraction(law.tail_ratio)
    s0 = r / (1 - r)
    centre = [Fraction(float(p)) for p in law.probabilities]
    w = [centre[0] * s0] + centre + [centre[-1] * s0]
    den = math.lcm(*(x.denominator for x in w))
    out, acc = [], 0
    for x in w:
        acc += x.numerator * (den // x.denominator)
        out.append(acc)
    return out


def _geometric(r: float, randbelow) -> int:
    """1 + the number of successes of exact Bernoulli(r) trials before a failure: P(j) = r^{j-1} (1 - r)."""
    num, den = Fraction(r).as_integer_ratio()
    j = 1
    while randbelow(den) < num:
        j += 1
    return j


def sample_noise(law: NoiseLaw, randbelow, cumulative: list | None = None) -> int:
    r"""One draw of :math:`Z` from ``law`` (grid units) with ``randbelow(n)`` uniform on :math:`0, \dots, n-1`.

    Inverse CDF on the exact integer weights of :func:`_integer_weights`; a
    tail value :math:`K + j` (or :math:`-K - j`) has :math:`j` drawn by :func:`_geometric`.
    """
    import bisect

    cum = cumulative if cumulative is not None else _integer_weights(law)
    i = bisect.bisect_right(cum, randbelow(cum[-1]))
    K = law.half_width
    if i == 0:
        return -K - _geometric(law.tail_ratio, randbelow)
    if i == len(cum) - 1:
        return K + _geometric(law.tail_ratio, randbelow)
    return i - 1 - K


@dataclass(frozen=True)
class OptimalNoiseRelease(QueryRelease):
    r"""A noisy answer :math:`F(D) + Z / \mathrm{unit}`, :math:`Z` from an :class:`OptimalNoise` law (``calibration``).

    A query-specific release like :class:`puffgm.mechanisms.query.QueryRelease`,
    whose ``epsilon``, ``theorem``, ``prior`` and composition (held alone: no composition
    theorem covers it, so the accountant takes it only alone) it keeps;
    like every release record, it keeps the noisy value only, never the exact answer.
    """

    calibration: OptimalNoise  # the same field, holding the optimal-noise calibration

    @property
    def mechanism(self) -> str:
        """The mechanism's name."""
        return "optimal additive noise for this query (linear program, exact audit)"

    def explain(self) -> str:
        r"""One line: mechanism, :math:`\epsilon`, expected error, audited loss, noise source."""
        c = self.calibration
        s = (f"{self.mechanism}: epsilon {self.epsilon:g}, expected |error| {c.expected_abs_error:.6g}, "
             f"audited loss {c.loss:.10g}; noise: {self.noise}")
        return s + ("" if self.secure else " [NOT FOR PRODUCTION]")


def release_optimal_noise(answer, result: OptimalNoise, *, random_state=None, accountant=None,
                          label: str | None = None) -> OptimalNoiseRelease:
    r"""Release :math:`F(D) + Z / \mathrm{unit}` with :math:`Z` drawn exactly from the optimal noise law.

    The draw is an inverse CDF on exact integer weights (:func:`sample_noise`)
    with uniform integers from the operating system's cryptographic generator
    (Python's ``secrets``) by default.

    Parameters
    ----------
    answer : float
        The exact answer :math:`F(D)` in the query's units: a value of the query (a multiple of
        :math:`1/\mathrm{unit}` plus the offset), since the guarantee covers :math:`F(D) + Z / \mathrm{unit}`.
    result : OptimalNoise
    random_state : int or numpy Generator, optional
        Seeded numpy noise, for tests only (not for production).
    accountant : PrivacyAccountant, optional
        Checked before any noise is drawn: it holds a query-specific release only alone.
    label : str, optional
        The release's name in the accountant's ledger.

    Returns
    -------
    OptimalNoiseRelease
        The noisy answer with the optimal-noise calibration and the noise source.
    """
    if not isinstance(result, OptimalNoise):
        raise ParameterError("release_optimal_noise needs an OptimalNoise (from optimal_noise_of).")
    v = answer_in_range(answer, result.query)
    grid = v * result.unit
    if abs(grid - round(grid)) > 1e-9 * max(1.0, abs(grid)):
        raise ParameterError(f"The answer {v!r} is not a value of the query: it must be a multiple of "
                             f"1/{result.unit}.")
    source = resolve_noise(random_state)
    planned = OptimalNoiseRelease(value=None, calibration=result, secure=source.secure,
                                  noise=SAMPLER if source.secure else source.description)

    def draw():
        return (round(grid) + sample_noise(result.law, source.randbelow)) / result.unit

    return make_release(planned, draw, accountant=accountant, label=label)
