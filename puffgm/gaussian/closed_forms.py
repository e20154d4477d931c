r"""Closed-form a(b)-influence curves of truncated Gaussian priors with region secrets.

Truncated Gaussian with region secrets (Example 6.2 / Theorem 9)
----------------------------------------------------------------
:math:`x \sim N(m, \Sigma)` truncated to a box, secrets :math:`s_i(r) = \{x_i \in [r, r+\delta]\}`.
For a low-influence set :math:`L`, :math:`x_i \mid x_L` is Gaussian :math:`N(\mu, \sigma^2)` with
:math:`\mu = m_i + w \cdot (x_L - m_L)`, :math:`w = \Sigma_{iL} \Sigma_{LL}^{-1}` and
:math:`\sigma^2 = \Sigma_{ii} - w \cdot \Sigma_{Li}` constant, so the sup over :math:`x_L` is a sweep over :math:`\mu`.

How the truncation enters: *only* through the support.  (i) :math:`x_L` ranges over
the box, so :math:`\mu` ranges over the bounded interval
:math:`[m_i + \sum_j \min(w_j (lo_j - m_j), w_j (hi_j - m_j)), \dots]` (with :math:`\max` at the upper end);
without the truncation :math:`\mu` is unbounded and every :math:`a(b)` with :math:`w \ne 0` is infinite.  (ii) The
secrets lie inside :math:`[lo_i, hi_i]`.  Inside the box, the truncation's normaliser
cancels from every ratio of conditional probabilities given :math:`x_L` when :math:`H = \{x_i\}`.
For :math:`b \ge 2` the paper (and the two values below) keep the Gaussian conditional
:math:`x_i \mid x_L` and ignore the truncation of the other high-influence coordinates
:math:`H \smallsetminus \{i\}`, which are integrated over the box in the truncated prior; the exact
truncated value needs :math:`b`-dimensional box integrals
(:mod:`puffgm.gaussian.leakage` bounds it).

Two values are reported per point:

* ``"theorem9"``: :math:`\sup_\mu \log P(A \mid \mu) / P(A' \mid \mu)` minus the log ratio
  of the untruncated marginal :math:`N(m_i, \Sigma_{ii})`, maximised over pairs of
  disjoint regions on a grid of :math:`r` (the paper's computation);
* ``"range"``: :math:`\sup_\mu - \inf_\mu` of :math:`\log P(A \mid \mu) / P(A' \mid \mu)`.  The truncated
  marginal ratio :math:`P(A) / P(A')` is an average of the conditional ratios over
  :math:`x_L` in the box, so it is at least their infimum: this bounds :math:`a^\dagger(L)` for
  the truncated prior (exactly, for :math:`b = 1`).  By the monotone-likelihood-ratio
  property of the Gaussian location family (:math:`G(t) = P(t < Z < t + \delta)` is
  log-concave), the worst pair is the top region :math:`[hi-\delta, hi]` against the
  bottom region :math:`[lo, lo+\delta]`, with no grid.

The curve the library returns (``value="safe"``, default) is certified: every
split's value is the certified upper bound of the exact leakage of the truncated
prior (:class:`puffgm.gaussian.leakage.GaussianRegionModel`, which accounts for
the truncation of every coordinate).  For :math:`b \ge 2` neither of the two values above
is certified (the other high-influence coordinates are truncated in the prior);
they stay available as ``value="theorem9"`` and ``value="range"`` for
reproducing Figure 2b, marked uncertified in the curve's notes.
Beyond the paper, :func:`gaussian_network_curve` applies the same computation
to pgmpy ``LinearGaussianBayesianNetwork`` priors through their joint Gaussian.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from puffgm.core.curve import InfluenceCurve
from puffgm.core.validation import check_positive_finite, check_positive_int
from puffgm.exceptions import ParameterError, PriorError
from puffgm.gaussian.leakage import GaussianRegionModel, ModelOptions
from puffgm.gaussian.primitives import log_interval_prob, theorem9_sweep

__all__ = [
    "CurveOptions",
    "gp_covariance",
    "gaussian_region_influence",
    "gaussian_region_curve",
    "gp_region_curve",
    "gaussian_network_curve",
]

THEOREM9 = "Bai-He-Gu-Kifer-Maeng Theorem 9 (truncated Gaussian, region secrets, Example 6.2)"


def gp_covariance(n: int, length_scale: float) -> np.ndarray:
    r""":math:`\Sigma_{jk} = \exp(-(j-k)^2 / l)`, Example 6.2's Gaussian-process kernel.

    Note: :math:`/l`, not :math:`/2l^2`.
    """
    n = check_positive_int(n, "n", "gp_covariance")
    ell = check_positive_finite(length_scale, "length_scale", "gp_covariance")
    idx = np.arange(n)
    return np.exp(-((idx[:, None] - idx[None, :]) ** 2) / ell)


def _conditional(cov, mean, i, L):
    """(w, sigma^2) of x_i | x_L."""
    if len(L) == 0:
        return np.zeros(0), float(cov[i, i])
    S_LL = cov[np.ix_(L, L)]
    S_Li = cov[L, i]
    try:
        c = np.linalg.cholesky(S_LL)
    except np.linalg.LinAlgError:
        raise PriorError("The covariance matrix restricted to the low-influence set is not positive "
                         "definite.") from None
    w = np.linalg.solve(c.T, np.linalg.solve(c, S_Li))
    var = float(cov[i, i] - S_Li @ w)
    return w, var


def gaussian_region_influence(cov, lower, upper, delta: float, i: int, L, *, mean=None, grid: int = 201) -> dict:
    r"""Leakage of region secrets on :math:`x_i` through :math:`x_L` (Theorem 9's one-dimensional sweep).

    Parameters
    ----------
    cov : (n, n) array
    lower, upper : (n,) arrays
        The truncation box.
    delta : float
        Region width (regions :math:`[r, r + \delta]` inside :math:`[\mathrm{lower}_i, \mathrm{upper}_i]`).
    i : int
    L : sequence of int
        Low-influence indices (must not contain :math:`i`).
    mean : (n,) array, optional (default 0)
    grid : int
        Number of region positions :math:`r` for the ``theorem9`` value.

    Returns
    -------
    dict
        ``range``, ``theorem9``, ``safe`` (max of both), ``mu_interval``, ``sigma``.
    """
    cov = np.asarray(cov, float)
    n = cov.shape[0]
    mean = np.zeros(n) if mean is None else np.asarray(mean, float)
    lower = np.asarray(lower, float)
    upper = np.asarray(upper, float)
    L = [int(j) for j in L]
    if i in L:
        raise ParameterError(f"The low-influence set must not contain the secret coordinate {i}.")
    w, var = _conditional(cov, mean, i, L)
    lo_i, hi_i = lower[i], upper[i]
    if not hi_i - lo_i >= 2 * delta:
        raise ParameterError(f"Coordinate {i}'s support [{lo_i}, {hi_i}] is too short for two disjoint regions of "
                             f"width {delta}.")
    if var <= 1e-12 * cov[i, i]:
        return {"range": math.inf, "theorem9": math.inf, "safe": math.inf, "mu_interval": (math.nan, math.nan),
                "sigma": 0.0}
    sig = math.sqrt(var)
    if len(L):
        dev_lo = w * (lower[L] - mean[L])
        dev_hi = w * (upper[L] - mean[L])
        mu_lo = mean[i] + float(np.minimum(dev_lo, dev_hi).sum())
        mu_hi = mean[i] + float(np.maximum(dev_lo, dev_hi).sum())
    else:
        mu_lo = mu_hi = mean[i]

    def logp(r, mu, s):
        return log_interval_prob(r, r + delta, mu, s)

    # "range": top region vs bottom region, sup minus inf over mu (MLR => endpoints)
    top, bot = hi_i - delta, lo_i
    lr_hi = logp(top, mu_hi, sig) - logp(bot, mu_hi, sig)
    lr_lo = logp(top, mu_lo, sig) - logp(bot, mu_lo, sig)
    rng = float(abs(lr_hi - lr_lo))
    # "theorem9": sup_mu LR - log marginal ratio (untruncated N(m_i, Sigma_ii)), grid over r, r'
    th9 = theorem9_sweep((lo_i, hi_i), delta, (mean[i], math.sqrt(cov[i, i])), (mu_lo, mu_hi), sig, grid)
    return {"range": rng, "theorem9": th9, "safe": max(rng, th9), "mu_interval": (mu_lo, mu_hi), "sigma": sig}


@dataclass(frozen=True)
class CurveOptions:
    r"""Options of the truncated-Gaussian curves (:func:`gaussian_region_curve`, :func:`gp_region_curve`,
    :func:`gaussian_network_curve`).

    Attributes
    ----------
    nodes : sequence of int, optional
        The secret coordinates (default all).
    search : {"auto", "farthest", "greedy", "exhaustive"}
        How the high-influence set :math:`H` (:math:`i \in H`, :math:`|H| = b`) is chosen for every secret
        coordinate :math:`i` and every :math:`b`:

        * ``"farthest"``: :math:`L` = the :math:`n - b` coordinates least correlated with :math:`i` (largest
          :math:`|i - j|` for the GP kernel: Theorem 9 (1)), :math:`H` the :math:`b` most correlated;
        * ``"greedy"``: grow :math:`H` one coordinate at a time, adding the one that lowers the leakage most;
        * ``"exhaustive"``: every :math:`H` (:math:`n \le 14`);
        * ``"auto"``: exhaustive for :math:`n \le 10`, otherwise the better of farthest and greedy.
    value : {"safe", "range", "theorem9"}
        The value of a split (module docstring): ``"safe"``, the certified upper bound of
        :class:`~puffgm.gaussian.leakage.GaussianRegionModel`, or the uncertified ``"range"`` and
        ``"theorem9"`` values of :func:`gaussian_region_influence`.
    grid : int
        Region positions of the ``"theorem9"`` value.
    pinned_engines : bool
        Run the certified :math:`b \ge 3` engines for pinned splits (:mod:`puffgm.gaussian.leakage`) on the farthest
        splits only (also in exhaustive mode), one per b and secret coordinate; otherwise such splits keep a
        smaller split's value.
    cell_budget : int
        A value :math:`> 0` adds, on those splits at :math:`b \ge 4` without a sign-balanced conditional precision (the
        squared-exponential kernel), the cell engine of :mod:`puffgm.gaussian.multivariate` with that many
        cells per split.
    tol, atol : float
        Branch-and-bound tolerances of the safe value (:class:`~puffgm.gaussian.leakage.GaussianRegionModel`):
        each split's value is at most max(``atol``, ``tol`` |value|) above its bound function twice over,
        so a smaller ``atol`` lowers curves whose values are near 1e-4.
    """

    nodes: Sequence | None = None
    search: str = "auto"
    value: str = "safe"
    grid: int = 201
    pinned_engines: bool = False
    cell_budget: int = 0
    tol: float = 1e-5
    atol: float = 1e-4


def gaussian_region_curve(cov, lower, upper, delta: float, *, mean=None, max_b: int | None = None, names=None,
                          options: CurveOptions | None = None) -> InfluenceCurve:
    r""":math:`a(b)`-influence curve of a truncated Gaussian prior with region secrets.

    For every secret coordinate :math:`i` (``options.nodes``, default all) and every :math:`b`, the
    high-influence set :math:`H` (:math:`i \in H`, :math:`|H| = b`) is chosen by ``options.search``
    (:class:`CurveOptions`).  Any :math:`H` gives a valid upper bound (Definition 7 is an infimum over
    splits), so :math:`a(b) = \max_i \min_{H \,:\, |H| \le b}` over the explored :math:`H` (a smaller
    :math:`H` bounds every :math:`H` of size :math:`b` containing it: conditioning on more coordinates only
    mixes the likelihood ratios).

    Parameters
    ----------
    cov : (n, n) array
        The covariance of the untruncated Gaussian.
    lower, upper : float or (n,) arrays
        The truncation box.
    delta : float
        Region width.
    mean : (n,) array, optional (default 0)
    max_b : int, optional
        Largest b (default n).
    names : sequence, optional
        Labels of the coordinates in the witnesses (default 0 .. n - 1).
    options : CurveOptions, optional
        Search, value and accuracy (default ``CurveOptions()``).
    """
    return _region_curve((cov, lower, upper, delta, mean), max_b, (names, None), options)


def _region_curve(prior, max_b, labels, options):
    """:func:`gaussian_region_curve` with (names, fingerprint) ``labels`` (fingerprint None: from the prior)."""
    cov, lower, upper, delta, mean = prior
    names, fingerprint = labels
    if options is None:
        options = CurveOptions()
    if not isinstance(options, CurveOptions):
        raise ParameterError(f"The 'options' parameter of gaussian_region_curve must be a CurveOptions. "
                             f"Got {type(options).__name__} instead.")
    cov = np.asarray(cov, float)
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1] or not np.all(np.isfinite(cov)):
        raise PriorError("The covariance must be a finite square matrix.")
    if not np.allclose(cov, cov.T, atol=1e-10):
        raise PriorError("The covariance matrix is not symmetric.")
    n = cov.shape[0]
    lower = np.broadcast_to(np.asarray(lower, float), (n,)).copy()
    upper = np.broadcast_to(np.asarray(upper, float), (n,)).copy()
    if not np.all(upper > lower):
        raise ParameterError("Every truncation interval [lower, upper] must have upper > lower.")
    delta = check_positive_finite(delta, "delta", "gaussian_region_curve")
    tol = check_positive_finite(options.tol, "tol", "gaussian_region_curve")
    atol = check_positive_finite(options.atol, "atol", "gaussian_region_curve")
    value, search = options.value, options.search
    if value not in ("safe", "range", "theorem9"):
        raise ParameterError(f"The 'value' parameter must be 'safe', 'range' or 'theorem9'. Got {value!r} instead.")
    if search not in ("auto", "farthest", "greedy", "exhaustive"):
        raise ParameterError(f"The 'search' parameter must be auto, farthest, greedy or exhaustive. Got {search!r} "
                             "instead.")
    if search == "exhaustive" and n > 14:
        raise ParameterError(f"Exhaustive search over high-influence sets needs n <= 14. Got n = {n}.")
    B = n if max_b is None else check_positive_int(max_b, "max_b", "gaussian_region_curve")
    B = min(B, n)
    idx = list(range(n)) if options.nodes is None else [int(v) for v in options.nodes]
    names = list(names) if names is not None else list(range(n))
    model = None
    if value == "safe":
        model = GaussianRegionModel(cov, lower, upper, delta, mean, tol=tol, atol=atol,
                                    options=ModelOptions(cell_budget=options.cell_budget))
    mode = search
    if mode == "auto":
        mode = "exhaustive" if n <= 10 else "both"
    table = _CurveTable(_RegionPrior(cov, lower, upper, delta, mean), model, options, B, names)
    table.fill(idx, mode)
    worst = np.argmax(table.table, axis=0)
    a = table.table[worst, np.arange(B)]
    fp = fingerprint or hashlib.sha256(
        b"|".join([cov.tobytes(), lower.tobytes(), upper.tobytes(), repr(delta).encode(),
                   (np.zeros(n) if mean is None else np.asarray(mean, float)).tobytes()])
    ).hexdigest()[:16]
    if value == "safe":
        notes = ("certified: every point bounds the exact leakage of the truncated prior from above "
                 "(puffgm.gaussian.leakage: Theorem 9's sweep plus Bonferroni bounds for the truncated "
                 "high-influence coordinates and marginal, over the continuum of region positions); where the "
                 "other high-influence coordinates can be pushed out of the box, certified engines handle b = 2 "
                 "(bivariate) and b = 3 (trivariate, bivariate + Bonferroni hybrid); for larger such splits no "
                 "finite bound may be known and the curve keeps the value of a smaller one",)
    else:
        notes = (f"value={value!r}: for b >= 2 the other high-influence coordinates are treated as untruncated "
                 "(as in Theorem 9); not certified, use value='safe' for a privacy guarantee",)
    return InfluenceCurve(b=range(1, B + 1), a=a.tolist(),
                          witnesses=tuple(table.wit[worst[j]][j] for j in range(B)), n_entries=n,
                          method=f"gaussian-region:{value}", fingerprint=fp, theorem=THEOREM9, notes=notes,
                          details={"search": mode, "delta": delta,
                                   **({"tol": tol, "atol": atol} if value == "safe" else {})})


class _RegionPrior(NamedTuple):
    """The prior of :func:`gaussian_region_curve`: covariance, box, region width and mean."""

    cov: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    delta: float
    mean: np.ndarray


class _CurveTable:
    """The table a_i(b) of :func:`gaussian_region_curve` (rows: secret coordinates, columns: b) and its
    witnesses, filled by the split searches of :class:`CurveOptions`."""

    def __init__(self, prior, model, options, B, names):
        self.prior, self.model, self.options, self.B, self.names = prior, model, options, B, names
        self.n = prior.cov.shape[0]
        self.table: np.ndarray  # (rows, B) values, set by fill
        self.wit: list  # rows x B witnesses, set by fill

    def leak(self, i, H, engines=False):
        """The value of the split (i, H, L = the rest) under ``options.value``."""
        n = self.n
        L = [j for j in range(n) if j not in H]
        if self.options.value == "safe":
            # certified upper bound of the exact truncated leakage (puffgm.gaussian.leakage):
            # Theorem 9's sweep plus Bonferroni bounds for the truncation of the other
            # high-influence coordinates and of the marginal, over the continuum of regions;
            # the b >= 3 pinned-regime engines run on the farthest splits only
            return self.model.leakage(i, L, pinned_engines=engines).value
        cov, lower, upper, delta, mean = self.prior
        return gaussian_region_influence(cov, lower, upper, delta, i, L, mean=mean,
                                         grid=self.options.grid)[self.options.value]

    def offer(self, k, i, H, val):
        """Keep ``val`` for row k at b = |H| when it is smaller, with its witness."""
        b = len(H)
        n = self.n
        if b <= self.B and val < self.table[k, b - 1]:
            self.table[k, b - 1] = val
            self.wit[k][b - 1] = (self.names[i], tuple(self.names[j] for j in sorted(set(range(n)) - set(H))))

    def fill(self, idx, mode):
        """Search the splits of every secret coordinate in ``idx`` (``mode``: "exhaustive", "farthest",
        "greedy" or "both"), then make each row non-increasing in b."""
        n, B, opts = self.n, self.B, self.options
        cov = self.prior.cov
        self.table = np.full((len(idx), B), math.inf)
        self.wit = [[None] * B for _ in idx]
        table, wit = self.table, self.wit
        for k, i in enumerate(idx):
            others = [j for j in range(n) if j != i]
            if mode == "exhaustive":
                for size in range(0, B):
                    for extra in itertools.combinations(others, size):
                        H = (i,) + extra
                        self.offer(k, i, H, self.leak(i, H))
            if mode in ("farthest", "both") or (mode == "exhaustive" and opts.value == "safe" and B >= 3
                                                and opts.pinned_engines):
                corr = np.abs(cov[i, others]) / np.sqrt(cov[i, i] * np.diag(cov)[others])
                order = [others[t] for t in np.lexsort((np.abs(np.array(others) - i), -corr))]
                for size in range(0 if mode != "exhaustive" else 2, B):
                    H = (i,) + tuple(order[:size])
                    self.offer(k, i, H, self.leak(i, H, engines=opts.pinned_engines))
            if mode in ("greedy", "both"):
                self._greedy(k, i, others)
            if B >= n:
                table[k, n - 1] = 0.0
                wit[k][n - 1] = (self.names[i], ())
            for b in range(1, B):
                if table[k, b] > table[k, b - 1]:
                    table[k, b] = table[k, b - 1]
                    wit[k][b] = wit[k][b - 1]

    def _greedy(self, k, i, others):
        """Grow H from {i}, adding the coordinate that lowers the leakage most."""
        H: tuple[int, ...] = (i,)
        self.offer(k, i, H, self.leak(i, H))
        rest = list(others)
        while len(H) < self.B and rest:
            vals = [self.leak(i, H + (j,)) for j in rest]
            t = int(np.argmin(vals))
            H = H + (rest.pop(t),)
            self.offer(k, i, H, vals[t])


def gp_region_curve(n: int, length_scale: float, gamma: float = 5.0, delta: float = 0.1, *,
                    max_b: int | None = None, center_only: bool = False,
                    options: CurveOptions | None = None) -> InfluenceCurve:
    r"""Example 6.2: :math:`N(0, \Sigma)` with the kernel :math:`\Sigma`, truncated to :math:`[-\gamma, \gamma]^n`.

    Here :math:`\Sigma_{jk} = \exp(-(j-k)^2 / l)`.  :math:`H` grows around the secret coordinate
    (:math:`L` = the farthest coordinates, Theorem 9 (1): the search of ``options`` is "farthest").  By
    default every coordinate of ``options.nodes`` (default all) is a secret (the max over :math:`i` is
    taken); ``center_only=True`` keeps only :math:`i^* = \lceil n/2 \rceil` as in the paper.
    ``max_b`` and the other options are those of :func:`gaussian_region_curve`.
    """
    gamma = check_positive_finite(gamma, "gamma", "gp_region_curve")
    cov = gp_covariance(n, length_scale)
    options = CurveOptions() if options is None else options
    if isinstance(options, CurveOptions):
        nodes = [math.ceil(n / 2) - 1] if center_only else options.nodes
        options = replace(options, nodes=nodes, search="farthest")
    return gaussian_region_curve(cov, -gamma, gamma, delta, max_b=max_b, options=options)


def gaussian_network_curve(model, bounds, delta: float, *, max_b: int | None = None,
                           options: CurveOptions | None = None) -> InfluenceCurve:
    r""":math:`a(b)`-influence curve of a pgmpy ``LinearGaussianBayesianNetwork`` with region secrets.

    The joint Gaussian :math:`N(m, \Sigma)` comes from ``model.to_joint_gaussian()``.
    ``bounds`` is a ``(lower, upper)`` pair for every node or a mapping
    node -> (lower, upper): the prior is the joint Gaussian truncated to that
    box (without truncation every region secret leaks infinitely through any
    correlated coordinate).  ``max_b`` and ``options`` are those of
    :func:`gaussian_region_curve`.
    """
    try:
        mean, cov = model.to_joint_gaussian()
    except Exception as exc:  # pgmpy raises various errors for incomplete models
        raise PriorError(f"Could not build the joint Gaussian of the network: {exc}") from None
    names = _joint_order(model)
    mean = np.asarray(mean, float).ravel()
    cov = np.asarray(cov, float)
    n = len(names)
    if isinstance(bounds, dict):
        missing = [v for v in names if v not in bounds]
        if missing:
            raise ParameterError(f"The 'bounds' mapping has no interval for node {missing[0]!r}.")
        lower = np.array([float(bounds[v][0]) for v in names])
        upper = np.array([float(bounds[v][1]) for v in names])
    else:
        lo, hi = bounds
        lower, upper = np.full(n, float(lo)), np.full(n, float(hi))
    key = repr((names, mean.tolist(), cov.tolist(), lower.tolist(), upper.tolist(), delta))
    fp = hashlib.sha256(key.encode()).hexdigest()[:16]
    return _region_curve((cov, lower, upper, delta, mean), max_b, (names, fp), options)


def _joint_order(model):
    """Node order of ``to_joint_gaussian`` in pgmpy 1.x (topological order of the DAG)."""
    import networkx as nx

    return list(nx.topological_sort(model))
