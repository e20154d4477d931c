"""Bayesian-network classes as a :class:`~puffgm.core.prior.PriorKind`.

Calibration is the Markov Quilt Mechanism (Song, Wang and Chaudhuri,
"Pufferfish Privacy Mechanisms for Correlated Data", SIGMOD 2017,
arXiv:1603.03977, Algorithm 2) through :func:`puffgm.networks.calibration.calibrate`;
curves are the quilt curves of :func:`puffgm.networks.curve.network_influence_curve`,
the pointwise max of the members' curves for a class of several networks.
"""

from __future__ import annotations

import time

from puffgm.core.curve import pointwise_max
from puffgm.core.laws import QueryLaws
from puffgm.core.prior import PriorKind
from puffgm.networks.calibration import NETWORK_OPTIONS, calibrate
from puffgm.networks.curve import network_influence_curve
from puffgm.networks.priors import PriorClass, load_prior_class
from puffgm.networks.query_laws import group_sensitivity, network_joint_laws, network_query_laws
from puffgm.networks.secrets import resolve_secrets

__all__ = ["BayesianNetworkKind"]


class BayesianNetworkKind(PriorKind):
    """A finite class of Bayesian networks on one DAG (:class:`~puffgm.networks.priors.PriorClass`).

    Parameters
    ----------
    prior : anything :func:`~puffgm.networks.priors.load_prior_class` accepts
        A PriorClass, a NetworkPrior, a pgmpy model, a network file path (BIF,
        XMLBIF, Hugin NET, GeNIe XDSL, UAI, XBN; each also gzipped),
        ``"example:NAME"``, or a list of these (one class).
    """

    kind = "Bayesian-network priors"
    methods = {"exact": NETWORK_OPTIONS}
    curve_options = ("secrets", "protected", "max_quilt_states", "per_node")
    query_options = ("secrets", "protected", "max_sum_length", "max_table_entries")

    def __init__(self, prior):
        super().__init__(load_prior_class(prior))

    @property
    def name(self) -> str:
        return " + ".join(p.name for p in self.prior_class.priors)

    def _calibrate(self, *, epsilon, lipschitz, method, options):
        return calibrate(self.prior_class, epsilon=epsilon, lipschitz=lipschitz, **options)

    def query_domain(self):
        """The class's nodes and their state names."""
        return self.prior_class.nodes, self.prior_class.states

    def node_groups(self):
        """The weakly connected components of the DAG."""
        import networkx as nx

        return tuple(tuple(c) for c in nx.weakly_connected_components(self.prior_class.dag))

    def _query_laws(self, *, query, deadline, options):
        theta = self.prior_class
        secrets = resolve_secrets(options.pop("secrets", None), options.pop("protected", None), "calibrate")
        bound = query.bind(theta.nodes, theta.states)
        start = time.monotonic()
        laws = network_query_laws(theta, bound, secrets, deadline=deadline, **options)
        return QueryLaws(query=bound, laws=tuple(laws), n_priors=len(theta.priors),
                         group_sensitivity=group_sensitivity(theta, bound), prior_name=self.name,
                         secrets=secrets.canonical(theta), notes=tuple(theta.notes) + bound.notes,
                         seconds=time.monotonic() - start)

    def _workload_laws(self, *, workload, deadline, options):
        from puffgm.mechanisms.workload import JointLaws

        theta = self.prior_class
        secrets = resolve_secrets(options.pop("secrets", None), options.pop("protected", None), "calibrate")
        start = time.monotonic()
        laws = network_joint_laws(theta, workload, secrets, deadline=deadline, **options)
        return JointLaws(workload=workload, laws=tuple(laws), n_priors=len(theta.priors), prior_name=self.name,
                         secrets=secrets.canonical(theta), notes=tuple(theta.notes),
                         seconds=time.monotonic() - start)

    def _influence_curve(self, *, max_b, options):
        theta = self.prior_class
        secrets = resolve_secrets(options.get("secrets"), options.get("protected"), "influence_curve")
        states = options.get("max_quilt_states")
        # A finite class gets the pointwise max of its members' curves: Pufferfish privacy and
        # Theorem 6 hold prior by prior, so each prior may use its own best split.
        if len(theta.priors) > 1:
            return pointwise_max([network_influence_curve(PriorClass([p]), max_b, secrets, states, False)
                                  for p in theta.priors], theta.fingerprint, theta.notes)
        return network_influence_curve(theta, max_b, secrets, states, options.get("per_node", False))
