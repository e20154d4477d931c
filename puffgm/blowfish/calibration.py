r"""A Blowfish calibration: a policy, an :math:`\epsilon` and the query they are released for.

A :class:`~puffgm.blowfish.policy.Policy` alone says what is secret, not how much noise a
release needs: that is the Laplace scale :math:`S(f, P) / \epsilon` of He, Machanavajjhala and Ding's
Theorem 5.1, which depends on the query :math:`f`.  :class:`BlowfishCalibration` names the three, so
that :func:`puffgm.release` releases it as it releases every other calibration:

* ``query="histogram"``, ``"cumulative"`` or ``"linear_sum"``: the true value is computed from
  the data set by :func:`~puffgm.blowfish.mechanisms.release_histogram`,
  :func:`~puffgm.blowfish.mechanisms.release_cumulative` or
  :func:`~puffgm.blowfish.mechanisms.release_linear_sum`, at the closed-form :math:`S(f, P)` of
  :mod:`puffgm.blowfish.sensitivity`;
* ``sensitivity=S``: any query whose policy-specific sensitivity is S, released from its exact
  answer by :func:`~puffgm.blowfish.mechanisms.laplace_mechanism`.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Any

from puffgm.blowfish.policy import Policy
from puffgm.blowfish.sensitivity import (
    Sensitivity,
    cumulative_sensitivity,
    histogram_sensitivity,
    linear_sum_sensitivity,
)
from puffgm.core.accuracy import laplace_rows
from puffgm.core.validation import check_nonnegative_finite, check_positive_finite
from puffgm.exceptions import ParameterError

__all__ = ["BlowfishCalibration", "QUERIES"]

#: The queries whose true value a Blowfish calibration computes from the data set.
QUERIES = ("histogram", "cumulative", "linear_sum")


@dataclass(frozen=True)
class BlowfishCalibration:
    r"""A Blowfish policy, an :math:`\epsilon` and the query released under them (He et al. Theorem 5.1).

    Parameters
    ----------
    policy : Policy
        The Blowfish policy (secrets, secret graph, constraints).
    epsilon : float
        The Blowfish privacy parameter of one release.
    query : {"histogram", "cumulative", "linear_sum"}, optional
        The query computed from the data set (a sequence of domain values).
    sensitivity : float or Sensitivity, optional
        :math:`S(f, P)` of a query of your own, released from its exact answer (``answer=``).
        Exactly one of ``query`` and ``sensitivity``.
    partition : sequence, optional
        The histogram's cells (``query="histogram"`` only; default one per value).
    values : optional
        :math:`g` of the linear sum :math:`\sum_i g(x_i)` (``query="linear_sum"`` only; default the rank coordinates).

    Examples
    --------
    >>> from puffgm.blowfish import Domain, Policy, line_graph
    >>> cal = BlowfishCalibration(Policy(line_graph(Domain.ordered(5))), epsilon=1.0, query="cumulative")
    >>> cal.scale
    1.0
    """

    policy: Policy
    _: KW_ONLY
    epsilon: float
    query: str | None = None
    sensitivity: Any = None
    partition: Any = None
    values: Any = None

    def __post_init__(self):
        if not isinstance(self.policy, Policy):
            raise ParameterError(f"The 'policy' parameter of BlowfishCalibration must be a Blowfish Policy. "
                                 f"Got {type(self.policy).__name__} instead.")
        object.__setattr__(self, "epsilon", check_positive_finite(self.epsilon, "epsilon", "BlowfishCalibration"))
        if (self.query is None) == (self.sensitivity is None):
            raise ParameterError("BlowfishCalibration needs exactly one of query= (one of 'histogram', 'cumulative', "
                                 "'linear_sum', computed from the data set) and sensitivity= (S(f, P) of a query of "
                                 "your own, released from its answer=).")
        if self.query is not None and self.query not in QUERIES:
            raise ParameterError(f"The 'query' parameter of BlowfishCalibration must be one of {QUERIES}. "
                                 f"Got {self.query!r} instead.")
        if self.partition is not None and self.query != "histogram":
            raise ParameterError("partition= gives the cells of a histogram: it needs query='histogram'.")
        if self.values is not None and self.query != "linear_sum":
            raise ParameterError("values= gives g of a linear sum: it needs query='linear_sum'.")
        if isinstance(self.sensitivity, Sensitivity):
            if self.sensitivity.policy_key != self.policy.key:
                raise ParameterError("The sensitivity was computed under another policy than the calibration's.")
        elif self.sensitivity is not None:
            object.__setattr__(self, "sensitivity",
                               check_nonnegative_finite(self.sensitivity, "sensitivity", "BlowfishCalibration"))

    @property
    def from_data(self) -> bool:
        """True when the true value is computed from the data set (``query=``), False for ``answer=``."""
        return self.query is not None

    @property
    def policy_sensitivity(self) -> float:
        """S(f, P) of the query under the policy (Definition 5.1)."""
        if self.query is None:
            return float(self.sensitivity)
        if self.query == "histogram":
            return float(histogram_sensitivity(self.policy, self.partition))
        if self.query == "cumulative":
            return float(cumulative_sensitivity(self.policy))
        return float(linear_sum_sensitivity(self.policy, self.values))

    @property
    def scale(self) -> float:
        r"""The Laplace scale :math:`S(f, P) / \epsilon` on each coordinate (0: released exactly)."""
        return self.policy_sensitivity / self.epsilon

    def accuracy(self, alpha: float = 0.05) -> tuple:
        r"""The Laplace scale :math:`S(f, P) / \epsilon` and its :math:`(1 - \alpha)` half-width on each coordinate.

        One row of :mod:`puffgm.core.accuracy`.
        """
        return laplace_rows(("each coordinate",), (self.scale,), alpha)

    def explain(self) -> str:
        r"""One line: the query, :math:`(\epsilon, P)`, :math:`S(f, P)` and the Laplace scale."""
        what = f"the {self.query.replace('_', ' ')} of the data set" if self.query else "a query of your own (answer=)"
        return (f"Blowfish calibration of {what}: ({self.epsilon:g}, P)-Blowfish private, "
                f"S(f, P) = {self.policy_sensitivity:g}, Laplace scale {self.scale:.6g} (He et al. Theorem 5.1)")

    def __str__(self) -> str:
        return self.explain()
