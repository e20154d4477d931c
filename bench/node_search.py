"""Benchmark: the structured node searches of the Markov Quilt Mechanism on large networks.

Times :meth:`puffgm.networks.quilt_scores.QuiltSearch.best` (the candidate family and the
scan of one protected node, everything the calibration does before the refinement of the
worst nodes) over every k-th node of bundled networks, in this process and one search per
network, and prints one JSON object: seconds per node, the largest score met (the
structured sigma_max of the sampled nodes) and the influence queries.  The compiled kernels
(:mod:`puffgm.core.kernels`) are loaded before the clock starts; ``PUFFGM_KERNELS=numpy``
forces their numpy twins (``python3 bench/kernels.py`` compares both).  Compare two
revisions on the same machine, interleaved:

    PYTHONPATH=/path/to/other/checkout python3 bench/node_search.py pigs:20 andes:7 munin:100
    python3 bench/node_search.py pigs:20 andes:7 munin:100

``NAME+START:COUNT`` searches COUNT consecutive nodes from position START instead, one search as a
worker of the parallel road runs its chunk of consecutive nodes (the pair tables one node's search
keeps serve the next nodes' searches there, which every k-th node leaves out).

Usage: python3 bench/node_search.py [NAME[:EVERY] | NAME+START:COUNT ...]   (default: andes:7 pigs:20 munin:100)
"""

import json
import os
import platform
import sys
import time


def node_searches(name: str, every: int, start: int = 0, count: int | None = None) -> dict:
    """Seconds of the node searches of every ``every``-th node of ``example:name`` (epsilon 1), or of
    ``count`` consecutive nodes from position ``start``."""
    from puffgm.networks.priors import load_prior_class
    from puffgm.networks.quilt_scores import QuiltSearch

    pc = load_prior_class("example:" + name)
    nodes = list(pc.nodes)[::every] if count is None else list(pc.nodes)[start:start + count]
    kernels = _warm_kernels()
    search = QuiltSearch(pc)
    clock = time.perf_counter()
    best = {n: search.best(n, epsilon=1.0) for n in nodes}
    seconds = time.perf_counter() - clock
    where = {"every": every} if count is None else {"start": start}
    return {"network": name, **where, "nodes_searched": len(nodes), "seconds": round(seconds, 3),
            "seconds_per_node": round(seconds / len(nodes), 4),
            "max_score": max(c.score for c in best.values()),
            "results_sha256": _digest(best),
            "influence_evaluations": search.engine.evaluations, **kernels}


def _digest(best: dict) -> str:
    """A digest of every node's active quilt and score (repr: equal digests, bit-identical scores)."""
    import hashlib

    text = json.dumps([[n, repr(c.score), list(c.quilt)] for n, c in best.items()])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _warm_kernels() -> dict:
    """Load the compiled kernels before the clock starts (numba's import and cache load are reported apart)."""
    try:
        from puffgm.core import kernels
    except ImportError:  # a revision without puffgm.core.kernels
        return {"kernels": "numpy (no puffgm.core.kernels)"}
    start = time.perf_counter()
    used = kernels.backend()
    return {"kernels": used, "kernels_load_s": round(time.perf_counter() - start, 3)}


def main(argv=None) -> None:
    specs = (argv if argv is not None else sys.argv[1:]) or ["andes:7", "pigs:20", "munin:100"]
    rows = []
    for spec in specs:
        name, _, every = spec.partition(":")
        if "+" in name:
            name, _, start = name.partition("+")
            rows.append(node_searches(name, 1, int(start), int(every)))
        else:
            rows.append(node_searches(name, int(every or 1)))
    import puffgm

    print(json.dumps({"puffgm": os.path.dirname(puffgm.__file__), "machine": platform.platform(),
                      "cpus": os.cpu_count(), "load_average": os.getloadavg()[0], "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
