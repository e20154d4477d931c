"""The ``puffgm`` command line.

Subcommands live in :mod:`puffgm.cli` (one module each, imported lazily so that
``puffgm --help`` and the chain paths never import pgmpy).  Every error a
subcommand raises on purpose becomes one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

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
        p.set_defaults(_run=mod.run)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``puffgm`` command; returns the process exit code."""
    from puffgm.exceptions import PuffgmError, first_line

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        out = args._run(args)
    except (PuffgmError, ValueError, OSError, KeyError) as exc:
        msg = first_line(exc) or type(exc).__name__
        if isinstance(exc, KeyError):
            msg = f"unknown key {msg}"
        sys.stderr.write(f"puffgm: error: {msg}\n")
        return 2
    except (TypeError, AttributeError, IndexError) as exc:  # malformed input that slipped past validation
        detail = first_line(exc)
        sys.stderr.write(f"puffgm: error: malformed input ({type(exc).__name__}: {detail[:200]})\n")
        return 2
    except (ArithmeticError, MemoryError) as exc:  # overflow, division by zero, out of memory
        detail = first_line(exc)
        sys.stderr.write(f"puffgm: error: the computation cannot be carried out for these parameters "
                         f"({type(exc).__name__}{': ' + detail[:200] if detail else ''})\n")
        return 2
    except KeyboardInterrupt:  # pragma: no cover
        sys.stderr.write("puffgm: error: interrupted\n")
        return 2
    if out:
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
