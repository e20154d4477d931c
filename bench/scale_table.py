"""Benchmark: how the Markov Quilt Mechanism's calibration scales over the bundled bnlearn networks.

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

The rows are those of the ``network_scale`` experiment (:mod:`puffgm.experiments.network_scale`,
the section of docs/results.md), which holds the functions.

Usage: python3 bench/scale_table.py [--epsilon 1] [--time-limit SECONDS] [--timeout 900] [--markdown] [NAME ...]
"""

import argparse
import json
import os
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
    from puffgm.experiments.network_scale import markdown, scale_rows
    from puffgm.networks.priors import bundled_networks

    rows = scale_rows(args.names or list(bundled_networks()), epsilon=args.epsilon, time_limit=args.time_limit,
                      timeout=args.timeout, on_row=lambda row, *_: print(json.dumps(row), file=sys.stderr, flush=True))
    print(json.dumps({"machine": {"platform": platform.platform(), "python": platform.python_version(),
                                  "cpus": os.cpu_count()},
                      "epsilon": args.epsilon, "time_limit": args.time_limit, "networks": rows}, indent=1))
    if args.markdown:
        print(markdown(rows), file=sys.stderr)


if __name__ == "__main__":
    main()
