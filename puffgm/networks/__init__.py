"""Bayesian-network priors: loading and validation, quilts, max-influence, calibration, curves.

The data flow, one module per stage::

    priors (load, validate)  ->  secrets  ->  quilts (d-separation)  ->  inference, influence
        ->  quilt_scores (candidates, active quilts), quilt_bounds (far sets)
        ->  quilt_certify (cutting planes)  ->  quilt_search (branch and bound)  ->  calibration  ->  curve

(Song, Wang and Chaudhuri, "Pufferfish Privacy Mechanisms for Correlated Data",
SIGMOD 2017, arXiv:1603.03977, sections 4.1-4.3.)
"""

__all__ = ["calibration", "curve", "inference", "influence", "kind", "priors", "quilt_bounds", "quilt_certify",
           "quilt_scores", "quilt_search", "quilts", "secrets"]
