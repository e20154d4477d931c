"""Linear-Gaussian Bayesian network with region secrets: calibrate, curve, translate.

The prior is examples/gaussian_sensors.json (five sensors, a linear-Gaussian network truncated to
[-3, 3]); the secrets are "sensor v reads in [r, r + 0.5]" against any disjoint region.  The same
network is also built from a pgmpy LinearGaussianBayesianNetwork.  See docs/gaussian.md.

    python examples/gaussian_network.py
"""

import os

import puffgm
from puffgm.api import influence_curve
from puffgm.gaussian.networks import LinearGaussianPrior, load_linear_gaussian
from puffgm.mechanisms.translation import translate_curve

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = os.path.join(HERE, "gaussian_sensors.json")


def main():
    prior = load_linear_gaussian(SPEC)
    print(prior, "\njoint covariance:\n", prior.cov.round(3))

    # Markov Quilt Mechanism for the sum of the readings: one sensor moving anywhere in [-3, 3]
    # changes the sum by at most 6, so the query is 6-Lipschitz
    res = puffgm.calibrate(SPEC, epsilon=40.0, lipschitz=6.0)
    print("\n" + res.explain())

    # a(b)-influence curve (certified) and Theorem 6 translation of a DP mechanism
    curve = influence_curve(prior)
    print("\n" + curve.explain())
    t = translate_curve(curve, epsilon=30.0)
    print("\n" + t.explain())

    # the same network from pgmpy (imported lazily, only here)
    model = prior.to_pgmpy()
    again = LinearGaussianPrior.from_pgmpy(model, bounds=(-3.0, 3.0), delta=0.5)
    print("\nfrom pgmpy: same joint covariance:", bool(abs(again.cov - prior.cov).max() < 1e-12))


if __name__ == "__main__":
    main()
