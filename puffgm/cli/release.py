"""``puffgm release``: calibrate, compute the true value from one database, and release it with noise.

::

    puffgm release PRIOR... --data FILE --query JSON_OR_FILE --method wasserstein|optimal-laplace|optimal-noise
                   --epsilon E [--ledger FILE.db] [--budget B] [--seed N] [--label NAME] [--json]
    puffgm release PRIOR... --method exact|approx|groupdp|gk16 --answer X --epsilon E [--lipschitz L] ...
                   [--alpha A] [--clamp [LO,HI]] [--round] [--simplex] [--total N]

A query method calibrates for the ``--query`` (or the workload) exactly as ``puffgm calibrate``
does, and the true value is computed from ``--data``, one database of the prior class: a CSV
file with a header row -- for a network one column per node and one row of states, for a
Markov chain one column of states in time order (the header names it) -- or a JSON file (an
object node -> state, or a list of states).  The Markov Quilt Mechanism (``--method exact``,
and the chain baselines) covers any L-Lipschitz query, so it takes the exact answer of the
caller's query, named as such: ``--answer X`` (comma-separated for a vector).

Every release goes through a :class:`puffgm.accounting.PrivacyAccountant`: ``--ledger FILE.db``
keeps it in a durable SQLite ledger (``--budget`` sets the ledger's total when the file is
created, and must agree with it afterwards), so the budget lasts across runs.  The output is
the noisy value, the release, the accountant's guarantee and the remaining budget; ``--json``
prints one object.  Every output states the accuracy of each released statistic (its noise
scale and the ``1 - --alpha`` half-width of its noise, :mod:`puffgm.core.accuracy`), and the
post-processing flags add a post-processed value beside the released one, at no privacy cost
(:mod:`puffgm.core.postprocess`): ``--clamp`` to the statistic's range (or ``--clamp LO,HI``),
``--round`` to integers, ``--simplex`` for relative frequencies summing to one, ``--total N`` for a
table consistent with a public total.  A refusal of the accountant (over budget, or no composition theorem) is
one line on stderr and exit code 2, and no noise is drawn.
"""

from __future__ import annotations

import csv
import json
import math
import os

from puffgm.cli.arguments import integer, number, number_list
from puffgm.cli.calibrate import (
    QUERY_METHODS,
    add_calibration_arguments,
    applied_time_limit,
    calibration_from_args,
    limit_line,
)

__all__ = ["register", "run", "read_data_file", "add_postprocessing_arguments"]


def register(p) -> None:
    add_calibration_arguments(p)
    p.add_argument("--data", metavar="FILE", default=None,
                   help="query methods: one database to compute the true value from, a CSV file with a header row "
                        "(a network: one column per node, one row; a chain: one column of states in time order) or "
                        "a JSON file (an object node -> state, or a list of states)")
    p.add_argument("--answer", type=number_list, default=None, metavar="X",
                   help="--method exact (and the chain baselines): the exact answer of your L-Lipschitz query "
                        "(comma-separated for a vector); MQM covers any such query, so puffgm cannot compute it")
    p.add_argument("--ledger", metavar="FILE.db", default=None,
                   help="keep the accountant in this durable SQLite ledger (created if absent), so the budget "
                        "lasts across runs; 'puffgm ledger show FILE.db' prints it")
    p.add_argument("--budget", type=number, default=None,
                   help="the total privacy budget (with --ledger: stored when the file is created, and it must "
                        "agree afterwards)")
    p.add_argument("--seed", type=integer, default=None,
                   help="seeded numpy noise, reproducible and NOT for production (default: secure samplers)")
    p.add_argument("--label", default=None, help="the release's name in the ledger")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: the noisy value, the release, its accuracy, the guarantee and the "
                        "budget left")
    add_postprocessing_arguments(p)
    p.set_defaults(per_node=False, plot=None)


def run(args) -> str:
    from puffgm.api import as_prior
    from puffgm.api.release import release
    from puffgm.core.accuracy import check_alpha
    from puffgm.core.validation import check_positive_finite

    check_positive_finite(args.epsilon, "epsilon", "puffgm release")
    check_positive_finite(args.lipschitz, "lipschitz", "puffgm release")
    check_alpha(args.alpha, "puffgm release (--alpha)")
    _check_postprocessing(args)
    prior = as_prior(list(args.priors))
    data, answer = _inputs(args, prior)  # before any calibration: a bad file costs no time
    accountant = _accountant(args)
    cal = calibration_from_args(args, prior)
    _dry_postprocessing(args, cal)  # a post-processing the ranges cannot meet is refused before any noise
    rel = release(cal, data, answer=answer, accountant=accountant, random_state=args.seed, label=args.label)
    return _output(args, rel, accountant.report(), applied_time_limit(args, prior))


