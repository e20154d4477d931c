"""Fast calibration of the bundled networks, parallel nodes, progress, and the inference limit.

Run from the repository root: python3 examples/network_speed.py [NAME]  (default win95pts)

* calibrates a bundled bnlearn network with every node protected, a progress bar on stderr
  (it appears only if the calibration runs for more than 2 seconds);
* repeats it with the nodes searched in two joblib processes: identical results;
* shows what the exact-inference limit does: with a small ``max_table_entries`` the large
  candidate quilts are skipped (still a valid calibration, noted in the result), and with a
  tiny one calibrate refuses with one sentence naming the limit and the option to change.
"""

import sys
import time

import puffgm
from puffgm.exceptions import InferenceLimitError


def main(name="win95pts"):
    theta = puffgm.load_prior_class(f"example:{name}")
    t0 = time.perf_counter()
    res = puffgm.calibrate(theta, epsilon=1.0, progress=True)
    t1 = time.perf_counter()
    print(res.explain())
    print(f"{name}: {len(theta.nodes)} nodes calibrated in {t1 - t0:.2f} s "
          f"({res.details['influence_evaluations']} max-influence evaluations)")

    par = puffgm.calibrate(theta, epsilon=1.0, n_jobs=2, progress=False)
    print("two processes give identical results:", par.per_node == res.per_node and par.sigma_max == res.sigma_max)

    small = puffgm.calibrate(theta, epsilon=1.0, max_table_entries=20_000, progress=False)
    print(f"max_table_entries=20000: sigma_max {small.sigma_max:.4f} (>= {res.sigma_max:.4f}), "
          f"{small.details['skipped_quilts']} candidate quilt(s) skipped")
    try:
        puffgm.calibrate(theta, epsilon=1.0, max_table_entries=4, progress=False)
    except InferenceLimitError as exc:
        print("refused:", exc)


if __name__ == "__main__":
    main(*sys.argv[1:2])
