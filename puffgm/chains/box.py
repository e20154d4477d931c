r"""Infinite chain classes: a box of binary transition matrices, with certified suprema.

Song, Wang and Chaudhuri, section 5.2 (Figure 4) use the infinite class

$$
\Theta = \{(q, P(p_0, p_1)) : p_0, p_1 \in [\alpha, 1 - \alpha],\ q \text{ in the simplex}\}, \qquad
P(p_0, p_1) = \begin{pmatrix} p_0 & 1 - p_0 \\ 1 - p_1 & p_1 \end{pmatrix},
$$

with :math:`p_0 = P(X_{t+1} = 0 \mid X_t = 0)` and :math:`p_1 = P(X_{t+1} = 1 \mid X_t = 1)`.
:class:`ChainParameterBox` is that class for any box :math:`[p_0^{\mathrm{lo}}, p_0^{\mathrm{hi}}] \times
[p_1^{\mathrm{lo}}, p_1^{\mathrm{hi}}]` strictly inside :math:`(0, 1)^2`, with an ``"any"`` (every :math:`q`, as in
the paper) or ``"stationary"`` initial distribution.  Every calibration of
the library accepts it, and each returns a value that is *proven* to be at
least the supremum over the box of the per-prior value:

* GroupDP: :math:`T / \epsilon` (does not depend on :math:`\Theta`);
* MQMApprox (Algorithm 4): closed-form extremes.  For a binary chain with
  :math:`q = 1 - p_0`, :math:`r = 1 - p_1`, the stationary law is :math:`(r, q) / (q + r)`, so

  $$
  \inf \pi_{\min} = \min\left(\frac{r_{\mathrm{lo}}}{r_{\mathrm{lo}} + q_{\mathrm{hi}}},
    \frac{q_{\mathrm{lo}}}{q_{\mathrm{lo}} + r_{\mathrm{hi}}}\right);
  $$

  the chain is reversible with second eigenvalue :math:`\lambda = p_0 + p_1 - 1`, linear in the
  parameters, so :math:`\max |\lambda|` is attained at the corners :math:`(p_0^{\mathrm{lo}}, p_1^{\mathrm{lo}})` or
  :math:`(p_0^{\mathrm{hi}}, p_1^{\mathrm{hi}})`, giving :math:`\inf g = 2 (1 - \max |\lambda|)` (Lemma C.4) and
  :math:`\inf (1 - \lambda_2(P P^*)) = 1 - \max \lambda^2`.  The bounds of Lemma 4.8 only
  grow as :math:`\pi_{\min}` and :math:`g` shrink, so these extremes calibrate the whole box;
* GK16: :math:`\gamma` = sup over the box of :math:`\max_j |\log f_j| / 2`, bracketed by interval
  arithmetic with bisection (:func:`gk16_gamma_bounds`); the upper end is
  used (the noise grows with :math:`\gamma`) and the mechanism is declared applicable
  only if the certified spectral norm :math:`2 \gamma_{\mathrm{up}} \cos(\pi / (T + 1)) < 1`;
* MQMExact (Algorithm 3): branch and bound (:func:`certified_mqm_exact`).
  A *lower* bound is the exact :math:`\sigma` of the chain at sample points (cell
  centres and the box corners, by :class:`~puffgm.chains.MQMExact`).  An
  *upper* bound over a cell :math:`C` of the parameter box: for every node :math:`i` take the
  quilt :math:`Q_i` that is optimal at a point in or near the cell (and :math:`Q_i` widened 2, 4
  and 8 times), and enclose its
  max-influence over the whole cell by interval arithmetic on the closed form
  of the matrix powers of a binary chain,

  $$
  \begin{array}{ll}
  P^n(0, 0) = (r + q u) / s, & P^n(0, 1) = q (1 - u) / s, \\
  P^n(1, 0) = r (1 - u) / s, & P^n(1, 1) = (q + r u) / s, \\
  s = q + r, & u = \lambda^n,
  \end{array}
  $$

  (equation (5) only takes ratios within a row or within a column, so :math:`s`
  cancels; moreover the term :math:`\log \pi(0)/\pi(1)` common to the row ratios cancels
  exactly against the marginal term of :math:`X_i`, so only the remaining parts are
  enclosed, see :func:`box_influence_bounds`).  Since
  :math:`\sigma(\theta) = \max_i \min_Q \mathrm{card}(X_N) / (\epsilon - e_\theta(Q \mid X_i))`
  and any quilt bounds the minimum,
  :math:`\sup_C \sigma \le \max_i \min(T / \epsilon, \mathrm{card}(Q_i) / (\epsilon - e_{\mathrm{up}}(Q_i \mid X_i)))`.
  Cells whose upper bound exceeds
  :math:`(1 + \mathrm{rtol})` times the best lower bound are split in four until none is left;
  the returned :math:`\sigma` is the largest upper bound over the final cells, so it
  is :math:`\ge` the true supremum, and within ``rtol`` of it when the search
  completes (``details["certified_gap"]``).  Floating-point rounding of the
  closed forms (relative :math:`10^{-15}`) is covered by adding :math:`10^{-9}` to every enclosed
  influence.

As for finite families, the calibration is the supremum over the box of each
transition matrix's own optimum (Pufferfish privacy is a condition per prior);
the ``"any"`` initial distribution keeps the sup over :math:`q` inside each quilt
(appendix C.4), exactly as a finite ``"any"`` member does.
"""

