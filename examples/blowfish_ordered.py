"""Range queries under G^{d,theta}: the shape of Figure 2 of He, Machanavajjhala and Ding (2014).

Data: the latitudes of the US airports in vega_datasets' bundled ``airports``
table (no download), restricted to 24..50 degrees north and discretised to
0.025 degrees, an ordered domain of k = 1040 values (the paper uses Twitter
latitudes and Adult capital-loss).

For theta = 1 .. k (ranks of 0.025 degrees) we compute the *exact* mean squared
error of a range query, averaged over all k(k+1)/2 ranges, at epsilon = 1, of

* the ordered hierarchical mechanism (Theorem 7.2; fan-out and budget split chosen
  for the smallest exact error),
* the ordered mechanism with Laplace noise at S = theta (section 7.2's first paragraph),
* the hierarchical mechanism of differential privacy (best fan-out) and
* a plain Laplace histogram (differential privacy).

These errors do not depend on the data (linear estimators, additive noise).
On the data we also measure, by seeded simulation, the error of the ordered
mechanism with constrained inference (isotonic regression) at theta = 1 and
check the exact formula of the ordered hierarchical mechanism at one theta.
Seeded noise: NOT for production.  Output: docs/blowfish/ordered.png and one JSON line.

Run: python examples/blowfish_ordered.py
"""

import json
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from puffgm.blowfish import Domain, Policy, line_graph  # noqa: E402
from puffgm.blowfish.ordered import (  # noqa: E402
    hierarchical_plan,
    laplace_histogram_plan,
    ordered_hierarchical_plan,
    ordered_mechanism,
    ordered_plan,
)
from puffgm.core.noise import SeededNoise  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parents[1] / "docs" / "blowfish" / "ordered.png"


def load_latitudes(lo=24.0, hi=50.0, step=0.025):
    from vega_datasets import local_data

    lat = local_data.airports()["latitude"].to_numpy()
    lat = lat[(lat >= lo) & (lat < hi)]
    k = int(round((hi - lo) / step))
    return np.minimum(((lat - lo) / step).astype(int), k - 1), k


def empirical_range_mse(release_fn, truth, reps, rng, n_ranges=4000):
    k = len(truth)
    a = rng.integers(0, k, size=n_ranges)
    b = rng.integers(0, k, size=n_ranges)
    lo, hi = np.minimum(a, b), np.maximum(a, b)

    def ranges(c):
        c0 = np.concatenate([[0.0], c])
        return c0[hi + 1] - c0[lo]

    true_r = ranges(truth)
    return float(np.mean([np.mean((ranges(release_fn()) - true_r) ** 2) for _ in range(reps)]))


def main(epsilon=1.0, plot=True, reps=40):
    t0 = time.perf_counter()
    data, k = load_latitudes()
    thetas = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, k]
    oh, om = [], []
    for th in thetas:
        p = ordered_hierarchical_plan(k, th, epsilon=epsilon)
        oh.append((p.range_mse(), p.details["fanout"], p.details["epsilon_s"]))
        om.append(ordered_plan(k, epsilon=epsilon, sensitivity=th).range_mse())
    hier = hierarchical_plan(k, epsilon=epsilon)
    hist = laplace_histogram_plan(k, epsilon=epsilon)
    t_exact = time.perf_counter() - t0
    # simulations on the data
    rng = np.random.default_rng(0)
    truth = np.cumsum(np.bincount(data, minlength=k)).astype(float)
    pol1 = Policy(line_graph(Domain.ordered(k)))
    sim = {}
    for inference in (False, True):
        fn = lambda inf=inference: ordered_mechanism(data, pol1, epsilon=epsilon, inference=inf, random_state=rng).value  # noqa: E731
        sim[f"ordered theta=1 inference={inference}"] = empirical_range_mse(fn, truth, reps, rng)
    p16 = ordered_hierarchical_plan(k, 16, epsilon=epsilon)
    noise = SeededNoise(rng)
    counts = np.bincount(data, minlength=k)
    sim["ordered hierarchical theta=16 (no inference)"] = empirical_range_mse(
        lambda: p16.noisy_cumulative(counts, noise), truth, reps, rng)
    elapsed = time.perf_counter() - t0
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.5))
        ax.plot(thetas, [o[0] for o in oh], "o-", label="ordered hierarchical (Blowfish, Thm 7.2)")
        ax.plot(thetas, om, "s--", label="ordered mechanism, Lap(theta/eps) (Blowfish)")
        ax.axhline(hier.range_mse(), color="k", ls="-.", label=f"hierarchical (DP), fan-out {hier.details['fanout']}")
        ax.axhline(hist.range_mse(), color="grey", ls=":", label="Laplace histogram (DP)")
        ax.plot([1], [sim["ordered theta=1 inference=True"]], "r*", markersize=10,
                label="ordered + isotonic inference, theta=1 (simulated)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("theta (distance threshold, units of 0.025 degrees latitude)")
        ax.set_ylabel("mean squared error of a range query (exact)")
        ax.set_title(f"Range queries under G^(d,theta): US airport latitudes, k={k}, epsilon={epsilon:g}", fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(OUT, dpi=120)
    out = {"k": k, "n": int(len(data)), "epsilon": epsilon, "thetas": thetas,
           "ordered_hierarchical_range_mse": [round(o[0], 2) for o in oh],
           "ordered_hierarchical_fanout": [o[1] for o in oh],
           "ordered_hierarchical_epsilon_s": [round(o[2], 3) for o in oh],
           "ordered_mechanism_range_mse": [round(v, 2) for v in om],
           "hierarchical_dp_range_mse": round(hier.range_mse(), 2), "hierarchical_dp_fanout": hier.details["fanout"],
           "laplace_histogram_range_mse": round(hist.range_mse(), 2),
           "exact_ordered_hierarchical_theta16": round(p16.range_mse(), 2),
           "simulated": {kk: round(v, 2) for kk, v in sim.items()},
           "seconds_exact": round(t_exact, 1), "seconds_total": round(elapsed, 1)}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
