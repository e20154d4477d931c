"""Benchmark: how the Markov Quilt Mechanism's calibration scales over the bundled bnlearn networks (issue 27).

Prints one JSON object (and, with ``--markdown``, the table of docs/scale.md).  For every
network, smallest first:

* **size**: nodes, edges, and the treewidth proxy: the largest clique of the greedy
  min-size elimination order of the moral graph that puffgm's junction tree uses
  (:func:`puffgm.networks.inference.elimination_tree`), as a number of variables and of
  joint states, with the total entries of all cliques;
* **calibration**: the CLI as a user runs it, ``puffgm calibrate example:NAME --epsilon 1
  --json --quiet`` in a fresh interpreter (every import and the parsing of the bundled
  file included), with the default time budget of ``puffgm calibrate`` unless
  ``--time-limit`` is given (0: no limit); wall time of the whole command, sigma_max,
  the certified lower bound, the optimality gap, group DP and the gain, whether the time
  budget cut the search of the worst nodes short, or the one-line refusal.

The machine is recorded beside the figures (``platform``, ``os.cpu_count()``, the load
average before and after each run): times on a shared machine are noisy.

Usage: python3 bench/scale_table.py [--epsilon 1] [--time-limit SECONDS] [--timeout 900] [--markdown] [NAME ...]
"""

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def network_size(name: str) -> dict:
    """Nodes, edges and the largest clique of puffgm's elimination order (no calibration)."""
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


def calibrate_cli(name: str, epsilon: float, time_limit, timeout: float) -> dict:
    """One ``puffgm calibrate`` run in a fresh interpreter: wall time and the JSON answer or the refusal."""
    argv = [sys.executable, "-m", "puffgm", "calibrate", f"example:{name}", "--epsilon", repr(epsilon),
            "--json", "--quiet"]
    if time_limit is not None:
        argv += ["--time-limit", repr(time_limit)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    load = os.getloadavg()[0]
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"wall_s": timeout, "outcome": f"no answer within the bench timeout ({timeout:g} s)"}
    out = {"wall_s": round(time.perf_counter() - start, 2), "load_before": load, "load_after": os.getloadavg()[0]}
    if proc.returncode:
        out["outcome"] = "refused"
        out["refusal"] = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return out
    d = json.loads(proc.stdout)
    details = d.get("details", {})
    out.update({"outcome": "calibrated", "sigma_max": d["sigma_max"], "sigma_lower_bound": d.get("sigma_lower_bound"),
                "optimality_gap": d.get("optimality_gap"), "groupdp_sigma": d.get("groupdp_sigma"),
                "gain": d.get("gain"), "time_limit_reached": details.get("time_limit_reached"),
                "influence_evaluations": details.get("influence_evaluations")})
    return out


def markdown(rows: list) -> str:
    """The table of docs/scale.md."""
    head = ("| network | nodes | edges | largest clique (vars / states) | time | outcome | sigma_max | lower bound "
            "| gap | group DP | gain |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    lines = [head]
    for r in rows:
        c = r["cli"]
        if c["outcome"] == "calibrated":
            gap = c["optimality_gap"]
            cut = " (budget reached)" if c.get("time_limit_reached") else ""
            lines.append(f"| {r['name']} | {r['nodes']} | {r['edges']} | {r['largest_clique_vars']} / "
                         f"{r['largest_clique_states']:,} | {c['wall_s']:.1f} s | calibrated{cut} | "
                         f"{c['sigma_max']:.3f} | {c['sigma_lower_bound']:.3f} | "
                         f"{'0 (optimal)' if gap == 0 else format(gap, '.1%')} | {c['groupdp_sigma']:g} | "
                         f"x{c['gain']:.3f} |")
        else:
            why = c.get("refusal", c["outcome"]).replace("puffgm: error: ", "").replace("|", "/")
            lines.append(f"| {r['name']} | {r['nodes']} | {r['edges']} | {r['largest_clique_vars']} / "
                         f"{r['largest_clique_states']:,} | {c['wall_s']:.1f} s | {c['outcome']}: {why} | | | | | |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="bundled networks (default: all, smallest first)")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--time-limit", type=float, default=None,
                    help="passed as --time-limit (default: puffgm calibrate's default budget; 0: no limit)")
    ap.add_argument("--timeout", type=float, default=900.0, help="kill a run after this many seconds")
    ap.add_argument("--markdown", action="store_true", help="also print the markdown table (stderr)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from puffgm.networks.priors import bundled_networks

    names = args.names or list(bundled_networks())
    sizes = {n: network_size(n) for n in names}
    names.sort(key=lambda n: (sizes[n]["nodes"], sizes[n]["clique_entries"]))
    rows = []
    for n in names:
        row = {"name": n, **sizes[n], "cli": calibrate_cli(n, args.epsilon, args.time_limit, args.timeout)}
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    print(json.dumps({"machine": {"platform": platform.platform(), "python": platform.python_version(),
                                  "cpus": os.cpu_count()},
                      "epsilon": args.epsilon, "time_limit": args.time_limit, "networks": rows}, indent=1))
    if args.markdown:
        print(markdown(rows), file=sys.stderr)


if __name__ == "__main__":
    main()