from __future__ import annotations

import hashlib
import math
import numbers
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from puffgm.chains.baselines import gk16_gamma
from puffgm.chains.exact import PER_NODE_LIMIT, THEOREM_EXACT, MQMExact
from puffgm.chains.priors import ChainPriorClass, InfiniteChainClass, check_length
from puffgm.core.results import CalibrationResult, QuiltGraph
from puffgm.core.validation import check_positive_finite
from puffgm.exceptions import ParameterError, PriorError
from puffgm.mechanisms.mqm_loop import group_dp_sigma, no_gain_over

__all__ = ["ChainParameterBox", "certified_mqm_exact", "gk16_gamma_bounds", "box_influence_bounds", "box_to_json",
           "box_from_json"]

#: Added to every enclosed max-influence to cover floating-point rounding of the closed forms.
ROUNDING_SLACK = 1e-9
#: Default relative tolerance of the certified MQMExact supremum.
DEFAULT_RTOL = 1e-3
_KINDS = ("any", "stationary")


def _interval(value, name: str) -> tuple:
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        value = (value, value)
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise PriorError(f"The '{name}' range of the parameter box must be a pair [low, high]. Got {value!r} instead.")
    lo, hi = value
    for v in (lo, hi):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)):
            raise PriorError(f"The '{name}' range of the parameter box must hold two finite numbers. Got {value!r}.")
    lo, hi = float(lo), float(hi)
    if not 0.0 < lo <= hi < 1.0:
        raise PriorError(
            f"The '{name}' range of the parameter box must satisfy 0 < low <= high < 1. Got [{lo!r}, {hi!r}] instead."
        )
    return lo, hi


def _rebuild_box(p0, p1, initial, length, states, name):
    return ChainParameterBox(p0, p1, initial=initial, length=length, states=states, name=name)


