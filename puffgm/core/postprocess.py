r"""Post-processing of released values: clamping, rounding, relative frequencies, a public total.

A released value may be turned into a more useful one -- a noisy count of -3 on counts of at
most 20 clamped to 0, counts rounded to integers, a histogram's noisy counts turned into
relative frequencies that sum to one, a table made consistent with a total that is public --
at **no cost in privacy**.  Post-processing is the transformation-invariance axiom of privacy
definitions (Kifer and Lin, "An axiomatic view of statistical privacy and utility", Journal of
Privacy and Confidentiality 4(1), 2012), and every Pufferfish definition satisfies it (Kifer and
Machanavajjhala, "Pufferfish: A framework for mathematical privacy definitions", ACM TODS 39(1),
2014, Axiom 5.1 and Theorem 5.1): if :math:`M` is :math:`\epsilon`-Pufferfish private for
:math:`(\mathbb{S}, \mathbb{S}_{\text{pairs}}, \mathbb{D})`, so is :math:`A \circ M` for every
algorithm :math:`A` whose input is the output of :math:`M` and whose random bits are independent
of :math:`M`'s (the probability of any event :math:`\{A(M(D)) \in E\}` given a secret is an
average of :math:`M`'s output probabilities, and each of those keeps the ratio
:math:`e^{\epsilon}`).
Every function here reads only the released value and public facts (the statistic's range,
a public total), never the data, so the guarantee of the release holds for its output
unchanged; the accountant is not charged again, and the charged record is never modified
(:meth:`puffgm.core.release.Release.postprocess` returns a new :class:`PostProcessed`).

The operations (clamping and the projections give the closest point in squared error):

* :func:`clamp`: :math:`x_i \mapsto \min(\max(x_i, l_i), h_i)`, the projection onto the box of
  ranges;
* :func:`round_values`: the nearest integers (halves to even); with a total, the largest
  remainder method keeps the sum equal to it;
* :func:`project_box_total`: the projection onto
  :math:`\{x : l \le x \le h,\ \sum_i x_i = N\}`, which is :math:`x_i = \min(\max(v_i - \lambda, l_i), h_i)`
  for the :math:`\lambda` that meets the total (the sum is piecewise linear and non-increasing in
  :math:`\lambda`, so its breakpoints give :math:`\lambda` exactly);
* :func:`project_simplex`: the projection onto the simplex
  :math:`\{x \ge 0,\ \sum_i x_i = N\}` (Held, Wolfe and Crowder, "Validation of subgradient
  optimization", Mathematical Programming 6, 1974; Duchi, Shalev-Shwartz, Singer and Chandra,
  "Efficient projections onto the l1-ball for learning in high dimensions", ICML 2008);
* :func:`relative_frequencies`: counts as frequencies on the unit simplex.

Projecting onto a convex set that contains the exact answer never increases the Euclidean error:
:math:`\|P(\tilde F) - F\|_2 \le \|\tilde F - F\|_2` (the projection is non-expansive).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from puffgm.exceptions import ParameterError

__all__ = ["PostProcessed", "clamp", "round_values", "project_box_total", "project_simplex",
           "relative_frequencies", "postprocess", "statistic_ranges", "THEOREM_POSTPROCESSING"]

THEOREM_POSTPROCESSING = ("post-processing: a function of the released value alone keeps its guarantee "
                          "(Kifer and Machanavajjhala, Pufferfish, ACM TODS 2014, Axiom 5.1 and Theorem 5.1)")


def _vector(values, what: str = "The values to post-process") -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim > 1:
        raise ParameterError(f"{what} must be a number or a flat sequence of numbers.")
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ParameterError(f"{what} must be finite numbers (and at least one).")
    return np.atleast_1d(arr)


def _bounds(lower, upper, n: int) -> tuple:
    lo = np.broadcast_to(np.asarray(-np.inf if lower is None else lower, dtype=float), (n,)).copy()
    hi = np.broadcast_to(np.asarray(np.inf if upper is None else upper, dtype=float), (n,)).copy()
    if np.any(np.isnan(lo)) or np.any(np.isnan(hi)) or np.any(lo > hi):
        raise ParameterError("A range to clamp to needs lower <= upper (and no NaN) for every statistic.")
    return lo, hi


def clamp(values, lower=None, upper=None) -> np.ndarray:
    r"""Each value clamped to its range: :math:`\min(\max(x_i, l_i), h_i)`.

    Parameters
    ----------
    values : float or sequence of float
    lower, upper : float or sequence of float, optional
        One bound for all or one per value; None for no bound on that side.

    Returns
    -------
    numpy.ndarray
        A float array of the values' shape (one dimension).

    Examples
    --------
    >>> clamp([-63.0, 4.5, 25.0], 0, 20).tolist()
    [0.0, 4.5, 20.0]
    """
    v = _vector(values)
    lo, hi = _bounds(lower, upper, v.size)
    return np.minimum(np.maximum(v, lo), hi)


def _largest_remainder(x: np.ndarray, total: float) -> np.ndarray:
    """Integers as close to x as possible whose sum is ``total``: floors, plus one on the largest fractions."""
    n_total = round(total)
    if abs(n_total - total) > 1e-9 * max(1.0, abs(total)):
        raise ParameterError(f"Rounding to integers that sum to the total needs an integer total; got {total!r}.")
    low = np.floor(x + 1e-12)
    missing = int(n_total - low.sum())
    if missing < 0 or missing > x.size:
        raise ParameterError("The values do not sum to the total, so they cannot be rounded to integers "
                             "that do (project them first: total=N).")
    order = np.argsort(-(x - low), kind="stable")  # ties by position: deterministic
    out = low.copy()
    out[order[:missing]] += 1.0
    return out


def round_values(values, *, total: float | None = None) -> np.ndarray:
    """The nearest integers (halves to even); with ``total``, integers summing to it (largest remainders).

    Parameters
    ----------
    values : float or sequence of float
    total : float, optional
        An integer the rounded values must sum to; the values must already sum to it (as
        :func:`project_box_total` leaves them).  Each value then moves to its floor or its
        ceiling: the floors, plus one on the values with the largest fractional parts
        (Hamilton's largest remainder method), which is the closest such integer vector in
        every :math:`L^p` norm.

    Returns
    -------
    numpy.ndarray
        The integers, as floats, in the order of ``values``.

    Examples
    --------
    >>> round_values([0.5, 1.5, 2.4]).tolist()
    [0.0, 2.0, 2.0]
    >>> round_values([3.4, 3.3, 3.3], total=10).tolist()
    [4.0, 3.0, 3.0]
    """
    v = _vector(values)
    if total is None:
        return np.rint(v)
    if abs(float(v.sum()) - float(total)) > 1e-6 * max(1.0, abs(float(total))):
        raise ParameterError(f"The values sum to {float(v.sum()):g}, not to the total {float(total):g}: project them "
                             "onto the total first.")
    return _largest_remainder(v, float(total))


def project_box_total(values, total: float, lower=None, upper=None) -> np.ndarray:
    r"""The Euclidean projection of ``values`` onto :math:`\{x : l \le x \le h,\ \sum_i x_i = N\}`.

    The minimiser of :math:`\sum_i (x_i - v_i)^2` on that set is
    :math:`x_i(\lambda) = \min(\max(v_i - \lambda, l_i), h_i)` for the :math:`\lambda` with
    :math:`\sum_i x_i(\lambda) = N` (the Karush-Kuhn-Tucker conditions); the sum is continuous,
    piecewise linear and non-increasing in :math:`\lambda` with breakpoints
    :math:`v_i - l_i` and :math:`v_i - h_i`, so :math:`\lambda` is found exactly on the segment
    between two consecutive breakpoints.  Without bounds this is the shift
    :math:`\lambda = (\sum_i v_i - N)/n`.

    Parameters
    ----------
    values : sequence of float
    total : float
        N, the public total.
    lower, upper : float or sequence of float, optional
        The range of each statistic (None: unbounded on that side).

    Returns
    -------
    numpy.ndarray
        The closest point of the set to ``values`` in Euclidean distance.

    Raises
    ------
    ParameterError
        If no point of the box sums to N (:math:`\sum_i l_i > N` or :math:`\sum_i h_i < N`).

    Examples
    --------
    >>> project_box_total([5.0, -1.0, 2.0], 9.0).tolist()
    [6.0, 0.0, 3.0]
    >>> project_box_total([5.0, -1.0, 2.0], 9.0, lower=0).tolist()
    [6.0, 0.0, 3.0]
    """
    v = _vector(values)
    n_total = float(total)
    if not math.isfinite(n_total):
        raise ParameterError(f"The total must be a finite number; got {total!r}.")
    lo, hi = _bounds(lower, upper, v.size)
    if lo.sum() > n_total or hi.sum() < n_total:
        raise ParameterError(f"No values within their ranges sum to the total {n_total:g} (the ranges allow "
                             f"{lo.sum():g} to {hi.sum():g}).")

    def at(lam: float) -> np.ndarray:
        return np.minimum(np.maximum(v - lam, lo), hi)

    points = np.concatenate([v - lo, v - hi])
    points = np.unique(points[np.isfinite(points)])
    if points.size == 0:  # no finite bound: a plain shift
        return v - (v.sum() - n_total) / v.size
    sums = np.array([at(p).sum() for p in points])  # non-increasing in the breakpoint
    # the segment [points[k-1], points[k]] on which the sum crosses n_total (outside: slope -(free count))
    k = int(np.searchsorted(-sums, -n_total, side="left"))
    if k < points.size and sums[k] == n_total:
        return at(float(points[k]))
    if k == 0:
        left, right = -math.inf, float(points[0])
    elif k == points.size:
        left, right = float(points[-1]), math.inf
    else:
        left, right = float(points[k - 1]), float(points[k])
    probe = right - 1.0 if math.isinf(left) else (left + 1.0 if math.isinf(right) else 0.5 * (left + right))
    free = (v - probe > lo) & (v - probe < hi)  # coordinates moving with lambda on this segment
    fixed = at(probe)[~free].sum()
    if not free.any():  # pragma: no cover - a flat segment at n_total is caught by the breakpoint test
        return at(probe)
    lam = (v[free].sum() - (n_total - fixed)) / free.sum()
    return at(lam)


def project_simplex(values, total: float = 1.0) -> np.ndarray:
    r"""The Euclidean projection of ``values`` onto the simplex :math:`\{x \ge 0,\ \sum_i x_i = N\}`.

    :math:`x_i = \max(v_i - \lambda, 0)`, with :math:`\lambda` meeting the total
    (:func:`project_box_total` with lower bound 0).

    Examples
    --------
    >>> project_simplex([0.5, 0.5, 0.5]).round(12).tolist()
    [0.333333333333, 0.333333333333, 0.333333333333]
    >>> project_simplex([2.0, -1.0, 0.0]).tolist()
    [1.0, 0.0, 0.0]
    """
    n_total = float(total)
    if not (math.isfinite(n_total) and n_total > 0):
        raise ParameterError(f"The total of a simplex must be a finite number > 0; got {total!r}.")
    return project_box_total(values, n_total, lower=0.0)


def relative_frequencies(values, total: float | None = None) -> np.ndarray:
    r"""Noisy counts as relative frequencies: non-negative, summing to one.

    With a public total :math:`N`, the projection of the counts onto
    :math:`\{x \ge 0, \sum_i x_i = N\}`, divided by :math:`N` (the same as projecting
    :math:`v / N` onto the unit simplex).  Without one, the total is estimated by the sum of
    the positive noisy counts, and :math:`v` divided by it is projected onto the unit simplex
    (if no count is positive, :math:`v` itself is).

    Examples
    --------
    >>> relative_frequencies([6.0, -1.0, 2.0], total=10).round(12).tolist()
    [0.7, 0.0, 0.3]
    """
    v = _vector(values)
    if total is not None:
        return project_simplex(v, total) / float(total)
    positive = float(v[v > 0].sum())
    return project_simplex(v / positive if positive > 0 else v, 1.0)


def statistic_ranges(release) -> list | None:
    """The range (min_value, max_value) of each statistic a release's calibration records, or None.

    A query-specific calibration records its query's range (``query["min_value"]``,
    ``query["max_value"]``), a workload one per statistic (``ranges``); a calibration for every
    Lipschitz query (the Markov Quilt Mechanism) knows no range.
    """
    cal = getattr(release, "calibration", None)
    ranges = getattr(cal, "ranges", None)
    if ranges:
        return [tuple(map(float, r)) for r in ranges]
    query = getattr(cal, "query", None)
    if isinstance(query, dict) and query.get("min_value") is not None and query.get("max_value") is not None:
        return [(float(query["min_value"]), float(query["max_value"]))]
    return None


@dataclass(frozen=True)
class PostProcessed:
    """A post-processed value beside the release it was computed from (which it never changes).

    Attributes
    ----------
    value : float or tuple of float
        The post-processed value, shaped as the release's (a float for one statistic, a tuple
        for several).
    release : Release
        The release record the accountant charged, unchanged.
    steps : tuple of str
        What was done, in order.
    theorem : str
        Why the guarantee is the release's (:data:`THEOREM_POSTPROCESSING`).
    """

    value: Any
    release: Any
    steps: tuple
    theorem: str = THEOREM_POSTPROCESSING

    @property
    def epsilon(self) -> float:
        r"""The release's :math:`\epsilon`: post-processing costs nothing."""
        return self.release.epsilon

    def to_dict(self) -> dict:
        """JSON-ready: ``value``, ``steps``, ``theorem``."""
        v = self.value
        return {"value": list(v) if isinstance(v, tuple) else v, "steps": list(self.steps), "theorem": self.theorem}

    def explain(self) -> str:
        """One line: the value and the steps."""
        v = self.value
        shown = ", ".join(f"{x:.10g}" for x in v) if isinstance(v, tuple) else f"{v:.10g}"
        return f"post-processed ({'; '.join(self.steps)}): {shown} (no privacy cost)"

    def __str__(self) -> str:
        return self.explain()


