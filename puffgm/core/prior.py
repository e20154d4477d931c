r"""The prior interface: what calibration, influence curves and translation need from a prior class.

Pufferfish privacy (Kifer and Machanavajjhala, "Pufferfish: A Framework for
Mathematical Privacy Definitions", ACM TODS 2014, arXiv:1209.2154) is stated for
a class :math:`\Theta` of priors.  puffgm knows four kinds of class:

* Bayesian networks (:mod:`puffgm.networks`): finite classes of pgmpy networks
  on one DAG;
* Markov-chain classes (:mod:`puffgm.chains`): finite families of transition
  matrices and initial laws;
* chain parameter boxes (:mod:`puffgm.chains.box`): the infinite classes of
  binary chains of Song, Wang and Chaudhuri, section 5.2;
* linear-Gaussian networks with region secrets (:mod:`puffgm.gaussian`).

Each kind implements :class:`PriorKind` in its own package (``kind.py``), and
every entry point (:func:`puffgm.calibrate`, :func:`puffgm.influence_curve`,
:func:`puffgm.translate`, :func:`puffgm.calibrate_many`, the ``puffgm``
command) reaches a kind through :func:`puffgm.api.as_prior` and then calls only
this interface.  A kind declares what it supports -- its calibration methods,
the options of each method, its curve options -- and the interface refuses
anything else with a :class:`~puffgm.exceptions.ParameterError` that names what
is supported, so no option is ever dropped silently.

Validation happens at the door: :meth:`PriorKind.calibrate` and :meth:`PriorKind.influence_curve`
check :math:`\epsilon`, the Lipschitz constant, ``max_b``, the method and the option names before any
engine runs, and their messages name the public function (``puffgm.calibrate``,
``puffgm.influence_curve``), never an engine (``MQMExact.calibrate``, ``gk16``) the user did
not call.  :func:`check_calibration_request` is that check, for the other doors
(:func:`puffgm.calibrate_many`, the ``puffgm`` command) to give under their own names.
After the door, :meth:`PriorKind.calibrate` returns the engine's result as the engine built
it: each engine records the options (which enter the composition key of MQM releases) and
the graph of its quilts itself, so nothing rewrites a result after the fact.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from puffgm.core.validation import check_positive_finite, check_positive_int, did_you_mean
from puffgm.exceptions import NotApplicableError, ParameterError

__all__ = ["PriorKind", "check_calibration_request", "QUERY_METHODS"]

#: The query-specific calibration methods, the same for every kind with query laws
#: (:attr:`PriorKind.query_options` not None): the Wasserstein mechanism, the optimal Laplace scale
#: and the optimal noise law (:mod:`puffgm.mechanisms.query`, :mod:`puffgm.mechanisms.optimal_noise`).
QUERY_METHODS = ("wasserstein", "optimal-laplace", "optimal-noise")


def check_calibration_request(*, epsilon, lipschitz, method, where: str) -> tuple:
    """``(epsilon, lipschitz)`` as floats after checking them and ``method``, or a ParameterError naming ``where``.

    Parameters
    ----------
    epsilon, lipschitz : float
        Finite and > 0.
    method : str
    where : str
        The public function the user called (``"puffgm.calibrate"``), named in the message.
    """
    if not isinstance(method, str):
        raise ParameterError(f"The 'method' parameter of {where} must be a string; got {method!r}.")
    return check_positive_finite(epsilon, "epsilon", where), check_positive_finite(lipschitz, "lipschitz", where)


class PriorKind:
    r"""A prior class :math:`\Theta` of one kind, with the operations every entry point needs.

    Subclasses set the class attributes and implement :meth:`_calibrate` and, if
    they support curves, :meth:`_influence_curve`.  :meth:`_calibrate` returns the
    engine's :class:`~puffgm.core.results.CalibrationResult` as the engine built it, with
    the options the user gave recorded by the engine (the kind passes them down), so
    :meth:`calibrate` returns it untouched.

    Attributes
    ----------
    kind : str
        Plural name of the kind, for messages ("Bayesian-network priors").
    methods : dict of str to tuple of str
        The calibration methods and, for each, the options it accepts
        (besides ``epsilon``, ``lipschitz`` and ``method``).
    curve_options : tuple of str or None
        Options of :meth:`influence_curve`; None when the kind has no curves.
    query_options : tuple of str or None
        Options of :meth:`query_laws` (query-specific calibration); None when
        the kind cannot compute the exact conditional laws of a query.
    prior_class : object
        The validated class itself (``PriorClass``, ``ChainPriorClass``,
        ``ChainParameterBox`` or ``GaussianPriorClass``).
    """

    kind: ClassVar[str] = "priors"
    methods: ClassVar[Mapping[str, tuple]] = {"exact": ()}
    curve_options: ClassVar[tuple | None] = None
    query_options: ClassVar[tuple | None] = None

    def __init__(self, prior_class):
        self.prior_class = prior_class

    @property
    def name(self) -> str:
        """A short description of the class (its members' names)."""
        return str(getattr(self.prior_class, "name", None) or type(self.prior_class).__name__)

    @property
    def fingerprint(self) -> str:
        """A hash that identifies the class (the same members give the same fingerprint)."""
        fp = self.prior_class.fingerprint
        return fp() if callable(fp) else str(fp)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    @classmethod
    def accepted_options(cls, method: str = "exact") -> tuple:
        """The calibration options of ``method`` (raises for a method the kind does not have)."""
        cls.check_method(method)
        return tuple(cls.methods[method])

    @classmethod
    def check_method(cls, method: str) -> None:
        """Raise a ParameterError naming the methods of the kind if ``method`` is not one of them."""
        if not isinstance(method, str) or method not in cls.methods:
            raise ParameterError(
                f"Method {method!r} does not apply to {cls.kind}{did_you_mean(method, cls.methods)}; "
                f"they take {', '.join(map(repr, cls.methods))}."
            )

    @classmethod
    def check_options(cls, options: Mapping, accepted, what: str) -> None:
        """Raise a ParameterError naming the accepted options if ``options`` has any other."""
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            listed = ", ".join(sorted(accepted)) or "none"
            raise ParameterError(
                f"Option(s) {', '.join(unknown)} do not apply to {what} of {cls.kind}"
                f"{did_you_mean(unknown[0], accepted)}; the options are: {listed}."
            )

    def calibrate(self, *, epsilon, lipschitz=1.0, method: str = "exact", **options):
        """Calibrate noise for an :math:`L`-Lipschitz query at Pufferfish parameter ``epsilon``.

        Parameters
        ----------
        epsilon : float
            Pufferfish privacy parameter, finite and > 0.
        lipschitz : float
            L1 Lipschitz constant of the query.
        method : str
            One of the kind's methods (see :attr:`methods`).
        **options
            The method's options; any other is refused.

        Returns
        -------
        CalibrationResult
            The engine's result itself, never rewritten afterwards: the engine records the options
            (:attr:`~puffgm.core.results.CalibrationResult.options`, which enter the composition key)
            and the graph the quilts live in (``result.graph``, for ``result.plot()``) when it
            builds the result, because :meth:`_calibrate` passes the options down.

        Raises
        ------
        ParameterError
            Before any engine runs: ``epsilon`` or ``lipschitz`` not a finite number :math:`> 0`, a method the kind
            does not have, or an option the method does not take (named as ``puffgm.calibrate``'s).
        """
        epsilon, lipschitz = check_calibration_request(epsilon=epsilon, lipschitz=lipschitz, method=method,
                                                        where="puffgm.calibrate")
        self.check_method(method)
        self.check_options(options, self.methods[method], f"method {method!r}")
        return self._calibrate(epsilon=epsilon, lipschitz=lipschitz, method=method, options=dict(options))

    def influence_curve(self, max_b=None, **options):
        """The a(b)-influence curve of the class (Bai, He, Gu, Kifer and Maeng, Definition 7).

        Raises
        ------
        NotApplicableError
            When the kind has no influence curves (the message says which kinds have).
        """
        if self.curve_options is None:
            raise NotApplicableError(
                f"Influence curves are not available for {self.kind}; they are for Bayesian networks, "
                "Markov-chain classes and linear-Gaussian networks."
            )
        if max_b is not None:
            max_b = check_positive_int(max_b, "max_b", "puffgm.influence_curve")
        self.check_options(options, self.curve_options, "influence curves")
        return self._influence_curve(max_b=max_b, options=dict(options))

    def query_laws(self, query, *, deadline=None, **options):
        """The exact conditional laws of a sum query given each secret, for every prior of the class.

        Parameters
        ----------
        query : SumQuery, dict, JSON text or JSON file path
            A sum query (:mod:`puffgm.core.query`).
        deadline : float, optional
            ``time.monotonic()`` value after which a TimeLimitError is raised.
        **options
            The kind's :attr:`query_options`; any other is refused.

        Returns
        -------
        QueryLaws
            The log-laws of the query given each secret, for every prior, with the query as bound.

        Raises
        ------
        NotApplicableError
            When the kind cannot compute them (the message says which kinds can).
        """
        from puffgm.core.query import load_query

        if self.query_options is None:
            raise NotApplicableError(
                f"Query-specific calibration is not available for {self.kind}; it needs the exact conditional "
                "laws of the query, which puffgm computes for Bayesian networks and Markov-chain classes."
            )
        self.check_options(options, self.query_options, "query-specific calibration")
        return self._query_laws(query=load_query(query), deadline=deadline, options=dict(options))

    def workload_laws(self, workload, *, deadline=None, **options):
        """The exact joint laws of a workload's statistics given each secret, on the grid of their sums.

        One exact inference with a grid of partial sums, one axis per statistic (the same
        junction tree or chain passes as :meth:`query_laws`, in log space).

        Parameters
        ----------
        workload : BoundWorkload
            Bound to :meth:`query_domain` (:meth:`puffgm.core.workload.Workload.bind`).
        deadline : float, optional
            ``time.monotonic()`` value after which a TimeLimitError is raised.
        **options
            The kind's :attr:`query_options`; any other is refused.

        Returns
        -------
        JointLaws
            :class:`puffgm.mechanisms.workload.JointLaws`.

        Raises
        ------
        NotApplicableError
            When the kind cannot compute them (the message says which kinds can).
        """
        if self.query_options is None:
            raise NotApplicableError(
                f"Workloads are not available for {self.kind}; they need the exact joint laws of the queries, "
                "which puffgm computes for Bayesian networks and Markov-chain classes."
            )
        self.check_options(options, self.query_options, "workload calibration")
        return self._workload_laws(workload=workload, deadline=deadline, options=dict(options))

    def query_domain(self):
        """``(nodes, states)``: the nodes and each node's state names that sum queries bind to
        (:meth:`puffgm.core.query.SumQuery.bind`); None when the kind has no query laws."""
        return None

    def node_groups(self):
        """The groups of correlated nodes that group differential privacy protects as one (tuples of
        node names); None when the kind has no query laws."""
        return None

    def mqm_options(self, options: Mapping) -> dict:
        """The query-specific options that also apply to the kind's MQM calibration (the same secrets)."""
        return {k: v for k, v in options.items() if k in self.methods.get("exact", ())}

    def _query_laws(self, *, query, deadline, options):
        raise NotImplementedError

    def _workload_laws(self, *, workload, deadline, options):
        raise NotImplementedError

    def _calibrate(self, *, epsilon, lipschitz, method, options):
        raise NotImplementedError

    def _influence_curve(self, *, max_b, options):
        raise NotImplementedError