class ChainParameterBox(InfiniteChainClass):
    r"""The infinite class of binary chains with :math:`p_0` and :math:`p_1` in given intervals.

    An :class:`~puffgm.chains.priors.InfiniteChainClass`: MQMExact, MQMApprox, GroupDP
    and GK16 accept it and call its :meth:`certified_exact`, :meth:`mixing_bounds` and
    :meth:`gk16_gamma_bounds` (module docstring).

    Parameters
    ----------
    p0, p1 : pair of floats (or one float for a degenerate range)
        Ranges of :math:`p_0 = P(X_{t+1} = 0 \mid X_t = 0)` and :math:`p_1 = P(X_{t+1} = 1 \mid X_t = 1)`,
        strictly inside (0, 1) (then every chain of the box is irreducible,
        aperiodic and reversible, as section 5.2 of Song et al. notes).
    initial : {"any", "stationary"}
        ``"any"``: every initial distribution of the simplex (the paper's
        Figure 4 class); ``"stationary"``: each chain starts from its own
        stationary distribution.
    length : int
        The chain length T.
    states : pair of str, optional
        Names of the states (default ``("0", "1")``).

    Examples
    --------
    >>> from puffgm.chains import ChainParameterBox, MQMApprox, gk16
    >>> box = ChainParameterBox(p0=(0.2, 0.8), p1=(0.2, 0.8), initial="any", length=100)
    >>> round(box.mixing_bounds()["pi_min"], 6), round(box.mixing_bounds()["gap_rev"], 6)
    (0.2, 0.8)
    >>> gk16(box, epsilon=1.0).applicable
    False
    """

    __slots__ = ("p0", "p1", "initial_kind", "length", "states", "name", "fingerprint", "notes")
    p0: tuple[float, float]
    p1: tuple[float, float]
    initial_kind: str
    length: int
    states: tuple[str, ...]
    name: str
    fingerprint: str
    notes: tuple[str, ...]

    k = 2

    def __init__(self, p0, p1, *, initial="any", length, states=None, name="box"):
        p0 = _interval(p0, "p0")
        p1 = _interval(p1, "p1")
        if not isinstance(initial, str) or initial not in _KINDS:
            raise PriorError(
                f"The initial distribution of a parameter box must be one of {list(_KINDS)}. Got {initial!r} instead."
            )
        T = check_length(length, "ChainParameterBox")
        if states is None:
            states = ("0", "1")
        states = tuple(str(s) for s in states)
        if len(states) != 2 or len(set(states)) != 2:
            raise PriorError(f"A parameter box is a binary chain: give two distinct state names. Got {list(states)}.")
        for key, v in (("p0", p0), ("p1", p1), ("initial_kind", initial), ("length", T), ("states", states),
                       ("name", str(name)), ("notes", ())):
            object.__setattr__(self, key, v)
        h = hashlib.sha256(repr(("box", p0, p1, initial, T, states)).encode())
        object.__setattr__(self, "fingerprint", "chainbox-" + h.hexdigest()[:16])

    def __setattr__(self, key, value):
        raise AttributeError("ChainParameterBox is immutable")

    def __reduce__(self):  # picklable (for calibrate_many's workers) although immutable
        return (_rebuild_box, (self.p0, self.p1, self.initial_kind, self.length, self.states, self.name))

    def __repr__(self):
        return (f"ChainParameterBox(p0={list(self.p0)}, p1={list(self.p1)}, initial={self.initial_kind!r}, "
                f"T={self.length}, {self.fingerprint})")

    @property
    def initial_kinds(self) -> frozenset:
        return frozenset({self.initial_kind})

    def with_length(self, length: int) -> ChainParameterBox:
        """The same box with another chain length T."""
        return ChainParameterBox(self.p0, self.p1, initial=self.initial_kind, length=length, states=self.states,
                                 name=self.name)

    @staticmethod
    def transition(p0: float, p1: float) -> np.ndarray:
        """P(p0, p1) = [[p0, 1 - p0], [1 - p1, p1]]."""
        return np.array([[p0, 1.0 - p0], [1.0 - p1, p1]])

    def member(self, p0: float, p1: float):
        """The one-chain :class:`~puffgm.chains.ChainPriorClass` of the point (p0, p1) of the box."""
        (p0lo, p0hi), (p1lo, p1hi) = self.p0, self.p1
        if not (p0lo <= p0 <= p0hi and p1lo <= p1 <= p1hi):
            raise ParameterError(f"The point ({p0}, {p1}) is outside the parameter box.")
        return ChainPriorClass.from_matrices(self.transition(p0, p1), self.initial_kind, self.length, self.states)

    def corners(self) -> list:
        """The (distinct) corners (p0, p1) of the box."""
        out = []
        for a in self.p0:
            for b in self.p1:
                if (a, b) not in out:
                    out.append((a, b))
        return out

    def to_spec(self) -> dict:
        """The JSON chain spec of this box (``puffgm calibrate BOX.json``)."""
        return {"box": {"p0": list(self.p0), "p1": list(self.p1)}, "initial": self.initial_kind,
                "length": self.length, "states": list(self.states)}

    # -------------------------------------------------------------- closed forms
    def mixing_bounds(self) -> dict:
        r"""Closed-form extremes over the box of the MQMApprox parameters.

        Returns a dict with ``pi_min`` (inf over the box of :math:`\min_x \pi(x)`),
        ``lambda_abs_max`` (:math:`\max |p_0 + p_1 - 1|`), ``gap_ppstar``
        :math:`= 1 - \lambda_{\mathrm{abs\,max}}^2` (inf of :math:`1 - \lambda_2(P P^*)`, :math:`P` reversible so
        :math:`P^* = P`) and ``gap_rev`` :math:`= 2 (1 - \lambda_{\mathrm{abs\,max}})` (inf of the Lemma C.4
        gap), ``reversible`` (True).
        """
        (p0lo, p0hi), (p1lo, p1hi) = self.p0, self.p1
        q_lo, q_hi = 1.0 - p0hi, 1.0 - p0lo
        r_lo, r_hi = 1.0 - p1hi, 1.0 - p1lo
        # pi = (r, q) / (q + r): min(q, r)/(q + r) = 1 / (1 + max/min) is smallest at the largest ratio
        pi_min = min(r_lo / (r_lo + q_hi), q_lo / (q_lo + r_hi))
        lam = max(abs(p0lo + p1lo - 1.0), abs(p0hi + p1hi - 1.0))
        return {"pi_min": pi_min, "lambda_abs_max": lam, "gap_ppstar": 1.0 - lam * lam,
                "gap_rev": 2.0 * (1.0 - lam), "reversible": True}

    def gk16_gamma_bounds(self, *, tol: float = 1e-9, max_cells: int = 20000) -> tuple:
        r"""Certified (lower, upper) bracket of GK16's :math:`\sup \gamma` over the box (:func:`gk16_gamma_bounds`)."""
        return gk16_gamma_bounds(self.p0, self.p1, tol=tol, max_cells=max_cells)

    def certified_exact(self, *, epsilon: float, lipschitz: float = 1.0, **settings) -> CalibrationResult:
        """MQMExact over the box, certified by branch and bound (:func:`certified_mqm_exact`; ``settings`` go there)."""
        return certified_mqm_exact(self, epsilon=epsilon, lipschitz=lipschitz, **settings)