def _range_bounds(clamp_to, release, n: int) -> tuple | None:
    """(lower, upper) arrays from ``clamp=`` (True: the statistics' ranges; a pair; a list of pairs)."""
    if clamp_to is None or clamp_to is False:
        return None
    if clamp_to is True:
        ranges = statistic_ranges(release)
        if ranges is None:
            raise ParameterError("This release does not record the range of its statistic (its calibration covers "
                                 "every Lipschitz query): give the range, clamp=(lower, upper).")
    elif (isinstance(clamp_to, Sequence) and len(clamp_to) == 2
          and all(x is None or isinstance(x, (int, float)) for x in clamp_to)):
        ranges = [tuple(clamp_to)] * n
    else:
        ranges = list(clamp_to)
    if len(ranges) == 1 and n > 1:
        ranges = ranges * n
    if len(ranges) != n:
        raise ParameterError(f"clamp= gives {len(ranges)} ranges for {n} statistics.")
    lo = [(-math.inf if r[0] is None else float(r[0])) for r in ranges]
    hi = [(math.inf if r[1] is None else float(r[1])) for r in ranges]
    return np.array(lo), np.array(hi)


def postprocess(release, *, clamp: Any = None, round: bool = False, simplex: bool = False,
                total: float | None = None, value=None) -> PostProcessed:
    """Post-process a release's value: the steps asked for, in the order range/total, frequencies, rounding.

    Parameters
    ----------
    release : Release
        The release (its value and, for ``clamp=True``, its statistics' ranges).
    clamp : bool, (lower, upper) or list of pairs, optional
        True: clamp each statistic to its range (query-specific and workload releases record
        it); a pair (None for no bound on a side) or one pair per statistic: to that range.
    round : bool
        Round to integers (with ``total``: integers summing to it, by largest remainders).
    simplex : bool
        Relative frequencies: non-negative, summing to one (:func:`relative_frequencies`; with
        ``total``, the projection onto the counts summing to it, divided by it).
    total : float, optional
        A public total the table must sum to: the projection onto the values within their
        ranges (when ``clamp``) summing to it (:func:`project_box_total`).
    value : optional
        The value to post-process (default: the release's).

    Returns
    -------
    PostProcessed
        The new value and the steps, beside the unchanged release.

    Raises
    ------
    ParameterError
        If nothing is asked, ``clamp=True`` for a release without ranges, ``round`` with
        ``simplex``, or a total the ranges cannot meet.
    """
    raw = release.value if value is None else value
    if raw is None:
        raise ParameterError("This release has no value to post-process.")
    v = _vector(raw, "The released value")
    if clamp is None and not round and not simplex and total is None:
        raise ParameterError("Nothing to post-process: ask for clamp, round, simplex or total.")
    if round and simplex:
        raise ParameterError("Relative frequencies sum to one: they cannot also be rounded to integers.")
    bounds = _range_bounds(clamp, release, v.size)
    lo, hi = (None, None) if bounds is None else bounds
    steps = []
    if simplex:
        lo0 = 0.0 if lo is None else np.maximum(lo, 0.0)
        if total is None:
            out = relative_frequencies(clamp_values(v, lo, hi))
            steps.append("relative frequencies (projection onto the simplex)")
        else:
            out = project_box_total(v, total, lo0, hi) / float(total)
            steps.append(f"relative frequencies of a total of {float(total):g} (projection onto the simplex)")
    elif total is not None:
        out = project_box_total(v, total, lo, hi)
        steps.append(f"consistent with the total {float(total):g}" + ("" if bounds is None else " within the ranges"))
    else:
        out = clamp_values(v, lo, hi)
    if bounds is not None and not steps:
        steps.append("clamped to the range" + ("s" if v.size > 1 else ""))
    if round:
        out = round_values(out, total=total)
        if bounds is not None:  # integers within the range (its integer points)
            out = np.minimum(np.maximum(out, np.ceil(lo)), np.floor(hi))
        steps.append("rounded to integers" + ("" if total is None else " summing to the total"))
    shaped = float(out[0]) if np.ndim(raw) == 0 else tuple(float(x) for x in out)
    return PostProcessed(shaped, release, tuple(steps))


def clamp_values(v: np.ndarray, lo, hi) -> np.ndarray:
    """``v`` clamped to [lo, hi] when bounds are given, else ``v``."""
    return v if lo is None else np.minimum(np.maximum(v, lo), hi)
