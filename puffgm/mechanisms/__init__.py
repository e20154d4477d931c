r"""Mechanisms: how a calibrated noise scale becomes a release.

* :mod:`puffgm.mechanisms.laplace` — the Markov Quilt Mechanism's Laplace
  release (Song, Wang and Chaudhuri, Algorithm 2 and Theorem 4.3).
* :mod:`puffgm.mechanisms.pufferfish` — composable Pufferfish versions of DP
  mechanisms calibrated from an a(b)-influence curve (Bai et al., Theorems 6
  and 7): Laplace, the exponential mechanism, noisy top-K, and a wrapper for
  any per-entry :math:`\epsilon_{\mathrm{DP}}`-DP mechanism.
* :mod:`puffgm.mechanisms.translation` — :math:`\epsilon_{\mathrm{puffer}} \leftrightarrow \epsilon_{\mathrm{DP}}`
  along an a(b)-influence curve (Bai et al., Theorem 6).
* :mod:`puffgm.mechanisms.optimal_noise` — the least-error additive noise for one
  sum query, by a linear program under the exact Pufferfish constraints of its
  conditional laws, audited exactly (the analogue of Geng and Viswanath's
  staircase mechanism).

Every release is an immutable record derived from
:class:`puffgm.core.release.Release` (``MarkovQuiltRelease``,
``PufferfishRelease``).

Every mechanism draws its noise from :mod:`puffgm.core.noise` (OpenDP's secure,
floating-point-safe samplers by default; a seeded generator only on request,
recorded as ``secure=False``) and can charge an explicit
:class:`puffgm.accounting.PrivacyAccountant` before it releases anything.
"""

__all__ = ["laplace", "pufferfish", "translation", "optimal_noise"]
