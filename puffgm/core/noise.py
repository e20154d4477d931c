"""Noise sources for releases.

Two sources, chosen by the ``random_state`` argument of every mechanism:

* ``random_state=None`` (the default): :class:`SecureNoise`, OpenDP's vetted
  samplers.  OpenDP draws from the operating system's cryptographically secure
  generator and samples Laplace noise on a discrete lattice (a discrete Laplace
  added to the rounded input), so the low bits of the output do not leak the
  input as naive floating-point Laplace sampling does (Mironov, "On
  significance of the least significant bits for differential privacy",
  CCS 2012).
* ``random_state=<int or numpy.random.Generator>``: :class:`SeededNoise`, a
  numpy generator for reproducible research.  Results produced with it say
  ``secure=False``: they are not for production.

Both also give uniform integers (:meth:`NoiseSource.randbelow`): from Python's
``secrets`` (the operating system's cryptographic generator) or from the seeded
generator; samplers that invert a cumulative distribution on exact integer
weights use them (:mod:`puffgm.mechanisms.optimal_noise`).

OpenDP is imported lazily, on the first secure draw.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np

from puffgm.core.validation import check_positive_finite
from puffgm.exceptions import ParameterError

__all__ = ["check_resolves", "RESOLUTION", "NoiseSource", "SecureNoise", "SeededNoise", "resolve_noise", "SECURE",
           "NOT_FOR_PRODUCTION"]

NOT_FOR_PRODUCTION = "seeded numpy noise: reproducible, NOT for production (not cryptographically secure)"
SECURE = "OpenDP floating-point-safe sampler over the OS cryptographic RNG"


#: Laplace noise of scale b is added to an answer only where the spacing of floating-point numbers
#: there is at most ``RESOLUTION * b``: beyond that, rounding would swallow the noise.
RESOLUTION = 2.0 ** -12


def check_resolves(values, scale: float) -> np.ndarray:
    """``values`` as a float array, if Laplace noise of ``scale`` survives rounding on every coordinate.

    Raises
    ------
    ParameterError
        If a value is NaN or infinite, or so large that the spacing of floating-point numbers
        around it exceeds ``RESOLUTION * scale`` (adding the noise would return the exact answer,
        or a value rounded on a grid coarser than the noise).
    """
    arr = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ParameterError("The query answer passed to the Laplace sampler contains NaN or infinity.")
    largest = float(np.max(np.abs(arr))) if arr.size else 0.0
    if math.ulp(largest) > RESOLUTION * scale:
        raise ParameterError(
            f"The answer {largest:g} is too large for Laplace noise of scale {scale:g}: floating-point numbers near "
            f"it are {math.ulp(largest):g} apart, so rounding would swallow the noise; release a rescaled or "
            "shifted query whose answers stay within its range."
        )
    return arr


class NoiseSource:
    """Interface of a noise source: Laplace noise, categorical draws and uniform integers."""

    secure: bool = False
    description: str = ""

    def laplace(self, values, scale: float) -> np.ndarray:  # pragma: no cover - interface
        """Return ``values + Lap(scale)`` coordinate-wise, as a float array."""
        raise NotImplementedError

    def gumbel_argmax(self, scores, scale: float) -> int:  # pragma: no cover - interface
        """Return ``argmax_k scores[k] + Gumbel(scale)`` (the exponential mechanism)."""
        raise NotImplementedError

    def randbelow(self, n: int) -> int:  # pragma: no cover - interface
        """Return an integer uniform on 0..n-1 (n a positive Python int of any size)."""
        raise NotImplementedError


@cache
def _opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


@lru_cache(maxsize=64)
def _opendp_laplace(scale: float, vector: bool):
    dp = _opendp()
    atom = dp.atom_domain(T=float, nan=False)
    if vector:
        return dp.m.make_laplace(dp.vector_domain(atom), dp.l1_distance(T=float), scale=scale)
    return dp.m.make_laplace(atom, dp.absolute_distance(T=float), scale=scale)


@lru_cache(maxsize=64)
def _opendp_noisy_max(scale: float):
    dp = _opendp()
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    # With a zCDP output measure OpenDP's noisy max adds Gumbel noise, whose argmax
    # is distributed exactly as the exponential mechanism (softmax of scores/scale).
    # Only the sampler is used here; the privacy accounting is puffgm's own.
    return dp.m.make_noisy_max(
        domain, dp.linf_distance(T=float), dp.zero_concentrated_divergence(), scale=scale
    )


@dataclass(frozen=True)
class SecureNoise(NoiseSource):
    """OpenDP samplers: cryptographically secure and floating-point safe (the default)."""

    secure: bool = True
    description: str = SECURE

    def laplace(self, values, scale: float) -> np.ndarray:
        """``values + Lap(scale)`` from OpenDP's Laplace sampler (vector or scalar measurement)."""
        arr = check_resolves(values, check_positive_finite(scale, "scale", "SecureNoise.laplace"))
        flat = [float(v) for v in arr.ravel()]
        if arr.ndim == 0:
            return np.asarray(_opendp_laplace(scale, False)(flat[0]), dtype=float)
        out = _opendp_laplace(scale, True)(flat)
        return np.asarray(out, dtype=float).reshape(arr.shape)

    def gumbel_argmax(self, scores, scale: float) -> int:
        """OpenDP's noisy max (Gumbel noise) over the finite scores; -inf scores are never chosen."""
        scale = check_positive_finite(scale, "scale", "SecureNoise.gumbel_argmax")
        arr = np.asarray(scores, dtype=float).ravel()
        # -inf scores (probability zero candidates) are never selected; OpenDP needs finite input.
        finite = np.isfinite(arr)
        if not finite.any():
            raise ParameterError("Every candidate of the exponential mechanism has score -inf.")
        idx = np.flatnonzero(finite)
        chosen = _opendp_noisy_max(scale)([float(v) for v in arr[idx]])
        return int(idx[int(chosen)])

    def randbelow(self, n: int) -> int:
        """A uniform integer on 0..n-1 from the operating system's cryptographic generator (``secrets``)."""
        return secrets.randbelow(_positive_int(n))


