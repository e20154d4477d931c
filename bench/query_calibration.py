"""Benchmark: query-specific calibration on the bundled networks and a long chain.

Prints one JSON object.  For each network, the count query of each node's first
state (``{"count": 0}``) at ``--epsilon``, in a fresh interpreter per network
(so the figures include importing puffgm and reading the network):

* ``laws_s``: the junction tree with the partial-sum axis (every protected node,
  every prior);
* ``wasserstein_s`` and ``optimal_laplace_s``: W (and the exact audit of W / epsilon),
  and the bisection for the optimal Laplace scale;
* ``total_s``: one ``calibrate_query`` call of each method without the MQM
  baseline (``wasserstein_total_s``, ``optimal_laplace_total_s``), and the MQM
  calibration alone (``mqm_s``);
* the scales: group DP, MQM (sigma_max x L), W / epsilon, optimal Laplace, and
  the gains over group DP and over MQM.

The chain entry is a two-state chain of length ``--chain-length`` (default 10^4),
count of state 0: the laws are exact up to ``max_exact_length`` (600) and the
Wasserstein bound beyond.

Targets (2-core machine): asia, child and alarm in a few seconds;
insurance, hailfinder, win95pts and hepar2 within 30 s each for both methods;
pathfinder within 2 minutes.

Usage: python3 bench/query_calibration.py [--epsilon 1] [--chain-length 10000] [NAME ...]
"""

import argparse
import json
import os
import platform
import subprocess
import sys

NETWORKS = ("asia", "child", "alarm", "insurance", "hailfinder", "win95pts", "hepar2", "pathfinder")

_CHILD = r"""
import json, sys, time
t0 = time.monotonic()
import puffgm
from puffgm.api import as_prior
name, eps = sys.argv[1], float(sys.argv[2])
prior = sys.argv[3] if len(sys.argv) > 3 else f"example:{name}"
kind = as_prior(prior)
t1 = time.monotonic()
q = {"count": 0}
w = puffgm.calibrate_query(kind, q, epsilon=eps, method="wasserstein", baselines=False)
t2 = time.monotonic()
o = None
if w.exact:
    o = puffgm.calibrate_query(kind, q, epsilon=eps, method="optimal-laplace", baselines=False)
t3 = time.monotonic()
m = kind.calibrate(epsilon=eps, lipschitz=1.0)
t4 = time.monotonic()
mqm = m.scale if m.applicable else None
row = {
    "load_s": round(t1 - t0, 3), "wasserstein_total_s": round(t2 - t1, 3),
    "optimal_laplace_total_s": None if o is None else round(t3 - t2, 3), "mqm_s": round(t4 - t3, 3),
    "laws_s": w.seconds.get("laws"), "wasserstein_s": w.seconds.get("wasserstein"),
    "optimal_laplace_s": None if o is None else o.seconds.get("optimal_laplace"),
    "exact": w.exact, "n_pairs": w.n_pairs, "max_value": w.query["max_value"],
    "group_dp_scale": w.group_dp_scale, "mqm_scale": mqm, "wasserstein": w.wasserstein,
    "wasserstein_scale": w.wasserstein_scale, "wasserstein_loss": w.loss,
    "optimal_laplace_scale": None if o is None else o.scale, "optimal_laplace_loss": None if o is None else o.loss,
}
best = row["optimal_laplace_scale"] or row["wasserstein_scale"]
row["gain_over_group_dp"] = None if not best else row["group_dp_scale"] / best
row["gain_over_mqm"] = None if not best or mqm is None else mqm / best
print(json.dumps(row))
"""


def run(name, eps, prior=None, timeout=900):
    args = [sys.executable, "-c", _CHILD, name, str(eps)] + ([prior] if prior else [])
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"refused": f"timeout after {timeout} s"}
    if out.returncode != 0:
        return {"refused": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(out.stdout)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--chain-length", type=int, default=10_000)
    p.add_argument("names", nargs="*", default=list(NETWORKS))
    args = p.parse_args(argv)
    rows = {name: run(name, args.epsilon) for name in args.names}
    if args.chain_length:
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump({"transition": [[0.9, 0.1], [0.3, 0.7]], "initial": "stationary",
                       "length": args.chain_length}, fh)
        rows[f"chain_T{args.chain_length}"] = run("chain", args.epsilon, fh.name)
        os.unlink(fh.name)
    print(json.dumps({"epsilon": args.epsilon, "query": {"count": 0}, "machine": {
        "cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "results": rows}, indent=2))


if __name__ == "__main__":
    main()
