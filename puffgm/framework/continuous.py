r"""Continuous attributes and aggregate secrets (Kifer-Machanavajjhala, section 7).

Absolute error (section 7.1.1).  Secrets :math:`\sigma_{i,[x-k, x+k)}` = "the value of
record :math:`i` lies in :math:`[x-k, x+k)`"; pairs are neighbouring intervals
:math:`(\sigma_{i,[x-k,x+k)}, \sigma_{i,[x+k,x+3k)})`; :math:`\Theta` = all distributions with
independent records (Equation 10).  Lemma 7.1: releasing :math:`\sum_i t_i + \mathrm{Lap}(4k/\epsilon)`
is :math:`\epsilon`-Pufferfish -- two values in adjacent half-open intervals of width :math:`2k`
are less than :math:`4k` apart, and with independent records only record :math:`i`'s law changes.
No bound on the values is needed (DP would need infinite noise for an unbounded sum).

Relative error (section 7.1.2).  :math:`t \in [c y, y / c]` iff
:math:`\log t \in [\log y + \log c, \log y - \log c]`: relative error with factor :math:`c` is absolute error
:math:`k = \log(1/c)` on :math:`\log t`, so Laplace noise of scale :math:`4 \log(1/c) / \epsilon` on
:math:`\sum_i \log t_i`, i.e. multiplicative noise on the product (or on the geometric mean, after dividing by
:math:`n`).

Aggregate secrets (section 7.2).  For a metric :math:`\mu` on databases, secrets
:math:`\sigma_{[\mu, D, \delta]}` = ":math:`\mu(\mathrm{Data}, D) \le \delta`" and
:math:`\sigma^*_{[\mu, D, \delta]}` = ":math:`\delta < \mu(\mathrm{Data}, D) \le 2 \delta`", paired.  For
:math:`\mu(D, D') = |\sum D - \sum D'|` the sums under the two secrets are at most :math:`3 \delta` apart, so
:math:`\sum + \mathrm{Lap}(3 \delta / \epsilon)` is :math:`\epsilon`-Pufferfish for these pairs under *any*
prior (a bound derived here; the paper gives no mechanism) -- checked by the exact auditor in the tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from puffgm.core.accuracy import laplace_rows
from puffgm.core.noise import NOT_FOR_PRODUCTION, SECURE, resolve_noise
from puffgm.core.release import Release
from puffgm.core.validation import check_positive_finite
from puffgm.exceptions import ParameterError
from puffgm.framework.audit import audit_laplace
from puffgm.framework.instantiation import Instantiation, Secret

__all__ = [
    "ContinuousRelease",
    "absolute_error_scale",
    "relative_error_scale",
    "aggregate_sum_scale",
    "release_sum_absolute_error",
    "release_relative_error",
    "release_aggregate_sum",
    "interval_pairs",
    "aggregate_pairs",
    "audit_absolute_error_sum",
]


def absolute_error_scale(k: float, *, epsilon: float) -> float:
    r"""Laplace scale :math:`4k / \epsilon` of Lemma 7.1."""
    return 4 * check_positive_finite(k, "k", "absolute_error_scale") / check_positive_finite(
        epsilon, "epsilon", "absolute_error_scale")


def relative_error_scale(c: float, *, epsilon: float) -> float:
    r"""Laplace scale :math:`4 \log(1/c) / \epsilon` on :math:`\sum_i \log t_i` (section 7.1.2), :math:`0 < c < 1`."""
    if not (isinstance(c, (int, float)) and 0 < c < 1):
        raise ParameterError(f"The 'c' parameter of relative_error_scale must be in (0, 1). Got {c!r} instead.")
    return 4 * math.log(1 / c) / check_positive_finite(epsilon, "epsilon", "relative_error_scale")


def aggregate_sum_scale(delta: float, *, epsilon: float) -> float:
    r"""Laplace scale :math:`3\delta / \epsilon` protecting the sum within a metric ball of radius :math:`\delta`.

    Kifer and Machanavajjhala section 7.2.
    """
    return 3 * check_positive_finite(delta, "delta", "aggregate_sum_scale") / check_positive_finite(
        epsilon, "epsilon", "aggregate_sum_scale")


@dataclass(frozen=True)
class ContinuousRelease(Release):
    """A noisy statistic with its calibration.

    No composition theorem covers these releases (their composition is the base
    :class:`~puffgm.core.composition.Uncomposable`): the accountant refuses them.
    The record keeps the noisy value only, never the exact statistic.

    Attributes
    ----------
    value : float
        The released value.
    statistic : str
        ``"sum"``, ``"product"`` or ``"geometric_mean"``.
    scale : float
        Laplace scale of the additive noise (on the log scale for relative error).
    epsilon : float
    secret : str
        What is protected.
    theorem : str
    secure : bool
    """

    value: float
    statistic: str
    scale: float
    epsilon: float
    secret: str
    theorem: str
    secure: bool

    @property
    def mechanism(self) -> str:
        """The mechanism: Laplace noise on the sum, or on the sum of logs (multiplicative)."""
        if self.statistic == "sum":
            return "Laplace sum (Kifer and Machanavajjhala, section 7)"
        return f"multiplicative Laplace {self.statistic.replace('_', ' ')} (Kifer and Machanavajjhala, section 7.1.2)"

    @property
    def noise(self) -> str:
        """The kind of noise source: OpenDP's secure sampler or seeded noise."""
        return SECURE if self.secure else NOT_FOR_PRODUCTION

    @property
    def prior(self) -> str:
        """The prior class and secrets the guarantee holds for (Kifer and Machanavajjhala, section 7)."""
        if "section 7.2" in self.theorem:
            return f"every prior; secrets: {self.secret}"
        return f"every prior with independent records (Equation 10); secrets: {self.secret}"

    def accuracy(self, alpha: float = 0.05) -> tuple:
        r"""The Laplace scale and its :math:`(1-\alpha)` half-width (on the log scale for a product or geometric mean).

        The noise of a geometric mean of :math:`n` values is the product's noise divided by :math:`n` on the log
        scale (the record does not keep :math:`n`), so its row states the product's half-width :math:`t`: the
        geometric mean lies within a factor :math:`e^{t / n}` of the released one.
        """
        name = "product behind the geometric mean" if self.statistic == "geometric_mean" else "value"
        return laplace_rows((name,), (self.scale,), alpha, multiplicative=self.statistic != "sum")

    def explain(self) -> str:
        r"""One line: mechanism, :math:`\epsilon`, Laplace scale, what is protected, noise source."""
        s = (f"{self.mechanism}: epsilon {self.epsilon:g}, Laplace scale {self.scale:.6g}, protects {self.secret} "
             f"({self.theorem}); noise: {self.noise}")
        return self._tagged(s)


