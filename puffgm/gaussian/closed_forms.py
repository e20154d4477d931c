"""Closed-form a(b)-influence curves of truncated Gaussian priors with region secrets.

Truncated Gaussian with region secrets (Example 6.2 / Theorem 9)
----------------------------------------------------------------
x ~ N(m, Sigma) truncated to a box, secrets s_i(r) = {x_i in [r, r+delta]}.
For a low-influence set L, x_i | x_L is Gaussian N(mu, sigma^2) with
mu = m_i + w.(x_L - m_L), w = Sigma_iL Sigma_LL^-1 and sigma^2 =
Sigma_ii - w.Sigma_Li constant, so the sup over x_L is a sweep over mu.

How the truncation enters: *only* through the support.  (i) x_L ranges over
the box, so mu ranges over the bounded interval
[m_i + sum_j min(w_j (lo_j - m_j), w_j (hi_j - m_j)), ... max ...]; without the
truncation mu is unbounded and every a(b) with w != 0 is infinite.  (ii) The
secrets lie inside [lo_i, hi_i].  Inside the box, the truncation's normaliser
cancels from every ratio of conditional probabilities given x_L when H = {x_i}.
For b >= 2 the paper (and this module) keep the Gaussian conditional x_i | x_L
and ignore the truncation of the other high-influence coordinates H \\ {i},
which are integrated over the box in the truncated prior; the exact truncated
value needs b-dimensional box integrals and is not computed.

Two values are reported per point:

* ``"theorem9"``: sup over mu of log P(A | mu) / P(A' | mu) minus the log ratio
  of the untruncated marginal N(m_i, Sigma_ii), maximised over pairs of
  disjoint regions on a grid of r (the paper's computation);
* ``"range"``: sup_mu - inf_mu of log P(A | mu) / P(A' | mu).  The truncated
  marginal ratio P(A) / P(A') is an average of the conditional ratios over
  x_L in the box, so it is at least their infimum: this bounds a_dagger(L) for
  the truncated prior (exactly, for b = 1).  By the monotone-likelihood-ratio
  property of the Gaussian location family (G(t) = P(t < Z < t + delta) is
  log-concave), the worst pair is the top region [hi-delta, hi] against the
  bottom region [lo, lo+delta], with no grid.

The curve the library returns (``value="safe"``, default) is the max of the two
for b = 1.  For b >= 2 neither value is certified (the other high-influence
coordinates are truncated in the prior, and the paper's value came out 1e-9
below a numerically integrated exact leakage in a 2-D check).  What can be
certified: P(A | x_L) / P(A' | x_L) averages the full conditional ratios
P(A | x_-i) / P(A' | x_-i) with common weights, and so does the marginal ratio,
so the *full-conditioning range* (the b = 1 ``"range"`` value) bounds the
leakage of every H.  The safe curve therefore never drops below it before
b = n, where it is 0; the paper's decreasing values stay available as
``value="theorem9"`` (and ``"range"``) for reproducing Figure 2b, marked
uncertified in the curve's notes.
Beyond the paper, :func:`gaussian_network_curve` applies the same computation
to pgmpy ``LinearGaussianBayesianNetwork`` priors through their joint Gaussian.
"""

from __future__ import annotations

import hashlib
import itertools
import math

import numpy as np

from puffgm.core.curve import InfluenceCurve
from puffgm.core.validation import check_positive_finite, check_positive_int
from puffgm.exceptions import ParameterError, PriorError

__all__ = [
    "gp_covariance",
    "gaussian_region_influence",
    "gaussian_region_curve",
    "gp_region_curve",
    "gaussian_network_curve",
]

THEOREM9 = "Bai-He-Gu-Kifer-Maeng Theorem 9 (truncated Gaussian, region secrets, Example 6.2)"


def gp_covariance(n: int, length_scale: float) -> np.ndarray:
    """Sigma_jk = exp(-(j-k)^2 / l) (Example 6.2's Gaussian-process kernel; note: / l, not / 2 l^2)."""
    n = check_positive_int(n, "n", "gp_covariance")
    l = check_positive_finite(length_scale, "length_scale", "gp_covariance")
    idx = np.arange(n)
    return np.exp(-((idx[:, None] - idx[None, :]) ** 2) / l)


