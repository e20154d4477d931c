r"""Certified bounds of the truncated marginal of one coordinate from (n - 1)-dimensional box probabilities.

Prior: :math:`x \sim N(m, \Sigma)` truncated to the box :math:`B = \prod_k [lo_k, hi_k]`.  Every leakage engine of
:mod:`puffgm.gaussian.leakage` needs the marginal term :math:`\log P_0(R) - \log P_0(R')` of the secret coordinate
:math:`x_i` under the *truncated* prior (:math:`R, R'` regions :math:`[r, r + \delta]`).  With :math:`N_0` the
untruncated marginal :math:`N(m_i, \Sigma_{ii})` and

$$
G(t) = P(x_{-i} \in B_{-i} \mid x_i = t),
$$

:math:`P_0(R) = \int_R N_0(t) G(t)\, dt / Z = N_0(R)\, P(x_{-i} \in B_{-i} \mid x_i \in R) / Z`.  Given
:math:`x_i = t`, :math:`x_{-i}` is Gaussian with precision :math:`P = Q_{-i,-i}` (the block of :math:`Q = \Sigma^{-1}`;
the inverse of the conditional covariance :math:`\Sigma_{-i,-i} - \Sigma_{-i,i} \Sigma_{i,-i} / \Sigma_{ii}`) and mean

$$
\mu(t) = m_{-i} + c\, (t - m_i), \qquad c = \Sigma_{-i,i} / \Sigma_{ii}.
$$

*Log-concavity.*  :math:`G(t) = (1_B * \varphi_P)(\mu(t))` is the convolution of two log-concave functions (the
box indicator and a Gaussian density) composed with an affine map, hence log-concave in :math:`t` (Prekopa).  So

* numerator: :math:`P(x_{-i} \in B_{-i} \mid x_i \in R) = \int_R N_0 G / \int_R N_0 \ge \inf_{t \in R} G(t)`, and
  for every region :math:`R` inside a cell :math:`[u_a, u_b]` the infimum of the log-concave :math:`G` over
  :math:`[u_a, u_b]` is at an end:

  $$
  -\log P(x_{-i} \in B_{-i} \mid x_i \in R) \le -\min(\log G(u_a), \log G(u_b));
  $$

* denominator: :math:`P(x_{-i} \in B_{-i} \mid x_i \in R') \le \sup_{t \in [u_a, u_b]} G(t)`.  For
  :math:`t = u_a + s`, :math:`s \in [0, h]`, :math:`h = u_b - u_a`, :math:`x_{-i} = \mu(u_a) + c s + e` with
  :math:`e \sim N(0, P^{-1})`, and :math:`\mu(u_a) + c s + e \in B` iff
  :math:`\mu(u_a) + e \in B - c s = \prod_k [lo_k - c_k s, hi_k - c_k s]`.  As :math:`s` runs over :math:`[0, h]`,
  :math:`-c_k s` runs over :math:`[\min(0, -c_k h), \max(0, -c_k h)]`, so every such box lies inside the
  *expanded* box

  $$
  B^+(u_a, u_b) = \prod_k [lo_k + \min(0, -c_k h), hi_k + \max(0, -c_k h)] \quad \text{(shifted by } -c\, (u_a - m_i)),
  $$

  and :math:`\sup_{t \in [u_a, u_b]} G(t) \le P(\mu(u_a) + e \in B^+(u_a, u_b))`.  No derivative of :math:`G` is
  needed.

All box probabilities share the mean :math:`m_{-i}` (the boxes are shifted instead:
:math:`P(\mu(t) + e \in B) = P(m_{-i} + e \in B - c\, (t - m_i))`) and are bounded on both sides by
:class:`puffgm.gaussian.boxprob.BoxProbability` (the certified lower bound at the ends of a cell for the
numerator, the certified upper bound of the expanded box for the denominator).  The shifted box ends
are rounded outward (upper bound) or inward (lower bound) by
:math:`4 \epsilon_{\mathrm{mach}} (|lo_k| + |\mathrm{shift}_k|)` so that the floating-point box is inside
(outside) the exact one; the precision matrix's own rounding is covered by the widening of the leakage
value (:math:`64\, \epsilon_{\mathrm{mach}} \operatorname{cond}(\Sigma)`).  Values are cached by end point (lower
bounds) and by cell (upper bounds): the region sweeps call the corrections many times on overlapping cells.
"""

from __future__ import annotations

import numpy as np

from puffgm.gaussian.boxprob import BoxProbability

__all__ = ["TruncatedMarginal"]

_EPS = np.finfo(float).eps


