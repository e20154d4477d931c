"""argparse value types shared by the subcommands: a bad value is one usage line (exit 2), never a traceback."""

from __future__ import annotations

import argparse

__all__ = ["number", "integer", "number_list"]


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
