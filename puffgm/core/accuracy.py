r"""Accuracy of a release: per statistic, the law and scale of its noise and the half-width of a confidence interval.

Every calibration and release of puffgm that adds noise states, for each statistic it
releases, how far the released value may lie from the exact one: the half-width
:math:`t_\alpha` of the noise, the least :math:`t` with

$$
\Pr\left[\,|Z| \le t\,\right] \ge 1 - \alpha ,
$$

so that the interval :math:`[\tilde F - t_\alpha, \tilde F + t_\alpha]` around the released
value :math:`\tilde F = F(D) + Z` covers the exact answer :math:`F(D)` with probability at
least :math:`1 - \alpha` over the noise (for every data set).  This is what OpenDP's
``summarize(alpha)`` reports as the ``accuracy`` column (OpenDP Library, ``opendp.accuracy``).

* **Laplace noise** of scale :math:`b`: :math:`\Pr[|Z| > t] = e^{-t/b}`, so

  $$
  t_\alpha = b \ln(1/\alpha) ,
  $$

  computed by OpenDP's ``laplacian_scale_to_accuracy``.  OpenDP's secure sampler adds a
  discrete Laplace on a lattice far finer than the scale (:mod:`puffgm.core.noise`); the
  half-width stated is the continuous law's.

* **Additive noise of an exact law on the integers** (the optimal noise of
  :mod:`puffgm.mechanisms.optimal_noise`: probabilities on :math:`-K..K` and geometric tails of
  ratio :math:`r`): the least integer :math:`t` whose outside mass is at most :math:`\alpha`,
  the tails summed in closed form, :math:`\Pr[Z > K + j] = p_K\, r^{j+1} / (1 - r)`
  (:func:`integer_half_width`).

* **Multiplicative noise** (Laplace on the logarithm, Kifer and Machanavajjhala section 7.1.2): the
  half-width is on the log scale, and the interval is
  :math:`[\tilde F e^{-t_\alpha}, \tilde F e^{t_\alpha}]`.

Each statistic is one :class:`Accuracy` row; a table of statistics (a workload) gives one row
per coordinate.  The half-width is a property of the noise law only, so stating it costs no
privacy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from puffgm.exceptions import ParameterError

__all__ = ["Accuracy", "DEFAULT_ALPHA", "check_alpha", "laplace_half_width", "integer_half_width",
           "laplace_rows", "coordinate_names", "accuracy_dicts"]

#: The default significance level: 95% intervals, as OpenDP's examples use.
DEFAULT_ALPHA = 0.05

LAPLACE = "Laplace"


def check_alpha(alpha, where: str = "accuracy") -> float:
    """``alpha`` as a float in (0, 1), or a ParameterError in one sentence."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)):
        raise ParameterError(f"The 'alpha' parameter of {where} must be a number in (0, 1). Got {alpha!r} instead.")
    a = float(alpha)
    if not 0.0 < a < 1.0:
        raise ParameterError(f"The 'alpha' parameter of {where} must be a number in (0, 1) (0.05 gives 95% "
                             f"intervals). Got {alpha!r} instead.")
    return a


def laplace_half_width(scale: float, alpha: float = DEFAULT_ALPHA) -> float:
    r"""The :math:`(1-\alpha)` half-width :math:`b\ln(1/\alpha)` of Laplace noise of scale :math:`b` (OpenDP's formula).

    Parameters
    ----------
    scale : float
        :math:`b \ge 0`; 0 (an exact release) gives 0, an infinite scale (a calibration that does not
        apply) gives ``inf``.
    alpha : float
        In (0, 1).

    Returns
    -------
    float
        t with :math:`\Pr[|\mathrm{Lap}(b)| > t] = \alpha`, from
        ``opendp.accuracy.laplacian_scale_to_accuracy``.

    Examples
    --------
    >>> round(laplace_half_width(1.0, 0.05), 6)
    2.995732
    """
    a = check_alpha(alpha, "laplace_half_width")
    b = float(scale)
    if math.isnan(b) or b < 0:
        raise ParameterError(f"A Laplace scale must be >= 0; got {scale!r}.")
    if b == 0.0 or math.isinf(b):
        return b
    from opendp.accuracy import laplacian_scale_to_accuracy

    return float(laplacian_scale_to_accuracy(b, a))


def _outside_tail(pk: float, r: float, j: int) -> float:
    """P(Z > K + j) (up to normalisation) for the geometric tail p_K r^i, i >= 1: p_K r^{j+1} / (1 - r)."""
    return 0.0 if r == 0.0 else pk * r ** (j + 1) / (1.0 - r)


