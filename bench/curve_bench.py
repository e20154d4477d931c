"""Benchmark: a(b)-influence curves of alarm (b = 1..37) and of a 51-state chain of length 10**6.

Run: /tmp/venv/bin/python bench/curve_bench.py [--max-b B]   (prints JSON)
"""

import argparse
import json
import math
import time

import numpy as np


def _strict(x):
    """Strict JSON: infinite values (a(b) = inf where no quilt fits) become null."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _strict(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_strict(v) for v in x]
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-b", type=int, default=200, help="largest b for the chain curve")
    ap.add_argument("--states", type=int, default=51)
    ap.add_argument("--length", type=int, default=10**6)
    args = ap.parse_args()
    from puffgm.api import influence_curve
    from puffgm.chains.priors import ChainPriorClass

    out = {}
    t = time.perf_counter()
    c = influence_curve("example:alarm")
    out["alarm"] = {"seconds_total": time.perf_counter() - t, "seconds_curve": c.details["seconds"],
                    "points": [[b, a] for b, a in c.points]}
    rng = np.random.default_rng(0)
    k = args.states
    P = 0.5 * rng.dirichlet(np.ones(k), size=k) + 0.5 * np.eye(k)  # sticky, strongly correlated
    P /= P.sum(axis=1, keepdims=True)
    t = time.perf_counter()
    cc = ChainPriorClass.from_matrices(P, "stationary", args.length)
    curve = influence_curve(cc, max_b=args.max_b)
    out["chain"] = {"states": k, "length": args.length, "max_b": args.max_b,
                    "seconds": time.perf_counter() - t,
                    "points": [[b, a] for b, a in curve.points][:60] + [[curve.max_b, curve.a[-1]]]}
    print(json.dumps(_strict(out), allow_nan=False))


if __name__ == "__main__":
    main()
