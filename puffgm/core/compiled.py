"""The numba kernels behind :mod:`puffgm.core.kernels` (imported only through it, on first use).

Each function has an explicit signature, so it is compiled when this module is imported
(once per machine: ``cache=True`` keeps the machine code in numba's cache, next to this
file or in the user's cache directory) and never again for another argument type.
Callers pass C-contiguous, writeable float64 and int64 arrays.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["convolve_rows", "convolve_cells", "log_sum_exp_middle", "laplace_smooth_middle", "bayes_ball",
           "LINEAR_FLOOR"]

#: A convolution entry whose linear-space sum is at least this is exact to rounding; below it
#: (tails, and exact zeros) the entry is recomputed as a max-shifted log-sum-exp.
LINEAR_FLOOR = 1e-250


@numba.njit("float64(float64[::1], float64[::1], int64, int64, int64)", cache=True, nogil=True)
def exact_entry(ra, rb, s, t0, t1):  # pragma: no cover - compiled
    r""":math:`\log \sum_{t_0 \le t < t_1} \exp(ra_t + rb_{s-t})`, shifted by the largest term.

    A term 750 below it is exactly 0 in double precision and skipped."""
    m = -np.inf
    for t in range(t0, t1):
        v = ra[t] + rb[s - t]
        if v > m:
            m = v
    if m == -np.inf:
        return -np.inf
    acc = 0.0
    for t in range(t0, t1):
        v = ra[t] + rb[s - t] - m
        if v > -750.0:
            acc += math.exp(v)
    return m + math.log(acc)


@numba.njit("void(float64[:, ::1], float64[:, ::1], int64[::1], int64[::1], float64[:, ::1])",
            cache=True, nogil=True, fastmath={"reassoc", "contract"})
def convolve_rows(a, b, ia, ib, out):  # pragma: no cover - compiled
    r""":math:`\mathrm{out}_{r,s} = \log \sum_t \exp(a_{ia_r, t} + b_{ib_r, s-t})`.

    Each row of ``a`` and ``b`` is shifted by its maximum and exponentiated once
    (entries in [0, 1]); an entry is then a dot product of those, exact to rounding when
    it is at least :data:`LINEAR_FLOOR` (the underflow error of each term is below 2.3e-308,
    less than 1e-57 of the sum).  Smaller sums (the tails, exact zeros) are recomputed
    in log space by :func:`exact_entry`, so no relative precision is lost.
    """
    la, lb = a.shape[1], b.shape[1]
    ea, ebr = np.empty(la), np.empty(lb)
    for r in range(out.shape[0]):
        ra, rb = a[ia[r]], b[ib[r]]
        ma, mb = ra.max(), rb.max()
        if ma == -np.inf or mb == -np.inf:
            out[r, :] = -np.inf
            continue
        for t in range(la):
            ea[t] = math.exp(ra[t] - ma)
        for u in range(lb):
            ebr[lb - 1 - u] = math.exp(rb[u] - mb)
        for s in range(la + lb - 1):
            t0, t1 = max(0, s - lb + 1), min(la, s + 1)
            off = lb - 1 - s
            acc = 0.0
            for t in range(t0, t1):
                acc += ea[t] * ebr[off + t]
            if acc >= LINEAR_FLOOR:
                out[r, s] = math.log(acc) + ma + mb
            else:
                out[r, s] = exact_entry(ra, rb, s, t0, t1)


@numba.njit("void(float64[::1], float64[::1], int64[::1], int64[::1], int64[::1], boolean[::1], float64[::1])",
            cache=True, nogil=True)
def _exact_cells(ra, rb, fu, fv, oa, want, row):  # pragma: no cover - compiled
    """The cells ``want`` of one row of :func:`convolve_cells`, each a log-sum-exp shifted by its largest
    term; a term 750 below it is exactly 0 in double precision and skipped.  ``fu`` holds the finite cells
    of ``ra``, ``fv`` the output offsets of the finite cells of ``rb`` (in order), ``oa`` the offsets of ``ra``'s."""
    n = row.shape[0]
    top, acc = np.full(n, -np.inf), np.zeros(n)
    nv = fv.shape[0]
    vals = np.empty(nv)
    j = 0
    for v in range(rb.shape[0]):
        if rb[v] > -np.inf:
            vals[j] = rb[v]
            j += 1
    for u in fu:
        base, x = oa[u], ra[u]
        for j in range(nv):
            o = base + fv[j]
            if want[o] and x + vals[j] > top[o]:
                top[o] = x + vals[j]
    for u in fu:
        base, x = oa[u], ra[u]
        for j in range(nv):
            o = base + fv[j]
            if want[o]:
                d = x + vals[j] - top[o]
                if d > -750.0:
                    acc[o] += math.exp(d)
    for o in range(n):
        if want[o]:
            row[o] = top[o] + math.log(acc[o])


