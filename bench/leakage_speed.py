"""Benchmark of the temporal privacy leakage (puffgm.chains.leakage): L(a) for 100 states, T = 10^5 steps.

Run from the repository root: ``python bench/leakage_speed.py [--states 100] [--length 100000] [--repeat 3]``.
Prints one JSON object: the machine, then for a random k-state chain (seeded Dirichlet rows)

* ``leakage_function``: building L_M (the sorted prefixes of all k^2 ordered pairs and their Pareto front,
  once per matrix), one evaluation L(a), and the two together (a first L(a) from scratch), in milliseconds;
* ``recursion``: BPL, FPL and TPL over T steps with ``temporal_leakage`` (both leakage functions built,
  the time reversal included), for a constant budget (the runs of equal budgets stop at the floating-point
  fixed point) and for per-step budgets drawn in [0.05, 0.5] (every step evaluated), in seconds;
* ``suprema`` and ``allocate_budget`` (constant scheme, T steps), in milliseconds / seconds.

Times are the best of ``--repeat`` runs.
"""

import argparse
import json
import os
import platform
import time

import numpy as np


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--states", type=int, default=100)
    ap.add_argument("--length", type=int, default=10**5)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from puffgm.chains.leakage import allocate_budget, leakage_function, leakage_supremum, temporal_leakage

    k, T, rep = args.states, args.length, args.repeat
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.full(k, 0.5), size=k)
    out = {"machine": {"system": f"{platform.system()} {platform.machine()}", "cores": os.cpu_count(),
                       "python": platform.python_version(), "numpy": np.__version__,
                       "note": "shared with other jobs: times are indicative"},
           "states": k, "length": T}
    t_build, L = best(lambda: leakage_function(P), rep)
    n_eval = 2000
    t_eval, _ = best(lambda: [L(a) for a in np.linspace(0.01, 20.0, n_eval)], rep)
    out["leakage_function"] = {"build_ms": 1e3 * t_build, "evaluate_ms": 1e3 * t_eval / n_eval,
                               "first_evaluation_ms": 1e3 * (t_build + t_eval / n_eval), "front_size": int(L.x.size)}
    t_const, r = best(lambda: temporal_leakage(P, epsilon=0.1, length=T), rep)
    budgets = rng.uniform(0.05, 0.5, T)
    t_var, rv = best(lambda: temporal_leakage(P, epsilons=budgets), rep)
    out["recursion"] = {"constant_budget_s": t_const, "per_step_budgets_s": t_var, "max_tpl_constant": r.max_tpl,
                        "max_tpl_per_step": rv.max_tpl}
    t_sup, s = best(lambda: leakage_supremum(P, epsilon=0.1), rep)
    t_alloc, a = best(lambda: allocate_budget(P, epsilon=1.0, length=T), 1)
    out["suprema"] = {"seconds": t_sup, "sup_tpl": s.sup_tpl}
    out["allocate_budget"] = {"seconds": t_alloc, "epsilon_step": a.epsilon_step, "max_tpl": a.leakage.max_tpl}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
