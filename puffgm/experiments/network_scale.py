"""How the Markov Quilt Mechanism's calibration scales over the bundled bnlearn networks (the scale table).

For every bundled network, smallest first:

* **size**: nodes, edges, and the treewidth proxy: the largest clique of the greedy min-size
  elimination order of the moral graph that puffgm's junction tree uses
  (:func:`puffgm.networks.inference.elimination_tree`), in variables and in joint states;
* **calibration**: ``puffgm calibrate example:NAME --epsilon 1 --json --quiet`` as a user runs it,
  in a fresh interpreter (imports and parsing included), with the CLI's default time budget
  (:data:`puffgm.cli.calibrate.DEFAULT_TIME_LIMIT`): the wall time of the whole command,
  sigma_max, the certified lower bound and the optimality gap, group DP and the gain, whether the
  budget cut the improvement of the worst nodes short, or the one-line refusal.

``bench/scale_table.py`` runs the same rows (with ``--time-limit`` and a JSON record);
docs/scale.md explains the table: what decides the time, where it goes, what is left.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import subprocess
import sys
import time
from typing import Any

__all__ = ["TITLE", "run", "network_size", "calibrate_cli", "scale_rows", "markdown", "QUICK_NETWORKS"]

TITLE = "Large networks: the Markov Quilt Mechanism on every bundled bnlearn network"

#: The networks of a ``--quick`` run.
QUICK_NETWORKS = ("asia",)


def network_size(name: str) -> dict:
    """Nodes, edges and the largest clique of puffgm's elimination order of ``example:name`` (no calibration)."""
    from puffgm.networks.inference import elimination_tree
    from puffgm.networks.priors import load_network

    prior = load_network("example:" + name)
    index = {v: k for k, v in enumerate(prior.nodes)}
    card = [len(prior.states[v]) for v in prior.nodes]
    families = [(index[v],) + tuple(index[p] for p in prior.parents[v]) for v in prior.nodes]
    _, cliques, _ = elimination_tree(card, families)
    states = [math.prod(card[u] for u in c) for c in cliques]
    return {"nodes": len(prior.nodes), "edges": sum(len(prior.parents[v]) for v in prior.nodes),
            "largest_clique_vars": max(len(c) for c in cliques), "largest_clique_states": max(states),
            "clique_entries": sum(states)}


def calibrate_cli(name: str, *, epsilon: float = 1.0, time_limit: float | None = None,
                  timeout: float = 900.0) -> dict:
    """One ``puffgm calibrate example:NAME`` run in a fresh interpreter: wall time and the answer or the refusal.

    ``time_limit`` None keeps the CLI's default budget; the run is killed after ``timeout`` seconds.
    """
    argv = [sys.executable, "-m", "puffgm", "calibrate", f"example:{name}", "--epsilon", repr(epsilon),
            "--json", "--quiet"]
    if time_limit is not None:
        argv += ["--time-limit", repr(time_limit)]
    root = pathlib.Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
    load = os.getloadavg()[0]
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"wall_s": timeout, "outcome": f"no answer within the bench timeout ({timeout:g} s)"}
    out: dict[str, Any] = {"wall_s": round(time.perf_counter() - start, 2), "load_before": load,
                           "load_after": os.getloadavg()[0]}
    if proc.returncode:
        out["outcome"] = "refused"
        out["refusal"] = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return out
    d = json.loads(proc.stdout)
    details = d.get("details", {})
    out.update({"outcome": "calibrated", "sigma_max": d["sigma_max"], "sigma_lower_bound": d.get("sigma_lower_bound"),
                "optimality_gap": d.get("optimality_gap"), "groupdp_sigma": d.get("groupdp_sigma"),
                "gain": d.get("gain"), "time_limit_reached": details.get("time_limit_reached"),
                "influence_evaluations": details.get("influence_evaluations"),
                "fallback_nodes": len(details.get("fallback_nodes", ()))})
    return out


def _row(r: dict) -> str:
    c = r["cli"]
    size = f"| {r['name']} | {r['nodes']} | {r['edges']} | {r['largest_clique_vars']} / {r['largest_clique_states']:,} "
    if c["outcome"] != "calibrated":
        why = c.get("refusal", c["outcome"]).replace("puffgm: error: ", "").replace("|", "/")
        return size + f"| {c['wall_s']:.1f} s | {c['outcome']}: {why} | | | | | |"
    gap = c["optimality_gap"]
    cut = " (budget reached)" if c.get("time_limit_reached") else ""
    if c.get("fallback_nodes"):
        cut += f" ({c['fallback_nodes']} nodes on the trivial quilt: table limit)"
    return size + (f"| {c['wall_s']:.1f} s | calibrated{cut} | {c['sigma_max']:.3f} | {c['sigma_lower_bound']:.3f} | "
                   f"{'0 (optimal)' if gap == 0 else format(gap, '.1%')} | {c['groupdp_sigma']:g} | x{c['gain']:.3f} |")


def markdown(rows: list) -> str:
    """The scale table (Markdown) of rows ``{"name", size fields..., "cli": calibrate_cli(...)}``."""
    head = ("| network | nodes | edges | largest clique (vars / states) | time | outcome | $\\sigma_{\\max}$ | "
            "lower bound | gap | group DP | gain |\n"
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    return "\n".join([head] + [_row(r) for r in rows])


def scale_rows(names, *, epsilon: float = 1.0, time_limit: float | None = None, timeout: float = 900.0,
               on_row=None) -> list:
    """The rows ``{"name", size fields..., "cli": calibrate_cli(...)}`` of ``names``, smallest network
    first; ``on_row(row, done, total)`` is called after each one."""
    sizes = {n: network_size(n) for n in names}
    names = sorted(names, key=lambda n: (sizes[n]["nodes"], sizes[n]["clique_entries"]))
    rows = []
    for n in names:
        cli = calibrate_cli(n, epsilon=epsilon, time_limit=time_limit, timeout=timeout)
        rows.append({"name": n, **sizes[n], "cli": cli})
        if on_row is not None:
            on_row(rows[-1], len(rows), len(names))
    return rows


def run(out_dir: pathlib.Path, *, quick: bool = False, progress=None) -> str:
    """The scale table over the bundled networks (``quick``: :data:`QUICK_NETWORKS` only), as a Markdown section."""
    from puffgm.networks.priors import bundled_networks

    names = list(QUICK_NETWORKS) if quick else list(bundled_networks())
    rows = scale_rows(names, on_row=None if progress is None else lambda row, done, total: progress(done, total))
    loads = [r["cli"].get("load_before", math.nan) for r in rows]
    answered = max(r["cli"]["wall_s"] for r in rows)
    return "\n".join([
        f"## {TITLE}", "",
        "`puffgm calibrate example:NAME --epsilon 1 --json --quiet`, every node protected, with the command's "
        f"default time budget, one fresh interpreter per network (the time is the whole command as a "
        f"user sees it; load average {min(loads):.1f} to {max(loads):.1f} during the run). \"Largest clique\" is the "
        "treewidth proxy: the largest clique of puffgm's elimination order, in variables and joint states. A "
        "calibration whose budget ran out during the improvement of the worst nodes says so (\"budget reached\": "
        "every quilt is valid, the gap is certified); a refusal is the command's one line.", "",
        markdown(rows), "",
        f"Every run answered within {math.ceil(answered)} s. docs/scale.md explains what decides the time (the clique "
        "states for exact inference, the number of nodes times the component size for the search), where it goes "
        "on andes, pigs and munin, and what is left; `python3 bench/scale_table.py` prints the same rows as JSON.",
    ])
