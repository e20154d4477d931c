r"""Cumulative histograms and range queries under Blowfish (He, Machanavajjhala and Ding, section 7).

Domain :math:`T = \{0 < 1 < \cdots < k-1\}` (an ordered domain), :math:`h_v` the count of value :math:`v`,
:math:`c_j = \sum_{v \le j} h_v` the cumulative histogram (Definition 7.1); :math:`c_{k-1} = n` is
public.  A range query is :math:`r[a, b] = c_b - c_{a-1}` (Definition 7.2, :math:`c_{-1} = 0`).

* **Ordered mechanism** (section 7.1): under the line graph (:math:`\theta = 1`) a
  move :math:`x \to y` changes exactly :math:`|x - y| = 1` cumulative count, so releasing
  :math:`\tilde c_j = c_j + \mathrm{Lap}(S/\epsilon)`, :math:`S = S(c, P)` (1 on the line graph, :math:`\theta` under
  :math:`G^{d,\theta}`) is :math:`(\epsilon, P)`-Blowfish private (Theorem 5.1).  Constrained
  inference (Hay et al. 2010): the :math:`c_j` are non-decreasing, so project the noisy
  vector on that cone (isotonic regression, ``scipy.optimize.isotonic_regression``)
  and clip to :math:`[0, n]`.  **Theorem 7.1**: a range query from two noisy counts has
  error :math:`E(\tilde r - r)^2 = 2 (S/\epsilon)^2` per noisy end, i.e. :math:`\le 4/\epsilon^2` on the line graph,
  independent of :math:`|T|`.
* **Ordered hierarchical mechanism** (section 7.2) for :math:`G^{d,\theta}`: cut :math:`T` into
  :math:`\lceil k/\theta \rceil` blocks of :math:`\theta` consecutive values.  "S nodes"
  :math:`s_i = c(\text{end of block } i)` (:math:`i <` last) get :math:`\mathrm{Lap}(1/\epsilon_S)`: a move of
  distance :math:`\le \theta` changes at most one of them.  Each block carries a hierarchical tree of
  fan-out :math:`f` and :math:`h = \lceil \log_f \theta \rceil` levels below its root ("H nodes", the block's root is
  :math:`s_i - s_{i-1}`); a move changes at most one node per level on each side, :math:`2h` in
  all, so each H node gets :math:`\mathrm{Lap}(2h/\epsilon_H)`.  With :math:`\epsilon_S + \epsilon_H = \epsilon` the
  release is :math:`(\epsilon, P)`-Blowfish private (**Theorem 7.2(1)**, sequential
  composition).  :math:`c_j = s_{i-1}` + (prefix of block :math:`i` from at most :math:`(f-1)h` H nodes).
  For :math:`\theta \ge k` this is the hierarchical mechanism of differential privacy
  (one tree, budget :math:`\epsilon/h` per level, per-level sensitivity 2 for a changed
  tuple); for :math:`\theta = 1` it is the ordered mechanism.
* **Budget split and fan-out** (Theorem 7.2(2)): the mean squared error of
  every linear estimator here is :math:`A/\epsilon_S^2 + B/\epsilon_H^2`, so the optimal split is
  :math:`\epsilon_S = \epsilon A^{1/3} / (A^{1/3} + B^{1/3})`; the fan-out is chosen by
  evaluating the exact error for :math:`f = 2, \ldots, 16`.

Every mechanism is a :class:`CumulativePlan`: a node matrix :math:`N` (node counts
:math:`= N h`), independent Laplace scales :math:`b`, and a linear estimator :math:`E`
(:math:`\tilde c = E(N h + Z) + n e_{k-1}`).  Its exact error is computed from
:math:`\mathrm{Cov}(\tilde c) = E \operatorname{diag}(2 b^2) E^T` and its exact Blowfish loss as
:math:`\max_{\text{edges } (x, y)} \sum_j |N_{jx} - N_{jy}| / b_j`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from puffgm.blowfish.mechanisms import BlowfishRelease, ReleaseOptions
from puffgm.blowfish.policy import Policy, PolicyError
from puffgm.blowfish.sensitivity import cumulative_sensitivity
from puffgm.core.noise import resolve_noise
from puffgm.core.results import freeze_record
from puffgm.core.validation import check_positive_finite, check_positive_int

__all__ = [
    "CumulativePlan",
    "HierarchicalOptions",
    "ordered_plan",
    "ordered_hierarchical_plan",
    "hierarchical_plan",
    "best_plan",
    "laplace_histogram_plan",
    "ordered_mechanism",
    "ordered_hierarchical_mechanism",
    "range_query",
    "ordered_range_error",
    "THEOREM_7_1",
    "THEOREM_7_2",
]

THEOREM_7_1 = "He, Machanavajjhala and Ding 2014, Theorem 7.1 (ordered mechanism, range-query error <= 4/eps^2)"
THEOREM_7_2 = "He, Machanavajjhala and Ding 2014, Theorem 7.2 (ordered hierarchical mechanism)"

#: Largest domain the dense plans are built for.
MAX_PLAN_DOMAIN = 4096


@dataclass(frozen=True, eq=False)
class CumulativePlan:
    r"""A linear release strategy for the cumulative histogram.

    Attributes
    ----------
    name : str
    k : int
        Domain size.
    node_matrix : ndarray (m, k)
        Released node counts are ``node_matrix @ h``.
    scales : ndarray (m,)
        Laplace scale of each node.
    estimator : ndarray (k, m)
        :math:`\tilde c` = ``estimator @ noisy_nodes`` + :math:`n` ``known_total``.
    known_total : ndarray (k,)
        Coefficient of the public :math:`n` in each cumulative estimate.
    epsilon : float
    details : Mapping
        Fan-out, height, budget split, block width, ...
    """

    name: str
    k: int
    node_matrix: np.ndarray
    scales: np.ndarray
    estimator: np.ndarray
    known_total: np.ndarray
    epsilon: float
    details: Mapping = field(default_factory=dict)

    def __post_init__(self):
        for a in (self.node_matrix, self.scales, self.estimator, self.known_total):
            a.setflags(write=False)
        freeze_record(self)  # details read-only

    # -- exact error ---------------------------------------------------------
    def covariance(self) -> np.ndarray:
        r""":math:`\mathrm{Cov}(\tilde c) = E \operatorname{diag}(2 b^2) E^T` (:math:`k \times k`), exact."""
        return (self.estimator * (2.0 * self.scales**2)) @ self.estimator.T

    def cumulative_mse(self) -> float:
        r""":math:`\frac{1}{k} \sum_j \mathbb{E}(\tilde c_j - c_j)^2` (Definition 2.4, cumulative histogram), exact.

        It is :math:`\operatorname{tr}(\mathrm{Cov}) / k` with
        :math:`\operatorname{tr}(\mathrm{Cov}) = \sum_{j,m} E_{jm}^2\, 2 b_m^2`.
        """
        return float(self._trace() / self.k)

    def _trace(self) -> float:
        return float(np.sum(self.estimator**2 @ (2.0 * self.scales**2)))

    def range_mse(self) -> float:
        r"""Mean over all :math:`k(k+1)/2` ranges :math:`[a, b]` of :math:`\mathbb{E}(\tilde r - r)^2`, exact.

        Here :math:`\tilde r = \tilde c_b - \tilde c_{a-1}`.  With :math:`C` the covariance of
        :math:`(\tilde c_{-1} = 0, \tilde c_0, \dots, \tilde c_{k-1})`,
        :math:`\sum_{u<v} (C_{uu} + C_{vv} - 2 C_{uv}) = (k+1) \operatorname{tr}(C) - \sum C`, and
        :math:`\sum C = \sum_m 2 b_m^2 (\sum_j E_{jm})^2`, so no :math:`k \times k` matrix is formed.
        """
        total = (self.k + 1) * self._trace() - float(np.sum(self.estimator.sum(axis=0) ** 2 * 2.0 * self.scales**2))
        return float(total / (self.k * (self.k + 1) / 2))

    def range_variance(self, low: int, high: int) -> float:
        r""":math:`\mathbb{E}(\tilde r - r)^2` of one range [``low``, ``high``] (inclusive ranks), exact."""
        e = np.zeros(self.k)
        e[high] += 1
        if low > 0:
            e[low - 1] -= 1
        w = e @ self.estimator
        return float(np.sum(w**2 * 2.0 * self.scales**2))

    # -- privacy -------------------------------------------------------------
    def privacy_loss(self, policy: Policy) -> float:
        r"""The exact (unconstrained) Blowfish loss :math:`\max_{\text{edges } (x, y)} \sum_j |N_{jx} - N_{jy}| / b_j`.

        For independent Laplace noise the log-ratio of output densities between
        neighbours is at most this sum, with equality far out in the right orthant.
        """
        if not policy.unconstrained or policy.domain.size != self.k:
            raise PolicyError("The plan's loss is computed for an unconstrained policy on its own domain.")
        u, v = policy.graph.edge_arrays()
        if len(u) == 0:
            return 0.0
        w = self.node_matrix / self.scales[:, None]
        best = 0.0
        for s in range(0, len(u), 4096):
            d = np.abs(w[:, u[s:s + 4096]] - w[:, v[s:s + 4096]]).sum(axis=0)
            best = max(best, float(d.max()))
        return best

    # -- release -------------------------------------------------------------
    def noisy_cumulative(self, counts, noise) -> np.ndarray:
        counts = np.asarray(counts, dtype=float)
        nodes = self.node_matrix @ counts
        noisy = _laplace_per_node(noise, nodes, self.scales)
        return self.estimator @ noisy + counts.sum() * self.known_total

    def explain(self) -> str:
        d = ", ".join(f"{k}={v}" for k, v in self.details.items())
        return (f"{self.name} over {self.k} values, epsilon {self.epsilon:g}: {len(self.scales)} noisy nodes ({d}); "
                f"exact range-query MSE {self.range_mse():.6g}, cumulative MSE {self.cumulative_mse():.6g}")

    def to_dict(self) -> dict:
        return {"name": self.name, "k": self.k, "epsilon": self.epsilon, "n_nodes": int(len(self.scales)),
                "range_mse": self.range_mse(), "cumulative_mse": self.cumulative_mse(), **dict(self.details)}


def _laplace_per_node(noise, nodes, scales):
    out = np.empty_like(nodes)
    for s in np.unique(scales):
        m = scales == s
        out[m] = noise.laplace(nodes[m], float(s))
    return out


def _check_k(k):
    k = check_positive_int(k, "k", "cumulative plan")
    if k < 2:
        raise PolicyError("A cumulative histogram needs a domain of at least 2 values.")
    if k > MAX_PLAN_DOMAIN:
        raise PolicyError(f"The domain has {k} values; dense plans are built for at most {MAX_PLAN_DOMAIN}.")
    return k


def ordered_plan(k: int, *, epsilon: float, sensitivity: float = 1.0) -> CumulativePlan:
    r"""The ordered mechanism (section 7.1): :math:`c_0..c_{k-2} + \mathrm{Lap}(S/\epsilon)`, :math:`c_{k-1} = n`.

    Parameters
    ----------
    k : int
        Domain size.
    epsilon : float
    sensitivity : float
        :math:`S = S(c, P)` (1 on the line graph, :math:`\theta` under :math:`G^{d,\theta}`).

    Examples
    --------
    >>> p = ordered_plan(10, epsilon=1.0)
    >>> round(p.range_variance(3, 6), 12), round(p.range_variance(0, 6), 12)
    (4.0, 2.0)
    """
    k = _check_k(k)
    epsilon = check_positive_finite(epsilon, "epsilon", "ordered_plan")
    sensitivity = check_positive_finite(sensitivity, "sensitivity", "ordered_plan")
    n_mat = np.tril(np.ones((k - 1, k)))
    est = np.vstack([np.eye(k - 1), np.zeros((1, k - 1))])
    known = np.zeros(k)
    known[-1] = 1.0
    return CumulativePlan("ordered mechanism", k, n_mat, np.full(k - 1, sensitivity / epsilon), est, known, epsilon,
                          {"sensitivity": sensitivity})


def laplace_histogram_plan(k: int, *, epsilon: float) -> CumulativePlan:
    r"""A plain Laplace histogram (:math:`\mathrm{Lap}(2/\epsilon)` per cell, bounded DP).

    Cumulative counts by prefix sums.
    """
    k = _check_k(k)
    epsilon = check_positive_finite(epsilon, "epsilon", "laplace_histogram_plan")
    return CumulativePlan("Laplace histogram (DP)", k, np.eye(k), np.full(k, 2.0 / epsilon),
                          np.tril(np.ones((k, k))), np.zeros(k), epsilon, {"sensitivity": 2.0})


def _tree_levels(start: int, width: int, fanout: int, height: int):
    """Intervals (lo, hi) of the H nodes of one block, levels 1..height below the root."""
    out = []
    for level in range(1, height + 1):
        size = fanout ** (height - level)
        for lo in range(start, start + width, size):
            out.append((level, lo, min(lo + size, start + width)))
    return out


def _height(width: int, fanout: int) -> int:
    h = 0
    while fanout**h < width:
        h += 1
    return h


def _oh_structure(k: int, theta: int, fanout: int):
    """Node rows (N), groups ('S' or 'H'), estimator (E), known totals for the ordered hierarchical structure."""
    blocks = [(s, min(theta, k - s)) for s in range(0, k, theta)]
    height = _height(theta, fanout) if theta > 1 else 0
    rows: list[np.ndarray] = []
    groups: list[str] = []
    index: dict[tuple, int] = {}
    for i, (s, w) in enumerate(blocks[:-1]):  # S nodes: c(end of block i)
        r = np.zeros(k)
        r[: s + w] = 1
        index[("S", i)] = len(rows)
        rows.append(r)
        groups.append("S")
    for s, w in blocks:
        for _level, lo, hi in _tree_levels(s, w, fanout, height):
            if hi - lo == w:  # a node equal to the block's root is never needed
                continue
            r = np.zeros(k)
            r[lo:hi] = 1
            index[("H", lo, hi)] = len(rows)
            rows.append(r)
            groups.append("H")
    m = len(rows)
    est = np.zeros((k, m))
    known = np.zeros(k)
    for i, (s, w) in enumerate(blocks):
        for j in range(s, s + w):
            length = j - s + 1
            if length == w:
                if i == len(blocks) - 1:
                    known[j] = 1.0
                else:
                    est[j, index[("S", i)]] = 1.0
                continue
            if i > 0:
                est[j, index[("S", i - 1)]] = 1.0
            pos = s
            for level in range(1, height + 1):
                size = fanout ** (height - level)
                while pos + size <= s + length:
                    est[j, index[("H", pos, pos + size)]] += 1.0
                    pos += size
            assert pos == s + length
    n_mat = np.array(rows).reshape(m, k)
    return n_mat, np.array(groups), est, known, height, len(blocks)


def ordered_hierarchical_plan(k: int, theta: int, *, epsilon: float, fanout: int | None = None,
                              epsilon_s: float | None = None, objective: str = "range") -> CumulativePlan:
    r"""The ordered hierarchical mechanism for :math:`G^{d,\theta}` (section 7.2, Theorem 7.2).

    Parameters
    ----------
    k : int
        Domain size.
    theta : int
        Distance threshold :math:`\theta` (ranks); :math:`\theta \ge k` gives the hierarchical DP mechanism.
    epsilon : float
    fanout : int, optional
        Tree fan-out :math:`f \ge 2`; default: the :math:`f` in :math:`2, \dots, 16` with the smallest exact error.
    epsilon_s : float, optional
        Budget :math:`\epsilon_S` of the S nodes (:math:`0 < \epsilon_S < \epsilon`); default: the exact
        optimum :math:`\epsilon A^{1/3} / (A^{1/3} + B^{1/3})` of the error
        :math:`A/\epsilon_S^2 + B/\epsilon_H^2`.
    objective : {"range", "cumulative"}
        The error minimised when choosing :math:`f` and the split.

    Examples
    --------
    >>> p = ordered_hierarchical_plan(64, 8, epsilon=1.0, fanout=2)
    >>> p.details["blocks"], p.details["height"]
    (8, 3)
    """
    k = _check_k(k)
    if isinstance(theta, bool) or not isinstance(theta, (int, np.integer)) or theta < 1:
        raise PolicyError(f"The threshold theta must be an integer >= 1 (ranks); got {theta!r}.")
    theta = int(min(theta, k))
    epsilon = check_positive_finite(epsilon, "epsilon", "ordered_hierarchical_plan")
    if objective not in ("range", "cumulative"):
        raise PolicyError(f"objective must be 'range' or 'cumulative'; got {objective!r}.")
    if fanout is None:
        cands = range(2, max(3, min(16, theta) + 1)) if theta > 1 else [2]
        plans = [ordered_hierarchical_plan(k, theta, epsilon=epsilon, fanout=f, epsilon_s=epsilon_s,
                                           objective=objective) for f in cands]
        key = (lambda p: p.range_mse()) if objective == "range" else (lambda p: p.cumulative_mse())
        return min(plans, key=key)
    if isinstance(fanout, bool) or not isinstance(fanout, (int, np.integer)) or fanout < 2:
        raise PolicyError(f"The fan-out must be an integer >= 2; got {fanout!r}.")
    n_mat, groups, est, known, height, n_blocks = _oh_structure(k, theta, int(fanout))
    has_s, has_h = bool((groups == "S").any()), bool((groups == "H").any())

    def err(scales):
        plan = CumulativePlan("", k, n_mat, scales, est, known, 1.0)
        return plan.range_mse() if objective == "range" else plan.cumulative_mse()

    # error = A / eps_S^2 + B / eps_H^2 with unit-budget scales 1 (S) and 2h (H)
    unit_s = np.where(groups == "S", 1.0, 0.0)
    unit_h = np.where(groups == "H", 2.0 * height, 0.0)
    a = err(unit_s) if has_s else 0.0
    b = err(unit_h) if has_h else 0.0
    if epsilon_s is None:
        if has_s and has_h and a > 0 and b > 0:
            epsilon_s = epsilon * a ** (1 / 3) / (a ** (1 / 3) + b ** (1 / 3))
        else:
            epsilon_s = epsilon if has_s else 0.0
    else:
        epsilon_s = float(epsilon_s)
        if not (0 <= epsilon_s <= epsilon) or (has_s and epsilon_s == 0) or (has_h and epsilon_s == epsilon):
            raise PolicyError(f"epsilon_s must lie strictly between 0 and epsilon = {epsilon:g} here; got "
                              f"{epsilon_s!r}.")
    epsilon_h = epsilon - epsilon_s
    scales = np.where(groups == "S", 1.0 / epsilon_s if has_s else 0.0, 0.0) + \
        np.where(groups == "H", 2.0 * height / epsilon_h if has_h else 0.0, 0.0)
    name = "hierarchical mechanism (DP)" if n_blocks == 1 else (
        "ordered mechanism" if height == 0 else "ordered hierarchical mechanism")
    return CumulativePlan(name, k, n_mat, scales, est, known, epsilon,
                          {"theta": theta, "fanout": int(fanout), "height": height, "blocks": n_blocks,
                           "epsilon_s": epsilon_s, "epsilon_h": epsilon_h, "error_coefficients": (a, b)})


def hierarchical_plan(k: int, *, epsilon: float, fanout: int | None = None) -> CumulativePlan:
    r"""The hierarchical mechanism of differential privacy (Hay et al. 2010; section 7.2 with :math:`\theta = |T|`)."""
    return ordered_hierarchical_plan(k, _check_k(k), epsilon=epsilon, fanout=fanout)


def best_plan(k: int, theta: int, *, epsilon: float, objective: str = "range") -> CumulativePlan:
    r"""The smallest-error plan among three that are valid under every policy (Lemma 5.2).

    The candidates are the ordered hierarchical mechanism (Theorem 7.2), the ordered
    mechanism at :math:`S = \theta` and the hierarchical mechanism of DP.
    The choice depends only on :math:`(k, \theta, \epsilon)`, not on the data, so it costs no privacy.
    Our reconstruction of Theorem 7.2's structure is not always below the hierarchical
    mechanism (e.g. :math:`\theta` close to :math:`k`, see docs/blowfish.md); this restores the paper's claim.
    """
    cands = [ordered_hierarchical_plan(k, theta, epsilon=epsilon, objective=objective),
             ordered_plan(k, epsilon=epsilon, sensitivity=float(min(theta, k - 1))),
             hierarchical_plan(k, epsilon=epsilon)]
    key = (lambda p: p.range_mse()) if objective == "range" else (lambda p: p.cumulative_mse())
    return min(cands, key=key)


def range_query(cumulative, low: int, high: int) -> float:
    r""":math:`r[\text{low}, \text{high}] = c_{\text{high}} - c_{\text{low}-1}` (Definition 7.2).

    Inclusive ranks, :math:`c_{-1} = 0`.
    """
    c = np.asarray(cumulative, dtype=float)
    if not (0 <= low <= high < len(c)):
        raise PolicyError(f"The range [{low}, {high}] is not inside the domain 0..{len(c) - 1}.")
    return float(c[high] - (c[low - 1] if low > 0 else 0.0))


def ordered_range_error(*, epsilon: float, sensitivity: float = 1.0, low_known: bool = False,
                        high_known: bool = False) -> float:
    r"""Theorem 7.1: :math:`\mathbb{E}(\tilde r - r)^2 = 2 (S/\epsilon)^2` per noisy end.

    That is :math:`4/\epsilon^2` on the line graph for an interior range.
    """
    epsilon = check_positive_finite(epsilon, "epsilon", "ordered_range_error")
    ends = 2 - int(bool(low_known)) - int(bool(high_known))
    return ends * 2.0 * (sensitivity / epsilon) ** 2


@dataclass(frozen=True)
class HierarchicalOptions:
    r"""The plan of :func:`ordered_hierarchical_mechanism` (section 7.2).

    Attributes
    ----------
    fanout : int, optional
        Tree fan-out :math:`f \ge 2`; default: the :math:`f` in :math:`2, \dots, 16` with the smallest exact error.
    epsilon_s : float, optional
        Budget :math:`\epsilon_S` of the S nodes (:math:`0 < \epsilon_S < \epsilon`); default: the exact optimum
        of Theorem 7.2(2) (see :func:`ordered_hierarchical_plan`).
    best : bool
        Use :func:`best_plan` (``fanout`` and ``epsilon_s`` are then not used).
    """

    fanout: int | None = None
    epsilon_s: float | None = None
    best: bool = False


def _cumulative_release(plan: CumulativePlan, data, policy: Policy, epsilon: float, inference: bool,
                        release: ReleaseOptions, theorem: str) -> BlowfishRelease:
    """Release the cumulative histogram of ``data`` by ``plan``, checking its exact loss against ``epsilon``."""
    if policy.domain.kind != "ordered":
        raise PolicyError("Cumulative histograms need an ordered domain.")
    idx = policy.domain.indices(list(data))
    if idx.size == 0:
        raise PolicyError("The data set is empty.")
    loss = plan.privacy_loss(policy) if policy.domain.size <= 512 else None
    if loss is not None and loss > epsilon * (1 + 1e-9):
        raise PolicyError(f"The plan's exact Blowfish loss {loss:g} exceeds epsilon = {epsilon:g} under this policy.")
    noise = resolve_noise(release.random_state)
    planned = BlowfishRelease(None, plan.name, epsilon, float(plan.scales.max()),
                              float(cumulative_sensitivity(policy).value),
                              bool(noise.secure), noise.description, policy.key, False, None, theorem,
                              {"inference": inference, "range_mse_no_inference": plan.range_mse(),
                               **dict(plan.details)})
    accountant = release.accountant
    charged = None if accountant is None else accountant.charge(planned, label=release.label)  # before the noise
    raw = plan.noisy_cumulative(np.bincount(idx, minlength=policy.domain.size), noise)
    value = _isotonic(raw, float(idx.size)) if inference else np.asarray(raw, dtype=float)
    rel = dataclasses.replace(planned, value=value, details={**planned.details, "raw": raw})
    if accountant is not None:
        accountant.record(rel, label=release.label, charged=charged)
    return rel


def _isotonic(raw, n: float) -> np.ndarray:
    """Isotonic regression of the noisy cumulative counts, clipped to [0, n], the total n kept exact."""
    from scipy.optimize import isotonic_regression

    return np.append(np.clip(isotonic_regression(raw[:-1]).x, 0.0, n), n)


def ordered_mechanism(data, policy: Policy, *, epsilon: float, inference: bool = True, random_state=None,
                      accountant=None, label: str | None = None) -> BlowfishRelease:
    r"""Release the cumulative histogram of ``data`` by the ordered mechanism (section 7.1).

    Noise :math:`\mathrm{Lap}(S(c, P)/\epsilon)` on :math:`c_0, \dots, c_{k-2}` (:math:`S = 1` on the line graph),
    then, with ``inference``, isotonic regression (scipy) and clipping to :math:`[0, n]`.
    Range queries: :func:`range_query` on ``release.value``.

    Parameters
    ----------
    data : sequence of domain values
    policy : Policy
        An unconstrained policy on an ordered domain.
    epsilon : float
    inference : bool
        Post-process by constrained inference (Hay et al. 2010).
    random_state, accountant, label
        As in :func:`puffgm.blowfish.mechanisms.laplace_mechanism`.

    Examples
    --------
    >>> from puffgm.blowfish import Domain, Policy, line_graph
    >>> p = Policy(line_graph(Domain.ordered(5)))
    >>> r = ordered_mechanism([0, 1, 1, 3, 4, 4], p, epsilon=1.0, random_state=0)
    >>> bool(np.all(np.diff(r.value) >= 0)), float(r.value[-1])
    (True, 6.0)
    """
    epsilon = check_positive_finite(epsilon, "epsilon", "ordered_mechanism")
    sens = cumulative_sensitivity(policy).value
    if sens == 0:
        raise PolicyError("The secret graph has no edge between different ranks; release the counts exactly.")
    plan = ordered_plan(policy.domain.size, epsilon=epsilon, sensitivity=sens)
    return _cumulative_release(plan, data, policy, epsilon, inference, ReleaseOptions(random_state, accountant, label),
                               THEOREM_7_1)


def ordered_hierarchical_mechanism(data, policy: Policy, *, epsilon: float, options: HierarchicalOptions | None = None,
                                   inference: bool = False, random_state=None, accountant=None,
                                   label: str | None = None) -> BlowfishRelease:
    r"""Release the cumulative histogram by the ordered hierarchical mechanism (section 7.2).

    The policy's graph must be a distance-threshold (or line) graph on an ordered
    domain; :math:`\theta` is taken from it.

    Parameters
    ----------
    data : sequence of domain values
    policy : Policy
    epsilon : float
    options : HierarchicalOptions, optional
        Fan-out, budget split, or :func:`best_plan` (default: the plan of
        :func:`ordered_hierarchical_plan` with its optimal fan-out and split).
    inference : bool
        Apply isotonic regression to the estimates (post-processing).
    random_state, accountant, label
        As in :func:`puffgm.blowfish.mechanisms.laplace_mechanism`.
    """
    epsilon = check_positive_finite(epsilon, "epsilon", "ordered_hierarchical_mechanism")
    options = HierarchicalOptions() if options is None else options
    g = policy.graph
    if g.kind not in ("distance", "line") or policy.domain.kind != "ordered":
        raise PolicyError("The ordered hierarchical mechanism needs a distance-threshold graph on an ordered domain.")
    theta = int(math.floor(g.params["theta"]))
    if options.best:
        plan = best_plan(policy.domain.size, theta, epsilon=epsilon)
    else:
        plan = ordered_hierarchical_plan(policy.domain.size, theta, epsilon=epsilon, fanout=options.fanout,
                                         epsilon_s=options.epsilon_s)
    return _cumulative_release(plan, data, policy, epsilon, inference, ReleaseOptions(random_state, accountant, label),
                               THEOREM_7_2)
