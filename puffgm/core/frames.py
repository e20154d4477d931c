"""Recognise pandas data and missing values without importing pandas.

pandas is optional (``pip install "puffgm[data]"``): an object can only be a
pandas ``Series`` or ``DataFrame`` if pandas is already imported, so these
checks look it up in :data:`sys.modules` and never import it themselves.
"""

from __future__ import annotations

import math
import sys

import numpy as np

__all__ = ["pandas_type", "is_missing"]


def pandas_type(x) -> str | None:
    """``"DataFrame"`` or ``"Series"`` for pandas data, else None (pandas is not imported).

    Examples
    --------
    >>> import pandas as pd
    >>> pandas_type(pd.Series([1, 2])), pandas_type([1, 2])
    ('Series', None)
    """
    pd = sys.modules.get("pandas")
    if pd is None:
        return None
    if isinstance(x, pd.DataFrame):
        return "DataFrame"
    if isinstance(x, pd.Series):
        return "Series"
    return None


def is_missing(v) -> bool:
    """True for a gap in data: None, a float NaN, or pandas' ``NA`` / ``NaT``.

    Examples
    --------
    >>> is_missing(None), is_missing(float("nan")), is_missing("nan"), is_missing(0)
    (True, True, False, False)
    """
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return math.isnan(v)
    pd = sys.modules.get("pandas")
    return pd is not None and (v is pd.NA or v is pd.NaT)