def add_postprocessing_arguments(p) -> None:
    """``--clamp [LO,HI]``, ``--round``, ``--simplex``, ``--total N``: post-processing at no privacy cost."""
    p.add_argument("--clamp", nargs="?", const=True, default=None, metavar="LO,HI",
                   help="post-process: clamp each statistic to its range (query methods record it), or to LO,HI "
                        "(no privacy cost)")
    p.add_argument("--round", action="store_true", help="post-process: round to integers (with --total: integers "
                                                        "summing to it)")
    p.add_argument("--simplex", action="store_true",
                   help="post-process: relative frequencies, non-negative and summing to one (projection onto the "
                        "simplex)")
    p.add_argument("--total", type=number, default=None, metavar="N",
                   help="post-process: make the table consistent with this public total (Euclidean projection)")


def _clamp_range(text):
    """``--clamp``: True (the statistics' ranges) or the pair LO,HI."""
    from puffgm.exceptions import ParameterError

    if text is None or text is True:
        return text
    parts = text.split(",")
    try:
        lo, hi = (float(x) for x in parts)
    except ValueError:
        raise ParameterError(f"--clamp takes LO,HI (two numbers) or nothing (the statistic's range); got "
                             f"{text!r}.") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        raise ParameterError(f"--clamp LO,HI needs finite LO <= HI; got {text!r}.")
    return (lo, hi)


def _postprocessing(args) -> dict | None:
    """The post-processing options of the flags (None when no flag asks for any)."""
    options = {"clamp": _clamp_range(args.clamp), "round": args.round, "simplex": args.simplex, "total": args.total}
    return options if any(v not in (None, False) for v in options.values()) else None


def _check_postprocessing(args) -> None:
    """Refuse contradictory post-processing flags before any calibration."""
    from puffgm.exceptions import ParameterError

    options = _postprocessing(args)
    if options is None:
        return
    if options["clamp"] is True and args.method not in QUERY_METHODS:
        raise ParameterError(f"--clamp alone clamps to the range a query method records; --method {args.method} "
                             "covers every Lipschitz query, so give the range: --clamp LO,HI.")
    if options["round"] and options["simplex"]:
        raise ParameterError("--simplex gives relative frequencies summing to one: they cannot also be --round-ed.")
    if options["total"] is not None and not math.isfinite(options["total"]):
        raise ParameterError("--total must be a finite number.")


def _dry_postprocessing(args, cal) -> None:
    """Run the post-processing asked for on a value inside the ranges, so that its refusal comes before the release."""
    from types import SimpleNamespace

    from puffgm.core.postprocess import postprocess, statistic_ranges

    options = _postprocessing(args)
    if options is None:
        return
    ranges = statistic_ranges(SimpleNamespace(calibration=cal))
    if ranges is not None:
        value = [0.5 * (lo + hi) for lo, hi in ranges]
    else:
        value = [0.0] * len(args.answer or [0.0])
    postprocess(SimpleNamespace(calibration=cal, value=value), **options)


def _inputs(args, prior) -> tuple:
    """(data, answer): the database read and checked for a query method, or the answer for MQM."""
    from puffgm.api.query import record_layout
    from puffgm.exceptions import ParameterError

    if args.method in QUERY_METHODS:
        if args.answer is not None:
            raise ParameterError(f"--method {args.method} computes the true value from the data: give --data FILE, "
                                 "not --answer.")
        if args.data is None:
            raise ParameterError(f"--method {args.method} computes the true value from one database: give --data "
                                 "FILE (a CSV file with a header row).")
        layout = record_layout(prior)
        data = read_data_file(args.data, trace=layout.trace)
        layout.read(data)  # checked now, the query's value after calibrating
        return data, None
    if args.data is not None:
        raise ParameterError(f"--method {args.method} (the Markov Quilt Mechanism) covers any L-Lipschitz query, so "
                             "puffgm cannot compute its answer from --data: give the exact answer of your query as "
                             "--answer X, or calibrate for your --query with --method "
                             f"{', '.join(QUERY_METHODS[:-1])} or {QUERY_METHODS[-1]}.")
    if args.answer is None:
        raise ParameterError(f"--method {args.method} (the Markov Quilt Mechanism) covers any L-Lipschitz query: "
                             "give the exact answer of your query as --answer X.")
    return None, args.answer[0] if len(args.answer) == 1 else args.answer


def _accountant(args):
    """The accountant of this release: in a durable ledger with --ledger, else in memory."""
    from puffgm.accounting import PrivacyAccountant
    from puffgm.core.validation import check_positive_finite

    budget = None if args.budget is None else check_positive_finite(args.budget, "budget", "puffgm release")
    return PrivacyAccountant(budget=budget, ledger=args.ledger)


