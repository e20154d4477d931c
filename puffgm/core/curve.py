r""":math:`a(b)`-influence curves (Bai, He, Gu, Kifer and Maeng, section 6.2, Definition 7).

For a secret on entry :math:`X_i`, split the database into a *high-influence* set :math:`H`
(:math:`|H| = b`, :math:`X_i \in H`) and a *low-influence* set :math:`L`.  The leakage through :math:`L` is

$$
a^{\dagger}(L) = \sup_\theta \max_{D_L} \log \frac{P(\mathrm{Data}_L = D_L \mid s_i)}{P(\mathrm{Data}_L = D_L \mid s_j)}
$$

and the curve is any upper bound :math:`a(b) \ge \max_{(s_i, s_j)} \inf_{|H| \le b} a^\dagger(L)`.
It is non-increasing, and :math:`a(n) = 0` (:math:`H` = everything, :math:`L` empty).

Markov quilts give such splits (Song et al., section 4): for a quilt :math:`X_Q` of :math:`X_i`
with nearby set :math:`X_N` and remote set :math:`X_R`, take :math:`H = X_N` and :math:`L = X_Q \cup X_R`.  Since
:math:`X_R` is independent of :math:`X_i` given :math:`X_Q`, the leakage through :math:`L` equals the
max-influence :math:`e_\Theta(X_Q \mid X_i)`, so

$$
a_i(b) = \min \{ e_\Theta(X_Q \mid X_i) : X_Q \text{ a quilt of } X_i \text{ with } \mathrm{card}(X_N) \le b \},
  \qquad a(b) = \max_i a_i(b).
$$

Restricting L to quilt complements can only make a(b) larger than the optimum of
Definition 7, so the curve is a valid (safe) upper bound, which is all Theorem 6
needs.  Every point keeps its witness: the node attaining the max and the quilt
attaining that node's min.  The value is the exact max (min); the witness is
chosen canonically among the candidates that tie with it within a relative
``TIE_RTOL`` (:mod:`puffgm.core.ties`), so it does not depend on the last bit.

Two roads compute the same curve:

* Bayesian-network prior classes go through the quilt finder and exact
  max-influence (:func:`puffgm.networks.quilt_scores.evaluate_quilts`);
* Markov-chain classes (:mod:`puffgm.chains`) go through the chain machinery
  (:func:`puffgm.chains.curve.chain_influence_curve`), which handles chains of
  a million steps.  On chains short enough to unroll into a network both roads
  give the same curve.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from puffgm.core.release import curve_key, jsonable
from puffgm.core.results import json_float
from puffgm.core.ties import canonical_argmax
from puffgm.core.validation import check_positive_int
from puffgm.core.witness import Witness
from puffgm.exceptions import ParameterError

__all__ = ["InfluenceCurve", "curve_from_points", "pointwise_max"]

THEOREM = "Bai-He-Gu-Kifer-Maeng Definition 7 (a(b)-influence) via Markov quilts (Song et al. section 4)"


@dataclass(frozen=True)
class InfluenceCurve:
    r"""An :math:`a(b)`-influence curve: points :math:`(b, a(b))` for :math:`b = 1, \dots, B` with witnesses.

    Attributes
    ----------
    b : tuple of int
        :math:`1, 2, \dots, B`.
    a : tuple of float
        :math:`a(b)`, non-increasing; ``inf`` where no split with :math:`|H| \le b` is known.
    witnesses : tuple
        For each point, a :class:`~puffgm.core.witness.Witness` with ``node``, the node attaining
        :math:`\max_i a_i(b)`, and ``quilt``, the quilt :math:`X_Q` attaining that node's min (``None``
        when unknown, e.g. closed forms); a ``(node, quilt)`` pair given is stored as that Witness.
    n_entries : int
        :math:`|I|`, the number of entries (nodes) of the database; :math:`a(|I|) = 0`.
    method : str
        ``"quilts"`` (Bayesian networks), ``"chain"`` (chain machinery) or the
        name of a closed form / user-supplied curve.
    fingerprint : str
        Fingerprint of the prior class (or of the closed-form parameters).
    theorem : str
        What the curve relies on.
    notes : tuple of str
    details : Mapping
        Computing time, per-node curves (``"per_node"``: node -> tuple of :math:`a_i(b)`), ...
    """

    b: Sequence[int]  # stored as a tuple
    a: Sequence[float]  # stored as a tuple
    witnesses: Sequence  # stored as a tuple (None also accepted: unknown at every point)
    n_entries: int
    method: str
    fingerprint: str
    theorem: str = THEOREM
    notes: tuple = ()
    details: Mapping = field(default_factory=dict)

    def __post_init__(self):
        b = tuple(int(v) for v in self.b)
        a = tuple(float(v) for v in self.a)
        if len(b) != len(a) or len(a) == 0:
            raise ParameterError("An influence curve needs as many a values as b values, and at least one point.")
        if b != tuple(range(1, len(b) + 1)):
            raise ParameterError("The b values of an influence curve must be 1, 2, ..., B.")
        if any(math.isnan(v) or v < 0 for v in a):
            raise ParameterError("An influence curve's a values must be numbers >= 0 (inf allowed), not NaN.")
        # Definition 7: a(b) is an upper bound of an infimum over |H| <= b, hence
        # non-increasing; enforce it (a larger b may always use a smaller split).
        wit = [_point_witness(w) for w in self.witnesses] if self.witnesses is not None else [None] * len(b)
        if len(wit) != len(b):
            raise ParameterError("An influence curve needs one witness (or None) per point.")
        mono = list(a)
        for k in range(1, len(mono)):
            if mono[k] > mono[k - 1]:
                mono[k], wit[k] = mono[k - 1], wit[k - 1]
        a, wits = tuple(mono), tuple(wit)
        n = int(self.n_entries)
        if n < 1:
            raise ParameterError(f"An influence curve needs n_entries >= 1. Got {self.n_entries!r} instead.")
        if len(b) >= n and a[n - 1] > 0:  # the trivial split H = every entry, L empty: a(n) = 0
            a = a[: n - 1] + (0.0,) * (len(b) - n + 1)
            wits = wits[: n - 1] + (Witness(node="*", quilt=()),) * (len(b) - n + 1)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "witnesses", wits)
        object.__setattr__(self, "n_entries", int(self.n_entries))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    # ------------------------------------------------------------ accessors
    @property
    def composition_key(self) -> str:
        r"""Identifies :math:`(\Theta, S)`: releases compose by Theorem 7 only along one instantiation.

        See :func:`puffgm.core.release.curve_key`.
        """
        return curve_key(self)

    @property
    def max_b(self) -> int:
        """B, the largest b on the curve."""
        return len(self.b)

    @property
    def points(self) -> tuple:
        """The points as ``(b, a)`` pairs."""
        return tuple(zip(self.b, self.a, strict=True))

    def a_at(self, b: int) -> float:
        r""":math:`a(b)` for any :math:`b \ge 1`: the stored value, 0 for :math:`b \ge |I|`, else :math:`a(B)`."""
        b = check_positive_int(b, "b", "InfluenceCurve.a_at")
        if b >= self.n_entries:
            return 0.0
        if b <= self.max_b:
            return self.a[b - 1]
        return self.a[-1]  # non-increasing: a(B) bounds a(b) for b > B

    def candidate_points(self) -> tuple:
        """Points usable by Theorem 6: the curve plus the trivial point (0, n) if beyond B.

        Returns ``(b, a, witness)`` triples with finite a.
        """
        pts = [(b, a, w) for b, a, w in zip(self.b, self.a, self.witnesses, strict=True) if math.isfinite(a)]
        if self.n_entries > self.max_b:
            pts.append((self.n_entries, 0.0, Witness(node="*", quilt="trivial split: H = every entry, L empty")))
        return tuple(pts)

    def node_curve(self, node) -> InfluenceCurve:
        """The per-node curve :math:`a_i(b)` (needs ``per_node=True`` when the curve was computed)."""
        per = self.details.get("per_node")
        if not per or node not in per:
            raise ParameterError(
                f"The curve has no per-node values for node {node!r}; compute it with per_node=True."
            )
        wit = self.details.get("per_node_witnesses", {}).get(node)
        return InfluenceCurve(
            b=self.b, a=per[node], witnesses=wit if wit is not None else (None,) * self.max_b,
            n_entries=self.n_entries, method=self.method + ":node", fingerprint=self.fingerprint,
            theorem=self.theorem, notes=(f"per-node curve a_i(b) of node {node!r}",),
        )

    # ------------------------------------------------------------ output
    def to_dict(self) -> dict:
        """JSON-ready dict: ``points`` [{"b", "a"}], ``witnesses``, method, fingerprint, ..."""
        return {
            "points": [{"b": b, "a": json_float(a)} for b, a in zip(self.b, self.a, strict=True)],
            "witnesses": [
                None if w is None else {"b": b, "node": jsonable(w.node), "quilt": jsonable(w.quilt)}
                for b, w in zip(self.b, self.witnesses, strict=True)
            ],
            "n_entries": self.n_entries,
            "max_b": self.max_b,
            "method": self.method,
            "fingerprint": self.fingerprint,
            "theorem": self.theorem,
            "notes": list(self.notes),
            "details": {
                k: jsonable(v) for k, v in self.details.items() if k not in ("per_node", "per_node_witnesses")
            },
        }

    def explain(self, max_rows: int = 12) -> str:
        """The curve as text: method, size, fingerprint, theorem, then up to ``max_rows`` points with witnesses."""
        lines = [
            f"a(b)-influence curve ({self.method}), {self.n_entries} entries, b = 1..{self.max_b}, "
            f"fingerprint {self.fingerprint}",
            f"relies on: {self.theorem}",
        ]
        rows = list(zip(self.b, self.a, self.witnesses, strict=True))
        shown = rows if len(rows) <= max_rows else rows[: max_rows - 2] + rows[-2:]
        for k, (b, a, w) in enumerate(shown):
            if len(rows) > max_rows and k == max_rows - 2:
                lines.append("  ...")
            wtxt = "" if w is None else f"  node {w.node}, quilt {_fmt_quilt(w.quilt)}"
            lines.append(f"  b={b:<5d} a={a:.6g}{wtxt}")
        secs = self.details.get("seconds")
        if isinstance(secs, float):
            lines.append(f"computed in {secs:.3g} s")
        for n in self.notes:
            lines.append(f"note: {n}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def _point_witness(w) -> Witness | None:
    """A curve point's witness: a Witness as given, a ``(node, quilt)`` pair as a Witness, None as None."""
    if w is None or isinstance(w, Witness):
        return w
    node, quilt = w
    return Witness(node=node, quilt=quilt)


