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
import math
import os
import sqlite3
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any

from puffgm.core.composition import Composition
from puffgm.core.validation import check_positive_finite
from puffgm.exceptions import ParameterError

__all__ = ["LedgerEntry", "MemoryLedger", "SQLiteLedger", "LEDGER_FORMAT", "LOCK_TIMEOUT", "open_ledger",
           "check_budget"]

#: The format tag a ledger file carries in its ``meta`` table.
LEDGER_FORMAT = "puffgm-ledger-1"


@dataclass(frozen=True)
class LedgerEntry:
    r"""One charged or released release.

    Attributes
    ----------
    composition : Composition
        How the release composes (:mod:`puffgm.core.composition`): its :math:`\epsilon`, its units and
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
        The file.  It is created only with a budget; an existing file must be a puffgm
        ledger (its ``meta`` and ``entries`` tables and format tag), and any other file,
        SQLite or not, is refused without being changed.
    budget : float or None
        The total budget.  When the file is created it is stored there (``math.inf``: an
        unlimited ledger, by explicit choice); afterwards it must agree with the stored one
        (None: take the stored one).  Creating a ledger with None is refused.
    read_only : bool
        Open the file read-only (SQLite's ``mode=ro``, or ``immutable=1`` where the file or
        its directory cannot be written): nothing is created or changed, and charges are
        refused.  ``puffgm ledger show`` opens ledgers so.
    timeout : float, optional
        Seconds to wait for another process's write lock (default :data:`LOCK_TIMEOUT`).

    Attributes
    ----------
    budget : float or None
        The stored budget; None for an unlimited ledger.

    Raises
    ------
    ParameterError
        One sentence: the file is not a puffgm ledger, its budget differs from ``budget``, a
        new ledger has no budget, or SQLite fails (a file that cannot be written, a directory,
        a lock held past ``timeout``, a corrupt file).
    """

    def __init__(self, path, *, budget: float | None, read_only: bool = False, timeout: float | None = None):
        self.path = os.fspath(path)
        self.read_only = bool(read_only)
        self.timeout = LOCK_TIMEOUT if timeout is None else float(timeout)
        if os.path.isdir(self.path):
            raise ParameterError(f"The ledger path {self.path!r} is a directory; give a file name (FILE.db).")
        if self.read_only:
            if not os.path.isfile(self.path):
                raise ParameterError(f"There is no ledger file {self.path!r}.")
            with self._read() as con:
                self.budget = _stored_budget(self.path, _meta(self.path, con))
            return
        if budget is None and not _holds_data(self.path):
            raise ParameterError(_NEEDS_BUDGET.format(path=self.path))
        with self._write() as con:
            self.budget = self._settle_budget(con, budget)

    # ------------------------------------------------------------ connections
    @contextlib.contextmanager
    def _read(self):
        """A read-only connection (``mode=ro``; ``immutable=1`` when SQLite cannot open it so), closed after."""
        with _sqlite_errors(self.path, self.timeout):
            con = _connect_read_only(self.path, self.timeout)
            try:
                con.execute("BEGIN")  # one snapshot for every read
                yield con
            finally:
                con.close()

    @contextlib.contextmanager
    def _write(self):
        """A connection inside ``BEGIN IMMEDIATE`` (SQLite's write lock), committed on success.

        A file with content is first checked read-only, so a file that is not a puffgm ledger
        is refused before any write connection touches it.
        """
        if self.read_only:
            raise ParameterError(f"The ledger {self.path!r} is open read-only; open it with an accountant "
                                 "(PrivacyAccountant(ledger=...)) to charge releases.")
        if _holds_data(self.path):
            with self._read() as con:
                _meta(self.path, con)
        with _sqlite_errors(self.path, self.timeout):
            con = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            try:
                con.execute("BEGIN IMMEDIATE")
                try:
                    yield con
                    con.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        con.execute("ROLLBACK")
                    raise
            finally:
                con.close()

    def _settle_budget(self, con, budget: float | None) -> float | None:
        """The ledger's budget: stored now if the file is new (refused without one), else checked."""
        tables = _tables(con)
        if not tables:
            if budget is None:
                raise ParameterError(_NEEDS_BUDGET.format(path=self.path))
            con.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            con.execute("CREATE TABLE entries (position INTEGER PRIMARY KEY, status TEXT NOT NULL, "
                        "time TEXT NOT NULL, entry TEXT NOT NULL)")
            stored = None if math.isinf(budget) else budget
            con.executemany("INSERT INTO meta VALUES (?, ?)",
                            [("format", LEDGER_FORMAT), ("budget", json.dumps(stored)), ("created", now())])
            return stored
        stored = _stored_budget(self.path, _meta(self.path, con, tables))
        if budget is not None and stored != (None if math.isinf(budget) else budget):
            held = "is unlimited" if stored is None else f"holds a budget of {stored!r}"
            given = "unlimited" if math.isinf(budget) else repr(budget)
            raise ParameterError(f"The ledger {self.path!r} {held}, set when it was created; "
                                 f"the budget given ({given}) must agree with it.")
        return stored

    def _entries_of(self, con) -> tuple:
        rows = con.execute("SELECT position, status, entry FROM entries ORDER BY position").fetchall()
        out = []
        for position, status, text in rows:
            try:
                out.append(dataclasses.replace(LedgerEntry.from_json(text), status=status))
            except (ValueError, TypeError, KeyError, AttributeError):
                raise ParameterError(f"The ledger {self.path!r} holds an entry (row {position}) that is not a "
                                     "puffgm ledger entry; the file is damaged.") from None
        return tuple(out)

    @contextlib.contextmanager
    def transaction(self):
        """Yield ``(entries, append)`` under the file's write lock; the appended entries are committed together."""
        with self._write() as con:
            def append(entry: LedgerEntry) -> None:
                con.execute("INSERT INTO entries (status, time, entry) VALUES (?, ?, ?)",
                            (entry.status, entry.time, entry.to_json()))

            yield self._entries_of(con), append

    def entries(self) -> tuple:
        """Every entry, in order (read without the write lock: SQLite gives one consistent snapshot)."""
        with self._read() as con:
            return self._entries_of(con)

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


