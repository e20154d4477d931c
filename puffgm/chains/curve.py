r"""The :math:`a(b)` influence curve of a chain class.

$$
a(b) = \max_{X_i} \min_{X_Q :\, \mathrm{card}(X_N) \le b} e_\Theta(X_Q \mid X_i),
$$

over the Lemma 4.6 family (:math:`\{X_{i-a}, X_{i+b}\}`, :math:`\{X_{i-a}\}`,
:math:`\{X_{i+b}\}`) plus the trivial quilt (:math:`\mathrm{card}(X_N) = T`, influence 0).  The curve is
non-increasing in :math:`b` and :math:`a(b) = 0` for :math:`b \ge T`.

With a stationary start and :math:`T > 2 b_{\max} + 1` (:math:`b_{\max}` = ``max_b``) the influences depend only on the
quilt offsets, and the middle node is the worst node for every budget :math:`b` (the
exact analogue of Lemma C.9: an interior quilt shifted to a node near an end,
with the end that falls off the chain dropped, keeps :math:`\mathrm{card}(X_N)` and does not
increase the influence), so the cost depends on :math:`b_{\max}` and :math:`k`, not on :math:`T`.  The
minimum over two-sided quilts of budget :math:`b` is attained with :math:`a + b' - 1 = b` (the
influence is non-increasing in both offsets), and each anti-diagonal is
searched best-first with the one-sided influences as lower bounds.  Other
classes are computed node by node (cost grows with :math:`T`).

Each point reports the exact :math:`a(b)` and a canonical witness (:mod:`puffgm.core.ties`):
among nodes whose :math:`a_i(b)` ties with :math:`a(b)` (relative ``TIE_RTOL``), the first in
chain order (the middle node on the stationary road); among that node's quilts
whose influence ties with :math:`a_i(b)`, the one with the fewest nearby nodes, then the
fewest quilt nodes, then the first by the positions of its nodes in the chain,
lexicographically.  The
witness therefore does not depend on the last bit of any influence.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from puffgm.chains.exact import ChainQuiltSearch
from puffgm.chains.priors import ChainPriorClass, node_name
from puffgm.core.curve import InfluenceCurve
from puffgm.core.ties import RunningBest, ties
from puffgm.core.validation import check_positive_int
from puffgm.exceptions import ParameterError, PriorError

__all__ = ["chain_influence_curve", "chain_class_curve", "DEFAULT_CHAIN_MAX_B"]

#: Default largest b for chains (curves of million-step chains are flat long before).
DEFAULT_CHAIN_MAX_B = 200

_WORK_LIMIT = 3e8
#: Fixed work of one node of the node-by-node search (tables and candidates), in the units of _WORK_LIMIT:
#: with max_b = 1 a node takes about 50 us and 1.6 kB, so T is limited to about 75000 nodes (4 s).
_NODE_WORK = 4000


def chain_influence_curve(chain_class: ChainPriorClass, max_b: int, *, paper_convention: bool = False):
    r"""Return (b, a, witnesses) for :math:`b = 1, \dots,` ``max_b``.

    Parameters
    ----------
    chain_class : ChainPriorClass
    max_b : int
        Largest budget :math:`\operatorname{card}(X_N)`.

    Returns
    -------
    b : ndarray of int
        The sizes :math:`1, \dots,` ``max_b``.
    a : ndarray of float
        a[b-1] (``inf`` when no quilt of that size has finite influence).
    witnesses : list of (node name, quilt tuple)
        Where each a(b) is attained.
    """
    if not isinstance(chain_class, ChainPriorClass):
        raise ParameterError(f"chain_influence_curve needs a ChainPriorClass; got {type(chain_class).__name__}.")
    B = check_positive_int(max_b, "max_b", "chain_influence_curve")
    T = chain_class.length
    bs = np.arange(1, B + 1)
    a = np.full(B, math.inf)
    wit: list = [None] * B
    Bq = min(B, T - 1)  # budgets below T need quilts; b >= T uses the trivial quilt
    search = ChainQuiltSearch(chain_class, epsilon=1.0, paper_convention=paper_convention)
    if Bq >= 1:
        search.ensure(Bq)
        if chain_class.initial_kinds == {"stationary"} and T > 2 * Bq + 1:
            _stationary_curve(search, T, Bq, a, wit)
        else:
            work = T * (Bq * Bq * chain_class.k ** 2 + _NODE_WORK)  # a node costs about _NODE_WORK units at least
            if work > _WORK_LIMIT:
                raise ParameterError(
                    f"The influence curve of this chain class needs a node-by-node search (T={T}, max_b={B}); "
                    "reduce max_b or T, or use a stationary start."
                )
            _nodewise_curve(search, T, Bq, a, wit)
    for c in range(T, B + 1):
        a[c - 1] = 0.0
        wit[c - 1] = (node_name(1), ())
    # enforce the definition's monotonicity exactly (a larger budget allows every smaller quilt)
    for c in range(1, B):
        if a[c] > a[c - 1]:
            a[c], wit[c] = a[c - 1], wit[c - 1]
    return bs, a, wit


def _stationary_curve(search: ChainQuiltSearch, T: int, Bq: int, a, wit):
    """The middle node's curve; witnesses follow the canonical order of :func:`_quilt_key`."""
    mid = (T + 1) // 2
    Gs, Bs, DL, DR = search.node_tables(mid, Bq, Bq)
    run = RunningBest("min")
    for c in range(1, Bq + 1):
        # two-sided quilts {X_{mid-a}, X_{mid+b'}} with a + b' - 1 = c, left end in node order
        aa = np.arange(c, 0, -1)
        bb = c + 1 - aa
        lb = np.maximum(DL[aa - 1], DR[bb - 1])
        order = np.argsort(lb, kind="stable")
        lbs = lb[order]
        found: dict[int, float] = {}
        best = run.value
        pos, batch = 0, 32
        while pos < order.size and (lbs[pos] < best or ties(lbs[pos], best)):  # best-first, ties kept
            idx = order[pos : pos + batch]
            ai, bi = aa[idx] - 1, bb[idx] - 1
            d2 = np.full(idx.size, -math.inf)
            for G, Bm in zip(Gs, Bs, strict=True):
                d2 = np.maximum(d2, (G[ai] + Bm[bi]).max(axis=(1, 2)))
            d2 = np.maximum(d2, 0.0)
            found.update(zip(idx.tolist(), d2.tolist(), strict=True))
            best = min(best, float(d2.min()))
            pos += batch
            batch *= 2
        for j in sorted(found):  # canonical order within the budget
            run.offer(found[j], (node_name(mid), (node_name(mid - int(aa[j])), node_name(mid + int(bb[j])))))
        a[c - 1] = run.value
        wit[c - 1] = run.witness