# ============================================================== interval tools
def _pos_mul(a, b):
    (a_lo, a_hi), (b_lo, b_hi) = a, b
    return a_lo * b_lo, a_hi * b_hi


def _pos_add(a, b):
    (a_lo, a_hi), (b_lo, b_hi) = a, b
    return a_lo + b_lo, a_hi + b_hi


def _pos_div(a, b):
    (a_lo, a_hi), (b_lo, b_hi) = a, b
    return a_lo / b_hi, a_hi / b_lo


def _gk16_enclosure(p0lo, p0hi, p1lo, p1hi):
    r"""Upper bound of :math:`\max_j |\log f_j| / 2` over cells (vectorised).

    The :math:`f_j` are those of :func:`~puffgm.chains.baselines.gk16_gamma`.

    With :math:`q = P(0 \to 1) = 1 - p_0` and :math:`p = P(1 \to 1) = p_1` every sub-expression of
    :math:`f_1, \dots, f_4` is a sum, product or quotient of positive quantities, so
    endpoint-wise interval arithmetic encloses each :math:`f_j`.
    """
    q = (1.0 - p0hi, 1.0 - p0lo)
    p = (p1lo, p1hi)
    nq = (p0lo, p0hi)  # 1 - q
    np_ = (1.0 - p1hi, 1.0 - p1lo)  # 1 - p
    pp = _pos_mul(p, p)
    f1 = _pos_div(_pos_add(pp, _pos_mul(p, nq)), _pos_add(pp, _pos_mul(q, np_)))
    f2 = _pos_mul(_pos_div(p, q), _pos_div(_pos_add(_pos_mul(nq, nq), _pos_mul(q, np_)),
                                           _pos_add(_pos_mul(np_, nq), _pos_mul(p, np_))))
    f3 = _pos_mul(_pos_div(np_, nq), _pos_div(_pos_add(_pos_mul(nq, q), _pos_mul(q, p)),
                                              _pos_add(_pos_mul(np_, q), pp)))
    f4 = _pos_div(_pos_add(_pos_mul(nq, nq), _pos_mul(p, nq)), _pos_add(_pos_mul(nq, nq), _pos_mul(q, np_)))
    up = None
    for lo, hi in (f1, f2, f3, f4):
        u = np.maximum(np.abs(np.log(lo)), np.abs(np.log(hi))) / 2.0
        up = u if up is None else np.maximum(up, u)
    assert up is not None  # four factors above
    return up * (1 + 1e-12) + 1e-12  # rounding of the endpoint arithmetic


def gk16_gamma_bounds(p0, p1, *, tol: float = 1e-9, max_cells: int = 20000) -> tuple:
    r"""Certified bracket (lower, upper) of :math:`\sup_{(p_0, p_1) \in \text{box}} \gamma_{\mathrm{GK16}}(P(p_0,p_1))`.

    Branch and bound: the lower end is the largest :math:`\gamma` at cell centres and
    box corners; the upper end is the largest interval enclosure over the
    remaining cells; cells are split in four until :math:`\text{upper} - \text{lower} \le` ``tol``
    (relative to :math:`\max(1, \text{lower})`) or ``max_cells`` cells were enclosed.
    """
    p0 = _interval(p0, "p0")
    p1 = _interval(p1, "p1")
    cells = np.array([[*p0, *p1]])
    lower = max(gk16_gamma(ChainParameterBox.transition(a, b)) for a in p0 for b in p1)
    used = 0
    accepted = -math.inf
    while True:
        up = _gk16_enclosure(*cells.T)
        used += len(cells)
        order = np.argsort(-up)[:8]
        for c in cells[order]:
            lower = max(lower, gk16_gamma(ChainParameterBox.transition((c[0] + c[1]) / 2, (c[2] + c[3]) / 2)))
        keep = up > lower + tol * max(1.0, lower)
        if (~keep).any():
            accepted = max(accepted, float(up[~keep].max()))
        if not keep.any() or used + 4 * int(keep.sum()) > max_cells:
            if keep.any():
                accepted = max(accepted, float(up[keep].max()))
            return lower, max(accepted, lower)
        cells = _split(cells[keep])


def _split(cells: np.ndarray) -> np.ndarray:
    """Split each cell [p0lo, p0hi, p1lo, p1hi] into 4 (2 along a degenerate dimension, 1 if a point)."""
    out: list = []
    for a0, a1, b0, b1 in cells:
        am, bm = (a0 + a1) / 2, (b0 + b1) / 2
        xs = [(a0, am), (am, a1)] if a1 > a0 else [(a0, a1)]
        ys = [(b0, bm), (bm, b1)] if b1 > b0 else [(b0, b1)]
        out.extend((x0, x1, y0, y1) for x0, x1 in xs for y0, y1 in ys)
    return np.array(out, dtype=float)


