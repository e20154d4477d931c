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
import time
from typing import ClassVar

from puffgm.chains.approx import MQMApprox
from puffgm.chains.baselines import gk16, group_dp
from puffgm.chains.box import ChainParameterBox, certified_mqm_exact
from puffgm.chains.curve import chain_class_curve
from puffgm.chains.exact import MQMExact
from puffgm.chains.priors import ChainPrior, ChainPriorClass
from puffgm.chains.query_laws import DEFAULT_MAX_EXACT_LENGTH, chain_query_laws
from puffgm.chains.spec import load_chain_spec
from puffgm.core.curve import pointwise_max
from puffgm.core.prior import PriorKind
from puffgm.core.results import QuiltGraph
from puffgm.exceptions import PriorError
from puffgm.mechanisms.query import QueryLaws

__all__ = ["MarkovChainKind", "ChainBoxKind", "is_chain_prior", "chain_kind"]


def is_chain_prior(prior) -> bool:
    """True for a chain object (ChainPrior, ChainPriorClass, ChainParameterBox) or a chain JSON spec path.

    A JSON path is taken for a chain spec here; linear-Gaussian JSON files are
    told apart before (:func:`puffgm.gaussian.networks.is_gaussian_spec`).
    """
    if isinstance(prior, (ChainPrior, ChainPriorClass, ChainParameterBox)):
        return True
    return isinstance(prior, (str, os.PathLike)) and os.fspath(prior).lower().endswith(".json")


def chain_kind(prior) -> PriorKind:
    """The kind of a chain object, a chain spec path, or a list of them (one class Theta, pooled).

    Several specs pool their members into one :class:`ChainPriorClass` (they must
    share the length and the states); a parameter box stands alone.
    """
    items = list(prior) if isinstance(prior, (list, tuple)) else [prior]
    if not items:
        raise PriorError("No chain spec given.")
    classes = [load_chain_spec(p) if isinstance(p, (str, os.PathLike)) else p for p in items]
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
    methods = {"exact": ("max_length", "paper_convention", "per_node", "mixing", "mixing_rtol"),
               "approx": ("use_reversible",), "groupdp": (), "gk16": ()}
    curve_options: ClassVar[tuple | None] = ()
    query_options: ClassVar[tuple | None] = ("max_exact_length",)

    @property
    def name(self) -> str:
        return " + ".join(m.name for m in self.prior_class.members)

    def _query_laws(self, *, query, deadline, options):
        cc = self.prior_class
        bound = query.bind(cc.nodes, {n: cc.members[0].states for n in cc.nodes})
        start = time.monotonic()
        laws, bounds, exact = chain_query_laws(cc, bound, deadline=deadline, **options)
        notes = list(cc.notes) + list(bound.notes)
        if not exact:
            notes.append(f"T = {cc.length} exceeds max_exact_length = "
                         f"{options.get('max_exact_length', DEFAULT_MAX_EXACT_LENGTH)}: exact laws not computed")
        # group DP protects the whole chain as one group of correlated records
        return QueryLaws(query=bound, laws=tuple(laws), n_priors=len(cc.members),
                         group_sensitivity=bound.range_of(cc.nodes), prior_name=self.name,
                         secrets="every X_t, every pair of states", w_bounds=tuple(bounds), exact=exact,
                         notes=tuple(notes), seconds=time.monotonic() - start)

    def _calibrate(self, *, epsilon, lipschitz, method, options):
        cc = self.prior_class
        if method == "exact":
            return self._exact(epsilon=epsilon, lipschitz=lipschitz, options=options)
        if method == "approx":
            return MQMApprox(cc, **options).calibrate(epsilon=epsilon, lipschitz=lipschitz)
        baseline = group_dp if method == "groupdp" else gk16
        return baseline(cc, epsilon=epsilon, lipschitz=lipschitz)

    def quilt_graph(self) -> QuiltGraph:
        """The chain X1 -> ... -> XT of the class, kept with calibration results for pictures."""
        return QuiltGraph("chain", length=int(self.prior_class.length))

    def _exact(self, *, epsilon, lipschitz, options):
        return MQMExact(self.prior_class, **options).calibrate(epsilon=epsilon, lipschitz=lipschitz)

    def _influence_curve(self, *, max_b, options):
        cc = self.prior_class
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
    methods = {"exact": ("rtol", "initial_grid", "max_evaluations", "progress"),
               "approx": ("use_reversible",), "groupdp": (), "gk16": ()}
    curve_options = None
    query_options = None

    @property
    def name(self) -> str:
        return str(self.prior_class.name)

    def _exact(self, *, epsilon, lipschitz, options):
        return certified_mqm_exact(self.prior_class, epsilon=epsilon, lipschitz=lipschitz, **options)
