"""MQMApprox: the Markov Quilt Mechanism with closed-form influence bounds.

Song, Wang and Chaudhuri, section 4.4.2, Algorithm 4 and appendix C.2-C.3.
For irreducible aperiodic chains, with

* pi_min = min over Theta and states of the stationary probability (6),
* g = min over Theta of the eigengap 1 - lambda_2(P P*) of P times its time
  reversal P*(x, y) = P(y, x) pi(y) / pi(x) (Definition 4.7, equation (7)),
  or, when every member is reversible, g = 2 min (1 - |lambda_2(P)|)
  (equation (14), Lemma C.4),
* Delta_t = exp(-g t / 2) / pi_min (Lemma C.5),

the max-influences are at most (Lemma 4.8 / C.4), for a, b >= 2 log(1/pi_min)/g
and Delta < 1:

    e({X_{i-a}, X_{i+b}} | X_i) <= log((1+Delta_b)/(1-Delta_b)) + 2 log((1+Delta_a)/(1-Delta_a)),
    e({X_{i-a}} | X_i)          <= 2 log((1+Delta_a)/(1-Delta_a)),
    e({X_{i+b}} | X_i)          <= log((1+Delta_b)/(1-Delta_b)),

for every initial distribution (the bounds hold for any q).  Shorter quilts
get no bound (influence +inf).  The fast search of Lemma 4.9 / C.9 searches
only the middle node X_{ceil(T/2)} over quilts of length l = 4 a*,
a* = 2 ceil(log((e^{eps/6}+1)/(e^{eps/6}-1) / pi_min) / g); when its best
quilt is two-sided, Lemma C.9 gives sigma_max = sigma_middle, so the cost is
independent of T.

Paper slip handled: equation (7) takes the minimum of 1 - |lambda| over
eigenvalues with |lambda| < 1, which ignores a repeated eigenvalue 1 of P P*
(possible for irreducible aperiodic P); then no mixing bound holds and
MQMApprox refuses the chain instead of using a spurious gap.
"""

from __future__ import annotations

import math

import numpy as np

from puffgm.chains.exact import PER_NODE_LIMIT, quilt_choice
from puffgm.chains.priors import ChainPriorClass, InfiniteChainClass, stationary_distribution
from puffgm.core.results import CalibrationResult
from puffgm.core.validation import check_positive_finite
from puffgm.exceptions import NotApplicableError, ParameterError

__all__ = ["MQMApprox", "mqm_approx", "chain_mixing_parameters", "THEOREM_APPROX"]

