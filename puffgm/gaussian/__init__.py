"""Gaussian priors with region secrets: certified leakage, linear-Gaussian networks, MQM and curves.

* :mod:`puffgm.gaussian.leakage` -- certified upper bounds of the leakage of region secrets
  under truncated multivariate Gaussians (any high-influence set size b);
* :mod:`puffgm.gaussian.bivariate`, :mod:`puffgm.gaussian.trivariate` -- certified engines for
  b = 2 and b = 3 when other high-influence coordinates can be pushed out of their box;
* :mod:`puffgm.gaussian.boxprob` -- certified two-sided bounds of b-dimensional Gaussian box
  probabilities in log space;
* :mod:`puffgm.gaussian.marginal` -- certified bounds of the truncated marginal of one coordinate
  (log-concavity and box probabilities), used where the Bonferroni bound of the marginal fails;
* :mod:`puffgm.gaussian.monotone` -- certified leakage for any b when the conditional precision is
  sign-balanced (Markov chains, trees), and certified lower bounds by corner search;
* :mod:`puffgm.gaussian.networks` -- linear-Gaussian Bayesian networks (JSON format, pgmpy
  ``LinearGaussianBayesianNetwork``), Markov-quilt calibration, a(b) curves.

See docs/gaussian.md.
"""

__all__ = ["leakage", "networks"]
