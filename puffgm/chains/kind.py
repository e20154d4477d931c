"""Markov-chain classes and parameter boxes as :class:`~puffgm.core.prior.PriorKind` objects.

Calibration methods (Song, Wang and Chaudhuri, "Pufferfish Privacy Mechanisms
for Correlated Data", SIGMOD 2017, arXiv:1603.03977, section 4.4): ``"exact"``
(MQMExact, Algorithm 3), ``"approx"`` (MQMApprox, Algorithm 4), and the
baselines ``"groupdp"`` and ``"gk16"``.  A finite class's influence curve is the
pointwise max of its members' curves (:func:`puffgm.chains.curve.chain_class_curve`);
a parameter box (an infinite class, section 5.2) has certified calibrations
(:mod:`puffgm.chains.box`) and no influence curve.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import ClassVar

from puffgm.chains.approx import MQMApprox
from puffgm.chains.baselines import gk16, group_dp
from puffgm.chains.box import ChainParameterBox, certified_mqm_exact
from puffgm.chains.budget import ChainClock, check_chain_length
from puffgm.chains.curve import chain_class_curve
from puffgm.chains.exact import PER_NODE_LIMIT, MQMExact
from puffgm.chains.priors import ChainPrior, ChainPriorClass
from puffgm.chains.query_laws import (
    DEFAULT_MAX_EXACT_LENGTH,
    QUERY_ADVICE,
    chain_joint_laws,
    chain_query_laws,
    check_query_budget,
)
from puffgm.chains.spec import load_chain_spec
from puffgm.core.curve import pointwise_max
from puffgm.core.laws import QueryLaws
from puffgm.core.prior import PriorKind
from puffgm.core.validation import check_time_limit, is_inline_json
from puffgm.exceptions import ParameterError, PriorError

__all__ = ["MarkovChainKind", "ChainBoxKind", "is_chain_prior", "chain_kind"]


def is_chain_prior(prior) -> bool:
    """True for a chain object (ChainPrior, ChainPriorClass, ChainParameterBox) or a chain JSON spec.

    A JSON path, inline JSON text or a dict is taken for a chain spec here;
    linear-Gaussian JSON is told apart before
    (:func:`puffgm.gaussian.networks.is_gaussian_prior`).
    """
    if isinstance(prior, (ChainPrior, ChainPriorClass, ChainParameterBox, Mapping)):
        return True
    return is_inline_json(prior) or (
        isinstance(prior, (str, os.PathLike)) and os.fspath(prior).lower().endswith(".json"))


def chain_kind(prior) -> PriorKind:
    r"""The kind of a chain object, a chain spec (path, JSON text or dict), or a list of them.

    A list is one class :math:`\Theta`, pooled.

    Several specs pool their members into one :class:`ChainPriorClass` (they must
    share the length and the states); a parameter box stands alone.
    """
    items = list(prior) if isinstance(prior, (list, tuple)) else [prior]
    if not items:
        raise PriorError("No chain spec given.")
    classes = [load_chain_spec(p) if isinstance(p, (str, os.PathLike, Mapping)) else p for p in items]
    classes = [ChainPriorClass([c]) if isinstance(c, ChainPrior) else c for c in classes]
    if len(classes) == 1 and isinstance(classes[0], ChainParameterBox):
        return ChainBoxKind(classes[0])
    if any(isinstance(c, ChainParameterBox) for c in classes):
        raise PriorError("A parameter box cannot be pooled with other chain specs; give it alone.")
    cc = classes[0] if len(classes) == 1 else ChainPriorClass(m for c in classes for m in c.members)
    return MarkovChainKind(cc)


class MarkovChainKind(PriorKind):
    """A finite class of Markov chains (:class:`~puffgm.chains.priors.ChainPriorClass`)."""

    kind = "Markov-chain priors"
    methods = {"exact": ("max_length", "paper_convention", "per_node", "mixing", "mixing_rtol", "time_limit"),
               "approx": ("use_reversible", "time_limit"), "groupdp": ("time_limit",), "gk16": ("time_limit",)}
    curve_options: ClassVar[tuple | None] = ()
    query_options: ClassVar[tuple | None] = ("max_exact_length",)

    @property
    def name(self) -> str:
        return " + ".join(m.name for m in self.prior_class.members)

    def query_domain(self):
        """The positions X1..XT and the chain's states (refused past the exact laws' length limit)."""
        cc = self.prior_class
        if cc.length > DEFAULT_MAX_EXACT_LENGTH:
            raise ParameterError(f"A workload needs the exact joint laws at every position, which are computed for "
                                 f"chains of length at most {DEFAULT_MAX_EXACT_LENGTH}; this one has T = {cc.length}: "
                                 "use the Markov Quilt Mechanism (--method exact).")
        return cc.nodes, {n: cc.members[0].states for n in cc.nodes}

    def node_groups(self):
        """The whole chain: one group."""
        return (tuple(self.prior_class.nodes),)

    def _laws_clock(self, laws: str, deadline) -> ChainClock:
        """The clock of computing ``laws`` on the chain, its length checked first."""
        cc = self.prior_class
        check_chain_length(cc.length, repr(self.name))
        return ChainClock(what=f"Computing {laws} on {self.name!r} (T = {cc.length}, k = {cc.k})",
                          advice=QUERY_ADVICE, deadline=deadline)

    def _query_laws(self, *, query, deadline, options):
        cc = self.prior_class
        clock = self._laws_clock("the query's laws", deadline)
        check_query_budget(cc.length, cc.k, len(cc.members), clock)  # before T node names are built
        bound = query.bind(cc.nodes, _SameStates(cc.members[0].states))
        laws, bounds, exact = chain_query_laws(cc, bound, clock=clock, **options)
        notes = list(cc.notes) + list(bound.notes)
        if not exact:
            notes.append(f"T = {cc.length} exceeds max_exact_length = "
                         f"{options.get('max_exact_length', DEFAULT_MAX_EXACT_LENGTH)}: exact laws not computed")
        # group DP protects the whole chain as one group of correlated records
        return QueryLaws(query=bound, laws=tuple(laws), n_priors=len(cc.members),
                         group_sensitivity=bound.range_of(cc.nodes), prior_name=self.name,
                         secrets="every X_t, every pair of states", w_bounds=tuple(bounds), exact=exact,
                         notes=tuple(notes), seconds=clock.elapsed)

    def _workload_laws(self, *, workload, deadline, options):
        from puffgm.mechanisms.workload import JointLaws

        cc = self.prior_class
        clock = self._laws_clock("the workload's joint laws", deadline)
        laws = chain_joint_laws(cc, workload, clock=clock, **options)
        return JointLaws(workload=workload, laws=tuple(laws), n_priors=len(cc.members), prior_name=self.name,
                         secrets="every X_t, every pair of states", notes=tuple(cc.notes),
                         seconds=clock.elapsed)

    def _calibrate(self, *, epsilon, lipschitz, method, options):
        """One calibration; ``time_limit`` bounds MQMExact's node scans, the other methods cost O(k^3), not O(T).

        Every engine records the options as given (``options=``) on the result it builds.
        """
        cc = self.prior_class
        check_chain_length(cc.length, repr(self.name))
        if method == "exact":
            return self._exact(epsilon=epsilon, lipschitz=lipschitz, options=options)
        given = dict(options)
        options.pop("time_limit", None)  # validated by the kind; these methods do not loop over T
        if method == "approx":
            return MQMApprox(cc, **options).calibrate(epsilon=epsilon, lipschitz=lipschitz, options=given)
        baseline = group_dp if method == "groupdp" else gk16
        return baseline(cc, epsilon=epsilon, lipschitz=lipschitz, options=given)

    def _exact(self, *, epsilon, lipschitz, options):
        return MQMExact(self.prior_class, **options).calibrate(epsilon=epsilon, lipschitz=lipschitz, options=options)

    def _influence_curve(self, *, max_b, options):
        cc = self.prior_class
        check_chain_length(cc.length, repr(self.name))
        # A finite class gets the pointwise max of its members' curves (Pufferfish privacy and
        # Theorem 6 hold prior by prior, so each prior may use its own best split).
        if len(cc.members) > 1:
            return pointwise_max([chain_class_curve(ChainPriorClass([m]), max_b) for m in cc.members],
                                 cc.fingerprint, cc.notes)
        return chain_class_curve(cc, max_b)


class ChainBoxKind(MarkovChainKind):
    """A parameter box of binary chains (:class:`~puffgm.chains.box.ChainParameterBox`), an infinite class.

    MQMApprox and the baselines take a box as they take a finite class; the exact method is the
    certified supremum over the box (:func:`~puffgm.chains.box.certified_mqm_exact`) with its options.
    """

    kind = "chain parameter boxes"

    def query_domain(self):
        """None: a parameter box has no query laws."""
        return None

    def node_groups(self):
        """None: a parameter box has no query laws."""
        return None

    methods = {"exact": ("rtol", "initial_grid", "max_evaluations", "progress", "time_limit"),
               "approx": ("use_reversible", "time_limit"), "groupdp": ("time_limit",), "gk16": ("time_limit",)}
    curve_options = None
    query_options = None

    @property
    def name(self) -> str:
        return str(self.prior_class.name)

    def _exact(self, *, epsilon, lipschitz, options):
        """The certified supremum over the box, each MQMExact evaluation checked against ``time_limit``.

        ``progress=False`` (``--quiet``) means no callback.  Under a time limit one evaluation is
        timed first (the box's centre, every node searched); the certified search needs at least
        the five evaluations of the corners and the centre, so 5 times that time over the limit
        refuses before the search; then the deadline is checked after every evaluation.
        """
        box = self.prior_class
        given = dict(options)
        progress = options.pop("progress", None) or None
        limit = check_time_limit(options.pop("time_limit", None), "calibrate")
        if limit is None or box.length > PER_NODE_LIMIT:  # certified_mqm_exact refuses such T at once
            return certified_mqm_exact(box, epsilon=epsilon, lipschitz=lipschitz, progress=progress, options=given,
                                       **options)
        clock = ChainClock(limit, f"The certified MQMExact supremum over the parameter box (T = {box.length})",
                           "use a shorter chain, a smaller max_evaluations or a larger rtol")
        centre = box.member((box.p0[0] + box.p0[1]) / 2, (box.p1[0] + box.p1[1]) / 2)
        MQMExact(centre, per_node=True, time_limit=limit).calibrate(epsilon=epsilon)
        clock.project(5 * clock.elapsed, " (at least five MQMExact evaluations of every node)")

        def checked(done, budget):
            clock.check(detail=f" ({done} MQMExact evaluations done)")
            if progress is not None:
                progress(done, budget)

        return certified_mqm_exact(box, epsilon=epsilon, lipschitz=lipschitz, progress=checked, options=given,
                                   **options)


class _SameStates(Mapping):
    """node -> the states of every node of a chain, without a dict of T entries."""

    def __init__(self, states):
        self.states = states

    def __getitem__(self, node):
        return self.states

    def __iter__(self):
        raise TypeError("the states of a chain's nodes are not enumerated")

    def __len__(self):
        raise TypeError("the states of a chain's nodes are not enumerated")
