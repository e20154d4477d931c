"""Network files: recognise the format of a file and read its tables.

puffgm reads the discrete Bayesian-network formats pgmpy reads:

==============  ============================  ==========================================
format          extensions                    reader
==============  ============================  ==========================================
BIF             ``.bif``                      puffgm's fast BIF reader, else pgmpy's ``BIFReader``
XMLBIF          ``.xml``, ``.xmlbif``,        pgmpy's ``XMLBIFReader``
                ``.bifxml``
Hugin NET       ``.net``                      pgmpy's ``NETReader`` (``%`` comments removed first)
GeNIe XDSL      ``.xdsl``                     pgmpy's ``XDSLReader`` (deterministic nodes made CPTs first)
UAI             ``.uai``                      puffgm's UAI reader
XBN             ``.xbn``                      pgmpy's ``XBNReader`` (state names restored)
==============  ============================  ==========================================

Each may also be gzipped (recognised by its magic bytes, with or without
``.gz``).  The format is recognised by content -- the first keyword of a text
format, the root element of an XML one -- so a file with no extension or a
misleading one is still read (a note records a misleading extension); a file
that is none of these fails with one sentence that names the formats read.

Three readers are puffgm's own, for reasons of correctness:

* BIF: the plain BIF of the bnlearn repository is parsed without pgmpy (a
  regular-expression reader, 30 times faster than pgmpy's); anything else goes
  to pgmpy's ``BIFReader``.
* UAI: pgmpy's ``UAIReader`` takes a node's parent order from a set, so a node
  with two parents may be read with its parents swapped depending on the
  interpreter's hash seed, and it lays out tables with the child varying
  slowest, where the UAI format has the last variable of the scope (the
  child) vary fastest.  puffgm reads the UAI layout; a file whose tables are
  not distributions in that layout, but closer to distributions in the layout
  of pgmpy's ``UAIWriter``, is read in pgmpy's layout with a note.  UAI files
  carry no names: nodes are ``var_0, var_1, ...`` in file order and states
  ``0, 1, ...`` (pgmpy's names).
* GeNIe deterministic nodes (``<deterministic>`` with ``<resultingstates>``,
  used by GeNIe's own Asia example) are rewritten as 0/1 CPTs before
  pgmpy's ``XDSLReader``, which reads only ``<cpt>`` nodes; other node types
  (noisy-MAX, equations, decisions, utilities) are refused.

Readers return :class:`NetworkTables`; :mod:`puffgm.networks.priors` validates
them (CPD columns within :data:`CPD_TOLERANCE` of 1, no negative entries, a
DAG) exactly as for every other source.  pgmpy is imported only inside the
readers that use it.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from dataclasses import dataclass

import numpy as np

from puffgm.exceptions import PriorError, first_line

__all__ = [
    "CPD_TOLERANCE",
    "FileFormat",
    "FORMATS",
    "SUPPORTED_FORMATS",
    "NetworkTables",
    "detect_format",
    "format_of_extension",
    "read_network_file",
    "read_bif_text",
    "pgmpy_tables",
]

#: Largest deviation of a CPD column sum from 1 that is renormalised instead of rejected.
CPD_TOLERANCE = 1e-6


@dataclass(frozen=True)
class FileFormat:
    """A network file format puffgm reads.

    Attributes
    ----------
    key : str
        Short identifier (``"bif"``, ``"xmlbif"``, ``"net"``, ``"xdsl"``, ``"uai"``, ``"xbn"``).
    name : str
        The name used in messages (``"Hugin NET"``).
    extensions : tuple of str
        Lower-case extensions that name the format (each also with ``.gz``).
    reader : str
        The reader named when reading fails (``"pgmpy's NETReader"``).
    """

    key: str
    name: str
    extensions: tuple
    reader: str


#: Every format read, in the order of messages and docs.
FORMATS = (
    FileFormat("bif", "BIF", (".bif",), "pgmpy's BIFReader"),
    FileFormat("xmlbif", "XMLBIF", (".xml", ".xmlbif", ".bifxml"), "pgmpy's XMLBIFReader"),
    FileFormat("net", "Hugin NET", (".net",), "pgmpy's NETReader"),
    FileFormat("xdsl", "GeNIe XDSL", (".xdsl",), "pgmpy's XDSLReader"),
    FileFormat("uai", "UAI", (".uai",), "puffgm's UAI reader"),
    FileFormat("xbn", "XBN", (".xbn",), "pgmpy's XBNReader"),
)
_BY_KEY = {f.key: f for f in FORMATS}

#: The formats as messages list them.
SUPPORTED_FORMATS = ", ".join(f.name for f in FORMATS) + "; each also gzipped"


@dataclass(frozen=True)
class NetworkTables:
    """A network as read from a file, before validation.

    Attributes
    ----------
    nodes : tuple of str
        Node names in file order.
    states : dict
        ``states[X]``: the state names of X, in the order of the CPD axes.
    parents : dict
        ``parents[X]``: the parents of X, in the order of the axes 1, 2, ... of its CPD.
    cpds : dict
        ``cpds[X]``: array of shape ``(card(X), card(parent_1), ...)``, column
        ``[:, j1, ...]`` is P(X | parents = (j1, ...)).
    notes : tuple of str
        What the reader did that the user should know (a layout chosen, an
        extension that did not match the content).
    """

    nodes: tuple
    states: dict
    parents: dict
    cpds: dict
    notes: tuple = ()


# ------------------------------------------------------------- recognising
_XML_PROLOG = re.compile(r"\s*(?:<\?.*?\?>|<!--.*?-->|<!DOCTYPE(?:[^\[>]|\[.*?\])*>)", re.S)
_XML_ROOT = re.compile(r"\s*<([A-Za-z_][\w.:-]*)")
_LEADING_COMMENT = re.compile(r"\s*(?://[^\n]*|/\*.*?\*/|%[^\n]*|#[^\n]*)", re.S)
_FIRST_WORD = re.compile(r"\s*([A-Za-z_][\w-]*)\s*(\S?)")
_XML_ROOTS = {"bif": "xmlbif", "smile": "xdsl", "analysisnotebook": "xbn"}
_BIF_WORDS = {"network", "variable", "probability"}
_NET_WORDS = {"class", "node", "potential", "discrete", "continuous", "decision", "utility"}


def _head(data: bytes) -> str:
    """The first 64 KiB as text, for recognising the format only."""
    head = data[:1 << 16]
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    return head.decode("latin-1")


def _xml_root(text: str) -> str | None:
    pos = 0
    while (m := _XML_PROLOG.match(text, pos)) is not None and m.end() > pos:
        pos = m.end()
    m = _XML_ROOT.match(text, pos)
    return m.group(1).split(":")[-1] if m else None


def _first_word(text: str):
    """(first keyword, the character after it) after leading comments of every syntax, or (None, '')."""
    pos = 0
    while (m := _LEADING_COMMENT.match(text, pos)) is not None and m.end() > pos:
        pos = m.end()
    m = _FIRST_WORD.match(text, pos)
    return (m.group(1), m.group(2)) if m else (None, text[pos:].lstrip()[:1])


def detect_format(data: bytes) -> FileFormat | None:
    """The format of a network file's content (already gunzipped), or None.

    Parameters
    ----------
    data : bytes
        The file's content.

    Returns
    -------
    FileFormat or None
        XML files by their root element (``<BIF>`` XMLBIF, ``<smile>`` GeNIe
        XDSL, ``<ANALYSISNOTEBOOK>`` XBN); text files by their first keyword
        after comments (``network`` BIF; ``net {``, ``node``, ``potential``,
        ``class`` Hugin NET; ``BAYES`` or ``MARKOV`` UAI).

    Examples
    --------
    >>> detect_format(b"network asia { }").name
    'BIF'
    >>> detect_format(b"<?xml version='1.0'?><smile id='x'/>").name
    'GeNIe XDSL'
    >>> detect_format(b"just some notes") is None
    True
    """
    text = _head(data)
    if text.lstrip().startswith("<"):
        root = _xml_root(text)
        key = _XML_ROOTS.get(root.lower()) if root else None
        return _BY_KEY[key] if key else None
    word, after = _first_word(text)
    if word is None:
        return None
    if word in _BIF_WORDS:
        return _BY_KEY["bif"]
    if word.upper() in ("BAYES", "MARKOV"):
        return _BY_KEY["uai"]
    if (word == "net" and after == "{") or word in _NET_WORDS:
        return _BY_KEY["net"]
    return None


def format_of_extension(path) -> FileFormat | None:
    """The format a file name's extension names (``.gz`` ignored), or None."""
    name = os.path.basename(os.fspath(path)).lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for fmt in FORMATS:
        if name.endswith(fmt.extensions):
            return fmt
    return None


def _unknown_hint(data: bytes) -> str:
    """Why a file is not recognised, when something can be said."""
    if not data.strip():
        return "the file is empty"
    text = _head(data)
    if text.lstrip().startswith("<"):
        root = _xml_root(text)
        return f"its XML root element is <{root}>" if root else "it is not well-formed XML"
    word, after = _first_word(text)
    if word == "bnet":
        return "it looks like a Netica .dne file (GeNIe opens these and saves .xdsl)"
    if word == "net":
        return "it looks like a GeNIe .dsl file (GeNIe saves it as .xdsl)"
    if word is None and after in ("{", "["):
        return "it looks like JSON (chain and linear-Gaussian priors are read from files ending in .json)"
    return ""


# ---------------------------------------------------------------- reading
def _first_line(exc: BaseException) -> str:
    line = first_line(exc) or type(exc).__name__
    if isinstance(exc, KeyError):
        line = f"unknown or missing name {line}"
    elif isinstance(exc, AttributeError) and "NoneType" in line:
        line = f"an element or value it needs is missing ({line})"
    return line.rstrip(".")[:300]


def _failed(label: str, reader: str, cause) -> PriorError:
    cause = _first_line(cause) if isinstance(cause, BaseException) else str(cause).rstrip(".")
    return PriorError(f"Reading {label!r} with {reader} failed: {cause}.")


def _read_bytes(path: str, label: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise PriorError(f"Cannot read network file {label!r}: {exc.strerror or type(exc).__name__}.") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise PriorError(f"Cannot read network file {label!r}: its gzip data is corrupt "
                             f"({_first_line(exc)}).") from None
    return data


def _decode(data: bytes) -> str:
    """Text of a text format: UTF-8 (with or without BOM), else Latin-1 (older Hugin and BIF files)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def read_network_file(path) -> NetworkTables:
    """Read a network file of any format in :data:`FORMATS`, gzipped or not.

    Parameters
    ----------
    path : str or os.PathLike
        The file.  Its content decides the format (:func:`detect_format`); the
        extension only adds a note when it names another format.

    Returns
    -------
    NetworkTables
        Not yet validated: :class:`puffgm.networks.priors.NetworkPrior` checks them.

    Raises
    ------
    PriorError
        One sentence: the file cannot be read, is not a network in a format
        puffgm reads (naming the formats), or its reader failed (naming the
        reader and the cause).
    """
    path = os.fspath(path)
    label = os.path.basename(path)
    data = _read_bytes(path, label)
    by_ext = format_of_extension(path)
    fmt = detect_format(data)
    if fmt is None:
        hints = [h for h in (_unknown_hint(data),) if h]
        if by_ext is not None and data.strip():
            hints.append(f"its content does not look like {by_ext.name}, which its extension names")
        raise PriorError(f"{label!r} is not a Bayesian network in a format puffgm reads ({SUPPORTED_FORMATS})"
                         + (": " + "; ".join(hints) if hints else "") + ".")
    tables = _READERS[fmt.key](data, label)
    if by_ext is not None and by_ext is not fmt:
        note = f"read as {fmt.name} by its content (its extension names {by_ext.name})"
        tables = NetworkTables(tables.nodes, tables.states, tables.parents, tables.cpds, tables.notes + (note,))
    return tables


def _pgmpy_model(reader_name: str, label: str, **kwargs):
    """(reader, model) from one of pgmpy's readers; any failure is one PriorError naming the reader.

    pgmpy's warnings and log messages are silenced while it reads: what matters
    reaches the user as puffgm's own validation errors and notes.
    """
    import logging
    import warnings

    import pgmpy.readwrite as readwrite

    log = logging.getLogger("pgmpy")
    level = log.level
    try:
        log.setLevel(logging.ERROR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reader = getattr(readwrite, reader_name)(**kwargs)
            model = reader.get_model()
    except Exception as exc:  # pgmpy raises many kinds on malformed files
        raise _failed(label, f"pgmpy's {reader_name}", exc) from None
    finally:
        log.setLevel(level)
    return reader, model


def pgmpy_tables(model, label: str) -> NetworkTables:
    """The tables of a pgmpy ``DiscreteBayesianNetwork`` (state names as strings).

    Raises
    ------
    PriorError
        If a node has no CPD, a CPD conditions on other nodes than the graph's
        parents, or a CPD names a parent's states otherwise than the parent does.
    """
    nodes = tuple(str(n) for n in model.nodes())
    cpds, states, parents, seen = {}, {}, {}, {}
    for n in nodes:
        cpd = model.get_cpds(n)
        if cpd is None:
            raise PriorError(f"Node {n!r} of network {label!r} has no CPD.")
        variables = [str(v) for v in cpd.variables]
        graph_parents = sorted(str(p) for p in model.get_parents(n))
        if sorted(variables[1:]) != graph_parents:
            raise PriorError(
                f"The CPD of node {n!r} in network {label!r} conditions on {variables[1:]}, "
                f"but its parents in the graph are {graph_parents}."
            )
        names = {str(k): tuple(str(s) for s in v) for k, v in cpd.state_names.items()}
        parents[n] = tuple(variables[1:])
        states[n] = names[str(cpd.variable)]
        seen[n] = names
        cpds[n] = np.asarray(cpd.values, dtype=float)
    for n in nodes:  # the parents' states as the child CPD sees them must match
        for p in parents[n]:
            if seen[n][p] != states[p]:
                raise PriorError(
                    f"The CPD of node {n!r} in network {label!r} names the states of parent {p!r} "
                    f"as {list(seen[n][p])}, but {p!r} has states {list(states[p])}."
                )
    return NetworkTables(nodes, states, parents, cpds)


# --------------------------------------------------------------------- BIF
_BIF_VAR = re.compile(
    r"variable\s+([^\s{]+)\s*\{\s*type\s+discrete\s*\[\s*(\d+)\s*\]\s*\{([^}]*)\}\s*;\s*\}", re.S
)
_BIF_PROB = re.compile(r"probability\s*\(\s*([^)|]+?)\s*(?:\|\s*([^)]*?))?\s*\)\s*\{([^}]*)\}", re.S)
_BIF_ROW = re.compile(r"\(([^)]*)\)\s*([^;]*);")
_BIF_TABLE = re.compile(r"^\s*table\s+([^;]*);\s*$", re.S)


def _fast_bif_cpd(body: str, child: str, pa: tuple, states: dict):
    """The CPD of one ``probability`` block, or None if it is not plain rows or a root table."""
    shape = (len(states[child]),) + tuple(len(states[p]) for p in pa)
    if not pa:
        t = _BIF_TABLE.match(body)
        if t is None:
            return None
        arr = np.array([float(v) for v in t.group(1).replace(",", " ").split()])
        return arr.reshape(shape) if arr.size == shape[0] else None
    arr = np.full(shape, np.nan)
    rows = _BIF_ROW.findall(body)
    if len(rows) != int(np.prod(shape[1:])) or _BIF_ROW.sub("", body).strip():
        return None
    for cfg, vals in rows:
        cfg = [c.strip() for c in cfg.split(",")]
        try:
            idx = tuple(states[p].index(c) for p, c in zip(pa, cfg, strict=False))  # length checked below
        except ValueError:
            return None
        v = [float(x) for x in vals.replace(",", " ").split()]
        if len(v) != shape[0] or len(cfg) != len(pa):
            return None
        arr[(slice(None),) + idx] = v
    return None if np.isnan(arr).any() else arr


def _fast_bif(text: str, label: str):
    """Parse the plain BIF subset used by the bnlearn files into (nodes, states, parents, cpds).

    Returns None if the text uses anything else.

    Rows "(parent values) p1, p2, ...;" and root tables "table p1, p2;" only;
    anything unusual falls back to pgmpy's full BIF reader.  Tests check that
    both readers agree on every network bundled with pgmpy.
    """
    text = re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))
    states, parents, cpds, nodes = {}, {}, {}, []
    for m in _BIF_VAR.finditer(text):
        vals = [v.strip() for v in m.group(3).split(",") if v.strip()]
        if len(vals) != int(m.group(2)):
            return None
        nodes.append(m.group(1))
        states[m.group(1)] = tuple(vals)
    if not nodes or text.count("variable") != len(nodes):
        return None
    probs = list(_BIF_PROB.finditer(text))
    if len(probs) != len(nodes) or text.count("probability") != len(nodes):
        return None
    for m in probs:
        child = m.group(1).strip()
        pa = tuple(v.strip() for v in (m.group(2) or "").split(",") if v.strip())
        if child not in states or any(p not in states for p in pa):
            return None
        cpd = _fast_bif_cpd(m.group(3), child, pa, states)
        if cpd is None:
            return None
        cpds[child] = cpd
        parents[child] = pa
    return nodes, states, parents, cpds


def read_bif_text(text: str, label: str) -> NetworkTables:
    """The tables of a BIF text: puffgm's fast reader for plain BIF, else pgmpy's ``BIFReader``.

    The fast reader never imports pgmpy; it declines (and pgmpy reads the file)
    on anything beyond plain variable blocks, rows and root tables.
    """
    try:
        fast = _fast_bif(text, label)
    except ValueError:  # a number the fast reader cannot parse: let pgmpy judge the file
        fast = None
    if fast is not None:
        nodes, states, parents, cpds = fast
        return NetworkTables(tuple(nodes), states, parents, cpds)
    try:
        return _bif_pgmpy(text, label)
    except PriorError:
        defect = _bif_count_defect(text)  # say what is wrong rather than how pgmpy's arrays failed
        if defect is None:
            raise
        raise _failed(label, "pgmpy's BIFReader", defect) from None


def _bif_count_defect(text: str) -> str | None:
    """The first count that does not match in plain BIF blocks (states, table entries, rows), or None."""
    text = re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))
    states = {}
    for m in _BIF_VAR.finditer(text):
        vals = [v.strip() for v in m.group(3).split(",") if v.strip()]
        if len(vals) != int(m.group(2)):
            return f"variable {m.group(1)!r} declares {int(m.group(2))} states but lists {len(vals)}"
        states[m.group(1)] = vals
    for m in _BIF_PROB.finditer(text):
        child = m.group(1).strip()
        pa = tuple(v.strip() for v in (m.group(2) or "").split(",") if v.strip())
        if child not in states or any(p not in states for p in pa):
            continue
        k = len(states[child])
        if not pa:
            t = _BIF_TABLE.match(m.group(3))
            n = None if t is None else len(t.group(1).replace(",", " ").split())
            if n is not None and n != k:
                return f"the table of {child!r} has {n} entries, expected {k} (one per state)"
            continue
        rows = _BIF_ROW.findall(m.group(3))
        need = int(np.prod([len(states[p]) for p in pa]))
        if len(rows) != need:
            return (f"the CPD of {child!r} has {len(rows)} rows, expected {need} (one per configuration of "
                    f"its parents {', '.join(pa)})")
        for cfg, vals in rows:
            n = len(vals.replace(",", " ").split())
            if n != k:
                return f"the row ({cfg.strip()}) of the CPD of {child!r} has {n} entries, expected {k} (one per state)"
    return None


def _bif_pgmpy(text: str, label: str) -> NetworkTables:
    import inspect

    from pgmpy.readwrite import BIFReader

    extra = {"n_jobs": 1} if "n_jobs" in inspect.signature(BIFReader).parameters else {}
    _, model = _pgmpy_model("BIFReader", label, string=text, **extra)
    return pgmpy_tables(model, label)


def _read_bif(data: bytes, label: str) -> NetworkTables:
    return read_bif_text(_decode(data), label)


# ------------------------------------------------------------ XML formats
def _xml(data: bytes, label: str, fmt: FileFormat, required: str):
    """The parsed root of an XML format, checked for its ``required`` child element."""
    import xml.etree.ElementTree as etree

    try:
        root = etree.fromstring(data)
    except etree.ParseError as exc:
        raise _failed(label, fmt.reader, f"the XML is not well-formed ({exc})") from None
    if root.find(required) is None:
        raise _failed(label, fmt.reader, f"the <{root.tag}> element has no <{required}> element")
    return root


def _xml_text(root) -> str:
    import xml.etree.ElementTree as etree

    return etree.tostring(root, encoding="unicode")


def _read_xmlbif(data: bytes, label: str) -> NetworkTables:
    root = _xml(data, label, _BY_KEY["xmlbif"], "NETWORK")
    _, model = _pgmpy_model("XMLBIFReader", label, string=_xml_text(root))
    return pgmpy_tables(model, label)


def _read_xbn(data: bytes, label: str) -> NetworkTables:
    root = _xml(data, label, _BY_KEY["xbn"], "BNMODEL")
    reader, model = _pgmpy_model("XBNReader", label, string=_xml_text(root))
    t = pgmpy_tables(model, label)
    # pgmpy's XBNReader numbers the states; the file names them in <STATENAME>
    states = {}
    for n in t.nodes:
        names = [(s or "").strip() for s in reader.variables.get(n, {}).get("STATES", [])]
        states[n] = tuple(names) if len(names) == len(t.states[n]) and all(names) else t.states[n]
    return NetworkTables(t.nodes, states, t.parents, t.cpds, t.notes)


#: GeNIe node elements that are not chance nodes with a table, and what they are.
_GENIE_OTHER = {
    "noisymax": "a noisy-MAX node", "noisyadder": "a noisy-adder node", "equation": "an equation node",
    "decision": "a decision node", "utility": "a utility node", "mau": "a multi-attribute utility node",
    "tdd": "a temporal node",
}


def _genie_deterministic(el, label: str) -> None:
    """Rewrite a GeNIe ``<deterministic>`` node in place as the equivalent 0/1 ``<cpt>``."""
    import xml.etree.ElementTree as etree

    node = el.get("id")
    ids = [s.get("id") for s in el.findall("state")]
    res = el.find("resultingstates")
    if res is None or not (res.text or "").split():
        raise _failed(label, "puffgm's GeNIe reader", f"deterministic node {node!r} has no <resultingstates>")
    rows = []
    for value in res.text.split():
        if value not in ids:
            raise _failed(label, "puffgm's GeNIe reader",
                          f"deterministic node {node!r} results in {value!r}, which is none of its states {ids}")
        rows.append(" ".join("1" if s == value else "0" for s in ids))
    el.remove(res)
    prob = etree.SubElement(el, "probabilities")
    prob.text = " ".join(rows)
    el.tag = "cpt"


def _genie_cpts(root, label: str) -> None:
    """Prepare a GeNIe model for pgmpy's XDSLReader: deterministic nodes as CPTs, whitespace as single spaces."""
    for el in list(root.find("nodes")):
        node = el.get("id")
        if el.tag == "deterministic":
            _genie_deterministic(el, label)
        elif el.tag != "cpt":
            what = _GENIE_OTHER.get(el.tag, f"a <{el.tag}> element")
            raise PriorError(f"Reading {label!r} as GeNIe XDSL failed: node {node!r} is {what}, and puffgm reads "
                             f"chance nodes with a table (cpt) or a function (deterministic) only.")
        for child in list(el):
            if child.tag in ("parents", "probabilities"):
                words = (child.text or "").split()
                if not words:
                    el.remove(child)  # an empty <parents/>: a root node
                else:
                    child.text = " ".join(words)  # pgmpy splits on single spaces
        if el.find("probabilities") is None:
            raise _failed(label, "pgmpy's XDSLReader", f"node {node!r} has no <probabilities>")


def _read_xdsl(data: bytes, label: str) -> NetworkTables:
    root = _xml(data, label, _BY_KEY["xdsl"], "nodes")
    _genie_cpts(root, label)
    _, model = _pgmpy_model("XDSLReader", label, string=_xml_text(root))
    return pgmpy_tables(model, label)


# --------------------------------------------------------------- Hugin NET
_HUGIN_COMMENT = re.compile(r'("(?:[^"\\\n]|\\.)*")|%[^\n]*')


_HUGIN_STATES = re.compile(r"(\bstates\s*=\s*\()([^)]*)(\))")
_HUGIN_QUOTED = re.compile(r'"([^"]*)"')
_ESCAPED = re.compile(r"~puffgm([0-9a-f]{2})~")


def _escape_state(m) -> str:
    """A quoted Hugin state name with the characters pgmpy's NETReader splits on (space , ( )) escaped."""
    return '"' + re.sub(r"[\s,()~]", lambda c: f"~puffgm{ord(c.group()):02x}~", m.group(1)) + '"'


def _read_net(data: bytes, label: str) -> NetworkTables:
    # Hugin comments run from % to the end of the line (outside strings); pgmpy's NETReader keeps them
    text = _HUGIN_COMMENT.sub(lambda m: m.group(1) or "", _decode(data))
    # pgmpy's NETReader splits state names at spaces ("very low"): escape them, restore them after reading
    text = _HUGIN_STATES.sub(lambda m: m.group(1) + _HUGIN_QUOTED.sub(_escape_state, m.group(2)) + m.group(3), text)
    _, model = _pgmpy_model("NETReader", label, string=text)
    t = pgmpy_tables(model, label)
    states = {n: tuple(_ESCAPED.sub(lambda c: chr(int(c.group(1), 16)), s) for s in t.states[n]) for n in t.nodes}
    return NetworkTables(t.nodes, states, t.parents, t.cpds, t.notes)


# --------------------------------------------------------------------- UAI
class _Tokens:
    """Whitespace-separated tokens of a UAI file, taken in order with messages that say what was expected."""

    def __init__(self, text: str):
        self.items = text.split()
        self.pos = 0

    def word(self, what: str) -> str:
        if self.pos >= len(self.items):
            raise ValueError(f"the file ends before {what}")
        self.pos += 1
        return self.items[self.pos - 1]

    def count(self, what: str, low: int = 1, high: int | None = None) -> int:
        token = self.word(what)
        try:
            value = int(token)
        except ValueError:
            raise ValueError(f"{what} is {token!r}, not a whole number") from None
        if value < low or (high is not None and value > high):
            raise ValueError(f"{what} is {value}, outside {low}..{high if high is not None else 'inf'}")
        return value

    def number(self, what: str) -> float:
        token = self.word(what)
        try:
            return float(token)
        except ValueError:
            raise ValueError(f"{what} is {token!r}, not a number") from None


def _uai_model(text: str, label: str):
    """(cardinalities, scopes, tables) of a UAI Bayesian network, checked for shape only."""
    tok = _Tokens(text)
    kind = tok.word("the network type").upper()
    if kind == "MARKOV":
        raise PriorError(f"{label!r} is a UAI Markov network (type MARKOV), not a Bayesian network; "
                         f"puffgm reads UAI files of type BAYES.")
    if kind != "BAYES":
        raise ValueError(f"the network type is {kind!r}, not BAYES")
    n = tok.count("the number of variables")
    cards = [tok.count(f"the domain size of variable {i}") for i in range(n)]
    m = tok.count("the number of functions")
    scopes = []
    for f in range(m):
        k = tok.count(f"the scope size of function {f}", 1, n)
        scope = tuple(tok.count(f"a variable in the scope of function {f}", 0, n - 1) for _ in range(k))
        if len(set(scope)) != k:
            raise ValueError(f"the scope of function {f} repeats a variable")
        scopes.append(scope)
    children = sorted(s[-1] for s in scopes)
    if children != list(range(n)):
        missing = sorted(set(range(n)) - set(children))
        raise ValueError("every variable must be the last of exactly one scope (its CPT); "
                         + (f"var_{missing[0]} is the last of none" if missing else "one is the last of two"))
    tables = []
    for f, scope in enumerate(scopes):
        size = int(np.prod([cards[v] for v in scope]))
        got = tok.count(f"the table size of function {f}", 0)
        if got != size:
            raise ValueError(f"the table of function {f} has {got} entries, its scope needs {size}")
        tables.append(np.array([tok.number(f"an entry of the table of function {f}") for _ in range(size)]))
    if tok.pos < len(tok.items):
        raise ValueError(f"{len(tok.items) - tok.pos} token(s) follow the last table")
    return cards, scopes, tables


def _uai_layouts(cards, scopes, tables):
    """The CPDs in the UAI layout (child fastest) and in pgmpy's UAIWriter layout (child slowest)."""
    spec, writer = {}, {}
    for scope, values in zip(scopes, tables, strict=True):
        child, pa = scope[-1], scope[:-1]
        arr = np.moveaxis(values.reshape([cards[v] for v in scope]), -1, 0)
        spec[child] = (pa, arr)
        rev = pa[::-1]
        writer[child] = (rev, values.reshape([cards[child]] + [cards[v] for v in rev]))
    return spec, writer


def _worst_column(layout) -> float:
    return max(float(np.max(np.abs(arr.sum(axis=0) - 1.0), initial=0.0)) for _, arr in layout.values())


def _read_uai(data: bytes, label: str) -> NetworkTables:
    text = re.sub(r"#[^\n]*", " ", _decode(data))
    try:
        cards, scopes, tables = _uai_model(text, label)
    except ValueError as exc:
        if isinstance(exc, PriorError):
            raise
        raise _failed(label, "puffgm's UAI reader", exc) from None
    spec, writer = _uai_layouts(cards, scopes, tables)
    layout = spec
    notes: tuple[str, ...] = ()
    worst = _worst_column(spec)
    if worst > CPD_TOLERANCE and _worst_column(writer) < worst:  # validation then judges that layout
        layout = writer
        notes = ("the UAI tables are laid out as pgmpy's UAIWriter writes them (child varying slowest), "
                 "not as the UAI format has them; read in that layout",)
    names = [f"var_{i}" for i in range(len(cards))]
    states = {names[i]: tuple(str(j) for j in range(c)) for i, c in enumerate(cards)}
    parents = {names[v]: tuple(names[p] for p in pa) for v, (pa, _) in layout.items()}
    cpds = {names[v]: arr for v, (_, arr) in layout.items()}
    return NetworkTables(tuple(names), states, parents, cpds, notes)


_READERS = {"bif": _read_bif, "xmlbif": _read_xmlbif, "net": _read_net, "xdsl": _read_xdsl,
            "uai": _read_uai, "xbn": _read_xbn}
