"""Benchmark of the chain calibrations; prints JSON timings.

Targets (2-core machine): a 51-state chain with T = 10^6 and a stationary start
by MQMExact < 3 s and by MQMApprox < 10 ms; the binary grid of the paper's
synthetic experiment (p0, p1 in 0.10..0.90 step 0.01, T = 100, every initial
distribution) by MQMExact < 2 s in total.  A fixed non-stationary start (point mass)
with T = 10^6 is timed against the stationary start in the same run,
and the old every-node search of a fixed-start binary chain against the mixing bound, which also
answers at T = 10^15 and 10^18.

The 51-state matrix is fitted (tau = 1e-5 smoothing) to a discretised real
series: pmdarima's half-hourly Taylor electricity demand if pmdarima is
installed, else statsmodels' bundled El Nino sea-surface temperatures.

Run: python3 bench/bench_chains.py (from the repository root, puffgm importable)
"""

import json
import sys
import time

import numpy as np

from puffgm import calibrate_many
from puffgm.chains import ChainPriorClass, MQMApprox, MQMExact
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
    t, r = timed(lambda: MQMExact(cc).calibrate(epsilon=1.0), repeat=3)  # best of 3 (first run warms caches)
    res["k51_T1e6_stationary_exact"] = {"seconds": t, "sigma_max": r.sigma_max, "l": r.details["l"],
                                        "quilt": list(r.worst.quilt), "target_seconds": 3.0}
    t, ra = timed(lambda: MQMApprox(cc).calibrate(epsilon=1.0), repeat=5)
    res["k51_T1e6_stationary_approx"] = {"seconds": t, "sigma_max": ra.sigma_max, "l": ra.details["l"],
                                         "pi_min": ra.details["pi_min"], "g": ra.details["g"],
                                         "target_seconds": 0.01}
    # fixed non-stationary start, T = 10^6: exact early nodes + certified mixing bound, timed against
    # the stationary start in the same run (same chain, same machine state)
    P = cc.members[0].transition
    k = P.shape[0]
    start = np.zeros(k)
    start[0] = 1.0  # a point mass on the lowest demand level: far from stationarity
    fixed = ChainPriorClass.from_matrices(P, start, 10**6, states=list(range(k)))
    t_stat, r_stat = timed(lambda: MQMExact(cc).calibrate(epsilon=1.0), repeat=1)
    t_fix, r_fix = timed(lambda: MQMExact(fixed).calibrate(epsilon=1.0), repeat=1)
    d = r_fix.details
    res["k51_T1e6_fixed_start_exact"] = {
        "seconds": t_fix, "stationary_seconds_same_run": t_stat, "ratio_to_stationary": t_fix / t_stat,
        "sigma_max": r_fix.sigma_max, "stationary_sigma_max": r_stat.sigma_max, "worst_node": r_fix.worst.node,
        "exact": d.get("exact"), "sigma_lower_bound": d.get("sigma_lower_bound"),
        "early_nodes_searched": d.get("early_nodes_searched"), "mixing_error": d.get("mixing_error"),
        "l": d["l"]}
    pi = cc.members[0].stationary
    for name, q in (("uniform", np.ones(k) / k), ("near_stationary", 0.99 * pi + 0.01 * np.eye(k)[k - 1])):
        t, rq = timed(lambda q=q: MQMExact(ChainPriorClass.from_matrices(P, q, 10**6, states=list(range(k))))
                      .calibrate(epsilon=1.0), repeat=1)
        dq = rq.details
        res[f"k51_T1e6_fixed_start_{name}_exact"] = {
            "seconds": t, "ratio_to_stationary": t / t_stat, "sigma_max": rq.sigma_max,
            "exact": dq.get("exact"), "sigma_lower_bound": dq.get("sigma_lower_bound"),
            "early_nodes_searched": dq.get("early_nodes_searched"), "worst_node": rq.worst.node}
    # binary running example (theta1, start X1 = 0): the old every-node search grows with T,
    # the mixing bound does not
    P2 = [[0.9, 0.1], [0.4, 0.6]]
    t_old, r_old = timed(lambda: MQMExact(ChainPriorClass.from_matrices(P2, [1, 0], 10**4), per_node=False,
                                          mixing=False).calibrate(epsilon=1.0), repeat=1)
    t_new4, _ = timed(lambda: MQMExact(ChainPriorClass.from_matrices(P2, [1, 0], 10**4)).calibrate(epsilon=1.0))
    t_new6, r_new = timed(lambda: MQMExact(ChainPriorClass.from_matrices(P2, [1, 0], 10**6)).calibrate(epsilon=1.0))
    res["binary_fixed_start"] = {
        "every_node_T1e4_seconds": t_old, "mixing_T1e4_seconds": t_new4, "mixing_T1e6_seconds": t_new6,
        "sigma_every_node_T1e4": r_old.sigma_max, "sigma_mixing_T1e6": r_new.sigma_max,
        "early_nodes_searched_T1e6": r_new.details.get("early_nodes_searched")}
    # the same chain at T = 10^15 and 10^18: the drift of Omega bounded by 2 d_H(pi, pi*), not (T - i) eta
    for e in (15, 18):
        t, rl = timed(lambda e=e: MQMExact(ChainPriorClass.from_matrices(P2, [1, 0], 10**e)).calibrate(epsilon=1.0))
        res[f"binary_fixed_start_T1e{e}"] = {
            "seconds": t, "sigma_max": rl.sigma_max, "exact": rl.details.get("exact"),
            "early_nodes_searched": rl.details.get("early_nodes_searched"),
            "mixing_error": rl.details.get("mixing_error")}
    grid = np.round(np.arange(0.10, 0.9001, 0.01), 2)
    classes = [ChainPriorClass.from_matrices([[p0, 1 - p0], [1 - p1, p1]], "any", 100) for p0 in grid for p1 in grid]
    for jobs in (1, 2):
        t0 = time.perf_counter()
        out = calibrate_many(classes, epsilon=1.0, method="exact", n_jobs=jobs, per_node=False)
        t = time.perf_counter() - t0
        res[f"binary_grid_T100_any_exact_{jobs}core"] = {
            "seconds_total": t, "chains": len(classes), "seconds_per_chain": t / len(classes),
            "largest_sigma": max(r.sigma_max for r in out), "n_jobs": jobs, "target_seconds": 2.0}
    json.dump(res, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
