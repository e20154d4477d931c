"""``puffgm ledger show FILE``: the releases a durable ledger holds and their composed guarantee.

A ledger file is the SQLite file a :class:`puffgm.accounting.PrivacyAccountant` keeps its
entries in (``PrivacyAccountant(budget=B, ledger="FILE.db")``): every charged and released
release with its time, epsilon, composition key and theorem.  ``show`` prints the
accountant's report and one line per entry; ``--json`` prints one object with ``total``,
``budget`` (null for an unlimited ledger), ``unlimited``, ``remaining``, ``theorem``,
``guarantee`` and ``entries``.

``show`` opens the file read-only (SQLite's ``mode=ro``): it never creates, writes or
locks it for writing, and a file that is not a puffgm ledger (not SQLite, or without the
ledger's ``meta`` and ``entries`` tables and format tag) is refused in one line, exit
code 2, byte-identical afterwards.
"""

from __future__ import annotations

import json
import math

from puffgm.cli.arguments import number

__all__ = ["register", "run"]


def register(p) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    show = sub.add_parser("show", help="print the ledger's releases and composed guarantee",
                          description="print the ledger's releases and composed guarantee")
    show.add_argument("file", metavar="FILE", help="the ledger file (SQLite)")
    show.add_argument("--json", action="store_true", help="print one JSON object")
    show.add_argument("--timeout", type=number, default=10.0, metavar="SECONDS",
                      help="how long to wait while another process holds the file locked (default 10)")


def run(args) -> str:
    from puffgm.accounting import PrivacyAccountant
    from puffgm.accounting.ledger import SQLiteLedger
    from puffgm.core.validation import check_positive_finite

    timeout = check_positive_finite(args.timeout, "timeout", "puffgm ledger show")
    # read-only: refuses any other file and changes nothing
    store = SQLiteLedger(args.file, budget=None, read_only=True, timeout=timeout)
    report = PrivacyAccountant(ledger=store).report()
    if args.json:
        return json.dumps({"file": args.file, "total": report.total, "budget": report.budget,
                           "unlimited": report.budget is None,
                           "remaining": None if math.isinf(report.remaining) else report.remaining,
                           "theorem": report.theorem, "guarantee": report.guarantee,
                           "entries": [json.loads(e.to_json()) for e in report.entries]}, indent=2)
    lines = [report.explain()]
    for i, e in enumerate(report.entries, 1):
        label = f" [{e.label}]" if e.label else ""
        lines.append(f"{i:>4}  {e.time}  {e.status:<8}  epsilon {e.epsilon:g}  {e.mechanism}{label}  key {e.key}")
    return "\n".join(lines)