class SeededNoise(NoiseSource):
    """A seeded numpy generator: reproducible, not cryptographically secure.

    Use only for research and tests; results record ``secure=False``.
    """

    secure = False
    description = NOT_FOR_PRODUCTION

    def __init__(self, seed):
        self.generator = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    def laplace(self, values, scale: float) -> np.ndarray:
        """``values + Lap(scale)`` from the numpy generator."""
        arr = check_resolves(values, check_positive_finite(scale, "scale", "SeededNoise.laplace"))
        return arr + self.generator.laplace(0.0, scale, size=arr.shape)

    def gumbel_argmax(self, scores, scale: float) -> int:
        """argmax of ``scores + Gumbel(scale)`` from the numpy generator; -inf scores are never chosen."""
        scale = check_positive_finite(scale, "scale", "SeededNoise.gumbel_argmax")
        arr = np.asarray(scores, dtype=float).ravel()
        if not np.isfinite(arr).any():
            raise ParameterError("Every candidate of the exponential mechanism has score -inf.")
        noisy = arr + self.generator.gumbel(0.0, scale, size=arr.shape)
        noisy[~np.isfinite(arr)] = -math.inf
        return int(np.argmax(noisy))

    def randbelow(self, n: int) -> int:
        """A uniform integer on 0..n-1 from the numpy generator (32-bit words, by rejection)."""
        n = _positive_int(n)
        bits = (n - 1).bit_length()
        while True:
            words = self.generator.integers(0, 1 << 32, size=max(1, -(-bits // 32)), dtype=np.uint64)
            v = 0
            for w in words:
                v = (v << 32) | int(w)
            v &= (1 << bits) - 1
            if v < n:
                return v


def _positive_int(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or int(n) < 1:
        raise ParameterError(f"randbelow needs a positive integer bound. Got {n!r} instead.")
    return int(n)


def resolve_noise(random_state=None) -> NoiseSource:
    """Map a ``random_state`` argument to a noise source.

    ``None`` gives :class:`SecureNoise`; an int or a ``numpy.random.Generator``
    gives :class:`SeededNoise`; a :class:`NoiseSource` is returned unchanged.
    """
    if random_state is None:
        return SecureNoise()
    if isinstance(random_state, NoiseSource):
        return random_state
    if isinstance(random_state, (np.random.Generator, int, np.integer)) and not isinstance(random_state, bool):
        return SeededNoise(random_state)
    raise ParameterError(
        "The 'random_state' parameter must be None (secure noise), an int seed or a numpy Generator. "
        f"Got {random_state!r} instead."
    )
