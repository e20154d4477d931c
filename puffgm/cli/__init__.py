"""The ``puffgm`` command line.

Subcommands live in :mod:`puffgm.cli` (one module each, imported lazily so that
``puffgm --help`` and the chain paths never import pgmpy).  Every error a
subcommand raises on purpose (a :class:`~puffgm.exceptions.PuffgmError`, or a file that
cannot be read) becomes one line on stderr and exit code 2; any other exception is a bug:
one line "internal error: ... (please report ...)" and exit code 1, with the traceback
behind ``puffgm --debug`` or the environment variable ``PUFFGM_DEBUG=1``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import traceback

from puffgm import __version__

__all__ = ["main"]

#: (subcommand, module under puffgm.cli, one-line help)
COMMANDS = (
    ("calibrate", "calibrate", "calibrate a Markov Quilt Mechanism for a prior class"),
    ("curve", "curve", "derive the a(b)-influence curve of a prior class"),
    ("translate", "translate", "translate between the Pufferfish epsilon and epsilon_DP along a curve"),
    ("audit", "audit", "exact Pufferfish audit of a small instantiation"),
    ("blowfish", "blowfish", "Blowfish policies: policy-specific sensitivity and releases"),
    ("leakage", "leakage", "temporal privacy leakage of per-step DP releases on a Markov chain (Cao et al.)"),
    ("conditions", "conditions",
     "necessary conditions for composition (Bai et al. Theorems 4, 5) of a finite mechanism"),
    ("release", "release", "calibrate and release a noisy answer computed from one database (a CSV file)"),
    ("ledger", "ledger", "show a durable privacy ledger (a SQLite file): its releases and composed guarantee"),
    ("fit", "fit", "fit a prior class (a network, or a Markov chain) to a CSV file and save it as a PRIOR"),
)


class _OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr with exit code 2."""

    def error(self, message):  # noqa: D401 - argparse API
        sys.stderr.write(f"puffgm: error: {message}\n")
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="puffgm",
        description="Pufferfish privacy for correlated data with graphical-model priors.",
    )
    parser.add_argument("--version", action="version", version=f"puffgm {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="print the traceback of an error (also: environment variable PUFFGM_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_OneLineParser)
    sub.required = True
    for name, module, help_text in COMMANDS:
        try:
            mod = importlib.import_module(f"puffgm.cli.{module}")
        except ModuleNotFoundError as exc:  # a subcommand not shipped in this build
            if exc.name == f"puffgm.cli.{module}":
                continue
            raise
        p = sub.add_parser(name, help=help_text, description=help_text)
        mod.register(p)
        p.set_defaults(run_command=mod.run)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``puffgm`` command; returns the process exit code.

    0 on success; 2 for bad input (a puffgm error, or a file that cannot be read: one line on
    stderr); 1 for an internal error, a bug (one line asking for a report; ``--debug`` or
    ``PUFFGM_DEBUG=1`` prints the traceback).
    """
    argv, debug = _debug_flag(sys.argv[1:] if argv is None else [str(a) for a in argv])
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = debug or os.environ.get("PUFFGM_DEBUG", "").strip() not in ("", "0")
    try:
        out = args.run_command(args)
    except KeyboardInterrupt:  # pragma: no cover
        sys.stderr.write("puffgm: error: interrupted\n")
        return 2
    except Exception as exc:  # noqa: BLE001 - every error is one line; only input errors are exit 2
        if debug:
            traceback.print_exc(file=sys.stderr)
        code, line = error_line(exc)
        sys.stderr.write(line + "\n")
        return code
    if out:
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
    return 0


def _debug_flag(argv: list) -> tuple:
    """``(argv without --debug, whether it was given)``: ``--debug`` works before or after the subcommand."""
    end = argv.index("--") if "--" in argv else len(argv)
    given = "--debug" in argv[:end]
    return [a for a in argv[:end] if a != "--debug"] + argv[end:], given


def error_line(exc: BaseException) -> tuple:
    """(exit code, one line) for an exception a subcommand raised.

    puffgm's own errors (:class:`~puffgm.exceptions.PuffgmError`), files that cannot be read
    (``OSError``, bad JSON, bad text encoding, a malformed CSV or SQLite file that a reader did
    not already turn into a puffgm error) and memory exhaustion are the user's input: exit code 2.
    Anything else (``TypeError``, ``AttributeError``, ``IndexError``, a plain
    ``ValueError`` ...) is a bug in puffgm, exit code 1.
    """
    import csv
    import sqlite3

    from puffgm.exceptions import PuffgmError, first_line

    detail = " ".join(first_line(exc).split())
    if isinstance(exc, PuffgmError):
        return 2, f"puffgm: error: {detail or type(exc).__name__}"
    if isinstance(exc, json.JSONDecodeError):
        return 2, f"puffgm: error: invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return 2, f"puffgm: error: a file is not text in UTF-8 ({detail})"
    if isinstance(exc, csv.Error):
        return 2, f"puffgm: error: a CSV file cannot be read: {detail}"
    if isinstance(exc, sqlite3.Error):
        return 2, f"puffgm: error: a SQLite file cannot be used: {detail}"
    if isinstance(exc, OSError):
        where = f" {exc.filename!r}" if getattr(exc, "filename", None) else ""
        return 2, f"puffgm: error: cannot read{where}: {exc.strerror or detail or type(exc).__name__}"
    if isinstance(exc, MemoryError):
        return 2, "puffgm: error: out of memory: the computation is too large for this machine"
    if len(detail) > 300:
        detail = detail[:300] + "..."
    text = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    return 1, f"puffgm: internal error: {text} (please report; rerun with --debug for the traceback)"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
