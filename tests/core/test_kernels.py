"""The compiled kernels agree with their numpy twins and with an exact reference, to 1e-12 relative.

Log-masses are compared as ``|new - old| <= 1e-12 * max(1, |old|)``: below 1 in magnitude that is a
relative error of 1e-12 on the probability itself.  Exact zeros (``-inf``) must match exactly.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from puffgm.core import kernels
from puffgm.exceptions import ParameterError

TOL = 1e-12


def assert_logs_close(new, ref):
    new, ref = np.asarray(new), np.asarray(ref)
    assert new.shape == ref.shape
    assert not np.isnan(new).any()
    finite = np.isfinite(ref)
    assert np.array_equal(finite, np.isfinite(new)) and np.array_equal(new[~finite], ref[~finite])
    err = np.abs(new[finite] - ref[finite]) / np.maximum(1.0, np.abs(ref[finite]))
    assert err.max(initial=0.0) <= TOL


def reference_convolve(a, b):
    """Exact to rounding: each entry's terms shifted by their largest, summed with math.fsum."""
    lead = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    a, b = np.broadcast_to(a, lead + a.shape[-1:]), np.broadcast_to(b, lead + b.shape[-1:])
    la, lb = a.shape[-1], b.shape[-1]
    out = np.empty(lead + (la + lb - 1,))
    for idx in np.ndindex(*lead):
        for s in range(la + lb - 1):
            terms = [a[idx][t] + b[idx][s - t] for t in range(max(0, s - lb + 1), min(la, s + 1))]
            m = max(terms)
            out[idx + (s,)] = -math.inf if m == -math.inf else m + math.log(math.fsum(math.exp(x - m) for x in terms))
    return out


def random_logs(rng, shape, scale, zeros=0.2):
    """Log-masses: uniform(0, 1) ** scale in log space, about ``zeros`` of them exact zeros (-inf)."""
    t = np.log(rng.random(shape)) * scale
    t[rng.random(shape) < zeros] = -np.inf
    return t


@pytest.fixture(params=["numpy", "numba"])
def use(request, monkeypatch):
    """Run a test with each backend, the compiled one from its smallest size."""
    if request.param == "numba":
        pytest.importorskip("numba")
    monkeypatch.setattr(kernels, "_BACKEND", None)
    monkeypatch.setenv("PUFFGM_KERNELS", request.param)
    monkeypatch.setattr(kernels, "_COMPILED_MIN_SIZE", 0)
    monkeypatch.setattr(kernels, "_COMPILED_MIN_TERMS", 0)
    monkeypatch.setattr(kernels, "_COMPILED_MIN_AXIS", 1)
    assert kernels.backend() == request.param
    return request.param


@pytest.mark.parametrize("scale", [1.0, 30.0, 1e3, 1e4])
@pytest.mark.parametrize("shapes", [((4, 9), (4, 13)), ((3, 1, 20), (1, 5, 7)), ((2, 40), (1, 1)), ((1, 1), (6, 3))])
def test_convolve_matches_the_exact_reference(use, scale, shapes):
    rng = np.random.default_rng(hash((scale, shapes)) % 2**32)
    a, b = random_logs(rng, shapes[0], scale), random_logs(rng, shapes[1], scale)
    a[(0,) * (a.ndim - 1)] = -np.inf  # a row of exact zeros
    assert_logs_close(kernels.log_convolve(a, b), reference_convolve(a, b))


def test_convolve_keeps_tails_far_below_the_linear_floor(use):
    # a mass of exp(-1e4) next to masses of order 1: the tail entries need the log-space road
    a = np.array([[0.0, -1e4, -2e4, -3e4]])
    b = np.array([[-1e4, 0.0, -5.0]])
    assert_logs_close(kernels.log_convolve(a, b), reference_convolve(a, b))


def test_compiled_convolve_matches_the_numpy_twin_on_large_tables(monkeypatch):
    pytest.importorskip("numba")
    rng = np.random.default_rng(7)
    for scale in (1.0, 40.0, 1e4):
        a, b = random_logs(rng, (30, 1, 120), scale), random_logs(rng, (1, 6, 90), scale)
        monkeypatch.setattr(kernels, "_BACKEND", "numba")
        kernels._NUMBA.update(kernels._compiled())
        new = kernels.log_convolve(a, b)
        assert_logs_close(new, kernels._log_convolve_numpy(a, b))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("scale", [1.0, 1e4])
def test_log_sum_exp_matches_math(use, axis, scale):
    rng = np.random.default_rng(3)
    t = random_logs(rng, (5, 6, 7), scale, zeros=0.4)
    t[0, :, 0] = -np.inf
    t[:, 0, 0] = -np.inf
    t[0, 0, :] = -np.inf
    moved = np.moveaxis(t, axis, -1)
    ref = np.empty(moved.shape[:-1])
    for idx in np.ndindex(*ref.shape):
        row = moved[idx]
        m = row.max()
        ref[idx] = -math.inf if m == -math.inf else m + math.log(math.fsum(np.exp(row - m)))
    assert_logs_close(kernels.log_sum_exp(t, axis), ref)
    assert_logs_close(kernels.log_sum_exp(np.ascontiguousarray(np.swapaxes(t, 0, 2)).swapaxes(0, 2), axis), ref)


def test_an_unknown_backend_is_refused(monkeypatch):
    monkeypatch.setattr(kernels, "_BACKEND", None)
    monkeypatch.setenv("PUFFGM_KERNELS", "fortran")
    with pytest.raises(ParameterError, match="PUFFGM_KERNELS must be 'auto', 'numba' or 'numpy'. Got 'fortran'"):
        kernels.backend()


