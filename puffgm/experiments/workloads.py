"""Tables of statistics released together (workloads): the joint optimal Laplace scales beside MQM and group DP.

For two counts of each node's first state over the two halves of a network's node order
(asia, child, alarm), and for the histogram of a chain fitted to a real series, one
:func:`puffgm.calibrate_workload` call computes the exact joint laws of the table given
every secret, the least Laplace scale t (the same on every statistic) whose exact joint
Pufferfish loss is at most epsilon (:mod:`puffgm.mechanisms.workload`), and the
alternatives: the Markov Quilt Mechanism (sigma_max times the table's L1 Lipschitz
constant, on every statistic; Song, Wang and Chaudhuri, SIGMOD 2017, arXiv:1603.03977,
Algorithm 2), group DP, and each statistic's own optimal scale calibrated alone, which is
shown for reference and is not a valid release of the table.

The chain is fitted to statsmodels' monthly El Nino sea-surface temperatures (732 months,
bundled with statsmodels, so the numbers do not depend on the optional data packages),
discretised into :data:`CHAIN_STATES` equal-width states, with its stationary start and
smoothing tau = 1e-5 (as in :mod:`puffgm.experiments.song_tables`); its length
:data:`CHAIN_LENGTH` (31^3 = 29791 cells) is the longest that fitted the limit of 65536 cells
before the joint laws were computed on a grid (the default ``max_joint_length`` is now 2^18 cells:
three states up to T = 63), kept so that the figures compare across versions.
"""

from __future__ import annotations

import os
import pathlib
import time

__all__ = ["TITLE", "run", "NETWORKS", "CHAIN_STATES", "CHAIN_LENGTH", "halves", "elnino_chain"]

TITLE = "Tables of statistics (workloads)"

NETWORKS = ("asia", "child", "alarm")

#: States and length of the fitted chain whose histogram is released.
CHAIN_STATES = 3
CHAIN_LENGTH = 30


def halves(nodes) -> list:
    """Two count queries of the first state over the first and the second half of ``nodes`` (in order)."""
    nodes = [str(n) for n in nodes]
    h = len(nodes) // 2
    return [{"count": 0, "nodes": nodes[:h], "name": "first half"},
            {"count": 0, "nodes": nodes[h:], "name": "second half"}]


def elnino_chain(states: int = CHAIN_STATES, length: int = CHAIN_LENGTH):
    """A :class:`~puffgm.chains.ChainPriorClass` fitted to the monthly El Nino series, ``states`` equal-width bins."""
    import statsmodels.api as sm

    from puffgm.chains import ChainPriorClass
    from puffgm.chains.data import discretise

    d = sm.datasets.elnino.load_pandas().data.drop(columns="YEAR").to_numpy(float).ravel()
    return ChainPriorClass.fit(discretise(d, states).tolist(), length=length, states=list(range(states)),
                               initial="stationary")


def _row(label: str, prior, workload, epsilon: float) -> dict:
    import puffgm

    t0 = time.perf_counter()
    cal = puffgm.calibrate_workload(prior, workload, epsilon=epsilon)
    return {"label": label, "cal": cal, "seconds": time.perf_counter() - t0}


def _f(x, digits: int = 4) -> str:
    return "n/a" if x is None else f"{x:.{digits}g}"