# ===================================================== influence enclosures
def _power_interval(lam_lo, lam_hi, n):
    r"""Enclosure of :math:`\lambda^n` for :math:`\lambda \in [\lambda_{lo}, \lambda_{hi}]` (arrays (m,)), n in (N,).

    Shape (m, N).
    """
    lo, hi = lam_lo[:, None], lam_hi[:, None]
    n = np.asarray(n)[None, :]
    a, b = lo ** n, hi ** n
    odd = (n % 2) == 1
    straddle = (lo < 0) & (hi > 0)
    plo = np.where(odd, a, np.where(straddle, 0.0, np.minimum(a, b)))
    phi = np.where(odd, b, np.maximum(a, b))
    return plo, phi


def _log_lo(x):
    return np.log(x, out=np.full(np.shape(x), -math.inf), where=x > 0)


def box_influence_bounds(cells: np.ndarray, nmax: int) -> dict:
    r"""Interval enclosures of the equation-(5) tables over cells of a binary parameter box.

    With :math:`q = 1 - p_0`, :math:`r = 1 - p_1`, :math:`\rho = q / r` and :math:`u = \lambda^n`, the closed
    form of :math:`P^n` gives, for the secret pair :math:`(x, x') = (0, 1)`,

    $$
    \begin{array}{rlrl}
    \log \frac{P^n(0, 0)}{P^n(0, 1)} &= l + h_0(n), & \log \frac{P^n(1, 0)}{P^n(1, 1)} &= l + h_1(n), \\
    \log \frac{P^n(0, 0)}{P^n(1, 0)} &= h_0(n), & \log \frac{P^n(0, 1)}{P^n(1, 1)} &= h_1(n), \\
    h_0 &= \log(1 + \rho u) - \log(1 - u), & h_1 &= \log(1 - u) - \log(1 + u / \rho),
    \end{array}
    $$

    with :math:`l = \log(r / q) = \log \pi(0) / \pi(1)`.  So :math:`A_n(0, 1) = l + \max(h_0, h_1)`,
    :math:`A_n(1, 0) = -l + \max(-h_0, -h_1)`, :math:`B_n = A_n` without :math:`l`, and the marginal term of
    node :math:`i` (:math:`C = A_{i-1}` with the pair swapped for ``"any"``, :math:`C = \log \pi(x') / \pi(x)`
    for ``"stationary"``) carries :math:`-l` for :math:`(0, 1)` and :math:`+l` for :math:`(1, 0)`: in the sum
    :math:`A + C` of equation (5) :math:`l` cancels *exactly*.  Enclosing the :math:`l`-free parts (whose
    widths do not blow up with :math:`1/r` or :math:`1/q`) is what makes small influences certifiable on
    wide cells.

    Parameters
    ----------
    cells : array (m, 4)
        Rows [p0_lo, p0_hi, p1_lo, p1_hi].
    nmax : int
        Largest power :math:`n`.

    Returns
    -------
    dict of ndarray
        Arrays of shape (m, nmax + 1, 2), indexed by cell, :math:`n` (0 = empty side, value 0) and
        the pair :math:`(x, x')` in :math:`((0, 1), (1, 0))`: ``A`` (upper bound of :math:`A_n` minus its
        :math:`l` term), ``B`` (upper bound of :math:`B_n`), ``C_any`` (upper bound of the ``"any"`` marginal
        term of node :math:`n + 1` minus its :math:`l` term); valid as :math:`A + C` (left end present) and
        :math:`B`.  A degenerate cell (a point) gives the exact values.
    """
    cells = np.asarray(cells, dtype=float)
    p0lo, p0hi, p1lo, p1hi = cells.T
    q_lo, q_hi = 1.0 - p0hi, 1.0 - p0lo
    r_lo, r_hi = 1.0 - p1hi, 1.0 - p1lo
    n = np.arange(1, nmax + 1)
    ulo, uhi = _power_interval(p0lo + p1lo - 1.0, p0hi + p1hi - 1.0, n)
    rho = ((q_lo / r_hi)[:, None], (q_hi / r_lo)[:, None])
    irho = ((r_lo / q_hi)[:, None], (r_hi / q_lo)[:, None])

    def one_plus(c):  # enclosure of log(1 + c u), c > 0
        c_lo, c_hi = c
        lo = 1.0 + np.minimum(c_lo * ulo, c_hi * ulo)
        hi = 1.0 + np.maximum(c_lo * uhi, c_hi * uhi)
        return _log_lo(lo), np.log(np.maximum(hi, 1e-300))

    l1u = (np.log(1.0 - uhi), np.log(1.0 - ulo))  # log(1 - u); 1 - u > 0 since |lambda| < 1
    lp_lo, lp_hi = one_plus(rho)
    lq_lo, lq_hi = one_plus(irho)
    l1u_lo, l1u_hi = l1u
    h0 = (lp_lo - l1u_hi, lp_hi - l1u_lo)
    h1 = (l1u_lo - lq_hi, l1u_hi - lq_lo)
    m = cells.shape[0]
    H = np.zeros((m, nmax + 1, 2))
    H[:, 1:, 0] = np.maximum(h0[1], h1[1])  # upper of max(h0, h1)
    H[:, 1:, 1] = np.maximum(-h0[0], -h1[0])  # upper of max(-h0, -h1)
    H = np.nan_to_num(H, nan=math.inf, neginf=math.inf)
    return {"A": H, "B": H, "C_any": H[:, :, ::-1]}


