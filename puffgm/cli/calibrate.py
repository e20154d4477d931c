"""``puffgm calibrate``: calibrate the Markov Quilt Mechanism for a prior class, or noise for one query.

With ``--query`` and ``--method wasserstein`` or ``optimal-laplace`` the noise is
calibrated for that sum query by exact inference, and the output sets it beside
group DP and MQM (docs/queries.md).

PRIOR arguments are network files -- BIF, XMLBIF, Hugin NET, GeNIe XDSL, UAI or
XBN, each also gzipped, recognised by content (docs/foundation.md, "Network file
formats") -- or ``example:NAME`` (several form one class Theta), or Markov-chain
JSON specs (``*.json`` files or inline JSON text, see docs/chains.md).
"""

from __future__ import annotations

import json
import math
from typing import Any

from puffgm.cli.arguments import add_renamed_flag
from puffgm.core.prior import QUERY_METHODS

__all__ = ["register", "run", "add_calibration_arguments", "calibration_from_args", "accuracy_field",
           "QUERY_METHODS"]
#: Seconds a plain ``puffgm calibrate`` may take on a network, a chain or with a query method (``--time-limit``;
#: 0: no limit).  The Python functions default to no limit: a library call is never cut short unasked.
DEFAULT_TIME_LIMIT = 120.0


class _MethodChoices:
    """The choices of ``--method``: every method of a registered prior kind (:mod:`puffgm.api.kinds`) and the
    query-specific methods, sorted; the kinds are imported only when the choices are read (a ``--method``
    given, or ``--help``), so the parser itself imports none.  The kind of the PRIORs refuses the methods it
    does not have."""

    def _names(self) -> list:
        from puffgm.api.kinds import calibration_methods

        return sorted(calibration_methods() + QUERY_METHODS)

    def __iter__(self):
        return iter(self._names())

    def __contains__(self, method) -> bool:
        return method in self._names()


def _finite_float(text: str) -> float:
    import argparse

    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    return v


def register(p) -> None:
    add_calibration_arguments(p)
    p.add_argument("--per-node", action="store_true", help="include every node's active quilt")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--plot", metavar="FILE.png", default=None,
                   help="draw the worst node, its quilt, nearby and remote sets to this file (networks: the DAG; "
                        "chains: the positions; needs matplotlib, pip install 'puffgm[plot]')")