def integer_half_width(probabilities, tail_ratio: float, alpha: float = DEFAULT_ALPHA) -> int:
    r"""The least integer :math:`t` with :math:`\Pr[|Z| \le t] \ge 1 - \alpha` for a law on the integers.

    The law is that of :class:`puffgm.mechanisms.optimal_noise.NoiseLaw`: masses ``probabilities``
    on :math:`-K..K` (not necessarily normalised, not necessarily symmetric) and geometric tails
    :math:`\Pr[Z = K + j] = p_K r^j`, :math:`\Pr[Z = -K - j] = p_{-K} r^j` for :math:`j \ge 1`.

    Parameters
    ----------
    probabilities : array_like of shape (2K + 1,)
    tail_ratio : float
        :math:`r \in [0, 1)`.
    alpha : float
        In (0, 1).

    Returns
    -------
    int
        The half-width in the law's units (grid steps).

    Examples
    --------
    >>> integer_half_width([0.25, 0.5, 0.25], 0.0, alpha=0.4)
    1
    >>> integer_half_width([0.05, 0.9, 0.05], 0.0, alpha=0.2)
    0
    """
    a = check_alpha(alpha, "integer_half_width")
    p = np.asarray(probabilities, dtype=float)
    r = float(tail_ratio)
    if p.ndim != 1 or p.size % 2 != 1 or not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
        raise ParameterError("A noise law needs 2K+1 finite, non-negative probabilities with a positive sum.")
    if not 0.0 <= r < 1.0:
        raise ParameterError(f"The tail ratio of a noise law must lie in [0, 1). Got {tail_ratio!r} instead.")
    K = (p.size - 1) // 2
    outside = _outside_tail(float(p[0] + p[-1]), r, 0)  # P(|Z| > K), up to the normalisation
    budget = a * (float(p.sum()) + outside)
    if outside > budget:
        return _tail_half_width(p, r, budget)
    for t in range(K, 0, -1):  # outside(t - 1) = outside(t) + P(|Z| = t), summed from the outside in
        outside += float(p[K + t] + p[K - t])
        if outside > budget:
            return t
    return 0


def _tail_half_width(p, r: float, budget: float) -> int:
    """The least j >= 0 with P(|Z| > K + j) * total <= budget (geometric tails)."""
    K = (len(p) - 1) // 2
    ends = float(p[0] + p[-1])
    # ends r^{j+1} / (1 - r) <= budget  <=>  j >= log(budget (1 - r) / ends) / log(r) - 1
    j = max(0, math.ceil(math.log(budget * (1.0 - r) / ends) / math.log(r)) - 1)
    while j > 0 and _outside_tail(ends, r, j - 1) <= budget:
        j -= 1
    while _outside_tail(ends, r, j) > budget:
        j += 1
    return K + j


@dataclass(frozen=True)
class Accuracy:
    r"""The accuracy of one released statistic at significance ``alpha``.

    Attributes
    ----------
    statistic : str
        Its name (``"value"`` for a single answer, ``"[i]"`` for coordinate i of a vector, the
        statistic's name in a workload).
    distribution : str
        The noise law: ``"Laplace"``, ``"optimal noise (exact law on a grid)"``, or
        ``"Laplace on the log scale"`` (multiplicative noise).
    scale : float or None
        The Laplace scale b (None for a noise law that is not Laplace).
    alpha : float
        The significance level: the interval has confidence :math:`1 - \alpha`.
    half_width : float
        :math:`t_\alpha`, the least t with :math:`\Pr[|Z| \le t] \ge 1 - \alpha` (in the statistic's
        units; on the log scale when ``multiplicative``).
    expected_abs_error : float
        :math:`\mathbb{E}|Z|` (b for Laplace noise).
    multiplicative : bool
        The noise multiplies the value by :math:`e^{Z}` (the interval is then
        :math:`[\tilde F e^{-t}, \tilde F e^{t}]`).
    """

    statistic: str
    distribution: str
    scale: float | None
    alpha: float
    half_width: float
    expected_abs_error: float
    multiplicative: bool = False

    @property
    def confidence(self) -> float:
        r""":math:`1 - \alpha`."""
        return 1.0 - self.alpha

    def interval(self, value: float) -> tuple:
        r"""The :math:`(1 - \alpha)` confidence interval for the exact answer around the released ``value``."""
        v, t = float(value), self.half_width
        if self.multiplicative:
            return (v * math.exp(-t), v * math.exp(t)) if v >= 0 else (v * math.exp(t), v * math.exp(-t))
        return (v - t, v + t)

    def to_dict(self) -> dict:
        """JSON-ready: ``statistic``, ``distribution``, ``scale``, ``alpha``, ``confidence``, ``half_width``, ..."""
        def num(x):
            return None if x is None or not math.isfinite(x) else float(x)

        return {"statistic": self.statistic, "distribution": self.distribution, "scale": num(self.scale),
                "alpha": self.alpha, "confidence": self.confidence, "half_width": num(self.half_width),
                "expected_abs_error": num(self.expected_abs_error), "multiplicative": self.multiplicative}

    def explain(self) -> str:
        """One line: the statistic, its noise and its half-width."""
        scale = "" if self.scale is None else f" of scale {self.scale:.6g}"
        log = " (on the log scale)" if self.multiplicative else ""
        return (f"{self.statistic}: {self.distribution} noise{scale}, {100 * self.confidence:g}% half-width "
                f"{self.half_width:.6g}{log}")


def laplace_rows(names, scales, alpha: float = DEFAULT_ALPHA, *, multiplicative: bool = False) -> tuple:
    """One :class:`Accuracy` row per statistic for Laplace noise of the given scales."""
    a = check_alpha(alpha)
    dist = "Laplace on the log scale" if multiplicative else LAPLACE
    return tuple(Accuracy(str(n), dist, float(b), a, laplace_half_width(b, a), float(b), multiplicative)
                 for n, b in zip(names, scales, strict=True))


def coordinate_names(value) -> tuple:
    """``("value",)`` for a scalar (or None: a calibration), ``("[0]", "[1]", ...)`` for a vector."""
    if value is None:
        return ("value",)
    arr = np.asarray(value)
    if arr.ndim == 0:
        return ("value",)
    return tuple(f"[{i}]" for i in range(arr.size))


def accuracy_dicts(rows) -> list:
    """The rows as JSON-ready dicts (the ``accuracy`` key of the CLI's ``--json``)."""
    return [row.to_dict() for row in rows]