def _quilt_table(result, T: int) -> np.ndarray:
    """(a, b) per node 1..T from an MQMExact per-node result (a = 0: no left end, b = 0: no right end)."""
    out = np.zeros((T, 2), dtype=np.int64)
    for c in result.per_node:
        i = int(c.node[1:])
        for name in c.quilt:
            j = int(name[1:])
            if j < i:
                out[i - 1, 0] = i - j
            else:
                out[i - 1, 1] = j - i
    return out


def _scores(box, tab, a, b, eps: float) -> np.ndarray:
    r"""Upper bounds of :math:`\mathrm{card} / (\epsilon - e)` for quilts :math:`(a, b)`, per cell and node (m, T).

    inf where :math:`e \ge \epsilon`.
    """
    T = box.length
    m = a.shape[0]
    rows = np.arange(m)[:, None]
    nodes = np.arange(1, T + 1)[None, :]
    A = tab["A"][rows, a]  # (m, T, 2)
    B = tab["B"][rows, b]
    if box.initial_kind == "any":
        C = tab["C_any"][rows, np.broadcast_to(nodes - 1, a.shape)]
    else:  # stationary: log pi(x')/pi(x) is exactly the l term, which cancels with A's
        C = np.zeros(A.shape)
    C = np.where((a > 0)[:, :, None], C, 0.0)  # the marginal of X_i enters only with a left end (Bayes)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.maximum((A + B + C).max(axis=2), 0.0) + ROUNDING_SLACK
    e = np.nan_to_num(e, nan=math.inf)
    card = np.where(a > 0, np.where(b > 0, a + b - 1, T - nodes + a), np.where(b > 0, nodes + b - 1, T))
    e = np.where((a == 0) & (b == 0), 0.0, e)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(e < eps, card / (eps - e), math.inf)


def _cell_upper(box, cells, quilts, eps: float) -> np.ndarray:
    r"""Certified upper bound of :math:`\sigma` over each cell, using per-node quilts ``quilts`` (m, T, 2).

    Each node may use any quilt, so besides the given quilt (optimal at a point near the
    cell) we also try it widened 2, 4 and 8 times on each side (clipped to the chain): a wider
    quilt has a smaller influence, so it tolerates the enclosure's slack on wide cells.  The
    node's bound is the smallest score; the trivial quilt caps it at :math:`T / \epsilon`.
    """
    T = box.length
    tab = box_influence_bounds(cells, max(1, T - 1))
    a, b = quilts[:, :, 0], quilts[:, :, 1]
    nodes = np.arange(1, T + 1)[None, :]
    score = np.full(a.shape, T / eps)  # the trivial quilt is always available
    for f in (1, 2, 4, 8):
        aa = np.where(a > 0, np.minimum(a * f, nodes - 1), 0)
        bb = np.where(b > 0, np.minimum(b * f, T - nodes), 0)
        score = np.minimum(score, _scores(box, tab, aa, bb, eps))
    return score.max(axis=1)


