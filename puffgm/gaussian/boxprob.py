r"""Certified two-sided bounds of :math:`\log P(x \in B)` for :math:`x \sim N(\mu, P^{-1})` and a box, in log space.

Used by the multivariate pinned-regime engines (:mod:`puffgm.gaussian.monotone`,
:mod:`puffgm.gaussian.multivariate`) and the truncated marginal (:mod:`puffgm.gaussian.marginal`) for box
probabilities in many dimensions whose value can be as small as :math:`\exp(-10^6)`, where neither
``scipy.stats.multivariate_normal.cdf`` (randomised quasi-Monte-Carlo, no error bound, no log-space mode)
nor a tensor quadrature applies.  :class:`RegionBonferroni` brackets the probabilities of boxes whose first
coordinate is a region :math:`[r, r + \delta]` by one-dimensional integrals only (Bonferroni on the others).

With :math:`f(x) = -(x - \mu)^\top P (x - \mu) / 2` and :math:`d = x - x_0` for any point :math:`x_0`,
:math:`f(x) = f(x_0) + g \cdot d - d^\top P d / 2`, :math:`g = P (\mu - x_0)`.  On a sub-box :math:`A` of :math:`B`:

* **Lower bound (Gibbs).**  For any density :math:`q` on :math:`A`,
  :math:`\log \int_A e^f \ge E_q[f] + H(q)`.  With the product
  :math:`q(d) = \prod_k \exp(\theta_k d_k - P_{kk} d_k^2 / 2) / Z_k` (one-dimensional truncated normals),

  $$
  \log \int_A e^f \ge f(x_0) + \sum_k [(g_k - \theta_k) m_k + \log Z_k] - \tfrac12 \sum_{j \ne k} P_{jk} m_j m_k,
  $$

  :math:`m_k = E_q[d_k]`; :math:`\theta` comes from mean-field sweeps
  :math:`\theta_k = g_k - \sum_{j \ne k} P_{kj} m_j` (any :math:`\theta` is valid).
* **Upper bound (convex duality).**  For a diagonal :math:`D` with :math:`P - D` positive semi-definite and any
  :math:`y`, :math:`-d^\top (P - D) d / 2 \le -y^\top (P - D) d + y^\top (P - D) y / 2` (tangent of a concave
  quadratic), so

  $$
  \log \int_A e^f \le f(x_0) + y^\top (P - D) y / 2 + \sum_k \log \int \exp(h_k t - D_{kk} t^2 / 2)\, dt, \qquad
  h = g - (P - D) y,
  $$

  a product of one-dimensional integrals; :math:`y` = the mean-field means makes it tight.
  :math:`D = c \operatorname{diag}(P)` with :math:`c` below the smallest eigenvalue of
  :math:`\operatorname{diag}(P)^{-1/2} P \operatorname{diag}(P)^{-1/2}` (checked by a Cholesky factorisation).

Both sides are sums over the sub-boxes (log-sum-exp); the sub-box with the largest gap is split along the
coordinate with the largest uncoupled spread until the gap is below the tolerance.  For coordinates pinned
at a face of the box (the conditional mean far outside) the law on :math:`A` is nearly a product of exponentials
and one sub-box suffices; free coordinates need splitting (the gap of a sub-box shrinks with its width squared).
The one-dimensional integrals and means use the scaled complementary error function (``erfcx``), exact
when the vertex of the exponent is far outside the interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from puffgm.gaussian.primitives import ConditionalTails, bonferroni_sum, log_interval_prob, max_inf_tail

__all__ = ["BoxProbability", "RegionBonferroni", "SubBoxes", "log_trunc_normal", "region_boxes"]

_SQRT2 = math.sqrt(2.0)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_HALF_LOG_PI_2 = 0.5 * math.log(math.pi / 2)


def _sel(x, mask, full):
    """x on the mask (x itself when the mask is everything or x is a scalar)."""
    return x if (full or x.ndim == 0) else x[mask]


def log_trunc_normal(a, b, theta, K, *, mean=True, logz=True):
    r"""(:math:`\log \int_a^b \exp(\theta t - K t^2 / 2)\, dt`, mean of :math:`t` under that density), elementwise.

    Needs :math:`K > 0`.  The exponent has vertex :math:`\nu = \theta / K` and scale :math:`s = K^{-1/2}`; with
    :math:`z = (t - \nu) / s` the integral is :math:`s \exp(\theta^2 / (2K)) \int_{z_a}^{z_b} \exp(-z^2 / 2)\, dz`.
    When :math:`\nu` lies outside :math:`[a, b]` the last integral is written with ``erfcx`` at the near end
    :math:`e`, relative to the exponent's value :math:`\theta e - K e^2 / 2` there
    (no cancellation however far the vertex); when it lies inside, with normal probabilities.
    ``mean=False`` returns the log-integral only, ``logz=False`` the mean only (the mean-field sweeps need
    only the means; the same operations, so the same bits, as the pair)."""
    from scipy.special import erfcx, log_ndtr, ndtr

    a, b, theta, K = (np.asarray(v, float) for v in (a, b, theta, K))
    shp = a.shape
    if not (b.shape == shp and theta.shape == shp and (K.ndim == 0 or K.shape == shp) and a.ndim):
        a, b, theta, K = np.broadcast_arrays(a, b, theta, K)
        shp = a.shape
        if not shp:  # scalars: computed as length-1 arrays, returned as 0-d arrays
            out = log_trunc_normal(*(v.reshape(1) for v in (a, b, theta, K)), mean=mean, logz=logz)
            return tuple(v.reshape(()) for v in out) if (mean and logz) else out.reshape(())
    s = 1.0 / np.sqrt(K)
    nu = theta * s * s
    za, zb = (a - nu) / s, (b - nu) / s
    log_int, peak, ez = np.empty(shp), np.empty(shp), np.empty(shp)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        # vertex outside [a, b]: reflect so that it lies above, z_lo < z_hi <= 0, and use
        # int_lo^hi exp(-z^2/2) dz = exp(-hi^2/2) sqrt(pi/2) [erfcx(-hi/sqrt2) - rho erfcx(-lo/sqrt2)]
        above = zb <= 0
        tail = above | (za >= 0)
        n_tail = int(np.count_nonzero(tail))
        if n_tail:
            # mostly tail: the tail formulas run on every element (the few inside ones are overwritten
            # below), which is cheaper than copying out the tail elements
            full = 2 * n_tail >= tail.size
            up = _sel(above, tail, full)
            lo = np.where(up, _sel(za, tail, full), -_sel(zb, tail, full))
            hi = np.where(up, _sel(zb, tail, full), -_sel(za, tail, full))
            rho = np.exp(0.5 * (hi * hi - lo * lo))
            bracket = erfcx(-hi / _SQRT2) - rho * erfcx(-lo / _SQRT2)
            if logz:
                # exponent at the end e of [a, b] nearest the vertex, theta e - K e^2 / 2, formed directly
                # (the equal theta nu / 2 - hi^2 / 2 cancels when the vertex is far away); log_int is then
                # relative to it
                e = np.where(up, _sel(b, tail, full), _sel(a, tail, full))
                li = _HALF_LOG_PI_2 + np.log(bracket)
                pk = _sel(theta, tail, full) * e - 0.5 * _sel(K, tail, full) * e * e
                log_int, peak = (li, pk) if full else (_put(log_int, tail, li), _put(peak, tail, pk))
            if mean:
                # E[z] on [lo, hi] = (phi(lo) - phi(hi)) / int = (rho - 1) / (sqrt(pi/2) bracket)
                ez_t = (rho - 1.0) / (math.sqrt(math.pi / 2) * bracket)
                ez_t = np.where(up, ez_t, -ez_t)
                ez = ez_t if full else _put(ez, tail, ez_t)
        if n_tail < tail.size:
            # vertex inside: normal probabilities
            full = n_tail == 0
            inside = ~tail
            zi_a, zi_b = _sel(za, inside, full), _sel(zb, inside, full)
            pin = ndtr(zi_b) - ndtr(zi_a)
            small = pin <= 1e-3
            lpin = np.log(np.maximum(pin, 1e-300))
            if np.any(small):
                la, lb = log_ndtr(zi_a[small]), log_ndtr(zi_b[small])
                lpin[small] = lb + np.log1p(-np.exp(la - lb))
            li = _HALF_LOG_2PI + lpin
            if logz:
                pk = 0.5 * _sel(theta, inside, full) * _sel(nu, inside, full)
                log_int, peak = (li, pk) if full else (_put(log_int, inside, li), _put(peak, inside, pk))
            if mean:
                ez_i = (np.exp(-0.5 * zi_a * zi_a) - np.exp(-0.5 * zi_b * zi_b)) / np.exp(li)
                ez = ez_i if full else _put(ez, inside, ez_i)
        if mean:
            m = nu + s * ez
            m = np.minimum(np.maximum(m, a), b)  # rounding only: the mean of a law on [a, b] lies in [a, b]
        if logz:
            logZ = np.log(s) + peak + log_int
    if not logz:
        return m
    logZ = np.where(b > a, logZ, -np.inf)
    return (logZ, m) if mean else logZ


def region_boxes(lo, hi, r, delta):
    r"""(LO, HI) rows for :meth:`BoxProbability.bounds_many`: the box :math:`[lo, hi]`, coordinate 0 replaced.

    Coordinate 0 becomes the region :math:`[r_t, r_t + \delta]`, one row per :math:`r_t`.
    """
    r = np.asarray(r, float)
    LO, HI = np.tile(lo, (len(r), 1)), np.tile(hi, (len(r), 1))
    LO[:, 0], HI[:, 0] = r, r + delta
    return LO, HI


def _put(out, mask, values):
    out[mask] = values
    return out


def _spread_factor(P):
    """c > 0 with P - c diag(P) positive semi-definite (c = 0.999 lambda_min of the scaled matrix, checked)."""
    dg = np.sqrt(np.diag(P))
    C = P / np.outer(dg, dg)
    lam = float(np.linalg.eigvalsh(C)[0])
    c = 0.999 * lam
    while c > 0:
        try:
            np.linalg.cholesky(C - c * np.eye(len(C)))
            return c
        except np.linalg.LinAlgError:
            c *= 0.5
    return 0.0


class BoxProbability:
    r"""Certified bounds of :math:`\log P(x \in B)` for :math:`x \sim N(\mu, P^{-1})`, many means :math:`\mu`.

    The precision :math:`P` is fixed.  ``bounds(mu, lo, hi)`` returns (lower, upper) with
    :math:`\mathrm{upper} - \mathrm{lower} \le` ``tol`` when the refinement succeeds within ``max_boxes``
    sub-boxes (otherwise the looser certified pair)."""

    def __init__(self, P, *, tol=1e-3, max_boxes=4000, sweeps=4):
        P = np.asarray(P, float)
        self.P = (P + P.T) / 2
        self.d = len(P)
        self.diag = np.diag(self.P).copy()
        self.off = self.P - np.diag(self.diag)
        c = _spread_factor(self.P)
        if c <= 0:
            raise np.linalg.LinAlgError("the precision matrix is not positive definite")
        self.Dp = c * self.diag
        self.PmD = self.P - np.diag(self.Dp)
        _, logdet = np.linalg.slogdet(self.P)
        # rounding: f = -(x - mu)' P (x - mu) / 2 and the Cholesky-checked spread factor are computed in
        # double precision; both bounds are widened by 64 eps cond(P) (1 + |value|) + 1e-12 (outward)
        ev = np.linalg.eigvalsh(self.P)
        self.round_rel = 64 * np.finfo(float).eps * float(ev[-1] / ev[0])
        self.lognorm = 0.5 * logdet - self.d * _HALF_LOG_2PI
        self.tol, self.max_boxes, self.sweeps = tol, max_boxes, sweeps
        self.rowabs = np.sum(np.abs(self.P), axis=1)

    def _mode(self, mu, A, B, iters=8):
        """Approximate maximiser of f on each sub-box (projected Gauss-Seidel); any point is valid."""
        x = np.minimum(np.maximum(mu, A), B)
        P, dg = self.P, self.diag
        for _ in range(iters):
            for k in range(self.d):
                # f's partial derivative in x_k: (P (mu - x))_k
                gk = (mu - x) @ P[k]
                x[:, k] = np.minimum(np.maximum(x[:, k] + gk / dg[k], A[:, k]), B[:, k])
        return x

    def dual_upper(self, mu, A, B, x0, y):
        r"""The convex-duality upper bound (module docstring) on the sub-boxes, rows of (A, B).

        With expansion points :math:`x_0` and tangent points :math:`y` (any :math:`x_0` and :math:`y` give a valid
        bound); also :math:`f_0` and :math:`g = P (\mu - x_0)`.
        """
        dx = x0 - mu
        f0 = -0.5 * _quad(dx, self.P)
        g = -dx @ self.P
        if y is None:
            return None, f0, g
        lzu = log_trunc_normal(A - x0, B - x0, g - y @ self.PmD, self.Dp, mean=False)
        upper = f0 + 0.5 * _quad(y, self.PmD) + np.sum(lzu, axis=1)
        return np.where(np.isnan(upper), np.inf, upper), f0, g

    def _sub_bounds(self, mu, A, B, want_mean=False, sweeps=None):
        """(lower, upper, split score per coordinate) on sub-boxes rows of (A, B) (mu broadcast), with
        ``sweeps`` mean-field sweeps (default the instance's); with ``want_mean`` also the mean of the
        product density q of the Gibbs bound (absolute coordinates), x0 and y."""
        x0 = self._mode(np.broadcast_to(mu, A.shape).copy(), A, B)
        _, f0, g = self.dual_upper(mu, A, B, x0, None)
        a, b = A - x0, B - x0
        dg = self.diag
        theta = g.copy()
        n_sweeps = self.sweeps if sweeps is None else sweeps
        # the bound needs log Z_k of the last sweep only: earlier sweeps compute the means alone
        if n_sweeps > 0:
            m = log_trunc_normal(a, b, theta, dg, logz=False)
            logZ = np.empty(a.shape)
        else:
            logZ, m = log_trunc_normal(a, b, theta, dg)
        for t in range(n_sweeps):
            last = t == n_sweeps - 1
            for k in range(self.d):
                theta[:, k] = g[:, k] - m @ self.off[k]
                if last:
                    logZ[:, k], m[:, k] = log_trunc_normal(a[:, k], b[:, k], theta[:, k], dg[k])
                else:
                    m[:, k] = log_trunc_normal(a[:, k], b[:, k], theta[:, k], dg[k], logz=False)
        cross = _quad(m, self.off)
        lower = f0 + np.sum((g - theta) * m + logZ, axis=1) - 0.5 * cross
        y = m
        upper, _, _ = self.dual_upper(mu, A, B, x0, y)
        # spread proxy: effective width of q_k (exponential decay scale or normal scale), times coupling
        s = 1.0 / np.sqrt(dg)
        nu = theta / dg
        dist = np.maximum(np.maximum(nu - b, a - nu), 0.0)
        lam = dist / (s * s)
        with np.errstate(divide="ignore"):
            w = np.minimum(np.minimum(b - a, 2 * s), np.where(lam > 0, 2.0 / lam, np.inf))
        score = w * w * self.rowabs
        lower = np.where(np.isnan(lower), -np.inf, lower)
        if want_mean:
            return lower, upper, score, x0 + m, x0, y
        return lower, upper, score

    def bounds(self, mu, lo, hi):
        r"""Certified (lower, upper) of :math:`\log P(x \in [lo, hi])`, :math:`x \sim N(\mu, P^{-1})`; sub-box count."""
        L, U, n = self.bounds_many(mu, np.asarray(lo, float)[None, :], np.asarray(hi, float)[None, :])
        return float(L[0]), float(U[0]), int(n[0])

    def bounds_many(self, mu, lo, hi, tol=None, keep=False):
        r"""Certified (lower, upper, sub-box counts) of :math:`\log P(x \in [lo_t, hi_t])`, rows :math:`t` of lo, hi.

        All boxes share the mean ``mu``; the refinement runs on every box at once (one vectorised
        round splits, in each box still above the tolerance, the sub-boxes carrying more than the
        average share of its gap); ``tol`` overrides the instance's tolerance.  With ``keep`` a fourth
        value is returned: a :class:`SubBoxes` record of the final sub-boxes (for :meth:`bounds_fixed`)
        and, per box, the slope of the lower bound's affine extension (:meth:`SubBoxes.lower_at`)."""
        tol = self.tol if tol is None else tol
        mu = np.asarray(mu, float)
        A = np.array(lo, float, ndmin=2)
        B = np.array(hi, float, ndmin=2)
        nprob = len(A)
        pid = np.arange(nprob)
        L, U, S = self._sub_bounds(mu, A, B)
        while True:
            lt, ut = _group_lse(L, pid, nprob), _group_lse(U, pid, nprob)
            count = np.bincount(pid, minlength=nprob)
            active = (ut - lt > tol) & (count < self.max_boxes) & np.isfinite(ut)
            if not np.any(active):
                break
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                gapc = U + np.log1p(-np.exp(np.minimum(L - U, 0.0)))
            gtot = _group_lse(gapc, pid, nprob)
            pick = active[pid] & (gapc >= gtot[pid] - np.log(count[pid]) - 1e-12)
            if not np.any(pick):
                break
            stay = ~pick
            Ap, Bp, pp = A[pick], B[pick], pid[pick]
            k = np.argmax(S[pick], axis=1)
            rows = np.arange(len(Ap))
            mid = (Ap[rows, k] + Bp[rows, k]) / 2
            B1 = Bp.copy()
            B1[rows, k] = mid
            A2 = Ap.copy()
            A2[rows, k] = mid
            nA, nB = np.concatenate([Ap, A2]), np.concatenate([B1, Bp])
            nL, nU, nS = self._sub_bounds(mu, nA, nB)
            A, B = np.concatenate([A[stay], nA]), np.concatenate([B[stay], nB])
            L, U, S = np.concatenate([L[stay], nL]), np.concatenate([U[stay], nU]), np.concatenate([S[stay], nS])
            pid = np.concatenate([pid[stay], pp, pp])
        if keep:
            # Jensen weights of the sub-boxes at mu: the affine extension of the Gibbs bound has slope
            # sum_A w_A E_{q_A}[x] in eta = P mu (see SubBoxes.lower_at)
            _, _, _, mq, x0, y = self._sub_bounds(mu, A, B, want_mean=True)
            with np.errstate(invalid="ignore", over="ignore"):
                w = np.exp(L - lt[pid])
            w = np.where(np.isfinite(w), w, 0.0)
            sbar = np.zeros((nprob, self.d))
            np.add.at(sbar, pid, w[:, None] * mq)
        lt, ut = self._finish(lt, ut)
        if keep:
            return lt, ut, count, SubBoxes(self, np.asarray(mu, float).copy(), A, B, pid, nprob, lt, sbar, x0, y)
        return lt, ut, count

    def _finish(self, lt, ut):
        """Add the normaliser and widen outward by the rounding margin."""
        lt, ut = lt + self.lognorm, ut + self.lognorm
        with np.errstate(invalid="ignore"):
            lt = lt - (self.round_rel * (1 + np.abs(lt)) + 1e-12)
            ut = ut + (self.round_rel * (1 + np.abs(ut)) + 1e-12)
        return lt, ut

    def bounds_fixed(self, mu, sub, sweeps=None):
        """Certified (lower, upper) of the same boxes as ``sub`` (a :class:`SubBoxes`) at another mean
        ``mu``, on ``sub``'s sub-boxes without refinement (the bounds hold on any partition)."""
        L, U, _ = self._sub_bounds(np.asarray(mu, float), sub.A, sub.B, sweeps=sweeps)
        return self._finish(_group_lse(L, sub.pid, sub.nprob), _group_lse(U, sub.pid, sub.nprob))


@dataclass(frozen=True, eq=False)
class SubBoxes:
    r"""The final sub-boxes of :meth:`BoxProbability.bounds_many` (``keep=True``) at a mean :math:`\mu_0`, and the
    affine extension of its certified lower bounds to other means.

    With :math:`\eta = P \mu` and :math:`\tilde F(\eta) = \log \int_B \exp(\eta^\top x - x^\top P x / 2)\, dx`,
    :math:`\log P(x \in B; \mu) = \tilde F(\eta) - \eta^\top P^{-1} \eta / 2 + \mathrm{const}`.  The Gibbs bound of a
    sub-box :math:`A` with a *fixed* product density :math:`q_A`,
    :math:`E_q[\eta^\top x - x^\top P x / 2] + H(q_A)`, is affine in :math:`\eta` with slope :math:`E_{q_A}[x]`;
    by Jensen, :math:`\log \sum_A \exp(l_A) \ge \sum_A w_A l_A + H(w)` for any weights :math:`w`, with
    equality at :math:`w = \mathrm{softmax}(l)`.  So with :math:`w` the softmax at :math:`\eta_0`,
    :math:`\tilde F(\eta) \ge \tilde F_{\mathrm{lower}}(\eta_0) + (\eta - \eta_0)^\top s`,
    :math:`s = \sum_A w_A E_{q_A}[x]`, for every :math:`\eta`: a global affine minorant of the convex function
    :math:`\tilde F` (used by the cell engine, whose vertex argument needs the denominator's bound to be affine).

    Attributes
    ----------
    box : BoxProbability
        The box probabilities (precision, rounding margins) the sub-boxes belong to.
    mu0 : (d,) array
        The mean at which the sub-boxes were refined.
    A, B : (m, d) arrays
        Lower and upper corners of the sub-boxes.
    pid : (m,) int array
        The box (:math:`0, \dots, \mathrm{nprob} - 1`) each sub-box belongs to.
    nprob : int
        Number of boxes.
    lower0 : (nprob,) array
        Certified lower bounds of :math:`\log P(x \in B_t; \mu_0)`.
    sbar : (nprob, d) array
        Slopes of the affine extension of the lower bounds in :math:`\eta = P \mu`.
    x0, y : (m, d) arrays
        Expansion and tangent points of the convex-duality upper bound of each sub-box.
    """

    box: BoxProbability
    mu0: np.ndarray
    A: np.ndarray
    B: np.ndarray
    pid: np.ndarray
    nprob: int
    lower0: np.ndarray
    sbar: np.ndarray
    x0: np.ndarray
    y: np.ndarray

    def select(self, rows):
        """The record of the boxes ``rows`` only (in that order)."""
        rows = np.asarray(rows, int)
        new_id = np.full(self.nprob, -1)
        new_id[rows] = np.arange(len(rows))
        m = new_id[self.pid] >= 0
        order = np.argsort(new_id[self.pid][m], kind="stable")
        sel = np.flatnonzero(m)[order]
        return SubBoxes(self.box, self.mu0, self.A[sel], self.B[sel], new_id[self.pid[sel]], len(rows),
                        self.lower0[rows], self.sbar[rows], self.x0[sel], self.y[sel])

    @staticmethod
    def concat(parts):
        """One record of the boxes of several records (same BoxProbability and mean)."""
        off = np.cumsum([0] + [p.nprob for p in parts[:-1]])
        pid = np.concatenate([p.pid + o for p, o in zip(parts, off, strict=True)])
        return SubBoxes(parts[0].box, parts[0].mu0, np.concatenate([p.A for p in parts]),
                        np.concatenate([p.B for p in parts]), pid,
                        int(sum(p.nprob for p in parts)), np.concatenate([p.lower0 for p in parts]),
                        np.concatenate([p.sbar for p in parts]), np.concatenate([p.x0 for p in parts]),
                        np.concatenate([p.y for p in parts]))

    def upper_at(self, mu):
        r"""Certified upper bounds of :math:`\log P(x \in B_t; \mu)` for every box :math:`t`.

        The convex-duality bound of :class:`BoxProbability` on the kept sub-boxes with the expansion points
        x0 and tangent points y of :math:`\mu_0` (valid for any x0 and y; one vectorised one-dimensional
        integral per coordinate)."""
        box = self.box
        U, _, _ = box.dual_upper(np.asarray(mu, float), self.A, self.B, self.x0, self.y)
        ut = _group_lse(U, self.pid, self.nprob) + box.lognorm
        with np.errstate(invalid="ignore"):
            return ut + (box.round_rel * (1 + np.abs(ut)) + 1e-12)

    def lower_at(self, mu):
        r"""Certified lower bounds of :math:`\log P(x \in B_t; \mu)`, every box :math:`t`, by the affine minorant."""
        box = self.box
        mu = np.asarray(mu, float)
        eta0, eta = box.P @ self.mu0, box.P @ mu
        q0, q = 0.5 * float(self.mu0 @ eta0), 0.5 * float(mu @ eta)
        val = self.lower0 + q0 - q + self.sbar @ (eta - eta0)
        # rounding of the extension: relative to the largest term
        scale = np.abs(self.lower0) + abs(q0) + abs(q) + np.abs(self.sbar) @ (np.abs(eta) + np.abs(eta0))
        with np.errstate(invalid="ignore"):
            return val - (box.round_rel * (1 + scale) + 1e-12)


class RegionBonferroni:
    r"""Certified bounds of :math:`\log P(x_0 \in [r, r + \delta],\ x_k \in [lo_k, hi_k] \text{ for } k \ge 1)`.

    Here :math:`x \sim N(\mu, S)`; the bounds need no integral in more than one dimension: condition on
    :math:`x_0` and apply Bonferroni to the other coordinates.

    Given :math:`x_0 = t`, :math:`x_k \sim N(\mu_k + \beta_k (t - \mu_0), \tau_k^2)`, :math:`\beta_k = S_{k0} / S_{00}`,
    :math:`\tau_k^2 = S_{kk} - S_{k0}^2 / S_{00}`, so with :math:`R = [r, r + \delta]` and :math:`T` the box of
    :math:`x_1, \dots, x_d`,

    $$
    \begin{array}{rl}
    \log P(R \times T) & = \log P(x_0 \in R) + \log P(T \mid x_0 \in R), \\
    1 - \epsilon(R) \le P(T \mid x_0 \in R) & \le 1 - \max_k \inf_{t \in R} \mathrm{tail}_k(t), \\
    \epsilon(R) & = \sum_k \sup_{t \in R} \mathrm{tail}_k(t),
    \end{array}
    $$

    :math:`\mathrm{tail}_k(t) = P(x_k \notin [lo_k, hi_k] \mid x_0 = t)`, quasi-convex in the conditional mean,
    which is affine in :math:`t`: the sup is at an end of :math:`R`, the inf at the point of :math:`R` whose mean is
    closest to the box's centre.  When the other coordinates stay inside their box (their conditional means
    well inside, the usual case away from the corners of the conditioning box) the gap
    :math:`-\log(1 - \epsilon)` is tiny in any dimension, where the sub-box bounds of :class:`BoxProbability`
    keep a gap of the order of the mean-field error.

    **Affine minorant.**  With :math:`\eta = S^{-1} \mu` and
    :math:`\tilde F_A(\eta) = \log \int_A \exp(\eta^\top x - x^\top S^{-1} x / 2)\, dx`,
    :math:`\log P(A; \mu) = \tilde F_A(\eta) - \eta^\top S \eta / 2 + \mathrm{const}`.
    :math:`\tilde F_{R \times \mathbb{R}^d}` is convex with gradient :math:`E[x \mid x_0 \in R]` at :math:`\eta_c`, and
    :math:`\log P(T \mid x_0 \in R; \mu) \ge \log(1 - \epsilon_F(R))` for every :math:`\mu` of a face :math:`F`
    (:math:`\epsilon_F` the sum over :math:`k` of the sup over the face: the conditional means are affine in
    :math:`\eta`, so the sup is at the face's corners), so on :math:`F`

    $$
    \log P(R \times T; \mu) \ge \log P(R; \mu_c) + \eta_c^\top \mu_c / 2 - \eta^\top \mu / 2
      + E_c[x \mid x_0 \in R] \cdot (\eta - \eta_c) + \log(1 - \epsilon_F(R)),
    $$

    affine in :math:`\eta` up to the quadratic term that cancels against the numerator's (the cell engine's vertex
    bound, :mod:`puffgm.gaussian.multivariate`)."""

    def __init__(self, S, lo, hi, delta):
        S = np.asarray(S, float)
        self.S, self.delta = S, float(delta)
        self.lo, self.hi = np.asarray(lo, float)[1:], np.asarray(hi, float)[1:]
        self.s0 = math.sqrt(S[0, 0])
        self.beta = S[1:, 0] / S[0, 0]
        var = np.diag(S)[1:] - S[1:, 0] ** 2 / S[0, 0]
        self.tau = np.where(var <= 1e-13 * np.diag(S)[1:], 0.0, np.sqrt(np.maximum(var, 0.0)))
        # rounding of the affine extension (as in SubBoxes.lower_at): relative to its largest term
        self.round_rel = max(1e-12, 64 * np.finfo(float).eps * float(np.linalg.cond(S)))

    def _base(self, mus):
        """Per mean (rows of mus) the part of the conditional means of x_1 .. x_d that does not depend on t."""
        mus = np.atleast_2d(np.asarray(mus, float))
        return mus[:, 1:] - mus[:, :1] * self.beta[None, :]

    def eps(self, r, mus):
        r""":math:`\epsilon(R)` for :math:`R = [r, r + \delta]`: the Bonferroni sum, each tail at its sup over R.

        The conditional means are those of ``mus``.
        """
        base = self._base(mus)
        r = np.asarray(r, float)
        E = bonferroni_sum(r, r + self.delta, 0.0, ConditionalTails(np.min(base, axis=0), np.max(base, axis=0),
                                                                     self.beta, self.tau, self.lo, self.hi))
        return np.minimum(E * (1 + 1e-9) + 1e-300, 1.0)   # rounding of the tails, outward

    def log_marginal(self, r, mu):
        r""":math:`\log P(x_0 \in [r, r + \delta])` under mean :math:`\mu`."""
        r = np.asarray(r, float)
        return log_interval_prob(r, r + self.delta, float(mu[0]), self.s0)

    def bounds(self, r, mu):
        r"""Certified (lower, upper) of :math:`\log P(R \times T; \mu)` for the regions :math:`R = [r, r + \delta]`."""
        r = np.asarray(r, float)
        lm = self.log_marginal(r, mu)
        inf_tail = (max_inf_tail(r, r + self.delta, 0.0, self._base(mu)[0], self.beta, self.tau, self.lo, self.hi)
                    if len(self.lo) else 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            up = lm + np.log1p(-np.minimum(inf_tail * (1 - 1e-9), 1.0))
            low = lm + np.log1p(-self.eps(r, mu))
        pad = 1e-12 * (1 + np.abs(lm))
        return np.where(np.isnan(low), -np.inf, low - pad), np.where(np.isnan(up), np.inf, up + pad)

    def minorant(self, r, eta_c, eps) -> Minorant:
        r"""The affine minorant's data at the centre's natural parameter ``eta_c`` (mean :math:`S \eta_c`).

        For the regions ``r``, given :math:`\epsilon_F(R)` (``eps``): (constant part, gradient rows
        :math:`E_c[x \mid x_0 \in R]`, ``eta_c``).
        """
        r = np.asarray(r, float)
        eta_c = np.asarray(eta_c, float)
        mu_c = self.S @ eta_c
        K = 1.0 / self.S[0, 0]
        _, t = log_trunc_normal(r, r + self.delta, np.full(len(r), mu_c[0] * K), K)
        grad = mu_c[None, :] + np.outer(t - mu_c[0], self.S[:, 0] / self.S[0, 0])
        with np.errstate(divide="ignore", invalid="ignore"):
            const = self.log_marginal(r, mu_c) + np.log1p(-np.minimum(eps, 1.0)) - grad @ eta_c
        const = np.where(np.isnan(const), -np.inf, const)
        return Minorant(const, grad, eta_c)

    def minorant_at(self, data, eta):
        r"""The affine minorant of :meth:`minorant` at the natural parameter ``eta`` (mean :math:`S \eta`).

        Certified lower bounds of :math:`\log P(R \times T)` on the face whose :math:`\varepsilon_F` was given.
        """
        const, grad, eta_c = data
        eta = np.asarray(eta, float)
        q_c, q = 0.5 * float(eta_c @ self.S @ eta_c), 0.5 * float(eta @ self.S @ eta)
        val = const + q_c - q + grad @ eta
        scale = np.abs(const) + abs(q_c) + abs(q) + np.abs(grad) @ np.abs(eta)
        with np.errstate(invalid="ignore"):
            return val - (self.round_rel * (1 + scale) + 1e-12)


class Minorant(NamedTuple):
    """The affine minorant's data of :meth:`RegionBonferroni.minorant`: constant part, gradient rows and ``eta_c``."""

    const: np.ndarray
    grad: np.ndarray
    eta_c: np.ndarray


def _quad(x, M):
    """Row-wise quadratic forms x_n' M x_n (a matrix product: faster than einsum on many rows)."""
    return np.sum((x @ M) * x, axis=1)


def _group_lse(x, pid, n):
    """log-sum-exp of x within the groups pid (0 .. n - 1); -inf for empty or all -inf groups."""
    m = np.full(n, -np.inf)
    np.maximum.at(m, pid, x)
    safe = np.where(np.isfinite(m), m, 0.0)
    tot = np.zeros(n)
    with np.errstate(invalid="ignore", over="ignore"):
        np.add.at(tot, pid, np.exp(x - safe[pid]))
    with np.errstate(divide="ignore"):
        out = safe + np.log(tot)
    return np.where(np.isfinite(m), out, m)
