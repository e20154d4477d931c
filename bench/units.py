"""Benchmark of releases on many units (issue 43); prints JSON timings.

Target (2-core machine): a panel of 10,000 units of length 100 (a binary chain class, a long
data frame of 10^6 rows) releases its aggregate histogram in seconds beyond the calibration of
one unit, and the per-unit histograms (``each=True``) likewise; calibration never loops over
units that share a length and class (one calibration per distinct length: the JSON reports how
many).  A second panel mixes lengths 60..100 (five distinct lengths: five MQM calibrations).

The release uses OpenDP's secure sampler (the default).

Run: python3 bench/units.py (from the repository root, puffgm importable)
"""

import json
import time

import numpy as np
import pandas as pd

import puffgm


def panel(n_units: int, lengths, seed: int = 0) -> pd.DataFrame:
    """A long frame (unit, t, state) of n_units binary traces, unit j of length lengths[j % len(lengths)]."""
    rng = np.random.default_rng(seed)
    P = np.array([[0.9, 0.1], [0.2, 0.8]])
    units, times, states = [], [], []
    for j in range(n_units):
        T = lengths[j % len(lengths)]
        x = np.empty(T, dtype=int)
        x[0] = rng.integers(2)
        u = rng.random(T)
        for t in range(1, T):
            x[t] = int(u[t] < P[x[t - 1], 1])
        units.append(np.full(T, j))
        times.append(np.arange(1, T + 1))
        states.append(x)
    return pd.DataFrame({"unit": np.concatenate(units), "t": np.concatenate(times), "state": np.concatenate(states)})


def timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def main():
    from puffgm.core.noise import resolve_noise

    resolve_noise(None).laplace(0.0, 1.0)  # loads OpenDP once (seconds), outside the timings
    cc = puffgm.ChainPriorClass.from_matrices([[0.9, 0.1], [0.2, 0.8]], "stationary", 100, states=[0, 1])
    res = {}
    t_cal, cal = timed(lambda: puffgm.calibrate_workload(cc, {"histogram": {}}, epsilon=1.0))
    res["calibration_one_unit_T100_seconds"] = t_cal
    frame = panel(10_000, [100])
    res["rows"] = len(frame)
    t_agg, rel = timed(lambda: puffgm.release(cal, frame, unit="unit", time="t", relative=True))
    res["aggregate_10000_units_T100"] = {"seconds": t_agg, "calibrations": rel.details["calibrations"],
                                         "scales": list(rel.scales), "secure": rel.secure}
    t_each, rel = timed(lambda: puffgm.release(cal, frame, unit="unit", time="t", each=True))
    res["each_10000_units_T100"] = {"seconds": t_each, "releases": len(rel.releases),
                                    "calibrations": rel.details["calibrations"]}
    t_mqm_cal, mqm = timed(lambda: puffgm.calibrate(cc, epsilon=1.0))
    t_mqm, rel = timed(lambda: puffgm.release(mqm, frame, unit="unit", time="t", query={"histogram": {}}))
    res["mqm_aggregate_10000_units_T100"] = {"calibration_seconds": t_mqm_cal, "seconds": t_mqm,
                                             "scales": list(rel.scales)}
    mixed = panel(10_000, [60, 70, 80, 90, 100], seed=1)
    t_mix, rel = timed(lambda: puffgm.release(mqm, mixed, unit="unit", time="t", query={"histogram": {}}))
    res["mqm_aggregate_10000_units_T60_to_100"] = {"seconds_including_4_more_calibrations": t_mix,
                                                   "calibrations": rel.details["calibrations"],
                                                   "lengths": rel.details["lengths"], "scales": list(rel.scales)}
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