@numba.njit("void(float64[:, ::1], float64[:, ::1], int64[::1], int64[::1], int64[::1], int64[::1], float64[:, ::1])",
            cache=True, nogil=True, fastmath={"reassoc", "contract"})
def convolve_cells(a, b, ia, ib, oa, ob, out):  # pragma: no cover - compiled
    r""":math:`\mathrm{out}_{r,o} = \log \sum \exp(a_{ia_r, u} + b_{ib_r, v})` over the cells :math:`u, v`.

    The cells are those with :math:`oa_u + ob_v = o`.  The convolution of two tables over a grid of k axes,
    their cells flattened: ``oa`` and ``ob`` give each cell's flat index in the output grid, so that cell
    sums map to index sums (no carry: the output grid holds every sum).  As :func:`convolve_rows`, each
    row is shifted by its maximum
    and exponentiated once, the finite cells only (an exact zero adds no term), and an output cell
    is summed in linear space when that sum is at least :data:`LINEAR_FLOOR`; a cell reached by some
    finite term but below the floor is recomputed in log space (shifted by its largest term), and a
    cell reached by no finite term is an exact zero.
    """
    ca, cb, n = a.shape[1], b.shape[1], out.shape[1]
    ea, eb = np.empty(ca), np.empty(cb)
    fu, fv = np.empty(ca, np.int64), np.empty(cb, np.int64)
    acc = np.empty(n)
    hit = np.empty(n, np.bool_)
    for r in range(out.shape[0]):
        ra, rb = a[ia[r]], b[ib[r]]
        ma, mb = ra.max(), rb.max()
        if ma == -np.inf or mb == -np.inf:
            out[r, :] = -np.inf
            continue
        nu = 0
        for u in range(ca):
            if ra[u] > -np.inf:
                fu[nu] = u
                ea[nu] = math.exp(ra[u] - ma)
                nu += 1
        nv = 0
        for v in range(cb):
            if rb[v] > -np.inf:
                fv[nv] = ob[v]
                eb[nv] = math.exp(rb[v] - mb)
                nv += 1
        acc[:] = 0.0
        hit[:] = False
        for i in range(nu):
            e, base = ea[i], oa[fu[i]]
            for j in range(nv):
                o = base + fv[j]
                acc[o] += e * eb[j]
                hit[o] = True
        low = False
        for o in range(n):
            if acc[o] >= LINEAR_FLOOR:
                out[r, o] = math.log(acc[o]) + ma + mb
                hit[o] = False
            else:
                out[r, o] = -np.inf
                low = low or hit[o]
        if low:
            _exact_cells(ra, rb, fu[:nu], fv[:nv], oa, hit, out[r])


@numba.njit("void(float64[:, :, ::1], float64[:, ::1])", cache=True, nogil=True)
def log_sum_exp_middle(t, out):  # pragma: no cover - compiled
    r""":math:`\mathrm{out}_{p,q} = \log \sum_x \exp(t_{p,x,q})`, shifted by the largest term (``-inf`` if all are)."""
    n_x, n_q = t.shape[1], t.shape[2]
    m = np.empty(n_q)
    acc = np.empty(n_q)
    for p in range(t.shape[0]):
        m[:] = -np.inf
        for x in range(n_x):
            for q in range(n_q):
                if t[p, x, q] > m[q]:
                    m[q] = t[p, x, q]
        for q in range(n_q):
            if m[q] == -np.inf:
                m[q] = 0.0
        acc[:] = 0.0
        for x in range(n_x):
            for q in range(n_q):
                acc[q] += math.exp(t[p, x, q] - m[q])
        for q in range(n_q):
            out[p, q] = math.log(acc[q]) + m[q] if acc[q] > 0.0 else -np.inf


_LOG2 = math.log(2.0)


