"""``puffgm release``: calibrate, compute the true value from one database, and release it with noise.

::

    puffgm release PRIOR... --data FILE --query JSON_OR_FILE --method wasserstein|optimal-laplace|optimal-noise
                   --epsilon E [--ledger FILE.db] [--budget B] [--seed N] [--label NAME] [--json]
    puffgm release PRIOR... --method exact|approx|groupdp|gk16 --answer X --epsilon E [--lipschitz L] ...
                   [--alpha A] [--clamp [LO,HI]] [--round] [--simplex] [--total N]

Many units (a panel of traces, a table of respondents)::

    puffgm release PRIOR... --data FILE.csv --unit COLUMN [--time COLUMN] [--state COLUMN] [--gaps split]
                   [--each] [--relative] --query JSON --method M --epsilon E [--ledger FILE --budget B] [--json]

releases the sum over units of each unit's statistic (``--each``: one statistic per unit, all under
one charge), with noise calibrated for ONE unit of the class (``--method exact``: sigma_max times the
query's Lipschitz constant; the query methods: the unit's exact laws).  A chain's CSV is long (a unit
column, an optional time column, a state column) or wide (a unit column and one column per time
step, one row per unit); a network's is one row per unit with one column per node.  Units are
independent only under the prior: correlated units must be modelled jointly as one network.

A query method calibrates for the ``--query`` (or the workload) exactly as ``puffgm calibrate``
does, and the true value is computed from ``--data``, one database of the prior class: a CSV
file with a header row -- for a network one column per node and one row of states, for a
Markov chain one column of states in time order (the header names it) -- or a JSON file (an
object node -> state, or a list of states).  The Markov Quilt Mechanism (``--method exact``,
and the chain baselines) covers any L-Lipschitz query, so it takes the exact answer of the
caller's query, named as such: ``--answer X`` (comma-separated for a vector).

Every release goes through a :class:`puffgm.accounting.PrivacyAccountant`: ``--ledger FILE.db``
keeps it in a durable SQLite ledger (``--budget`` sets the ledger's total when the file is
created -- a new ledger needs it, ``--budget unlimited`` by explicit choice -- and must agree
with it afterwards), so the budget lasts across runs.  The output is
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
from typing import NamedTuple

from puffgm.cli.arguments import integer, number, number_list
from puffgm.cli.calibrate import (
    QUERY_METHODS,
    add_calibration_arguments,
    applied_time_limit,
    calibration_from_args,
    limit_line,
)

__all__ = ["register", "run", "read_data_file", "read_units_file", "add_postprocessing_arguments"]


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
    p.add_argument("--budget", type=budget_value, default=None, metavar="B",
                   help="the total privacy budget, or 'unlimited' (with --ledger: a new ledger needs one, stored "
                        "when the file is created; it must agree afterwards)")
    p.add_argument("--seed", type=integer, default=None,
                   help="seeded numpy noise, reproducible and NOT for production (default: secure samplers)")
    p.add_argument("--label", default=None, help="the release's name in the ledger")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: the noisy value, the release, its accuracy, the guarantee and the "
                        "budget left")
    p.add_argument("--unit", metavar="COLUMN", default=None,
                   help="many units: --data is a panel (a CSV with this unit column), and the release is the sum over "
                        "units of each unit's statistic with noise calibrated for one unit (units are independent "
                        "only under the prior)")
    p.add_argument("--time", metavar="COLUMN", default=None, help="with --unit, a long CSV of traces: the column "
                                                                   "ordering each unit's rows")
    p.add_argument("--state", metavar="COLUMN", default=None, help="with --unit, a long CSV of traces: the column of "
                                                                    "states (default: the one column left)")
    p.add_argument("--gaps", choices=("refuse", "split"), default="refuse",
                   help="with --unit: a gap (empty cell) inside a trace is refused (default) or splits the trace "
                        "into independent units")
    p.add_argument("--each", action="store_true",
                   help="with --unit: one release per unit, all under one charge (parallel composition)")
    p.add_argument("--relative", action="store_true",
                   help="with --unit: divide by the public total number of entries (relative frequencies)")
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
    if args.unit is not None:
        return _run_units(args, prior)
    _no_unit_flags(args)
    data, answer = _inputs(args, prior)  # before any calibration: a bad file costs no time
    accountant = _accountant(args)
    cal = calibration_from_args(args, prior)
    _dry_postprocessing(args, cal)  # a post-processing the ranges cannot meet is refused before any noise
    rel = release(cal, data, answer=answer, accountant=accountant, random_state=args.seed, label=args.label)
    return _output(args, rel, accountant.report(), applied_time_limit(args, prior))


def _no_unit_flags(args) -> None:
    from puffgm.exceptions import ParameterError

    for flag, used in (("--time", args.time is not None), ("--state", args.state is not None),
                       ("--gaps", args.gaps != "refuse"), ("--each", args.each), ("--relative", args.relative)):
        if used:
            raise ParameterError(f"{flag} applies to a release on many units: give --unit COLUMN.")


def _run_units(args, prior) -> str:
    """A release on many units: read the panel, calibrate one unit (each length once), release, side by side."""
    from puffgm.api.recipes import remember
    from puffgm.api.release import release
    from puffgm.exceptions import ParameterError

    if _postprocessing(args) is not None and (args.each or args.clamp is True):
        raise ParameterError("On many units, post-processing applies to the aggregate with explicit ranges: give "
                             "--clamp LO,HI (the aggregate's range), not --clamp alone, and not with --each.")
    if args.answer is not None:
        raise ParameterError("A release on units computes each unit's statistic from --data: give --query, not "
                             "--answer.")
    if args.data is None or args.query is None:
        raise ParameterError("A release on units needs --data FILE.csv (the panel) and --query JSON (the statistic "
                             "of one unit whose sum over units is released).")
    from puffgm.api.query import record_layout
    from puffgm.api.units import read_units

    frame = read_units_file(args.data, time=args.time)
    layout = record_layout(prior)
    units = read_units(frame, layout, unit=args.unit, time=args.time, state=args.state, gaps=args.gaps)
    if layout.trace and max(units.lengths) > len(layout.nodes):  # refused before any calibration
        raise ParameterError(f"A unit has length {max(units.lengths)}, longer than the class's T = "
                             f"{len(layout.nodes)}: give the class at the longest unit's length.")
    query = args.query
    if args.method not in QUERY_METHODS:
        args.query = None  # the Markov Quilt Mechanism covers every query: its scale is sigma_max x the query's L
    accountant = _accountant(args)
    cal = remember(calibration_from_args(args, prior), prior, lambda k: calibration_from_args(args, k))
    rel = release(cal, frame, unit=args.unit, time=args.time, state=args.state, gaps=args.gaps, each=args.each,
                  relative=args.relative, query=None if args.method in QUERY_METHODS else query,
                  accountant=accountant, random_state=args.seed, label=args.label)
    return _units_output(args, rel, accountant.report(), applied_time_limit(args, prior))


def read_units_file(path: str, *, time: str | None = None):
    """A panel from a CSV file with a header row, as a pandas DataFrame of text cells (empty cells are gaps).

    The ``time`` column, when given, is read as numbers if every cell is one (so 10 sorts after 9).
    """
    from puffgm.exceptions import ParameterError

    if not os.path.isfile(path):
        raise ParameterError(f"There is no data file {path!r}.")
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas ships with the data extra
        raise ParameterError('A release on units reads its CSV with pandas: pip install "puffgm[data]".') from None
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""], skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ParameterError(f"The data file {path!r} is not a CSV file with a header row: "
                             f"{str(exc).splitlines()[0]}") from None
    if frame.empty:
        raise ParameterError(f"The data file {path!r} has a header and no rows.")
    frame.columns = [str(c).strip() for c in frame.columns]
    if time is not None and time in frame.columns:
        numeric = pd.to_numeric(frame[time], errors="coerce")
        if not numeric.isna().any():
            frame[time] = numeric
    return frame


def _units_output(args, rel, report, limit: dict) -> str:
    """The panel's noisy aggregate (or per-unit values), the side by side, the guarantee (or one JSON object)."""
    from puffgm.api.units import comparison_text, panel_summary
    from puffgm.core.accuracy import accuracy_dicts

    remaining = None if math.isinf(report.remaining) else report.remaining
    guarantee = f"{report.explain()}; {rel.details['independence']}"
    accuracy, post = _accuracy_and_postprocessed(args, rel)
    if args.json:
        out = panel_summary(rel) | {"release": rel.to_dict(), "accuracy": accuracy_dicts(accuracy),
                                    "guarantee": guarantee, "total": report.total, "budget": report.budget,
                                    "remaining": remaining, "ledger": args.ledger} | limit
        if post is not None:
            out["postprocessed"] = post.to_dict()
        return json.dumps(out, indent=2, allow_nan=False)
    lines = []
    if rel.each:
        lines.append(f"released one value per unit ({len(rel.units)} units):")
        for r in rel.releases[:20]:
            v = r.get("value", r.get("values"))
            text = ", ".join(f"{n} {x:.10g}" for n, x in v.items()) if isinstance(v, dict) else f"{v:.10g}"
            lines.append(f"  {r['unit']}: {text}")
        if len(rel.units) > 20:
            lines.append(f"  ... {len(rel.units) - 20} more (--json lists every unit)")
    elif rel.names is not None:
        lines.append(f"released (sum over {len(rel.units)} units): "
                     + ", ".join(f"{n} {v:.10g}" for n, v in zip(rel.names, rel.value, strict=True)))
    else:
        lines.append(f"released (sum over {len(rel.units)} units): {rel.value:.10g}")
    lengths = rel.details["lengths"]
    if lengths:
        lines.append("unit lengths: " + ", ".join(f"{T} ({c} units)" for T, c in lengths.items())
                     + f"; each length calibrated once ({rel.details['calibrations']} calibration(s))")
    if rel.details["relative"]:
        lines.append(f"relative: divided by the public total number of entries ({rel.details['entries']:g})")
    lines += [rel.explain(), comparison_text(rel)]
    lines += [f"note: {n}" for n in rel.details["notes"]]
    lines += [f"guarantee: {guarantee}", "remaining budget: " + _remaining_text(report)]
    bound = " (the largest per-unit noise)" if rel.each else ""
    return "\n".join(lines + _closing_lines(args, accuracy, post, limit, f"accuracy{bound}"))


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
    from puffgm.accounting.ledger import check_budget

    return PrivacyAccountant(budget=check_budget(budget=args.budget, where="puffgm release"), ledger=args.ledger)


