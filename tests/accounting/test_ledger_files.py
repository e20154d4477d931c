"""Ledger files that never surprise: ``ledger show`` reads without writing, creation needs a budget,
and every SQLite failure is one sentence (issue 44, item 4)."""

import hashlib
import math
import sqlite3

import pytest

from puffgm.accounting import PrivacyAccountant
from puffgm.accounting.ledger import SQLiteLedger
from puffgm.chains import ChainPriorClass
from puffgm.exceptions import ParameterError
from puffgm.mechanisms.laplace import release_laplace

CHAIN = ChainPriorClass.from_matrices([[0.9, 0.1], [0.4, 0.6]], initial="stationary", length=20)


@pytest.fixture(scope="module")
def cal():
    import puffgm

    return puffgm.calibrate(CHAIN, epsilon=1.0)


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(tmp_path, cal) -> dict:
    """A text file, an empty SQLite file, a SQLite file with another schema, and a real ledger."""
    junk = tmp_path / "junk.db"
    junk.write_text("not a database\n")
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE meta (k TEXT)")
    con.execute("CREATE TABLE people (name TEXT, age INTEGER)")
    con.execute("INSERT INTO people VALUES ('ann', 41)")
    con.commit()
    con.close()
    people = tmp_path / "people.db"  # another schema, no table of a ledger at all
    con = sqlite3.connect(people)
    con.execute("CREATE TABLE people (name TEXT, age INTEGER)")
    con.commit()
    con.close()
    ledger = tmp_path / "ledger.db"
    release_laplace(1.0, cal, accountant=PrivacyAccountant(budget=3.0, ledger=ledger), random_state=0, label="a")
    return {"junk": junk, "empty": empty, "other": other, "people": people, "ledger": ledger}


@pytest.mark.parametrize("name", ["junk", "empty", "other", "people", "ledger"])
def test_ledger_show_leaves_every_file_byte_identical(cli, tmp_path, cal, name):
    path = _files(tmp_path, cal)[name]
    before, listing = _digest(path), sorted(p.name for p in tmp_path.iterdir())
    code, out, err = cli("ledger", "show", path)
    assert _digest(path) == before and sorted(p.name for p in tmp_path.iterdir()) == listing
    if name == "ledger":
        assert code == 0 and "1 release(s): 1-Pufferfish private (budget 3, remaining 2)" in out
        return
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "not a puffgm ledger" in err, err


def test_ledger_show_refuses_what_a_ledger_holds_nothing_of(tmp_path, cal):
    files = _files(tmp_path, cal)
    with pytest.raises(ParameterError, match="it holds meta, people"):
        SQLiteLedger(files["other"], budget=None, read_only=True)
    with pytest.raises(ParameterError, match="open read-only"):
        with SQLiteLedger(files["ledger"], budget=None, read_only=True).transaction():
            pass


def test_an_accountant_refuses_a_foreign_database_and_changes_nothing(tmp_path, cal):
    files = _files(tmp_path, cal)
    for name in ("junk", "other", "people"):
        before = _digest(files[name])
        with pytest.raises(ParameterError, match="not a puffgm ledger"):
            PrivacyAccountant(budget=1.0, ledger=files[name])
        assert _digest(files[name]) == before


def test_creating_a_ledger_needs_a_budget(tmp_path):
    path = tmp_path / "new.db"
    with pytest.raises(ParameterError, match=r"needs a budget: give budget=B .*budget=math.inf"):
        PrivacyAccountant(ledger=path)
    assert not path.exists()


def test_an_unlimited_ledger_is_an_explicit_choice_shown_in_every_report(cli, tmp_path, cal):
    path = tmp_path / "unlimited.db"
    acc = PrivacyAccountant(budget=math.inf, ledger=path)
    release_laplace(1.0, cal, accountant=acc, random_state=0)
    assert acc.budget is None and "unlimited budget" in acc.report().explain()
    assert "unlimited budget" in PrivacyAccountant(ledger=path).report().explain()
    with pytest.raises(ParameterError, match="is unlimited, set when it was created"):
        PrivacyAccountant(budget=5.0, ledger=path)
    code, out, err = cli("ledger", "show", path, "--json")
    assert code == 0 and '"unlimited": true' in out
    code, out, err = cli("ledger", "show", path)
    assert code == 0 and "unlimited budget" in out


def test_a_locked_ledger_says_how_long_it_waited(tmp_path, cal):
    path = tmp_path / "locked.db"
    PrivacyAccountant(budget=2.0, ledger=path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(ParameterError, match=r"locked by another process: waited 0.2 s"):
            SQLiteLedger(path, budget=None, timeout=0.2)
        with pytest.raises(ParameterError, match=r"waited 0.2 s"):
            SQLiteLedger(path, budget=None, read_only=True, timeout=0.2)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_sqlite_failures_are_one_sentence(cli, tmp_path, cal):
    with pytest.raises(ParameterError, match="is a directory"):
        PrivacyAccountant(budget=1.0, ledger=tmp_path)
    with pytest.raises(ParameterError, match="cannot be written or opened"):
        PrivacyAccountant(budget=1.0, ledger=tmp_path / "no" / "such" / "dir.db")
    corrupt = _files(tmp_path, cal)["ledger"]
    data = bytearray(corrupt.read_bytes())
    data[100:] = b"\xab" * (len(data) - 100)
    corrupt.write_bytes(bytes(data))
    with pytest.raises(ParameterError, match="not a SQLite database or is corrupt"):
        PrivacyAccountant(ledger=corrupt)
    code, out, err = cli("release", "example:asia", "--answer", "1", "--epsilon", "1", "--ledger", tmp_path)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "is a directory" in err
    code, out, err = cli("release", "example:asia", "--answer", "1", "--epsilon", "1", "--ledger", corrupt)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "corrupt" in err


def test_the_release_command_creates_a_ledger_only_with_a_budget(cli, tmp_path):
    path = tmp_path / "cli.db"
    mqm = ("release", "example:asia", "--answer", "3", "--epsilon", "1", "--ledger", path)
    code, out, err = cli(*mqm)
    assert code == 2 and "--budget B" in err and "--budget unlimited" in err and not path.exists()
    code, out, err = cli(*mqm, "--budget", "unlimited")
    assert code == 0 and "remaining budget: unlimited" in out and "unlimited budget" in out, err


def test_a_ledger_that_cannot_be_written_is_one_sentence(tmp_path, cal, monkeypatch):
    # root ignores file modes, so SQLite's refusal to write is simulated at the first write statement
    path = tmp_path / "ro.db"
    acc = PrivacyAccountant(budget=2.0, ledger=path)
    real = sqlite3.connect

    class ReadOnly:
        def __init__(self, con):
            self.con = con

        def execute(self, sql, *args):
            if sql.startswith("INSERT"):
                raise sqlite3.OperationalError("attempt to write a readonly database")
            return self.con.execute(sql, *args)

        def __getattr__(self, name):
            return getattr(self.con, name)

    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: ReadOnly(real(*a, **k)))
    with pytest.raises(ParameterError, match=r"cannot be written or opened \(attempt to write a readonly database\)"):
        release_laplace(1.0, cal, accountant=acc, random_state=0)
    monkeypatch.undo()
    assert PrivacyAccountant(ledger=path).entries == ()
