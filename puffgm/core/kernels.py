"""Compiled numeric kernels (numba), each with a pure-numpy twin.

The exact engines of puffgm spend most of their time in a few loops over large
tables.  This module holds those loops twice: as numba functions
(:mod:`puffgm.core.compiled`, compiled when first needed and cached on disk,
``cache=True``), and as the numpy code they replace.  Which one runs is decided once per process:

* ``PUFFGM_KERNELS=numpy`` forces the numpy twins;
* ``PUFFGM_KERNELS=numba`` requires numba (ImportError if it is absent);
* unset (or ``auto``): numba when it can be imported (``pip install
  "puffgm[fast]"``), numpy otherwise.

Small tables stay with numpy whatever the backend (:data:`_COMPILED_MIN_SIZE`,
:data:`_COMPILED_MIN_TERMS`), so numba is imported on the first large problem
only: never by ``import puffgm``, ``puffgm --help``, a chain's Markov Quilt
Mechanism or a small network.

Both twins compute the same exact quantity; they differ only by rounding
(a different order of the same sums), a relative difference of a few ulps per
summed term, far below the 1e-12 relative agreement the tests require.  Log
space stays log space: the compiled convolution sums in linear space only the
entries whose sum it certifies to be far above the underflow range, and
recomputes the others as max-shifted log-sum-exps, so a term of log-mass -1e4
keeps its relative precision; ``-inf`` (an exact zero) stays ``-inf``, and no
kernel returns NaN for finite or ``-inf`` inputs.
"""

from __future__ import annotations

import math
import os

import numpy as np

from puffgm.exceptions import ParameterError

__all__ = ["backend", "log_convolve", "log_convolve_grid", "log_sum_exp", "laplace_smooth", "bayes_ball"]

_BACKEND: str | None = None
#: Tables from this many entries go to the compiled log-sum-exp; smaller ones stay with numpy, so that a
#: small problem never pays numba's import (about 0.4 s, plus 0.3 s to load the cached kernels).
_COMPILED_MIN_SIZE = 1 << 16
#: Convolutions from this many terms (rows x la x lb) go to the compiled kernel...
_COMPILED_MIN_TERMS = 1 << 22
#: ... when both axes have at least this many entries: against an axis of 1 to 3 entries
#: numpy's few vectorised log-add-exps are as fast (and an axis of 1 is a plain sum).
_COMPILED_MIN_AXIS = 4
#: Grid convolutions (:func:`log_convolve_grid`) from this many terms of the numpy twin (rows x finite cells of
#: one table x the bounding box of the other's) go to the compiled kernel; the twin loops over one table's cells.
#: Below it the twin is faster than loading numba (up to three counts on alarm stay with numpy).
#: Laplace smoothing (:func:`laplace_smooth`) of tables from this many entries goes to the compiled kernel: it
#: is about 1.5 times the numpy twin's speed, which pays loading numba (0.75 s) only on large tables.
_COMPILED_MIN_SMOOTH = 1 << 22
#: The junction tree of a workload sums out variables of tables from this many entries with the compiled
#: log-sum-exp (a grid's tables are larger than one axis's, and small workloads need not load numba).
COMPILED_MIN_GRID_SUM = 1 << 20
_COMPILED_MIN_GRID_TERMS = 1 << 23
_NUMBA: dict = {}


def backend() -> str:
    """The kernels in use in this process: ``"numba"`` or ``"numpy"`` (decided on the first call)."""
    global _BACKEND
    if _BACKEND is None:
        choice = os.environ.get("PUFFGM_KERNELS", "auto").strip().lower() or "auto"
        if choice not in ("auto", "numba", "numpy"):
            raise ParameterError(f"The environment variable PUFFGM_KERNELS must be 'auto', 'numba' or 'numpy'. "
                                 f"Got {choice!r} instead.")
        _BACKEND = "numpy" if choice == "numpy" else _numba_or(choice)
    return _BACKEND


def _numba_or(choice: str) -> str:
    try:
        _NUMBA.update(_compiled())
    except ImportError:
        if choice == "numba":
            raise
        return "numpy"
    return "numba"


def _compiled() -> dict:
    """The numba kernels (:mod:`puffgm.core.compiled`: compiled, or loaded from numba's cache, on import)."""
    from puffgm.core import compiled

    return {"convolve_rows": compiled.convolve_rows, "convolve_cells": compiled.convolve_cells,
            "log_sum_exp_middle": compiled.log_sum_exp_middle, "laplace_smooth_middle": compiled.laplace_smooth_middle,
            "bayes_ball": compiled.bayes_ball}