def budget_value(text: str) -> float:
    """``--budget``: a number, or ``unlimited`` (math.inf, an explicit choice)."""
    return math.inf if text.strip().lower() == "unlimited" else number(text)


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
        Empty cells are gaps (None), which the release refuses; a blank line inside a chain's
        column is a gap at its position too (never dropped, so no later state moves).  Empty
        lines before the header and after the last row are ignored.

    Raises
    ------
    ParameterError
        One sentence: no such file, no data row, several rows of a network (a calibration covers
        one database), several columns of a chain, a row whose length is not the header's, or a
        file the csv module cannot parse (``csv.Error``) or that is not UTF-8 text.
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
    numbered = _csv_rows(path)
    while numbered and not numbered[0].cells:  # empty lines before the header
        numbered.pop(0)
    while numbered and not numbered[-1].cells:  # empty lines after the last row: no position moves
        numbered.pop()
    if not numbered:
        raise ParameterError(f"The data file {path!r} is empty: give a header row and the data.")
    header = [h.strip() for h in numbered[0].cells]
    if len(set(header)) != len(header):
        raise ParameterError(f"The header of {path!r} names a column twice.")
    body = []
    for line, row in numbered[1:]:
        row = row or [""] * len(header)  # a blank line inside the data: every cell of the row is a gap
        if len(row) != len(header):
            raise ParameterError(f"Line {line} of {path!r} has {len(row)} cell(s), but the header has {len(header)}.")
        body.append(row)
    return _trace_of(path, header, body) if trace else _record_of(path, header, body)


