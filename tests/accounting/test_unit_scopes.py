"""Composition per unit: the unit scope a release function sets (``make_release(..., units=)``), the
accountant's max over units, releases held alone closing only their units, the SQLite ledger keeping
the scope, and an exact joint audit on two independent units.
"""

from __future__ import annotations

import itertools
import json
import sqlite3

import numpy as np
import pytest
from scipy.special import logsumexp

import puffgm
from puffgm.accounting import PrivacyAccountant
from puffgm.core.composition import HeldAlone, composed_total, unit_groups
from puffgm.core.noise import SeededNoise
from puffgm.core.release import make_release
from puffgm.exceptions import CompositionError
from puffgm.mechanisms.laplace import MarkovQuiltComposition, MarkovQuiltRelease
from puffgm.mechanisms.query import QueryRelease

# These tests hand the accountant records directly (charge, record, make_release): the user vouches for them.
pytestmark = pytest.mark.usefixtures("honest_but_curious")

TOL = 1e-9


def _mqm(epsilon=1.0, key="k"):
    """The record of an MQM-style Laplace release (value not drawn), quilt key ``key``, scale 1 / epsilon."""
    return MarkovQuiltRelease(value=None, mechanism="Laplace on one unit", epsilon=epsilon, scale=1.0 / epsilon,
                              secure=False, noise="seeded", fingerprint="two-units", theorem="test",
                              details={"quilt_key": key})


def _release(acc, answer, units, epsilon=1.0, key="k", seed=0):
    planned = _mqm(epsilon, key)
    noise = SeededNoise(seed)
    return make_release(planned, lambda: float(noise.laplace(answer, planned.scale)), accountant=acc, units=units)


# ------------------------------------------------------------------------------- the composition
def test_unit_groups_and_the_max_over_units():
    a, b, c = (MarkovQuiltComposition(1.0, quilt_key="k", units=u) for u in ({1}, {2}, {1, 2}))
    everything = MarkovQuiltComposition(0.5, quilt_key="k")
    assert unit_groups([a, b]) == [[0], [1]]
    assert composed_total([a, b]) == 1.0  # disjoint units: parallel composition
    assert composed_total([a, b, c]) == 2.0  # unit 1: a and c (Song et al. Theorem 4.4: 2 * max)
    assert composed_total([a, b], everything) == 2.0  # None touches every unit
    assert composed_total([a], MarkovQuiltComposition(1.0, quilt_key="other", units={2})) == 1.0
    with pytest.raises(CompositionError, match="different instantiations or quilt sets"):
        composed_total([a], MarkovQuiltComposition(1.0, quilt_key="other", units={1, 3}))
    assert a.scoped([7, 8]).units == frozenset({7, 8}) and a.scoped(None).units is None


def test_a_release_function_sets_the_unit_scope_and_the_accountant_composes_per_unit():
    acc = PrivacyAccountant(budget=2.0)
    rel = _release(acc, 1.0, units=[1])
    assert rel.units == frozenset({1}) and rel.composition.units == frozenset({1})
    _release(acc, 0.0, units=[2])
    assert acc.total == 1.0 and "parallel composition over disjoint units" in acc.theorem
    _release(acc, 1.0, units=[1, 2])
    assert acc.total == 2.0
    with pytest.raises(puffgm.exceptions.BudgetError):
        _release(acc, 1.0, units=[2])
    _release(acc, 1.0, units=[3])  # a unit nothing touched yet
    assert acc.total == 2.0 and [sorted(e.units) for e in acc.entries] == [[1], [2], [1, 2], [3]]
    with pytest.raises(CompositionError, match="empty set"):
        _release(acc, 1.0, units=[])


def test_a_release_held_alone_closes_its_units_only():
    query = puffgm.calibrate_query("example:asia", {"count": 0}, epsilon=1.0, method="optimal-laplace")
    acc = PrivacyAccountant(budget=3.0)
    held = QueryRelease(value=None, calibration=query, secure=False, noise="seeded")
    make_release(held, lambda: 1.0, accountant=acc, units={1})
    assert isinstance(acc.entries[0].composition, HeldAlone)
    _release(acc, 1.0, units=[2])  # disjoint: allowed
    with pytest.raises(CompositionError, match="holds a query-specific release .* on these units"):
        _release(acc, 1.0, units=[1, 2])
    with pytest.raises(CompositionError, match="cannot compose .* with the 1 release"):
        make_release(held, lambda: 1.0, accountant=acc, units={2})
    make_release(held, lambda: 1.0, accountant=acc, units={3})
    report = acc.report()
    assert report.closed == (frozenset({1}), frozenset({3})) and report.total == 1.0
    assert "closed to further releases of units 1, 3 (held alone); other units: budget 3, remaining 2" \
        in report.explain() and report.remaining == 2.0
    whole = PrivacyAccountant(budget=3.0)
    make_release(held, lambda: 1.0, accountant=whole)
    assert whole.report().closed == (None,) and whole.remaining == 0.0
    assert "the ledger is closed to further releases" in whole.report().explain()
    assert "remaining" not in whole.report().explain()
    with pytest.raises(CompositionError, match="holds a query-specific release"):
        _release(whole, 1.0, units=[5])


