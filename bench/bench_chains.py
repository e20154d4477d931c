"""Benchmark of the chain calibrations; prints JSON timings.

Targets (2-core machine): a 51-state chain with T = 10^6 and a stationary start
by MQMExact < 3 s and by MQMApprox < 10 ms; the binary grid of the paper's
synthetic experiment (p0, p1 in 0.10..0.90 step 0.01, T = 100, every initial
distribution) by MQMExact < 2 s in total.

The 51-state matrix is fitted (tau = 1e-5 smoothing) to a discretised real
series: pmdarima's half-hourly Taylor electricity demand if pmdarima is
installed, else statsmodels' bundled El Nino sea-surface temperatures.

Run: /tmp/venv/bin/python bench/bench_chains.py
"""

import json
import sys
import time

import numpy as np

from puffgm.chains import ChainPriorClass, MQMApprox, MQMExact, calibrate_many
from puffgm.chains.data import discretise, load_real_series


def fitted_chain(n_states=51, length=10**6, initial="stationary"):
    x, source = load_real_series()
    s = discretise(x, n_states)
    cc = ChainPriorClass.fit(list(s), length=length, states=list(range(n_states)), initial=initial)
    return cc, source


def timed(f, repeat=3):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def main():
    res = {}
    cc, source = fitted_chain()
    res["real_data_source"] = source
    t, r = timed(lambda: MQMExact(cc).calibrate(1.0), repeat=3)  # best of 3 (first run warms caches)
    res["k51_T1e6_stationary_exact"] = {"seconds": t, "sigma_max": r.sigma_max, "l": r.details["l"],
                                        "quilt": list(r.worst.quilt), "target_seconds": 3.0}
    t, ra = timed(lambda: MQMApprox(cc).calibrate(1.0), repeat=5)
    res["k51_T1e6_stationary_approx"] = {"seconds": t, "sigma_max": ra.sigma_max, "l": ra.details["l"],
                                         "pi_min": ra.details["pi_min"], "g": ra.details["g"],
                                         "target_seconds": 0.01}
    grid = np.round(np.arange(0.10, 0.9001, 0.01), 2)
    classes = [ChainPriorClass.from_matrices([[p0, 1 - p0], [1 - p1, p1]], "any", 100) for p0 in grid for p1 in grid]
    for jobs in (1, 2):
        t0 = time.perf_counter()
        out = calibrate_many(classes, 1.0, method="exact", n_jobs=jobs, per_node=False)
        t = time.perf_counter() - t0
        res[f"binary_grid_T100_any_exact_{jobs}core"] = {
            "seconds_total": t, "chains": len(classes), "seconds_per_chain": t / len(classes),
            "largest_sigma": max(r.sigma_max for r in out), "n_jobs": jobs, "target_seconds": 2.0}
    json.dump(res, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
