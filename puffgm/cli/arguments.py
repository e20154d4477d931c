"""argparse value types shared by the subcommands: a bad value is one usage line (exit 2), never a traceback."""

from __future__ import annotations

import argparse
import sys

__all__ = ["number", "integer", "number_list", "add_renamed_flag"]


def number(text: str) -> float:
    """A float (range checks are the subcommand's, with the library's one-sentence messages)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def integer(text: str) -> int:
    """An int."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def number_list(text: str) -> list:
    """Comma-separated floats: ``"0.5,0.2,1"``."""
    try:
        return [float(p.strip()) for p in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers") from None


class _RenamedFlag(argparse.Action):
    """Store the value; when given by its deprecated spelling, say the new one on stderr."""

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string != self.option_strings[0]:
            sys.stderr.write(f"puffgm: warning: {option_string} is deprecated; use {self.option_strings[0]}.\n")
        setattr(namespace, self.dest, values)


def add_renamed_flag(parser, new: str, old: str, **kwargs) -> None:
    """Add the flag ``new`` with ``old`` as its deprecated spelling (it works and prints a warning on stderr).

    Parameters
    ----------
    parser : argparse.ArgumentParser or argument group
    new, old : str
        The flag and its deprecated spelling (``"--protected"``, ``"--protect"``).
    **kwargs
        As :meth:`argparse.ArgumentParser.add_argument` (``dest`` defaults to ``new``'s).
    """
    kwargs.setdefault("dest", new.lstrip("-").replace("-", "_"))
    parser.add_argument(new, old, action=_RenamedFlag, **kwargs)
