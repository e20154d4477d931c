"""Calibrate many prior classes at once: locally with joblib, or on a Dask cluster.

    python examples/calibrate_many_cluster.py                      # joblib, this machine
    python examples/calibrate_many_cluster.py --local-cluster      # a 2-process Dask LocalCluster
    python examples/calibrate_many_cluster.py --scheduler tcp://10.0.0.5:8786   # a real cluster

The list mixes a grid of binary Markov chains (every initial distribution, T = 100) and two bundled
networks; the Dask results are checked against the local ones (identical, see docs/scale.md).
"""

import argparse
import time

import puffgm
from puffgm.chains import ChainPriorClass


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scheduler", default=None, help="Dask scheduler address, e.g. tcp://10.0.0.5:8786")
    ap.add_argument("--local-cluster", action="store_true", help="start a 2-worker Dask LocalCluster here")
    args = ap.parse_args()

    grid = [ChainPriorClass.from_matrices([[p, 1 - p], [1 - q, q]], "any", 100)
            for p in (0.1, 0.3, 0.5, 0.7, 0.9) for q in (0.2, 0.4, 0.6, 0.8)]
    classes = grid + ["example:asia", "example:cancer"]

    t = time.perf_counter()
    local = puffgm.calibrate_many(classes, epsilon=1.0)
    print(f"joblib: {len(local)} classes in {time.perf_counter() - t:.2f} s; "
          f"largest chain sigma {max(r.sigma_max for r in local[:len(grid)]):.4f}, "
          f"asia {local[-2].sigma_max:.4f}, cancer {local[-1].sigma_max:.4f}")

    if args.local_cluster or args.scheduler:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) \
            if args.local_cluster else None
        client = Client(cluster if cluster is not None else args.scheduler)
        try:
            t = time.perf_counter()
            remote = puffgm.calibrate_many(classes, epsilon=1.0, client=client)
            same = [r.to_dict(per_node=True) for r in remote] == [r.to_dict(per_node=True) for r in local]
            print(f"dask:   {len(remote)} classes in {time.perf_counter() - t:.2f} s; identical to joblib: {same}")
        finally:
            client.close()
            if cluster is not None:
                cluster.close()


if __name__ == "__main__":
    main()
