"""Benchmark: certified optimality gap of the MQM calibration, before and after the branch and bound.

For each bundled network (every node protected), in one fresh interpreter per network:

* before: ``calibrate(..., search_budget=0)``, today's structured quilt search; its lower
  bound is the single-node bound (puffgm.networks.quilt_bounds) of the worst nodes;
* after: ``calibrate(...)`` with the default branch-and-bound budget (puffgm.networks.quilt_search);
* certified (with ``--certify-budget N`` > 0): ``calibrate(..., certify_budget=N)``, the branch and
  bound followed, where a gap remains, by the cutting-plane certificate (puffgm.networks.quilt_certify);
  its own time is in ``cutting_plane_nodes[*].seconds``;
* bound_only (first, cheap): ``network_lower_bound`` over the ``--hubs`` highest-degree nodes, a
  certified lower bound that needs no calibration (useful where calibration is too slow).

Prints one JSON object: sigma_max, sigma_lower_bound, optimality_gap (sigma_max / bound - 1),
group-DP sigma and gain, calibration time and the worst node, before and after.  A network whose
child process exceeds ``--timeout`` seconds is reported as such.

Usage: python3 bench/bench_quilt_gap.py [--epsilon 1] [--timeout 900] [--budget 300] [--hubs 20]
       [--certify-budget 0] [NAME ...]
"""

import argparse
import json
import os
import subprocess
import sys

DEFAULT = ["alarm", "hailfinder", "win95pts", "hepar2", "pathfinder", "andes", "pigs"]

CHILD = r"""
import json, sys, time
from puffgm.networks.calibration import calibrate
from puffgm.networks.priors import load_prior_class
from puffgm.networks.quilt_bounds import network_lower_bound
name, eps, budget, hubs, certify = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
t0 = time.perf_counter()
pc = load_prior_class("example:" + name)
out = {"nodes": len(pc.nodes), "load_s": time.perf_counter() - t0,
       "groupdp_sigma": pc.largest_component() / eps}
t = time.perf_counter()
bound, node = network_lower_bound(pc, epsilon=eps, max_nodes=hubs)
out["bound_only"] = {"sigma_lower_bound": bound, "node": node, "nodes_bounded": min(hubs, len(pc.nodes)),
                     "groupdp_over_bound": out["groupdp_sigma"] / bound, "time_s": time.perf_counter() - t}
print(json.dumps({"bound_only": out["bound_only"]}), file=sys.stderr, flush=True)
stages = [("before", 0, 0), ("after", budget, 0)] + ([("certified", budget, certify)] if certify else [])
for label, b, cb in stages:
    t = time.perf_counter()
    res = calibrate(pc, eps, search_budget=b, certify_budget=cb)
    d = res.to_dict()
    out[label] = {"calibrate_s": time.perf_counter() - t, "sigma_max": res.sigma_max,
                  "sigma_lower_bound": d["sigma_lower_bound"], "optimality_gap": d["optimality_gap"],
                  "groupdp_sigma": res.groupdp_sigma, "gain": res.gain, "worst_node": res.worst_node,
                  "worst_quilt": list(res.worst.quilt), "search_budget": b,
                  "branch_and_bound_nodes": [str(v) for v in res.details["branch_and_bound_nodes"]],
                  "influence_evaluations": res.details["influence_evaluations"],
                  "certify_budget": cb, "cutting_plane_nodes": list(res.details["cutting_plane_nodes"])}
    print(json.dumps({label: out[label]}), file=sys.stderr, flush=True)
print(json.dumps(out))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", default=DEFAULT)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--budget", type=int, default=300)
    ap.add_argument("--hubs", type=int, default=20,
                    help="bound_only: single-node bounds of this many highest-degree nodes, before calibrating")
    ap.add_argument("--certify-budget", type=int, default=0,
                    help="certified: a third calibration with the cutting-plane certificate "
                         "(puffgm.networks.quilt_certify) and this many influence queries per node (0: skip)")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = {"epsilon": args.epsilon, "budget": args.budget, "certify_budget": args.certify_budget,
           "machine": "2-core, shared with other jobs",
           "networks": {}}
    for name in args.names:
        try:
            proc = subprocess.run([sys.executable, "-c", CHILD, name, str(args.epsilon), str(args.budget),
                                   str(args.hubs), str(args.certify_budget)],
                                  capture_output=True, text=True, timeout=args.timeout, env=env)
        except subprocess.TimeoutExpired as exc:
            partial = [json.loads(line) for line in (exc.stderr or b"").decode().splitlines() if line.startswith("{")]
            out["networks"][name] = {"timeout_s": args.timeout, "partial": partial}
            continue
        if proc.returncode != 0:
            out["networks"][name] = {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
            continue
        out["networks"][name] = json.loads(proc.stdout)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
