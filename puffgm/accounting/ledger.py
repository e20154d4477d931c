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
per release with its status, its time (UTC) and the entry as JSON: its composition
(:mod:`puffgm.core.composition`; the class's import path and every field it reads, the unit
scope included), label, mechanism and digest.  Entries written before compositions were
objects (a ``kind`` and a ``key``) are read as the composition of their kind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import importlib
import json
import os
import sqlite3
import threading
from dataclasses import dataclass
from typing import Any

from puffgm.core.composition import Composition
from puffgm.exceptions import ParameterError

__all__ = ["LedgerEntry", "MemoryLedger", "SQLiteLedger", "LEDGER_FORMAT"]

#: The format tag a ledger file carries in its ``meta`` table.
LEDGER_FORMAT = "puffgm-ledger-1"


@dataclass(frozen=True)
class LedgerEntry:
    """One charged or released release.

    Attributes
    ----------
    composition : Composition
        How the release composes (:mod:`puffgm.core.composition`): its epsilon, its units and
        every fact its composition theorem reads.
    label, mechanism, secure
        As given by the release.
    status : str
        ``"charged"`` (the budget is spent, the value not yet drawn or lost) or ``"released"``.
    time : str
        When the release was charged (ISO 8601, UTC).
    theorem : str
        The guarantee the release relies on alone.
    digest : str
        :meth:`~puffgm.core.composition.Composition.digest` of the composition: a release is
        recorded against a charge only if its digest is the charge's.
    """

    composition: Composition
    label: str | None
    mechanism: str
    secure: bool
    status: str = "charged"
    time: str = ""
    theorem: str = ""
    digest: str = ""

    @property
    def epsilon(self) -> float:
        """The release's own privacy parameter."""
        return float(self.composition.epsilon)

    @property
    def key(self) -> str:
        """What must agree for releases to compose (quilt-set key, curve key, policy key...)."""
        return self.composition.key

    @property
    def kind(self) -> str:
        """The name of the composition class."""
        return type(self.composition).__name__

    @property
    def units(self) -> frozenset | None:
        """The unit ids the release reads (None: the whole data set)."""
        return self.composition.units

    def to_json(self) -> str:
        """The entry as JSON text: the composition (class path and fields), then the rest, with ``kind``,
        ``epsilon``, ``key`` and ``units`` spelled out for readers."""
        d = {"composition": self.composition.canonical(), "label": self.label, "mechanism": self.mechanism,
             "secure": self.secure, "status": self.status, "time": self.time, "theorem": self.theorem,
             "digest": self.digest, "kind": self.kind, "epsilon": self.epsilon, "key": self.key,
             "units": None if self.units is None else sorted(self.units, key=str)}
        return json.dumps(d, sort_keys=True, default=str)

    @classmethod
    def from_json(cls, text: str) -> LedgerEntry:
        """The entry :meth:`to_json` wrote (or an entry of the first format, read compatibly)."""
        d = json.loads(text)
        comp = _composition_from(d["composition"]) if "composition" in d else _legacy_composition(d)
        return cls(comp, d.get("label"), str(d.get("mechanism", "")), bool(d.get("secure")),
                   status=str(d.get("status", "charged")), time=str(d.get("time", "")),
                   theorem=str(d.get("theorem", "")), digest=str(d.get("digest") or comp.digest()))


def _composition_class(path: str) -> type[Composition]:
    """The Composition subclass at ``"module:qualname"``, imported on demand (puffgm's own modules only)."""
    module, _, name = path.partition(":")
    if not (module == "puffgm" or module.startswith("puffgm.")):
        raise ParameterError(f"A ledger entry names the composition class {path!r}, which is not puffgm's.")
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part, None)
    if not (isinstance(obj, type) and issubclass(obj, Composition)):
        raise ParameterError(f"A ledger entry names the composition class {path!r}, which puffgm does not have.")
    return obj


def _composition_from(d: dict) -> Composition:
    cls = _composition_class(str(d["class"]))
    try:
        return cls.from_fields(dict(d["fields"]))
    except (TypeError, ValueError, KeyError) as exc:
        raise ParameterError(f"A ledger entry's composition ({cls.__name__}) cannot be read ({exc}).") from None


#: Entries of the first ledger format named their rule by a kind; each maps to its composition class.
_LEGACY_CLASS = {"mqm": "puffgm.mechanisms.laplace:MarkovQuiltComposition",
                 "dp": "puffgm.mechanisms.pufferfish:CurveComposition",
                 "blowfish": "puffgm.blowfish.mechanisms:BlowfishComposition",
                 "single": "puffgm.core.composition:HeldAlone"}


def _legacy_composition(d: dict) -> Composition:
    """The composition of an entry written before compositions were objects (``kind``, ``key``, flat fields)."""
    kind = d.get("kind")
    if kind not in _LEGACY_CLASS:
        raise ParameterError(f"A ledger entry has the unknown kind {kind!r}.")
    cls = _composition_class(_LEGACY_CLASS[kind])
    eps, key = float(d["epsilon"]), str(d.get("key"))
    fields: dict[str, dict[str, Any]] = {"mqm": {"quilt_key": key}, "single": {"mechanism": str(d.get("mechanism"))},
                                         "dp": {"curve_key": key, "a": d.get("a"), "b": d.get("b"),
                                                "epsilon_dp": d.get("epsilon_dp")},
                                         "blowfish": {"policy_key": key, "policy": d.get("policy"),
                                                      "units": d.get("subset")}}
    return cls(eps, **fields[kind])


def now() -> str:
    """The current time, ISO 8601 in UTC, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class MemoryLedger:
    """The entries of one accountant in this process, safe under threads.

    Every operation holds one lock (:class:`threading.RLock`), so a charge (read the entries,
    check, append) is one atomic step, as in the SQLite ledger under its write lock.

    Parameters
    ----------
    budget : float or None
    """

    def __init__(self, *, budget: float | None):
        self.budget = budget
        self._entries: list[LedgerEntry] = []
        self._lock = threading.RLock()

    @contextlib.contextmanager
    def transaction(self):
        """Yield ``(entries, append)`` under the lock: the current entries and a function that appends one."""
        with self._lock:
            yield tuple(self._entries), self._entries.append

    def entries(self) -> tuple:
        """Every entry, in order."""
        with self._lock:
            return tuple(self._entries)

    def mark_released(self, position: int, digest: str) -> bool:
        """Mark the entry at ``position`` (0-based) released if it is an open charge with ``digest``; say if it was."""
        with self._lock:
            if not 0 <= position < len(self._entries):
                return False
            e = self._entries[position]
            if e.status != "charged" or e.digest != digest:
                return False
            self._entries[position] = dataclasses.replace(e, status="released")
            return True


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

    def mark_released(self, position: int, digest: str) -> bool:
        """Mark the entry at ``position`` (0-based, in order) released if it is an open charge with ``digest``;
        say if it was (one step under the write lock)."""
        with self._write() as con:
            rows = con.execute("SELECT position, status, entry FROM entries ORDER BY position").fetchall()
            if not 0 <= position < len(rows):
                return False
            row, status, text = rows[position]
            if status != "charged" or LedgerEntry.from_json(text).digest != digest:
                return False
            con.execute("UPDATE entries SET status = 'released' WHERE position = ?", (row,))
            return True