def read_data_file(path: str, *, trace: bool):
    """One database from a CSV file with a header row (or a JSON file), as :func:`puffgm.release` takes it.

    Parameters
    ----------
    path : str
        ``*.json``: an object node -> state (a network) or a list of states (a chain).  Any other
        file is CSV: for a network (``trace=False``) one column per node and one row of states,
        for a chain (``trace=True``) one column of states in time order under a header.
    trace : bool
        Read one trace (a chain) rather than one record (a network).

    Returns
    -------
    dict (node -> state) or list of states
        Empty cells are gaps (None), which the release refuses.

    Raises
    ------
    ParameterError
        One sentence: no such file, no data row, several rows of a network (a calibration covers
        one database), several columns of a chain, or a row whose length is not the header's.
    """
    from puffgm.exceptions import ParameterError

    if not os.path.isfile(path):
        raise ParameterError(f"There is no data file {path!r}.")
    if path.lower().endswith(".json"):
        with open(path, encoding="utf-8") as fh:
            try:
                return json.load(fh)
            except json.JSONDecodeError as exc:
                raise ParameterError(f"The data file {path!r} is not valid JSON: {exc.msg} (line {exc.lineno}).") \
                    from None
    with open(path, encoding="utf-8-sig", newline="") as fh:
        rows = [r for r in csv.reader(fh) if any(c.strip() for c in r)]
    if not rows:
        raise ParameterError(f"The data file {path!r} is empty: give a header row and the data.")
    header, body = [h.strip() for h in rows[0]], rows[1:]
    if len(set(header)) != len(header):
        raise ParameterError(f"The header of {path!r} names a column twice.")
    for i, row in enumerate(body, 2):
        if len(row) != len(header):
            raise ParameterError(f"Line {i} of {path!r} has {len(row)} cell(s), but the header has {len(header)}.")
    return _trace_of(path, header, body) if trace else _record_of(path, header, body)


def _cell(text: str):
    """A CSV cell: its text, or None for an empty cell (a gap)."""
    text = text.strip()
    return text if text else None


def _record_of(path: str, header: list, body: list) -> dict:
    from puffgm.exceptions import ParameterError

    if len(body) != 1:
        raise ParameterError(
            f"The data file {path!r} has {len(body)} data rows, but a calibration covers one database, and a "
            "network's database is one record of its nodes: give one row under the header of node names.")
    return {h: _cell(c) for h, c in zip(header, body[0], strict=True)}


def _trace_of(path: str, header: list, body: list) -> list:
    from puffgm.exceptions import ParameterError

    if len(header) != 1:
        raise ParameterError(
            f"The data file {path!r} has {len(header)} columns, but a calibration covers one database, and a "
            "chain's database is one trace: give one column of states in time order (the header names it).")
    if not body:
        raise ParameterError(f"The data file {path!r} has a header and no states.")
    return [_cell(r[0]) for r in body]


def _output(args, rel, report, limit: dict) -> str:
    """The noisy value, the release, the guarantee and the budget left (or one JSON object)."""
    from puffgm.core.accuracy import accuracy_dicts
    from puffgm.core.release import jsonable

    names = getattr(rel.calibration, "names", None) if hasattr(rel, "calibration") else None
    remaining = None if math.isinf(report.remaining) else report.remaining
    accuracy = rel.accuracy(args.alpha)
    options = _postprocessing(args)
    post = None if options is None else rel.postprocess(**options)
    if args.json:
        out = {"value": jsonable(rel.value), "names": None if names is None else list(names),
               "release": rel.to_dict(), "accuracy": accuracy_dicts(accuracy), "guarantee": report.explain(),
               "total": report.total, "budget": report.budget, "remaining": remaining, "ledger": args.ledger} | limit
        if post is not None:
            out["postprocessed"] = post.to_dict()
        return json.dumps(out, indent=2, allow_nan=False)
    if names is not None:
        value = ", ".join(f"{n} {v:.10g}" for n, v in zip(names, rel.value, strict=True))
    else:
        value = _number(rel.value)
    lines = [f"released: {value}", rel.explain(), f"guarantee: {report.explain()}",
             "remaining budget: " + ("unlimited (no --budget)" if remaining is None else f"{remaining:g}")]
    if args.ledger is not None:
        lines.append(f"ledger: {args.ledger} ('puffgm ledger show {args.ledger}' lists its releases)")
    lines.extend(f"accuracy: {a.explain()}" for a in accuracy)
    if post is not None:
        lines.append(post.explain())
    lines.append(limit_line(limit))
    return "\n".join(lines)


def _number(value) -> str:
    """A float as ``%.10g``; an array as a bracketed list of them."""
    try:
        return f"{float(value):.10g}"
    except TypeError:
        return "[" + ", ".join(f"{float(v):.10g}" for v in value) + "]"
