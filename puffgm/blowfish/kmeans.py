r"""SuLQ k-means under Blowfish (He, Machanavajjhala and Ding, section 6).

SuLQ k-means (Blum et al. 2005) repeats, for a fixed number of iterations,
two noisy queries given the current (public) centroids :math:`c_1, \ldots, c_K`:

* :math:`q_{\mathrm{count}}(D) = (|C_1|, \ldots, |C_K|)`, the histogram of the Voronoi cells of the
  centroids;
* :math:`q_{\mathrm{sum}}(D) = \left(\sum_{x \in C_j} (x - c_j)\right)_j`, the per-cluster sums (here centred on
  each cluster's own public centroid, a post-processing-equivalent
  reparametrisation that lowers the sensitivity);

then moves :math:`c_j` to :math:`c_j + \widetilde{\mathrm{sum}}_j / \widetilde{\mathrm{count}}_j`.  Each iteration
spends :math:`\epsilon/T`, half on each query; by sequential composition (Theorem 4.1) the run is
:math:`(\epsilon, P)`-Blowfish private.

**Sensitivities (exact, per iteration).**  A neighbour moves one point :math:`x \to y`
along an edge of :math:`G`.  The counts change by 2 iff :math:`x` and :math:`y` fall in different
cells (:math:`S(q_{\mathrm{count}}, P) = 2` if some edge crosses cells, else 0).  The sums change by
:math:`\lVert x - y \rVert_1` if :math:`x` and :math:`y` share a cell :math:`j`, and by
:math:`\lVert x - c_A \rVert_1 + \lVert y - c_B \rVert_1` if they fall in cells :math:`A \ne B`, so

$$
S(q_{\mathrm{sum}}, P) = \max_{(x, y) \in E} \begin{cases}
\lVert x - y \rVert_1 & \text{(same cell)}, \\
\lVert x - c_A \rVert_1 + \lVert y - c_B \rVert_1 & \text{(different cells)},
\end{cases}
$$

computed exactly over the edges of :math:`G`.  **Paper slip (Lemma 6.1):** the paper
gives :math:`S(q_{\mathrm{sum}}, P) = \max_{(x,y) \in E} d(x, y)` (e.g. :math:`\theta` under :math:`G^{d,\theta}`); that
ignores moves across a cell boundary, which shift mass between two clusters'
sums.  Brute-force enumeration (tests/blowfish/test_blowfish_kmeans.py) shows the larger
value above; puffgm uses it.
"""

from __future__ import annotations

import dataclasses
import math
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from puffgm.blowfish.policy import Policy, PolicyError, l1_diameter
from puffgm.core.noise import resolve_noise
from puffgm.core.results import freeze_record
from puffgm.core.validation import check_positive_finite, check_positive_int
from puffgm.exceptions import CompositionError

__all__ = ["KMeansOptions", "KMeansResult", "kmeans_sensitivities", "sulq_kmeans", "kmeans_objective", "assign",
           "iteration_query"]

_EDGES: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_EDGE_LIMIT = 5_000_000


