"""Gaussian priors with region secrets: certified leakage, linear-Gaussian networks, MQM and curves.

* :mod:`puffgm.gaussian.leakage` -- certified upper bounds of the leakage of region secrets
  under truncated multivariate Gaussians (any high-influence set size b), the model that runs
  every engine below;
* :mod:`puffgm.gaussian.bivariate`, :mod:`puffgm.gaussian.trivariate` -- certified engines for
  b = 2 and b = 3 when other high-influence coordinates can be pushed out of their box;
* :mod:`puffgm.gaussian.monotone` -- certified leakage for any b when the conditional precision is
  sign-balanced (Markov chains, trees), and certified lower bounds by corner search;
* :mod:`puffgm.gaussian.multivariate` -- the cell engine: certified leakage for any b without a
  sign condition, by branch and bound over the natural parameters;
* :mod:`puffgm.gaussian.boxprob` -- certified two-sided bounds of b-dimensional Gaussian box
  probabilities in log space;
* :mod:`puffgm.gaussian.marginal` -- certified bounds of the truncated marginal of one coordinate
  (log-concavity and box probabilities), used where the Bonferroni bound of the marginal fails;
* :mod:`puffgm.gaussian.primitives`, :mod:`puffgm.gaussian.zonotope` -- the shared building blocks:
  normal interval probabilities, Bonferroni sums, the certified sweep over region positions, the
  Gaussian conditionals of a split and the zonotope of their natural parameters;
* :mod:`puffgm.gaussian.closed_forms` -- a(b)-influence curves of truncated Gaussian priors
  (Theorem 9, Figure 2b);
* :mod:`puffgm.gaussian.networks` -- linear-Gaussian Bayesian networks (JSON format, pgmpy
  ``LinearGaussianBayesianNetwork``), Markov-quilt calibration, a(b) curves.

Layering: primitives and zonotope import no other module of the package; boxprob and marginal
build on them; the engines (bivariate, trivariate, monotone, multivariate) import only those;
leakage imports the engines; closed_forms and networks import leakage.

See docs/gaussian.md.
"""

__all__ = [
    "bivariate",
    "boxprob",
    "closed_forms",
    "leakage",
    "marginal",
    "monotone",
    "multivariate",
    "networks",
    "primitives",
    "trivariate",
    "zonotope",
]
