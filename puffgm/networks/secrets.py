r"""Secrets and discriminative pairs of the Bayesian-network instantiation.

Song, Wang and Chaudhuri, section 4.1: the secrets are :math:`s^i_a` = ":math:`X_i` takes value
:math:`a`" and the discriminative pairs are :math:`(s^i_a, s^i_b)` for every node :math:`X_i` and every
pair of values :math:`a \neq b`.  :class:`SecretSpec` is that default, optionally
restricted to a subset of protected nodes and, per node, to a subset of value
pairs.  Pairs are unordered: Pufferfish bounds the log-ratio in both directions.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations

from puffgm.core.validation import did_you_mean
from puffgm.exceptions import ParameterError, SecretError

__all__ = ["SecretSpec", "resolve_secrets"]


class SecretSpec:
    """Which nodes are protected and which of their value pairs must be indistinguishable.

    Parameters
    ----------
    protected : iterable of str, optional
        Protected nodes; default every node.
    pairs : mapping node -> iterable of (value, value), optional
        Discriminative value pairs of a node; default every pair of its values.

    Examples
    --------
    >>> spec = SecretSpec(protected=["smoke"], pairs={"smoke": [("yes", "no")]})
    """

    __slots__ = ("_protected", "_pairs")
    _protected: tuple[str, ...] | None
    _pairs: dict[str, tuple[tuple[str, str], ...]]

    def __init__(self, protected=None, pairs: Mapping | None = None):
        object.__setattr__(self, "_protected", None if protected is None else tuple(str(n) for n in protected))
        norm: dict[str, tuple[tuple[str, str], ...]] = {}
        for node, ps in (pairs or {}).items():
            lst = []
            for p in ps:
                if len(tuple(p)) != 2:
                    raise SecretError(f"A discriminative pair of node {node!r} must have two values; got {p!r}.")
                a, b = (str(v) for v in p)
                if a == b:
                    raise SecretError(f"The discriminative pair ({a!r}, {b!r}) of node {node!r} repeats a value.")
                lst.append((a, b))
            norm[str(node)] = tuple(lst)
        object.__setattr__(self, "_pairs", norm)

    def __setattr__(self, key, value):
        raise AttributeError("SecretSpec is immutable")

    def __reduce__(self):
        # immutable slots cannot be restored by setattr: rebuild from the validated fields (worker processes)
        return (SecretSpec, (self._protected, self._pairs))

    @property
    def protected(self) -> tuple[str, ...] | None:
        """The protected nodes as given (None: every node), not yet checked against a prior."""
        return self._protected

    @property
    def pairs(self) -> dict[str, tuple[tuple[str, str], ...]]:
        """The discriminative value pairs as given, per node (a copy; a node not listed: every pair)."""
        return dict(self._pairs)

    def protected_nodes(self, prior_class) -> tuple:
        """The protected nodes, validated against the class, in the class's node order."""
        if self._protected is None:
            return tuple(prior_class.nodes)
        known = set(prior_class.nodes)
        for n in self._protected:
            if n not in known:
                raise SecretError(f"The protected node {n!r} is not a node of the prior"
                                  f"{did_you_mean(n, prior_class.nodes)}.")
        if not self._protected:
            raise SecretError("The set of protected nodes is empty.")
        chosen = set(self._protected)
        return tuple(n for n in prior_class.nodes if n in chosen)

    def value_pairs(self, prior_class, node) -> tuple | None:
        """Index pairs (a, b), a < b, of the node's discriminative pairs; None means all pairs."""
        for n in self._pairs:
            if n not in prior_class.states:
                raise SecretError(f"Discriminative pairs are given for {n!r}, which is not a node of the prior"
                                  f"{did_you_mean(n, prior_class.states)}.")
        if node not in self._pairs:
            return None
        states = prior_class.states[node]
        out = set()
        for a, b in self._pairs[node]:
            for v in (a, b):
                if v not in states:
                    raise SecretError(f"Node {node!r} has no value {v!r}{did_you_mean(v, states)}; "
                                      f"its values are {list(states)}.")
            i, j = states.index(a), states.index(b)
            out.add((min(i, j), max(i, j)))
        if len(out) == len(list(combinations(range(len(states)), 2))):
            return None
        return tuple(sorted(out))

    def canonical(self, prior_class) -> str:
        """A canonical identifier of the resolved secrets (protected nodes and their pairs).

        Two specs that protect the same nodes with the same discriminative pairs
        (for example ``SecretSpec()`` and ``SecretSpec(protected=<every node>)``)
        get the same identifier; any difference in nodes or pairs changes it.
        The accountant composes releases only within one identifier, because a
        release calibrated for some secrets guarantees nothing for others.
        """
        import hashlib

        parts = []
        for n in self.protected_nodes(prior_class):
            pairs = self.value_pairs(prior_class, n)
            if pairs is None:
                parts.append(f"{n}:all")
            else:
                st = prior_class.states[n]
                parts.append(f"{n}:" + ",".join(f"{st[a]}/{st[b]}" for a, b in pairs))
        return "S-" + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]

    def key(self) -> tuple:
        """A hashable description (used to tell whether two calibrations share quilt sets)."""
        return (self._protected, tuple(sorted(self._pairs.items())))

    def __repr__(self):
        prot = "all nodes" if self._protected is None else f"{len(self._protected)} node(s)"
        return f"SecretSpec({prot}, pairs restricted on {len(self._pairs)} node(s))"


def resolve_secrets(secrets, protected, where: str) -> SecretSpec:
    """The :class:`SecretSpec` of a call given ``secrets`` or its shorthand ``protected`` (not both).

    Parameters
    ----------
    secrets : SecretSpec or None
    protected : iterable of str or None
        Shorthand for ``SecretSpec(protected=protected)``.
    where : str
        The name of the calling function, for the error message.

    Returns
    -------
    SecretSpec
        ``secrets``, the spec of ``protected``, or the default (every node, every pair).

    Raises
    ------
    ParameterError
        When both are given.
    """
    if secrets is not None and protected is not None:
        raise ParameterError(f"Give either 'secrets' or 'protected' to {where}, not both.")
    if protected is not None:
        return SecretSpec(protected=protected)
    return secrets or SecretSpec()
