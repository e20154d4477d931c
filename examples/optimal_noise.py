"""The least-error additive noise for one count query on `child`, beside the Laplace calibrations.

The query counts the nodes of the bundled `child` network in their first state; every node's
value is a secret.  From the exact conditional laws of the count given each secret
(a junction tree with a partial-sum axis), three calibrations:

* the optimal Laplace scale b*: the smallest b whose exact Pufferfish loss is <= epsilon
  (its expected absolute error is b*);
* the optimal noise: a linear program over noise laws on the integers, audited exactly;
* group DP, for scale.

Then one release with the optimal noise (OS cryptographic randomness, exact inverse CDF).

Run:  python3 examples/optimal_noise.py        (a few seconds)
"""

from puffgm.core.laws import QueryLaws
from puffgm.core.query import SumQuery
from puffgm.mechanisms.optimal_noise import optimal_noise_of, release_optimal_noise
from puffgm.networks.priors import load_prior_class
from puffgm.networks.query_laws import group_sensitivity, network_query_laws
from puffgm.networks.secrets import SecretSpec

EPSILON = 1.0

pc = load_prior_class("example:child")
query = SumQuery({"count": 0}).bind(pc.nodes, pc.states)
laws = QueryLaws(query=query, laws=tuple(network_query_laws(pc, query, SecretSpec())), n_priors=len(pc.priors),
                 group_sensitivity=group_sensitivity(pc, query), prior_name="child")

result = optimal_noise_of(laws, epsilon=EPSILON)
print(result.explain())
print()
print(f"{'calibration':<18}{'expected |error|':>18}")
for name, err in [("group DP", laws.group_sensitivity / EPSILON / query.unit),
                  ("optimal Laplace", result.laplace_scale),
                  ("optimal noise", result.expected_abs_error)]:
    print(f"{name:<18}{err:>18.4f}")

noise = result.noise
top = sorted(zip(noise["probabilities"], noise["values"], strict=True), reverse=True)[:5]
print("\nlargest noise probabilities:", ", ".join(f"P(Z={k}) = {p:.3f}" for p, k in top))
print(f"tails beyond +-{result.half_width}: ratio r = {noise['tail_ratio']:.4f}, masses {noise['tail_masses']}")

true_count = 12                        # the exact count on the data (a value of the query)
release = release_optimal_noise(true_count, result)
print(f"\nreleased {release.value:g}")
print(release.explain())
