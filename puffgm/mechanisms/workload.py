r"""A table of statistics released together: the exact joint loss of product-Laplace noise, and its least scale.

For a workload :math:`F = (F_1, \dots, F_k)` of sum queries (:mod:`puffgm.core.workload`) and a
prior class :math:`\Theta`, let :math:`\mu_{i,a,\theta}` be the joint law of :math:`(F_1, \dots, F_k)` given
:math:`X_i = a` under :math:`\theta`.  The release :math:`Y = F + Z` adds independent Laplace noise
:math:`Z_j \sim \mathrm{Lap}(t\, w_j)` to coordinate :math:`j` (weights :math:`w_j`, default 1).  Its output
density given :math:`X_i = a` is the mixture

$$
f_a(y) = \sum_g \mu_a(g) \prod_j \frac{e^{-|y_j - g_j| / b_j}}{2 b_j}, \qquad b_j = t\, w_j,
$$

and its Pufferfish loss is the sup over :math:`\theta`, :math:`i`, pairs :math:`(a, b)` and :math:`y \in \mathbb{R}^k`
of :math:`|\log f_a(y) / f_b(y)|`.

**Vertex theorem.**  The supremum over y is a maximum over the vertices of the grid
formed by the atoms' coordinates (every grid value :math:`0, \dots, n_j` of each axis).  Proof: on a
cell of that grid (a product of intervals between consecutive grid values, the outer
intervals unbounded), the sign of :math:`y_j - g_j` is fixed for every atom, so
:math:`\exp(-|y_j - g_j| / b_j) = c_{j,g}\, u_j^{\pm 1}` with :math:`u_j = \exp(y_j / b_j)`.  Multiplying
:math:`f_a` and :math:`f_b` by :math:`\prod_j u_j` turns both into multilinear polynomials with non-negative
coefficients in :math:`v_j = u_j^2 = \exp(2 y_j / b_j)`.  With the other coordinates fixed, the
ratio of two such polynomials is a Moebius function :math:`(p + q v_j) / (r + s v_j)` of :math:`v_j`,
monotone on the interval; so its supremum over the closed cell is attained at an end
of each interval in turn: at a vertex of the cell.  An unbounded end (:math:`y_j \to \pm\infty`) is
no new vertex here: every atom lies in :math:`0, \dots, n_j`, so beyond :math:`n_j` (or below 0) each term's
factor along axis :math:`j` is the same :math:`\exp(-(y_j - n_j)/b_j)` (or :math:`\exp(y_j/b_j)`) times a
constant, which cancels in the ratio: the ratio is constant out there and equals its
value at the end vertex.

**Computation.**  :math:`f_a` at every vertex is the product-Laplace smoothing of :math:`\mu_a`, one axis
at a time, each a pair of one-sided log-space recursions
(:func:`puffgm.mechanisms.query.laplace_log_density`): sums of non-negative terms only,
so every tail keeps its relative precision; no FFT, no truncation.

**Least scale.**  :math:`\mathrm{Lap}(t_2 w_j)` is :math:`\mathrm{Lap}(t_1 w_j)` convolved with a probability law
for :math:`t_2 > t_1` (see :mod:`puffgm.mechanisms.query`), so the release at :math:`t_2` is a post-processing
of the release at :math:`t_1` and the loss is non-increasing in :math:`t`: bisection finds the least :math:`t`
whose loss is at most :math:`\epsilon`, for every prior of the class at once (the max over priors
of each prior's own threshold).

This joint analysis of all the outputs together is the alternative to composing separate
releases that Bai, He, Gu, Kifer and Maeng ("Composition for Pufferfish Privacy",
introduction and section 2) describe: the table is one query-specific release, held
alone by the accountant.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from puffgm.core.accuracy import laplace_rows
from puffgm.core.kernels import laplace_smooth
from puffgm.core.laws import QueryLaws, stack_laws
from puffgm.core.noise import check_resolves, resolve_noise
from puffgm.core.records import RecordLayout
from puffgm.core.release import CalibratedRelease, jsonable, make_release, wrong_calibration
from puffgm.core.witness import Witness
from puffgm.core.workload import BoundWorkload
from puffgm.exceptions import NumericalError, ParameterError, TimeLimitError
from puffgm.mechanisms.query import (
    RESOLUTION_FACTOR,
    ExactLoss,
    LeastScale,
    answer_in_range,
    least_passing,
)

__all__ = ["WorkloadLaws", "JointLaws", "joint_loss_of", "optimal_workload_scale", "optimal_weights",
           "WorkloadCalibration", "WorkloadRelease", "release_workload", "THEOREM_WORKLOAD"]

THEOREM_WORKLOAD = ("exact joint Pufferfish loss of independent Laplace noise on each statistic, from the exact joint "
                    "laws of the workload (vertex theorem, puffgm.mechanisms.workload), minimised over the scale")


@dataclass(frozen=True)
class JointLaws:
    r"""The exact joint laws of a workload's grid sums :math:`(G_1, \dots, G_k)` given each secret, for every prior.

    Computed on the grid of partial sums, one axis per statistic (:meth:`PriorKind.workload_laws
    <puffgm.core.prior.PriorKind.workload_laws>`).

    Attributes
    ----------
    workload : BoundWorkload
    laws : tuple of NodeLaws
        One per (prior, protected node with a pair); ``log_cond`` has shape ``(states,) + workload.dims``.
    n_priors : int
    prior_name, secrets : str
    notes : tuple of str
    seconds : float
    """

    workload: BoundWorkload
    laws: tuple
    n_priors: int
    prior_name: str = ""
    secrets: str = ""
    notes: tuple = ()
    seconds: float = 0.0

    def stacked(self):
        """(rows, pairs, labels) as :meth:`QueryLaws.stacked <puffgm.core.laws.QueryLaws.stacked>`,
        each row of shape ``workload.dims``; read-only, built once."""
        return self._stack

    @functools.cached_property
    def _stack(self):
        return stack_laws(self.laws, self.workload.dims)


@dataclass(frozen=True)
class WorkloadLaws:
    r"""The exact joint laws of a workload given each secret, for every prior of a class.

    From one of two exact roads, which give the same laws: the grid of partial sums (``joint``,
    what :func:`puffgm.calibrate_workload` uses), or the laws of the encoded sum (``encoded``,
    :meth:`BoundWorkload.encoded <puffgm.core.workload.BoundWorkload.encoded>`), one axis whose
    cells are mostly exact zeros.

    Attributes
    ----------
    workload : BoundWorkload
    encoded : QueryLaws or None
        The laws of the encoded sum, one row per secret value.
    group_l1 : float
        Group-DP sensitivity of the table in L1 (query units): the largest
        :math:`\sum_j \mathrm{range}_j(C) / u_j` (:math:`u_j` the query units) over the groups :math:`C` of
        correlated nodes.
    seconds : float
    joint : JointLaws or None
        The laws on the grid (given instead of ``encoded``).
    """

    workload: BoundWorkload
    encoded: QueryLaws | None = None
    group_l1: float = 0.0
    seconds: float = 0.0
    joint: JointLaws | None = None

    def __post_init__(self):
        if (self.encoded is None) == (self.joint is None):
            raise ParameterError("WorkloadLaws takes exactly one of encoded= and joint=.")

    @property
    def source(self):
        """The laws as computed (``joint`` or ``encoded``): their prior name, secrets and notes."""
        return self.joint if self.joint is not None else self.encoded

    @property
    def n_priors(self) -> int:
        """The number of priors in the class."""
        return self.source.n_priors

    def stacked(self):
        """(rows, pairs, labels): every joint law as an array of shape ``dims``, and the audited pairs.

        ``rows`` has shape (n_rows, n_1 + 1, ..., n_k + 1) in grid units of each query;
        ``pairs`` an int array (n_pairs, 2) of row indices; ``labels[p]`` is
        ``(prior, node, state_a, state_b)``.  Read-only, built once.
        """
        return self._stack

    @functools.cached_property
    def _stack(self):
        if self.joint is not None:
            return self.joint.stacked()
        encoded = self.encoded
        assert encoded is not None  # __post_init__: exactly one of the two
        rows, pairs, labels = encoded.stacked()
        joint = self.workload.decode(rows, encoded.query.offset)
        joint.setflags(write=False)
        return joint, pairs, labels


# ------------------------------------------------------------------ the joint loss


def smoothed(rows: np.ndarray, grid_scales: Sequence) -> np.ndarray:
    r""":math:`\log f(y)` at every grid vertex :math:`y`, for each joint law of ``rows``.

    The constant :math:`\prod_j 1/(2 b_j)` is left out.  One log-space Laplace smoothing per axis
    (:func:`puffgm.core.kernels.laplace_smooth`, the recursions of
    :func:`~puffgm.mechanisms.query.laplace_log_density` along that axis; compiled when numba is installed).
    """
    out = np.asarray(rows, dtype=float)
    for j, b in enumerate(grid_scales):
        out = laplace_smooth(out, j + 1, float(b))
    return out


def _pair_losses(rows, pairs, grid_scales):
    """(loss per pair, flat index of the maximising vertex) at the grid scales; all zero scales: no noise.

    Only the rows the pairs use are smoothed (each row on its own, so a pair's loss does not depend on
    which other pairs are evaluated with it).
    """
    used = np.unique(pairs)
    if len(used) < len(rows):
        rows, pairs = rows[used], np.searchsorted(used, pairs)
    if all(b > 0 for b in grid_scales):
        dens = smoothed(rows, grid_scales)
    elif not any(b > 0 for b in grid_scales):
        dens = rows
    else:
        raise ParameterError("Either every statistic gets noise or none does.")
    a = dens[pairs[:, 0]].reshape(len(pairs), -1)
    b = dens[pairs[:, 1]].reshape(len(pairs), -1)
    with np.errstate(invalid="ignore"):
        d = np.abs(a - b)
    both_zero = ~np.isfinite(a) & ~np.isfinite(b)
    d = np.where(both_zero, 0.0, np.where(np.isnan(d), np.inf, d))
    k = np.argmax(d, axis=1)
    return d[np.arange(len(k)), k], k


def joint_loss_of(laws: WorkloadLaws, grid_scales: Sequence):
    """Exact Pufferfish loss of the table with Laplace noise of ``grid_scales`` (grid units) per statistic.

    Returns
    -------
    ExactLoss
        (loss, witness, per_prior); ``witness`` is a :class:`~puffgm.core.witness.Witness` whose output is the
        maximising vertex (grid indices).
    """
    rows, pairs, labels = laws.stacked()
    if not len(pairs):
        return ExactLoss(0.0, None, (0.0,) * laws.n_priors)
    loss, where = _pair_losses(rows, pairs, grid_scales)
    per_prior = [0.0] * laws.n_priors
    for lab, v in zip(labels, loss, strict=True):
        per_prior[lab.prior] = max(per_prior[lab.prior], float(v))
    p = int(np.argmax(loss))
    vertex = tuple(int(i) for i in np.unravel_index(int(where[p]), rows.shape[1:]))
    return ExactLoss(float(loss[p]), replace(labels[p], output=vertex), tuple(per_prior))


def joint_loss_resolution(laws: WorkloadLaws, *, epsilon: float = 0.0) -> float:
    r"""An upper estimate of the rounding error of the computed joint loss near ``epsilon``.

    As :func:`puffgm.mechanisms.query.loss_resolution`, with the recursions of every axis:

    $$
    4 \left(\sum_j n_j\right) 2^{-52} \left(1 + \max |\log p| + \epsilon\right)
      + \max_{\text{rows}} \left|\log \textstyle\sum p\right|.
    $$
    """
    rows, _, _ = laws.stacked()
    finite = rows[np.isfinite(rows)]
    if not finite.size:
        return 0.0
    flat = rows.reshape(rows.shape[0], -1)
    mass = np.abs(np.logaddexp.reduce(flat, axis=1))
    steps = sum(rows.shape[1:])
    return float(4 * steps * 2.0**-52 * (1.0 + np.abs(finite).max() + epsilon) + mass.max())


def optimal_workload_scale(laws: WorkloadLaws, *, epsilon: float, weights: Sequence, start: float,
                           rtol: float = 1e-6, deadline: float | None = None):
    r"""Least :math:`t` whose table with :math:`\mathrm{Lap}(t w_j)` noise has exact loss :math:`\le \epsilon`.

    Statistic :math:`j` gets :math:`\mathrm{Lap}(t w_j)` (query units).  Bisection on :math:`t` to
    ``rtol`` relative (the loss is non-increasing in :math:`t`, module docstring); the returned :math:`t`
    has a computed loss at most :math:`\epsilon` minus the loss's rounding error
    (:func:`joint_loss_resolution`), and :math:`t (1 - \mathrm{rtol})` has a larger loss (or :math:`t` is
    0: the exact table is already :math:`\epsilon`-Pufferfish private).  The steps after a failing
    :math:`t` smooth only the laws of the pairs still over the target (:class:`_PrunedLoss`); the result
    is that of the search over every pair.

    Parameters
    ----------
    laws : WorkloadLaws
    epsilon : float
    weights : sequence of float
        :math:`w_j > 0` per statistic.
    start : float
        A first guess of :math:`t` (doubled until it passes).
    rtol : float
    deadline : float, optional
        ``time.monotonic()`` value after which a TimeLimitError is raised.

    Returns
    -------
    LeastScale
        (t as ``scale``, loss, witness, per_prior, evaluations).
    """
    units = [q.unit for q in laws.workload.queries]

    def scales(t):
        if deadline is not None and time.monotonic() > deadline:
            raise TimeLimitError("The time limit passed while searching the joint Laplace scale of the workload; "
                                 "use the Markov Quilt Mechanism (--method exact).")
        return [t * w * u for w, u in zip(weights, units, strict=True)]

    rows, pairs, _ = laws.stacked()
    scales(0.0)  # the deadline
    evals = 1
    if all(np.array_equal(rows[a], rows[b]) for a, b in pairs):  # no noise needed: the loss at t = 0 is 0
        best = joint_loss_of(laws, scales(0.0))
        return LeastScale(0.0, best.loss, best.witness, best.per_prior, evals)
    res = joint_loss_resolution(laws)
    if epsilon < RESOLUTION_FACTOR * res:
        raise NumericalError(f"epsilon = {epsilon:g} is below what the exact joint loss of this workload can resolve "
                             f"in double precision (epsilon must be at least {RESOLUTION_FACTOR * res:.1e}); MQM "
                             "(--method exact) takes any epsilon.")
    target = epsilon - joint_loss_resolution(laws, epsilon=epsilon)
    refusal = "No Laplace scale brings the workload's loss to epsilon."
    pruned = _PrunedLoss(laws, scales, target)
    hi, _, more = least_passing(pruned, threshold=target, start=start, rtol=rtol, refusal=refusal)
    best = pruned.every_pair(hi)
    if best.loss > target:  # a dropped pair over the target by rounding alone: search again with every pair
        hi, best, more = least_passing(lambda t: joint_loss_of(laws, scales(t)), threshold=target, start=start,
                                       rtol=rtol, refusal=refusal)
    return LeastScale(hi, best.loss, best.witness, best.per_prior, evals + more)


class _PrunedLoss:
    """The joint loss at t over the pairs still in play, for :func:`least_passing`'s search of the least t.

    Each pair's loss is itself non-increasing in t (the post-processing argument of the module
    docstring holds pair by pair), and after a failing t every later evaluation of the search is at a
    t at least as large.  So at a failing t the pairs at or below the target stay there for the rest
    of the search and are dropped, each with its loss then as a bound on its loss at every later t;
    a passing t drops nothing.  The search takes the same steps as with every pair (each step is
    decided by whether the largest loss is over the target, and a dropped pair no longer can be).
    :meth:`every_pair` then gives the result over every pair at the returned t.
    """

    #: A dropped pair whose bound is this close (relative) to the largest loss of its prior is evaluated
    #: again: far above the rounding of the computed losses, so a skipped pair cannot be the maximum.
    MARGIN = 1e-9

    def __init__(self, laws: WorkloadLaws, scales, target: float):
        self.rows, self.all_pairs, self.labels = laws.stacked()
        self.n_priors, self.scales, self.target = laws.n_priors, scales, target
        self.active = np.arange(len(self.all_pairs))
        self.bound = np.full(len(self.all_pairs), np.inf)

    def __call__(self, t: float):
        loss, _ = _pair_losses(self.rows, self.all_pairs[self.active], self.scales(t))
        worst = float(loss.max())
        if worst > self.target:
            drop = loss <= self.target
            self.bound[self.active[drop]] = loss[drop]
            self.active = self.active[~drop]
        return ExactLoss(worst, None, ())  # the search reads only the loss; every_pair gives the rest

    def every_pair(self, t: float):
        """The :class:`ExactLoss` at t as :func:`joint_loss_of` gives it over every pair.

        The pairs in play are evaluated, then each dropped pair whose bound may reach the largest loss
        of its prior (within :attr:`MARGIN`); a prior with no pair evaluated yet gets its pair of largest
        bound first.  The others are below that largest loss, so neither the loss, nor the witness
        (the first pair that attains it), nor the losses per prior depend on them.
        """
        scales = self.scales(t)
        n = len(self.all_pairs)
        loss, where = np.full(n, -np.inf), np.zeros(n, dtype=np.int64)
        prior = np.array([lab.prior for lab in self.labels], dtype=np.int64)
        todo = self.active
        while len(todo):
            loss[todo], where[todo] = _pair_losses(self.rows, self.all_pairs[todo], scales)
            top = np.full(self.n_priors, -np.inf)
            np.maximum.at(top, prior, loss)
            open_ = np.isneginf(loss) & (self.bound >= top[prior] - self.MARGIN * np.maximum(1.0, np.abs(top[prior])))
            first = [int(np.flatnonzero(open_ & (prior == p))[np.argmax(self.bound[open_ & (prior == p)])])
                     for p in range(self.n_priors) if np.isneginf(top[p]) and (open_ & (prior == p)).any()]
            todo = np.array(first, dtype=np.int64) if first else np.flatnonzero(open_ & np.isfinite(top[prior]))
        per_prior = [0.0] * self.n_priors
        for p, v in zip(prior, loss, strict=True):
            per_prior[p] = max(per_prior[p], float(v))
        k = int(np.argmax(loss))
        vertex = tuple(int(i) for i in np.unravel_index(int(where[k]), self.rows.shape[1:]))
        return ExactLoss(float(loss[k]), replace(self.labels[k], output=vertex), tuple(per_prior))


def optimal_weights(laws: WorkloadLaws, *, epsilon: float, start: Sequence, deadline: float | None = None,
                    sweeps: int = 2) -> list:
    r"""Weights :math:`w` (:math:`w_1 = 1`) that lower the summed expected absolute error :math:`t(w) \sum_j w_j`.

    A search, not a certificate: coordinate-wise bounded minimisation (``scipy.optimize.minimize_scalar``)
    of :math:`\log w_j` within a factor :math:`e^2` of the starting point, ``sweeps`` times, each evaluation
    the least :math:`t` of :func:`optimal_workload_scale` to :math:`10^{-4}` relative.  Whatever weights it
    returns, the release calibrated at them (to :math:`10^{-6}`) holds :math:`\epsilon` exactly; only their
    optimality is heuristic.

    Parameters
    ----------
    laws : WorkloadLaws
    epsilon : float
    start : sequence of float
        Starting weights (each statistic's own optimal scale is a good start).
    deadline : float, optional
    sweeps : int

    Returns
    -------
    list of float
        The weights :math:`w_1 = 1, w_2, \dots, w_k`.
    """
    from scipy.optimize import minimize_scalar

    w = [float(x) / float(start[0]) for x in start]

    def total(j: int, x: float) -> float:
        trial = list(w)
        trial[j] = math.exp(x)
        found = optimal_workload_scale(laws, epsilon=epsilon, weights=trial, start=1.0, rtol=1e-4, deadline=deadline)
        return found.scale * sum(trial)

    for _ in range(sweeps):
        for j in range(1, len(w)):
            x0 = math.log(w[j])
            res = minimize_scalar(lambda x, j=j: total(j, x), bounds=(x0 - 2.0, x0 + 2.0), method="bounded",
                                  options={"xatol": 1e-3})
            if total(j, float(res.x)) < total(j, x0):
                w[j] = math.exp(float(res.x))
    return w


# ------------------------------------------------------------------ results


@dataclass(frozen=True)
class WorkloadCalibration:
    r"""The noise of a table of statistics under a prior class, side by side with the alternatives.

    Every scale is a Laplace scale in its statistic's units, and its expected absolute error.

    Attributes
    ----------
    epsilon : float
    names : tuple of str
        The statistics, in workload order.
    weights : tuple of float
        :math:`w_j`: statistic :math:`j` gets :math:`\mathrm{Lap}(t w_j)`.
    t : float
        The least multiplier whose exact joint loss is at most :math:`\epsilon`.
    scales : tuple of float
        :math:`t w_j` per statistic: the release's Laplace scales.
    loss : float
        The exact joint Pufferfish loss at ``scales`` (:math:`\le \epsilon`).
    witness : Witness or None
        Where the loss is attained: prior, node, pair and output (a grid vertex, in query units).
    per_prior : tuple of float
        The loss per prior.
    single_scales : tuple of float or None
        Each statistic's own optimal Laplace scale, calibrated alone: for reference only, not a
        valid release of the table (together they are not :math:`\epsilon`-Pufferfish private).
    group_dp_scale : float
        Group DP for the table: its L1 sensitivity over a group of correlated nodes divided by :math:`\epsilon`, on
        every statistic.
    mqm_scale : float or None
        The Markov Quilt Mechanism for the table: :math:`\sigma_{\max}` times the workload's L1 Lipschitz
        constant, on every statistic (None, with a note, when MQM does not apply).
    workload : dict
        The workload as bound (:meth:`BoundWorkload.to_dict`).
    prior, secrets : str
    n_pairs : int
    evaluations : int
        Joint losses evaluated by the search.
    seconds : dict
    notes : tuple of str
    theorem : str
    bound : BoundWorkload or None
        The workload as bound to the class: :func:`puffgm.release` computes the true table with it
        from one database (not in :meth:`to_dict`; None for a calibration made by hand).
    layout : RecordLayout or None
        How one database of the class is given (:class:`puffgm.core.records.RecordLayout`).
    """

    epsilon: float
    names: tuple
    weights: tuple
    t: float
    scales: tuple
    loss: float
    witness: Witness | None
    per_prior: tuple
    single_scales: tuple | None
    group_dp_scale: float
    mqm_scale: float | None
    workload: dict = field(default_factory=dict)
    prior: str = ""
    secrets: str = ""
    n_pairs: int = 0
    evaluations: int = 0
    seconds: dict = field(default_factory=dict)
    notes: tuple = ()
    theorem: str = THEOREM_WORKLOAD
    bound: BoundWorkload | None = field(default=None, repr=False, compare=False)
    layout: RecordLayout | None = field(default=None, repr=False, compare=False)

    @property
    def k(self) -> int:
        """The number of statistics."""
        return len(self.names)

    @property
    def ranges(self) -> tuple:
        """(min_value, max_value) of each statistic."""
        return tuple((q["min_value"], q["max_value"]) for q in self.workload.get("queries", ()))

    def comparison(self) -> dict:
        """Expected absolute error per statistic and in total, for each way of releasing the table.

        ``single`` (each statistic's own optimal Laplace scale) is shown for reference and is
        not a valid release of the table.
        """
        rows = {"group_dp": (self.group_dp_scale,) * self.k,
                "mqm": None if self.mqm_scale is None else (self.mqm_scale,) * self.k,
                "single": self.single_scales, "joint": self.scales}
        return {name: None if v is None else {"per_statistic": list(v), "total": float(sum(v)),
                                               "valid_release": name != "single"}
                for name, v in rows.items()}

    def accuracy(self, alpha: float = 0.05) -> tuple:
        r"""Per statistic (workload order), its Laplace scale :math:`t w_j` and :math:`(1-\alpha)` half-width.

        See puffgm.core.accuracy.  Each half-width holds for its statistic alone; for all :math:`k` at
        once, a union bound gives confidence :math:`1 - \alpha` with ``accuracy(alpha / k)``.
        """
        return laplace_rows(self.names, self.scales, alpha)

    def to_dict(self) -> dict:
        """JSON-ready: ``scales`` (one per statistic, workload order), ``loss``, the comparison and the rest."""
        return jsonable({
            "method": "workload-optimal-laplace", "epsilon": self.epsilon, "names": list(self.names),
            "weights": list(self.weights), "t": self.t, "scales": list(self.scales), "loss": self.loss,
            "witness": self.witness, "per_prior": list(self.per_prior), "comparison": self.comparison(),
            "workload": self.workload, "prior": self.prior, "secrets": self.secrets, "n_pairs": self.n_pairs,
            "evaluations": self.evaluations, "seconds": self.seconds, "theorem": self.theorem,
            "notes": list(self.notes)})

    def explain(self) -> str:
        """The table's noise side by side (expected |error| per statistic and in total), then the guarantee."""
        names = [n[:12] for n in self.names]
        head = f"{'mechanism':<24}" + "".join(f"{n:>13}" for n in names) + f"{'total':>13}"
        lines = [f"{self.k} statistic(s) released together; prior {self.prior}; epsilon {self.epsilon:g}",
                 "expected |error| per statistic (Laplace: E|noise| = scale)", head]
        label = {"group_dp": "group DP", "mqm": "MQM (sigma_max x L1)",
                 "single": "each alone (not valid)", "joint": "joint optimal Laplace"}
        for key, row in self.comparison().items():
            cells = (["n/a"] * self.k + ["n/a"]) if row is None else (
                [f"{v:.6g}" for v in row["per_statistic"]] + [f"{row['total']:.6g}"])
            lines.append(f"{label[key]:<24}" + "".join(f"{c:>13}" for c in cells))
        lines.append(f"joint release: Laplace scales {', '.join(f'{s:.10g}' for s in self.scales)}, "
                     f"exact joint loss {self.loss:.10g} <= epsilon")
        if self.witness:
            lines.append(f"decided at {self.witness}")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


@dataclass(frozen=True)
class WorkloadRelease(CalibratedRelease):
    r"""A noisy table :math:`(F_1 + Z_1, \dots, F_k + Z_k)` calibrated jointly for this workload (fields of
    :class:`~puffgm.core.release.CalibratedRelease`; ``value`` a tuple in workload order).

    Like a query-specific release (composition :class:`~puffgm.core.composition.HeldAlone`), the
    accountant holds it alone: it was calibrated for this table by the exact joint laws, and no
    composition theorem covers it together with another release.  The record keeps the noisy values only.
    """

    @property
    def mechanism(self) -> str:
        """The mechanism's name."""
        return f"Laplace mechanism on a table of {self.calibration.k} statistics at the joint optimal scales"

    def as_dict(self) -> dict:
        """The noisy statistics by name."""
        return dict(zip(self.calibration.names, self.value or (), strict=True))

    def explain(self) -> str:
        r"""One line: mechanism, :math:`\epsilon`, scales, noise source."""
        return self._tagged(f"{self.mechanism}: epsilon {self.epsilon:g}, Laplace scales "
                            f"{', '.join(f'{x:.6g}' for x in self.calibration.scales)}; noise: {self.noise}")


def release_workload(answers, calibration: WorkloadCalibration, *, random_state=None,
                     accountant=None, label: str | None = None) -> WorkloadRelease:
    r"""Release ``F_j(D) + Lap(scale_j)`` for every statistic (OpenDP's secure sampler by default).

    :func:`puffgm.release` computes ``answers`` from the data and calls this.

    Parameters
    ----------
    answers : sequence of float or mapping name -> float
        The exact answers :math:`F_1(D), \dots, F_k(D)` in workload order (or by name).
    calibration : WorkloadCalibration
    random_state : int or numpy Generator, optional
        Seeded numpy noise, for tests only (not for production).
    accountant : PrivacyAccountant, optional
        Checked before any noise is drawn: it holds a workload release only alone.
    label : str, optional
        The release's name in the accountant's ledger.

    Returns
    -------
    WorkloadRelease
        The noisy table in workload order with its calibration and noise source.

    Raises
    ------
    ParameterError
        When the answers are not k finite numbers within their statistics' ranges, or a scale
        is not positive.
    """
    if not isinstance(calibration, WorkloadCalibration):
        raise ParameterError(wrong_calibration("release_workload", calibration,
                                               "a WorkloadCalibration (from puffgm.calibrate_workload)"))
    values = _answers(answers, calibration)
    if not all(math.isfinite(s) and s > 0 for s in calibration.scales):
        raise ParameterError("A workload release needs finite Laplace scales > 0; this calibration's are "
                             f"{list(calibration.scales)}, so nothing was released.")
    for v, s in zip(values, calibration.scales, strict=True):
        check_resolves(v, s)
    noise = resolve_noise(random_state)
    planned = WorkloadRelease(value=None, calibration=calibration, secure=noise.secure, noise=noise.description)

    def draw():
        return tuple(float(noise.laplace(v, s)) for v, s in zip(values, calibration.scales, strict=True))

    return make_release(planned, draw, accountant=accountant, label=label)


def _answers(answers, calibration: WorkloadCalibration) -> list:
    """The exact answers in workload order, each a finite number within its statistic's range."""
    if isinstance(answers, dict):
        missing = [n for n in calibration.names if n not in answers]
        if missing or len(answers) != calibration.k:
            raise ParameterError(f"The answers must name exactly the statistics {list(calibration.names)}.")
        answers = [answers[n] for n in calibration.names]
    try:
        seq = list(answers)
    except TypeError:
        raise ParameterError(f"A workload release needs {calibration.k} answers, one per statistic.") from None
    if len(seq) != calibration.k:
        raise ParameterError(f"A workload release needs {calibration.k} answers, one per statistic; got {len(seq)}.")
    queries = calibration.workload.get("queries", [{}] * calibration.k)
    return [answer_in_range(v, q) for v, q in zip(seq, queries, strict=True)]
