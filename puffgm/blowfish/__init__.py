r"""Blowfish privacy (He, Machanavajjhala and Ding, SIGMOD 2014) as a peer of puffgm's stages.

    policy -> sensitivity -> mechanisms -> accounting      (bridge: pufferfish)

* :mod:`~puffgm.blowfish.policy`: domains, discriminative secret graphs, count
  constraints, :class:`Policy` (Definition 3.1);
* :mod:`~puffgm.blowfish.neighbours`: neighbours (Definition 4.1), the
  graph-distance guarantee (section 4);
* :mod:`~puffgm.blowfish.sensitivity`: :math:`S(f, P)` (Definition 5.1), closed forms and
  brute force;
* :mod:`~puffgm.blowfish.mechanisms`: the Laplace mechanism under Blowfish
  (Theorem 5.1) with the accountant;
* :mod:`~puffgm.blowfish.kmeans`: SuLQ k-means (section 6);
* :mod:`~puffgm.blowfish.ordered`: the ordered and ordered hierarchical
  mechanisms for cumulative histograms and range queries (section 7);
* :mod:`~puffgm.blowfish.pufferfish`: Blowfish as Pufferfish (Theorems 4.4, 4.5)
  and exact audits.
"""

from puffgm.blowfish.neighbours import are_neighbours, distance_guarantee, enumerate_databases, neighbour_pairs
from puffgm.blowfish.policy import (
    CountConstraint,
    Domain,
    Policy,
    PolicyError,
    SecretGraph,
    attribute_graph,
    complete_graph,
    distance_threshold_graph,
    graph_from_networkx,
    grid_partition_blocks,
    line_graph,
    marginal_constraints,
    partition_graph,
    policy_from_dict,
)
from puffgm.blowfish.sensitivity import (
    Sensitivity,
    cumulative_query,
    cumulative_sensitivity,
    enumerate_sensitivity,
    histogram_query,
    histogram_sensitivity,
    linear_query,
    linear_sum_sensitivity,
)

__all__ = [
    "CountConstraint", "Domain", "Policy", "PolicyError", "SecretGraph", "attribute_graph", "complete_graph",
    "distance_threshold_graph", "graph_from_networkx", "grid_partition_blocks", "line_graph",
    "marginal_constraints", "partition_graph", "policy_from_dict", "are_neighbours", "distance_guarantee",
    "enumerate_databases", "neighbour_pairs", "Sensitivity", "cumulative_query", "cumulative_sensitivity",
    "enumerate_sensitivity", "histogram_query", "histogram_sensitivity", "linear_query", "linear_sum_sensitivity",
]