def bayes_ball():
    """The compiled Bayes ball (:func:`puffgm.core.compiled.bayes_ball`), or None with the numpy backend
    (then the caller runs its own twin, the breadth-first search on bitmasks of
    :class:`puffgm.networks.quilts.DSeparationIndex`)."""
    return _NUMBA["bayes_ball"] if backend() == "numba" else None


def log_convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r"""Log-space convolution of the last axes: :math:`\log \sum_t \exp(a_{\dots,t} + b_{\dots,s-t})` at each :math:`s`.

    Parameters
    ----------
    a, b : ndarray
        Float tables of log-masses (``-inf`` is an exact zero) whose leading axes
        broadcast against each other; last axes of lengths ``la`` and ``lb``.

    Returns
    -------
    ndarray
        Shape ``broadcast(leading axes) + (la + lb - 1,)``; ``-inf`` where every term is zero.

    Notes
    -----
    A sum of products of non-negative terms, each entry evaluated in log space, so no
    relative precision is lost however small a term is (a log-mass of -1e4 included).
    The compiled kernel (:func:`puffgm.core.compiled.convolve_rows`) exponentiates each row
    once, shifted by its maximum, and sums the products of an entry in linear space when
    that sum is at least 1e-250 (then the underflow error of each term is below 1e-57 of it);
    it recomputes the other entries as log-sum-exps shifted by their largest term.  The
    numpy twin accumulates ``numpy.logaddexp`` over the shorter axis.  Both are exact to a
    few ulps per term.

    Examples
    --------
    >>> a = np.log([[0.5, 0.5]]); b = np.log([[0.25, 0.75]])
    >>> np.round(np.exp(log_convolve(a, b)), 6)
    array([[0.125, 0.5  , 0.375]])
    """
    lead_a, lead_b = a.shape[:-1], b.shape[:-1]
    lead = np.broadcast_shapes(lead_a, lead_b)
    la, lb = a.shape[-1], b.shape[-1]
    if min(la, lb) < _COMPILED_MIN_AXIS or math.prod(lead) * la * lb < _COMPILED_MIN_TERMS or backend() != "numba":
        return _log_convolve_numpy(a, b)
    ia = np.broadcast_to(np.arange(math.prod(lead_a), dtype=np.int64).reshape(lead_a), lead).flatten()
    ib = np.broadcast_to(np.arange(math.prod(lead_b), dtype=np.int64).reshape(lead_b), lead).flatten()
    a2 = np.require(a, np.float64, ["C", "W"]).reshape(-1, a.shape[-1])
    b2 = np.require(b, np.float64, ["C", "W"]).reshape(-1, b.shape[-1])
    out = np.empty((ia.shape[0], la + lb - 1))
    _NUMBA["convolve_rows"](a2, b2, ia, ib, out)
    return out.reshape(lead + (out.shape[1],))


