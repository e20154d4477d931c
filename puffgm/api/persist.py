r"""Save a prior class of any kind to one JSON file, and read it back exactly.

A class fitted in Python (:func:`puffgm.fit_network`, :func:`puffgm.fit_chain`) or built by
hand is saved with :func:`save_prior` and read back with :func:`load_prior_class`; the file
is a PRIOR wherever one is taken (:func:`puffgm.as_prior`, every ``puffgm`` subcommand that
calibrates or releases).  Network file formats (BIF, XMLBIF) cannot hold every state name
(an interval such as ``'(17.5, 25.7]'`` breaks BIF and is renamed by XMLBIF), nor bootstrap
members, nor chain classes: this format holds every kind.

The format (``"format": "puffgm-prior"``, ``"version": 1``) is one JSON object::

    {"format": "puffgm-prior", "version": 1, "kind": KIND, "fingerprint": FP, "notes": [...], ...}

with, by ``kind``:

* ``"bayesian-network"``: ``"nodes"`` (a list, in the class's topological order),
  ``"states"`` (node -> list of state names, in order), ``"parents"`` (node -> list, the
  axis order of its CPD), and ``"members"``: one object per member :math:`\theta`, ``{"name",
  "notes", "cpds": {node: nested lists}}``, ``cpds[X][x][j1]...`` = P(X = x | parents =
  (j1, ...)) (pgmpy's layout);
* ``"markov-chain"``: ``"length"`` (T), ``"length_source"``, ``"states"``, and
  ``"members"``: ``{"name", "notes", "initial": "stationary" | "any" | [q_0, ...],
  "transition": [[...], ...]}``;
* ``"chain-box"``: ``"p0"``, ``"p1"`` (ranges), ``"initial"``, ``"length"``,
  ``"states"``, ``"name"`` (:class:`~puffgm.chains.ChainParameterBox`);
* ``"linear-gaussian"``: ``"members"``, each a ``puffgm-linear-gaussian`` object
  (:mod:`puffgm.gaussian.networks`).

Numbers are written as Python writes a float (the shortest text that reads back as the same
double), so every probability round-trips to the last bit; state names are JSON strings
(any characters) and keep their order.  ``"notes"`` keep the provenance: the rows and
columns a network was fitted to, the DAG's source, the estimator, the resampling and its
seed.  On reading, every member is validated as when it was built, probabilities are kept
exactly (a CPD column or transition row off 1 by more than 1e-12 is refused, never
renormalised), and a ``"fingerprint"``, when present, must be the fingerprint of what was
read (an edited file drops it or is refused).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from typing import Any

from puffgm.core.prior import PriorKind
from puffgm.core.validation import is_inline_json, read_json_argument
from puffgm.exceptions import PriorError

__all__ = ["FORMAT", "VERSION", "KINDS", "save_prior", "load_prior_class", "prior_to_dict", "prior_from_dict",
           "is_saved_prior"]

#: The ``"format"`` value of a saved prior.
FORMAT = "puffgm-prior"
#: The version of the format this module writes (and the highest it reads).
VERSION = 1
#: The ``"kind"`` values.
KINDS = ("bayesian-network", "markov-chain", "chain-box", "linear-gaussian")


# ------------------------------------------------------------------ writing
def save_prior(prior_class: Any, path) -> str:
    r"""Write a prior class of any kind to ``path`` as one JSON file (module docstring); returns its fingerprint.

    Parameters
    ----------
    prior_class : PriorClass, NetworkPrior, ChainPriorClass, ChainPrior, ChainParameterBox, GaussianPriorClass,
        LinearGaussianPrior, a PriorKind, or anything :func:`puffgm.as_prior` accepts
        The class :math:`\Theta`, with every member (bootstrap members included).
    path : str or os.PathLike
        The file to write (replaced atomically if it exists).

    Returns
    -------
    str
        The class's fingerprint, which :func:`load_prior_class` checks.

    Examples
    --------
    >>> import os, tempfile, puffgm
    >>> path = os.path.join(tempfile.mkdtemp(), "asia.json")
    >>> fp = puffgm.save_prior(puffgm.load_prior_class("example:asia"), path)
    >>> puffgm.load_prior_class(path).fingerprint == fp
    True
    """
    data = prior_to_dict(prior_class)
    text = json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False)
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise PriorError(f"Cannot write {path!r}: there is no folder {folder!r}.")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".puffgm-prior-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return str(data["fingerprint"])


def prior_to_dict(prior_class: Any) -> dict:
    """The saved form of a prior class (module docstring), as a JSON-ready dict."""
    obj = _as_object(prior_class)
    from puffgm.chains.box import ChainParameterBox
    from puffgm.chains.priors import ChainPriorClass
    from puffgm.gaussian.networks import GaussianPriorClass

    if isinstance(obj, ChainParameterBox):
        body = {"kind": "chain-box", "p0": list(obj.p0), "p1": list(obj.p1), "initial": obj.initial_kind,
                "length": obj.length, "states": list(obj.states), "name": obj.name}
    elif isinstance(obj, ChainPriorClass):
        body = {"kind": "markov-chain", "length": obj.length, "length_source": obj.length_source,
                "states": list(obj.states),
                "members": [{"name": m.name, "notes": list(m.notes),
                             "initial": m.initial if isinstance(m.initial, str) else m.initial.tolist(),
                             "transition": m.transition.tolist()} for m in obj.members]}
    elif isinstance(obj, GaussianPriorClass):
        body = {"kind": "linear-gaussian", "members": [p.to_dict() for p in obj.priors]}
    else:
        body = {"kind": "bayesian-network", "nodes": list(obj.nodes),
                "states": {n: list(obj.states[n]) for n in obj.nodes},
                "parents": {n: list(obj.parents[n]) for n in obj.nodes},
                "members": [{"name": m.name, "notes": list(m.notes),
                             "cpds": {n: m.cpts[n].tolist() for n in obj.nodes}} for m in obj.priors]}
    head = {"format": FORMAT, "version": VERSION, "kind": body.pop("kind"), "fingerprint": obj.fingerprint,
            "notes": list(obj.notes)}
    return head | body


def _as_object(prior: Any):
    """The prior class object of any input: a class as it is, a member as a class of one, a spec loaded."""
    from puffgm.chains.box import ChainParameterBox
    from puffgm.chains.priors import ChainPrior, ChainPriorClass
    from puffgm.gaussian.networks import GaussianPriorClass, LinearGaussianPrior, load_gaussian_class
    from puffgm.networks.priors import NetworkPrior, PriorClass

    if isinstance(prior, (PriorClass, ChainPriorClass, ChainParameterBox, GaussianPriorClass)):
        return prior
    if isinstance(prior, NetworkPrior):
        return PriorClass([prior])
    if isinstance(prior, ChainPrior):
        return ChainPriorClass([prior])
    if isinstance(prior, LinearGaussianPrior):
        return GaussianPriorClass([prior])
    if not isinstance(prior, PriorKind):
        return _load_other(prior)
    inner = prior.prior_class
    if isinstance(inner, (PriorClass, ChainPriorClass, ChainParameterBox, GaussianPriorClass)):
        return inner
    return load_gaussian_class(inner)


def _load_other(prior: Any):
    """A saved prior, a linear-Gaussian or chain spec, or network specs, as the class object."""
    from puffgm.chains.kind import chain_kind, is_chain_prior
    from puffgm.gaussian.networks import is_gaussian_prior, load_gaussian_class

    if is_saved_prior(prior):
        return load_prior_class(prior)
    if is_gaussian_prior(prior):
        return load_gaussian_class(prior)
    items = prior if isinstance(prior, (list, tuple)) else [prior]
    if items and all(is_chain_prior(p) for p in items):
        return chain_kind(prior).prior_class
    return load_prior_class(prior)


# ------------------------------------------------------------------ reading
def is_saved_prior(spec: Any) -> bool:
    """True for a dict, inline JSON text or ``*.json`` file whose ``"format"`` is ``"puffgm-prior"`` (no pgmpy)."""
    if isinstance(spec, Mapping):
        return spec.get("format") == FORMAT
    if is_inline_json(spec):
        text = str(spec)
    elif isinstance(spec, (str, os.PathLike)) and os.fspath(spec).lower().endswith(".json") \
            and os.path.isfile(spec):
        try:
            with open(spec, encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError):
            return False
    else:
        return False
    if FORMAT not in text:
        return False
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("format") == FORMAT


def load_prior_class(specs: Any):
    """A prior class: a saved prior (any kind) read back exactly, or a network class from network specs.

    Parameters
    ----------
    specs : str, os.PathLike, dict, or anything :func:`puffgm.networks.priors.load_prior_class` accepts
        A file written by :func:`save_prior` (or its JSON text, or the dict) gives the class
        it holds: a :class:`~puffgm.networks.priors.PriorClass`, a
        :class:`~puffgm.chains.ChainPriorClass`, a :class:`~puffgm.chains.ChainParameterBox`
        or a :class:`~puffgm.gaussian.networks.GaussianPriorClass`.  Anything else is read as
        Bayesian networks (network files, ``"example:NAME"``, pgmpy models, or a list of them).

    Returns
    -------
    PriorClass, ChainPriorClass, ChainParameterBox or GaussianPriorClass
        The prior class the file (or spec) describes, exactly as it was saved.

    Raises
    ------
    PriorError
        One sentence: the file cannot be read, is not valid JSON, has an unknown version or
        kind, a member fails validation, or its contents do not give its fingerprint.

    Examples
    --------
    >>> import puffgm
    >>> puffgm.load_prior_class("example:asia").nodes[:3]
    ('asia', 'tub', 'smoke')
    """
    if is_saved_prior(specs):
        return prior_from_dict(*_read(specs))
    if isinstance(specs, (list, tuple)) and any(is_saved_prior(s) for s in specs):
        return _pooled([load_prior_class(s) for s in specs])
    from puffgm.networks.priors import load_prior_class as load_networks

    return load_networks(specs)


def _pooled(classes: list):
    """One class from several of one kind (their members, in order); a box stands alone."""
    from puffgm.chains.priors import ChainPriorClass
    from puffgm.gaussian.networks import GaussianPriorClass
    from puffgm.networks.priors import PriorClass

    for kind, members in ((PriorClass, "priors"), (ChainPriorClass, "members"), (GaussianPriorClass, "priors")):
        if all(isinstance(c, kind) for c in classes):
            return kind([m for c in classes for m in getattr(c, members)])
    raise PriorError("The saved priors are not of one kind (Bayesian networks, Markov chains or linear-Gaussian "
                     "networks; a parameter box stands alone): one class holds one kind.")


def _read(source: Any) -> tuple:
    """(dict, label) of a saved prior given as a dict, JSON text or a file."""
    if isinstance(source, Mapping):
        return dict(source), "the saved prior"
    data, label = read_json_argument(source, "saved prior", PriorError)
    return data, label


def prior_from_dict(data, label: str = "the saved prior"):
    """The class a saved-prior dict holds (module docstring), validated and exact; see :func:`load_prior_class`."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise PriorError(f"{label[0].upper()}{label[1:]} is not a saved prior: its 'format' must be {FORMAT!r}.")
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= VERSION:
        raise PriorError(f"{label[0].upper()}{label[1:]} has format version {version!r}; this puffgm reads "
                         f"version 1 to {VERSION}.")
    kind = data.get("kind")
    readers = {"bayesian-network": _networks, "markov-chain": _chains, "chain-box": _box,
               "linear-gaussian": _gaussian}
    if kind not in readers:
        raise PriorError(f"{label[0].upper()}{label[1:]} has the kind {kind!r}; kinds: {', '.join(KINDS)}.")
    try:
        obj = readers[kind](data, label)
    except KeyError as exc:
        raise PriorError(f"{label[0].upper()}{label[1:]} has no {exc.args[0]!r}.") from None
    notes = data.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise PriorError(f"The 'notes' of {label} must be a list of strings.")
    object.__setattr__(obj, "notes", tuple(notes))
    want = data.get("fingerprint")
    if want is not None and want != obj.fingerprint:
        raise PriorError(f"{label[0].upper()}{label[1:]} has the fingerprint {want!r}, but its contents give "
                         f"{obj.fingerprint!r}: the file was changed after it was saved (remove 'fingerprint' "
                         "to accept the change).")
    return obj


