"""Benchmark: one network's node searches on a Dask cluster, with 1 and 2 workers, against the local run.

For ``example:NAME`` with every ``EVERY``-th node protected (epsilon 1, no time limit), prints one
JSON object: for the local run (``n_jobs=1``) and a ``distributed.LocalCluster`` of 1 and 2
worker processes (one thread each), the wall time of the whole calibration, of its node
searches (the parallel part, :func:`puffgm.networks.calibration._node_bests`) and of the rest
(the serial part: the refinement and branch and bound of the worst nodes in the driver), the
driver's CPU time, sigma_max, the worst node's witness and whether ``to_dict()`` equals the
local run's.  The projection for W workers is serial + parallel(1 worker) / W.

Usage: python3 bench/cluster_nodes.py [NAME[:EVERY]]   (default: munin:35)
"""

import json
import os
import sys
import time


def timed_calibration(pc, protected, **kw):
    from puffgm.networks import calibration

    parts = {}
    real = calibration._node_bests

    def node_bests(*args, **kwargs):
        t = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            parts["node_searches_s"] = time.perf_counter() - t

    calibration._node_bests = node_bests
    try:
        t, c = time.perf_counter(), time.process_time()
        res = calibration.calibrate(pc, epsilon=1.0, protected=protected, progress=False, **kw)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
    finally:
        calibration._node_bests = real
    return res, {"wall_s": round(wall, 2), "driver_cpu_s": round(cpu, 2),
                 "node_searches_s": round(parts["node_searches_s"], 2),
                 "serial_s": round(wall - parts["node_searches_s"], 2), "sigma_max": res.sigma_max,
                 "worst": res.worst.node, "witness": repr(res.worst.witness)}


def main():
    import distributed

    from puffgm.networks.priors import load_prior_class

    name, _, every = (sys.argv[1] if len(sys.argv) > 1 else "munin:35").partition(":")
    pc = load_prior_class("example:" + name)
    protected = list(pc.nodes)[:: int(every or 1)]
    out = {"network": name, "protected": len(protected), "load_average_start": list(os.getloadavg()), "runs": {}}
    local, out["runs"]["local"] = timed_calibration(pc, protected, n_jobs=1)
    for workers in (1, 2):
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                      dashboard_address=None, silence_logs=40) as cluster, \
                distributed.Client(cluster) as client:
            res, row = timed_calibration(pc, protected, client=client)
        row["same_as_local"] = res.to_dict() == local.to_dict()
        out["runs"][f"dask_{workers}"] = row
    one = out["runs"]["dask_1"]
    out["projection_2_workers_s"] = round(one["serial_s"] + one["node_searches_s"] / 2, 2)
    out["load_average_end"] = list(os.getloadavg())
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
