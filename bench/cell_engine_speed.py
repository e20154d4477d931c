"""Time of the b >= 4 cell engine (``puffgm.gaussian.multivariate.cell_leakage``) on one Figure 2b split.

Center coordinate, farthest low-influence set, the model's marginal corrections, the engine's defaults and
a cell budget: the same split as ``bench/gaussian_figure2b.py --cell-splits B --ls L``, without the other
engines of ``GaussianRegionModel.leakage``.  Prints one JSON line with the value (also as a hexadecimal
string, to compare bits between commits), the largest value met, the cells evaluated and the seconds.
It uses only APIs that older commits have, so a copy of it times an older checkout the same way:

    python bench/cell_engine_speed.py --l 3 --b 6 --cells 12
    (cd ../old && PYTHONPATH=. python /path/to/cell_engine_speed.py --l 3 --b 6 --cells 12)
"""

import argparse
import json
import time

import numpy as np

from puffgm.gaussian.closed_forms import gp_covariance
from puffgm.gaussian.leakage import GaussianRegionModel
from puffgm.gaussian.multivariate import CellOptions, cell_leakage

N, GAMMA, DELTA = 20, 5.0, 0.1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--l", type=float, required=True, help="length scale of the squared-exponential kernel")
    ap.add_argument("--b", type=int, required=True, help="split size b = card(H) >= 4")
    ap.add_argument("--cells", type=int, default=12, help="cell budget (max_cells)")
    args = ap.parse_args()
    cov = gp_covariance(N, args.l)
    model = GaussianRegionModel(cov, -GAMMA, GAMMA, DELTA)
    i = N // 2 - 1
    others = [j for j in range(N) if j != i]
    corr = np.abs(cov[i, others])
    order = [others[t] for t in np.lexsort((np.abs(np.array(others) - i), -corr))]
    high = sorted(order[:args.b - 1])
    cond = sorted(set(others) - set(high))
    corr_num, corr_den = model.marginal_corrections(i)
    t0 = time.perf_counter()
    value, info = cell_leakage(model, i, high, cond, corr_num, corr_den, CellOptions(atol=1e-3, max_cells=args.cells))
    seconds = time.perf_counter() - t0
    print(json.dumps({"l": args.l, "b": args.b, "max_cells": args.cells, "value": value, "value_hex": value.hex(),
                      "estimate_hex": float(info["estimate"]).hex(), "cells": info["cells"],
                      "seconds": round(seconds, 2)}))


if __name__ == "__main__":
    main()
