"""``puffgm calibrate``: calibrate the Markov Quilt Mechanism for a prior class.

PRIOR arguments are BIF/XMLBIF paths or ``example:NAME`` (several form one
class Theta), or Markov-chain JSON specs (``*.json``, see docs/chains.md).
"""

from __future__ import annotations

import json
import math

NETWORK_METHODS = ("exact",)
CHAIN_METHODS = ("exact", "approx", "groupdp", "gk16")


def _finite_float(text: str) -> float:
    import argparse

    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    return v


def register(p) -> None:
    p.add_argument("priors", nargs="+", metavar="PRIOR",
                   help="BIF/XMLBIF file, example:NAME (bundled bnlearn network), or chain JSON spec; "
                        "several PRIORs form the prior class Theta")
    p.add_argument("--epsilon", type=_finite_float, required=True, help="Pufferfish privacy parameter (> 0)")
    p.add_argument("--lipschitz", type=_finite_float, default=1.0, help="L1 Lipschitz constant of the query")
    p.add_argument("--method", choices=sorted(set(NETWORK_METHODS + CHAIN_METHODS)), default="exact",
                   help="exact (networks and chains), approx, groupdp or gk16 (chains)")
    p.add_argument("--max-quilt-states", type=int, default=None,
                   help="bound on the joint state space of candidate quilts (networks)")
    p.add_argument("--search-budget", type=int, default=None,
                   help="networks: branch-and-bound expansions per worst node, which improve the quilts and "
                        "certify the lower bound on sigma_max (default 300; 0: structured search and "
                        "single-node bound only)")
    p.add_argument("--certify-budget", type=int, default=None,
                   help="networks: exact influence queries for the cutting-plane certificate of a worst node "
                        "whose gap the branch and bound leaves open (puffgm.networks.quilt_certify; raises the lower "
                        "bound, may find better quilts; seconds to minutes; default 0: off)")
    p.add_argument("--protect", default=None,
                   help="comma-separated protected nodes (default: every node)")
    p.add_argument("--paper-convention", action="store_true",
                   help="chains: reproduce the paper's table (counts states of probability zero)")
    p.add_argument("--per-node", action="store_true", help="include every node's active quilt")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar (networks; the bar is on stderr and appears after 2 s)")
    p.add_argument("--max-table-entries", type=int, default=None,
                   help="largest table exact inference may build (networks; default 2**25)")
    p.add_argument("--time-limit", type=_finite_float, default=None,
                   help="seconds a network calibration may take; it stops early, with the projected "
                        "time, once the projection exceeds the limit (default: none)")


def run(args) -> str:
    from puffgm.exceptions import ParameterError
    from puffgm.core.validation import check_positive_finite, check_positive_int

    check_positive_finite(args.epsilon, "epsilon", "puffgm calibrate")
    check_positive_finite(args.lipschitz, "lipschitz", "puffgm calibrate")
    from puffgm.gaussian.cli_support import calibrate_gaussian_specs, gaussian_specs

    gauss = gaussian_specs(args.priors)
    chains = [p for p in args.priors if p.lower().endswith(".json") and p not in gauss]
    if chains and len(chains) != len(args.priors):
        raise ParameterError("PRIOR arguments mix chain JSON specs and networks; give one kind.")
    if gauss:
        result = calibrate_gaussian_specs(args)
    elif chains:
        if args.protect or args.max_quilt_states is not None or args.search_budget is not None \
                or args.max_table_entries is not None or args.time_limit is not None \
                or args.certify_budget is not None:
            raise ParameterError("--protect, --max-quilt-states, --max-table-entries, --time-limit, "
                                 "--certify-budget and --search-budget apply to networks, not chain specs.")
        from puffgm.chains.cli_support import calibrate_chain_specs

        result = calibrate_chain_specs(
            list(args.priors), epsilon=args.epsilon, lipschitz=args.lipschitz, method=args.method,
            paper_convention=args.paper_convention, per_node=True if args.per_node else None,
        )
    else:
        if args.method not in NETWORK_METHODS:
            raise ParameterError(
                f"Method {args.method!r} applies to Markov-chain specs; networks use 'exact'."
            )
        if args.paper_convention:
            raise ParameterError("--paper-convention applies to Markov-chain specs, not networks.")
        from puffgm.networks.calibration import calibrate
        from puffgm.networks.quilts import DEFAULT_MAX_QUILT_STATES

        bound = DEFAULT_MAX_QUILT_STATES if args.max_quilt_states is None else check_positive_int(
            args.max_quilt_states, "max-quilt-states", "puffgm calibrate")
        protected = None
        if args.protect is not None:
            protected = [s.strip() for s in args.protect.split(",") if s.strip()]
        from puffgm.networks.quilt_search import DEFAULT_SEARCH_BUDGET, check_search_budget

        budget = DEFAULT_SEARCH_BUDGET if args.search_budget is None else check_search_budget(
            args.search_budget, "puffgm calibrate")
        from puffgm.networks.quilt_certify import check_certify_budget

        certify = 0 if args.certify_budget is None else check_certify_budget(
            args.certify_budget, "puffgm calibrate")
        tables = None if args.max_table_entries is None else check_positive_int(
            args.max_table_entries, "max-table-entries", "puffgm calibrate")
        result = calibrate(list(args.priors), args.epsilon, args.lipschitz, protected=protected,
                           max_quilt_states=bound, search_budget=budget, max_table_entries=tables,
                           progress=False if args.quiet else None,  # the bar writes to stderr only
                           time_limit=args.time_limit, certify_budget=certify)
    if result.applicable and not math.isfinite(result.scale):
        raise ParameterError(
            f"The noise scale overflows (L * sigma_max = {args.lipschitz:g} * {result.sigma_max:g}); "
            "use a smaller Lipschitz constant or a larger epsilon."
        )
    if args.json:
        return json.dumps(result.to_dict(per_node=args.per_node), indent=2, allow_nan=False)
    text = result.explain()
    if args.per_node:
        lines = [text, "per node:"]
        for q in result.per_node:
            score = "inf" if not math.isfinite(q.score) else f"{q.score:.6g}"
            lines.append(f"  {q.node}: quilt {{{', '.join(q.quilt)}}}, {q.n_nearby} nearby, "
                         f"max-influence {q.max_influence:.6g}, score {score}")
        text = "\n".join(lines)
    return text
