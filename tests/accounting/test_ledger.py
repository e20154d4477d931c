"""A budget that lasts: the SQLite ledger behind the accountant.

It survives the process, its budget is fixed when it is created, a release is charged before any
noise is drawn (a charge whose release never comes costs budget, never privacy), and processes
racing for the last of a budget never both release.
"""

import json
import multiprocessing as mp
import sqlite3

import pytest

from puffgm.accounting import PrivacyAccountant
from puffgm.chains import ChainPriorClass
from puffgm.exceptions import BudgetError, CompositionError, ParameterError
from puffgm.mechanisms.laplace import release_laplace

# These tests hand the accountant records directly (charge, record, make_release): the user vouches for them.
pytestmark = pytest.mark.usefixtures("honest_but_curious")

CHAIN = ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], initial="stationary", length=20)


def _calibration():
    import puffgm

    return puffgm.calibrate(CHAIN, epsilon=1.0)


def test_the_ledger_outlives_the_accountant(tmp_path):
    path = tmp_path / "budget.db"
    cal = _calibration()
    first = PrivacyAccountant(budget=2.5, ledger=path)
    release_laplace(1.0, cal, accountant=first, random_state=0, label="monday")
    again = PrivacyAccountant(ledger=path)  # another process, another day: the budget is the file's
    assert again.budget == 2.5 and again.total == 1.0 and again.entries[0].label == "monday"
    assert again.entries[0].status == "released" and again.entries[0].time.endswith("+00:00")
    release_laplace(1.0, cal, accountant=again, random_state=1)
    with pytest.raises(BudgetError, match="over the budget of 2.5"):
        release_laplace(1.0, _calibration(), accountant=PrivacyAccountant(budget=2.5, ledger=path),
                        random_state=2)
    assert PrivacyAccountant(ledger=path).total == pytest.approx(2.0)  # the refusal charged nothing


def test_the_budget_is_fixed_when_the_ledger_is_created(tmp_path):
    path = tmp_path / "b.db"
    PrivacyAccountant(budget=2.0, ledger=path)
    with pytest.raises(ParameterError, match="holds a budget of 2.0, set when it was created"):
        PrivacyAccountant(budget=5.0, ledger=path)
    assert PrivacyAccountant(budget=2.0, ledger=path).budget == 2.0


def test_a_file_that_is_not_a_ledger_is_refused(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_text("not a database")
    with pytest.raises(ParameterError, match="SQLite|not a puffgm ledger"):
        PrivacyAccountant(ledger=junk)
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.execute("INSERT INTO meta VALUES ('format', 'something else')")
    con.commit()
    con.close()
    with pytest.raises(ParameterError, match="not a puffgm ledger"):
        PrivacyAccountant(ledger=other)


def test_a_charge_whose_release_never_comes_costs_budget_not_privacy(tmp_path):
    path = tmp_path / "crash.db"
    cal = _calibration()
    acc = PrivacyAccountant(budget=2.0, ledger=path)
    planned = release_laplace(1.0, cal, random_state=0)
    acc.charge(planned)  # as a release function does before drawing; then the process "dies"
    later = PrivacyAccountant(ledger=path)
    assert later.total == 1.0 and later.entries[0].status == "charged"
    release_laplace(1.0, cal, accountant=later, random_state=1)
    with pytest.raises(BudgetError):
        release_laplace(1.0, cal, accountant=later, random_state=2)


def test_a_release_is_recorded_only_against_its_own_charge(tmp_path):
    cal = _calibration()
    acc = PrivacyAccountant(budget=10.0, ledger=tmp_path / "c.db")
    rel = release_laplace(1.0, cal, random_state=0)
    with pytest.raises(CompositionError, match="no open charge"):
        acc.record(rel, charged=0)
    with pytest.raises(CompositionError, match="charged before their noise was drawn"):
        acc.record(rel)
    position = acc.charge(rel)
    with pytest.raises(CompositionError, match="no open charge"):  # another accountant on the file did not charge it
        PrivacyAccountant(ledger=tmp_path / "c.db").record(rel, charged=position)
    acc.record(rel, charged=position)
    with pytest.raises(CompositionError, match="already recorded"):
        acc.record(rel)
    assert [e.status for e in PrivacyAccountant(ledger=tmp_path / "c.db").entries] == ["released"]


def _race(path, seed, out):
    """One process: release a count at epsilon 1 into the shared ledger (budget 1.5: only one fits)."""
    import puffgm
    from puffgm.accounting import PrivacyAccountant
    from puffgm.chains import ChainPriorClass
    from puffgm.exceptions import BudgetError
    from puffgm.mechanisms.laplace import release_laplace

    cc = ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], initial="stationary", length=20)
    cal = puffgm.calibrate(cc, epsilon=1.0)
    acc = PrivacyAccountant(budget=1.5, ledger=path)
    out.wait()  # start together
    try:
        release_laplace(1.0, cal, accountant=acc, random_state=seed)
    except BudgetError:
        return
    with open(f"{path}.{seed}", "w") as fh:
        fh.write("released")


def test_processes_racing_for_the_last_of_a_budget_never_both_release(tmp_path):
    path = str(tmp_path / "race.db")
    PrivacyAccountant(budget=1.5, ledger=path)
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=_race, args=(path, seed, start)) for seed in range(4)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    released = [s for s in range(4) if (tmp_path / f"race.db.{s}").exists()]
    assert len(released) == 1
    acc = PrivacyAccountant(ledger=path)
    assert acc.total == 1.0 and [e.status for e in acc.entries] == ["released"]


def test_ledger_show(cli, tmp_path):
    path = tmp_path / "show.db"
    release_laplace(1.0, _calibration(), accountant=PrivacyAccountant(budget=4.0, ledger=path), random_state=0,
                    label="first")
    code, out, err = cli("ledger", "show", str(path))
    assert code == 0, err
    assert "1 release(s): 1-Pufferfish private (budget 4, remaining 3)" in out and "[first]" in out
    code, out, err = cli("ledger", "show", str(path), "--json")
    d = json.loads(out)
    assert d["total"] == 1.0 and d["remaining"] == 3.0 and d["entries"][0]["status"] == "released"
    code, out, err = cli("ledger", "show", str(tmp_path / "nope.db"))
    assert code == 2 and "There is no ledger file" in err and len(err.strip().splitlines()) == 1