# --------------------------------------------------------------------------------- the SQLite ledger
def test_the_sqlite_ledger_keeps_the_unit_scope(tmp_path):
    path = tmp_path / "units.db"
    acc = PrivacyAccountant(budget=2.0, ledger=path)
    _release(acc, 1.0, units=["alice"])
    _release(acc, 1.0, units=["bob"])
    again = PrivacyAccountant(ledger=path)
    assert [e.units for e in again.entries] == [frozenset({"alice"}), frozenset({"bob"})]
    assert again.total == 1.0 and all(e.status == "released" for e in again.entries)
    _release(again, 1.0, units=["alice", "carol"])
    with pytest.raises(puffgm.exceptions.BudgetError):
        _release(PrivacyAccountant(ledger=path), 1.0, units=["alice"])
    rows = sqlite3.connect(path).execute("SELECT entry FROM entries").fetchall()
    assert json.loads(rows[2][0])["units"] == ["alice", "carol"]


def test_a_ledger_written_before_composition_objects_is_read(tmp_path):
    path = tmp_path / "old.db"
    PrivacyAccountant(budget=3.0, ledger=path)
    old = {"kind": "mqm", "epsilon": 1.0, "key": "k", "label": "old", "mechanism": "MQM", "secure": True,
           "a": None, "b": None, "epsilon_dp": None, "subset": None, "policy": None, "status": "released",
           "time": "2026-01-01T00:00:00+00:00", "theorem": "t"}
    con = sqlite3.connect(path)
    con.execute("INSERT INTO entries (status, time, entry) VALUES (?, ?, ?)",
                ("released", old["time"], json.dumps(old)))
    con.commit()
    con.close()
    acc = PrivacyAccountant(ledger=path)
    assert acc.total == 1.0 and acc.entries[0].kind == "MarkovQuiltComposition" and acc.entries[0].key == "k"
    _release(acc, 1.0, units=None)  # the same quilt key: Theorem 4.4 composes it with the old entry
    assert acc.total == 2.0


# ------------------------------------------------------------------- exact joint audit on two units
#
# Two independent binary units X_1, X_2 (every prior of the class is a product), secrets X_u = a
# against X_u = b, and K Laplace releases Y_k = F_k(X) + Z_k.  The exact loss of the joint output is
# sup_y |log p(y | X_u = a) - log p(y | X_u = b)|, and the sup sits on the grid of atom coordinates
# (the argument in tests/accounting/test_joint_audit.py: within a cell the densities are multilinear
# in exp(2 y_j / b_j), so the ratio is extreme at corners, and beyond the outermost atoms constant).

PRIORS = [(0.3, 0.6), (0.5, 0.2), (0.9, 0.45)]
STATES = np.array(list(itertools.product([0, 1], repeat=2)))


def _joint_loss(functions, scales) -> float:
    values = np.array([[f(x) for f in functions] for x in STATES], dtype=float)
    grid = np.array(list(itertools.product(*[np.unique(values[:, j]) for j in range(len(functions))])))
    logk = -np.sum(np.abs(grid[:, None, :] - values[None, :, :]) / np.asarray(scales), axis=2)
    worst = 0.0
    for p in PRIORS:
        px = np.prod(np.where(STATES == 1, p, 1 - np.asarray(p)), axis=1)
        for u in (0, 1):
            laws = []
            for v in (0, 1):
                w = np.where(STATES[:, u] == v, px, 0.0)
                with np.errstate(divide="ignore"):
                    laws.append(logsumexp(logk + np.log(w / w.sum()), axis=1))
            worst = max(worst, float(np.max(np.abs(laws[0] - laws[1]))))
    return worst


