r"""Certified leakage for any number :math:`b - 1 \ge 2` of pinned high-influence coordinates, without a sign condition.

Split: secret coordinate :math:`i`, other high-influence coordinates :math:`H'` (truncated to their box :math:`T`
and integrated out), conditioning set :math:`C`.  As in :mod:`puffgm.gaussian.monotone`, given :math:`x_C` the law
of :math:`x_H` on :math:`R \times T` is an exponential family in :math:`\eta = S^{-1} \mu`,
:math:`\Lambda_{R, R'}(\eta) = \log N(R \times T) - \log N(R' \times T)` has gradient
:math:`E_R[x_H] - E_{R'}[x_H]`, it is non-decreasing in :math:`\eta_i` when :math:`R` lies above :math:`R'` (every
point of :math:`R` above every point of :math:`R'`), and :math:`\eta` ranges over the zonotope :math:`Z` (the image
of the box of :math:`x_C`).  When the conditional precision is not sign-balanced (Figure 2b's squared-exponential
kernel) the sign of :math:`\partial \Lambda / \partial \eta_k`, :math:`k \in H'`, is unknown, so the sup over
:math:`Z` is found by branch and bound over cells of :math:`\eta_{H'}`.

**Cells.**  Cells are boxes in rotated coordinates :math:`\xi = R\, (\eta_{H'} - c_{H'})` along the principal
axes of the projection of :math:`Z` (:math:`Z` is often nearly flat: a few wide directions, the others thin).  On
a cell :math:`c` with centre :math:`m` and half-widths :math:`w`, for every pair of regions with :math:`R` above
:math:`R'`,

$$
\begin{array}{l}
\sup_{\eta \in Z \cap c} \Lambda(\eta) \le \Lambda(U(c), m) + \sum_j s_j(c)\, w_j, \\
U(c) = \max \{ \eta_i : \eta \in Z, \eta_{H'} \in c \} \quad
  \text{(monotone in } \eta_i \text{, then Lipschitz in } \xi),
\end{array}
$$

and the same with the min of :math:`\eta_i` for :math:`R` below :math:`R'`.  :math:`U(c)` is bounded from above by
Lagrangian duality (:func:`puffgm.gaussian.zonotope.zonotope_max_dual`: any multipliers give a bound, so no
solver tolerance enters).  **The slopes** :math:`s_j(c)` bound
:math:`|\partial \Lambda / \partial \xi_j| = |\sum_k R_{jk} (E_R[x_k] - E_{R'}[x_k])|` over the cell through the
Gibbs conditionals: given every other coordinate of :math:`H` (each anywhere in its box) the law of :math:`x_k` on
:math:`R \times T` is :math:`N(m_k, 1 / P_{kk})` truncated to :math:`[lo_k, hi_k]` with
:math:`m_k = (\eta_k - \sum_{j \ne k} P_{kj} x_j) / P_{kk}`, :math:`P = S^{-1}`; the truncated-normal mean
:math:`\tau(m)` is increasing in :math:`m`, so :math:`E_R[x_k]` lies in :math:`[\tau(m_k^-), \tau(m_k^+)]` (the
ends of :math:`m_k` over the cell and the boxes) for every region, and
:math:`|E_R[x_k] - E_{R'}[x_k]| \le L_k(c) = \tau(m_k^+) - \tau(m_k^-) \le hi_k - lo_k`.  A coordinate pinned
at a face of its box over the whole cell has a tiny :math:`L_k`, so cells may be wide where :math:`\Lambda` is flat.
Cells that miss the projection of :math:`Z` are dropped only on a verified separating hyperplane (Farkas
certificate, :func:`zonotope_misses_box`).  The value at :math:`(U(c), m)` over the continuum of regions is the
decoupled region sweep of :func:`puffgm.gaussian.primitives.region_pair_bound` with :math:`b`-dimensional box
probabilities (:class:`puffgm.gaussian.boxprob.BoxProbability`), as in the monotone engine.

**The Bonferroni sandwich.**  Every box probability :math:`\log N(R \times T)` is first bracketed by conditioning
on :math:`x_i` and applying Bonferroni to the other coordinates of :math:`H`
(:class:`puffgm.gaussian.boxprob.RegionBonferroni`): one-dimensional integrals only, with gap
:math:`-\log(1 - \varepsilon(R))`, :math:`\varepsilon` the sum of the other coordinates' largest tail probabilities
given :math:`x_i \in R`.  Where that gap exceeds the box tolerance the sub-box bounds are computed too and the
bracket is the intersection of both.  In many dimensions the sub-box bounds keep a gap of the order of the
mean-field error, which sets a floor for the branch and bound, while :math:`\varepsilon` stays small wherever the
other coordinates' conditional means stay well inside their box.  In the vertex bound (below) the numerator uses
at each corner the smaller of the Bonferroni upper bound and the sub-boxes'; the denominator needs one affine
minorant per region for the whole face: the Bonferroni one (tangent of the convex log-partition function of
:math:`R \times \mathbb{R}^{b-1}` at the centre, plus :math:`\log(1 - \varepsilon)` with :math:`\varepsilon` over the
face's corners: the conditional means are affine in :math:`\eta`) or the sub-boxes', whichever is larger at the
centre.  Regions whose Bonferroni gap over the face exceeds ``lazy_gap`` get sub-boxes at the centre then as well
(the bound stays finite where the other coordinates are pushed against their box).  ``lazy_gap="auto"`` is the
median gap of the sub-box bounds of 9 regions at the zonotope's centre (at least the box tolerance): sub-boxes only
where they can beat the sandwich, and no mean-field pass on them.

**The vertex bound (second order).**  With
:math:`\tilde F_A(\eta) = \log \int_A \exp(\eta^\top x - x^\top P x / 2)\, dx`,
:math:`\Lambda = \tilde F_{R \times T} - \tilde F_{R' \times T}` is a difference of convex functions of :math:`\eta`.
The Gibbs lower bound of the denominator with the product densities fitted at the centre :math:`\eta_c` is
*affine* in :math:`\eta` and valid for every :math:`\eta` (:meth:`puffgm.gaussian.boxprob.SubBoxes.lower_at`,
Jensen over the sub-boxes), so :math:`\Lambda(\eta) \le \tilde F_{R \times T}(\eta) - l_{R'}(\eta)`, a convex
function.  The region continuum keeps this form: on the centre's final partitions of :math:`r` and :math:`r'`
(:func:`puffgm.gaussian.primitives.partition_max`), :math:`\sup_r F_r(\eta) \le` the max over cells of the end
values plus :math:`K h^2 / 8` for every :math:`\eta`, and the same with the affine minorants for :math:`r'`; a max
of convex functions plus a max of affine ones is convex in :math:`\eta`.  Its sup over the face
:math:`\eta_i = U(c)`, :math:`\eta_{H'} \in c` is therefore at a vertex of the face: the cell bound is the max over
the :math:`2^{|W|}` vertices (numerator: certified box upper bounds at each vertex on the centre's sub-boxes,
:meth:`~puffgm.gaussian.boxprob.SubBoxes.upper_at` and one mean-field sweep near the top regions; denominator:
the affine minorants) for the vertex axes :math:`W`, plus the Lipschitz slack of the other axes.  :math:`W` holds
the ``n_vertex_axes`` axes of largest Lipschitz slack (slope times half-width), and then, by decreasing slack and
up to ``max_vertex_axes`` in all, every further axis whose slack exceeds ``vertex_slack`` times the centre's
value :math:`|\Lambda(U(c), m)|`: each vertex axis doubles the vertices, and an axis left to the Lipschitz bound
adds its whole slack to the cell's bound.  Its excess over :math:`\Lambda` is the Bregman gap of the denominator,
about :math:`(\eta - \eta_c)^\top \mathrm{Cov}_{R'}(x)\, (\eta - \eta_c) / 2`: second order in the cell width,
against first order for the Lipschitz bound; the smaller of the two is used.

**The tilted face.**  The face :math:`\eta_i = U(c)` is flat, but :math:`Z` is nearly flat and tilted: over a wide
cell the max of :math:`\eta_i` over :math:`Z` changes a lot with :math:`\xi`, so most of the flat face lies far
above :math:`Z`, where :math:`\Lambda` is large.  For any slope :math:`\beta` (zero off the vertex axes :math:`W`),
:math:`\eta_i \le \alpha + \beta \cdot \xi` on :math:`Z \cap c` with :math:`\alpha` the Lagrangian-duality bound of
:math:`\max (\eta_i - \beta \cdot \xi)` over :math:`Z \cap c` (any :math:`\beta` is valid); :math:`\Lambda` is
non-decreasing in :math:`\eta_i`, so its sup over :math:`Z \cap c` is at most the sup of the convex bound over the
tilted face :math:`\{(\alpha + \beta \cdot \xi, \xi) : \xi \in c\}`, an affine image of the cell: again at a
vertex.  :math:`\beta` is the slope of the upper hull of :math:`Z` at the cell's centre (the duals of the
equality constraints of the linear program :math:`\max \eta_i` with :math:`\xi_W` fixed), so the tilted face
touches :math:`Z` near the cell and follows it; the smaller of the flat and the tilted bound is used.  A face is
evaluated only while it can change the cell's bound (the max over both orientations of min(Lipschitz, tilted,
flat)): the tilted face first, then the flat face from the tilted face's worst corner, each stopped at the first
corner that shows it cannot win, neither when the orientation's bound so far is not above the other
orientation's; the bound is the same to the bit.

**Cell tightening.**  :math:`Z` is thin: a box cell of the principal axes holds mostly points outside :math:`Z`,
where the vertices of the face lie and :math:`\Lambda` is large.  Before a cell is bounded it is replaced by the
bounding box of :math:`Z \cap c`, each side from the Lagrangian-duality bound of :math:`\max` (or :math:`\min`)
:math:`\xi_j` over :math:`Z \cap c` (:func:`~puffgm.gaussian.zonotope.zonotope_max_dual`, padded outward): the
sup over :math:`Z \cap c` is unchanged, the tightened box is what the branch and bound keeps and splits, and a
side that closes proves the cell empty.

**Symmetry.**  When every prior mean is the centre of its box, :math:`x \mapsto 2 c - x` maps the prior to itself,
:math:`\eta` to :math:`2\, \text{centre} - \eta` (:math:`\xi \mapsto -\xi`, :math:`u \mapsto -u`) and each pair of
regions to the reflected pair with the other orientation; every cell bounds both orientations, so the branch and
bound runs on half of the cell space (first axis :math:`\ge 0`).

**Checkpoints.**  With ``checkpoint_dir`` the leaves of the branch and bound (each cell with its certified
bound), the counters and the accumulated seconds are written to a JSON file in that directory (floats as
hexadecimal strings, exact) at least every ``checkpoint_seconds`` and when the engine stops; a later call
for the same problem resumes from them and continues exactly as an uninterrupted run would.  The file is
named by a SHA-256 fingerprint of the problem (the prior, the split, the marginal corrections on a grid of
regions, the cell space and the options that change the bounds; not the stopping rules ``tol``, ``atol``,
``max_cells`` and ``max_seconds``), so runs of other problems never mix; ``max_cells`` counts the cells of
every run.  The value stays certified because every stored leaf keeps a certified bound of its cell and
the leaves cover the cell space.

The branch and bound refines the cell with the largest bound (along the axis with the largest slope times
width) until the certified value is within ``tol`` of the largest cell value met, or until ``max_cells``;
the value returned is certified in every case (cells never refined keep their bound).  A half keeps the
smaller of its own bound and its parent's (it lies inside the parent), so the certified value never
increases with more cells (a half's own bound can be far above its parent's; the cells split are the same
either way: such a half is the largest leaf with or without the clip).  The stopping rule
compares with values at points :math:`(U(c), m)` that need not lie in :math:`Z`, so it can stop early: the value is then
looser, never invalid.  A certified lower bound of the exact leakage comes from
:func:`puffgm.gaussian.monotone.corner_lower_bound`.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import logging
import math
import os
import tempfile
import time
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from puffgm.core.validation import check_nonnegative_finite, check_nonnegative_int
from puffgm.exceptions import ParameterError
from puffgm.gaussian.boxprob import BoxProbability, RegionBonferroni, SubBoxes, log_trunc_normal, region_boxes
from puffgm.gaussian.monotone import corner_lower_bound
from puffgm.gaussian.primitives import RegionSweep, cell_bounds, log_interval_prob, partition_max, region_pair_bound
from puffgm.gaussian.zonotope import pinned_conditional, zonotope_max_dual

__all__ = ["CellOptions", "cell_leakage", "zonotope_misses_box"]

_log = logging.getLogger(__name__)
# evaluate a face only while it can change the cell's bound (module docstring, the tilted face); False
# evaluates every corner of both faces in both orientations (the tests compare the bits)
_PRUNE_FACES = True


def zonotope_misses_box(center, gens, cons, lo, hi):
    r"""True only when the box :math:`lo \le \eta_{cons} \le hi` provably misses :math:`Z = c + G [-1, 1]^m`.

    Here :math:`c` is ``center`` and :math:`G` is ``gens``.  A phase-one linear program (HiGHS) proposes
    multipliers :math:`\lambda`; the box is certified to miss :math:`Z` when
    (a separating hyperplane, checked in floating point with a relative margin)

    $$
    \max_{u \in [-1, 1]^m} \lambda \cdot G_{cons} u = \|\lambda G_{cons}\|_1
      < \min_{\eta \in \mathrm{box}} \lambda \cdot (\eta - c_{cons}).
    $$
    """
    from scipy.optimize import linprog

    Gc = gens[cons]
    lo_rel, hi_rel = np.asarray(lo, float) - center[cons], np.asarray(hi, float) - center[cons]
    k, m = Gc.shape
    # min s  s.t.  Gc u - s <= hi_rel,  -Gc u - s <= -lo_rel,  -1 <= u <= 1,  s >= 0
    c = np.zeros(m + 1)
    c[-1] = 1.0
    A = np.block([[Gc, -np.ones((k, 1))], [-Gc, -np.ones((k, 1))]])
    b = np.concatenate([hi_rel, -lo_rel])
    try:
        res = linprog(c, A_ub=A, b_ub=b, bounds=[(-1, 1)] * m + [(0, None)], method="highs")
    except ValueError:
        return False
    if res.status != 0 or res.fun <= 1e-12 * (1 + float(np.max(np.abs(b)))):
        return False
    mg = np.asarray(res.ineqlin.marginals, float)
    lam = mg[:k] - mg[k:]   # outward normal of the violated box faces (HiGHS marginals are <= 0)
    lhs = float(np.sum(np.abs(lam @ Gc)))
    rhs = float(np.sum(np.minimum(lam * lo_rel, lam * hi_rel)))
    scale = float(np.sum(np.abs(lam) * (np.abs(lo_rel) + np.abs(hi_rel) + np.sum(np.abs(Gc), axis=1))))
    return lhs < rhs - 1e-9 * scale


@dataclass(frozen=True)
class CellOptions:
    r"""Options of :func:`cell_leakage` (validated there).

    Attributes
    ----------
    tol, atol : float
        Relative and absolute gap of the branch and bound (the region sweeps run at ``min(tol, 1e-3)``).
    max_cells : int
        Budget of the branch and bound (cells evaluated; with a checkpoint, over every run).
    box_tol, box_rel : float
        The box probabilities are refined to a gap of
        :math:`\max(\mathrm{box\_tol}, \mathrm{box\_rel}\, |\mathrm{lower\ bound}|)`.
    max_boxes : int
        Sub-boxes per box probability.
    n_vertex_axes, max_vertex_axes : int
        The vertex bound treats the ``n_vertex_axes`` axes of largest Lipschitz slack by convexity, then,
        by decreasing slack and up to ``max_vertex_axes`` in all, every further axis whose slack exceeds
        ``vertex_slack`` times the centre's value (module docstring; ``max_vertex_axes <= n_vertex_axes``
        gives a fixed number of axes; a cell space with at most ``n_vertex_axes`` axes keeps them all).
    vertex_slack : float
        See ``n_vertex_axes``.
    n_regions : int
        Initial grid of the region sweeps.
    generator_cells : int
        Conditioning sets of at most this many coordinates use cells of the generator weights, larger ones
        cells of the natural parameters (module docstring).
    lower : bool
        Compute the certified corner lower bound (without it only the budget stops the refinement).
    symmetry, tighten : bool
        Use the point symmetry and the cell tightening (module docstring; both leave the value certified).
    max_seconds : float, optional
        Wall-time budget of the branch and bound (the value is certified whenever it stops: the largest
        bound of the current leaves).
    target : float, optional
        Stop as soon as the certified value is at or below ``target`` (a caller who needs a bound below a
        given number, e.g. the value of a smaller split).
    checkpoint_dir : str or path, optional
        Keep the branch and bound's leaves on disk in this directory (created if missing) every
        ``checkpoint_seconds`` and at the stop, and resume from them (module docstring, checkpoints).
    checkpoint_seconds : float
        See ``checkpoint_dir``.
    bonferroni : bool
        Bracket each box probability by the Bonferroni sandwich as well (module docstring; ``False``: the
        sub-box bounds alone).
    lazy_gap : "auto", None or float
        In the vertex bound, regions whose sandwich gap at a corner (numerator) or over the face
        (denominator) exceeds ``lazy_gap`` get sub-boxes at the centre as well: a number, None (the box
        tolerance) or "auto" (the median gap of the sub-box bounds of 9 regions at the zonotope's centre,
        at least the box tolerance: sub-boxes only where they are expected to beat the sandwich).
    """

    tol: float = 0.02
    atol: float = 1e-3
    max_cells: int = 200
    box_tol: float = 1e-2
    box_rel: float = 3e-3
    max_boxes: int = 2000
    n_vertex_axes: int = 3
    max_vertex_axes: int = 6
    vertex_slack: float = 0.01
    n_regions: int = 32
    generator_cells: int = 4
    lower: bool = True
    symmetry: bool = True
    tighten: bool = True
    max_seconds: float | None = None
    target: float | None = None
    checkpoint_dir: object = None
    checkpoint_seconds: float = 60.0
    bonferroni: bool = True
    lazy_gap: object = "auto"


class _Leaf(NamedTuple):
    """A leaf of the best-first heap: minus its bound (the heap's key), its counter (the tie-break) and the box."""

    neg_bound: float
    id: int
    a: np.ndarray
    b: np.ndarray


@dataclass(frozen=True)
class _CellValue:
    """A cell's certified bound and the value met in it; ``a``, ``b``: the tightened cell, when it was tightened."""

    bound: float
    met: float
    a: np.ndarray | None = None
    b: np.ndarray | None = None


@dataclass(frozen=True)
class _Stopping:
    """The stopping rules of :func:`_best_first`: the certified lower bound ``low`` and the gap
    max(atol, tol |low|), the cell budget, the target and the ``time.monotonic()`` deadline."""

    low: float
    tol: float
    atol: float
    max_cells: int
    target: float | None = None
    deadline: float | None = None


def cell_leakage(model, i, high, cond, corr_num, corr_den, options: CellOptions = CellOptions()):
    r"""Certified upper bound of the leakage of region secrets on :math:`x_i` through ``x_cond``.

    The high-influence set is :math:`H = \{i\} \cup` ``high``.  Any :math:`b = 1 + |\mathrm{high}| \ge 2` and
    any conditional precision (see the module docstring).

    Parameters
    ----------
    model : GaussianRegionModel
        The truncated prior and the region width.
    i : int
        The secret coordinate.
    high : sequence of int
        The other high-influence coordinates (truncated, integrated out).
    cond : sequence of int
        The conditioning set C.
    corr_num, corr_den : callable
        The marginal corrections of :meth:`~puffgm.gaussian.leakage.GaussianRegionModel.leakage`.
    options : CellOptions
        Gap, budgets and the switches of the bounds (:class:`CellOptions`).

    Returns
    -------
    tuple
        (value, details): ``details["lower"]`` a certified lower bound of the exact leakage (corner
        search; absent with ``lower=False``), ``details["cells"]`` the cells evaluated,
        ``details["estimate"]`` the largest cell value met, ``details["stopped"]`` the rule that stopped
        the branch and bound ("converged", "cells", "seconds", "target" or "infinite"), and with a
        checkpoint ``details["checkpoint"]`` (the file) and ``details["seconds"]`` (the wall time of
        every run).  Progress (cells, certified value) is logged at DEBUG level on this module's logger.
    """
    opts = _checked_options(options)
    deadline = None if opts.max_seconds is None else time.monotonic() + float(opts.max_seconds)
    H = [int(i)] + [int(k) for k in high]
    C = [int(c) for c in cond]
    block = pinned_conditional(model, H, C) if C else None
    if block is None or len(H) < 2:
        return math.inf, {"reason": "x_H is (numerically) determined by x_cond, or there is nothing to condition on"}
    S, P, center, gens = block
    P = (P + P.T) / 2
    try:
        box = BoxProbability(P, tol=opts.box_tol, max_boxes=opts.max_boxes)
    except np.linalg.LinAlgError:
        return math.inf, {"reason": "x_H is (numerically) degenerate given x_cond"}
    lo_H, hi_H = model.lower[H].astype(float), model.upper[H].astype(float)
    bonf = RegionBonferroni(S, lo_H, hi_H, model.delta) if opts.bonferroni else None
    opts = _checked_lazy_gap(opts)
    engine = _CellEngine(model, (H, C), (S, P, center, gens), box, bonf, (corr_num, corr_den), opts)
    engine.prepare()
    return engine.run(deadline)


def _checked_options(options):
    """The options with ``n_vertex_axes``, ``max_vertex_axes``, ``vertex_slack`` and ``target`` checked."""
    if not isinstance(options, CellOptions):
        raise ParameterError(f"The 'options' parameter of cell_leakage must be a CellOptions. "
                             f"Got {type(options).__name__} instead.")
    n_vertex_axes = check_nonnegative_int(options.n_vertex_axes, "n_vertex_axes", "cell_leakage")
    max_vertex_axes = check_nonnegative_int(options.max_vertex_axes, "max_vertex_axes", "cell_leakage")
    vertex_slack = check_nonnegative_finite(options.vertex_slack, "vertex_slack", "cell_leakage")
    target = options.target
    if target is not None:
        target = check_nonnegative_finite(target, "target", "cell_leakage")
    return replace(options, n_vertex_axes=n_vertex_axes, max_vertex_axes=max_vertex_axes, vertex_slack=vertex_slack,
                   target=target)


def _checked_lazy_gap(options):
    """The options with ``lazy_gap`` checked ("auto", None or a number >= 0, as a float)."""
    lazy_gap = options.lazy_gap
    if lazy_gap is not None and not (isinstance(lazy_gap, str) and lazy_gap == "auto"):
        ok = isinstance(lazy_gap, (int, float, np.integer, np.floating)) and not isinstance(lazy_gap, bool)
        if not (ok and float(lazy_gap) >= 0):
            raise ParameterError(f"The 'lazy_gap' parameter must be 'auto', None or a number >= 0. Got {lazy_gap!r} "
                                 "instead.")
        return replace(options, lazy_gap=float(lazy_gap))
    return options


class _CellEngine:
    """The state of one :func:`cell_leakage` call: the conditional law of x_H, its zonotope in rotated
    coordinates, the box probabilities and the steps of the bound (module docstring)."""

    def __init__(self, model, split, block, box, bonf, corr, opts):
        H, C = split
        S, P, center, gens = block
        self.model, self.H, self.C, self.opts = model, H, C, opts
        self.S, self.P, self.center, self.gens = S, P, center, gens
        self.box, self.bonf = box, bonf
        self.corr_num, self.corr_den = corr
        self.d = d = len(H) - 1
        self.lo_H, self.hi_H = lo_H, hi_H = model.lower[H].astype(float), model.upper[H].astype(float)
        self.wid = hi_H[1:] - lo_H[1:]
        self.Pk = np.diag(P)[1:]
        off = P[1:].copy()
        off[np.arange(d), np.arange(1, d + 1)] = 0.0
        # sum_{j != k} P_kj x_j over the boxes of H: [smin_k, smax_k]
        self.smin = np.sum(np.minimum(off * lo_H[None, :], off * hi_H[None, :]), axis=1)
        self.smax = np.sum(np.maximum(off * lo_H[None, :], off * hi_H[None, :]), axis=1)
        # rotated coordinates xi = Rot (eta_H' - c_H'): eta_H' = c_H' + Rot' xi
        Uv, _, _ = np.linalg.svd(gens[1:], full_matrices=True)
        self.Rot = Rot = Uv.T
        self.cen2 = np.concatenate([[center[0]], np.zeros(d)])
        self.gens2 = np.vstack([gens[:1], Rot @ gens[1:]])
        self.cH = center[1:]
        self.absRT = np.abs(Rot.T)
        self.reach = np.sum(np.abs(self.gens2), axis=1)
        self.pad = 1e-9 * (1.0 + float(np.max(np.abs(center))) + float(np.max(self.reach)))
        self.cons = list(range(1, d + 1))
        # eta_i is close to a linear function of xi on Z (least squares over the generators): its spread over a
        # cell times |d Lambda / d eta_i| <= hi_i - lo_i also guides the splitting (heuristic only)
        self.alpha = np.abs(np.linalg.lstsq(self.gens2[1:].T, self.gens2[0], rcond=None)[0]) * float(hi_H[0] - lo_H[0])
        self.delta = model.delta
        i = H[0]
        self.lo_i, self.hi_i = float(model.lower[i]), float(model.upper[i])
        self.m0, self.s0 = float(model.mean[i]), math.sqrt(model.cov[i, i])
        self.K1, self.K2 = float(P[0, 0]), 1.0 / model.cov[i, i]
        self.sweep = RegionSweep(self.lo_i, self.hi_i, self.delta, min(opts.tol, 1e-3), opts.atol, iters=40,
                                 n_init=opts.n_regions, return_edges=True)
        self.stats = {"cells": 0, "dropped_empty": 0, "vertex_wins": 0, "tilted_wins": 0}
        self.low, self.lazy_ref = -math.inf, opts.lazy_gap

    # ------------------------------------------------------------ slopes
    def lipschitz(self, e_lo, e_hi):
        """L_k >= |E_R[x_k] - E_R'[x_k]| for eta_H' in [e_lo, e_hi] (Gibbs conditionals)."""
        lo_H, hi_H, wid = self.lo_H, self.hi_H, self.wid
        _, t_lo = log_trunc_normal(lo_H[1:], hi_H[1:], e_lo - self.smax, self.Pk)
        _, t_hi = log_trunc_normal(lo_H[1:], hi_H[1:], e_hi - self.smin, self.Pk)
        L = np.minimum(t_hi - t_lo + 1e-9 * wid, wid)
        return np.where(np.isfinite(L), np.maximum(L, 0.0), wid)

    def slopes(self, a, b):
        """Per rotated axis j, a bound of |d Lambda / d xi_j| = |sum_k Rot_jk dLambda/deta_k| on the cell."""
        e_mid = self.cH + self.Rot.T @ ((a + b) / 2)
        e_half = self.absRT @ ((b - a) / 2) + self.pad
        return self.absRT.T @ self.lipschitz(e_mid - e_half, e_mid + e_half)

    def vertex_axes(self, sl, bv):
        """The vertex axes of a cell with Lipschitz slacks sl and centre value bv (module docstring)."""
        opts = self.opts
        return _vertex_axes(sl, opts.n_vertex_axes, opts.max_vertex_axes, opts.vertex_slack * abs(bv))

    # ------------------------------------------------------------ the region sweep at a centre
    def centre_sweep(self, eta_c):
        """The decoupled region sweep at eta_c, keeping the sub-boxes of every box evaluated: returns
        (bound, value met, (numerator edges, denominator edges), record of the union of the edges, union).
        The record is (SubBoxes of the edges that have sub-boxes, their row in it per edge (-1: none),
        eta_c); with ``bonferroni`` a box gets sub-boxes only where the Bonferroni sandwich
        (:class:`~puffgm.gaussian.boxprob.RegionBonferroni`) is looser than the box tolerance, and its
        bounds are the intersection of both."""
        S, box, bonf, delta = self.S, self.box, self.bonf, self.delta
        lo_H, hi_H = self.lo_H, self.hi_H
        mu_c = S @ eta_c
        recs = []

        def log_box(r):
            r = np.asarray(r, float)
            if bonf is not None:
                lt, ut = bonf.bounds(r, mu_c)
                need = ~(ut - lt <= box.tol)
            else:
                lt, ut = np.full(len(r), -np.inf), np.full(len(r), np.inf)
                need = np.ones(len(r), bool)
            if np.any(need):
                lb, ub, _, sub = box.bounds_many(mu_c, *region_boxes(lo_H, hi_H, r[need], delta), keep=True)
                lt[need], ut[need] = np.maximum(lt[need], lb), np.minimum(ut[need], ub)
                recs.append((r[need], sub))
            return lt, ut

        bv, ev, edges = region_pair_bound(self.sweep, log_box, self.m0, self.s0, self.K1, self.K2, self.corr_num,
                                          self.corr_den)
        rall = np.unique(np.concatenate(edges))
        parts, found = [], np.zeros(len(rall), bool)
        for r, sub in recs:
            pos = np.searchsorted(rall, r)
            ok = (pos < len(rall)) & (rall[np.minimum(pos, len(rall) - 1)] == r)
            rows = np.flatnonzero(ok & ~found[np.minimum(pos, len(rall) - 1)])
            rows = rows[np.unique(pos[rows], return_index=True)[1]]
            if len(rows):
                found[pos[rows]] = True
                parts.append((pos[rows], sub.select(rows)))
        if bonf is None and not np.all(found):
            return bv, ev, edges, None, rall
        idx = np.full(len(rall), -1)
        sub = None
        if parts:
            where = np.concatenate([p for p, _ in parts])
            order = np.argsort(where)
            sub = SubBoxes.concat([s_ for _, s_ in parts]).select(order)
            idx[where[order]] = np.arange(len(where))
        return bv, ev, edges, {"sub": sub, "idx": idx, "eta_c": np.asarray(eta_c, float), "mu_c": mu_c,
                               "lazy": np.zeros(len(rall), bool)}, rall

    def ensure_sub(self, rec, rall, pos):
        """Give the edges rall[pos] sub-boxes at the centre's mean too (computed once per cell, kept in rec)."""
        pos = np.unique(pos[rec["idx"][pos] < 0])
        if not len(pos):
            return
        _, _, _, new = self.box.bounds_many(rec["mu_c"], *region_boxes(self.lo_H, self.hi_H, rall[pos], self.delta),
                                            keep=True)
        n_old = 0 if rec["sub"] is None else rec["sub"].nprob
        rec["sub"] = new if rec["sub"] is None else SubBoxes.concat([rec["sub"], new])
        rec["idx"][pos] = n_old + np.arange(len(pos))
        rec["lazy"][pos] = True

    # ------------------------------------------------------------ the vertex bound
    def vertex_bound(self, sweep, corners, finish=lambda v: v, cutoff=math.inf):
        """(max over the given eta (corners of a face) of the bound Psi(eta), index of the corner attaining
        it): the numerator's certified sweep on the centre's partition (box upper bounds on the centre's
        sub-boxes at each eta, or the Bonferroni upper bound where smaller) plus the denominator's sweep with
        affine minorants fixed for the whole face (the sub-boxes' or the Bonferroni one with eps over the
        face's corners, whichever is larger at the centre; module docstring, the vertex bound).  ``sweep``
        is (edges, record, union of the edges) of :meth:`centre_sweep`.  Stops at the first corner with
        ``finish(max)`` >= ``cutoff`` (``finish``, non-decreasing, is what the caller adds to the max: the
        caller then knows the face cannot beat ``cutoff``, and the max returned is only a lower bound)."""
        edges, rec, rall = sweep
        e1, e2 = edges
        p1, p2 = np.searchsorted(rall, e1), np.searchsorted(rall, e2)
        mus = [self.S @ eta for eta in corners]
        face = self._face_data(rec, rall, (e1, e2, p1, p2), mus)
        out, arg = -math.inf, 0
        for c_idx, eta in enumerate(corners):
            f1 = self._numerator(face, c_idx, mus[c_idx])
            f2 = self._denominator(face, eta, mus[c_idx])
            v = (partition_max(e1, f1, self.K1, self.corr_num, self.delta)
                 + partition_max(e2, f2, self.K2, self.corr_den, self.delta))
            if v > out:
                out, arg = v, c_idx
            if not math.isfinite(out) or finish(out) >= cutoff:
                break
        return out, arg

    def _face_data(self, rec, rall, grid, mus):
        """What the corners of one face share: the regions (e1, e2) and their rows in the union ``rall``
        (p1, p2), the Bonferroni upper bounds of the numerator at the corners' means ``mus``, the sub-boxes
        (added at the centre's mean where the Bonferroni bounds are looser than the lazy gap at some corner
        (numerator) or over the face (denominator)) and the denominator's affine minorants per region."""
        e1, e2, p1, p2 = grid
        bonf, box, delta = self.bonf, self.box, self.delta
        face = {"e1": e1, "e2": e2, "p1": p1, "rec": rec, "up1": None, "bdata": None}
        if bonf is not None:
            eps2 = bonf.eps(e2, np.array(mus))
            up1 = [bonf.bounds(e1, mu) for mu in mus]
            gap1 = np.max([u - lw for lw, u in up1], axis=0)
            with np.errstate(divide="ignore", invalid="ignore"):
                gap2 = -np.log1p(-eps2)
            lim = box.tol if self.opts.lazy_gap is None else max(box.tol, self.lazy_ref)
            self.ensure_sub(rec, rall, np.concatenate([p1[~(gap1 <= lim)], p2[~(gap2 <= lim)]]))
            face["up1"] = up1
        sub, idx, eta_c = rec["sub"], rec["idx"], rec["eta_c"]
        i1, i2 = idx[p1], idx[p2]
        h1, h2 = np.flatnonzero(i1 >= 0), np.flatnonzero(i2 >= 0)
        face.update(sub=sub, i1=i1, h1=h1, h2=h2)
        face["sub1"] = sub.select(i1[h1]) if len(h1) else None
        face["sub2"] = sub.select(i2[h2]) if len(h2) else None
        face["n1"] = log_interval_prob(e1, e1 + delta, self.m0, self.s0)
        face["n2"] = log_interval_prob(e2, e2 + delta, self.m0, self.s0)
        # the denominator's affine minorant per region, the same at every corner of the face
        use_sub = np.zeros(len(e2), bool)
        if bonf is not None:
            bdata = bonf.minorant(e2, eta_c, eps2)
            if len(h2):
                use_sub[h2] = face["sub2"].lower0 >= bdata.const[h2] + bdata.grad[h2] @ eta_c
            face["bdata"] = bdata
        else:
            use_sub[:] = True
        face["use_sub"] = use_sub
        return face

    def _numerator(self, face, c_idx, mu):
        """The numerator's values at the regions e1 for the corner ``c_idx`` (mean mu): the fixed-parameter
        upper bound everywhere, re-optimised (one mean-field sweep) on the regions near the top (any valid
        upper bound may be used on any region)."""
        e1, n1, i1, h1 = face["e1"], face["n1"], face["i1"], face["h1"]
        f1 = np.full(len(e1), np.inf)
        if self.bonf is not None:
            _, upper = face["up1"][c_idx]
            f1 = upper.copy()
        if len(h1):
            f1[h1] = np.minimum(f1[h1], face["sub1"].upper_at(mu))
        f1 = f1 - n1
        done = np.zeros(len(f1), bool)
        done[i1 < 0] = True
        if self.opts.lazy_gap is not None:
            # no mean-field pass on the sub-boxes added for the vertex bound (their gaps are large where
            # they are needed: the sandwich failed there, and the pass would dominate the cell's time)
            done[face["rec"]["lazy"][face["p1"]]] = True
        for _ in range(40):
            cellv = cell_bounds(e1[:-1], e1[1:], f1[:-1], f1[1:], self.K1, self.corr_num, self.delta)
            mx = float(np.max(cellv))
            if not math.isfinite(mx):
                break
            near = np.flatnonzero(cellv >= mx - max(1.0, 0.02 * abs(mx)))
            top = np.unique(np.concatenate([near, near + 1]))
            top = top[~done[top]]
            if not len(top):
                break
            _, upper = self.box.bounds_fixed(mu, face["sub"].select(i1[top]), sweeps=1)
            f1[top] = np.minimum(f1[top], upper - n1[top])
            done[top] = True
        return f1

    def _denominator(self, face, eta, mu):
        """The denominator's values at the regions e2 for the corner eta (mean mu), from the affine
        minorants of the face."""
        e2, use_sub = face["e2"], face["use_sub"]
        low2 = np.full(len(e2), -np.inf)
        if self.bonf is not None:
            low2 = self.bonf.minorant_at(face["bdata"], eta)
        if np.any(use_sub):
            low2[use_sub] = face["sub2"].lower_at(mu)[use_sub[face["h2"]]]
        return face["n2"] - low2

    # ------------------------------------------------------------ one cell of the natural parameters
    def cell(self, a, b):
        """(certified bound over Z n cell, value met at the evaluation points) for both orientations."""
        ctr = (a + b) / 2
        sl = self.slopes(a, b) * (b - a) / 2
        lip_slack = float(np.sum(sl)) + self.pad
        out, est = -math.inf, -math.inf
        for sign in (1, -1):
            bound, ev = self._orientation(sign, (a, b, ctr), sl, lip_slack, out)
            out, est = max(out, bound), max(est, ev)
        return out, est

    def _orientation(self, sign, box, sl, lip_slack, out):
        """(bound, value met) of one orientation of a cell: min(Lipschitz, tilted face, flat face).

        The cell's bound is the max over both orientations, so each face is evaluated only while it can
        still change that (same bits as evaluating all): none when the bound so far is not above the other
        orientation's ``out``; the tilted face first (it usually wins), then the flat face, its corners from
        the tilted face's argmax on; each stopped at the first corner that shows it cannot beat the bound
        so far."""
        a, b, ctr = box
        pad, cons, stats = self.pad, self.cons, self.stats
        cen2, gens2, cH, Rot = self.cen2, self.gens2, self.cH, self.Rot
        lo_c, hi_c = (a, b) if sign > 0 else (-b, -a)
        U, _ = zonotope_max_dual(sign * cen2, sign * gens2, 0, cons, lo_c - pad, hi_c + pad)
        ei = sign * (U + pad)
        eta_c = np.concatenate([[ei], cH + Rot.T @ ctr])
        bv, ev, edges, sub, rall = self.centre_sweep(eta_c)
        bound = bv + lip_slack
        # the vertex bound treats the axes W of largest slack by convexity, the rest by Lipschitz
        W = self.vertex_axes(sl, bv)
        rest_slack = float(np.sum(np.delete(sl, W))) + pad
        if not (W and math.isfinite(bv) and sub is not None and (bound > out or not _PRUNE_FACES)):
            return bound, ev
        sweep = (edges, sub, rall)
        verts = _face_vertices(ctr, a, b, W)
        first, tilted_won = 0, False

        def finish(v):
            return v + rest_slack

        # the tilted face: eta_i <= alpha + beta . xi on Z n cell (beta on the axes W only), so the
        # convex bound's sup over Z n cell is at the vertices of the tilted face (module docstring)
        tilt = _tilted_face(sign * cen2, sign * gens2, cons, lo_c, hi_c, W, pad)
        if tilt is not None:
            alpha, beta = tilt
            corners = [np.concatenate([[sign * (alpha + beta @ (sign * xi) + pad)], cH + Rot.T @ xi])
                       for xi in verts]
            tb, first = self.vertex_bound(sweep, corners, finish, bound if _PRUNE_FACES else math.inf)
            tb = finish(tb)
            if tb < bound:
                bound, tilted_won = tb, True
                stats["tilted_wins"] += 1
        if bound > out or not _PRUNE_FACES:
            order = [first] + [k for k in range(len(verts)) if k != first]
            corners = [np.concatenate([[ei], cH + Rot.T @ verts[k]]) for k in order]
            vb, _ = self.vertex_bound(sweep, corners, finish, bound if _PRUNE_FACES else math.inf)
            vb = finish(vb)
            if vb < bound:
                if tilted_won:
                    stats["tilted_wins"] -= 1
                bound = vb
                stats["vertex_wins"] += 1
        return bound, ev

    def evaluate(self, a, b):
        """:meth:`cell` on the tightened cell, or None for a cell that provably misses Z."""
        cen2, gens2, cons, pad = self.cen2, self.gens2, self.cons, self.pad
        if zonotope_misses_box(cen2, gens2, cons, a - pad, b + pad):
            self.stats["dropped_empty"] += 1
            return None
        if self.opts.tighten:
            a, b = _tighten(cen2, gens2, cons, a, b, pad)
            if a is None:
                self.stats["dropped_empty"] += 1
                return None
        bound, met = self.cell(a, b)
        return _CellValue(bound, met, a, b)

    # ------------------------------------------------------------ one cell of the generator weights
    def generator_slopes(self, a, b):
        """Slopes |d Lambda / d u_j| <= sum_k |gens_kj| L_k with L_k the Gibbs-conditional bounds for k in H'
        and L_i = hi_i - lo_i, on the cell [a, b] of generator weights."""
        absG = np.abs(self.gens)
        e_mid = self.center + self.gens @ ((a + b) / 2)
        e_half = absG @ ((b - a) / 2) + self.pad
        L = np.concatenate([[self.hi_H[0] - self.lo_H[0]],
                            self.lipschitz(e_mid[1:] - e_half[1:], e_mid[1:] + e_half[1:])])
        return absG.T @ L

    def generator_cell(self, a, b):
        """(certified bound, value met) on a cell of generator weights: every cell lies in Z, no U(c) is
        needed and the vertex bound covers both orientations at once (Psi bounds every pair of regions)."""
        center, gens, pad = self.center, self.gens, self.pad
        ctr = (a + b) / 2
        sl = self.generator_slopes(a, b) * (b - a) / 2
        bv, ev, edges, sub, rall = self.centre_sweep(center + gens @ ctr)
        bound = bv + float(np.sum(sl)) + pad
        W = self.vertex_axes(sl, bv)
        if math.isfinite(bv) and sub is not None:
            corners = [center + gens @ u for u in _face_vertices(ctr, a, b, W)]
            rest = float(np.sum(np.delete(sl, W)))

            def finish(v):
                return v + rest + pad

            vb, _ = self.vertex_bound((edges, sub, rall), corners, finish, bound if _PRUNE_FACES else math.inf)
            vb = finish(vb)
            if vb < bound:
                bound = vb
                self.stats["vertex_wins"] += 1
        return _CellValue(bound, ev)

    # ------------------------------------------------------------ the run
    def prepare(self):
        """The certified corner lower bound (the stopping rule needs values attained in Z: cell values at
        (U(c), m) are not, as (U(c), m) need not lie in Z), the box tolerance it allows (gap <= box_rel
        |value|) and the reference gap of ``lazy_gap="auto"`` (the median gap the sub-boxes reach at the
        zonotope's centre over 9 regions)."""
        opts, box, H = self.opts, self.box, self.H
        if opts.lower:
            self.low, _, _ = corner_lower_bound(self.model, H[0], H[1:], self.C, self.corr_num, box=box)
        if math.isfinite(self.low):
            box.tol = max(box.tol, opts.box_rel * abs(self.low))
        if self.bonf is not None and opts.lazy_gap == "auto":
            r9 = np.linspace(self.lo_i, self.hi_i - self.delta, 9)
            lt9, ut9, _ = box.bounds_many(self.S @ self.center, *region_boxes(self.lo_H, self.hi_H, r9, self.delta))
            self.lazy_ref = float(np.median(ut9 - lt9))

    def run(self, deadline):
        """Branch and bound in the chosen cell space; returns (certified value, details)."""
        opts, model = self.opts, self.model
        n_gen = self.gens.shape[1]
        space = "generators" if n_gen <= opts.generator_cells else "natural parameters"
        ckpt = self._checkpoint(space, n_gen if space == "generators" else self.d)
        # point symmetry: when every coordinate's prior mean is the centre of its box, x -> 2 c - x maps the
        # prior to itself, eta to 2 centre - eta (xi -> -xi, u -> -u) and each pair of regions to the
        # reflected pair with the other orientation; every cell bounds both orientations, so half of the
        # cell space (first axis >= 0) covers all of it
        sym = bool(opts.symmetry) and bool(np.all(model.mean == (model.lower + model.upper) / 2))
        stop = _Stopping(self.low, opts.tol, opts.atol, opts.max_cells, opts.target, deadline)
        if space == "generators":
            m = n_gen
            stats = {"cells": 0, "vertex_wins": 0}
            self.stats = stats
            a0 = -np.ones(m)
            if sym:
                a0[0] = 0.0  # point symmetry: u -> -u
            cert, best = _best_first((a0, np.ones(m)), self.generator_cell,
                                     lambda a, b: self.generator_slopes(a, b) * (b - a), stop, stats, ckpt)
            details = {"estimate": best, **stats, "cell_space": space, "symmetric": sym}
        else:
            a0, b0 = -self.reach[1:] - self.pad, self.reach[1:] + self.pad
            if sym:
                a0[0] = 0.0
            cert, best = _best_first((a0, b0), self.evaluate, lambda a, b: (self.slopes(a, b) + self.alpha) * (b - a),
                                     stop, self.stats, ckpt)
            details = {"estimate": best, **self.stats, "cell_space": space, "symmetric": sym}
        if opts.lower:
            details["lower"] = self.low
        return cert, details

    def _checkpoint(self, space, n_axes):
        """The :class:`_Checkpoint` of this problem, or None without ``checkpoint_dir``."""
        opts, model, delta = self.opts, self.model, self.delta
        if opts.checkpoint_dir is None:
            return None
        r_grid = np.linspace(self.lo_i, self.hi_i - delta, 65)
        return _Checkpoint(opts.checkpoint_dir, opts.checkpoint_seconds, {
            "engine": "cell_leakage", "format": _CHECKPOINT_FORMAT, "cell_space": space,
            "mean": model.mean, "cov": model.cov, "lower": model.lower, "upper": model.upper, "delta": delta,
            "i": self.H[0], "high": self.H[1:], "cond": self.C,
            "corr": [np.asarray(f(r_grid, r_grid + delta), float) for f in (self.corr_num, self.corr_den)],
            "center": self.center, "gens": self.gens, "rotation": self.Rot,
            "options": [opts.box_tol, opts.box_rel, opts.max_boxes, opts.n_vertex_axes, opts.n_regions,
                        bool(opts.lower), bool(opts.symmetry), bool(opts.tighten)]
            # the adaptive vertex axes change the bounds only when they may add an axis
            + ([opts.max_vertex_axes, opts.vertex_slack]
               if min(opts.max_vertex_axes, n_axes) > opts.n_vertex_axes else [])
            # the Bonferroni sandwich changes the bounds
            + (["bonferroni"] + ([] if opts.lazy_gap is None else [opts.lazy_gap]) if opts.bonferroni else [])})


def _vertex_axes(slack, n_min, n_max, threshold):
    """The axes the vertex bound treats by convexity: the ``n_min`` axes of largest Lipschitz ``slack`` (those
    with a positive slack), then, by decreasing slack and up to ``n_max`` axes in all, each further axis whose
    slack exceeds ``threshold`` (each one doubles the vertices; one left to the Lipschitz bound adds its
    slack to the cell's bound)."""
    order = np.argsort(-slack)
    W = [j for j in order[:n_min] if slack[j] > 0]
    for j in order[n_min:max(n_min, n_max)]:
        if not slack[j] > max(threshold, 0.0):
            break
        W.append(j)
    return W


def _tighten(center, gens, cons, lo, hi, pad):
    """The bounding box of Z n {lo <= xi <= hi} (xi = eta_cons, Z = center + gens [-1, 1]^m), outward: each side
    is the Lagrangian-duality bound of max (min) xi_j over Z and the box
    (:func:`~puffgm.gaussian.zonotope.zonotope_max_dual`, certified for any multipliers) plus ``pad``,
    clipped to [lo, hi].  Returns (lo', hi'), or (None, None) when a side closes (Z misses the box)."""
    new_lo, new_hi = np.array(lo, float), np.array(hi, float)
    box_lo, box_hi = np.asarray(lo, float) - pad, np.asarray(hi, float) + pad
    for j, k in enumerate(cons):
        up, _ = zonotope_max_dual(center, gens, k, cons, box_lo, box_hi)
        dn, _ = zonotope_max_dual(-center, -gens, k, cons, -box_hi, -box_lo)
        new_hi[j] = min(new_hi[j], up + pad)
        new_lo[j] = max(new_lo[j], -dn - pad)
        if new_lo[j] > new_hi[j]:
            return None, None
    return new_lo, new_hi


def _tilted_face(center, gens, cons, lo, hi, W, pad):
    """(alpha, beta) with eta_0 <= alpha + beta . xi for every eta = (eta_0, xi) of Z = center + gens [-1, 1]^m
    with lo <= xi <= hi (xi = eta_cons), beta zero off the axes W; None when no slope is found.

    Any beta is valid: alpha is the Lagrangian-duality bound of max (eta_0 - beta . xi) over Z and the
    cell (:func:`~puffgm.gaussian.zonotope.zonotope_max_dual`).  beta is the slope of the upper hull
    of Z over the cell's centre on the axes W (the duals of the equality constraints of max eta_0 with
    xi_W fixed there, HiGHS), or, when the centre is outside the projection of Z, at the point of the
    flat face's maximiser; the plane then touches Z near the cell and follows it across."""
    from scipy.optimize import linprog

    W = list(W)
    G0, Gc = gens[0], gens[cons]
    cc = center[cons]
    rest = [j for j in range(len(cons)) if j not in W]
    bounds = [(-1.0, 1.0)] * gens.shape[1]

    def slope_at(t_W):
        kw = {}
        if rest:
            Gr = Gc[rest]
            kw = {"A_ub": np.vstack([Gr, -Gr]),
                  "b_ub": np.concatenate([hi[rest] - cc[rest] + pad, -(lo[rest] - cc[rest]) + pad])}
        try:
            res = linprog(-G0, A_eq=Gc[W], b_eq=t_W - cc[W], bounds=bounds, method="highs", **kw)
        except ValueError:
            return None
        if res.status != 0:
            return None
        return -np.asarray(res.eqlin.marginals, float)

    ctr = (lo + hi) / 2
    bW = slope_at(ctr[W])
    if bW is None:
        _, u = zonotope_max_dual(center, gens, 0, cons, lo - pad, hi + pad)
        if u is None:
            return None
        xi_star = np.clip(cc + Gc @ u, lo, hi)
        bW = slope_at(xi_star[W])
        if bW is None:
            return None
    if not np.all(np.isfinite(bW)):
        return None
    beta = np.zeros(len(cons))
    beta[W] = bW
    g2 = gens.copy()
    g2[0] = G0 - beta @ Gc
    c2 = center.copy()
    c2[0] = center[0] - float(beta @ cc)
    alpha, _ = zonotope_max_dual(c2, g2, 0, cons, lo - pad, hi + pad)
    if not math.isfinite(alpha):
        return None
    return float(alpha), beta


def _face_vertices(ctr, a, b, W):
    """The 2^|W| points equal to ctr except on the axes W, where they take either end of [a, b]."""
    out = []
    for bits in np.ndindex(*([2] * len(W))):
        x = ctr.copy()
        x[W] = np.where(np.array(bits) == 1, b[W], a[W])
        out.append(x)
    return out


def _best_first(box0, evaluate, score, stop: _Stopping, stats, checkpoint=None):
    """Best-first branch and bound over boxes [a, b], starting from ``box0`` = (a0, b0).

    ``evaluate(a, b)`` -> (certified bound, value met) or None for a cell known to be empty, or
    (bound, value met, a', b') with [a', b'] a smaller box holding every point of the cell that matters
    (kept and split in place of [a, b]); the cell with the largest bound is halved along the axis of largest
    ``score(a, b)`` (each half keeps the smaller of its own bound and its parent's: it lies inside the
    parent, so the certified value never increases) until a rule of ``stop`` holds: the bound is within
    max(atol, tol |low|) of the certified lower bound ``low``, at most ``target``, ``max_cells`` cells were
    evaluated or the ``time.monotonic()`` clock passed ``deadline``.  Returns (certified value = the
    largest bound of the leaves, the largest value met); counts cells in ``stats["cells"]`` and records the
    rule that stopped it in ``stats["stopped"]``.  A :class:`_Checkpoint` resumes from its leaves and keeps
    them on disk."""
    a0, b0 = box0
    low, tol, atol, max_cells, target, deadline = (stop.low, stop.tol, stop.atol, stop.max_cells, stop.target,
                                                   stop.deadline)
    heap: list = []
    best, counter = -math.inf, 0
    t_start, seconds_before = time.monotonic(), 0.0

    def push(a, b, parent=math.inf):
        nonlocal best, counter
        res = evaluate(a, b)
        if res is None:
            return
        if res.a is not None:   # the cell was tightened: keep (and later split) the smaller box
            a, b = res.a, res.b
        stats["cells"] += 1
        best = max(best, res.met)
        counter += 1
        bound = res.bound
        if bound > parent:
            # the cell lies inside its parent, whose bound holds for it too
            bound = parent
            stats["clipped"] = stats.get("clipped", 0) + 1
        heapq.heappush(heap, _Leaf(-bound, counter, a, b))

    state = checkpoint.load() if checkpoint is not None else None
    if state is None:
        push(a0, b0)
    else:
        heap, counter, best, seconds_before = state["heap"], state["counter"], state["best"], state["seconds"]
        heapq.heapify(heap)
        stats.update(state["stats"])
        _log.debug("resumed from %s: %d cells, %d leaves", checkpoint.path, stats["cells"], len(heap))

    def save():
        stats["seconds"] = seconds_before + time.monotonic() - t_start
        if checkpoint is not None:
            checkpoint.save(heap, counter, best, stats)
            stats["checkpoint"] = checkpoint.path

    stats["stopped"] = None   # in the checkpoints written on the way: still running (or interrupted)
    while heap:
        cert = -heap[0].neg_bound
        _log.debug("cells %d: certified %.10g, met %.10g", stats["cells"], cert, best)
        if not math.isfinite(cert):
            stats["stopped"] = "infinite"
            break
        if math.isfinite(low) and cert - low <= max(atol, tol * abs(low)):
            break
        if stats["cells"] + 2 > max_cells:
            stats["stopped"] = "cells"
            break
        if target is not None and cert <= target:
            stats["stopped"] = "target"
            break
        if deadline is not None and time.monotonic() > deadline:
            stats["stopped"] = "seconds"
            break
        neg, _, a, b = heapq.heappop(heap)
        k = int(np.argmax(score(a, b)))
        mid = (a[k] + b[k]) / 2
        b1, a2 = b.copy(), a.copy()
        b1[k], a2[k] = mid, mid
        push(a, b1, -neg)
        push(a2, b, -neg)
        if checkpoint is not None and checkpoint.due():
            save()
    if stats["stopped"] is None:
        stats["stopped"] = "converged"
    save()
    return (-heap[0].neg_bound if heap else -math.inf), best


_CHECKPOINT_FORMAT = 1


def _fingerprint(problem):
    """SHA-256 of a problem description (arrays by their float64 bytes, the rest by its JSON form)."""
    h = hashlib.sha256()
    for key in sorted(problem):
        vals = problem[key] if isinstance(problem[key], list) else [problem[key]]
        h.update(f"{key}\0{len(vals)}\0".encode())
        for v in vals:
            if isinstance(v, np.ndarray):
                h.update(f"array{v.shape}\0".encode())
                h.update(np.ascontiguousarray(v, np.float64).tobytes())
            else:
                h.update(json.dumps(float.hex(float(v)) if isinstance(v, float) else v).encode())
            h.update(b"\0")
    return h.hexdigest()


class _Checkpoint:
    """The leaves of one branch and bound on disk: ``<dir>/cell_engine_<fingerprint>.json`` (module docstring,
    checkpoints).  Floats are stored as :meth:`float.hex` strings (exact, and infinities survive); writes
    go to a temporary file that replaces the old one, so an interrupted write leaves the previous state."""

    def __init__(self, directory, every, problem):
        if not isinstance(directory, (str, os.PathLike)):
            raise ParameterError(f"The 'checkpoint_dir' parameter must be a path. Got {directory!r} instead.")
        self.fingerprint = _fingerprint(problem)
        self.directory = os.fspath(directory)
        self.path = os.path.join(self.directory, f"cell_engine_{self.fingerprint[:32]}.json")
        self.every = check_nonnegative_finite(every, "checkpoint_seconds", "cell_leakage")
        self.split = {"i": problem["i"], "high": list(problem["high"]), "cond": list(problem["cond"])}
        self._last = time.monotonic()

    def due(self):
        return time.monotonic() - self._last >= self.every

    def load(self):
        """The stored state (heap of (-bound, counter, a, b), counter, best, stats, seconds), or None."""
        if not os.path.exists(self.path):
            return None
        try:
            with open(self.path) as fh:
                rec = json.load(fh)
            if rec.get("fingerprint") != self.fingerprint or rec.get("format") != _CHECKPOINT_FORMAT:
                raise ValueError("fingerprint")
            heap = [_Leaf(-float.fromhex(e["bound"]), int(e["id"]), np.array([float.fromhex(x) for x in e["lo"]]),
                          np.array([float.fromhex(x) for x in e["hi"]])) for e in rec["leaves"]]
            stats = {k: int(v) for k, v in rec["stats"].items()}
            return {"heap": heap, "counter": int(rec["counter"]), "best": float.fromhex(rec["estimate"]),
                    "seconds": float(rec["seconds"]), "stats": stats}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ParameterError(f"The file {self.path} is not a cell-engine checkpoint of this problem "
                                 f"({type(exc).__name__}); remove it or use another 'checkpoint_dir'.") from None

    def save(self, heap, counter, best, stats):
        leaves = sorted(heap, key=lambda leaf: leaf.id)
        value = float(max((-leaf.neg_bound for leaf in heap), default=-math.inf))
        rec = {"format": _CHECKPOINT_FORMAT, "fingerprint": self.fingerprint, **self.split,
               "value": float.hex(value), "value_decimal": f"{value:.10g}", "estimate": float.hex(float(best)),
               "counter": counter, "seconds": stats.get("seconds", 0.0), "stopped": stats.get("stopped"),
               "stats": {k: v for k, v in stats.items() if k in ("cells", "dropped_empty", "vertex_wins",
                                                                  "tilted_wins", "clipped")},
               "leaves": [{"id": leaf.id, "bound": float.hex(-leaf.neg_bound),
                           "lo": [float.hex(float(x)) for x in leaf.a],
                           "hi": [float.hex(float(x)) for x in leaf.b]} for leaf in leaves]}
        os.makedirs(self.directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".cell_engine_", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(rec, fh, indent=0)
            os.chmod(tmp, 0o644)   # mkstemp's 0600 would hide the file from other users of the directory
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise
        self._last = time.monotonic()
