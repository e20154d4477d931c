"""The foundation every other layer builds on: validation, result and release records, noise and curves.

Nothing here knows a prior kind or a mechanism; every module of puffgm may import
from :mod:`puffgm.core` and :mod:`puffgm.exceptions`, and these import nothing else
of puffgm.
"""

__all__ = ["curve", "noise", "release", "results", "validation"]