class TruncatedMarginal:
    r"""Certified bounds of :math:`\log G(t) = \log P(x_{-i} \in B_{-i} \mid x_i = t)` for one coordinate :math:`i`.

    See the module docstring.

    Parameters
    ----------
    cov : (n, n) array
        Symmetric positive definite, :math:`n \ge 2`.
    mean, lower, upper : (n,) arrays
        The mean and the box :math:`B`.
    i : int
        The secret coordinate.
    tol, max_boxes : float, int
        Tolerance and sub-box budget of :class:`~puffgm.gaussian.boxprob.BoxProbability` per box
        probability (the bounds are certified whatever the budget; a larger budget makes them tighter).
    """

    def __init__(self, cov, mean, lower, upper, i, *, tol: float = 1e-3, max_boxes: int = 256):
        cov = np.asarray(cov, float)
        n = len(cov)
        i = int(i)
        ok = np.array([k for k in range(n) if k != i], dtype=int)
        if not ok.size:
            raise ValueError("TruncatedMarginal needs at least two coordinates.")
        self.i, self.ok = i, ok
        self.m_i = float(mean[i])
        self.mu0 = np.asarray(mean, float)[ok].copy()
        self.lo = np.asarray(lower, float)[ok].copy()
        self.hi = np.asarray(upper, float)[ok].copy()
        self.c = cov[ok, i] / cov[i, i]
        S = cov[np.ix_(ok, ok)] - np.outer(cov[ok, i], cov[i, ok]) / cov[i, i]
        S = (S + S.T) / 2
        L = np.linalg.cholesky(S)
        Linv = np.linalg.solve(L, np.eye(len(ok)))
        P = Linv.T @ Linv
        self.P = (P + P.T) / 2
        self.box = BoxProbability(self.P, tol=tol, max_boxes=max_boxes)
        self._low: dict = {}   # t -> certified lower bound of log G(t)
        self._up: dict = {}    # (ua, ub) -> certified upper bound of sup_{[ua, ub]} log G
        self.evaluations = 0

    def _shifted(self, t, h):
        """Boxes (LO, HI) for the points t (h = 0) or the cells [t, t + h] (expanded), in the frame of
        the shared mean m_-i, rounded outward when h is given (upper bounds) and inward otherwise."""
        shift = self.c[None, :] * (t[:, None] - self.m_i)
        LO = self.lo[None, :] - shift
        HI = self.hi[None, :] - shift
        pad = 4 * _EPS * (np.abs(self.lo)[None, :] + np.abs(self.hi)[None, :] + np.abs(shift)) + 1e-300
        if h is None:
            return LO + pad, HI - pad
        ch = -self.c[None, :] * h[:, None]
        padh = pad + 4 * _EPS * np.abs(ch)
        return LO + np.minimum(0.0, ch) - padh, HI + np.maximum(0.0, ch) + padh

    def log_lower(self, t):
        """Certified lower bounds of log G(t), elementwise (cached by the float value of t)."""
        t = np.asarray(t, float).ravel()
        new = np.unique(np.array([v for v in t.tolist() if v not in self._low], float))
        if new.size:
            LO, HI = self._shifted(new, None)
            lt, _, _ = self.box.bounds_many(self.mu0, LO, HI)
            lt = np.minimum(np.where(np.isnan(lt), -np.inf, lt), 0.0)
            self.evaluations += new.size
            self._low.update(zip(new.tolist(), lt.tolist(), strict=True))
        return np.array([self._low[v] for v in t.tolist()], float)

    def log_sup_upper(self, ua, ub):
        r"""Certified upper bounds of :math:`\sup_{t \in [u_a, u_b]} \log G(t)` by the expanded box, per cell.

        Each is :math:`\le 0`.
        """
        ua = np.asarray(ua, float).ravel()
        ub = np.asarray(ub, float).ravel()
        keys = list(zip(ua.tolist(), ub.tolist(), strict=True))
        new = sorted({k for k in keys if k not in self._up})
        if new:
            a = np.array([k[0] for k in new], float)
            b = np.array([k[1] for k in new], float)
            LO, HI = self._shifted(a, np.maximum(b - a, 0.0))
            _, ut, _ = self.box.bounds_many(self.mu0, LO, HI)
            ut = np.minimum(np.where(np.isnan(ut), 0.0, ut), 0.0)
            self.evaluations += len(new)
            self._up.update(zip(new, ut.tolist(), strict=True))
        return np.array([self._up[k] for k in keys], float)

    def corr_num(self, ua, ub):
        r"""Upper bound of :math:`-\log P(x_{-i} \in B_{-i} \mid x_i \in R)` for the regions in a cell.

        For every region :math:`R` inside :math:`[u_a, u_b]`, it is :math:`-\min(\log G(u_a), \log G(u_b))`,
        each :math:`\log G` a certified lower bound (log-concavity; :math:`\ge 0`).
        """
        return np.maximum(-np.minimum(self.log_lower(ua), self.log_lower(ub)), 0.0)

    def corr_den(self, ua, ub):
        r"""Upper bound of :math:`\log P(x_{-i} \in B_{-i} \mid x_i \in R')` for the regions in a cell.

        For every region :math:`R'` inside :math:`[u_a, u_b]`; each is :math:`\le 0`.
        """
        return self.log_sup_upper(ua, ub)

    def __repr__(self):
        return (f"TruncatedMarginal(i={self.i}, dim={len(self.ok)}, cached={len(self._low)} points, "
                f"{len(self._up)} cells)")
