r"""The base of every release record: what was released, under which guarantee, for whom.

Every mechanism of puffgm returns an immutable record derived from
:class:`Release` (the Markov Quilt Mechanism's Laplace release, the DP-based
Pufferfish mechanisms of Bai et al., Blowfish releases, the Wasserstein
mechanism, releases under continuous secrets).  The base names the five facts
an auditor asks for -- ``value``, ``epsilon``, ``mechanism``, ``prior`` (the
prior class or policy the guarantee holds for) and ``theorem`` -- and gives every
record the same ``to_dict()`` and ``explain()``.  Every record exposes its
``composition`` (:mod:`puffgm.core.composition`): the object, built by the
mechanism's own module, that holds what decides how the release composes and the
theorem that composes it.  The accountant (:class:`puffgm.accounting.PrivacyAccountant`)
calls only that object.

Two rules keep the accountant from being talked into a guarantee no theorem gives:

* **Only releases it charged.**  :func:`make_release` has the accountant charge the
  record before the noise is drawn and record the drawn release against that charge;
  the accountant verifies the release matches its charge field for field (every field its
  composition reads, and :math:`\epsilon`) and refuses anything else: a record built by hand,
  edited with ``dataclasses.replace`` or ``object.__setattr__``, copied or unpickled.
  No public function marks a release as made by puffgm.
* **Keys derived from the release.**  The keys are derived in one place each: the quilt
  sets of a Markov Quilt Mechanism calibration (:func:`quilt_set_key`), the :math:`(\Theta, S)`
  of an :math:`a(b)`-influence curve (:func:`curve_key`), the Blowfish policy.  No caller names a key.

No record keeps the exact answer: a release holds the noisy value and what the
guarantee needs, so its ``repr``, ``str``, ``to_dict()`` and pickle cannot show
the data.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

import numpy as np

from puffgm.core.composition import Composition, HeldAlone, Uncomposable, canonical_units
from puffgm.core.features import require_puffgm_caller
from puffgm.core.validation import check_positive_finite

__all__ = ["Release", "wrong_calibration", "released_by",
           "CalibratedRelease", "jsonable", "make_release", "quilt_set_key", "curve_key", "EXECUTION_OPTIONS"]

#: Calibration options that change how fast a calibration runs or what it shows, never the quilt sets
#: it searches: they are left out of the composition key.
EXECUTION_OPTIONS = frozenset({"n_jobs", "progress", "per_node"})

#: Details of a calibration that name its secrets and quilt sets (when its road records them).
_QUILT_SET_DETAILS = ("secrets", "quilt_family", "quilt_set", "l")

def jsonable(x: Any) -> Any:
    """``x`` as plain JSON data.

    Arrays and tuples become lists, sets sorted lists, mappings dicts with string
    keys, non-finite floats ``None``, objects with a ``to_dict()`` method (a
    calibration inside a release) their dict; anything else its ``str``.
    """
    if isinstance(x, (bool, str)) or x is None:
        return x
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else None
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, Mapping):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (set, frozenset)):
        return [jsonable(v) for v in sorted(x, key=str)]
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if callable(getattr(x, "to_dict", None)):
        return jsonable(x.to_dict())
    return str(x)


class Release:
    """Base class of every release record (a frozen dataclass in each subclass).

    Subclasses provide ``value``, ``epsilon``, ``mechanism``, ``theorem`` and
    ``secure`` (fields or properties), and implement :attr:`prior` and
    :meth:`explain`.

    Every record exposes :attr:`composition`; the base gives :class:`~puffgm.core.composition.Uncomposable`
    (no composition theorem covers the release: the accountant refuses it), and each mechanism
    overrides it with the composition class of its own module.
    """

    @property
    def composition(self) -> Composition:
        """How the accountant composes this release (:mod:`puffgm.core.composition`)."""
        return Uncomposable(cast(Any, self).epsilon)

    @property
    def prior(self) -> str:
        """The prior class (or policy) the guarantee holds for, as a short description."""
        raise NotImplementedError

    def explain(self) -> str:
        """One line: mechanism, privacy parameter, noise."""
        raise NotImplementedError

    def _tagged(self, line: str) -> str:
        """``line`` with the not-for-production mark of seeded noise."""
        return line + ("" if cast(Any, self).secure else " [NOT FOR PRODUCTION]")

    def to_dict(self) -> dict:
        """JSON-ready dict: ``kind``, ``value``, ``epsilon``, ``mechanism``, ``prior``, ``theorem``, then the rest.

        The rest is every other dataclass field;
        ``json.dumps(release.to_dict(), allow_nan=False)`` always works.
        """
        rec: Any = self  # a dataclass subclass providing the fields named in the class docstring
        head = {"kind": type(self).__name__, "value": jsonable(rec.value), "epsilon": jsonable(rec.epsilon),
                "mechanism": rec.mechanism, "prior": self.prior, "theorem": rec.theorem}
        rest = {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(rec) if f.name not in head}
        return head | rest

    def __str__(self) -> str:
        return self.explain()

    def accuracy(self, alpha: float = 0.05) -> tuple:
        r"""Per statistic, the noise scale and :math:`(1-\alpha)` half-width of the noise (:mod:`puffgm.core.accuracy`).

        Parameters
        ----------
        alpha : float
            Significance level in (0, 1): the half-width :math:`t` has
            :math:`P(|Z| \le t) \ge 1 - \alpha` for the noise :math:`Z`.

        Returns
        -------
        tuple of Accuracy
            One row per released statistic (per coordinate of a vector).

        Raises
        ------
        NotApplicableError
            For a mechanism that adds no noise of a known law (one that selects an output).
        """
        from puffgm.exceptions import NotApplicableError

        raise NotApplicableError(f"{type(self).__name__} adds no additive noise of a known law, so it states no "
                                 "noise half-width.")

    def postprocess(self, *, clamp=None, round: bool = False, simplex: bool = False,
                    total: float | None = None):
        """The released value post-processed at no privacy cost; this record is not changed.

        See :func:`puffgm.core.postprocess.postprocess` (clamping to the statistics' ranges,
        rounding, relative frequencies on the simplex, consistency with a public total).

        Returns
        -------
        PostProcessed
            The new value beside this (unchanged, charged) release.
        """
        from puffgm.core.postprocess import postprocess

        return postprocess(self, clamp=clamp, round=round, simplex=simplex, total=total)

    def __reduce__(self):
        """Picklable (``details`` is a read-only mapping); the accountant does not take the copy for the original."""
        state = {f.name: getattr(self, f.name) for f in dataclasses.fields(cast(Any, self))}
        if isinstance(state.get("details"), Mapping):
            state["details"] = dict(state["details"])
        return (_rebuild_release, (type(self), state))


@dataclasses.dataclass(frozen=True)
class CalibratedRelease(Release):
    """A release whose guarantee is its calibration's: a noisy value, the calibration, the noise source.

    The base of the query-specific releases (one query, a table of queries) and of the
    Wasserstein mechanism's: ``epsilon``, ``theorem`` and ``prior`` are the calibration's.

    Attributes
    ----------
    value : object
        The released (noisy) value; None in the record a release function charges before
        drawing the noise.
    calibration : object
        The calibration, with ``epsilon``, ``theorem`` and ``prior``.
    secure : bool
        True for OpenDP's secure sampler; False for a seeded generator (not for production).
    noise : str
        Description of the noise source.
    units : frozenset or None
        The unit ids the release reads (None: the whole data set); see :func:`make_release`.
    """

    value: Any
    calibration: Any
    secure: bool
    noise: str
    units: frozenset | None = None

    @property
    def composition(self) -> Composition:
        """Held alone on its units (:class:`~puffgm.core.composition.HeldAlone`): calibrated for itself only."""
        return HeldAlone(self.epsilon, mechanism=cast(Any, self).mechanism, units=self.units)

    @property
    def epsilon(self) -> float:
        """The Pufferfish parameter of the calibration."""
        return self.calibration.epsilon

    @property
    def theorem(self) -> str:
        """The guarantee relied on (the calibration's)."""
        return self.calibration.theorem

    @property
    def prior(self) -> str:
        """The prior class the calibration holds for."""
        return self.calibration.prior

    def accuracy(self, alpha: float = 0.05) -> tuple:
        r"""Per statistic, the noise scale and :math:`(1-\alpha)` half-width: the calibration's (its ``accuracy``)."""
        return self.calibration.accuracy(alpha)


def _rebuild_release(cls, state: dict) -> Release:
    return cls(**state)


R = TypeVar("R", bound=Release)


def make_release(planned: R, draw: Callable[[], Any], *, accountant=None, label: str | None = None,
                 units=None) -> R:
    """The release ``planned`` describes, with the value ``draw()`` returns, charged and recorded.

    The accountant (if any) charges ``planned`` (the record without its value) before
    ``draw`` is called, so a refused release draws no noise and a charged one is paid for
    even if ``draw`` fails or the process dies before the output (the charge stays: budget
    lost, privacy kept); the record with the drawn value is then recorded against that
    charge, which the accountant verifies.  Every release function of puffgm goes through
    here or does the same three steps.

    Parameters
    ----------
    planned : Release
        The release record with ``value=None``: everything the accountant needs.
    draw : callable
        Draws the noise and returns the released value.
    accountant : PrivacyAccountant, optional
    label : str, optional
        The release's name in the accountant's ledger.
    units : iterable of hashable, optional
        The unit scope of the release: the ids of the units (of a panel of independent units)
        its value reads.  It sets the record's ``units`` field, which its composition carries
        (:mod:`puffgm.core.composition`): the accountant composes per unit and takes the max
        over units.  None keeps the record's own scope (by default the whole data set).

    Raises
    ------
    CompositionError
        Called from outside puffgm without the feature ``"honest-but-curious"``
        (:mod:`puffgm.core.features`): a caller-supplied record and ``draw`` could claim any
        privacy parameter for any value.
    """
    require_puffgm_caller("make_release")
    if units is not None:
        planned = cast(R, dataclasses.replace(cast(Any, planned), units=canonical_units(units)))
    rec: Any = planned
    check_positive_finite(rec.epsilon, "epsilon", f"the release of {rec.mechanism}")
    charged = None if accountant is None else accountant.charge(planned, label=label)
    rel = dataclasses.replace(rec, value=draw())
    if accountant is not None:
        accountant.record(rel, label=label, charged=charged)
    return rel


def _digest(facts: Mapping) -> str:
    """A short, stable hash of JSON-able facts (keys sorted, anything else by its ``str``)."""
    text = json.dumps(jsonable(facts), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def quilt_set_key(calibration) -> str:
    r"""Identifies the instantiation and quilt sets :math:`S_{Q,i}` of a Markov Quilt Mechanism calibration.

    Song, Wang and Chaudhuri 2017 (Theorem 4.4 and the remark after it) compose MQM
    releases that use the same instantiation (prior class :math:`\Theta`, secrets :math:`S`) and the same
    quilt sets :math:`S_{Q,i}`.  The key hashes the prior class's fingerprint, the method, the
    secrets and quilt family the calibration records in its details, and the options it
    was calibrated with (:attr:`~puffgm.core.results.CalibrationResult.options`, every
    option but those in :data:`EXECUTION_OPTIONS`), which the engine recorded when it built
    the result.  A calibration that does not record its options (a chain engine called
    directly without ``options=``) gets a key of its own: its releases compose only with
    releases of an equal calibration.

    Parameters
    ----------
    calibration : CalibrationResult

    Returns
    -------
    str
        16 hexadecimal digits.
    """
    details = calibration.details
    facts: dict[str, Any] = {"prior": calibration.fingerprint, "method": calibration.method,
                             **{k: details[k] for k in _QUILT_SET_DETAILS if k in details}}
    if calibration.options is None:
        facts["calibration"] = calibration.to_dict(per_node=True)
    else:
        # the secrets, when recorded in canonical form, stand for the options that named them
        named = {"protected", "secrets"} if "secrets" in details else set()
        facts["options"] = [(k, v) for k, v in calibration.options
                            if k not in EXECUTION_OPTIONS and k not in named and v is not None]
    return _digest(facts)


def curve_key(curve) -> str:
    r"""Identifies :math:`(\Theta, S)` of an :math:`a(b)`-influence curve: Theorem 7 composes along one curve only.

    Bai, He, Gu, Kifer and Maeng, Theorem 7.
    """
    return _digest({"prior": curve.fingerprint, "secrets": curve.details.get("secrets", "default secrets")})


#: What each kind of result is, what makes it, and the function that releases it (by type name,
#: so this low layer imports none of them).
_RELEASED_BY = {
    "CalibrationResult": ("a Markov Quilt Mechanism calibration (CalibrationResult, from puffgm.calibrate)",
                          "release_laplace(answer, cal) or puffgm.release(cal, answer=...)"),
    "QueryCalibration": ("a query-specific calibration (QueryCalibration, from puffgm.calibrate_query)",
                         "release_query(answer, cal) or puffgm.release(cal, data)"),
    "WorkloadCalibration": ("a workload calibration (WorkloadCalibration, from puffgm.calibrate_workload)",
                            "release_workload(answers, cal) or puffgm.release(cal, data)"),
    "InfluenceCurve": ("an a(b)-influence curve (InfluenceCurve)",
                       "puffgm.mechanisms.pufferfish (pufferfish_laplace(answer, curve, epsilon=...))"),
}


def released_by(result: Any) -> tuple | None:
    """``(what it is, the function that releases it)`` for a calibration or a curve; None for anything else."""
    return _RELEASED_BY.get(type(result).__name__)


def wrong_calibration(where: str, calibration: Any, wanted: str) -> str:
    """The one-sentence refusal of a result ``where`` does not release, naming the function that does.

    Parameters
    ----------
    where : str
        The function refusing (``"release_query"``).
    calibration : object
        What it was given.
    wanted : str
        What it takes (``"a QueryCalibration (from puffgm.calibrate_query)"``).

    Returns
    -------
    str
        One sentence naming what was given and the function that takes it.

    Examples
    --------
    >>> wrong_calibration("release_query", 1.0, "a QueryCalibration")
    'release_query needs a QueryCalibration; got float.'
    """
    known = released_by(calibration)
    if known is None:
        return f"{where} needs {wanted}; got {type(calibration).__name__}."
    what, how = known
    return f"{where} was given {what}: release it with {how}."