class _CsvRow(NamedTuple):
    """One row of a CSV file: its line number and its cells (``[]`` for a blank line)."""

    line: int
    cells: list


def _csv_rows(path: str) -> list[_CsvRow]:
    """(line number, cells) of every row of a CSV file, blank lines kept (``[]``).

    Fields of any length up to the file's size are read (the csv module's default limit,
    131,072 characters, is raised for the read and restored after); a malformed file
    (``csv.Error``) is refused in one sentence.
    """
    from puffgm.exceptions import ParameterError

    old = csv.field_size_limit()
    try:
        csv.field_size_limit(max(old, min(os.path.getsize(path) + 1, _FIELD_LIMIT)))
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, strict=True)
            out = []
            for row in reader:
                out.append(_CsvRow(reader.line_num, row))
            return out
    except csv.Error as exc:
        raise ParameterError(f"The data file {path!r} is not CSV that puffgm reads (line "
                             f"{reader.line_num}: {exc}).") from None
    except UnicodeDecodeError:
        raise ParameterError(f"The data file {path!r} is not UTF-8 text.") from None
    finally:
        csv.field_size_limit(old)


#: The largest CSV field the data reader accepts (the csv module's limit is a C long).
_FIELD_LIMIT = 2**31 - 1


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
    accuracy, post = _accuracy_and_postprocessed(args, rel)
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
             "remaining budget: " + _remaining_text(report)]
    return "\n".join(lines + _closing_lines(args, accuracy, post, limit, "accuracy"))


def _accuracy_and_postprocessed(args, rel) -> tuple:
    """The release's accuracy rows at ``--alpha`` and its post-processed value (None without the flags)."""
    options = _postprocessing(args)
    return rel.accuracy(args.alpha), None if options is None else rel.postprocess(**options)


def _closing_lines(args, accuracy, post, limit: dict, heading: str) -> list:
    """The text output's last lines: the ledger, the accuracy rows, the post-processed value, the time limit."""
    lines = []
    if args.ledger is not None:
        lines.append(f"ledger: {args.ledger} ('puffgm ledger show {args.ledger}' lists its releases)")
    lines.extend(f"{heading}: {a.explain()}" for a in accuracy)
    if post is not None:
        lines.append(post.explain())
    lines.append(limit_line(limit))
    return lines


def _remaining_text(report) -> str:
    """The budget left, or why none is left to spend (a release held alone closes the ledger)."""
    if report.closed_to_all:
        budget = "unlimited budget" if report.budget is None else f"budget {report.budget:g}"
        return f"none (the ledger is closed to further releases; {budget})"
    return "unlimited (no --budget)" if math.isinf(report.remaining) else f"{report.remaining:g}"


def _number(value) -> str:
    """A float as ``%.10g``; an array as a bracketed list of them."""
    try:
        return f"{float(value):.10g}"
    except TypeError:
        return "[" + ", ".join(f"{float(v):.10g}" for v in value) + "]"