def _audit(releases, epsilon=1.0):
    """(exact joint loss, the accountant's total) of releases (function, units) at ``epsilon`` each."""
    acc = PrivacyAccountant()
    for i, (f, units) in enumerate(releases):
        _release(acc, float(f(np.array([1, 0]))), units=units, epsilon=epsilon, seed=i)
    return _joint_loss([f for f, _ in releases], [1.0 / epsilon] * len(releases)), acc.total


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_exact_joint_audit_on_disjoint_and_overlapping_units(epsilon):
    def x1(x):
        return x[0]

    def x2(x):
        return x[1]

    def total(x):
        return x[0] + x[1]

    loss, reported = _audit([(x1, {1}), (x2, {2})], epsilon)  # disjoint: parallel, the max
    assert reported == pytest.approx(epsilon) and loss <= reported * (1 + TOL)
    assert loss == pytest.approx(epsilon)  # attained: the max over units is exact here
    loss, reported = _audit([(x1, {1}), (total, {1, 2})], epsilon)  # overlapping on unit 1
    assert reported == pytest.approx(2 * epsilon) and loss <= reported * (1 + TOL)
    loss, reported = _audit([(total, {1, 2}), (x2, {2})], epsilon)
    assert reported == pytest.approx(2 * epsilon) and loss <= reported * (1 + TOL)
    # the audit sees a wrong scope: the sum reads unit 1, declared on unit 2 only
    loss, reported = _audit([(x1, {1}), (total, {2})], epsilon)
    assert loss > reported * (1 + 1e-3)


def test_every_composition_class_survives_the_ledger_json():
    from puffgm.accounting import THEOREM_7, THEOREM_BLOWFISH, THEOREM_MQM
    from puffgm.accounting.ledger import LedgerEntry
    from puffgm.blowfish.mechanisms import BlowfishComposition
    from puffgm.mechanisms.pufferfish import CurveComposition

    comps = [MarkovQuiltComposition(np.float64(1.0), quilt_key="k", units=[np.int64(1), [2, 3], "a"]),
             CurveComposition(2.0, curve_key="c", a=0.5, b=np.int64(2), epsilon_dp=0.75, units=None),
             BlowfishComposition(0.5, policy_key="p", constrained=False, policy="line", units={4, 5}),
             HeldAlone(1.0, mechanism="one query", units={("panel", 7)})]
    for comp in comps:
        entry = LedgerEntry(comp, "label", "m", True, digest=comp.digest())
        back = LedgerEntry.from_json(entry.to_json())
        assert back == entry and back.composition.digest() == comp.digest() and back.units == comp.units
    assert (comps[0].theorem, comps[1].theorem, comps[2].theorem) == (THEOREM_MQM, THEOREM_7, THEOREM_BLOWFISH)


def test_a_new_rule_is_one_class_and_nothing_in_the_accountant():
    """A toy mechanism declares sequential composition (the sum) in its own class; the accountant composes it,
    refuses it beside another rule with both rules' texts, and never learns its name."""
    from dataclasses import dataclass
    from typing import Any, ClassVar

    from puffgm.core.composition import Composition
    from puffgm.core.release import Release

    @dataclass(frozen=True)
    class Summed(Composition):
        kinds: ClassVar[str] = "toy releases"
        one: ClassVar[str] = "a toy release"
        rule: ClassVar[str] = "the toy theorem adds toy releases only"
        source: ClassVar[str] = "the toy paper"
        theorem: ClassVar[str] = "toy theorem (sequential composition)"

        @classmethod
        def compose(cls, entries):
            return sum(e.epsilon for e in entries)

    @dataclass(frozen=True)
    class ToyRelease(Release):
        value: Any
        epsilon: float
        mechanism: str = "toy"
        theorem: str = "toy"
        secure: bool = False
        units: Any = None

        @property
        def composition(self):
            return Summed(self.epsilon, units=self.units)

    acc = PrivacyAccountant(budget=3.0)
    for eps in (0.5, 0.75):
        make_release(ToyRelease(None, eps), lambda: 0.0, accountant=acc)
    make_release(ToyRelease(None, 1.0), lambda: 0.0, accountant=acc, units={1})
    make_release(ToyRelease(None, 0.5), lambda: 0.0, accountant=acc, units={2})
    assert acc.total == pytest.approx(2.25)  # unit 1: 0.5 + 0.75 + 1 (the whole-data releases touch it)
    assert acc.theorem.startswith("toy theorem")
    with pytest.raises(CompositionError, match="holds toy releases, so it refuses a Markov Quilt Mechanism release: "
                                               "no theorem in the toy paper or in Song"):
        _release(acc, 1.0, units=[1])
