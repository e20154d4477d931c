"""Benchmark: the compiled kernels (numba) against their numpy twins, interleaved, in one run.

Every case runs in a fresh interpreter, once per configuration, the configurations
alternating (``numba, numpy, numba, numpy, ...`` for ``--repeat 2``) so that the load of a
shared machine falls on both:

* ``numba``: ``PUFFGM_KERNELS=numba`` (needs ``pip install "puffgm[fast]"``);
* ``numpy``: ``PUFFGM_KERNELS=numpy``, the numpy twins;
* ``baseline`` (with ``--baseline PATH``): another checkout on ``PYTHONPATH``.

Cases (``--cases``, default all):

* ``nodes:NAME:EVERY``: the node searches of every EVERY-th node (``bench/node_search.py``),
  kernels loaded before the clock starts;
* ``laws:NAME``: the exact conditional laws of the count of each node's first state
  (:func:`puffgm.networks.query_laws.network_query_laws`, every node protected), then the
  Wasserstein calibration from them;
* ``workload:NAME:K``: :func:`puffgm.calibrate_workload` of K counts over the K contiguous
  parts of the node order (``bench/workload.py``'s cases).

Prints one JSON object: each configuration's seconds per run, the median ratio numpy / numba
(and baseline / numba), and the largest relative difference of the results (scores, W,
scales) between configurations, which must stay below 1e-12.

Usage: python3 bench/kernels.py [--repeat 2] [--baseline PATH] [--cases CASE ...]
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

CASES = ("nodes:andes:7", "nodes:pigs:20", "nodes:munin:100", "laws:hepar2", "laws:pathfinder",
         "workload:alarm:3", "workload:hailfinder:2")

_CHILD = r"""
import json, sys, time
kind_, args = sys.argv[1], sys.argv[2:]
if kind_ == "nodes":
    sys.path.insert(0, sys.argv[-1])
    import node_search
    row = node_search.node_searches(args[0], int(args[1]))
    print(json.dumps({"seconds": row["seconds"], "values": [row["max_score"]],
                      "counts": [row["influence_evaluations"]], "kernels": row.get("kernels")}))
    raise SystemExit(0)
import numpy as np
import puffgm
from puffgm.api import as_prior
try:
    from puffgm.core import kernels
    used = kernels.backend()
except ImportError:
    used = "numpy (no puffgm.core.kernels)"
kind = as_prior("example:" + args[0])
t0 = time.perf_counter()
if kind_ == "laws":
    cal = puffgm.calibrate_query(kind, {"count": 0}, epsilon=1.0, method="wasserstein", baselines=False)
    values = [cal.wasserstein, cal.wasserstein_scale, cal.loss]
    extra = {"laws_s": cal.seconds.get("laws")}
else:
    k = int(args[1])
    nodes = [str(n) for n in kind.query_domain()[0]]
    size = len(nodes) // k
    cut = [nodes[i * size:(i + 1) * size] for i in range(k)]
    cut[-1] = nodes[(k - 1) * size:]
    cal = puffgm.calibrate_workload(kind, [{"count": 0, "nodes": c, "name": f"part {i + 1}"}
                                           for i, c in enumerate(cut)], epsilon=1.0)
    values = list(cal.scales) + [cal.loss]
    extra = {}
print(json.dumps({"seconds": round(time.perf_counter() - t0, 3), "values": [float(v) for v in values],
                  "kernels": used, **extra}))
"""


def run_case(case: str, config: str, baseline: str | None) -> dict:
    """One fresh interpreter for ``case`` under ``config``."""
    env = dict(os.environ)
    env.pop("PUFFGM_KERNELS", None)
    if config == "baseline":
        env["PYTHONPATH"] = baseline
    else:
        env["PUFFGM_KERNELS"] = config
    kind, *args = case.split(":")
    here = os.path.dirname(os.path.abspath(__file__))
    # run outside any checkout: ``python -c`` puts the working directory first on sys.path
    proc = subprocess.run([sys.executable, "-c", _CHILD, kind, *args, here], capture_output=True, text=True,
                          env=env, cwd=tempfile.gettempdir())
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def largest_difference(runs: list) -> float:
    """The largest relative difference of the results of ``runs`` (each a dict with ``values``)."""
    worst = 0.0
    ref = runs[0]["values"]
    for r in runs[1:]:
        for x, y in zip(r["values"], ref, strict=True):
            worst = max(worst, abs(x - y) / max(abs(y), 1e-300))
    return worst


def summarise(case: str, runs: dict) -> dict:
    """Median seconds per configuration, ratios to numba, and the results' agreement."""
    ok = {c: [r for r in rs if "error" not in r] for c, rs in runs.items()}
    row = {"case": case, "seconds": {c: [r["seconds"] for r in rs] for c, rs in ok.items()},
           "errors": {c: [r["error"] for r in rs if "error" in r] for c, rs in runs.items() if len(ok[c]) < len(rs)}}
    med = {c: statistics.median(s) for c, s in row["seconds"].items() if s}
    if "numba" in med:
        row["ratio_over_numba"] = {c: round(m / med["numba"], 2) for c, m in med.items() if c != "numba"}
    every = [r for rs in ok.values() for r in rs]
    if every:
        row["values"] = every[0]["values"]
        row["largest_relative_difference"] = largest_difference(every)
    for key in ("laws_s", "counts", "kernels"):
        got = {c: [r.get(key) for r in rs] for c, rs in ok.items() if rs and key in rs[0]}
        if got:
            row[key] = got
    return row


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--baseline", help="a checkout of another revision, put on PYTHONPATH")
    p.add_argument("--cases", nargs="*", default=list(CASES))
    args = p.parse_args(argv)
    configs = ["numba", "numpy"] + (["baseline"] if args.baseline else [])
    rows = []
    for case in args.cases:
        runs: dict = {c: [] for c in configs}
        for _ in range(args.repeat):
            for config in configs:
                print(f"[bench/kernels] {case} {config}", file=sys.stderr, flush=True)
                runs[config].append(run_case(case, config, args.baseline))
        rows.append(summarise(case, runs))
    print(json.dumps({"command": "python3 bench/kernels.py " + " ".join(sys.argv[1:] if argv is None else argv),
                      "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                                  "python": platform.python_version(), "load_average": os.getloadavg()[0],
                                  "note": "2-core Linux shared with other jobs: configurations interleaved"},
                      "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
