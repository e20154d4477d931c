"""Benchmark: full MQM calibration of bundled bnlearn networks (every node protected).

Prints one JSON object.  Each network runs in a fresh interpreter so the figure
includes parsing the bundled file and every import, as a user of
``puffgm calibrate example:NAME`` experiences it.

Targets (2-core machine): alarm < 5 s; hailfinder and win95pts < 60 s each.

Usage: python3 bench/bench_networks.py [--epsilon 1] [NAME ...]
"""

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from puffgm.calibration import calibrate
from puffgm.priors import load_prior_class
t1 = time.perf_counter()
pc = load_prior_class("example:" + sys.argv[1])
t2 = time.perf_counter()
res = calibrate(pc, float(sys.argv[2]))
t3 = time.perf_counter()
print(json.dumps({"nodes": len(pc.nodes), "import_s": t1 - t0, "load_s": t2 - t1, "calibrate_s": t3 - t2,
                  "total_s": t3 - t0, "sigma_max": res.sigma_max, "groupdp_sigma": res.groupdp_sigma,
                  "gain": res.gain, "worst_node": res.worst_node, "worst_quilt": list(res.worst.quilt),
                  "influence_evaluations": res.details["influence_evaluations"],
                  "quilt_family": res.details["quilt_family"]}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", default=["alarm", "hailfinder", "win95pts"])
    ap.add_argument("--epsilon", type=float, default=1.0)
    args = ap.parse_args()
    out = {"epsilon": args.epsilon, "targets_s": {"alarm": 5, "hailfinder": 60, "win95pts": 60}, "networks": {}}
    for name in args.names:
        proc = subprocess.run([sys.executable, "-c", CHILD, name, str(args.epsilon)],
                              capture_output=True, text=True, check=True)
        out["networks"][name] = json.loads(proc.stdout)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