def _log_convolve_numpy(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The numpy twin of :func:`log_convolve` (``numpy.logaddexp`` over the shorter axis)."""
    if a.shape[-1] > b.shape[-1]:
        a, b = b, a
    la, lb = a.shape[-1], b.shape[-1]
    out = np.full(np.broadcast_shapes(a.shape[:-1], b.shape[:-1]) + (la + lb - 1,), -np.inf)
    with np.errstate(invalid="ignore"):
        for t in range(la):
            seg = out[..., t:t + lb]
            np.logaddexp(seg, a[..., t:t + 1] + b, out=seg)
    return out


def log_convolve_grid(a: np.ndarray, b: np.ndarray, ndim: int) -> np.ndarray:
    r"""Log-space convolution over the last ``ndim`` axes (a grid of partial sums, one axis per statistic).

    :math:`\mathrm{out}_{\dots,s} = \log \sum_{t + u = s} \exp(a_{\dots,t} + b_{\dots,u})` with :math:`s, t, u`
    multi-indices of the grid: the law of the sum of two independent vectors of
    partial sums, each a table over a box of the integer grid.

    Parameters
    ----------
    a, b : ndarray
        Float tables of log-masses (``-inf`` is an exact zero) whose leading axes
        (all but the last ``ndim``) broadcast against each other.
    ndim : int
        The number of grid axes (:math:`\ge 1`).

    Returns
    -------
    ndarray
        Shape ``broadcast(leading axes) + (la_j + lb_j - 1 for each grid axis)``;
        ``-inf`` where every term is zero.

    Notes
    -----
    As :func:`log_convolve`, every entry is a sum of non-negative terms evaluated in log
    space, to a few ulps per term.  Only the grid cells where some leading entry is finite
    take part: a grid of several statistics is mostly exact zeros (a histogram's counts
    always sum to the number of nodes), and a cell of exact zeros adds no term.  The
    compiled kernel (:func:`puffgm.core.compiled.convolve_cells`) takes the finite cells of
    both tables; the numpy twin adds, for each finite cell of the table with fewer of them,
    the other table cropped to its finite cells' bounding box.

    Examples
    --------
    >>> a = np.log([[0.5, 0.5]])[:, None, :]          # one row, a grid of 1 x 2
    >>> b = np.log([[0.25], [0.75]])[None, :, :]       # one row, a grid of 2 x 1
    >>> np.round(np.exp(log_convolve_grid(a, b, 2)), 6)
    array([[[0.125, 0.125],
            [0.375, 0.375]]])
    """
    ga, gb = a.shape[a.ndim - ndim:], b.shape[b.ndim - ndim:]
    lead_a, lead_b = a.shape[:a.ndim - ndim], b.shape[:b.ndim - ndim]
    lead = np.broadcast_shapes(lead_a, lead_b)
    grid = tuple(x + y - 1 for x, y in zip(ga, gb, strict=True))
    on_a = np.flatnonzero(np.isfinite(a).reshape(-1, math.prod(ga)).any(axis=0))
    on_b = np.flatnonzero(np.isfinite(b).reshape(-1, math.prod(gb)).any(axis=0))
    if not (on_a.size and on_b.size):
        return np.full(lead + grid, -np.inf)
    if _twin_terms(on_a, on_b, (ga, gb), math.prod(lead)) < _COMPILED_MIN_GRID_TERMS or backend() != "numba":
        return _log_convolve_grid_numpy(a, b, ndim, (on_a, on_b), (lead, grid))
    ia = np.broadcast_to(np.arange(math.prod(lead_a), dtype=np.int64).reshape(lead_a), lead).flatten()
    ib = np.broadcast_to(np.arange(math.prod(lead_b), dtype=np.int64).reshape(lead_b), lead).flatten()
    a2 = np.ascontiguousarray(a.reshape(-1, math.prod(ga))[:, on_a], dtype=np.float64)
    b2 = np.ascontiguousarray(b.reshape(-1, math.prod(gb))[:, on_b], dtype=np.float64)
    oa = np.ravel_multi_index(np.unravel_index(on_a, ga), grid).astype(np.int64)
    ob = np.ravel_multi_index(np.unravel_index(on_b, gb), grid).astype(np.int64)
    out = np.empty((ia.shape[0], math.prod(grid)))
    _NUMBA["convolve_cells"](a2, b2, ia, ib, oa, ob, out)
    return out.reshape(lead + grid)


def _twin_terms(on_a, on_b, grids, rows: int) -> int:
    """The terms the numpy twin of :func:`log_convolve_grid` would add: rows x finite cells of the table with
    fewer of them x the bounding box of the other's finite cells."""
    if on_a.size > on_b.size:
        on_a, on_b, grids = on_b, on_a, grids[::-1]
    _, grid_b = grids
    box = math.prod(int(i.max()) - int(i.min()) + 1 for i in np.unravel_index(on_b, grid_b))
    return rows * on_a.size * box


def _log_convolve_grid_numpy(a, b, ndim, cells, shapes):
    """The numpy twin of :func:`log_convolve_grid`: for each finite cell of the table with fewer of them,
    ``numpy.logaddexp`` of the other table (cropped to its finite cells' bounding box) into the output."""
    on_a, on_b = cells
    lead, grid = shapes
    if on_a.size > on_b.size:
        a, b, on_a, on_b = b, a, on_b, on_a
    ga, gb = a.shape[a.ndim - ndim:], b.shape[b.ndim - ndim:]
    idx_b = np.unravel_index(on_b, gb)
    lo = [int(i.min()) for i in idx_b]
    hi = [int(i.max()) + 1 for i in idx_b]
    crop = b[(Ellipsis,) + tuple(slice(x, y) for x, y in zip(lo, hi, strict=True))]
    lead_a = a.shape[:a.ndim - ndim]
    out = np.full(lead + grid, -np.inf)
    with np.errstate(invalid="ignore"):
        for u in zip(*np.unravel_index(on_a, ga), strict=True):
            seg = out[(Ellipsis,) + tuple(slice(t + x, t + y) for t, x, y in zip(u, lo, hi, strict=True))]
            term = a[(Ellipsis,) + tuple(u)].reshape(lead_a + (1,) * ndim)
            np.logaddexp(seg, term + crop, out=seg)
    return out


def log_sum_exp(t: np.ndarray, axis: int, *, min_compiled: int | None = None) -> np.ndarray:
    """``log(sum(exp(t), axis))``, shifted by the largest term along the axis; all ``-inf`` gives ``-inf``.

    ``min_compiled`` (default :data:`_COMPILED_MIN_SIZE`) is the least size of a table summed by the
    compiled kernel.

    Examples
    --------
    >>> np.round(np.exp(log_sum_exp(np.log([[0.25, 0.5], [0.25, 0.0]]), 0)), 6)
    array([0.5, 0.5])
    """
    least = _COMPILED_MIN_SIZE if min_compiled is None else min_compiled
    if t.size < least or t.dtype != np.float64 or backend() != "numba":
        m = np.max(t, axis=axis, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        with np.errstate(divide="ignore"):
            out = np.log(np.sum(np.exp(t - m), axis=axis, keepdims=True)) + m
        return np.squeeze(out, axis=axis)
    axis %= t.ndim
    lead, rest = t.shape[:axis], t.shape[axis + 1:]
    t3 = np.require(t, np.float64, ["C", "W"]).reshape(math.prod(lead), t.shape[axis], math.prod(rest))
    out = np.empty((t3.shape[0], t3.shape[2]))
    _NUMBA["log_sum_exp_middle"](t3, out)
    return out.reshape(lead + rest)


def laplace_smooth(t: np.ndarray, axis: int, scale: float) -> np.ndarray:
    r""":math:`\log \sum_g \exp(t_{\dots,g,\dots}) \exp(-|w - g| / b)` at every :math:`w = 0, \dots, n-1` of ``axis``.

    Here :math:`b` is ``scale``.  The Laplace smoothing of log-masses on :math:`0, \dots, n-1` along one axis
    (the others are batch axes), without the constant :math:`1/(2b)`: two one-sided log-space recursions,
    ``l(w) = logaddexp(l(w - 1) - 1/scale, t(w))`` from the left and ``r(w)`` likewise from the
    right, then ``logaddexp(l(w), r(w + 1) - 1/scale)``: sums of non-negative terms only, so
    every tail keeps its relative precision, and ``-inf`` (an exact zero) stays exact.  The
    arithmetic of :func:`puffgm.mechanisms.query.laplace_log_density`, entry by entry.

    Examples
    --------
    >>> t = np.log(np.array([[1.0, 0.0, 0.0]]))
    >>> np.round(np.exp(laplace_smooth(t, 1, 1.0)), 6)
    array([[1.      , 0.367879, 0.135335]])
    """
    axis %= t.ndim
    lead, n, rest = t.shape[:axis], t.shape[axis], t.shape[axis + 1:]
    t3 = np.require(t, np.float64, ["C", "W"]).reshape(math.prod(lead), n, math.prod(rest))
    step = -1.0 / float(scale)
    if t.size < _COMPILED_MIN_SMOOTH or backend() != "numba":
        out = _laplace_smooth_numpy(t3, step)
    else:
        out = np.empty_like(t3)
        _NUMBA["laplace_smooth_middle"](t3, step, out)
    return out.reshape(t.shape)


def _laplace_smooth_numpy(t3: np.ndarray, step: float) -> np.ndarray:
    """The numpy twin of :func:`laplace_smooth` on a (lead, n, rest) array."""
    n = t3.shape[1]
    left = np.empty_like(t3)
    right = np.empty_like(t3)
    left[:, 0] = t3[:, 0]
    right[:, n - 1] = t3[:, n - 1]
    for s in range(1, n):
        left[:, s] = np.logaddexp(left[:, s - 1] + step, t3[:, s])
        right[:, n - 1 - s] = np.logaddexp(right[:, n - s] + step, t3[:, n - 1 - s])
    left[:, : n - 1] = np.logaddexp(left[:, : n - 1], right[:, 1:] + step)
    return left
