r"""Translation :math:`\epsilon_{\mathrm{DP}} \leftrightarrow \epsilon_{\mathrm{puffer}}` along an a(b)-influence curve.

Theorem 6 of Bai, He, Gu, Kifer and Maeng ("Composition for Pufferfish
privacy", section 6.2): if :math:`(\Theta, S)` satisfies :math:`a(b)`-influence and :math:`(a, b)` is a
point of the curve with :math:`a < \epsilon_{\mathrm{puffer}}`, every per-entry :math:`\epsilon_{\mathrm{DP}}`-DP
mechanism with

$$
\epsilon_{\mathrm{DP}} \le \frac{\epsilon_{\mathrm{puffer}} - a}{b}
$$

is :math:`\epsilon_{\mathrm{puffer}}`-Pufferfish.  The theorem holds at *every* point, so

* Pufferfish :math:`\to` DP: the best (largest) admissible :math:`\epsilon_{\mathrm{DP}}` is

  $$
  \epsilon_{\mathrm{DP}} = \max_{b \,:\, a(b) < \epsilon_{\mathrm{puffer}}} \frac{\epsilon_{\mathrm{puffer}} - a(b)}{b};
  $$

* DP :math:`\to` Pufferfish: the best (smallest) guarantee of an :math:`\epsilon_{\mathrm{DP}}`-DP mechanism is

  $$
  \epsilon_{\mathrm{puffer}} = \min_b \left( b\, \epsilon_{\mathrm{DP}} + a(b) \right).
  $$

The trivial point :math:`(a, b) = (0, |I|)` (:math:`H` = every entry, i.e. group privacy over
the whole database) is always on the curve; Algorithms 1-2 of the paper use it
as their fallback ``epsilon_puffer / |I|`` (line 4).

Paper slip: line 8 of Algorithms 1 and 2 (appendix B) updates
``epsilon_DP <- min(epsilon_DP, epsilon_DP_l)``, which selects the *worst*
point of the curve (still private, but with the most noise), while the text of
section 6.4.1 says the maximum over b gives the best utility, and Theorem 6
licenses any point.  We take the maximum, and report the point used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from puffgm.core.results import json_float
from puffgm.core.validation import check_positive_finite, deprecated_call, refuse_unexpected, renamed
from puffgm.core.witness import Witness
from puffgm.exceptions import NotApplicableError, ParameterError

__all__ = ["Translation", "dp_epsilon", "puffer_epsilon", "translate_curve", "translate", "THEOREM6"]

THEOREM6 = "Bai-He-Gu-Kifer-Maeng Theorem 6 (translation between DP and Pufferfish)"


@dataclass(frozen=True)
class Translation:
    r"""The result of a translation along an a(b)-influence curve.

    Attributes
    ----------
    direction : str
        ``"puffer_to_dp"`` or ``"dp_to_puffer"``.
    epsilon_puffer, epsilon_dp : float
        The pair satisfying :math:`\epsilon_{\mathrm{puffer}} = b\, \epsilon_{\mathrm{DP}} + a` at the point used
        (for ``puffer_to_dp``, :math:`\epsilon_{\mathrm{DP}} = (\epsilon_{\mathrm{puffer}} - a) / b`).
    a, b : float, int
        The curve point used (the witness of the optimum).
    witness : Witness or None
        Its ``node`` and ``quilt``: the witness of that point, when the curve knows it.
    curve_fingerprint : str
    curve_method : str
    n_entries : int
    theorem : str
    notes : tuple of str
    curve : InfluenceCurve or None
        The curve translated along (what :func:`puffgm.release` releases along); not in
        ``repr``, equality or :meth:`to_dict`, None for a translation made by hand.
    """

    direction: str
    epsilon_puffer: float
    epsilon_dp: float
    a: float
    b: int
    witness: Witness | None
    curve_fingerprint: str
    curve_method: str
    n_entries: int
    theorem: str = THEOREM6
    notes: tuple = ()
    curve: Any = field(default=None, repr=False, compare=False)

    @property
    def point(self) -> tuple:
        """The curve point (a, b) used."""
        return (self.a, self.b)

    @property
    def trivial_point(self) -> bool:
        """True when the point used is the trivial one :math:`(0, |I|)`: group privacy over everything."""
        return self.b >= self.n_entries and self.a == 0.0

    def to_dict(self) -> dict:
        """JSON-ready dict (the ``--json`` output of ``puffgm translate``)."""
        w = self.witness
        return {
            "direction": self.direction,
            "epsilon_puffer": json_float(self.epsilon_puffer),
            "epsilon_dp": json_float(self.epsilon_dp),
            "point": {"b": self.b, "a": json_float(self.a)},
            "witness": None if w is None else {"node": _j(w.node), "quilt": _j(w.quilt)},
            "n_entries": self.n_entries,
            "curve_method": self.curve_method,
            "curve_fingerprint": self.curve_fingerprint,
            "theorem": self.theorem,
            "notes": list(self.notes),
        }

    def explain(self) -> str:
        """The translation, the point used, its witness and the theorem, one per line."""
        if self.direction == "puffer_to_dp":
            head = (f"epsilon_puffer {self.epsilon_puffer:g} -> epsilon_DP {self.epsilon_dp:.6g} "
                    f"= ({self.epsilon_puffer:g} - {self.a:.6g}) / {self.b}")
        else:
            head = (f"epsilon_DP {self.epsilon_dp:g} -> epsilon_puffer {self.epsilon_puffer:.6g} "
                    f"= {self.b} * {self.epsilon_dp:g} + {self.a:.6g}")
        lines = [head, f"point used: b = {self.b}, a(b) = {self.a:.6g}"]
        if self.witness is not None:
            lines.append(f"witness: node {self.witness.node}, quilt {self.witness.quilt}")
        lines.append(f"relies on: {self.theorem}")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def _j(x):
    """A witness node or quilt as JSON data (quilt members that are not int or str as str)."""
    if isinstance(x, (str, int, float)) or x is None:
        return x
    try:
        return [str(v) if not isinstance(v, (int, str)) else v for v in x]
    except TypeError:
        return str(x)


def _as_curve(curve):
    from puffgm.core.curve import InfluenceCurve

    if not isinstance(curve, InfluenceCurve):
        raise ParameterError(
            "The 'curve' parameter must be an InfluenceCurve (see puffgm.influence_curve "
            f"or curve_from_points). Got {type(curve).__name__} instead."
        )
    return curve


def dp_epsilon(curve, *, epsilon: float | None = None, **deprecated) -> Translation:
    r"""Largest :math:`\epsilon_{\mathrm{DP}}` whose per-entry DP mechanisms are :math:`\epsilon`-Pufferfish.

    :math:`\epsilon_{\mathrm{DP}} = \max_{b \,:\, a(b) < \epsilon} (\epsilon - a(b)) / b` over the curve points
    (Theorem 6; the paper's Algorithms 1-2 write ``min`` on line 8, a slip).
    Ties go to the smallest :math:`b`.

    Parameters
    ----------
    curve : InfluenceCurve
        The :math:`a(b)`-influence curve of :math:`(\Theta, S)`.
    epsilon : float
        The Pufferfish privacy parameter to reach (``epsilon_puffer`` is its deprecated name).

    Returns
    -------
    Translation
        Direction ``"puffer_to_dp"``, with the point used and its witness.

    Raises
    ------
    NotApplicableError
        If no point (not even the trivial :math:`(0, |I|)`) has :math:`a < \epsilon`.
    """
    epsilon = renamed(deprecated, "epsilon_puffer", "epsilon", "dp_epsilon", epsilon)
    refuse_unexpected(deprecated, "dp_epsilon")
    eps = check_positive_finite(epsilon, "epsilon", "dp_epsilon")
    curve = _as_curve(curve)
    best = None
    for b, a, w in curve.candidate_points():
        if a < eps:
            val = (eps - a) / b
            if best is None or val > best[0] * (1 + 1e-15):
                best = (val, b, a, w)
    if best is None:
        raise NotApplicableError(
            f"No point of the a(b)-influence curve has a(b) < epsilon = {eps:g} "
            f"(smallest a on the curve: {min(curve.a):.6g}); extend max_b or raise epsilon."
        )
    val, b, a, w = best
    notes = []
    if b >= curve.n_entries:
        notes.append("used the trivial point (0, |I|): no correlation-aware gain over group privacy")
    return Translation("puffer_to_dp", eps, val, a, b, w, curve.fingerprint, curve.method,
                       curve.n_entries, notes=tuple(notes), curve=curve)


def puffer_epsilon(curve, *, epsilon_dp: float) -> Translation:
    r"""Least :math:`\epsilon_{\mathrm{puffer}}` guaranteed by a per-entry :math:`\epsilon_{\mathrm{DP}}`-DP mechanism.

    :math:`\epsilon_{\mathrm{puffer}} = \min_b \left( b\, \epsilon_{\mathrm{DP}} + a(b) \right)` (Theorem 6, any point).
    Ties go to the smallest :math:`b`.

    Parameters
    ----------
    curve : InfluenceCurve
        The :math:`a(b)`-influence curve of :math:`(\Theta, S)`.
    epsilon_dp : float
        The per-entry DP parameter of the mechanism.

    Returns
    -------
    Translation
        Direction ``"dp_to_puffer"``, with the point used and its witness.
    """
    eps = check_positive_finite(epsilon_dp, "epsilon_dp", "puffer_epsilon")
    curve = _as_curve(curve)
    best = None
    for b, a, w in curve.candidate_points():
        val = b * eps + a
        if best is None or val < best[0] * (1 - 1e-15):
            best = (val, b, a, w)
    if best is None or not math.isfinite(best[0]):
        raise NotApplicableError("The a(b)-influence curve has no finite point.")
    val, b, a, w = best
    # Theorem 6 needs a < epsilon_puffer: true here because b * epsilon_dp > 0.
    return Translation("dp_to_puffer", val, eps, a, b, w, curve.fingerprint, curve.method, curve.n_entries,
                       curve=curve)


def translate_curve(curve, *, epsilon: float | None = None, epsilon_dp: float | None = None,
                    **deprecated) -> Translation:
    r"""Translate along a curve one way or the other: give exactly one of ``epsilon`` and ``epsilon_dp``.

    ``epsilon`` (the Pufferfish guarantee; ``epsilon_puffer`` is its deprecated name) gives
    :func:`dp_epsilon`, ``epsilon_dp`` gives :func:`puffer_epsilon`.  :func:`puffgm.translate`
    takes a curve or a prior class and calls this.

    Parameters
    ----------
    curve : InfluenceCurve
        The :math:`a(b)`-influence curve of :math:`(\Theta, S)`.
    epsilon, epsilon_dp : float
        Exactly one.

    Returns
    -------
    Translation
        The :math:`\epsilon` on the other side, the curve point used and its witness.
    """
    epsilon = renamed(deprecated, "epsilon_puffer", "epsilon", "translate_curve", epsilon)
    refuse_unexpected(deprecated, "translate_curve")
    if (epsilon is None) == (epsilon_dp is None):
        raise ParameterError("translate needs exactly one of 'epsilon' (the Pufferfish guarantee) and 'epsilon_dp'.")
    if epsilon is not None:
        return dp_epsilon(curve, epsilon=epsilon)
    assert epsilon_dp is not None  # exactly one of the two was given
    return puffer_epsilon(curve, epsilon_dp=epsilon_dp)


def translate(curve, **kwargs) -> Translation:
    r"""Deprecated name of :func:`translate_curve` (or call :func:`puffgm.translate`, which takes a curve too).

    Parameters
    ----------
    curve : InfluenceCurve
    **kwargs
        As :func:`translate_curve`.

    Returns
    -------
    Translation
        The :math:`\epsilon` on the other side, the curve point used and its witness.
    """
    deprecated_call("puffgm.mechanisms.translation.translate",
                    "puffgm.translate or puffgm.mechanisms.translation.translate_curve")
    return translate_curve(curve, **kwargs)