def _members(data: dict, label: str) -> list:
    members = data["members"]
    if not isinstance(members, list) or not members or not all(isinstance(m, dict) for m in members):
        raise PriorError(f"The 'members' of {label} must be a non-empty list of objects.")
    return members


def _networks(data: dict, label: str):
    from puffgm.networks.priors import NetworkPrior, PriorClass

    nodes, states, parents = data["nodes"], data["states"], data["parents"]
    if not isinstance(nodes, list) or not isinstance(states, dict) or not isinstance(parents, dict):
        raise PriorError(f"The 'nodes' of {label} must be a list, its 'states' and 'parents' objects.")
    for n in nodes:
        if n not in states or n not in parents:
            raise PriorError(f"Node {n!r} of {label} has no 'states' or no 'parents' entry.")
    members = []
    for j, m in enumerate(_members(data, label), start=1):
        name = str(m.get("name", f"prior {j}"))
        members.append(NetworkPrior.exact(nodes, states, parents, m["cpds"], name=name, notes=m.get("notes", ())))
    return PriorClass(members)


def _chains(data: dict, label: str):
    from puffgm.chains.priors import ChainPrior, ChainPriorClass

    members = [ChainPrior.exact(m["transition"], m.get("initial", "stationary"), data["length"], data["states"],
                                name=str(m.get("name", f"chain {j}")))
               for j, m in enumerate(_members(data, label), start=1)]
    for member, m in zip(members, _members(data, label), strict=True):
        object.__setattr__(member, "notes", tuple(map(str, m.get("notes", ()))))
    out = ChainPriorClass(members)
    source = data.get("length_source", "given")
    if source not in ("given", "longest trace"):
        raise PriorError(f"The 'length_source' of {label} must be 'given' or 'longest trace'; got {source!r}.")
    object.__setattr__(out, "length_source", source)
    return out


def _box(data: dict, label: str):
    from puffgm.chains.box import ChainParameterBox

    return ChainParameterBox(data["p0"], data["p1"], initial=data.get("initial", "any"), length=data["length"],
                             states=data.get("states"), name=str(data.get("name", "box")))


def _gaussian(data: dict, label: str):
    from puffgm.gaussian.networks import GaussianPriorClass, LinearGaussianPrior

    return GaussianPriorClass(LinearGaussianPrior.from_dict(m, label=f"member {j} of {label}")
                              for j, m in enumerate(_members(data, label), start=1))
