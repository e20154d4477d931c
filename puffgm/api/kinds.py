"""The registry of prior kinds: the one place a prior kind is registered.

A prior kind declares its calibration methods once, in its :class:`~puffgm.core.prior.PriorKind`
subclass (``methods``: each method and the options it takes), and registers here once, with the
test that recognises its inputs.  Everything else reads the registry:

* :func:`puffgm.api.dispatch.classify` (hence :func:`puffgm.api.as_prior` and every entry point)
  asks the registered roads, in order, which one claims the items of a class;
* :func:`puffgm.calibrate_many` validates its ``method`` against :func:`calibration_methods`;
* the ``puffgm`` command offers :func:`calibration_methods` and the query-specific methods
  (:data:`puffgm.core.prior.QUERY_METHODS`) as the choices of ``--method``;
* :func:`puffgm.save_prior` and :func:`puffgm.load_prior_class` write and read the envelope of a saved
  prior and hand its body to the kind's :class:`SavedForm` (its to-JSON / from-JSON pair, which lives
  in the kind's package), chosen by the class's type or by the file's ``"kind"`` tag.

The built-in kinds are registered by import path and imported only when the registry is first
read, so ``puffgm --help`` imports none of them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from puffgm.core.prior import PriorKind
from puffgm.exceptions import ParameterError

__all__ = ["KindRoad", "SavedForm", "register_kind", "unregister_kind", "roads", "prior_kinds", "calibration_methods",
           "saved_forms"]


def _resolve(entry) -> Any:
    """A registered object: itself, or the object a ``"module:name"`` path names (imported here)."""
    if isinstance(entry, str):
        module, _, name = entry.partition(":")
        return getattr(importlib.import_module(module), name)
    return entry


@dataclass(frozen=True)
class SavedForm:
    """How one class type of a prior kind is saved in a ``puffgm-prior`` file (:mod:`puffgm.api.persist`).

    :mod:`puffgm.api.persist` writes the envelope (``"format"``, ``"version"``, ``"kind"``: the
    ``tag``, ``"fingerprint"``, ``"notes"``) and asks the form for the rest; a class saved or read
    must have ``fingerprint`` and ``notes`` attributes (the notes are set back on reading).

    Attributes
    ----------
    tag : str
        The ``"kind"`` value of the file ("bayesian-network").
    cls : type or str
        The class saved (or its ``"module:Class"`` path).
    to_json : callable or str
        ``to_json(obj) -> dict``, the body (JSON-ready, without the envelope's keys).
    from_json : callable or str
        ``from_json(data, label) -> obj``, the class the file's dict holds, validated (a missing key may
        raise KeyError, which becomes one sentence; ``label`` names the file in messages).
    member : type or str or None
        A member type saved as a class of one (``cls([member])``).
    pool : str or None
        The attribute of the class holding its members: several saved classes of this form pool into
        ``cls(members)``; None: a class stands alone.
    load : callable or str or None
        ``load(input) -> obj or PriorKind`` for raw input of this kind's road (files, specs, models).
    """

    tag: str
    cls: type | str
    to_json: Callable[[Any], dict] | str
    from_json: Callable[[dict, str], Any] | str
    member: type | str | None = None
    pool: str | None = None
    load: Callable[[Any], Any] | str | None = None

    def resolved(self, field: str) -> Any:
        """The object a field names (imported here), or None."""
        value = getattr(self, field)
        return None if value is None else _resolve(value)


@dataclass(frozen=True)
class KindRoad:
    """One registered road from user input to a prior kind.

    Attributes
    ----------
    kinds : tuple
        The PriorKind subclasses this road may give (or their ``"module:Class"`` paths).
    label : str
        The kind in messages ("Markov chains").
    recognises : callable or str or None
        ``recognises(item) -> bool`` for one item of a class; None: the road takes no raw input
        (its kind is given as a PriorKind instance), unless it is the ``default`` road.
    load : callable or str or None
        ``load(prior) -> PriorKind``, the loaded kind of the whole class; None: ``kinds[0]``, which
        :func:`puffgm.api.as_prior` builds from the input.
    default : bool
        The road of every input no other road claims (Bayesian networks: files by content).
    saved : tuple of SavedForm
        How the kinds' classes are saved (:func:`puffgm.save_prior`); empty: they cannot be.
    """

    kinds: tuple
    label: str
    recognises: Callable[[Any], bool] | str | None = None
    load: Callable[[Any], PriorKind] | str | None = None
    default: bool = False
    saved: tuple = ()

    def claims(self, item) -> bool:
        """Whether this road recognises ``item`` (one member of a class)."""
        return self.recognises is not None and bool(_resolve(self.recognises)(item))

    def holds(self, kind_class) -> bool:
        """Whether ``kind_class`` is one of this road's kinds (imported here)."""
        return any(_resolve(k) is kind_class for k in self.kinds)

    def classify(self, prior) -> tuple:
        """(kind class, the loaded kind or None) of ``prior``, a class this road claims."""
        if self.load is None:
            return _resolve(self.kinds[0]), None
        kind = _resolve(self.load)(prior)
        return type(kind), kind