def certified_mqm_exact(box: ChainParameterBox, *, epsilon: float, lipschitz: float = 1.0,
                        rtol: float = DEFAULT_RTOL, initial_grid: int = 4, max_evaluations: int = 4000,
                        progress=None, options: Mapping | None = None) -> CalibrationResult:
    r"""MQMExact over a :class:`ChainParameterBox`: a certified upper bound of :math:`\sup_\theta \sigma_\theta`.

    Branch and bound over the parameter box (module docstring): lower bounds are
    the exact MQMExact :math:`\sigma` at sample points, upper bounds over cells come from
    interval enclosures of equation (5) (:func:`box_influence_bounds`).

    Parameters
    ----------
    box : ChainParameterBox
    epsilon : float
        The privacy parameter (> 0).
    lipschitz : float
        The Lipschitz constant L of the query.
    rtol : float
        Cells are refined until every cell's upper bound is within ``rtol`` of
        the best lower bound (default 1e-3).
    initial_grid : int
        The box is first cut into initial_grid x initial_grid cells.
    max_evaluations : int
        Budget of MQMExact evaluations (one per cell centre); if exhausted
        the result is still a certified upper bound, with a larger
        ``details["certified_gap"]`` and a note.
    progress : callable, optional
        ``progress(evaluations_done, budget)``.
    options : mapping, optional
        The calibration options as the user gave them to :func:`puffgm.calibrate`
        (``PriorKind.calibrate`` passes them down), recorded on the result
        (:attr:`~puffgm.core.results.CalibrationResult.options`, part of the composition key
        of its releases).  None (default) records none.

    Returns
    -------
    CalibrationResult
        ``sigma_max`` :math:`\ge` the sup over the box of the per-chain MQMExact :math:`\sigma`
        (the guarantee); ``details`` holds ``lower_bound`` (attained at
        ``worst_point``), ``certified_gap`` :math:`= \sigma_{\max} / \text{lower bound} - 1`,
        ``evaluations`` and ``cells``.

    Examples
    --------
    >>> from puffgm.chains import ChainParameterBox, MQMExact
    >>> box = ChainParameterBox(p0=(0.3, 0.7), p1=(0.3, 0.7), initial="any", length=30)
    >>> res = MQMExact(box).calibrate(epsilon=1.0)
    >>> res.details["lower_bound"] <= res.sigma_max <= res.details["lower_bound"] * 1.001
    True
    """
    if not isinstance(box, ChainParameterBox):
        raise ParameterError(f"certified_mqm_exact needs a ChainParameterBox; got {type(box).__name__}.")
    eps = check_positive_finite(epsilon, "epsilon", "certified_mqm_exact")
    lipschitz = check_positive_finite(lipschitz, "lipschitz", "certified_mqm_exact")
    rtol = check_positive_finite(rtol, "rtol", "certified_mqm_exact")
    if box.length > PER_NODE_LIMIT:
        raise ParameterError(
            f"The certified MQMExact supremum over a parameter box searches every node; T={box.length} is above "
            f"{PER_NODE_LIMIT}."
        )
    samples = _Samples(box, eps, lipschitz, max_evaluations, progress)
    for a, b in box.corners():
        samples.evaluate(a, b)
    (p0lo, p0hi), (p1lo, p1hi) = box.p0, box.p1
    samples.evaluate((p0lo + p0hi) / 2, (p1lo + p1hi) / 2)
    g = max(1, int(initial_grid))
    e0 = np.linspace(p0lo, p0hi, g + 1)
    e1 = np.linspace(p1lo, p1hi, g + 1)
    cells = np.unique(np.array([[e0[i], e0[i + 1], e1[j], e1[j + 1]] for i in range(g) for j in range(g)]), axis=0)
    accepted_upper, n_cells, complete = _branch_and_bound(samples, cells, rtol)
    return _certified_result(samples, max(accepted_upper, samples.best["sigma"]), rtol, n_cells, complete, options)


class _Source(NamedTuple):
    """An evaluated point (p0, p1) of the box and its per-node quilt table."""

    point: tuple[float, float]
    quilts: np.ndarray


class _Samples:
    """The points of a box where MQMExact was evaluated: their per-node quilts and the best lower bound."""

    def __init__(self, box: ChainParameterBox, eps: float, lipschitz: float, max_evaluations: int, progress):
        self.box, self.eps, self.lipschitz = box, eps, lipschitz
        self.max_evaluations, self.progress = max_evaluations, progress
        self.evaluations = 0
        self.best: dict[str, Any] = {"sigma": -math.inf, "point": None, "result": None}
        self.sources: list = []  # evaluated points (p0, p1) and their per-node quilts

    def exact_at(self, p0: float, p1: float) -> CalibrationResult:
        """The exact MQMExact result at the point (p0, p1); updates the best lower bound."""
        res = MQMExact(self.box.member(p0, p1), per_node=True).calibrate(epsilon=self.eps, lipschitz=self.lipschitz)
        self.evaluations += 1
        if res.sigma_max > self.best["sigma"]:
            self.best.update(sigma=res.sigma_max, point=(p0, p1), result=res)
        if self.progress is not None:
            self.progress(min(self.evaluations, self.max_evaluations), self.max_evaluations)
        return res

    def evaluate(self, p0: float, p1: float) -> int:
        """Evaluate the point (p0, p1) and keep its per-node quilts; returns its index in ``sources``."""
        self.sources.append(_Source((p0, p1), _quilt_table(self.exact_at(p0, p1), self.box.length)))
        return len(self.sources) - 1

    def nearest(self, cs: np.ndarray) -> np.ndarray:
        """Index of the evaluated point nearest to the centre of each cell."""
        pts = np.array([s.point for s in self.sources])
        cen = np.stack([(cs[:, 0] + cs[:, 1]) / 2, (cs[:, 2] + cs[:, 3]) / 2], axis=1)
        return np.argmin(((cen[:, None, :] - pts[None, :, :]) ** 2).sum(axis=2), axis=1)

    def inside(self, cs: np.ndarray, src: np.ndarray) -> np.ndarray:
        """Whether the point ``src[j]`` lies in cell ``cs[j]``, per cell."""
        pts = np.array([self.sources[j].point for j in src])
        return ((cs[:, 0] <= pts[:, 0]) & (pts[:, 0] <= cs[:, 1]) & (cs[:, 2] <= pts[:, 1]) & (pts[:, 1] <= cs[:, 3]))

    def upper(self, cells: np.ndarray, src: np.ndarray) -> np.ndarray:
        r"""Certified upper bound of :math:`\sigma` over each cell with the quilts of the points ``src``."""
        return _cell_upper(self.box, cells, np.stack([self.sources[j].quilts for j in src]), self.eps)


