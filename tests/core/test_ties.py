"""Canonical tie-breaking (puffgm.core.ties): the value is the exact best, the witness is the
first candidate in the caller's order that ties with it, whatever the last bits say."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from puffgm.core.ties import TIE_ATOL, TIE_RTOL, RunningBest, canonical_argmax, canonical_argmin, ties
from puffgm.exceptions import ParameterError


def _brute(values, kind):
    best = max(values) if kind == "max" else min(values)
    return best, next(k for k, v in enumerate(values) if ties(v, best))


def test_tolerance_is_relative_with_an_absolute_floor():
    assert ties(1.0 + 0.5 * TIE_RTOL, 1.0) and not ties(1.0 + 3 * TIE_RTOL, 1.0)
    assert ties(0.5 * TIE_ATOL, 0.0) and not ties(3 * TIE_ATOL, 0.0)
    assert ties(math.inf, math.inf) and not ties(1e308, math.inf) and not ties(math.nan, math.nan)


def test_last_bits_do_not_move_the_witness():
    x = 0.5603931093947339
    for values in ([0.1, x, np.nextafter(x, 1.0)], [0.1, np.nextafter(x, 1.0), x]):
        assert canonical_argmax(values) == 1
        assert canonical_argmin([-v for v in values]) == 1


def test_nan_and_empty_are_refused():
    with pytest.raises(ParameterError, match="NaN"):
        canonical_argmax([1.0, math.nan])
    with pytest.raises(ParameterError, match="at least one"):
        canonical_argmin([])
    with pytest.raises(ParameterError, match="NaN"):
        RunningBest("min").offer(math.nan, "w")


# values drawn from a few levels, each level jittered by a few ulps: many ties
_jittered = st.lists(
    st.tuples(st.sampled_from([0.0, 1e-13, 0.25, 1.0, 3.5, math.inf]), st.integers(-4, 4)),
    min_size=1, max_size=40,
).map(lambda pairs: [v if not math.isfinite(v) else float(v + k * np.spacing(max(v, 1e-300)))
                     for v, k in pairs])


@settings(max_examples=300, deadline=None)
@given(_jittered, st.sampled_from(["max", "min"]))
def test_running_best_equals_the_brute_force(values, kind):
    run = RunningBest(kind)
    for k, v in enumerate(values):
        run.offer(v, k)
    best, first = _brute(values, kind)
    assert run.value == best
    assert run.witness == first
    assert (canonical_argmax if kind == "max" else canonical_argmin)(values) == first


def test_chain_curve_witness_is_the_canonical_quilt():
    """A reversible two-state chain has mirror quilts with equal influences: the witness is the
    quilt of fewest nearby nodes, then fewest quilt nodes, then first in chain order."""
    from puffgm.chains.curve import _node_candidates, chain_influence_curve
    from puffgm.chains.exact import ChainQuiltSearch
    from puffgm.chains.priors import ChainPrior, ChainPriorClass

    members = [ChainPrior(np.array(p), initial=np.array(i), length=30)
               for p, i in (([[0.9, 0.1], [0.4, 0.6]], [1, 0]), ([[0.8, 0.2], [0.3, 0.7]], [0.5, 0.5]))]
    cls = ChainPriorClass(members)
    B = 8
    _, a, wit = chain_influence_curve(cls, B)
    search = ChainQuiltSearch(cls, epsilon=1.0)
    search.ensure(B)
    per_node = []
    for i in range(1, 31):
        cands = _node_candidates(i, 30, B, search.node_tables(i, min(i - 1, B), min(30 - i, B)))
        rows = []
        for c in range(1, B + 1):
            usable = [q for q in cands if q[0] <= c]  # already in canonical order
            best, k = _brute([q[2] for q in usable], "min")
            rows.append((best, usable[k][1]))
        per_node.append(rows)
    for c in range(B):
        best, i = _brute([per_node[i][c][0] for i in range(30)], "max")
        assert a[c] == best
        assert wit[c] == (f"X{i + 1}", tuple(f"X{p}" for p in per_node[i][c][1]))
    assert wit[1] == ("X4", ("X2", "X5"))  # (X2, X5) and (X3, X6) tie exactly in arithmetic
