r"""Baselines the chain mechanisms are compared with (Song et al., section 5.1).

* GroupDP: every record of a connected chain may be completely correlated, so
  the Laplace scale is :math:`L \cdot (\text{length of the longest chain}) / \epsilon`.
* Plain DP for aggregates over independent people: each person's whole trace
  is one record; the Laplace scale is :math:`L / \epsilon` where :math:`L` is the Lipschitz
  constant with respect to one person's entire trace.
* GK16 (Ghosh and Kleinberg 2016), binary chains: with
  :math:`M = \begin{pmatrix} 1-q & q \\ 1-p & p \end{pmatrix}`
  (rows: current state 0, 1), :math:`\gamma = \max_j |\log f_j| / 2` over

  $$
  \begin{array}{l}
  f_1 = \frac{p^2 + p(1-q)}{p^2 + q(1-p)}, \qquad
  f_2 = \frac{p}{q} \cdot \frac{(1-q)^2 + q(1-p)}{(1-p)(1-q) + p(1-p)}, \\
  f_3 = \frac{1-p}{1-q} \cdot \frac{(1-q)q + qp}{(1-p)q + p^2}, \qquad
  f_4 = \frac{(1-q)^2 + p(1-q)}{(1-q)^2 + q(1-p)},
  \end{array}
  $$

  :math:`\Gamma` = the :math:`T \times T` tridiagonal matrix with :math:`\gamma` off the diagonal; the
  mechanism applies only when :math:`\|\Gamma\|_2 = 2 \gamma \cos(\pi/(T+1)) < 1`, and then
  :math:`\epsilon_{\mathrm{DP}} = \epsilon / \max_{\text{row}} \left(2 \operatorname{rowsum}((I - \Gamma)^{-1})\right)`,
  noise :math:`L / \epsilon_{\mathrm{DP}}`.
  For a family, :math:`\gamma` is the maximum over its members; for an infinite class
  (:class:`~puffgm.chains.priors.InfiniteChainClass`, such as a
  :class:`~puffgm.chains.ChainParameterBox`), a certified upper bound of the
  supremum over the class (for a box: interval arithmetic, :func:`puffgm.chains.box.gk16_gamma_bounds`).

"Not applicable" is a result (``applicable=False``, ``sigma_max=inf``), not an
exception.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from puffgm.chains.budget import check_chain_length
from puffgm.chains.priors import ChainPriorClass, InfiniteChainClass
from puffgm.core.results import CalibrationResult, QuiltGraph
from puffgm.core.validation import check_positive_finite
from puffgm.exceptions import NumericalError
from puffgm.mechanisms.mqm_loop import group_dp_sigma

__all__ = ["group_dp", "plain_dp", "gk16", "gk16_gamma", "GK16_SOLVE_LIMIT"]


@dataclass(frozen=True)
class _Baseline:
    """What a baseline's results share: the method, epsilon, L, T, the prior's fingerprint and the theorem."""

    method: str
    epsilon: float
    lipschitz: float
    n_nodes: int
    fingerprint: str
    theorem: str
    graph: QuiltGraph | None = None
    options: Mapping | None = None

    @classmethod
    def of_chain(cls, method: str, where: str, chain_class, epsilon, lipschitz, options, theorem: str) -> _Baseline:
        """The baseline of a chain class: epsilon and L checked, :math:`T` its checked length, the chain its graph."""
        eps = check_positive_finite(epsilon, "epsilon", where)
        lip = check_positive_finite(lipschitz, "lipschitz", where)
        T = check_chain_length(chain_class.length, where)
        return cls(method, eps, lip, T, chain_class.fingerprint, theorem, QuiltGraph("chain", length=int(T)), options)

    def result(self, sigma: float, *, notes=(), details=None, applicable: bool = True) -> CalibrationResult:
        """The CalibrationResult of noise scale ``sigma`` (no quilt: ``worst`` is None)."""
        return CalibrationResult(
            epsilon=self.epsilon, lipschitz=self.lipschitz, method=self.method, sigma_max=sigma, worst=None,
            per_node=(), n_nodes=self.n_nodes, groupdp_sigma=group_dp_sigma(self.n_nodes, epsilon=self.epsilon),
            fingerprint=self.fingerprint, theorem=self.theorem, applicable=applicable, notes=tuple(notes),
            details=details or {}, graph=self.graph, options=self.options,
        )


def group_dp(chain_class: ChainPriorClass | InfiniteChainClass, *, epsilon: float,
             lipschitz: float = 1.0, options: Mapping | None = None) -> CalibrationResult:
    r"""GroupDP: :math:`\sigma_{\max} = T / \epsilon` (the whole chain is one group).

    Parameters
    ----------
    chain_class : ChainPriorClass or InfiniteChainClass
        Only its length :math:`T` matters.
    epsilon : float
        The privacy parameter (:math:`> 0`).
    lipschitz : float
        The Lipschitz constant :math:`L` of the query; the Laplace scale is :math:`L \sigma_{\max}`.
    options : mapping, optional
        The calibration options as the user gave them to :func:`puffgm.calibrate`
        (``PriorKind.calibrate`` passes them down), recorded on the result
        (:attr:`~puffgm.core.results.CalibrationResult.options`, part of the composition key
        of its releases).  None (default) records none.
    """
    base = _Baseline.of_chain("groupdp", "group_dp", chain_class, epsilon, lipschitz, options,
                              "group differential privacy over the longest chain (T records)")
    T = base.n_nodes
    return base.result(_scale_up(T, base.epsilon, "Group DP"), details={"group_size": T})


def _scale_up(numerator: float, eps: float, method: str) -> float:
    """numerator / eps rounded up (never half an ulp below the exact quotient), or a NumericalError when it
    is beyond the largest double."""
    q = numerator / eps
    if not math.isfinite(q):
        raise NumericalError(f"{method}'s noise scale at epsilon = {eps:g} is above the largest double (1.8e+308) "
                             f"for this chain; epsilon of at least about {numerator / 1.7e308:.3g} works.")
    if Fraction(q) * Fraction(eps) < Fraction(numerator):
        q = math.nextafter(q, math.inf)
    return q


def plain_dp(*, epsilon: float, lipschitz: float = 1.0, n_records: int = 1) -> CalibrationResult:
    r"""Plain DP for an aggregate over independent people: :math:`\sigma_{\max} = 1 / \epsilon`.

    ``lipschitz`` must be the Lipschitz constant with respect to one person's
    entire record (all of their trace); people are assumed independent.
    """
    eps = check_positive_finite(epsilon, "epsilon", "plain_dp")
    lip = check_positive_finite(lipschitz, "lipschitz", "plain_dp")
    base = _Baseline("dp", eps, lip, int(n_records), "independent-people",
                     "Laplace mechanism (Dwork et al. 2006), independent records")
    return base.result(1.0 / eps, notes=("valid only if people are independent and L is per whole person",))


def gk16_gamma(P) -> float:
    r""":math:`\gamma` of Ghosh-Kleinberg for one binary transition matrix (inf if undefined)."""
    P = np.asarray(P, dtype=float)
    q, p = np.float64(P[0, 1]), np.float64(P[1, 1])  # numpy floats: a zero denominator gives inf/nan, not an exception
    with np.errstate(divide="ignore", invalid="ignore"):
        f = [
            (p * p + p * (1 - q)) / (p * p + q * (1 - p)),
            (p / q) * ((1 - q) ** 2 + q * (1 - p)) / ((1 - p) * (1 - q) + p * (1 - p)),
            ((1 - p) / (1 - q)) * ((1 - q) * q + q * p) / ((1 - p) * q + p * p),
            ((1 - q) ** 2 + p * (1 - q)) / ((1 - q) ** 2 + q * (1 - p)),
        ]
    vals = []
    for v in f:
        v = float(v)
        if not math.isfinite(v) or v <= 0:
            return math.inf
        vals.append(abs(math.log(v)) / 2.0)
    return max(vals)


#: Longest chain whose GK16 row sums are solved as a T x T tridiagonal system; longer ones use the closed form.
GK16_SOLVE_LIMIT = 10**6


def _gk16_middle_row(gamma: float, T: int) -> float:
    """The largest row sum of (I - Gamma)^{-1} in closed form, rounded up (for T > 2, 2 gamma < 1).

    x = (I - Gamma)^{-1} 1 solves x_j - gamma (x_{j-1} + x_{j+1}) = 1 with x_0 = x_{T+1} = 0;
    with c = 1 / (1 - 2 gamma) and r = 2 gamma / (1 + sqrt(1 - 4 gamma^2)) < 1 (the smaller root of
    gamma r^2 - r + gamma = 0),

        x_j = c (1 - r^j) (1 - r^(T+1-j)) / (1 + r^(T+1)),

    largest at the middle j = ceil(T / 2).  Each factor is computed to a few ulps (expm1 of
    j log r), so the result is multiplied by 1 + 64 u to stay above the exact value.
    """
    c = 1.0 / (1.0 - 2.0 * gamma)
    r = 2.0 * gamma / (1.0 + math.sqrt((1.0 - 2.0 * gamma) * (1.0 + 2.0 * gamma)))
    if r == 0.0:
        return 1.0
    lr = math.log(r)
    j = (T + 1) // 2
    head = -math.expm1(j * lr)
    tail = -math.expm1((T + 1 - j) * lr)
    return c * head * tail / (1.0 + math.exp((T + 1) * lr)) * (1 + 64 * 2.0**-53)


def gk16(chain_class: ChainPriorClass | InfiniteChainClass, *, epsilon: float,
         lipschitz: float = 1.0, options: Mapping | None = None) -> CalibrationResult:
    r"""GK16 influence-matrix mechanism for binary chains (applicable iff :math:`\|\Gamma\|_2 < 1`).

    Parameters
    ----------
    chain_class : ChainPriorClass or InfiniteChainClass
        Binary chains; :math:`\gamma` is the maximum over the members, or the certified
        upper end of the class's bracket (:meth:`InfiniteChainClass.gk16_gamma_bounds`).
    epsilon : float
        The privacy parameter (:math:`> 0`).
    lipschitz : float
        The Lipschitz constant :math:`L` of the query; the Laplace scale is :math:`L \sigma_{\max}`.
    options : mapping, optional
        The calibration options as the user gave them to :func:`puffgm.calibrate`
        (``PriorKind.calibrate`` passes them down), recorded on the result
        (:attr:`~puffgm.core.results.CalibrationResult.options`, part of the composition key
        of its releases).  None (default) records none.

    Returns
    -------
    CalibrationResult
        ``applicable=False`` and ``sigma_max=inf`` when the mechanism does not apply.
    """
    from scipy.linalg import solve_banded

    base = _Baseline.of_chain(
        "gk16", "gk16", chain_class, epsilon, lipschitz, options,
        "Ghosh and Kleinberg 2016 influence-matrix mechanism (as compared in Song et al., section 5)")
    eps, T = base.epsilon, base.n_nodes
    if chain_class.k != 2:
        return base.result(math.inf, applicable=False,
                           notes=(f"GK16 is defined for binary chains; this chain has {chain_class.k} states",))
    if isinstance(chain_class, InfiniteChainClass):
        # certified bracket of the sup over the class; the noise grows with gamma, so use the upper end
        gamma_lo, gamma = chain_class.gk16_gamma_bounds()
    else:
        gamma = gamma_lo = max(gk16_gamma(m.transition) for m in chain_class.members)
    norm = 2.0 * gamma * math.cos(math.pi / (T + 1)) if T > 1 else 0.0
    details = {"gamma": gamma, "spectral_norm": norm}
    if gamma_lo != gamma:
        details["gamma_lower"] = gamma_lo
    if not math.isfinite(gamma) or norm >= 1.0:
        note = f"GK16 does not apply: the spectral norm of its influence matrix is {norm:.6g} >= 1"
        return base.result(math.inf, applicable=False, details=details, notes=(note,))
    if T > GK16_SOLVE_LIMIT:
        factor = 2.0 * _gk16_middle_row(gamma, T)
    else:
        # rowsum((I - Gamma)^{-1}) = (I - Gamma)^{-1} 1 (Gamma symmetric), a tridiagonal solve.
        ab = np.zeros((3, T))
        ab[0, 1:] = -gamma
        ab[1, :] = 1.0
        ab[2, :-1] = -gamma
        rows = solve_banded((1, 1), ab, np.ones(T)) if T > 1 else np.ones(1)
        factor = float(np.max(2.0 * rows))
    details.update({"epsilon_dp": eps / factor, "max_row_factor": factor})
    return base.result(_scale_up(factor, eps, "GK16"), details=details)