def _table(rows: list) -> list:
    L = ["| prior | k | statistics (nodes each) | joint scale per statistic | "
         "total $\\mathbb{E} \\lvert \\text{error} \\rvert$, joint | "
         "MQM per statistic (total) | group DP per statistic (total) | each alone, sum (not valid) | "
         "MQM / joint | exact joint loss | seconds |",
         "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        c = r["cal"]
        cmp = c.comparison()
        sizes = ", ".join(f"{n} ({q['scored_nodes']})" for n, q in zip(c.names, c.workload["queries"], strict=True))
        scales = ", ".join(_f(s, 5) for s in c.scales)
        mqm = "n/a" if c.mqm_scale is None else f"{_f(c.mqm_scale)} ({_f(cmp['mqm']['total'])})"
        ratio = "n/a" if c.mqm_scale is None else f"x{cmp['mqm']['total'] / cmp['joint']['total']:.3g}"
        single = "n/a" if c.single_scales is None else _f(cmp["single"]["total"])
        L.append(f"| {r['label']} | {c.k} | {sizes} | {scales} | {_f(cmp['joint']['total'])} | {mqm} | "
                 f"{_f(c.group_dp_scale)} ({_f(cmp['group_dp']['total'])}) | {single} | {ratio} | "
                 f"{c.loss:.7f} | {r['seconds']:.1f} |")
    return L


def run(out_dir: pathlib.Path, *, quick: bool = False, progress=None) -> str:
    """Calibrate the tables (asia only when ``quick``), return the Markdown section."""
    from puffgm.api import as_prior

    epsilon = 1.0
    load = os.getloadavg()[0]
    names = NETWORKS[:1] if quick else NETWORKS
    total = len(names) + (0 if quick else 1)
    rows = []
    for i, name in enumerate(names):
        kind = as_prior(f"example:{name}")
        nodes, _ = kind.query_domain()
        rows.append(_row(name, kind, halves(nodes), epsilon))
        if progress is not None:
            progress(i + 1, total)
    if not quick:
        chain = elnino_chain()
        rows.append(_row(f"El Nino chain, {CHAIN_STATES} states, T = {CHAIN_LENGTH}", chain, {"histogram": {}},
                         epsilon))
        if progress is not None:
            progress(total, total)
    chain = ("" if quick else
             "; on the chain it is the histogram (one count per state over every position) of a chain fitted to "
             f"statsmodels' monthly El Nino sea-surface temperatures (732 months, {CHAIN_STATES} equal-width states, "
             f"stationary start, smoothing $\\tau = 10^{{-5}}$), of length {CHAIN_LENGTH}, the longest that fitted the "
             "limit of 65536 cells before the joint laws were computed on a grid (the default limit is now "
             "$2^{18} = 262144$ cells: three states up to $T = 63$)")
    L = [f"## {TITLE}", "",
         "Several statistics of the same data released together, each with its own Laplace noise: the scale $t$ "
         "(here the same on every statistic, weights 1) is the least whose exact joint Pufferfish loss is at most "
         "$\\epsilon = 1$, computed from the exact joint laws of the statistics given every secret (every node "
         "protected; docs/workloads.md).  On each network the table is two counts of the nodes in their first "
         "state, over the first and the second half of the network's node order" + chain + ".  Every figure is an "
         "expected absolute error (for Laplace noise, its scale).  MQM is $\\sigma_{\\max}$ times the table's L1 "
         "Lipschitz constant (the largest L1 change of the table one node causes: 1 for counts over disjoint halves, "
         "2 for a histogram) on every statistic (Song, Wang and Chaudhuri, Algorithm 2); group DP is the table's L1 "
         "range over a group of correlated nodes, divided by $\\epsilon$, on every statistic.  \"Each alone\" adds "
         "each statistic's own optimal Laplace scale, calibrated as if it were the only release: shown for reference "
         "only, it is not an $\\epsilon$-Pufferfish release of the table.  Command: `puffgm calibrate example:NAME "
         "--epsilon 1 --query '[{\"count\": 0, \"nodes\": [...], \"name\": \"first half\"}, {...}]' --method "
         "optimal-laplace`, or `--query '{\"histogram\": {}}'`; `python3 bench/workload.py` times more tables "
         "(bench/data/workload.json).", ""]
    L += _table(rows)
    L += ["", "Seconds are wall-clock seconds of the whole `calibrate_workload` call (exact laws, the bisection, "
          "each statistic alone and MQM), in one process on a 2-core machine shared with other jobs (load average "
          f"{load:.1f} when the run started; the first table that needs the compiled kernels also loads them)."]
    return "\n".join(L) + "\n"