#: Seconds a ledger waits for another process's write lock before it refuses (``SQLiteLedger(timeout=)``).
LOCK_TIMEOUT = 120.0

_NEEDS_BUDGET = ("Creating the ledger {path!r} needs a budget: give budget=B (on the command line --budget B), or "
                 "budget=math.inf (--budget unlimited) for a ledger without a limit, by explicit choice.")

_LEDGER_TABLES = {"meta": {"name", "value"}, "entries": {"position", "status", "time", "entry"}}


def check_budget(*, budget, where: str) -> float | None:
    """``budget`` checked: None (none given), ``math.inf`` (unlimited, by explicit choice) or a finite number > 0."""
    if budget is None or (isinstance(budget, (int, float)) and not isinstance(budget, bool) and budget == math.inf):
        return budget
    return check_positive_finite(budget, "budget", where)


def open_ledger(ledger, *, budget: float | None):
    """The store of an accountant: a MemoryLedger for None, the ledger itself for a ledger object, else a file.

    Parameters
    ----------
    ledger : None, MemoryLedger, SQLiteLedger, str or os.PathLike
    budget : float or None
        As :class:`SQLiteLedger` takes it (``math.inf``: unlimited); for an in-memory ledger
        ``math.inf`` is None (no budget).  With a ledger object it must be None or agree.
    """
    if ledger is None:
        return MemoryLedger(budget=None if budget is None or math.isinf(budget) else budget)
    if isinstance(ledger, (MemoryLedger, SQLiteLedger)):
        if budget is not None and (None if math.isinf(budget) else budget) != ledger.budget:
            raise ParameterError(f"The ledger given holds the budget {ledger.budget!r}; the budget given "
                                 f"({budget!r}) must agree with it.")
        return ledger
    return SQLiteLedger(ledger, budget=budget)