#: The registered roads, in the order they are asked (linear-Gaussian JSON before chain JSON, which
#: takes every other JSON; the default road last).
_ROADS: list = [
    KindRoad(("puffgm.gaussian.kind:LinearGaussianKind",), "linear-Gaussian networks",
             recognises="puffgm.gaussian.kind:is_gaussian_prior",
             saved=(SavedForm("linear-gaussian", "puffgm.gaussian.networks:GaussianPriorClass",
                              "puffgm.gaussian.networks:gaussian_class_to_json",
                              "puffgm.gaussian.networks:gaussian_class_from_json",
                              member="puffgm.gaussian.networks:LinearGaussianPrior", pool="priors",
                              load="puffgm.gaussian.networks:load_gaussian_class"),)),
    KindRoad(("puffgm.chains.kind:MarkovChainKind", "puffgm.chains.kind:ChainBoxKind"), "Markov chains",
             recognises="puffgm.chains.kind:is_chain_prior", load="puffgm.chains.kind:chain_kind",
             saved=(SavedForm("markov-chain", "puffgm.chains.priors:ChainPriorClass",
                              "puffgm.chains.priors:chain_class_to_json", "puffgm.chains.priors:chain_class_from_json",
                              member="puffgm.chains.priors:ChainPrior", pool="members",
                              load="puffgm.chains.kind:chain_kind"),
                    SavedForm("chain-box", "puffgm.chains.box:ChainParameterBox", "puffgm.chains.box:box_to_json",
                              "puffgm.chains.box:box_from_json"))),
    KindRoad(("puffgm.networks.kind:BayesianNetworkKind",), "Bayesian networks", default=True,
             saved=(SavedForm("bayesian-network", "puffgm.networks.priors:PriorClass",
                              "puffgm.networks.priors:prior_class_to_json",
                              "puffgm.networks.priors:prior_class_from_json",
                              member="puffgm.networks.priors:NetworkPrior", pool="priors",
                              load="puffgm.networks.priors:load_prior_class"),)),
]


def register_kind(kind, *, recognises=None, load=None, label: str | None = None, saved=()):
    """Register a prior kind: its methods then appear wherever methods are listed, and its inputs are recognised.

    Parameters
    ----------
    kind : PriorKind subclass or ``"module:Class"`` path
    recognises : callable or ``"module:function"``, optional
        ``recognises(item) -> bool`` for one item of a class; asked before the default road.  Without
        it the kind is reached by passing an instance of it (``as_prior(MyKind(...))``).
    load : callable or ``"module:function"``, optional
        ``load(prior) -> PriorKind``; default ``kind(prior)``.
    label : str, optional
        The kind in messages (default ``kind.kind``).
    saved : SavedForm or tuple of SavedForm, optional
        How its classes are saved and read back by :func:`puffgm.save_prior` and
        :func:`puffgm.load_prior_class` (default: they cannot be saved).

    Returns
    -------
    type or str
        The ``kind`` given (usable as a class decorator).  Registering a kind twice changes nothing.

    Raises
    ------
    ParameterError
        When ``kind`` is neither a PriorKind subclass nor an import path.
    """
    if not (isinstance(kind, str) or (isinstance(kind, type) and issubclass(kind, PriorKind))):
        raise ParameterError(f"register_kind takes a PriorKind subclass or its 'module:Class' path; got {kind!r}.")
    saved = (saved,) if isinstance(saved, SavedForm) else tuple(saved)
    if not all(isinstance(f, SavedForm) for f in saved):
        raise ParameterError(f"The 'saved' of register_kind takes SavedForm objects; got {saved!r}.")
    taken = {f.tag for f in saved_forms()} & {f.tag for f in saved}
    if any(kind in r.kinds for r in _ROADS):
        return kind
    if taken:
        raise ParameterError(f"The saved-prior kind {sorted(taken)[0]!r} is registered already; give another tag.")
    road = KindRoad((kind,), str(label or getattr(kind, "kind", None) or kind), recognises=recognises, load=load,
                    saved=saved)
    _ROADS.insert(next(i for i, r in enumerate(_ROADS) if r.default), road)
    return kind


def unregister_kind(kind) -> None:
    """Remove the road of a kind registered by :func:`register_kind` (as it was given); other kinds are kept."""
    _ROADS[:] = [r for r in _ROADS if r.default or kind not in r.kinds]


def roads() -> tuple:
    """The registered roads (:class:`KindRoad`), in the order :func:`puffgm.api.dispatch.classify` asks them."""
    return tuple(_ROADS)


def prior_kinds() -> tuple:
    """The registered PriorKind subclasses, the default road's first, then in registration order (imported here)."""
    ordered = sorted(_ROADS, key=lambda r: not r.default)
    return tuple(_resolve(k) for r in ordered for k in r.kinds)


def calibration_methods() -> tuple:
    """Every calibration method of a registered kind, each once, in the order of :func:`prior_kinds`.

    Examples
    --------
    >>> calibration_methods()
    ('exact', 'approx', 'groupdp', 'gk16')
    """
    return tuple(dict.fromkeys(m for k in prior_kinds() for m in k.methods))


def saved_forms() -> tuple:
    """Every registered :class:`SavedForm`, the default road's first, then in registration order."""
    return tuple(f for r in sorted(_ROADS, key=lambda r: not r.default) for f in r.saved)