def test_numba_is_not_imported_by_puffgm_help_or_small_problems():
    code = ("import sys, puffgm; from puffgm.cli import build_parser; build_parser(); "
            "from puffgm.chains import ChainPriorClass; "
            "puffgm.calibrate_query('example:asia', {'count': 0}, epsilon=1.0, method='wasserstein', baselines=False); "
            "puffgm.calibrate('example:alarm', epsilon=1.0); print('numba' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "False", proc.stderr


def reference_convolve_grid(a, b, ndim):
    """Exact to rounding, cell by cell: every pair of cells whose sum is the output cell, math.fsum."""
    lead = np.broadcast_shapes(a.shape[:-ndim], b.shape[:-ndim])
    ga, gb = a.shape[-ndim:], b.shape[-ndim:]
    a, b = np.broadcast_to(a, lead + ga), np.broadcast_to(b, lead + gb)
    grid = tuple(x + y - 1 for x, y in zip(ga, gb, strict=True))
    out = np.full(lead + grid, -math.inf)
    for idx in np.ndindex(*lead):
        terms: dict = {}
        for t in np.ndindex(*ga):
            for u in np.ndindex(*gb):
                terms.setdefault(tuple(x + y for x, y in zip(t, u, strict=True)), []).append(a[idx + t] + b[idx + u])
        for s, ts in terms.items():
            m = max(ts)
            if m > -math.inf:
                out[idx + s] = m + math.log(math.fsum(math.exp(x - m) for x in ts))
    return out


@pytest.mark.parametrize("scale", [1.0, 1e3, 1e4])
@pytest.mark.parametrize("shapes,ndim", [(((3, 4, 5), (1, 3, 2)), 2), (((2, 1, 3, 3, 2), (1, 4, 2, 2, 3)), 3),
                                         (((5,), (7,)), 1), (((2, 3, 1, 4), (2, 1, 6, 2)), 2)])
def test_grid_convolve_matches_the_exact_reference(use, monkeypatch, scale, shapes, ndim):
    monkeypatch.setattr(kernels, "_COMPILED_MIN_GRID_TERMS", 0)
    rng = np.random.default_rng(hash((scale, shapes)) % 2**32)
    a, b = random_logs(rng, shapes[0], scale, zeros=0.3), random_logs(rng, shapes[1], scale, zeros=0.3)
    a[(Ellipsis,) + (0,) * ndim] = -np.inf  # a cell of exact zeros in every row
    assert_logs_close(kernels.log_convolve_grid(a, b, ndim), reference_convolve_grid(a, b, ndim))


def test_grid_convolve_keeps_tails_and_exact_zeros(use, monkeypatch):
    # tails of exp(-1e4) beside masses of order 1 (the log-space road), a row of zeros, unreachable cells
    monkeypatch.setattr(kernels, "_COMPILED_MIN_GRID_TERMS", 0)
    a = np.array([[[0.0, -1e4], [-np.inf, -2e4]], [[-np.inf, -np.inf], [-np.inf, -np.inf]]])
    b = np.array([[[-1e4, -np.inf, 0.0]]])
    out = kernels.log_convolve_grid(a, b, 2)
    assert_logs_close(out, reference_convolve_grid(a, b, 2))
    assert np.all(out[1] == -np.inf) and out[0, 1, 0] == -np.inf


def reference_smooth(t, axis, scale):
    moved = np.moveaxis(t, axis, -1)
    n = moved.shape[-1]
    out = np.empty_like(moved)
    for idx in np.ndindex(*moved.shape[:-1]):
        for w in range(n):
            ts = [moved[idx][g] - abs(w - g) / scale for g in range(n)]
            m = max(ts)
            out[idx + (w,)] = -math.inf if m == -math.inf else m + math.log(math.fsum(math.exp(x - m) for x in ts))
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("scale", [0.3, 5.0, 1e3])
def test_laplace_smooth_matches_the_exact_reference(use, monkeypatch, axis, scale):
    monkeypatch.setattr(kernels, "_COMPILED_MIN_SMOOTH", 0)
    rng = np.random.default_rng(11 + axis)
    t = random_logs(rng, (4, 6, 5), 1e3, zeros=0.4)
    t[0, :, :] = -np.inf
    assert_logs_close(kernels.laplace_smooth(t, axis, scale), reference_smooth(t, axis, scale))


def test_compiled_laplace_smooth_is_the_numpy_twin_and_laplace_log_density_bit_for_bit(monkeypatch):
    """The same recursions with numpy.logaddexp's formula: equal to the last bit to the numpy twin and to the
    single query's ``laplace_log_density`` (so a scale search takes the same steps whichever runs)."""
    from puffgm.mechanisms.query import laplace_log_density

    pytest.importorskip("numba")
    rng = np.random.default_rng(5)
    t = random_logs(rng, (7, 9, 8, 10), 30.0, zeros=0.3)
    monkeypatch.setattr(kernels, "_COMPILED_MIN_SMOOTH", 0)
    monkeypatch.setattr(kernels, "_BACKEND", "numpy")
    twin = [kernels.laplace_smooth(t, axis, 2.5) for axis in range(4)]
    monkeypatch.setattr(kernels, "_BACKEND", "numba")
    kernels._NUMBA.update(kernels._compiled())
    for axis in range(4):
        assert np.array_equal(kernels.laplace_smooth(t, axis, 2.5), twin[axis])
        moved = np.ascontiguousarray(np.moveaxis(t, axis, -1))
        dens, _, _ = laplace_log_density(moved.reshape(-1, moved.shape[-1]), 2.5)
        assert np.array_equal(np.moveaxis(dens.reshape(moved.shape), -1, axis), twin[axis])
