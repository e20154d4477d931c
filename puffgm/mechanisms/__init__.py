"""Mechanisms: how a calibrated noise scale becomes a release.

* :mod:`puffgm.mechanisms.laplace` — the Markov Quilt Mechanism's Laplace
  release (Song, Wang and Chaudhuri, Algorithm 2 and Theorem 4.3).

Every mechanism draws its noise from :mod:`puffgm.noise` (OpenDP's secure,
floating-point-safe samplers by default; a seeded generator only on request,
recorded as ``secure=False``) and can charge an explicit
:class:`puffgm.accounting.PrivacyAccountant` before it releases anything.
"""
