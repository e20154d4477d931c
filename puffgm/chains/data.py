"""Real series for chain examples and benchmarks, from data shipped inside wheels.

Nothing is downloaded: :func:`load_real_series` reads pmdarima's half-hourly
England and Wales electricity demand (Taylor 2003, 4032 steps, MIT; install
with ``pip install "puffgm[examples]"``) when pmdarima is installed, and
otherwise statsmodels' bundled monthly El Nino sea-surface temperatures
(statsmodels comes with pgmpy).  :func:`discretise` bins a series into k
equal-width states, the preprocessing of Song et al. section 5.3.2.
"""

from __future__ import annotations

import numpy as np

from puffgm.core.validation import check_positive_int

__all__ = ["load_real_series", "discretise"]


def load_real_series() -> tuple:
    """(values, description) of a real series shipped inside an installed wheel."""
    try:
        from pmdarima.datasets import load_taylor

        return np.asarray(load_taylor(), dtype=float), "pmdarima Taylor electricity demand (half-hourly)"
    except ImportError:
        import statsmodels.api as sm

        d = sm.datasets.elnino.load_pandas().data
        return d.drop(columns="YEAR").to_numpy(float).ravel(), "statsmodels El Nino sea-surface temperatures (monthly)"


def discretise(x, k: int) -> np.ndarray:
    """States 0..k-1 from k equal-width bins over [min(x), max(x)]."""
    k = check_positive_int(k, "k", "discretise")
    x = np.asarray(x, dtype=float)
    edges = np.linspace(x.min(), x.max(), k + 1)
    return np.clip(np.digitize(x, edges[1:-1]), 0, k - 1)