def add_calibration_arguments(p) -> None:
    """The PRIORs and the calibration flags, shared by ``puffgm calibrate`` and ``puffgm release``."""
    p.add_argument("priors", nargs="+", metavar="PRIOR",
                   help="network file (BIF, XMLBIF, Hugin .net, GeNIe .xdsl, UAI, XBN; also gzipped), "
                        "example:NAME (bundled bnlearn network), or chain JSON spec (a file or inline JSON text); "
                        "several PRIORs form the prior class Theta")
    p.add_argument("--epsilon", type=_finite_float, required=True, help="Pufferfish privacy parameter (> 0)")
    p.add_argument("--lipschitz", type=_finite_float, default=1.0, help="L1 Lipschitz constant of the query")
    p.add_argument("--method", choices=_MethodChoices(), default="exact", metavar="METHOD",
                   help="one of %(choices)s: a method of the PRIORs' kind (the MQM and its baselines, for every "
                        "--lipschitz query; the kind refuses methods it does not have), or a query-specific method "
                        f"({', '.join(QUERY_METHODS)}: for the --query given)")
    p.add_argument("--query", default=None, metavar="JSON_OR_FILE",
                   help='a sum query, as JSON text or a JSON file: {"scores": {"NODE": [s0, s1, ...]}}, '
                        '{"scores": [s0, s1, ...]} (every node) or {"count": STATE} (state name or index); '
                        'or a workload released together (--method optimal-laplace): a JSON list of queries '
                        '(each may have a "name") or {"histogram": {"nodes": [...]}} (one count per state)')
    p.add_argument("--weights", default=None, metavar="W1,W2,...",
                   help="workloads: comma-separated positive weights, statistic j gets Laplace(t * w_j) "
                        "(default 1 each), or 'optimal' (a search that lowers the summed expected error)")
    p.add_argument("--max-joint-length", type=int, default=None,
                   help="workloads: largest joint law, in cells (the product of each statistic's number of "
                        "values), exact inference may build (default 262144)")
    p.add_argument("--objective", choices=("abs", "square"), default=None,
                   help="optimal-noise: minimise the expected absolute (default) or squared error")
    p.add_argument("--max-sum-length", type=int, default=None,
                   help="query methods: largest partial-sum axis (largest query value + 1; a workload: of each "
                        "statistic) exact inference may carry (default 65536)")
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
    add_renamed_flag(p, "--protected", "--protect", default=None,
                   help="comma-separated protected nodes (default: every node) (--protect: deprecated spelling)")
    p.add_argument("--paper-convention", action="store_true",
                   help="chains: reproduce the paper's table (counts states of probability zero)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar (networks, query methods, workloads; the bar is drawn on stderr after 2 s, "
                        "only on a terminal)")
    p.add_argument("--max-table-entries", type=int, default=None,
                   help="largest table exact inference may build (networks; default 2**25, 2**26 for a "
                        "workload's grid)")
    p.add_argument("--alpha", type=_finite_float, default=0.05,
                   help="significance of the accuracy statement: the (1 - alpha) half-width of the noise of each "
                        "statistic (default 0.05: 95%%), the 'accuracy' key of --json")
    p.add_argument("--time-limit", type=_finite_float, default=None,
                   help="seconds a calibration (networks, chains, parameter boxes) or a query method may take; "
                        "it answers within them (a note gives the certified gap if the search of the worst quilts "
                        "stopped early) or refuses with the projected time (default 120; 0: no limit)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="networks: search the nodes on the workers of this Dask scheduler (tcp://host:8786; "
                        "pip install 'puffgm[cluster]'); the same result as the local run")


def _command(args) -> str:
    """``puffgm calibrate`` or ``puffgm release``: the command whose flags are checked, for messages."""
    return f"puffgm {getattr(args, 'command', None) or 'calibrate'}"


def _time_limit(args) -> float:
    """``--time-limit``: DEFAULT_TIME_LIMIT when not given, 0 for no limit; a negative value is refused."""
    from puffgm.core.validation import check_time_limit

    if args.time_limit is None:
        return DEFAULT_TIME_LIMIT
    return check_time_limit(args.time_limit, f"{_command(args)} (--time-limit)") or 0.0


def _protected(args) -> list | None:
    """``--protected`` as a list of node names (None when not given)."""
    return None if args.protected is None else [s.strip() for s in args.protected.split(",") if s.strip()]


def _positive_int(args, flag: str) -> int | None:
    """The value of ``--FLAG`` checked as an integer >= 1 (None when not given)."""
    from puffgm.core.validation import check_positive_int

    value = getattr(args, flag.replace("-", "_"))
    return None if value is None else check_positive_int(value, flag, _command(args))


def _flag_names(keys) -> list:
    """Command-line flags of option names (``max_quilt_states`` is ``--max-quilt-states``)."""
    return ["--scheduler" if k == "client" else "--" + k.replace("_", "-") for k in keys]


def _options(args, prior) -> dict:
    """The calibration options given on the command line (flags left out are not passed).

    ``--per-node`` asks chain classes to compute every node's quilt when their
    method takes ``per_node``; ``--quiet`` turns off the progress bar of the kinds
    that have one.  Every other flag is passed on, and the prior kind refuses the
    flags it does not use (one line naming its options).
    """
    from puffgm.exceptions import ParameterError
    from puffgm.networks.quilt_certify import check_certify_budget
    from puffgm.networks.quilt_search import check_search_budget

    given = {
        "protected": _protected(args),
        "max_quilt_states": _positive_int(args, "max-quilt-states"),
        "search_budget": None if args.search_budget is None else check_search_budget(
            args.search_budget, _command(args)),
        "certify_budget": None if args.certify_budget is None else check_certify_budget(
            args.certify_budget, _command(args)),
        "max_table_entries": _positive_int(args, "max-table-entries"),
        "time_limit": None if args.time_limit is None else _time_limit(args) or None,  # 0: no limit
        "paper_convention": True if args.paper_convention else None,
        "client": args.scheduler,
    }
    options: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    accepted = prior.accepted_options(args.method)
    if args.time_limit is None and "time_limit" in accepted:
        options["time_limit"] = DEFAULT_TIME_LIMIT
    unused = sorted(set(options) - set(accepted))
    if unused:
        flags = ", ".join(_flag_names(unused))
        raise ParameterError(f"{flags} {'does' if len(unused) == 1 else 'do'} not apply to {prior.kind} "
                             f"(method {args.method!r}).")
    if args.per_node and "per_node" in accepted:
        options["per_node"] = True
    if args.quiet and "progress" in accepted:
        options["progress"] = False
    return options


def _query_options(args, prior) -> dict:
    """The options of a query-specific calibration given on the command line; others are refused."""
    from puffgm.exceptions import ParameterError

    given = {
        "protected": _protected(args),
        "max_table_entries": _positive_int(args, "max-table-entries"),
        "max_sum_length": _positive_int(args, "max-sum-length"),
    }
    options: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    accepted = prior.query_options or ()
    unused = sorted(set(options) - set(accepted))
    mqm_only = [f for f, v in (("--max-quilt-states", args.max_quilt_states), ("--search-budget", args.search_budget),
                               ("--certify-budget", args.certify_budget), ("--paper-convention", args.paper_convention),
                               ("--per-node", args.per_node), ("--scheduler", args.scheduler)) if v]
    if unused or mqm_only:
        flags = ", ".join(_flag_names(unused) + mqm_only)
        raise ParameterError(f"{flags} {'does' if len(unused) + len(mqm_only) == 1 else 'do'} not apply to "
                             f"method {args.method!r} on {prior.kind}.")
    limit = _time_limit(args)
    if limit != 0:
        options["time_limit"] = limit
    if args.quiet:
        options["progress"] = False
    if args.objective is not None:
        if args.method != "optimal-noise":
            raise ParameterError("--objective applies only to --method optimal-noise.")
        options["objective"] = args.objective
    return options


def calibration_from_args(args, prior):
    """The calibration the flags ask for, checked as ``puffgm calibrate`` checks them.

    A ``QueryCalibration`` or ``WorkloadCalibration`` for a query method (``--query``), else the
    ``CalibrationResult`` of the Markov Quilt Mechanism or a chain baseline for every
    ``--lipschitz``-Lipschitz query.  Flags the kind does not use are refused in one sentence.
    """
    from puffgm.exceptions import ParameterError

    if args.method in QUERY_METHODS:
        return _query_calibration(args, prior)
    if args.query is not None:
        raise ParameterError(f"--query needs a query-specific method (--method {' or '.join(QUERY_METHODS)}); "
                             f"--method {args.method} calibrates for every {args.lipschitz:g}-Lipschitz query.")
    options = _options(args, prior)
    result = prior.calibrate(epsilon=args.epsilon, lipschitz=args.lipschitz, method=args.method, **options)
    if result.applicable and not math.isfinite(result.scale):
        raise ParameterError(
            f"The noise scale overflows (L * sigma_max = {args.lipschitz:g} * {result.sigma_max:g}); "
            "use a smaller Lipschitz constant or a larger epsilon."
        )
    return result


def _query_calibration(args, prior):
    """A query method: the flags checked, then :func:`puffgm.api.dispatch.calibrate_for_query` (as in Python)."""
    from puffgm.api.dispatch import calibrate_for_query
    from puffgm.core.workload import is_workload_spec
    from puffgm.exceptions import ParameterError

    if args.query is None:
        raise ParameterError(f"--method {args.method} calibrates for one query: give --query "
                             '(for example --query \'{"count": 0}\').')
    if args.lipschitz != 1.0:
        raise ParameterError("--lipschitz does not apply to a query-specific method: the query's scores fix it.")
    if prior.query_options is None:
        prior.query_laws(args.query)  # raises the kind's one-line NotApplicableError
    options = _query_options(args, prior)
    if is_workload_spec(args.query):
        limit = _positive_int(args, "max-joint-length")
        options |= {k: v for k, v in (("weights", _weights(args.weights)), ("max_joint_length", limit))
                    if v is not None}
    else:
        for flag, value in (("--weights", args.weights), ("--max-joint-length", args.max_joint_length)):
            if value is not None:
                raise ParameterError(f"{flag} applies to a workload (a JSON list of queries or a histogram), "
                                     "not to one query.")
    return calibrate_for_query(prior, args.query, epsilon=args.epsilon, method=args.method, **options)


def _weights(text: str | None):
    """``--weights 1,2.5``: a list of floats (validated by the calibration), ``"optimal"`` or None."""
    from puffgm.exceptions import ParameterError

    if text is None or text == "optimal":
        return text
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ParameterError(f"--weights takes comma-separated numbers; got {text!r}.") from None


def applied_time_limit(args, prior) -> dict:
    """``{"time_limit": seconds or None, "time_limit_source": ...}``: the budget the command applied.

    The command line gives every calibration DEFAULT_TIME_LIMIT seconds unless ``--time-limit`` says
    otherwise (0: none); the Python API applies no limit unless ``time_limit=`` is given, so every
    output of the command says which limit applied and where it came from.
    """
    takes = args.method in QUERY_METHODS or "time_limit" in prior.accepted_options(args.method)
    if not takes:
        return {"time_limit": None, "time_limit_source": f"--method {args.method} on {prior.kind} takes no time limit"}
    seconds = _time_limit(args)
    source = ("--time-limit" if args.time_limit is not None else
              f"default of {_command(args)}; the Python API applies none unless time_limit= is given")
    return {"time_limit": seconds or None, "time_limit_source": source}


def limit_line(limit: dict) -> str:
    """One line of text: the time limit that applied and its source."""
    seconds = limit["time_limit"]
    return f"time limit: {'none' if seconds is None else f'{seconds:g} s'} ({limit['time_limit_source']})"


def _check_plot(args) -> None:
    """Refuse --plot before any work when it cannot be drawn (a query method, no matplotlib, a baseline)."""
    from puffgm.core.plot import require_matplotlib
    from puffgm.exceptions import ParameterError

    if args.method in QUERY_METHODS or args.method in ("groupdp", "gk16"):
        raise ParameterError(f"--plot draws the quilt of an MQM calibration; --method {args.method} has none.")
    require_matplotlib()


def accuracy_field(args, result) -> dict:
    """``{"accuracy": [...]}``: per statistic, the noise scale and the (1 - ``--alpha``) half-width of its noise."""
    from puffgm.core.accuracy import accuracy_dicts, check_alpha

    return {"accuracy": accuracy_dicts(result.accuracy(check_alpha(args.alpha, f"{_command(args)} (--alpha)")))}


def run(args) -> str:
    from puffgm.api import as_prior
    from puffgm.core.accuracy import check_alpha
    from puffgm.core.validation import check_positive_finite

    check_positive_finite(args.epsilon, "epsilon", "puffgm calibrate")
    check_positive_finite(args.lipschitz, "lipschitz", "puffgm calibrate")
    check_alpha(args.alpha, "puffgm calibrate (--alpha)")
    if args.plot is not None:
        _check_plot(args)
    prior = as_prior(list(args.priors))
    result = calibration_from_args(args, prior)
    limit = applied_time_limit(args, prior)
    accuracy = accuracy_field(args, result)
    if args.method in QUERY_METHODS:
        if args.json:
            return json.dumps(result.to_dict() | accuracy | limit, indent=2, allow_nan=False)
        return result.explain() + "\n" + limit_line(limit)
    if args.plot is not None:
        result.plot(args.plot)
    if args.json:
        return json.dumps(result.to_dict(per_node=args.per_node) | accuracy | limit, indent=2, allow_nan=False)
    text = result.explain() + "\n" + limit_line(limit)
    text += f"\nquilt picture saved to {args.plot}" if args.plot is not None else ""
    if args.per_node:
        lines = [text, "per node:"]
        for q in result.per_node:
            score = "inf" if not math.isfinite(q.score) else f"{q.score:.6g}"
            lines.append(f"  {q.node}: quilt {{{', '.join(q.quilt)}}}, {q.n_nearby} nearby, "
                         f"max-influence {q.max_influence:.6g}, score {score}")
        text = "\n".join(lines)
    return text