def _connect_read_only(path: str, timeout: float):
    """A connection that cannot write: SQLite's ``mode=ro``, or ``immutable=1`` (no locks, no journal) when the
    file or its directory is on a medium SQLite cannot open so."""
    uri = "file:" + urllib.parse.quote(os.path.abspath(path))
    con = sqlite3.connect(uri + "?mode=ro", uri=True, timeout=timeout, isolation_level=None)
    try:
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return con
    except sqlite3.OperationalError as exc:
        con.close()
        if _is_locked(exc) or "readonly" not in str(exc).lower() and "unable to open" not in str(exc).lower():
            raise
    except BaseException:
        con.close()
        raise
    return sqlite3.connect(uri + "?immutable=1", uri=True, isolation_level=None)


def _holds_data(path: str) -> bool:
    """True when ``path`` is a file with content (a new or empty file takes a ledger only with a budget)."""
    try:
        return os.path.getsize(path) > 0
    except OSError:
        return False


def _tables(con) -> dict:
    """table name -> set of column names, of every table in the database."""
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()]
    return {n: {r[1] for r in con.execute(f"PRAGMA table_info({_quoted(n)})").fetchall()} for n in names}


def _quoted(name: str) -> str:
    """An SQL identifier in double quotes (inner quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def _meta(path: str, con, tables: dict | None = None) -> dict:
    """The ``meta`` table of a puffgm ledger as a dict; refuses any other database."""
    tables = _tables(con) if tables is None else tables
    missing = [t for t, cols in _LEDGER_TABLES.items() if not cols <= tables.get(t, set())]
    if missing:
        held = ", ".join(sorted(tables)) or "no tables"
        raise ParameterError(f"The file {path!r} is not a puffgm ledger: it has no {' or '.join(missing)} table "
                             f"of a ledger (it holds {held}); it was left unchanged.")
    meta = dict(con.execute("SELECT name, value FROM meta").fetchall())
    if meta.get("format") != LEDGER_FORMAT or "budget" not in meta:
        raise ParameterError(f"The file {path!r} is not a puffgm ledger (format {meta.get('format')!r}, expected "
                             f"{LEDGER_FORMAT!r}); it was left unchanged.")
    return meta


def _stored_budget(path: str, meta: dict) -> float | None:
    """The budget a ledger's meta row holds (None: unlimited)."""
    try:
        stored = json.loads(meta["budget"])
    except ValueError:
        stored = "?"
    if stored is not None and (isinstance(stored, bool) or not isinstance(stored, (int, float))
                               or not math.isfinite(stored) or stored <= 0):
        raise ParameterError(f"The ledger {path!r} holds the budget {meta['budget']!r}, which is not a finite "
                             "number > 0; the file is damaged.")
    return None if stored is None else float(stored)


def _is_locked(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


@contextlib.contextmanager
def _sqlite_errors(path: str, timeout: float):
    """Turn every ``sqlite3.Error`` into one ParameterError sentence naming the file and the cause."""
    try:
        yield
    except sqlite3.Error as exc:
        raise ParameterError(_sqlite_message(path, timeout, exc)) from None


def _sqlite_message(path: str, timeout: float, exc: sqlite3.Error) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    low = text.lower()
    if _is_locked(exc):
        return (f"The ledger {path!r} is locked by another process: waited {timeout:g} s for the lock "
                f"({text}); try again when that process has finished.")
    if "readonly" in low or "read-only" in low or "unable to open" in low or "disk i/o" in low:
        return (f"The ledger {path!r} cannot be written or opened ({text}): check that the file and its "
                "directory exist and are writable.")
    if isinstance(exc, sqlite3.DatabaseError) and ("not a database" in low or "malformed" in low
                                                   or "corrupt" in low):
        return f"The file {path!r} is not a puffgm ledger: it is not a SQLite database or is corrupt ({text})."
    return f"The ledger {path!r} cannot be used: SQLite reports {text}."