def _log_interval(lo, hi):
    """log P(lo < Z < hi) for standard normal Z, stable in both tails (arrays)."""
    from scipy.special import log_ndtr

    lo = np.asarray(lo, float)
    hi = np.asarray(hi, float)
    upper = lo > 0
    a = np.where(upper, log_ndtr(-lo), log_ndtr(hi))
    b = np.where(upper, log_ndtr(-hi), log_ndtr(lo))
    with np.errstate(divide="ignore"):
        return a + np.log1p(-np.exp(b - a))


def _conditional(cov, mean, i, L):
    """(w, sigma^2) of x_i | x_L."""
    if len(L) == 0:
        return np.zeros(0), float(cov[i, i])
    S_LL = cov[np.ix_(L, L)]
    S_Li = cov[L, i]
    try:
        c = np.linalg.cholesky(S_LL)
    except np.linalg.LinAlgError:
        raise PriorError("The covariance matrix restricted to the low-influence set is not positive definite.") from None
    w = np.linalg.solve(c.T, np.linalg.solve(c, S_Li))
    var = float(cov[i, i] - S_Li @ w)
    return w, var


def gaussian_region_influence(cov, lower, upper, delta: float, i: int, L, *, mean=None, grid: int = 201) -> dict:
    """Leakage of region secrets on x_i through x_L (Theorem 9's one-dimensional sweep).

    Parameters
    ----------
    cov : (n, n) array
    lower, upper : (n,) arrays
        The truncation box.
    delta : float
        Region width (regions [r, r + delta] inside [lower_i, upper_i]).
    i : int
    L : sequence of int
        Low-influence indices (must not contain i).
    mean : (n,) array, optional (default 0)
    grid : int
        Number of region positions r for the ``theorem9`` value.

    Returns
    -------
    dict with ``range``, ``theorem9``, ``safe`` (max of both), ``mu_interval``, ``sigma``.
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
        raise ParameterError(f"Coordinate {i}'s support [{lo_i}, {hi_i}] is too short for two disjoint regions of width {delta}.")
    if var <= 1e-12 * cov[i, i]:
        return {"range": math.inf, "theorem9": math.inf, "safe": math.inf, "mu_interval": (math.nan, math.nan), "sigma": 0.0}
    sig = math.sqrt(var)
    if len(L):
        dev_lo = w * (lower[L] - mean[L])
        dev_hi = w * (upper[L] - mean[L])
        mu_lo = mean[i] + float(np.minimum(dev_lo, dev_hi).sum())
        mu_hi = mean[i] + float(np.maximum(dev_lo, dev_hi).sum())
    else:
        mu_lo = mu_hi = mean[i]

    def logp(r, mu, s):
        return _log_interval((r - mu) / s, (r + delta - mu) / s)

    # "range": top region vs bottom region, sup minus inf over mu (MLR => endpoints)
    top, bot = hi_i - delta, lo_i
    lr_hi = logp(top, mu_hi, sig) - logp(bot, mu_hi, sig)
    lr_lo = logp(top, mu_lo, sig) - logp(bot, mu_lo, sig)
    rng = float(abs(lr_hi - lr_lo))
    # "theorem9": sup_mu LR - log marginal ratio (untruncated N(m_i, Sigma_ii)), grid over r, r'
    r = np.linspace(lo_i, hi_i - delta, grid)
    marg = logp(r, mean[i], math.sqrt(cov[i, i]))
    best = -math.inf
    disjoint = np.abs(r[:, None] - r[None, :]) >= delta - 1e-12
    for mu in (mu_lo, mu_hi):
        k = logp(r, mu, sig) - marg
        vals = k[:, None] - k[None, :]
        best = max(best, float(np.max(np.where(disjoint, vals, -np.inf))))
    th9 = max(best, 0.0)
    return {"range": rng, "theorem9": th9, "safe": max(rng, th9), "mu_interval": (mu_lo, mu_hi), "sigma": sig}


def gaussian_region_curve(cov, lower, upper, delta: float, *, mean=None, max_b: int | None = None,
                          nodes=None, search: str = "auto", value: str = "safe", grid: int = 201,
                          names=None, fingerprint: str | None = None,
                          pinned_engines: bool = False, cell_budget: int = 0, tol: float = 1e-5,
                          atol: float = 1e-4) -> InfluenceCurve:
    """a(b)-influence curve of a truncated Gaussian prior with region secrets.

    For every secret coordinate i (``nodes``, default all) and every b, the
    high-influence set H (i in H, |H| = b) is chosen by ``search``:

    * ``"farthest"``: L = the n - b coordinates least correlated with i (largest
      |i - j| for the GP kernel: Theorem 9 (1)), H the b most correlated;
    * ``"greedy"``: grow H one coordinate at a time, adding the one that lowers
      the leakage most;
    * ``"exhaustive"``: every H (n <= 14);
    * ``"auto"``: exhaustive for n <= 10, otherwise the better of farthest and greedy.

    Any H gives a valid upper bound (Definition 7 is an infimum over splits), so
    a(b) = max_i min over the explored H with |H| <= b (a smaller H bounds every H of size b
    containing it: conditioning on more coordinates only mixes the likelihood ratios).  The
    certified b >= 3 engines for pinned splits (:mod:`puffgm.gaussian.leakage`) run on the farthest
    splits only (also in exhaustive mode), one per b and secret coordinate, when
    ``pinned_engines=True`` (opt-in: seconds to minutes per pinned split; Figure 2b's curves use
    it); otherwise such splits keep a smaller split's value.  ``cell_budget`` > 0 adds, on those
    splits at b >= 4 without a sign-balanced conditional precision (the squared-exponential kernel),
    the cell engine of :mod:`puffgm.gaussian.multivariate` with that many cells per split (minutes
    per split).  ``value`` picks
    ``"safe"`` (default), ``"range"`` or ``"theorem9"`` (see the module docstring).  ``tol`` and
    ``atol`` are the branch-and-bound tolerances of the safe value
    (:class:`~puffgm.gaussian.leakage.GaussianRegionModel`): each split's value is at most
    max(``atol``, ``tol`` |value|) above its bound function twice over, so a smaller ``atol`` lowers
    curves whose values are near 1e-4 (at a cost in time).
    """
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
    tol = check_positive_finite(tol, "tol", "gaussian_region_curve")
    atol = check_positive_finite(atol, "atol", "gaussian_region_curve")
    if value not in ("safe", "range", "theorem9"):
        raise ParameterError(f"The 'value' parameter must be 'safe', 'range' or 'theorem9'. Got {value!r} instead.")
    if search not in ("auto", "farthest", "greedy", "exhaustive"):
        raise ParameterError(f"The 'search' parameter must be auto, farthest, greedy or exhaustive. Got {search!r} instead.")
    if search == "exhaustive" and n > 14:
        raise ParameterError(f"Exhaustive search over high-influence sets needs n <= 14. Got n = {n}.")
    B = n if max_b is None else check_positive_int(max_b, "max_b", "gaussian_region_curve")
    B = min(B, n)
    idx = list(range(n)) if nodes is None else [int(v) for v in nodes]
    names = list(names) if names is not None else list(range(n))

    model = None
    if value == "safe":
        from puffgm.gaussian.leakage import GaussianRegionModel

        model = GaussianRegionModel(cov, lower, upper, delta, mean, cell_budget=cell_budget, tol=tol, atol=atol)

    def leak(i, H, engines=False):
        L = [j for j in range(n) if j not in H]
        if value == "safe":
            # certified upper bound of the exact truncated leakage (puffgm.gaussian.leakage):
            # Theorem 9's sweep plus Bonferroni bounds for the truncation of the other
            # high-influence coordinates and of the marginal, over the continuum of regions;
            # the (slow) b >= 3 pinned-regime engines run on the farthest splits only
            return model.leakage(i, L, pinned_engines=engines).value
        return gaussian_region_influence(cov, lower, upper, delta, i, L, mean=mean, grid=grid)[value]

    table = np.full((len(idx), B), math.inf)
    wit = [[None] * B for _ in idx]

    def offer(k, i, H, val):
        b = len(H)
        if b <= B and val < table[k, b - 1]:
            table[k, b - 1] = val
            wit[k][b - 1] = (names[i], tuple(names[j] for j in sorted(set(range(n)) - set(H))))

    mode = search
    if mode == "auto":
        mode = "exhaustive" if n <= 10 else "both"
    for k, i in enumerate(idx):
        others = [j for j in range(n) if j != i]
        if mode == "exhaustive":
            for size in range(0, B):
                for extra in itertools.combinations(others, size):
                    H = (i,) + extra
                    offer(k, i, H, leak(i, H))
        if mode in ("farthest", "both") or (mode == "exhaustive" and value == "safe" and B >= 3 and pinned_engines):
            corr = np.abs(cov[i, others]) / np.sqrt(cov[i, i] * np.diag(cov)[others])
            order = [others[t] for t in np.lexsort((np.abs(np.array(others) - i), -corr))]
            for size in range(0 if mode != "exhaustive" else 2, B):
                H = (i,) + tuple(order[:size])
                offer(k, i, H, leak(i, H, engines=pinned_engines))
        if mode in ("greedy", "both"):
            H = (i,)
            offer(k, i, H, leak(i, H))
            rest = list(others)
            while len(H) < B and rest:
                vals = [leak(i, H + (j,)) for j in rest]
                t = int(np.argmin(vals))
                H = H + (rest.pop(t),)
                offer(k, i, H, vals[t])
        if B >= n:
            table[k, n - 1] = 0.0
            wit[k][n - 1] = (names[i], ())
        for b in range(1, B):
            if table[k, b] > table[k, b - 1]:
                table[k, b] = table[k, b - 1]
                wit[k][b] = wit[k][b - 1]
    worst = np.argmax(table, axis=0)
    a = table[worst, np.arange(B)]
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
                          witnesses=tuple(wit[worst[j]][j] for j in range(B)), n_entries=n,
                          method=f"gaussian-region:{value}", fingerprint=fp, theorem=THEOREM9, notes=notes,
                          details={"search": mode, "delta": delta,
                                   **({"tol": tol, "atol": atol} if value == "safe" else {})})


def gp_region_curve(n: int, length_scale: float, gamma: float = 5.0, delta: float = 0.1, *,
                    max_b: int | None = None, value: str = "safe", center_only: bool = False,
                    grid: int = 201, pinned_engines: bool = False, cell_budget: int = 0, tol: float = 1e-5,
                    atol: float = 1e-4) -> InfluenceCurve:
    """Example 6.2: N(0, Sigma) with Sigma_jk = exp(-(j-k)^2 / l), truncated to [-gamma, gamma]^n.

    H grows around the secret coordinate (L = the farthest coordinates, Theorem
    9 (1)).  By default every coordinate is a secret (the max over i is taken);
    ``center_only=True`` keeps only i* = ceil(n/2) as in the paper.  The other keywords are
    those of :func:`gaussian_region_curve`.
    """
    gamma = check_positive_finite(gamma, "gamma", "gp_region_curve")
    cov = gp_covariance(n, length_scale)
    nodes = [math.ceil(n / 2) - 1] if center_only else None
    return gaussian_region_curve(cov, -gamma, gamma, delta, max_b=max_b, nodes=nodes, search="farthest",
                                 value=value, grid=grid, pinned_engines=pinned_engines, cell_budget=cell_budget,
                                 tol=tol, atol=atol)


def gaussian_network_curve(model, bounds, delta: float, *, max_b: int | None = None, search: str = "auto",
                           value: str = "safe", grid: int = 201, tol: float = 1e-5,
                           atol: float = 1e-4) -> InfluenceCurve:
    """a(b)-influence curve of a pgmpy ``LinearGaussianBayesianNetwork`` with region secrets.

    The joint Gaussian N(m, Sigma) comes from ``model.to_joint_gaussian()``.
    ``bounds`` is a ``(lower, upper)`` pair for every node or a mapping
    node -> (lower, upper): the prior is the joint Gaussian truncated to that
    box (without truncation every region secret leaks infinitely through any
    correlated coordinate).  ``max_b``, ``search``, ``value``, ``grid``, ``tol`` and ``atol`` are those of
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
    fp = hashlib.sha256(repr((names, mean.tolist(), cov.tolist(), lower.tolist(), upper.tolist(), delta)).encode()).hexdigest()[:16]
    return gaussian_region_curve(cov, lower, upper, delta, mean=mean, max_b=max_b, search=search,
                                 value=value, grid=grid, names=names, fingerprint=fp, tol=tol, atol=atol)


def _joint_order(model):
    """Node order of ``to_joint_gaussian`` in pgmpy 1.x (topological order of the DAG)."""
    import networkx as nx

    return list(nx.topological_sort(model))