def assign(points: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Index of the nearest centroid (squared Euclidean distance, ties to the lowest index)."""
    d = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
    return np.argmin(d, axis=1)


def kmeans_objective(points, centroids) -> float:
    r""":math:`\sum_x \min_j \lVert x - c_j \rVert_2^2` (section 6, Eqn. (10))."""
    p = np.asarray(points, dtype=float)
    c = np.asarray(centroids, dtype=float)
    return float(((p[:, None, :] - c[None, :, :]) ** 2).sum(axis=2).min(axis=1).sum())


def _edges(policy: Policy):
    g = policy.graph
    if g not in _EDGES:
        n_edges = g.n_edges
        _EDGES[g] = g.edge_arrays() if n_edges <= _EDGE_LIMIT else None
    return _EDGES[g]


def kmeans_sensitivities(policy: Policy, centroids) -> tuple:
    r""":math:`(S(q_{\mathrm{count}}, P), S(q_{\mathrm{sum}}, P))` for the given public centroids, exact.

    The sensitivities are derived in the module docstring.

    Examples
    --------
    >>> from puffgm.blowfish import Domain, Policy, line_graph
    >>> p = Policy(line_graph(Domain.ordered(10)))
    >>> kmeans_sensitivities(p, [[2.0], [7.0]])   # x=4 -> y=5 crosses: |4-2| + |5-7|
    (2.0, 4.0)
    """
    if not policy.unconstrained:
        raise PolicyError("SuLQ k-means sensitivities are computed for policies without constraints.")
    coords = policy.domain.coords()
    c = np.asarray(centroids, dtype=float)
    if c.ndim != 2 or c.shape[1] != coords.shape[1] or not np.all(np.isfinite(c)):
        raise PolicyError(f"The centroids must be a finite (K, {coords.shape[1]}) array.")
    lab = assign(coords, c)
    f = np.abs(coords - c[lab]).sum(axis=1)
    edges = _edges(policy)
    if edges is not None:
        u, v = edges
        if len(u) == 0:
            return 0.0, 0.0
        cross = lab[u] != lab[v]
        s_count = 2.0 if cross.any() else 0.0
        cost = np.where(cross, f[u] + f[v], np.abs(coords[u] - coords[v]).sum(axis=1))
        return s_count, float(cost.max())
    s_count, s_sum = 0.0, 0.0
    for cl in policy.graph.cliques():
        labels = lab[cl]
        tops = []
        for j in np.unique(labels):
            grp = cl[labels == j]
            s_sum = max(s_sum, l1_diameter(coords[grp]))
            tops.append(float(f[grp].max()))
        if len(tops) >= 2:
            s_count = 2.0
            tops.sort()
            s_sum = max(s_sum, tops[-1] + tops[-2])
    return s_count, s_sum


def iteration_query(policy: Policy, centroids):
    """The query of one SuLQ iteration as f(database) -> (counts, centred sums) flattened, for audits."""
    coords = policy.domain.coords()
    c = np.asarray(centroids, dtype=float)
    K, d = c.shape

    def f(db):
        x = coords[policy.domain.indices(db)]
        lab = assign(x, c)
        counts = np.bincount(lab, minlength=K).astype(float)
        sums = np.zeros((K, d))
        np.add.at(sums, lab, x - c[lab])
        return np.concatenate([counts, sums.ravel()])

    return f


@dataclass(frozen=True)
class KMeansResult:
    """The output of :func:`sulq_kmeans`.

    Attributes
    ----------
    centroids : ndarray (K, d)
        Final centroids in rank coordinates.
    objective : float
        kmeans_objective of the data at the final centroids (computed on the private
        data: for evaluation only, it is not released).
    epsilon : float
    sensitivities : tuple
        (S_count, S_sum) of every iteration.
    secure : bool
    policy_key : str
    details : Mapping
    """

    centroids: np.ndarray
    objective: float
    epsilon: float
    sensitivities: tuple
    secure: bool
    policy_key: str
    details: Mapping = field(default_factory=dict)

    def __post_init__(self):
        self.centroids.setflags(write=False)
        freeze_record(self)  # details read-only

    def explain(self) -> str:
        s = np.array(self.sensitivities)
        return (f"SuLQ k-means, K={len(self.centroids)}, {len(s)} iterations, ({self.epsilon:g}, P)-Blowfish private "
                "(Theorem 4.1 over 2 Laplace releases per iteration); "
                f"S_count in [{s[:, 0].min():g}, {s[:, 0].max():g}], "
                f"S_sum in [{s[:, 1].min():g}, {s[:, 1].max():g}]")


@dataclass(frozen=True)
class KMeansOptions:
    r"""The run of :func:`sulq_kmeans`: iterations, initial centroids, sensitivities.

    Attributes
    ----------
    iterations : int
        Number of SuLQ iterations :math:`T` (each spends :math:`\epsilon / T`).
    init : array (K, d), optional
        Initial centroids (public, data independent); default uniform over the domain box.
    sensitivity_override : (float, float), optional
        Research only: use these (S_count, S_sum) instead of the exact ones.  The
        result then records ``details["guarantee"] = False``.
    """

    iterations: int = 10
    init: Any = None
    sensitivity_override: Any = None


def sulq_kmeans(data, policy: Policy, n_clusters: int, *, epsilon: float, options: KMeansOptions | None = None,
                random_state=None, accountant=None, label: str | None = None) -> KMeansResult:
    r"""SuLQ k-means under a Blowfish policy (section 6).

    Parameters
    ----------
    data : sequence of domain values, or an int array of domain indices
    policy : Policy
        Unconstrained policy on an ordered or grid domain.
    n_clusters : int
    epsilon : float
        Total budget: :math:`\epsilon / (2T)` per noisy query (:math:`T` iterations).
    options : KMeansOptions, optional
        Iterations (default 10), initial centroids, sensitivity override.
    random_state : None, int or Generator
        None: secure noise (and a fresh numpy generator for the initial centroids).
    accountant : PrivacyAccountant, optional
        Charged :math:`\epsilon` once (the :math:`2T` releases compose to :math:`\epsilon` by Theorem 4.1).
    label : str, optional
        The run's label in the accountant's ledger.
    """
    options = KMeansOptions() if options is None else options
    init, sensitivity_override = options.init, options.sensitivity_override
    if not isinstance(policy, Policy):
        raise PolicyError(f"Expected a Blowfish Policy; got {type(policy).__name__}.")
    epsilon = check_positive_finite(epsilon, "epsilon", "sulq_kmeans")
    n_clusters = check_positive_int(n_clusters, "n_clusters", "sulq_kmeans")
    iterations = check_positive_int(options.iterations, "iterations", "sulq_kmeans")
    coords = policy.domain.coords()
    arr = np.asarray(data)
    if arr.dtype.kind in "iu" and arr.ndim == 1:
        idx = arr.astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= policy.domain.size):
            raise PolicyError("A data index lies outside the domain.")
    else:
        idx = policy.domain.indices([tuple(r) if isinstance(r, (list, np.ndarray)) else r for r in data])
    if idx.size == 0:
        raise PolicyError("The data set is empty.")
    x = coords[idx]
    dim = coords.shape[1]
    hi = coords.max(axis=0)
    rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
    if init is None:
        cents = rng.uniform(0, 1, size=(n_clusters, dim)) * hi
    else:
        cents = np.asarray(init, dtype=float).copy()
        if cents.shape != (n_clusters, dim) or not np.all(np.isfinite(cents)):
            raise PolicyError(f"init must be a finite ({n_clusters}, {dim}) array.")
    noise = resolve_noise(None if random_state is None else rng)
    planned, charged = _planned_release(policy, epsilon, noise, accountant, sensitivity_override, label)
    eps_q = epsilon / (2 * iterations)
    sens = []
    for _ in range(iterations):
        s_count, s_sum = kmeans_sensitivities(policy, cents) if sensitivity_override is None else sensitivity_override
        sens.append((s_count, s_sum))
        lab = assign(x, cents)
        counts = np.bincount(lab, minlength=n_clusters).astype(float)
        sums = np.zeros((n_clusters, dim))
        np.add.at(sums, lab, x - cents[lab])
        n_counts = noise.laplace(counts, s_count / eps_q) if s_count > 0 else counts
        n_sums = noise.laplace(sums, s_sum / eps_q) if s_sum > 0 else sums
        ok = n_counts >= 1.0
        cents = cents.copy()
        cents[ok] = cents[ok] + n_sums[ok] / n_counts[ok, None]
        cents = np.clip(cents, 0.0, hi)
    res = KMeansResult(cents, kmeans_objective(x, cents), epsilon, tuple(sens), bool(noise.secure), policy.key,
                       {"iterations": iterations, "guarantee": sensitivity_override is None,
                        "epsilon_per_query": eps_q})
    if accountant is not None:
        accountant.record(dataclasses.replace(planned, value=cents), label=label, charged=charged)
    return res


def _planned_release(policy, epsilon: float, noise, accountant, sensitivity_override, label):
    """(the ledger record of a k-means run, its charge), charged to the accountant before any noise is drawn;
    (None, None) without an accountant."""
    from puffgm.blowfish.mechanisms import BlowfishRelease

    if accountant is None:
        return None, None
    if sensitivity_override is not None:
        raise CompositionError("A k-means run with sensitivity_override has no Blowfish guarantee, so the accountant "
                               "cannot record it; run it without an accountant.")
    planned = BlowfishRelease(None, "SuLQ k-means", epsilon, math.nan, math.nan, bool(noise.secure),
                              noise.description, policy.key, False, None, "He et al. 2014, section 6")
    return planned, accountant.charge(planned, label=label)