def _values(values):
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise ParameterError("The values must be a non-empty array of finite numbers.")
    return v


def _release_sum(values, scale: float, epsilon: float, guarantee: str, theorem: str,
                 random_state) -> ContinuousRelease:
    """sum(values) + Lap(scale) with the record of what it protects."""
    v = _values(values)
    noise = resolve_noise(random_state)
    s = float(v.sum())
    return ContinuousRelease(float(noise.laplace(s, scale)), "sum", scale, float(epsilon),
                             guarantee, theorem, noise.secure)


def release_sum_absolute_error(values, k: float, *, epsilon: float, random_state=None) -> ContinuousRelease:
    r"""Release :math:`\sum \mathrm{values} + \mathrm{Lap}(4k/\epsilon)` (Lemma 7.1).

    No value can be inferred to within :math:`\pm k`.
    """
    return _release_sum(values, absolute_error_scale(k, epsilon=epsilon), epsilon,
                        f"each value to within absolute error {k:g}", "Kifer-Machanavajjhala Lemma 7.1",
                        random_state)


def release_relative_error(values, c: float, *, epsilon: float, statistic: str = "geometric_mean",
                           random_state=None) -> ContinuousRelease:
    r"""Multiplicative noise: :math:`\exp(\sum \log t + \mathrm{Lap}(4 \log(1/c)/\epsilon))` (section 7.1.2).

    ``statistic="product"`` releases the product; ``"geometric_mean"`` its :math:`n`-th root
    (post-processing, no extra cost).  Values must be > 0.
    """
    v = _values(values)
    if np.any(v <= 0):
        raise ParameterError("Relative-error releases need values > 0 (the log transform).")
    scale = relative_error_scale(c, epsilon=epsilon)
    noise = resolve_noise(random_state)
    s = float(np.log(v).sum())
    noisy = float(noise.laplace(s, scale))
    if statistic == "product":
        out = math.exp(noisy)
    elif statistic == "geometric_mean":
        out = math.exp(noisy / v.size)
    else:
        raise ParameterError("statistic must be 'product' or 'geometric_mean'.")
    return ContinuousRelease(out, statistic, scale, float(epsilon),
                             f"each value to within a factor {c:g} (t in [c y, y/c])",
                             "Kifer-Machanavajjhala section 7.1.2 (log transform of Lemma 7.1)", noise.secure)


