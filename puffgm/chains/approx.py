r"""MQMApprox: the Markov Quilt Mechanism with closed-form influence bounds.

Song, Wang and Chaudhuri, section 4.4.2, Algorithm 4 and appendix C.2-C.3.
For irreducible aperiodic chains, with

* :math:`\pi_{\min}` = min over :math:`\Theta` and states of the stationary probability (6),
* :math:`g` = min over :math:`\Theta` of the eigengap :math:`1 - \lambda_2(P P^*)` of :math:`P` times its time
  reversal :math:`P^*(x, y) = P(y, x) \pi(y) / \pi(x)` (Definition 4.7, equation (7)),
  or, when every member is reversible, :math:`g = 2 \min (1 - |\lambda_2(P)|)`
  (equation (14), Lemma C.4),
* :math:`\Delta_t = e^{-g t / 2} / \pi_{\min}` (Lemma C.5),

the max-influences are at most (Lemma 4.8 / C.4), for :math:`a, b \ge 2 \log(1/\pi_{\min})/g`
and :math:`\Delta < 1`:

$$
\begin{array}{ll}
e(\{X_{i-a}, X_{i+b}\} \mid X_i) & \le \log\frac{1+\Delta_b}{1-\Delta_b} + 2 \log\frac{1+\Delta_a}{1-\Delta_a}, \\
e(\{X_{i-a}\} \mid X_i) & \le 2 \log\frac{1+\Delta_a}{1-\Delta_a}, \\
e(\{X_{i+b}\} \mid X_i) & \le \log\frac{1+\Delta_b}{1-\Delta_b},
\end{array}
$$

for every initial distribution (the bounds hold for any :math:`q`).  Shorter quilts
get no bound (influence :math:`+\infty`).  The fast search of Lemma 4.9 / C.9 searches
only the middle node :math:`X_{\lceil T/2 \rceil}` over quilts of length :math:`l = 4 a^*`,
:math:`a^* = 2 \lceil \log\left(\frac{e^{\epsilon/6}+1}{e^{\epsilon/6}-1} / \pi_{\min}\right) / g \rceil`; when its best
quilt is two-sided, Lemma C.9 gives :math:`\sigma_{\max} = \sigma_{\text{middle}}`, so the cost is
independent of :math:`T`.

Every :math:`\epsilon > 0` is handled in log space: :math:`a^*` uses :math:`\log \coth(\epsilon / 12)` without
forming :math:`e^{\epsilon/6}`; quilts are ranked by :math:`\epsilon` times their score,
:math:`\mathrm{card} / (1 - \rho)` with :math:`\rho = e / \epsilon` formed from
:math:`\log \Delta_t - \log \epsilon` (never a subnormal :math:`\Delta` or influence); each influence bound is
rounded up and each score by a few units in the last place, so :math:`\sigma_{\max}` stays an upper bound of what
Theorem 4.3 needs.  As :math:`\epsilon` grows, :math:`\epsilon \sigma_{\max}` falls to the size of the smallest
quilt with a bound (:math:`a = b = \lceil t_0 \rceil` at the middle node); where :math:`\sigma_{\max}` is above the
largest double (:math:`\epsilon` below about :math:`T / 1.8 \times 10^{308}`), :meth:`MQMApprox.calibrate` raises
NumericalError quoting an :math:`\epsilon` that works.

Paper slip handled: equation (7) takes the minimum of :math:`1 - |\lambda|` over
eigenvalues with :math:`|\lambda| < 1`, which ignores a repeated eigenvalue 1 of :math:`P P^*`
(possible for irreducible aperiodic :math:`P`); then no mixing bound holds and
MQMApprox refuses the chain instead of using a spurious gap.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction

import numpy as np

from puffgm.chains.exact import PER_NODE_LIMIT, ChainQuiltResult, quilt_choice
from puffgm.chains.priors import ChainPriorClass, InfiniteChainClass, stationary_distribution
from puffgm.core.results import CalibrationResult, QuiltGraph
from puffgm.core.validation import check_positive_finite
from puffgm.exceptions import NotApplicableError, NumericalError, ParameterError
from puffgm.mechanisms.mqm_loop import run_mqm, worst_index

__all__ = ["MQMApprox", "mqm_approx", "chain_mixing_parameters", "THEOREM_APPROX"]

THEOREM_APPROX = (
    "Song-Wang-Chaudhuri Theorem 4.3 with Algorithm 4 (MQMApprox), Lemmas 4.8/C.4 bounds, Lemma 4.9/C.9 search"
)
_REV_TOL = 1e-10
_U = 2.0**-53  # unit roundoff of a double
_C_EXACT_FROM = 1e-150  # below this Delta, c(Delta) = 2 atanh(Delta) / Delta is 2 to far below the roundoff
_MAX_FLOAT = float(np.finfo(float).max)


def _log_coth12(epsilon: float) -> float:
    """log coth(epsilon / 12) = log((e^{epsilon/6} + 1) / (e^{epsilon/6} - 1)), finite for every positive double.

    Never forms e^{epsilon/6}: log(12 / epsilon) below epsilon = 1e-100 (the two agree to 1e-200),
    log1p(2 / expm1(epsilon / 6)) up to epsilon = 6, and log1p(2 w / (1 - w)) with w = e^{-epsilon/6}
    above (w underflows to 0 for huge epsilon, where the logarithm is 0 to double precision).
    """
    x = epsilon / 6.0
    if epsilon < 1e-100:
        return math.log(12.0) - math.log(epsilon)
    if x > 1.0:
        return math.log1p(2.0 * math.exp(-x) / -math.expm1(-x))
    return math.log1p(2.0 / math.expm1(x))


def _ceil_ratio(n: int, eps: float) -> float:
    """The smallest double >= n / eps (exact rational comparison; inf when n / eps is above every double)."""
    q = n / eps
    if math.isfinite(q) and Fraction(q) < Fraction(n) / Fraction(eps):
        q = math.nextafter(q, math.inf)
    return q


def _up3(x: float) -> str:
    """x rounded up to three significant digits, as text (a quoted bound never falls below x)."""
    d = Decimal(x)
    return f"{d.quantize(Decimal(1).scaleb(d.adjusted() - 2), rounding=ROUND_CEILING):.2E}".replace("E", "e")


def _round_up(x: float, ulps: int = 8) -> float:
    """x raised by ``ulps`` units in the last place (covers the rounding of a few operations, subnormals too)."""
    for _ in range(ulps):
        x = math.nextafter(x, math.inf)
    return x


def _period(P: np.ndarray) -> int:
    """Period of an irreducible chain (gcd of level differences along edges of a BFS)."""
    k = P.shape[0]
    level = np.full(k, -1)
    level[0] = 0
    frontier: list = [0]
    adj = [np.flatnonzero(P[x] > 0) for x in range(k)]
    while frontier:
        nxt = []
        for x in frontier:
            for y in adj[x]:
                if level[y] < 0:
                    level[y] = level[x] + 1
                    nxt.append(y)
        frontier = nxt
    g = 0
    for x in range(k):
        for y in adj[x]:
            g = math.gcd(g, int(level[x] + 1 - level[y]))
    return abs(g)


def chain_mixing_parameters(P) -> dict:
    r""":math:`\pi`, :math:`\pi_{\min}`, reversibility and eigengaps of one transition matrix.

    :math:`\pi` is the stationary law to full relative precision
    (:func:`~puffgm.chains.priors.stationary_distribution`); the chain counts as
    reversible when every pair of flows :math:`\pi_x P(x, y)`, :math:`\pi_y P(y, x)` agrees to a relative
    :math:`10^{-10}`; both gaps are lowered by a bound on the rounding of the eigenvalues
    (:func:`_eigen_slack`, plus k 1e-10 for the reversible gap, the
    spectral effect of the allowed imbalance), so they never exceed the
    gaps of P and the Lemma 4.8 / C.4 bounds stay upper bounds.

    Raises
    ------
    NotApplicableError
        If P is not irreducible or is periodic (no mixing bound exists).
    """
    from scipy.sparse.csgraph import connected_components

    P = np.asarray(P, dtype=float)
    k = P.shape[0]
    if k > 1:
        n, _ = connected_components(P > 0, directed=True, connection="strong")
        if n != 1:
            raise NotApplicableError(
                "MQMApprox needs an irreducible chain, but this transition matrix has "
                f"{n} communicating classes (some state cannot reach another)."
            )
        per = _period(P)
        if per != 1:
            raise NotApplicableError(f"MQMApprox needs an aperiodic chain, but this chain has period {per}.")
    pi = stationary_distribution(P)  # relative precision on every entry, so pi_min is accurate however small
    pi_min = float(pi.min())
    flow = pi[:, None] * P
    # detailed balance entry by entry, relative to the flows (tiny flows are compared at their own scale)
    reversible = bool(np.all(np.abs(flow - flow.T) <= _REV_TOL * np.maximum(flow, flow.T)))
    if k == 1:
        return {"pi": pi, "pi_min": 1.0, "reversible": True, "gap_ppstar": 1.0, "gap_rev": 2.0}
    s = np.sqrt(pi)
    # P P* is self-adjoint in L2(pi): D^{1/2} P P* D^{-1/2} = S S^T with S = D^{1/2} P D^{-1/2}.
    S = s[:, None] * P / s[None, :]
    slack = _eigen_slack(k)
    ev = np.sort(np.clip(np.linalg.eigvalsh(S @ S.T), 0.0, 1.0))[::-1]
    gap_ppstar = max(float(1.0 - ev[1]) - slack, 0.0)
    gap_rev = None
    if reversible:
        evp = np.sort(np.abs(np.linalg.eigvalsh((S + S.T) / 2)))[::-1]
        gap_rev = max(float(2.0 * (1.0 - evp[1])) - 2.0 * (slack + k * _REV_TOL), 0.0)
    return {"pi": pi, "pi_min": pi_min, "reversible": reversible, "gap_ppstar": gap_ppstar, "gap_rev": gap_rev}


def _eigen_slack(k: int) -> float:
    """Outward margin for a computed eigenvalue of S S^T or (S + S^T) / 2 (non-negative, spectral norm 1).

    The entrywise relative error of pi is a multiple of the unit roundoff u that depends
    on k alone (O'Cinneide, "Entrywise perturbation theory and error analysis for Markov
    chains", Numerische Mathematik 65, 1993), taken here as 8 k^3 u; forming S and the
    products adds at most (k + 8) u per entry.  A non-negative matrix perturbed entrywise by
    a relative delta moves by at most delta times its spectral norm, and the symmetric
    eigensolver adds a backward error of a modest multiple of k u; by Weyl's inequality
    16 (8 k^3 + k + 8) u covers both.
    """
    return 16.0 * (8 * k**3 + k + 8) * float(np.finfo(float).eps)


class MQMApprox:
    r"""Algorithm 4 (MQMApprox) for a chain class of irreducible aperiodic chains.

    Parameters
    ----------
    chain_class : ChainPriorClass or InfiniteChainClass
        An infinite class (a :class:`~puffgm.chains.ChainParameterBox`) uses
        its own extremes of :math:`\pi_{\min}` and of the eigengap over the class
        (:meth:`~puffgm.chains.ChainParameterBox.mixing_bounds`).
    use_reversible : bool
        Use the tighter Lemma C.4 gap when every member is reversible (default True).

    Raises
    ------
    NotApplicableError
        (from :meth:`calibrate`) if a member is reducible or periodic, or :math:`P P^*`
        has no spectral gap.

    Examples
    --------
    >>> from puffgm.chains import ChainPriorClass, MQMApprox
    >>> th = ChainPriorClass.from_matrices([[0.8, 0.2], [0.3, 0.7]], initial="any", length=100)
    >>> round(MQMApprox(th).calibrate(epsilon=1.0).details["pi_min"], 12)
    0.4
    """

    def __init__(self, chain_class: ChainPriorClass | InfiniteChainClass, *, use_reversible: bool = True):
        if not isinstance(chain_class, (ChainPriorClass, InfiniteChainClass)):
            raise ParameterError(f"MQMApprox needs a ChainPriorClass; got {type(chain_class).__name__}.")
        self.chain_class = chain_class
        self.use_reversible = bool(use_reversible)
        self._n_chains: int | str
        if isinstance(chain_class, InfiniteChainClass):  # extremes over the class, proven by the class
            params = [chain_class.mixing_bounds()]
            self._n_chains = "box"
        else:
            params = [chain_mixing_parameters(m.transition) for m in chain_class.members]
            self._n_chains = len(chain_class)
        self.pi_min = min(p["pi_min"] for p in params)
        self.eigengap = min(p["gap_ppstar"] for p in params)
        self.reversible = all(p["reversible"] for p in params)
        if self.reversible and self.use_reversible:
            self.g = min(p["gap_rev"] for p in params)
            self.g_source = "2 (1 - |lambda_2(P)|), reversible chains (Lemma C.4, equation (14))"
        else:
            self.g = self.eigengap
            self.g_source = "1 - lambda_2(P P*) (equation (7))"
        if chain_class.k > 1 and self.g <= 1e-12:
            raise NotApplicableError(
                "MQMApprox needs a spectral gap, but P P* has eigenvalue 1 more than once (g = 0): "
                "no mixing bound of Lemma 4.8 holds."
            )
        self._log_inv_pi_min = -math.log(self.pi_min)
        self.t0 = 2.0 * self._log_inv_pi_min / self.g if chain_class.k > 1 else 0.0

    # -- Lemma 4.8 / C.4 bounds -------------------------------------------------
    def _log_delta(self, t: np.ndarray) -> np.ndarray:
        """log Delta_t = -g t / 2 + log(1 / pi_min), raised by a bound on its rounding (never below the true value)."""
        lead = self.g * t / 2.0
        return -lead + self._log_inv_pi_min + 8.0 * _U * (lead + self._log_inv_pi_min + 1.0)

    def _valid(self, t: np.ndarray, log_delta: np.ndarray) -> np.ndarray:
        """Where Lemma 4.8 gives a bound: t >= t0 and Delta_t < 1."""
        return (t >= self.t0) & (log_delta < 0.0)

    def phi(self, t) -> np.ndarray:
        r""":math:`\log((1 + \Delta_t) / (1 - \Delta_t))` where valid, else +inf (rounded up).

        Valid means :math:`t \ge t_0` and :math:`\Delta_t < 1`.
        """
        t = np.asarray(t, dtype=float)
        if self.chain_class.k == 1:
            return np.zeros_like(t)
        ld = self._log_delta(t)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            delta = np.exp(ld)
            val = (np.log1p(delta) - np.log1p(-delta)) * (1.0 + 16.0 * _U)
        return np.where(self._valid(t, ld), val, math.inf)

    def rho(self, t, *, epsilon: float) -> np.ndarray:
        r""":math:`\phi(t) / \epsilon`, rounded up, computed in log space (+inf where Lemma 4.8 gives no bound).

        With :math:`\Delta = \exp(\log \Delta_t)`,
        :math:`\phi / \epsilon = \exp(\log \Delta_t - \log \epsilon)\, c(\Delta)` where
        :math:`c(\Delta) = \phi / \Delta = 2 \operatorname{atanh}(\Delta) / \Delta` lies in :math:`[2, \infty)` and is
        :math:`2 (1 + O(\Delta^2))`, so neither :math:`\Delta` nor :math:`\phi` is formed where it would be subnormal:
        every :math:`\epsilon > 0` and every :math:`t` give a relative error of a few units of roundoff, covered by
        the margins of :meth:`_log_delta` and the final factor :math:`1 + 32 u`.
        """
        t = np.asarray(t, dtype=float)
        if self.chain_class.k == 1:
            return np.zeros_like(t)
        ld = self._log_delta(t)
        log_eps = math.log(epsilon)
        z = ld - log_eps
        z = z + 4.0 * _U * (np.abs(ld) + abs(log_eps) + np.abs(z))
        with np.errstate(over="ignore", divide="ignore", invalid="ignore", under="ignore"):
            delta = np.exp(ld)
            big = delta >= _C_EXACT_FROM
            c = np.where(big, (np.log1p(delta) - np.log1p(-delta)) / np.where(big, delta, 1.0), 2.0)
            val = np.exp(z) * c * (1.0 + 32.0 * _U)
        return np.where(self._valid(t, ld), val, math.inf)

    def bound_two(self, a, b):
        return self.phi(b) + 2.0 * self.phi(a)

    def bound_left(self, a):
        return 2.0 * self.phi(a)

    def bound_right(self, b):
        return self.phi(b)

    def a_star(self, *, epsilon: float) -> int:
        r"""Lemma 4.9's :math:`a^*` (1 for :math:`k = 1`).

        $$
        a^* = 2 \left\lceil \log\left(\frac{e^{\epsilon/6} + 1}{e^{\epsilon/6} - 1} \Big/ \pi_{\min}\right)
          \Big/ g \right\rceil.
        $$

        The ratio is :math:`\coth(\epsilon / 12)`; its logarithm is taken without forming :math:`e^{\epsilon/6}`
        (:math:`\log(12 / \epsilon)` below :math:`\epsilon = 10^{-100}`, where the two agree to :math:`10^{-200}`), so
        every :math:`\epsilon > 0` gives a finite :math:`a^*`.  :math:`a^*` only sets the search window: any value is
        sound.
        """
        if self.chain_class.k == 1:
            return 1
        return int(2 * math.ceil((_log_coth12(epsilon) + self._log_inv_pi_min) / self.g))

    def _search(self, i: int, ell: int, eps: float):
        """Best quilt of node X_i among those with at most ``ell`` nodes (its ``score`` is eps times the score).

        A quilt of card nodes and influence bound e has score card / (epsilon - e); the search
        ranks epsilon times it, card / (1 - rho) with rho = e / epsilon (:meth:`rho`, in log
        space), which is at least 1 and at most about T / (1 - rho) whatever epsilon is: no
        influence bound is compared with an epsilon at the edge of the double range and no score
        overflows before the quilts are ranked (:meth:`calibrate` divides by epsilon at the end).
        """
        T = self.chain_class.length

        def score(card, rel):
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                return np.where(rel < 1.0, card / (1.0 - rel), math.inf)

        best = ChainQuiltResult(float(T), "trivial", 0, 0, 0.0, T)
        amax, bmax = min(i - 1, ell), min(T - i, ell)
        if amax > 0:
            a = np.arange(1, amax + 1)
            card = T - i + a
            with np.errstate(over="ignore"):
                rel = 2.0 * self.rho(a, epsilon=eps)
            s = np.where(card <= ell, score(card, rel), math.inf)
            j = int(np.argmin(s))
            if s[j] < best.score:
                best = ChainQuiltResult(float(s[j]), "left", int(a[j]), 0, float(rel[j]) * eps, int(card[j]))
        if bmax > 0:
            b = np.arange(1, bmax + 1)
            card = i + b - 1
            rel = self.rho(b, epsilon=eps)
            s = np.where(card <= ell, score(card, rel), math.inf)
            j = int(np.argmin(s))
            if s[j] < best.score:
                best = ChainQuiltResult(float(s[j]), "right", 0, int(b[j]), float(rel[j]) * eps, int(card[j]))
        if amax > 0 and bmax > 0:
            best = self._two_sided(amax, bmax, ell, eps, best)
        return best

    def _two_sided(self, amax, bmax, ell, eps, best):
        """min over a + b - 1 <= l of (a+b-1) / (eps - 2 phi(a) - phi(b)).

        phi is convex and decreasing, so for a fixed s = a + b the influence
        h(a) = 2 phi(a) + phi(s - a) is convex in a: its integer minimum is
        found by a bisection on the sign of h(a+1) - h(a), for every s at once
        (cost O(l log l) instead of O(l^2)).  h is taken relative to epsilon
        (:meth:`rho`), which keeps the comparison exact in scale for every epsilon.
        """
        lo_t = max(1, int(math.ceil(self.t0)))
        s = np.arange(2 * lo_t, min(amax + bmax, ell + 1) + 1)
        if s.size == 0:
            return best
        lo = np.maximum(lo_t, s - bmax)
        hi = np.minimum(amax, s - lo_t)
        ok = lo <= hi
        s, lo, hi = s[ok], lo[ok], hi[ok]
        if s.size == 0:
            return best

        def h(a):
            with np.errstate(over="ignore"):
                return (2.0 * self.rho(a, epsilon=eps) + self.rho(s - a, epsilon=eps)) * (1.0 + 2.0 * _U)

        L, H = lo.copy(), hi.copy()
        while np.any(L < H):
            mid = (L + H) // 2
            with np.errstate(invalid="ignore"):
                inc = h(mid + 1) - h(mid) >= 0  # minimum at or left of mid
            act = L < H
            H = np.where(act & inc, mid, H)
            L = np.where(act & ~inc, mid + 1, L)
        rel = h(L)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            sc = np.where(rel < 1.0, (s - 1) / (1.0 - rel), math.inf)
        j = int(np.argmin(sc))
        if sc[j] < best.score:
            a, b = int(L[j]), int(s[j] - L[j])
            best = ChainQuiltResult(float(sc[j]), "two", a, b, float(rel[j]) * eps, int(s[j] - 1))
        return best

    def _worst(self, eps: float):
        """The worst node and its best quilt: (i, ChainQuiltResult with eps * score, strategy, a*, l)."""
        T = self.chain_class.length
        a_star = self.a_star(epsilon=eps)
        ell = min(T, 4 * a_star)
        mid = (T + 1) // 2
        r = self._search(mid, ell, eps)
        if r.kind == "two":
            return mid, r, "middle node (Lemma 4.9 / C.9)", a_star, ell
        if T == 1 or not float(self.rho(T - 1, epsilon=eps)) < 1.0:
            # even the longest one-sided quilt (T - 1 steps away) has influence >= epsilon, and a
            # two-sided one has more: every node keeps the trivial quilt (score T / epsilon)
            trivial = ChainQuiltResult(float(T), "trivial", 0, 0, 0.0, T)
            return 1, trivial, "every node (no quilt has influence below epsilon)", a_star, T
        # Short chain: Lemma C.9 does not apply; search every node over all quilts.
        res = [self._search(j, T, eps) for j in range(1, T + 1)]
        i = worst_index([x.score for x in res]) + 1  # the first of the maxima (puffgm.core.ties)
        return i, res[i - 1], "every node (chain too short for Lemma 4.9)", a_star, T

    def _finite_from(self, scaled: float) -> float:
        """An epsilon from which sigma_max is a finite double, for a refusal where epsilon * score is ``scaled``.

        sigma_max <= T / epsilon always (the trivial quilt), so T / (largest double) times
        1 + 1e-9 works; a smaller candidate, scaled / (largest double), is quoted when it works too.
        """
        T = self.chain_class.length
        for cand in (scaled / _MAX_FLOAT * (1 + 1e-6), T / _MAX_FLOAT * (1 + 1e-9)):
            if cand > 0 and math.isfinite(cand):
                _, r, *_ = self._worst(cand)
                if math.isfinite(_ceil_ratio(T, cand) if r.kind == "trivial" else _round_up(r.score / cand)):
                    return cand
        return T / _MAX_FLOAT * (1 + 1e-9)

    def calibrate(self, *, epsilon: float, lipschitz: float = 1.0,
                  options: Mapping | None = None) -> CalibrationResult:
        r"""Noise scale :math:`\sigma_{\max}` from the Lemma 4.8 bounds (an upper bound on MQMExact's).

        Parameters
        ----------
        epsilon : float
            The Pufferfish privacy parameter (:math:`> 0`).
        lipschitz : float
            The Lipschitz constant :math:`L` of the query; the Laplace scale is :math:`L \sigma_{\max}`.
        options : mapping, optional
            The calibration options as the user gave them to :func:`puffgm.calibrate`
            (``PriorKind.calibrate`` passes them down), recorded on the result
            (:attr:`~puffgm.core.results.CalibrationResult.options`, part of the composition key
            of its releases).  None (default) records none: the releases of the result then
            compose only with releases of an equal calibration.
        """
        eps = check_positive_finite(epsilon, "epsilon", "MQMApprox.calibrate")
        lipschitz = check_positive_finite(lipschitz, "lipschitz", "MQMApprox.calibrate")
        cc = self.chain_class
        T = cc.length
        i, r, strategy, a_star, ell = self._worst(eps)
        sigma = _ceil_ratio(T, eps) if r.kind == "trivial" else _round_up(r.score / eps)
        if not math.isfinite(sigma):
            raise NumericalError(
                f"MQMApprox's noise scale at epsilon = {eps:g} is above the largest double ({_MAX_FLOAT:.3g}) "
                f"for this chain of T = {T} nodes; epsilon of at least about {_up3(self._finite_from(r.score))} works.")
        worst = quilt_choice(T, i, replace(r, score=sigma), T <= PER_NODE_LIMIT)
        # the outer loop over the class (its worst node bounds every member, Lemma 4.8)
        outcome = run_mqm([cc], None, lambda t, _: {worst.node: worst}, epsilon=eps, largest_group=T)
        notes = list(cc.notes)
        if outcome.no_gain:
            notes.append("no gain over group DP for the worst node")
        return outcome.result(
            epsilon=eps,
            lipschitz=lipschitz,
            method="approx",
            per_node=(),
            n_nodes=T,
            fingerprint=cc.fingerprint,
            theorem=THEOREM_APPROX,
            notes=tuple(notes),
            details={
                "pi_min": self.pi_min,
                "eigengap": self.eigengap,
                "g": self.g,
                "g_source": self.g_source,
                "reversible": self.reversible,
                "t0": self.t0,
                "a_star": a_star,
                "l": int(ell),
                "strategy": strategy,
                "k": cc.k,
                "n_chains": self._n_chains,
            },
            graph=QuiltGraph("chain", length=int(T)),
            options=options,
        )


def mqm_approx(chain_class: ChainPriorClass, *, epsilon: float, lipschitz: float = 1.0, **kwargs) -> CalibrationResult:
    """Shorthand for ``MQMApprox(chain_class, **kwargs).calibrate(epsilon=epsilon, lipschitz=lipschitz)``."""
    return MQMApprox(chain_class, **kwargs).calibrate(epsilon=epsilon, lipschitz=lipschitz)