def _branch_and_bound(samples: _Samples, cells: np.ndarray, rtol: float) -> tuple:
    """Refine the cells until every upper bound is within ``rtol`` of the best lower bound.

    Returns (largest upper bound of the accepted cells, number of cells enclosed, complete);
    ``complete`` is False when the evaluation budget ran out first.
    """
    best, max_evaluations = samples.best, samples.max_evaluations
    src = samples.nearest(cells)
    accepted_upper = -math.inf
    n_cells = 0
    complete = True
    while True:
        n_cells += len(cells)
        up = samples.upper(cells, src)
        # lazily re-derive the quilts at the centre of failing cells whose quilts come from outside them
        fail = up > best["sigma"] * (1.0 + rtol)
        redo = np.flatnonzero(fail & ~samples.inside(cells, src))
        if redo.size:
            if samples.evaluations + redo.size > max_evaluations:
                complete = False
            else:
                for j in redo:
                    c = cells[j]
                    src[j] = samples.evaluate((c[0] + c[1]) / 2, (c[2] + c[3]) / 2)
                up[redo] = samples.upper(cells[redo], src[redo])
        keep = up > best["sigma"] * (1.0 + rtol)
        if (~keep).any():
            accepted_upper = max(accepted_upper, float(up[~keep].max()))
        if not keep.any():
            break
        if not complete or len(cells) > 0 and n_cells + 4 * int(keep.sum()) > 50 * max_evaluations:
            accepted_upper = max(accepted_upper, float(up[keep].max()))
            complete = False
            break
        kept, ksrc = cells[keep], src[keep]
        cells = _split(kept)
        per = [len(_split(kept[j : j + 1])) for j in range(len(kept))]
        src = np.repeat(ksrc, per)
    return accepted_upper, n_cells, complete


def _certified_result(samples: _Samples, sigma: float, rtol: float, n_cells: int, complete: bool,
                      options: Mapping | None) -> CalibrationResult:
    """The CalibrationResult of the certified supremum ``sigma`` (the worst quilt: the best sample's)."""
    box, eps, best = samples.box, samples.eps, samples.best
    T = box.length
    top = best["result"]
    notes = [f"certified supremum over the parameter box p0 in {list(box.p0)}, p1 in {list(box.p1)} "
             f"(initial {box.initial_kind!r}): branch and bound with interval enclosures of equation (5)"]
    if not complete:
        notes.append(f"evaluation budget {samples.max_evaluations} exhausted: certified but up to "
                     f"{sigma / best['sigma'] - 1:.3g} above the best lower bound")
    groupdp = group_dp_sigma(T, epsilon=eps)
    if no_gain_over(sigma, groupdp):
        notes.append("no gain over group DP for the worst node")
    return CalibrationResult(
        epsilon=eps, lipschitz=samples.lipschitz, method="exact", sigma_max=sigma, worst=top.worst, per_node=(),
        n_nodes=T, groupdp_sigma=groupdp, fingerprint=box.fingerprint,
        theorem=THEOREM_EXACT + "; supremum over the box certified by interval arithmetic (puffgm.chains.box)",
        notes=tuple(notes),
        details={"lower_bound": best["sigma"], "worst_point": best["point"],
                 "certified_gap": sigma / best["sigma"] - 1.0, "rtol": rtol, "complete": complete,
                 "evaluations": samples.evaluations, "cells": n_cells, "k": 2, "initial": box.initial_kind,
                 "n_chains": "box", "worst_quilt_kind": top.details.get("worst_quilt_kind")},
        graph=QuiltGraph("chain", length=int(T)), options=options,
    )


def box_to_json(box: ChainParameterBox) -> dict:
    """The body of a saved parameter box (kind ``"chain-box"``, :mod:`puffgm.api.persist`).

    ``"p0"``, ``"p1"`` (the ranges), ``"initial"``, ``"length"``, ``"states"`` and ``"name"``.
    """
    return {"p0": list(box.p0), "p1": list(box.p1), "initial": box.initial_kind, "length": box.length,
            "states": list(box.states), "name": box.name}


def box_from_json(data: dict, label: str) -> ChainParameterBox:
    """The parameter box :func:`box_to_json` wrote, validated as when it was built."""
    return ChainParameterBox(data["p0"], data["p1"], initial=data.get("initial", "any"), length=data["length"],
                             states=data.get("states"), name=str(data.get("name", "box")))