THEOREM_APPROX = (
    "Song-Wang-Chaudhuri Theorem 4.3 with Algorithm 4 (MQMApprox), Lemmas 4.8/C.4 bounds, Lemma 4.9/C.9 search"
)
_REV_TOL = 1e-10


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
    """pi, pi_min, reversibility and eigengaps of one transition matrix.

    pi is the stationary law to full relative precision
    (:func:`~puffgm.chains.priors.stationary_distribution`); the chain counts as
    reversible when every pair of flows pi_x P(x, y), pi_y P(y, x) agrees to a relative
    1e-10; both gaps are lowered by a bound on the rounding of the eigenvalues
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
    """Algorithm 4 (MQMApprox) for a chain class of irreducible aperiodic chains.

    Parameters
    ----------
    chain_class : ChainPriorClass or InfiniteChainClass
        An infinite class (a :class:`~puffgm.chains.ChainParameterBox`) uses
        its own extremes of pi_min and of the eigengap over the class
        (:meth:`~puffgm.chains.ChainParameterBox.mixing_bounds`).
    use_reversible : bool
        Use the tighter Lemma C.4 gap when every member is reversible (default True).

    Raises
    ------
    NotApplicableError
        (from :meth:`calibrate`) if a member is reducible or periodic, or P P*
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
        self.t0 = 2.0 * math.log(1.0 / self.pi_min) / self.g if chain_class.k > 1 else 0.0

    # -- Lemma 4.8 / C.4 bounds -------------------------------------------------
    def phi(self, t) -> np.ndarray:
        """log((1 + Delta_t) / (1 - Delta_t)) where valid (t >= t0, Delta_t < 1), else +inf."""
        t = np.asarray(t, dtype=float)
        if self.chain_class.k == 1:
            return np.zeros_like(t)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            delta = np.exp(-self.g * t / 2.0) / self.pi_min
            val = np.log1p(delta) - np.log1p(-delta)
        return np.where((t >= self.t0) & (delta < 1.0), val, math.inf)

    def bound_two(self, a, b):
        return self.phi(b) + 2.0 * self.phi(a)

    def bound_left(self, a):
        return 2.0 * self.phi(a)

    def bound_right(self, b):
        return self.phi(b)

    def a_star(self, *, epsilon: float) -> int:
        """Lemma 4.9's a* = 2 ceil(log((e^{epsilon/6} + 1) / (e^{epsilon/6} - 1) / pi_min) / g) (1 for k = 1)."""
        e6 = math.exp(epsilon / 6.0)
        return int(2 * math.ceil(math.log((e6 + 1) / (e6 - 1) / self.pi_min) / self.g)) if self.chain_class.k > 1 else 1

    def _search(self, i: int, ell: int, eps: float):
        T = self.chain_class.length

        def score(card, infl):
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(infl < eps, card / (eps - infl), math.inf)

        best = (T / eps, "trivial", 0, 0, 0.0, T)
        amax, bmax = min(i - 1, ell), min(T - i, ell)
        if amax > 0:
            a = np.arange(1, amax + 1)
            card = T - i + a
            s = np.where(card <= ell, score(card, self.bound_left(a)), math.inf)
            j = int(np.argmin(s))
            if s[j] < best[0]:
                best = (float(s[j]), "left", int(a[j]), 0, float(self.bound_left(a[j])), int(card[j]))
        if bmax > 0:
            b = np.arange(1, bmax + 1)
            card = i + b - 1
            s = np.where(card <= ell, score(card, self.bound_right(b)), math.inf)
            j = int(np.argmin(s))
            if s[j] < best[0]:
                best = (float(s[j]), "right", 0, int(b[j]), float(self.bound_right(b[j])), int(card[j]))
        if amax > 0 and bmax > 0:
            best = self._two_sided(amax, bmax, ell, eps, best)
        return best

    def _two_sided(self, amax, bmax, ell, eps, best):
        """min over a + b - 1 <= l of (a+b-1) / (eps - 2 phi(a) - phi(b)).

        phi is convex and decreasing, so for a fixed s = a + b the influence
        h(a) = 2 phi(a) + phi(s - a) is convex in a: its integer minimum is
        found by a bisection on the sign of h(a+1) - h(a), for every s at once
        (cost O(l log l) instead of O(l^2)).
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
            return 2.0 * self.phi(a) + self.phi(s - a)

        L, H = lo.copy(), hi.copy()
        while np.any(L < H):
            mid = (L + H) // 2
            inc = h(mid + 1) - h(mid) >= 0  # minimum at or left of mid
            act = L < H
            H = np.where(act & inc, mid, H)
            L = np.where(act & ~inc, mid + 1, L)
        infl = h(L)
        with np.errstate(divide="ignore", invalid="ignore"):
            sc = np.where(infl < eps, (s - 1) / (eps - infl), math.inf)
        j = int(np.argmin(sc))
        if sc[j] < best[0]:
            a, b = int(L[j]), int(s[j] - L[j])
            best = (float(sc[j]), "two", a, b, float(infl[j]), int(s[j] - 1))
        return best

    def calibrate(self, *, epsilon: float, lipschitz: float = 1.0) -> CalibrationResult:
        """Noise scale sigma_max from the Lemma 4.8 bounds (an upper bound on MQMExact's).

        Parameters
        ----------
        epsilon : float
            The Pufferfish privacy parameter (> 0).
        lipschitz : float
            The Lipschitz constant L of the query; the Laplace scale is L * sigma_max.
        """
        eps = check_positive_finite(epsilon, "epsilon", "MQMApprox.calibrate")
        lipschitz = check_positive_finite(lipschitz, "lipschitz", "MQMApprox.calibrate")
        cc = self.chain_class
        T = cc.length
        a_star = self.a_star(epsilon=eps)
        ell = min(T, 4 * a_star)
        mid = (T + 1) // 2
        r = self._search(mid, ell, eps)
        if r[1] == "two":
            i, strategy = mid, "middle node (Lemma 4.9 / C.9)"
        else:
            # Short chain: Lemma C.9 does not apply; search every node over all quilts.
            ell = T
            res = [self._search(j, ell, eps) for j in range(1, T + 1)]
            i = int(np.argmax([x[0] for x in res])) + 1
            r = res[i - 1]
            strategy = "every node (chain too short for Lemma 4.9)"
        worst = quilt_choice(T, i, r, T <= PER_NODE_LIMIT)
        notes = list(cc.notes)
        group = T / eps
        if r[0] >= group * (1 - 1e-12):
            notes.append("no gain over group DP for the worst node")
        return CalibrationResult(
            epsilon=eps,
            lipschitz=lipschitz,
            method="approx",
            sigma_max=r[0],
            worst=worst,
            per_node=(),
            n_nodes=T,
            groupdp_sigma=group,
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
        )


def mqm_approx(chain_class: ChainPriorClass, *, epsilon: float, lipschitz: float = 1.0, **kwargs) -> CalibrationResult:
    """Shorthand for ``MQMApprox(chain_class, **kwargs).calibrate(epsilon=epsilon, lipschitz=lipschitz)``."""
    return MQMApprox(chain_class, **kwargs).calibrate(epsilon=epsilon, lipschitz=lipschitz)
