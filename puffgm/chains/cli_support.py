"""Support for ``puffgm calibrate CHAIN.json``: calibrate chain specs by name of method."""

from __future__ import annotations

from puffgm.exceptions import ParameterError, PriorError
from puffgm.chains.approx import MQMApprox
from puffgm.chains.baselines import gk16, group_dp
from puffgm.chains.exact import MQMExact
from puffgm.chains.priors import ChainPriorClass
from puffgm.chains.spec import load_chain_spec

__all__ = ["calibrate_chain_specs", "METHODS"]

METHODS = ("exact", "approx", "groupdp", "gk16")


def calibrate_chain_specs(paths: list[str], *, epsilon: float, lipschitz: float = 1.0, method: str = "exact",
                          paper_convention: bool = False, per_node: bool | None = None):
    """Calibrate the chain class formed by one or more JSON chain specs.

    Several paths form one class Theta (their members are pooled; they must
    share the length and the states).  ``method`` is ``"exact"`` (MQMExact),
    ``"approx"`` (MQMApprox), ``"groupdp"`` or ``"gk16"``; nodes are named
    X1..XT.  ``paper_convention`` (exact only) counts left-end states of
    probability zero as the paper's running example does.
    """
    if method not in METHODS:
        raise ParameterError(f"The 'method' parameter must be one of {list(METHODS)}. Got {method!r} instead.")
    if isinstance(paths, str):
        paths = [paths]
    if not paths:
        raise PriorError("No chain spec given.")
    classes = [load_chain_spec(p) for p in paths]
    if len(classes) > 1 and any(not isinstance(c, ChainPriorClass) for c in classes):
        raise PriorError("A parameter box cannot be pooled with other chain specs; give it alone.")
    cc = classes[0] if len(classes) == 1 else ChainPriorClass(m for c in classes for m in c.members)
    if paper_convention and method != "exact":
        raise ParameterError("The paper convention applies only to the 'exact' method.")
    if method == "exact":
        mech = MQMExact(cc, paper_convention=paper_convention, per_node=per_node)
        return mech.calibrate(epsilon=epsilon, lipschitz=lipschitz)
    if method == "approx":
        return MQMApprox(cc).calibrate(epsilon=epsilon, lipschitz=lipschitz)
    if method == "groupdp":
        return group_dp(cc, epsilon=epsilon, lipschitz=lipschitz)
    return gk16(cc, epsilon=epsilon, lipschitz=lipschitz)
