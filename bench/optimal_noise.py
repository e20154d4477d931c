"""Benchmark: optimal additive noise against the Laplace calibrations, on the bundled networks.

Prints one JSON object.  For every network, the count query of each node's first state
(``{"count": 0}``), every node protected, at ``--epsilon``, the expected absolute error
(query units) of:

* **group DP**: Laplace at group sensitivity / epsilon (E|Lap(b)| = b);
* **Wasserstein**: Laplace at W / epsilon (Song, Wang and Chaudhuri, Algorithm 1);
* **optimal Laplace**: the smallest Laplace scale with exact loss <= epsilon;
* **optimal noise**: :func:`puffgm.mechanisms.optimal_noise.optimal_noise_of`, with its
  audited loss, K, r and the number of linear programs solved;

with the time of each stage (``laws``: exact conditional laws by the junction tree;
``optimal_laplace``: bisection; ``optimal_noise``: the program with its search over r and
the audit, the optimal Laplace scale given).  One interpreter for all networks; the first
network also pays for importing scipy's solver.

``--plot PATH`` also draws one optimal noise law (``--plot-network``, default child) next to
the Laplace density at the optimal scale (needs matplotlib, the ``plot`` extra).

Usage: python bench/optimal_noise.py [--epsilon 1] [--plot docs/results/optimal_noise.png] [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

from puffgm.core.laws import QueryLaws
from puffgm.core.query import SumQuery
from puffgm.mechanisms.optimal_noise import OptimalNoiseOptions, optimal_noise_of
from puffgm.mechanisms.query import optimal_laplace_of, wasserstein_of
from puffgm.networks.priors import load_prior_class
from puffgm.networks.query_laws import group_sensitivity, network_query_laws
from puffgm.networks.secrets import SecretSpec

NETWORKS = ["asia", "child", "alarm", "insurance", "hailfinder", "win95pts", "hepar2"]


def count_laws(name: str) -> QueryLaws:
    pc = load_prior_class(f"example:{name}")
    q = SumQuery({"count": 0}).bind(pc.nodes, pc.states)
    return QueryLaws(query=q, laws=tuple(network_query_laws(pc, q, SecretSpec())), n_priors=len(pc.priors),
                     group_sensitivity=group_sensitivity(pc, q), prior_name=name)


def machine() -> dict:
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu": cpu, "python": platform.python_version(),
            "note": "2 cores shared with other jobs: times are wall-clock and indicative"}


def run(name: str, epsilon: float) -> dict:
    t0 = time.perf_counter()
    laws = count_laws(name)
    t1 = time.perf_counter()
    unit = laws.query.unit
    w, _, _ = wasserstein_of(laws)
    t2 = time.perf_counter()
    b = optimal_laplace_of(laws, epsilon=epsilon, upper=w / epsilon).scale
    t3 = time.perf_counter()
    res = optimal_noise_of(laws, epsilon=epsilon, options=OptimalNoiseOptions(laplace_scale=b))
    t4 = time.perf_counter()
    group = laws.group_sensitivity / epsilon / unit
    return {
        "nodes": len(laws.query.nodes), "total": laws.query.total, "pairs": len(laws.stacked()[1]),
        "expected_abs_error": {"group_dp": group, "wasserstein": w / epsilon / unit,
                               "optimal_laplace": b / unit, "optimal_noise": res.expected_abs_error},
        "gain_of_optimal_noise": {"over_group_dp": group / res.expected_abs_error,
                                  "over_optimal_laplace": b / unit / res.expected_abs_error},
        "optimal_noise": {"loss": res.loss, "half_width": res.half_width, "tail_ratio": res.tail_ratio,
                          "lp_solves": res.solves, "expected_square_error": res.expected_square_error,
                          "status": res.status},
        "seconds": {"laws": t1 - t0, "wasserstein": t2 - t1, "optimal_laplace": t3 - t2,
                    "optimal_noise": t4 - t3},
    }


def plot(name: str, epsilon: float, path: str) -> None:
    """One optimal noise law beside the Laplace density at the optimal scale (docs/results/optimal_noise.png)."""
    from puffgm.experiments.query_calibration import plot_noise_law

    res = optimal_noise_of(count_laws(name), epsilon=epsilon)
    plot_noise_law(res, f"{name}, count of first states, epsilon {epsilon:g}", path)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=NETWORKS)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--plot", default=None, help="also save the plot of one law to this path")
    ap.add_argument("--plot-network", default="child")
    args = ap.parse_args(argv)
    out = {"epsilon": args.epsilon, "query": {"count": 0}, "machine": machine(), "networks": {}}
    for name in args.names:
        out["networks"][name] = run(name, args.epsilon)
    if args.plot:
        plot(args.plot_network, args.epsilon, args.plot)
        out["plot"] = args.plot
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