def _fmt_quilt(q) -> str:
    if isinstance(q, str):
        return q
    try:
        return "{" + ", ".join(map(str, q)) + "}"
    except TypeError:
        return str(q)


def curve_from_points(points, n_entries: int, *, method: str = "user", fingerprint: str | None = None,
                      notes=(), theorem: str = "user-supplied points of an a(b)-influence curve") -> InfluenceCurve:
    """Build a curve from user-known points.

    ``points`` maps b -> a (dict) or is an iterable of ``(b, a)`` pairs.  Missing
    b values take the value of the nearest known smaller b (valid because the
    curve is non-increasing), or ``inf`` below the first known point.
    """
    n_entries = check_positive_int(n_entries, "n_entries", "curve_from_points")
    items = points.items() if isinstance(points, Mapping) else points
    known: dict = {}
    for b, a in items:
        b = check_positive_int(b, "b", "curve_from_points")
        a = float(a)
        if math.isnan(a) or a < 0:
            raise ParameterError(f"The a value at b={b} must be a number >= 0. Got {a!r} instead.")
        known[b] = min(a, known.get(b, math.inf))
    if not known:
        raise ParameterError("curve_from_points needs at least one (b, a) point.")
    B = max(known)
    vals, cur = [], math.inf
    for b in range(1, B + 1):
        cur = min(cur, known.get(b, math.inf))
        vals.append(cur)
    fp = fingerprint or hashlib.sha256(repr(sorted(known.items())).encode()).hexdigest()[:16]
    return InfluenceCurve(b=range(1, B + 1), a=vals, witnesses=(None,) * B, n_entries=n_entries,
                          method=method, fingerprint=fp, theorem=theorem, notes=notes)


def pointwise_max(curves, fingerprint, notes) -> InfluenceCurve:
    """a(b) = max over the members' curves, with the witness of the member attaining it.

    The value is the exact maximum; the witness member is the first, in the members'
    order, whose a(b) ties with it (:func:`puffgm.core.ties.canonical_argmax`).
    """
    a = np.array([list(c.a) for c in curves], dtype=float)
    B = a.shape[1]
    top = np.array([canonical_argmax(a[:, j]) for j in range(B)], dtype=int)
    value = a.max(axis=0)
    first = curves[0]
    details = {"per_member": tuple(tuple(c.a) for c in curves), "worst_member": tuple(int(t) for t in top),
               "seconds": float(sum(c.details.get("seconds", 0.0) for c in curves))}
    for key in ("secrets", "secrets_description", "quilt_family"):  # members share nodes and secrets
        if key in first.details:
            details[key] = first.details[key]
    return InfluenceCurve(b=range(1, B + 1), a=value.tolist(),
                          witnesses=tuple(curves[top[j]].witnesses[j] for j in range(B)),
                          n_entries=first.n_entries, method=first.method, fingerprint=fingerprint,
                          notes=tuple(notes), details=details)