def _quilt_key(card: int, positions: tuple) -> tuple:
    """Canonical order of a node's quilts: fewest nearby nodes, fewest quilt nodes, then positions."""
    return (card, len(positions), positions)


class _Candidate(NamedTuple):
    """A quilt of a node: its card (nearby nodes), its positions and its influence bound."""

    card: int
    quilt: tuple[int, ...]
    value: float


def _node_candidates(i: int, T: int, Bq: int, tables) -> list:
    """Node i's quilts with card(X_N) <= Bq as (card, positions, influence), in canonical order."""
    amax, bmax = min(i - 1, Bq), min(T - i, Bq)
    Gs, Bs, DL, DR = tables
    cands: list[_Candidate] = [
        _Candidate(T - i + j + 1, (i - j - 1,), float(DL[j])) for j in range(amax) if T - i + j + 1 <= Bq]
    cands += [_Candidate(i + j, (i + j + 1,), float(DR[j])) for j in range(bmax) if i + j <= Bq]
    if amax and bmax:
        D2 = np.full((amax, bmax), -math.inf)
        for G, Bm in zip(Gs, Bs, strict=True):
            D2 = np.maximum(D2, (G[:, None] + Bm[None, :]).max(axis=(2, 3)))
        D2 = np.maximum(D2, 0.0)
        cands += [_Candidate(ai + bi + 1, (i - ai - 1, i + bi + 1), float(D2[ai, bi]))
                  for ai in range(amax) for bi in range(min(bmax, Bq - ai))]
    cands.sort(key=lambda q: _quilt_key(q.card, q.quilt))
    return cands


def _nodewise_curve(search: ChainQuiltSearch, T: int, Bq: int, a, wit):
    """Every node's curve; the worst node is the first in node order within the tie tolerance."""
    worst = [RunningBest("max") for _ in range(Bq)]
    for i in range(1, T + 1):
        cands = _node_candidates(i, T, Bq, search.node_tables(i, min(i - 1, Bq), min(T - i, Bq)))
        run, k = RunningBest("min"), 0  # min over quilts with card <= c: one run over c = 1..Bq
        for c in range(1, Bq + 1):
            while k < len(cands) and cands[k].card == c:
                run.offer(cands[k].value, (node_name(i), tuple(node_name(p) for p in cands[k].quilt)))
                k += 1
            w = run.witness if not run.empty else (node_name(i), None)
            worst[c - 1].offer(run.value, w)
    a[:Bq] = [r.value for r in worst]
    wit[:Bq] = [r.witness for r in worst]


def chain_class_curve(chain_class, max_b) -> InfluenceCurve:
    """The a(b)-influence curve of a Markov-chain class as an :class:`InfluenceCurve`.

    ``max_b`` defaults to ``min(T, DEFAULT_CHAIN_MAX_B)``; a(T) = 0 (the trivial split).
    """
    t0 = time.perf_counter()
    T = _chain_length(chain_class)
    B = max_b if max_b is not None else (min(T, DEFAULT_CHAIN_MAX_B) if T else DEFAULT_CHAIN_MAX_B)
    if T:
        B = min(B, T)  # a(T) = 0: points beyond T add nothing
    bs, avals, wits = chain_influence_curve(chain_class, B)
    bs = [int(v) for v in bs]
    avals = [float(v) for v in avals]
    if bs != list(range(1, len(bs) + 1)):
        raise PriorError("The chain machinery returned b values other than 1..B.")
    wits = list(wits) if wits is not None else [None] * len(bs)
    norm: list = []
    for w in wits:
        if w is None:
            norm.append(None)
        elif isinstance(w, Mapping):
            norm.append((w.get("node"), tuple(w.get("quilt", ()))))
        else:
            w = tuple(w)
            q = w[1] if len(w) > 1 else ()
            if q is None:  # no quilt of that size has finite influence
                norm.append(None)
                continue
            norm.append((w[0], tuple(q) if not isinstance(q, str) else q))
    if T and len(avals) >= T:
        avals[T - 1] = 0.0  # trivial split
    fp = getattr(chain_class, "fingerprint", None)
    if callable(fp):
        fp = fp()
    return InfluenceCurve(b=bs, a=avals, witnesses=norm, n_entries=T or len(bs) + 1, method="chain",
                          fingerprint=str(fp), details={"seconds": time.perf_counter() - t0},
                          notes=tuple(getattr(chain_class, "notes", ()) or ()))


def _chain_length(chain_class) -> int | None:
    for attr in ("length", "T", "n", "n_nodes"):
        v = getattr(chain_class, attr, None)
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            return int(v)
    return None