@numba.njit("float64(float64, float64)", cache=True, nogil=True)
def log_add_exp(x, y):  # pragma: no cover - compiled
    """``numpy.logaddexp`` of two floats, by the same formula (equal terms, including two ``-inf``, first;
    an exact zero adds exactly nothing: x + log1p(0) = x)."""
    if y == -np.inf:
        return x
    if x == -np.inf:
        return y
    if x == y:
        return x + _LOG2
    d = x - y
    if d > 0:
        return x + math.log1p(math.exp(-d))
    if d <= 0:
        return y + math.log1p(math.exp(d))
    return d


@numba.njit("void(float64[:, :, ::1], float64, float64[:, :, ::1])", cache=True, nogil=True)
def laplace_smooth_middle(t, step, out):  # pragma: no cover - compiled
    r""":math:`\mathrm{out}_{p,w,q} = \log \sum_g \exp(t_{p,g,q} + \mathrm{step}\, |w - g|)`, by two recursions.

    Here :math:`\mathrm{step} = -1/b < 0`, :math:`b` the scale.  The two one-sided recursions of
    :func:`puffgm.mechanisms.query.laplace_log_density` along the middle axis:
    ``l(w) = logaddexp(l(w - 1) + step, t(w))`` from the left, ``r(w)`` likewise from the right, and
    ``out(w) = logaddexp(l(w), r(w + 1) + step)``; sums of non-negative terms only."""
    n, nq = t.shape[1], t.shape[2]
    right = np.empty((n, nq))
    for p in range(t.shape[0]):
        for q in range(nq):
            out[p, 0, q] = t[p, 0, q]
            right[n - 1, q] = t[p, n - 1, q]
        for s in range(1, n):
            for q in range(nq):
                out[p, s, q] = log_add_exp(out[p, s - 1, q] + step, t[p, s, q])
                right[n - 1 - s, q] = log_add_exp(right[n - s, q] + step, t[p, n - 1 - s, q])
        for s in range(n - 1):
            for q in range(nq):
                out[p, s, q] = log_add_exp(out[p, s, q], right[s + 1, q] + step)


@numba.njit("void(int64[::1], int64[::1], int64[::1], int64[::1], int64, uint8[::1], uint8[::1], uint8[::1])",
            cache=True, nogil=True)
def bayes_ball(pptr, pidx, cptr, cidx, source, observed, reach, touched):  # pragma: no cover - compiled
    """The Bayes ball of ``DSeparationIndex`` on arrays: parents of v are ``pidx[pptr[v]:pptr[v + 1]]``,
    children ``cidx[cptr[v]:cptr[v + 1]]``; ``reach`` and ``touched`` (zeroed by the caller) get 1 at the
    d-connected nodes and at the nodes the ball is passed to.

    A state is (node, arrived from a child) or (node, arrived from a parent); the visited states are the
    closure of (source, from a child) under: an unobserved node passes the ball from a child to its
    parents and children, from a parent to its children; a node in An(observed) (observed included)
    reached from a parent passes it back to its parents.  The closure does not depend on the order of
    the visits, so this depth-first search visits the states of the breadth-first search on bitmasks.
    """
    n = observed.shape[0]
    anc = np.zeros(n, np.uint8)
    stack = np.empty(2 * n + 1, np.int64)
    top = 0
    for v in range(n):  # An(observed), observed included
        if observed[v] and not anc[v]:
            anc[v] = 1
            stack[top] = v
            top += 1
            while top:
                top -= 1
                u = stack[top]
                for e in range(pptr[u], pptr[u + 1]):
                    p = pidx[e]
                    if not anc[p]:
                        anc[p] = 1
                        stack[top] = p
                        top += 1
    seen = np.zeros(2 * n, np.uint8)  # 2v: arrived from a child (up), 2v + 1: from a parent (down)
    seen[2 * source] = 1
    stack[0] = 2 * source
    top = 1
    while top:
        top -= 1
        st = stack[top]
        v = st >> 1
        touched[v] = 1
        down = st & 1
        free = observed[v] == 0
        if free:
            reach[v] = 1
            for e in range(cptr[v], cptr[v + 1]):  # on to the children, arriving from a parent
                c = 2 * cidx[e] + 1
                if not seen[c]:
                    seen[c] = 1
                    stack[top] = c
                    top += 1
        if (free and not down) or (down and anc[v]):  # on to the parents, arriving from a child
            for e in range(pptr[v], pptr[v + 1]):
                p = 2 * pidx[e]
                if not seen[p]:
                    seen[p] = 1
                    stack[top] = p
                    top += 1
