r"""Save a prior class of any kind to one JSON file, and read it back exactly.

A class fitted in Python (:func:`puffgm.fit_network`, :func:`puffgm.fit_chain`) or built by
hand is saved with :func:`save_prior` and read back with :func:`load_prior_class`; the file
is a PRIOR wherever one is taken (:func:`puffgm.as_prior`, every ``puffgm`` subcommand that
calibrates or releases).  Network file formats (BIF, XMLBIF) cannot hold every state name
(an interval such as ``'(17.5, 25.7]'`` breaks BIF and is renamed by XMLBIF), nor bootstrap
members, nor chain classes: this format holds every kind.

The format (``"format": "puffgm-prior"``, ``"version": 1``) is one JSON object::

    {"format": "puffgm-prior", "version": 1, "kind": KIND, "fingerprint": FP, "notes": [...], ...}

with the body of its ``kind``, written and read by the kind's registered
:class:`~puffgm.api.kinds.SavedForm` (its to-JSON / from-JSON pair lives in the kind's package; this
module writes only the envelope and dispatches by the tag, and refuses an unknown tag naming the
registered ones).  The built-in bodies, by ``kind``:

* ``"bayesian-network"`` (:func:`puffgm.networks.priors.prior_class_to_json`): ``"nodes"`` (a
  list, in the class's topological order), ``"states"`` (node -> list of state names, in order),
  ``"parents"`` (node -> list, the axis order of its CPD), and ``"members"``: one object per
  member :math:`\theta`, ``{"name", "notes", "cpds": {node: nested lists}}``,
  ``cpds[X][x][j1]...`` = P(X = x | parents = (j1, ...)) (pgmpy's layout);
* ``"markov-chain"`` (:func:`puffgm.chains.priors.chain_class_to_json`): ``"length"`` (T),
  ``"length_source"``, ``"states"``, and ``"members"``: ``{"name", "notes", "initial":
  "stationary" | "any" | [q_0, ...], "transition": [[...], ...]}``;
* ``"chain-box"`` (:func:`puffgm.chains.box.box_to_json`): ``"p0"``, ``"p1"`` (ranges),
  ``"initial"``, ``"length"``, ``"states"``, ``"name"`` (:class:`~puffgm.chains.ChainParameterBox`);
* ``"linear-gaussian"`` (:func:`puffgm.gaussian.networks.gaussian_class_to_json`): ``"members"``,
  each a ``puffgm-linear-gaussian`` object (:mod:`puffgm.gaussian.networks`).

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

from puffgm.api.kinds import roads, saved_forms
from puffgm.core.prior import PriorKind
from puffgm.core.validation import is_inline_json, read_json_argument
from puffgm.exceptions import PriorError

__all__ = ["FORMAT", "VERSION", "save_prior", "load_prior_class", "prior_to_dict", "prior_from_dict",
           "is_saved_prior"]

#: The ``"format"`` value of a saved prior.
FORMAT = "puffgm-prior"
#: The version of the format this module writes (and the highest it reads).
VERSION = 1


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
    """The saved form of a prior class (module docstring), as a JSON-ready dict: the envelope, then its kind's body."""
    obj = _as_object(prior_class)
    form = _form_of(obj)
    assert form is not None  # _as_object gives a class of a registered form
    head = {"format": FORMAT, "version": VERSION, "kind": form.tag, "fingerprint": obj.fingerprint,
            "notes": list(obj.notes)}
    return head | form.resolved("to_json")(obj)


def _form_of(obj: Any):
    """The registered SavedForm whose class ``obj`` is, or None."""
    return next((f for f in saved_forms() if isinstance(obj, f.resolved("cls"))), None)


def _as_object(prior: Any):
    """The prior class object of any input: a class as it is, a member as a class of one, a spec loaded."""
    if _form_of(prior) is not None:
        return prior
    for form in saved_forms():
        if form.member is not None and isinstance(prior, form.resolved("member")):
            return form.resolved("cls")([prior])
    if isinstance(prior, PriorKind):
        inner = prior.prior_class
        road = next((r for r in roads() if r.holds(type(prior))), None)
        obj = inner if _form_of(inner) is not None else _loaded(road, inner, prior.kind)
    else:
        obj = _load_other(prior)
    if _form_of(obj) is None:
        raise PriorError(f"Cannot save {type(obj).__name__} objects: no registered prior kind saves them "
                         f"(saved kinds: {', '.join(f.tag for f in saved_forms())}).")
    return obj


def _load_other(prior: Any):
    """A saved prior, or the input of the registered road that claims it, loaded by the road's SavedForm."""
    items = list(prior) if isinstance(prior, (list, tuple)) else [prior]
    if is_saved_prior(prior) or any(is_saved_prior(p) for p in items):
        return load_prior_class(prior)
    road = next((r for r in roads() if not r.default and items and all(r.claims(p) for p in items)),
                next(r for r in roads() if r.default))
    return _loaded(road, prior, road.label)


def _loaded(road, prior: Any, label: str):
    """``prior`` loaded by the first SavedForm of ``road`` with a ``load`` (a kind gives its class)."""
    load = next((f.resolved("load") for f in (road.saved if road else ()) if f.load is not None), None)
    if load is None:
        raise PriorError(f"{label[0].upper()}{label[1:]} cannot be saved from a {type(prior).__name__}: its "
                         "registration (puffgm.api.kinds.register_kind) gives no SavedForm that loads it.")
    out = load(prior)
    return out.prior_class if isinstance(out, PriorKind) else out


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
    default = next(r for r in roads() if r.default)  # Bayesian networks: files by content
    return _loaded(default, specs, default.label)


def _pooled(classes: list):
    """One class from several of one kind (their members, in order); a class whose form does not pool stands alone."""
    for form in saved_forms():
        kind = form.resolved("cls")
        if form.pool is not None and all(isinstance(c, kind) for c in classes):
            return kind([m for c in classes for m in getattr(c, form.pool)])
    pooling = [f.tag for f in saved_forms() if f.pool is not None]
    raise PriorError(f"The saved priors are not of one kind ({', '.join(pooling)}; any other kind stands alone): "
                     "one class holds one kind.")


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
    form = next((f for f in saved_forms() if f.tag == kind), None)
    if form is None:
        raise PriorError(f"{label[0].upper()}{label[1:]} has the kind {kind!r}; kinds: "
                         f"{', '.join(f.tag for f in saved_forms())}.")
    try:
        obj = form.resolved("from_json")(data, label)
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
