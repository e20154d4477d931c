r""":math:`a(b)`-influence curves of Bayesian-network classes through Markov quilts.

See :mod:`puffgm.core.curve` for the definition; here the split :math:`(H, L)` of node
:math:`X_i` is :math:`(X_N, X_Q \cup X_R)` for a Markov quilt :math:`X_Q` of :math:`X_i`, and the leakage
through :math:`L` is the max-influence :math:`e_\Theta(X_Q \mid X_i)` computed by exact inference.
"""

from __future__ import annotations

import math
import time

import numpy as np

from puffgm.core.curve import InfluenceCurve
from puffgm.core.ties import RunningBest, canonical_argmax
from puffgm.networks.quilt_scores import QuiltSearch, evaluate_quilts
from puffgm.networks.secrets import SecretSpec

__all__ = ["network_influence_curve"]


def _node_row(choices, node, pos, row, wit) -> None:
    """Fill a node's a_i(b) (in place): a running min over its quilts by card(X_N).

    A quilt serves every b >= card(X_N).  The witness is the first quilt, in the order
    (card(X_N), card(X_Q), positions of the quilt's nodes in node order, lexicographically),
    whose influence ties with a_i(b) (:mod:`puffgm.core.ties`).
    """
    cands = sorted(
        ((int(ch.n_nearby), tuple(sorted(pos[q] for q in ch.quilt)), float(ch.max_influence), tuple(ch.quilt))
         for ch in choices if math.isfinite(float(ch.max_influence)) and int(ch.n_nearby) <= row.size),
        key=lambda c: (c[0], len(c[1]), c[1]))
    run, j = RunningBest("min"), 0
    for b in range(1, row.size + 1):
        while j < len(cands) and cands[j][0] <= b:
            run.offer(cands[j][2], (node, cands[j][3]))
            j += 1
        if not run.empty:
            row[b - 1] = run.value
            wit[b - 1] = run.witness


def network_influence_curve(theta, max_b, secrets, max_quilt_states, per_node) -> InfluenceCurve:
    r"""The :math:`a(b)`-influence curve of a Bayesian-network class from its Markov quilts.

    :math:`a_i(b) = \min \{ e_\Theta(X_Q \mid X_i) : X_Q \text{ a quilt of } X_i, |X_N| \le b \}`
    and :math:`a(b) = \max_i a_i(b)` (Bai, He, Gu, Kifer and Maeng, Definition 7, through the quilts
    of Song, Wang and Chaudhuri, section 4); each point keeps its witness (node, quilt):
    the first protected node whose :math:`a_i(b)` ties with :math:`a(b)` (:mod:`puffgm.core.ties`), with
    its canonical quilt (:func:`_node_row`).
    """
    t0 = time.perf_counter()
    n = len(theta.nodes)
    B = n if max_b is None else min(max_b, n)  # a(n) = 0: points beyond n add nothing
    spec = secrets if secrets is not None else SecretSpec()
    if not isinstance(spec, SecretSpec):
        spec = SecretSpec(protected=spec)
    args = (theta, spec) if max_quilt_states is None else (theta, spec, max_quilt_states)
    search = QuiltSearch(*args)  # validated once, reused for every node
    nodes = tuple(spec.protected_nodes(theta))
    table = np.full((len(nodes), B), math.inf)
    wit: list[list[tuple[str, tuple] | None]] = [[None] * B for _ in nodes]
    n_choices = 0
    pos = {v: k for k, v in enumerate(theta.nodes)}
    for k, node in enumerate(nodes):
        choices = evaluate_quilts(theta, node, epsilon=None, search=search)
        n_choices += len(choices)
        _node_row(choices, node, pos, table[k], wit[k])
        if B >= n and table[k, n - 1] > 0:  # the trivial split H = all, L = {} (a = 0)
            table[k, n - 1] = 0.0
            wit[k][n - 1] = (node, ())
    a = table.max(axis=0) if nodes else np.full(B, math.inf)
    worst = [canonical_argmax(table[:, j]) for j in range(B)] if nodes else []
    witnesses = tuple(wit[worst[j]][j] for j in range(B)) if nodes else (None,) * B
    details = {"seconds": time.perf_counter() - t0, "n_candidate_quilts": n_choices,
               "secrets": spec.canonical(theta), "secrets_description": repr(spec),
               "quilt_family": search.family}
    if per_node:
        details["per_node"] = {node: tuple(table[k].tolist()) for k, node in enumerate(nodes)}
        details["per_node_witnesses"] = {node: tuple(wit[k]) for k, node in enumerate(nodes)}
    notes = list(getattr(theta, "notes", ()))
    if np.isinf(a).any():
        first = int(np.argmax(np.isfinite(a))) + 1 if np.isfinite(a).any() else None
        notes.append(
            "a(b) is inf for b below " + (str(first) if first else str(B + 1))
            + ": no candidate quilt with that few nearby nodes has a finite max-influence"
        )
    return InfluenceCurve(b=range(1, B + 1), a=a.tolist(), witnesses=witnesses, n_entries=n,
                          method="quilts", fingerprint=theta.fingerprint, notes=tuple(notes), details=details)