def release_aggregate_sum(values, delta: float, *, epsilon: float, random_state=None) -> ContinuousRelease:
    r"""Release the sum :math:`+\, \mathrm{Lap}(3\delta / \epsilon)` (section 7.2).

    The sum cannot be placed within :math:`\pm\delta` versus :math:`(\delta, 2\delta]`.
    """
    return _release_sum(values, aggregate_sum_scale(delta, epsilon=epsilon), epsilon,
                        f"the sum to within {delta:g} (metric ball vs its 2-delta shell)",
                        "Kifer-Machanavajjhala section 7.2 (scale 3 delta / epsilon derived in puffgm)",
                        random_state)


# --------------------------------------------------------------------------- secrets for audits


def interval_pairs(node, centers, k: float):
    """Pairs (node in [x-k, x+k), node in [x+k, x+3k)) for each centre x (Equation 9)."""
    pairs = []
    for x in centers:
        a = Secret.region(node, x - k, x + k, name=f"{node} in [{x - k:g},{x + k:g})")
        b = Secret.region(node, x + k, x + 3 * k, name=f"{node} in [{x + k:g},{x + 3 * k:g})")
        pairs.append((a, b))
    return pairs


def aggregate_pairs(centers, delta: float, statistic=None, name: str = "sum"):
    r"""Pairs :math:`(|F - c| \le \delta,\ \delta < |F - c| \le 2\delta)` for each centre :math:`c` (Equations 12-13).

    The metric is :math:`\mu = |F - F'|`.

    ``statistic(assignment)`` defaults to the sum of the (numeric) values.
    """
    stat = statistic or (lambda a: float(sum(float(v) for v in a.values())))
    pairs = []
    for c in centers:
        inner = Secret.predicate(lambda a, c=c: abs(stat(a) - c) <= delta + 1e-12, f"|{name}-{c:g}|<={delta:g}")
        shell = Secret.predicate(lambda a, c=c: delta + 1e-12 < abs(stat(a) - c) <= 2 * delta + 1e-12,
                                 f"{delta:g}<|{name}-{c:g}|<={2 * delta:g}")
        pairs.append((inner, shell))
    return pairs


def audit_absolute_error_sum(k: float = 1.0, *, epsilon: float = 1.0, step: float = 0.25, n: int = 2,
                             top: float | None = None, n_random: int = 3, random_state: int = 0) -> dict:
    r"""Exact audit of Lemma 7.1 on a discretised domain.

    :math:`n` records with values on the grid :math:`\{0, \mathrm{step}, \dots, \mathrm{top}\}`; pairs of adjacent
    intervals for every grid centre :math:`x` with :math:`[x-k, x+3k)` inside the domain; :math:`\Theta` holds
    ``n_random`` random product priors and, for the first pair, the product prior
    whose record-1 law puts mass 1/2 at :math:`x-k` and at :math:`x+3k-\mathrm{step}` (the extreme points),
    where the loss is exactly :math:`(4k - \mathrm{step}) / (4k/\epsilon) = \epsilon (1 - \mathrm{step}/(4k))`.

    Returns
    -------
    dict
        ``loss`` (exact audit of the sum :math:`+\, \mathrm{Lap}(4k/\epsilon)`), ``expected_worst`` and the
        AuditResult under ``result``.
    """
    top = 4 * k + 2 * step if top is None else top
    grid = np.round(np.arange(0.0, top + step / 2, step), 12)
    if grid.size ** n > 2**16:
        raise ParameterError("The discretised domain is too large for an exact audit; raise step or lower n.")
    rng = np.random.default_rng(random_state)
    nodes = [f"t{i + 1}" for i in range(n)]
    states = {v: tuple(float(g) for g in grid) for v in nodes}
    centers = [x for x in grid if x - k >= -1e-12 and x + 3 * k <= top + 1e-12]
    pairs = []
    for v in nodes:
        pairs.extend(interval_pairs(v, centers, k))
    priors = []
    for _ in range(n_random):
        joint: np.ndarray = np.ones(())
        for _v in nodes:
            joint = np.multiply.outer(joint, rng.dirichlet(np.full(grid.size, 0.5)))
        priors.append(joint)
    x0 = centers[0]
    extreme = np.zeros(grid.size)
    extreme[np.argmin(np.abs(grid - (x0 - k)))] = 0.5
    extreme[np.argmin(np.abs(grid - (x0 + 3 * k - step)))] = 0.5
    joint = extreme
    for _v in nodes[1:]:
        joint = np.multiply.outer(joint, rng.dirichlet(np.ones(grid.size)))
    priors.append(joint)
    inst = Instantiation(priors, pairs, nodes=nodes, states=states)
    scale = absolute_error_scale(k, epsilon=epsilon)
    res = audit_laplace(inst, lambda a: float(sum(a.values())), scale)
    return {"loss": res.loss, "expected_worst": epsilon * (1 - step / (4 * k)), "result": res,
            "n_databases": inst.n_databases, "n_pairs": len(pairs)}
