"""One road for every prior kind: turn what the user gives into a prior class, then dispatch.

Every entry point of :mod:`puffgm` that takes a prior (:func:`calibrate`,
:func:`influence_curve`, :func:`translate`, :func:`puffgm.calibrate_many` and the
``puffgm`` command) goes through :func:`as_prior`, which returns an object of the
:class:`~puffgm.core.prior.PriorKind` interface, and then calls that interface.
"""

from __future__ import annotations

from puffgm.core.validation import check_positive_int
from puffgm.core.curve import pointwise_max
from puffgm.exceptions import ParameterError

__all__ = ["influence_curve"]


def _is_chain_class(prior) -> bool:
    mod = type(prior).__module__ or ""
    return mod.startswith("puffgm.chains")


def influence_curve(prior, max_b: int | None = None, *, secrets=None, max_quilt_states: int | None = None,
                    per_node: bool = False) :
    """Compute the a(b)-influence curve of a prior class.

    Parameters
    ----------
    prior : PriorClass, Markov-chain class, or anything ``load_prior_class`` accepts
        Bayesian-network specs (BIF/XMLBIF path, ``"example:NAME"``, pgmpy models)
        go through the quilt road; chain classes from
        :func:`puffgm.chains.spec.load_chain_spec` (or a ``*.json`` chain spec path)
        through the chain road.
    max_b : int, optional
        Largest b.  Default: the number of nodes for networks, and
        ``min(T, DEFAULT_CHAIN_MAX_B)`` for chains.
    secrets : optional
        Secret specification passed to the max-influence engine (networks only;
        default: every value pair of every node, Song et al. section 4).
    max_quilt_states : int, optional
        Passed to :func:`puffgm.networks.quilt_scores.evaluate_quilts`.
    per_node : bool
        Keep every node's own curve a_i(b) (``curve.node_curve(node)``).

    Returns
    -------
    InfluenceCurve

    Examples
    --------
    >>> from puffgm import influence_curve
    >>> c = influence_curve("example:asia")
    >>> c.a_at(c.n_entries)
    0.0
    """
    if max_b is not None:
        max_b = check_positive_int(max_b, "max_b", "influence_curve")
    from puffgm.gaussian.networks import gaussian_influence_curve, is_gaussian_prior

    if is_gaussian_prior(prior):  # linear-Gaussian networks with region secrets (puffgm.gaussian)
        return gaussian_influence_curve(prior, max_b, secrets=secrets)
    if isinstance(prior, str) and prior.lower().endswith(".json"):
        from puffgm.chains.spec import load_chain_spec

        prior = load_chain_spec(prior)
    # A finite class gets the pointwise max of its members' curves: Pufferfish privacy and
    # Theorem 6 hold prior by prior, so each prior may use its own best split (never above
    # the curve of the sup-over-Theta influence, and equal to it for one prior).
    if _is_chain_class(prior):
        from puffgm.chains.curve import chain_class_curve

        if secrets is not None:
            raise ParameterError("Custom secrets are not supported on the chain road of influence_curve.")
        if len(prior.members) > 1:
            from puffgm.chains.priors import ChainPriorClass

            return pointwise_max([chain_class_curve(ChainPriorClass([m]), max_b) for m in prior.members],
                                  prior.fingerprint, prior.notes)
        return chain_class_curve(prior, max_b)
    from puffgm.networks.curve import network_influence_curve
    from puffgm.networks.priors import PriorClass, load_prior_class

    theta = load_prior_class(prior)
    if len(theta.priors) > 1:
        return pointwise_max([network_influence_curve(PriorClass([p]), max_b, secrets, max_quilt_states, False)
                               for p in theta.priors], theta.fingerprint, theta.notes)
    return network_influence_curve(theta, max_b, secrets, max_quilt_states, per_node)


