"""Where an accountant keeps its entries: in memory, or in a SQLite file that outlives the process.

A release is *charged* before any noise is drawn and marked *released* once its value
exists.  The charge is one transaction that reads every entry, checks the composition
rule and the budget, and appends the new entry; in a SQLite ledger it runs under
``BEGIN IMMEDIATE``, SQLite's write lock, so two processes racing for the last of a
budget are serialised and the second sees the first's charge.  A process that dies
between the charge and the output leaves a charged entry: it loses budget, never
privacy.

The file is an ordinary SQLite database (Python's ``sqlite3``): a ``meta`` table (the
format and the budget, fixed when the file is created) and an ``entries`` table, one row
per release with its status, its time (UTC) and the entry as JSON.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import sqlite3
from dataclasses import dataclass

from puffgm.exceptions import ParameterError

__all__ = ["LedgerEntry", "MemoryLedger", "SQLiteLedger", "LEDGER_FORMAT"]

#: The format tag a ledger file carries in its ``meta`` table.
LEDGER_FORMAT = "puffgm-ledger-1"


@dataclass(frozen=True)
class LedgerEntry:
    """One charged or released release.

    Attributes
    ----------
    kind : str
        ``"mqm"`` (Song et al. Theorem 4.4), ``"dp"`` (Bai et al. Theorem 7), ``"blowfish"``, or
        ``"single"`` (a query-specific release, held alone).
    epsilon : float
        The release's own privacy parameter.
    key : str
        Quilt-set key, curve key or policy key: releases compose only within one key.
    label, mechanism, secure
        As given by the release.
    a, b, epsilon_dp
        Curve point and DP parameter of a ``"dp"`` release (None otherwise).
    subset : frozenset or None
        Individuals a ``"blowfish"`` release reads (None: all).
    policy : str or None
        The description of the policy of a ``"blowfish"`` release, when the release records one.
    status : str
        ``"charged"`` (the budget is spent, the value not yet drawn or lost) or ``"released"``.
    time : str
        When the release was charged (ISO 8601, UTC).
    theorem : str
        The guarantee the release relies on alone.
    """

    kind: str
    epsilon: float
    key: str
    label: str | None
    mechanism: str
    secure: bool
    a: float | None = None
    b: int | None = None
    epsilon_dp: float | None = None
    subset: frozenset | None = None
    policy: str | None = None
    status: str = "charged"
    time: str = ""
    theorem: str = ""

    def to_json(self) -> str:
        """The entry as JSON text (the subset as a sorted list)."""
        d = dataclasses.asdict(self)
        d["subset"] = None if self.subset is None else sorted(self.subset, key=str)
        return json.dumps(d, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> LedgerEntry:
        """The entry :meth:`to_json` wrote."""
        d = json.loads(text)
        d["subset"] = None if d.get("subset") is None else frozenset(d["subset"])
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d})


def now() -> str:
    """The current time, ISO 8601 in UTC, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class MemoryLedger:
    """The entries of one accountant in this process.

    Parameters
    ----------
    budget : float or None
    """

    def __init__(self, *, budget: float | None):
        self.budget = budget
        self._entries: list[LedgerEntry] = []

    @contextlib.contextmanager
    def transaction(self):
        """Yield ``(entries, append)``: the current entries and a function that appends one."""
        yield tuple(self._entries), self._entries.append

    def entries(self) -> tuple:
        """Every entry, in order."""
        return tuple(self._entries)

    def mark_released(self, position: int) -> None:
        """Mark the entry at ``position`` (0-based) released."""
        self._entries[position] = dataclasses.replace(self._entries[position], status="released")


class SQLiteLedger:
    """The entries of an accountant in a SQLite file, shared by every process that opens it.

    Parameters
    ----------
    path : str or os.PathLike
        The file (created if absent).
    budget : float or None
        The total budget.  When the file is created it is stored there; afterwards it must
        agree with the stored one (None: take the stored one).

    Raises
    ------
    ParameterError
        If the file is not a puffgm ledger, or its budget differs from ``budget``.
    """

    def __init__(self, path, *, budget: float | None):
        self.path = os.fspath(path)
        with self._write() as con:
            self.budget = self._settle_budget(con, budget)

    @contextlib.contextmanager
    def _write(self):
        """A connection inside ``BEGIN IMMEDIATE`` (SQLite's write lock), committed on success."""
        try:
            con = sqlite3.connect(self.path, timeout=120.0, isolation_level=None)
            con.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            raise ParameterError(f"The ledger {self.path!r} cannot be opened as a SQLite database ({exc}).") from None
        try:
            yield con
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        finally:
            con.close()

    def _settle_budget(self, con, budget: float | None) -> float | None:
        try:
            con.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            con.execute("CREATE TABLE IF NOT EXISTS entries (position INTEGER PRIMARY KEY, status TEXT NOT NULL, "
                        "time TEXT NOT NULL, entry TEXT NOT NULL)")
            meta = dict(con.execute("SELECT name, value FROM meta").fetchall())
        except sqlite3.DatabaseError as exc:
            raise ParameterError(f"The file {self.path!r} is not a puffgm ledger ({exc}).") from None
        if not meta:
            con.executemany("INSERT INTO meta VALUES (?, ?)",
                            [("format", LEDGER_FORMAT), ("budget", json.dumps(budget)), ("created", now())])
            return budget
        if meta.get("format") != LEDGER_FORMAT:
            raise ParameterError(f"The file {self.path!r} is not a puffgm ledger (format {meta.get('format')!r}).")
        stored = json.loads(meta["budget"])
        if budget is not None and stored != budget:
            raise ParameterError(f"The ledger {self.path!r} holds a budget of {stored!r}, set when it was created; "
                                 f"the budget given ({budget!r}) must agree with it.")
        return stored

    @staticmethod
    def _read(con) -> tuple:
        rows = con.execute("SELECT status, entry FROM entries ORDER BY position").fetchall()
        return tuple(dataclasses.replace(LedgerEntry.from_json(e), status=s) for s, e in rows)

    @contextlib.contextmanager
    def transaction(self):
        """Yield ``(entries, append)`` under the file's write lock; the appended entries are committed together."""
        with self._write() as con:
            def append(entry: LedgerEntry) -> None:
                con.execute("INSERT INTO entries (status, time, entry) VALUES (?, ?, ?)",
                            (entry.status, entry.time, entry.to_json()))

            yield self._read(con), append

    def entries(self) -> tuple:
        """Every entry, in order."""
        with self._write() as con:
            return self._read(con)

    def mark_released(self, position: int) -> None:
        """Mark the entry at ``position`` (0-based, in order) released."""
        with self._write() as con:
            rows = con.execute("SELECT position FROM entries ORDER BY position").fetchall()
            con.execute("UPDATE entries SET status = 'released' WHERE position = ?", (rows[position][0],))
